"""GPU tests of kvharness_triton: the Triton writers bit-exact against a pure-torch
reference, the Triton split-K readers against a float64 torch reference, on the
cache layouts the harness builds (cases/layout.cpp): separate, kv_first,
blocks-first interleaved, padded pages, a storage offset, and more than 65,535
blocks with element offsets past 2^31.

Run:  PYTHONPATH=providers/python python3 providers/python/kvharness_triton_test.py [--bench]
 or:  PYTHONPATH=providers/python python3 -m pytest providers/python/kvharness_triton_test.py
Needs a CUDA or ROCm build of torch, triton and a GPU; without them it prints
"SKIPPED: <reason>" and exits 0 (pytest: the module is skipped).

What each test detects:
  test_writers_all_layouts         a writer that ignores a stride, the storage offset, a negative
                                   slot, or writes outside its views (whole storage compared bit-exactly,
                                   old contents random and non-zero, margins and gaps as sentinels)
  test_fixture_fails_exactly_on_interleaved_and_padded
                                   the known-bad contiguous-block-base writer is caught where (and only
                                   where) its assumption breaks: the proof the writer check can fail
  test_writers_more_than_65535_blocks
                                   32-bit block ids or element offsets (int32 overflow past 2^31)
  test_readers                     wrong K/V indexing per format, GQA mapping, masking at partition
                                   edges (contexts 1, P, P+1), cross-partition rescaling, GQA groups
                                   of 1, 2, 8 and 32 (16 query heads per program), workspace
                                   misuse, writes outside `out` (NaN-poisoned out, sentinel border)
  test_reader_check_rejects_dropped_token
                                   known-bad for the reader check: the tolerance rejects an output that
                                   misses the last token of a P+1-token context
  test_reader_large_block_ids      readers with block ids > 65,535 and offsets past 2^31
  test_bad_arguments_raise         wrong shapes/dtypes/devices raise ValueError naming the argument
  test_varlen_readers              triton_unified_attention(_splitk) on ragged batches (decode, speculative
                                   steps, chunks of 40-300 tokens, whole-prompt prefill) over NHD caches:
                                   causal on and off, sliding window, sinks, softcap, ALiBi, GQA 1..16,
                                   block sizes 16/32/544, partitions that split chunks mid-tile, the typed
                                   workspaces the harness would pass (NaN-filled, guarded) or the reader's own;
                                   against a float64 reference, NaN-poisoned out and cache, sentinel borders
  test_varlen_decode_call          the same readers called as a decode reader (no query_start_loc)
  test_varlen_check_rejects_causal_off_by_one
                                   known-bad for the varlen check: an output that lets each query token see
                                   the next one (the reference with the causal mask off by one) is rejected
  test_mla_decode                  triton_mla_decode (issue 22) against a float64 absorbed-MLA reference: 5..128
                                   heads, pages of 1/16/64 in shuffled order, decode and MTP rows, causal and not,
                                   16-bit and fp8 e4m3fn caches; a rope-dropping output is shown to fail the check
  test_triton_findings_through_the_bridge
                                   kvharness 0.5 on real Triton: a kernel that does not compile for head
                                   size 96 is the bridge's error text naming the provider's launch line (and
                                   Triton's frame); the same kernel raising kvharness.Unsupported is a refusal
                                   with its reason, and runs (bit-exact) at head size 128
"""

import math
import sys
import time
import traceback

SKIP_REASON = None
try:
    import torch
except ImportError as e:  # pragma: no cover - depends on the environment
    torch = None
    SKIP_REASON = f"torch is not installed ({e})"
if SKIP_REASON is None:
    try:
        import triton  # noqa: F401
    except ImportError as e:
        SKIP_REASON = f"triton is not installed ({e})"
if SKIP_REASON is None and not torch.cuda.is_available():
    SKIP_REASON = f"torch {torch.__version__} sees no CUDA/ROCm GPU (torch.cuda.is_available() is False)"
kt = None
if SKIP_REASON is None:
    import kvharness_triton as kt
if SKIP_REASON is not None and "pytest" in sys.modules:
    import pytest

    pytest.skip(f"kvharness_triton tests need a GPU: {SKIP_REASON}", allow_module_level=True)

DEVICE = "cuda"
#: Sentinel elements before and after every cache storage.
MARGIN = 512
#: Reader tolerances |got - ref| <= atol + rtol * |ref| (harness/check/tolerance.h).
TOLERANCE = {"fp16": (1e-3, 5e-3), "bf16": (8e-3, 1.6e-2)}
SCHEMES = ("separate", "kv_first", "interleaved", "padded", "offset")


def _dtype(name):
    return {"fp16": torch.float16, "bf16": torch.bfloat16}[name]


def _sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def _bits(t):
    """The tensor's raw bits (int16 for 16-bit types), so NaNs compare equal to themselves."""
    return t.view(torch.int16)


# --------------------------------------------------------------------------- #
# Cache layouts, built as the harness builds them (cases/layout.cpp)
# --------------------------------------------------------------------------- #


class Caches:
    """K and V views of one storage tensor of MARGIN + storage_elems + MARGIN elements."""

    def __init__(self, fmt, scheme, num_blocks, block_size, num_kv_heads, head_size, dtype, fill):
        elem = torch.empty((), dtype=dtype).element_size()
        x = 16 // elem
        page = block_size * num_kv_heads * head_size
        nb = num_blocks
        self.fmt, self.scheme, self.x, self.page = fmt, scheme, x, page
        self.block_size, self.num_kv_heads, self.head_size = block_size, num_kv_heads, head_size
        k_shape = (nb, num_kv_heads, head_size // x, block_size, x)
        if fmt == "pa_v1":
            v_shape = (nb, num_kv_heads, head_size, block_size)
        else:
            v_shape = (nb, num_kv_heads, block_size // x, head_size, x)
        k_off = 0
        if scheme == "separate":
            block_stride, v_off, total = page, nb * page + 64, 2 * nb * page + 64
        elif scheme == "kv_first":
            block_stride, v_off, total = page, nb * page, 2 * nb * page
        elif scheme == "offset":
            k_off = 37 * x  # 16-byte aligned, not page aligned
            block_stride, v_off, total = page, k_off + nb * page, k_off + 2 * nb * page
        elif scheme in ("interleaved", "large"):
            block_stride, v_off, total = 2 * page, page, nb * 2 * page
        elif scheme == "padded":
            padded = 2 * page + max(64, page // 4)
            block_stride, v_off, total = padded, page, nb * padded
        else:
            raise ValueError(f"unknown scheme {scheme!r}")
        self.block_stride = block_stride
        self.storage = torch.empty(MARGIN + total + MARGIN, dtype=dtype, device=DEVICE)
        if fill == "random":
            self.storage.uniform_(0.5, 1.5)  # non-zero old contents: a writer writing zeros is seen
        else:
            self.storage.fill_(float("nan"))  # readers: anything read that was not written poisons out
        self.k_geom = (k_shape, self._strides(k_shape, block_stride), MARGIN + k_off)
        self.v_geom = (v_shape, self._strides(v_shape, block_stride), MARGIN + v_off)
        self.key_cache, self.value_cache = self.views(self.storage)

    @staticmethod
    def _strides(shape, block_stride):
        s, acc = [0] * len(shape), 1
        for i in range(len(shape) - 1, -1, -1):
            s[i] = acc
            acc *= shape[i]
        s[0] = block_stride
        return tuple(s)

    def views(self, storage):
        """(key_cache, value_cache) views of `storage` (the real storage or a clone of it)."""
        return storage.as_strided(*self.k_geom), storage.as_strided(*self.v_geom)

    def value_view_end(self):
        """One past the largest element offset of the V view, relative to its first element."""
        shape, stride, _ = self.v_geom
        return 1 + sum((n - 1) * s for n, s in zip(shape, stride))

    def describe_mismatch(self, got, want):
        """'N elements differ: K i, V j, outside both views k (first at storage element e)'."""
        diff = _bits(got) != _bits(want)
        n = int(diff.sum())
        if n == 0:
            return "identical"
        first = int(diff.nonzero()[0, 0])
        in_view = torch.zeros(diff.shape, dtype=torch.bool, device=diff.device)
        idx = torch.arange(diff.numel(), device=diff.device)
        counts = []
        for name, geom in (("K", self.k_geom), ("V", self.v_geom)):
            mark = idx.as_strided(*geom).reshape(-1)
            counts.append(f"{name} {int(diff[mark].sum())}")
            in_view[mark] = True
        counts.append(f"outside both views {int((diff & ~in_view).sum())}")
        return f"{n} elements differ: {', '.join(counts)} (first at storage element {first})"


def ref_write(fmt, key, value, key_cache, value_cache, slot_mapping, block_size):
    """The reference writer (vLLM reshape_and_cache semantics) in torch indexing on the views.

    key, value [num_tokens, num_kv_heads, head_size]; slot_mapping [num_tokens] int64, negative = skip.
    """
    x = key_cache.shape[4]
    valid = slot_mapping >= 0
    slots = slot_mapping[valid]
    k, v = key[valid], value[valid]
    n, h, d = k.shape
    b, o = slots // block_size, slots % block_size
    key_cache[b, :, :, o, :] = k.reshape(n, h, d // x, x)
    if fmt == "pa_v1":
        value_cache[b, :, :, o] = v
    else:
        value_cache[b, :, o // x, :, o % x] = v


def fused_qkv(num_tokens, num_heads, num_kv_heads, head_size, dtype, gen):
    """(q, k, v) views [num_tokens, heads, head_size] of one fused QKV buffer with a padded row."""
    width = (num_heads + 2 * num_kv_heads) * head_size + 8
    buf = torch.randn(num_tokens, width, generator=gen, device=DEVICE).to(dtype)
    q = buf[:, : num_heads * head_size].view(num_tokens, num_heads, head_size)
    k = buf[:, num_heads * head_size: (num_heads + num_kv_heads) * head_size].view(num_tokens, num_kv_heads, head_size)
    v0 = (num_heads + num_kv_heads) * head_size
    v = buf[:, v0: v0 + num_kv_heads * head_size].view(num_tokens, num_kv_heads, head_size)
    return q, k, v


# --------------------------------------------------------------------------- #
# Writers
# --------------------------------------------------------------------------- #


def writer_case(fn, fmt, scheme, dtype_name, head_size, block_size, num_kv_heads, num_blocks=40, num_tokens=50,
                seed=0, strided_slots=False, slots=None):
    """Runs writer `fn` once; returns (identical to the reference, description)."""
    dtype = _dtype(dtype_name)
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    c = Caches(fmt, scheme, num_blocks, block_size, num_kv_heads, head_size, dtype, "random")
    want = c.storage.clone()
    want_k, want_v = c.views(want)
    if slots is None:
        slots = torch.randperm(num_blocks * block_size, generator=gen, device=DEVICE)[:num_tokens]
        pad = torch.rand(num_tokens, generator=gen, device=DEVICE) < 0.2  # padding tokens
        slots = torch.where(pad, -1 - (slots % 7), slots)  # -1 and other negatives
    num_tokens = slots.numel()
    _, key, value = fused_qkv(num_tokens, 2 * num_kv_heads, num_kv_heads, head_size, dtype, gen)
    slot_mapping = slots.to(torch.int64)
    if strided_slots:  # a column of a [num_tokens, 2] tensor: stride 2
        buf = torch.full((num_tokens, 2), 123456789, dtype=torch.int64, device=DEVICE)
        buf[:, 0] = slot_mapping
        slot_mapping = buf[:, 0]
    fn(key=key, value=value, key_cache=c.key_cache, value_cache=c.value_cache, slot_mapping=slot_mapping,
       block_size=block_size)
    ref_write(fmt, key, value, want_k, want_v, slot_mapping, block_size)
    _sync()
    same = torch.equal(_bits(c.storage), _bits(want))
    what = (f"{fmt} {dtype_name} {scheme} head_size={head_size} block_size={block_size} "
            f"num_kv_heads={num_kv_heads} tokens={num_tokens}")
    if same:
        return True, what
    if c.storage.numel() > 1 << 28:  # too big to map element by element
        n = int((_bits(c.storage) != _bits(want)).sum())
        return False, f"{what}: {n} elements differ"
    return False, f"{what}: {c.describe_mismatch(c.storage, want)}"


_WRITER_GEOMETRIES = [  # (head_size, block_size, num_kv_heads)
    (64, 16, 1), (80, 32, 2), (128, 16, 8), (256, 32, 4), (96, 16, 3), (128, 64, 2),
]


def _writers():
    return [("shuffle", kt.triton_reshape_and_cache_shuffle), ("pa_v1", kt.triton_reshape_and_cache)]


def _report(results):
    """Prints one line per case; raises AssertionError listing the failed cases."""
    failed = []
    for ok, what in results:
        print(f"  {'ok  ' if ok else 'FAIL'} {what}")
        if not ok:
            failed.append(what)
    assert not failed, f"{len(failed)} of {len(results)} cases failed:\n  " + "\n  ".join(failed)


def test_writers_all_layouts():
    results = []
    i = 0
    for fmt, fn in _writers():
        for dtype_name in ("fp16", "bf16"):
            for scheme in SCHEMES + ("separate",):
                head_size, block_size, num_kv_heads = _WRITER_GEOMETRIES[i % len(_WRITER_GEOMETRIES)]
                results.append(writer_case(fn, fmt, scheme, dtype_name, head_size, block_size, num_kv_heads,
                                           seed=i, strided_slots=i % 2 == 1))
                i += 1
    _report(results)


def test_fixture_fails_exactly_on_interleaved_and_padded():
    results = []
    for dtype_name in ("fp16", "bf16"):
        for scheme, expect_pass in (("separate", True), ("kv_first", True), ("offset", True),
                                    ("interleaved", False), ("padded", False)):
            same, what = writer_case(kt.triton_fixture_shuffle_contiguous, "shuffle", scheme, dtype_name, 128, 16, 2,
                                     seed=7)
            expectation = "PASS expected" if expect_pass else "FAIL expected"
            results.append((same == expect_pass, f"fixture {what} -> {'PASS' if same else 'FAIL'} ({expectation})"))
    _report(results)


def test_writers_more_than_65535_blocks():
    # interleaved, 65,600 blocks of 16 tokens x 8 kv heads x 128 dims: V view offsets reach 2^31 + 2^21.
    num_blocks, block_size, num_kv_heads, head_size = 65600, 16, 8, 128
    gen = torch.Generator(device=DEVICE).manual_seed(11)
    high = 65536 * block_size + torch.randperm((num_blocks - 65536) * block_size, generator=gen, device=DEVICE)[:40]
    low = torch.randperm(1000, generator=gen, device=DEVICE)[:6]
    slots = torch.cat([high, low, torch.tensor([-1, -5], device=DEVICE)])
    slots[3] = num_blocks * block_size - 1  # the very last slot
    page = block_size * num_kv_heads * head_size
    v_last = (num_blocks - 1) * 2 * page + page - 1  # the V view's largest element offset
    results = []
    for fmt, fn in _writers():
        ok, what = writer_case(fn, fmt, "large", "fp16", head_size, block_size, num_kv_heads, num_blocks=num_blocks,
                               slots=slots, seed=11)
        results.append((ok and v_last > 2 ** 31, f"{what} (V view's largest element offset {v_last} > 2^31)"))
        torch.cuda.empty_cache()
    _report(results)


# --------------------------------------------------------------------------- #
# Readers
# --------------------------------------------------------------------------- #


def reader_case(fn, fmt, scheme, dtype_name, head_size, block_size, num_kv_heads, group, context_lens,
                partition_size, use_workspace, seed=0, num_blocks=None):
    """Runs reader `fn` once. Returns (ok, description, out, per-seq logical (q, k, v), scale)."""
    dtype = _dtype(dtype_name)
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    num_seqs, num_heads = len(context_lens), num_kv_heads * group
    per_seq_blocks = [-(-n // block_size) for n in context_lens]
    needed = sum(per_seq_blocks)
    if num_blocks is None:
        num_blocks = needed + 5  # some blocks no sequence owns: NaN, never to be read
    c = Caches(fmt, scheme, num_blocks, block_size, num_kv_heads, head_size, dtype, "nan")
    # Block ids: from the top of the id range (ids > 65,535 on the large layout), shuffled.
    pool = num_blocks - 1 - torch.randperm(min(num_blocks, needed + 5), generator=gen, device=DEVICE)
    width = max(per_seq_blocks) + 1
    block_tables = torch.full((num_seqs, width), int(pool[-1]), dtype=torch.int32, device=DEVICE)  # spare: NaN block
    seq_kv, slots_all, k_all, v_all = [], [], [], []
    at = 0
    for s, n in enumerate(context_lens):
        blocks = pool[at: at + per_seq_blocks[s]]
        at += per_seq_blocks[s]
        block_tables[s, : len(blocks)] = blocks.to(torch.int32)
        t = torch.arange(n, device=DEVICE)
        slots_all.append(blocks[t // block_size].to(torch.int64) * block_size + t % block_size)
        k = torch.randn(n, num_kv_heads, head_size, generator=gen, device=DEVICE).to(dtype)
        v = torch.randn(n, num_kv_heads, head_size, generator=gen, device=DEVICE).to(dtype)
        k_all.append(k)
        v_all.append(v)
        seq_kv.append((k, v))
    ref_write(fmt, torch.cat(k_all), torch.cat(v_all), c.key_cache, c.value_cache, torch.cat(slots_all), block_size)
    cache_before = c.storage.clone()

    query, _, _ = fused_qkv(num_seqs, num_heads, num_kv_heads, head_size, dtype, gen)
    out_buf = torch.full((num_seqs, num_heads + 1, head_size + 8), 7.0, dtype=dtype, device=DEVICE)
    out = out_buf[:, :num_heads, :head_size]
    out.fill_(float("nan"))
    border = out_buf.clone()
    border[:, :num_heads, :head_size] = 0
    context = torch.tensor(context_lens, dtype=torch.int32, device=DEVICE)
    scale = 1.0 / math.sqrt(head_size)
    args = dict(query=query, key_cache=c.key_cache, value_cache=c.value_cache, block_tables=block_tables,
                context_lens=context, block_size=block_size, max_context_len=max(context_lens), scale=scale,
                k_scale=1.0, v_scale=1.0, partition_size=partition_size)
    ws_buf, ws_bytes = None, 0
    workspace = None
    if use_workspace:
        ws_bytes = kt._workspace_bytes(**args)
        ws_buf = torch.full((ws_bytes + 3 + 64,), 0xA5, dtype=torch.uint8, device=DEVICE)
        workspace = ws_buf[3: 3 + ws_bytes]  # odd byte offset: the kernel must align itself
    fn(out=out, workspace=workspace, **args)
    _sync()

    problems = []
    ref = reference_attention(query, seq_kv, group, scale)
    ok, detail = close(out, ref, dtype_name)
    if not ok:
        problems.append(detail)
    got_border = out_buf.clone()
    got_border[:, :num_heads, :head_size] = 0
    if not torch.equal(_bits(got_border), _bits(border)):
        problems.append("wrote outside `out` (its sentinel border changed)")
    if not torch.equal(_bits(c.storage), _bits(cache_before)):
        problems.append("changed the cache storage")
    if ws_buf is not None:
        outside = torch.cat([ws_buf[:3], ws_buf[3 + ws_bytes:]])
        if not bool((outside == 0xA5).all()):
            problems.append(f"wrote outside the {ws_bytes}-byte workspace")
    what = (f"{fmt} {dtype_name} {scheme} head_size={head_size} block_size={block_size} "
            f"kv_heads={num_kv_heads} gqa={group} ctx={context_lens} partition_size={partition_size or 'default'} "
            f"workspace={'harness' if use_workspace else 'own'}")
    return (not problems), (what if not problems else f"{what}: {'; '.join(problems)}"), out, (query, seq_kv, group,
                                                                                               scale)


def reference_attention(query, seq_kv, group, scale, drop_last=False):
    """float64 decode attention: query [num_seqs, num_heads, head_size]; seq_kv[s] = (K, V) [ctx, kv_heads, head_size].

    drop_last: leave out each sequence's last token (a known-bad reference for the check's self-test).
    """
    outs = []
    for s, (k, v) in enumerate(seq_kv):
        if drop_last:
            k, v = k[:-1], v[:-1]
        q = query[s].double()
        k = k.double().repeat_interleave(group, dim=1)  # query head h reads kv head h // group
        v = v.double().repeat_interleave(group, dim=1)
        scores = torch.einsum("hd,thd->ht", q, k) * scale
        p = torch.softmax(scores, dim=1)
        outs.append(torch.einsum("ht,thd->hd", p, v))
    return torch.stack(outs)


def close(out, ref, dtype_name):
    """(all |out - ref| <= atol + rtol |ref| and finite, worst element description)."""
    atol, rtol = TOLERANCE[dtype_name]
    got = out.double()
    err = (got - ref).abs()
    bound = atol + rtol * ref.abs()
    bad = ~(err <= bound)  # NaN counts as bad
    if not bool(bad.any()):
        return True, ""
    idx = tuple(int(i) for i in bad.nonzero()[0])
    return False, (f"{int(bad.sum())} of {bad.numel()} outputs off tolerance (atol {atol}, rtol {rtol}); "
                   f"first [seq, head, dim] = {list(idx)}: got {float(got[idx])}, reference {float(ref[idx])}")


_READER_CASES = [  # (head_size, block_size, num_kv_heads, gqa group, scheme, context_lens, partition_size, workspace)
    (128, 16, 2, 1, "separate", [1, 512, 513, 1100], 0, True),       # default partition 512: edges 512 / 513
    (64, 32, 4, 2, "interleaved", [64, 65, 1, 200], 64, False),
    (256, 16, 1, 8, "padded", [1, 64, 65, 3 * 64 + 7], 64, True),
    (80, 32, 2, 2, "kv_first", [17, 128, 129, 5], 128, True),
    (96, 16, 2, 8, "offset", [512, 513, 3], 0, False),
    (128, 64, 1, 1, "interleaved", [300, 1, 256, 257], 256, True),    # block_size 64
    (64, 16, 1, 32, "kv_first", [100, 1, 64], 64, False),             # a group of 32: two 16-head chunks
    (128, 8, 2, 2, "padded", [40, 41, 1, 95], 40, True),              # block_size 8; partitions start mid-block
    (256, 544, 1, 4, "interleaved", [1, 544, 545, 1300], 512, True),  # a hybrid page: tiles span blocks
    (128, 544, 2, 2, "kv_first", [600, 63, 64, 65], 0, False),
]


def _readers():
    return [("pa_v1", kt.triton_paged_attention_v1), ("shuffle", kt.triton_paged_attention_shuffle)]


def test_readers():
    results = []
    i = 0
    for fmt, fn in _readers():
        for dtype_name in ("fp16", "bf16"):
            for head_size, block_size, kv, group, scheme, ctx, psize, ws in _READER_CASES:
                ok, what, _, _ = reader_case(fn, fmt, scheme, dtype_name, head_size, block_size, kv, group, ctx, psize,
                                             ws, seed=100 + i)
                results.append((ok, what))
                i += 1
    _report(results)


def test_reader_check_rejects_dropped_token():
    # Known-bad for the reader check: a kernel that dropped the lone token of the last
    # partition (context P+1) would produce reference_attention(drop_last=True).
    results = []
    for fmt, fn in _readers():
        ok, what, out, (query, seq_kv, group, scale) = reader_case(fn, fmt, "interleaved", "bf16", 128, 16, 2, 4,
                                                                  [65, 129], 64, True, seed=5)
        results.append((ok, what))
        bad_ref = reference_attention(query, seq_kv, group, scale, drop_last=True)
        rejected = not close(out, bad_ref, "bf16")[0]
        results.append((rejected, f"{fmt}: the check rejects an output missing the last token of ctx P+1"))
    _report(results)


def test_reader_large_block_ids():
    results = []
    for fmt, fn in _readers():
        ok, what, _, _ = reader_case(fn, fmt, "large", "fp16", 128, 16, 8, 2, [70, 513, 1], 0, True, seed=9,
                                     num_blocks=65600)
        results.append((ok, f"{what} (block ids up to 65,599)"))
        torch.cuda.empty_cache()
    _report(results)


def test_bad_arguments_raise():
    c = Caches("shuffle", "separate", 4, 16, 2, 64, torch.float16, "random")
    _, key, value = fused_qkv(3, 2, 2, 64, torch.float16, torch.Generator(device=DEVICE).manual_seed(1))
    slots = torch.tensor([0, 1, -1], dtype=torch.int64, device=DEVICE)
    pa_v = torch.empty(4, 2, 64, 16, dtype=torch.float16, device=DEVICE)
    before = c.storage.clone()
    good = dict(key=key, value=value, key_cache=c.key_cache, value_cache=c.value_cache, slot_mapping=slots,
                block_size=16)
    bad = [
        ("value_cache", dict(good, value_cache=pa_v)),                          # pa_v1 V given to the shuffle writer
        ("slot_mapping", dict(good, slot_mapping=slots.to(torch.int32))),
        ("key_cache", dict(good, block_size=32)),                               # block_size disagrees with the cache
        ("key", dict(good, key=key.cpu())),                                     # not on the GPU
    ]
    results = []
    for name, kwargs in bad:
        try:
            kt.triton_reshape_and_cache_shuffle(**kwargs)
            results.append((False, f"bad {name}: no error raised"))
        except (ValueError, TypeError) as e:
            results.append((name in str(e), f"bad {name}: {type(e).__name__}: {e}"))
    _sync()
    results.append((torch.equal(_bits(c.storage), _bits(before)), "the rejected calls wrote nothing"))
    _report(results)


# --------------------------------------------------------------------------- #
# Ragged (varlen) readers over NHD caches
# --------------------------------------------------------------------------- #


class NhdCaches:
    """NHD K and V views [num_blocks, block_size, num_kv_heads, head_size] of one NaN-filled storage
    with MARGIN sentinels, laid out as the harness's schemes (separate, interleaved, padded, offset)."""

    def __init__(self, scheme, num_blocks, block_size, num_kv_heads, head_size, dtype):
        page = block_size * num_kv_heads * head_size
        k_off = 0
        if scheme == "separate":
            block_stride, v_off, total = page, num_blocks * page + 64, 2 * num_blocks * page + 64
        elif scheme == "interleaved":
            block_stride, v_off, total = 2 * page, page, num_blocks * 2 * page
        elif scheme == "padded":
            block_stride = 2 * page + max(64, page // 4)
            v_off, total = page, num_blocks * block_stride
        elif scheme == "offset":
            k_off = 37 * 8
            block_stride, v_off, total = page, k_off + num_blocks * page, k_off + 2 * num_blocks * page
        else:
            raise ValueError(scheme)
        shape = (num_blocks, block_size, num_kv_heads, head_size)
        strides = (block_stride, num_kv_heads * head_size, head_size, 1)
        self.storage = torch.full((MARGIN + total + MARGIN,), float("nan"), dtype=dtype, device=DEVICE)
        self.key_cache = self.storage.as_strided(shape, strides, MARGIN + k_off)
        self.value_cache = self.storage.as_strided(shape, strides, MARGIN + v_off)


def reference_varlen(query, seq_kv, starts, group, scale, causal, window=0, softcap=0.0, sinks=None, alibi=None,
                     causal_shift=0):
    """float64 ragged attention (provider.h): rows starts[s] .. starts[s+1] of query are the last tokens of
    sequence s, whose K/V [L, kv_heads, head_size] are seq_kv[s]. causal_shift = 1: each token also sees the
    next one (a known-bad reference for the check's self-test)."""
    out = torch.zeros(query.shape, dtype=torch.float64, device=query.device)
    for s, (k, v) in enumerate(seq_kv):
        L, n_q = k.shape[0], starts[s + 1] - starts[s]
        q = query[starts[s]:starts[s + 1]].double()                      # [n_q, H, D]
        k = k.double().repeat_interleave(group, dim=1)                   # [L, H, D]
        v = v.double().repeat_interleave(group, dim=1)
        x = torch.einsum("qhd,thd->qht", q, k) * scale
        if softcap > 0:
            x = softcap * torch.tanh(x / softcap)
        pos = L - n_q + torch.arange(n_q, device=q.device)
        rel = (torch.arange(L, device=q.device)[None, :] - pos[:, None]).double()  # t - p, [n_q, L]
        if alibi is not None:
            x = x + alibi.double()[None, :, None] * rel[:, None, :]
        hidden = torch.zeros(n_q, L, dtype=torch.bool, device=q.device)
        if causal:
            hidden |= rel > causal_shift
        if window > 0:
            hidden |= rel <= -window
        x = x.masked_fill(hidden[:, None, :], float("-inf"))
        if sinks is not None:
            x = torch.cat([x, sinks.double()[None, :, None].expand(n_q, -1, 1)], dim=2)
        p = torch.softmax(x, dim=2)[:, :, :L]
        out[starts[s]:starts[s + 1]] = torch.einsum("qht,thd->qhd", p, v)
    return out


def varlen_case(fn, dtype_name, scheme, head_size, block_size, num_kv_heads, group, q_lens, ctx_before, causal, mods,
                partition_size, harness_workspaces, seed=0, decode_call=False):
    """Runs ragged reader `fn` once. Returns (ok, description, out, reference arguments)."""
    dtype = _dtype(dtype_name)
    gen = torch.Generator(device=DEVICE).manual_seed(seed)
    num_heads = num_kv_heads * group
    lens = [q + c for q, c in zip(q_lens, ctx_before)]
    starts = [0]
    for q in q_lens:
        starts.append(starts[-1] + q)
    T = starts[-1]
    per_seq = [-(-L // block_size) for L in lens]
    num_blocks = sum(per_seq) + 3  # blocks no sequence owns: NaN, never to be read
    c = NhdCaches(scheme, num_blocks, block_size, num_kv_heads, head_size, dtype)
    pool = torch.randperm(num_blocks, generator=gen, device=DEVICE)
    tables = torch.full((len(lens), max(per_seq) + 1), int(pool[-1]), dtype=torch.int32, device=DEVICE)
    seq_kv, at = [], 0
    for s, L in enumerate(lens):
        blocks = pool[at:at + per_seq[s]]
        at += per_seq[s]
        tables[s, :per_seq[s]] = blocks.to(torch.int32)
        k = torch.randn(L, num_kv_heads, head_size, generator=gen, device=DEVICE).to(dtype)
        v = torch.randn(L, num_kv_heads, head_size, generator=gen, device=DEVICE).to(dtype)
        t = torch.arange(L, device=DEVICE)
        c.key_cache[blocks[t // block_size].long(), t % block_size] = k
        c.value_cache[blocks[t // block_size].long(), t % block_size] = v
        seq_kv.append((k, v))
    cache_before = c.storage.clone()
    query, _, _ = fused_qkv(T, num_heads, num_kv_heads, head_size, dtype, gen)
    out_buf = torch.full((T, num_heads + 1, head_size + 8), 7.0, dtype=dtype, device=DEVICE)
    out = out_buf[:, :num_heads, :head_size]
    out.fill_(float("nan"))
    border = out_buf.clone()
    border[:, :num_heads, :head_size] = 0
    scale = 1.0 / math.sqrt(head_size)
    sinks = (torch.rand(num_heads, generator=gen, device=DEVICE) * 6 - 2) if mods.get("sinks") else None
    alibi = (torch.tensor([2.0 ** (-8.0 * (h + 1) / num_heads) for h in range(num_heads)], device=DEVICE)
             if mods.get("alibi") else None)
    args = dict(query=query, key_cache=c.key_cache, value_cache=c.value_cache, block_tables=tables,
                context_lens=torch.tensor(lens, dtype=torch.int32, device=DEVICE), block_size=block_size,
                max_context_len=max(lens), scale=scale, k_scale=1.0, v_scale=1.0, partition_size=partition_size,
                sliding_window=mods.get("window", 0), softcap=mods.get("softcap", 0.0), sinks=sinks,
                alibi_slopes=alibi)
    if not decode_call:
        args.update(query_start_loc=torch.tensor(starts, dtype=torch.int32, device=DEVICE),
                    seq_lens=torch.tensor(lens, dtype=torch.int32, device=DEVICE), max_query_len=max(q_lens),
                    num_query_tokens=T, causal=causal)
    guards = []
    if harness_workspaces:  # as the harness passes them: dense, NaN-filled, guarded on both sides
        ws = {}
        for name, shape, dt in kt._varlen_workspaces(**args):
            n = math.prod(shape)
            buf = torch.full((n + 2 * MARGIN,), float("nan"), dtype=getattr(torch, dt), device=DEVICE)
            buf[:MARGIN] = 5.0
            buf[MARGIN + n:] = 5.0
            ws[name] = buf[MARGIN:MARGIN + n].view(shape)
            guards.append((name, buf, n))
        args["workspaces"] = ws
    fn(out=out, **args)
    _sync()
    problems = []
    ref = reference_varlen(query, seq_kv, starts, group, scale, causal or decode_call, mods.get("window", 0),
                           mods.get("softcap", 0.0), sinks, alibi)
    ok, detail = close(out, ref, dtype_name)
    if not ok:
        problems.append(detail)
    got_border = out_buf.clone()
    got_border[:, :num_heads, :head_size] = 0
    if not torch.equal(_bits(got_border), _bits(border)):
        problems.append("wrote outside `out` (its sentinel border changed)")
    if not torch.equal(_bits(c.storage), _bits(cache_before)):
        problems.append("changed the cache storage")
    for name, buf, n in guards:
        if not bool((buf[:MARGIN] == 5.0).all() and (buf[MARGIN + n:] == 5.0).all()):
            problems.append(f"wrote outside workspace {name}")
    what = (f"{fn.__name__} {dtype_name} {scheme} head_size={head_size} block_size={block_size} "
            f"kv_heads={num_kv_heads} gqa={group} q={q_lens} ctx_before={ctx_before} causal={causal} {mods or ''} "
            f"partition_size={partition_size or 'default'}"
            + (" workspaces=harness" if harness_workspaces else "") + (" decode call" if decode_call else ""))
    return (not problems), (what if not problems else f"{what}: {'; '.join(problems)}"), out, (
        query, seq_kv, starts, group, scale, causal, mods, sinks, alibi)


_VARLEN_CASES = [  # (head_size, block_size, kv_heads, group, scheme, q_lens, ctx_before, partition_size, mods)
    (128, 16, 2, 6, "interleaved", [1, 3, 9, 40, 1, 5], [0, 11, 30, 23, 600, 0], 0, {}),
    (64, 32, 1, 8, "padded", [17, 1, 2, 64], [3, 513, 0, 100], 256, {"window": 128}),
    (256, 16, 4, 1, "separate", [5, 1, 33], [300, 1299, 0], 433, {"sinks": True, "softcap": 5.0}),
    (128, 544, 2, 4, "offset", [7, 100, 1], [1300, 0, 544], 512, {"alibi": True}),
    (80, 16, 2, 2, "interleaved", [2, 1, 16], [40, 7, 1], 64,
     {"window": 5, "alibi": True, "softcap": 3.0, "sinks": True}),
    (128, 16, 1, 16, "padded", [300], [200], 128, {"sinks": True, "window": 100}),
]


def _varlen_readers():
    return [(kt.triton_unified_attention, False), (kt.triton_unified_attention_splitk, True),
            (kt.triton_unified_attention_splitk, False)]


def test_varlen_readers():
    results = []
    i = 0
    for fn, harness_ws in _varlen_readers():
        for hs, bs, kv, group, scheme, q_lens, ctx, psize, mods in _VARLEN_CASES:
            for causal in (True, False):
                dtype_name = ("fp16", "bf16")[i % 2]
                ok, what, _, _ = varlen_case(fn, dtype_name, scheme, hs, bs, kv, group, q_lens, ctx, causal, mods,
                                             psize, harness_ws, seed=200 + i)
                results.append((ok, what))
                i += 1
    _report(results)


def test_varlen_decode_call():
    results = []
    for fn, harness_ws in _varlen_readers()[:2]:
        ok, what, _, _ = varlen_case(fn, "bf16", "interleaved", 128, 16, 2, 4, [1, 1, 1], [0, 512, 1299], True,
                                     {"sinks": True}, 512, harness_ws, seed=3, decode_call=True)
        results.append((ok, what))
    _report(results)


def test_varlen_check_rejects_causal_off_by_one():
    results = []
    for fn, harness_ws in _varlen_readers()[:2]:
        ok, what, out, (query, seq_kv, starts, group, scale, causal, mods, sinks, alibi) = varlen_case(
            fn, "fp16", "padded", 64, 16, 2, 2, [1, 4, 40], [3, 20, 0], True, {}, 0, harness_ws, seed=4)
        results.append((ok, what))
        bad = reference_varlen(query, seq_kv, starts, group, scale, True, causal_shift=1)
        results.append((not close(out, bad, "fp16")[0], f"{fn.__name__}: the check rejects a causal mask off by one"))
    _report(results)


# --------------------------------------------------------------------------- #
# Script mode
# --------------------------------------------------------------------------- #


def _time_us(fn, iters=50):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) * 1000.0)
    times.sort()
    return times[len(times) // 2]


def bench():
    """Median kernel times (CUDA events around the Python call, launch overhead included)."""
    gen = torch.Generator(device=DEVICE).manual_seed(0)
    dtype, head_size, block_size, kv = torch.float16, 128, 16, 8
    tokens = 4096
    for fmt, fn in _writers():
        c = Caches(fmt, "interleaved", tokens // block_size + 8, block_size, kv, head_size, dtype, "random")
        _, key, value = fused_qkv(tokens, 32, kv, head_size, dtype, gen)
        slots = torch.randperm(tokens, generator=gen, device=DEVICE).to(torch.int64)
        us = _time_us(lambda: fn(key=key, value=value, key_cache=c.key_cache, value_cache=c.value_cache,
                                 slot_mapping=slots, block_size=block_size))
        gbs = 4 * tokens * kv * head_size * 2 / us / 1e3
        print(f"  bench writer {fmt:8s} fp16 tokens={tokens} kv_heads={kv} head_size={head_size}: "
              f"{us:8.1f} us ({gbs:.0f} GB/s moved)")
    num_seqs, ctx, heads = 64, 4096, 32
    for fmt, fn in _readers():
        nb = num_seqs * ctx // block_size
        c = Caches(fmt, "interleaved", nb, block_size, kv, head_size, dtype, "random")
        query, _, _ = fused_qkv(num_seqs, heads, kv, head_size, dtype, gen)
        out = torch.empty(num_seqs, heads, head_size, dtype=dtype, device=DEVICE)
        bt = torch.randperm(nb, generator=gen, device=DEVICE).to(torch.int32).view(num_seqs, ctx // block_size)
        cl = torch.full((num_seqs,), ctx, dtype=torch.int32, device=DEVICE)
        args = dict(query=query, key_cache=c.key_cache, value_cache=c.value_cache, block_tables=bt, context_lens=cl,
                    block_size=block_size, max_context_len=ctx, scale=head_size ** -0.5, k_scale=1.0, v_scale=1.0,
                    partition_size=0)
        ws = torch.empty(kt._workspace_bytes(**args), dtype=torch.uint8, device=DEVICE)
        us = _time_us(lambda: fn(out=out, workspace=ws, **args))
        gbs = 2 * num_seqs * ctx * kv * head_size * 2 / us / 1e3
        print(f"  bench reader {fmt:8s} fp16 seqs={num_seqs} ctx={ctx} heads={heads}/{kv} head_size={head_size}: "
              f"{us:8.1f} us ({gbs:.0f} GB/s of K+V)")


FINDINGS_PROVIDER = """
import kvharness
import triton
import triton.language as tl
from kvharness import writer


@triton.jit
def _copy_row(src, dst, D: tl.constexpr):
    offs = tl.arange(0, D)  # a power of two only: head size 96 does not compile
    tl.store(dst + offs, tl.load(src + offs))


def _launch(key, key_cache):
    _copy_row[(1,)](key, key_cache, D=key.shape[-1])  # PROVIDER LAUNCH


@writer("t_triton_compile_error", cache_format="flash")
def compile_error(key, key_cache):
    _launch(key, key_cache)


@writer("t_triton_refuses", cache_format="flash")
def refuses(key, key_cache):
    d = key.shape[-1]
    if d & (d - 1):
        raise kvharness.Unsupported(f"head_size {d} is not a power of two")
    _launch(key, key_cache)
"""


def test_triton_findings_through_the_bridge():
    import os
    import tempfile

    from kvharness import _bridge
    d = tempfile.mkdtemp()
    path = os.path.join(d, "kvh_triton_findings.py")
    with open(path, "w") as f:
        f.write(FINDINGS_PROVIDER)
    line = next(i for i, t in enumerate(FINDINGS_PROVIDER.splitlines(), 1) if "# PROVIDER LAUNCH" in t)
    h, err = _bridge.load(path, _bridge.DEVICE_CUDA, torch.cuda.current_device())
    assert err is None, err
    idx = {k["name"]: i for i, k in enumerate(h.kernels)}
    key96 = torch.randn(96, device=DEVICE, dtype=torch.float16)
    msg = h.call(idx["t_triton_compile_error"], {"key": key96, "key_cache": torch.zeros_like(key96)}, 0)
    print(f"  compile error: {msg[-400:]}")
    assert isinstance(msg, str) and f"kvh_triton_findings.py:{line}" in msg, msg
    refusal = h.call(idx["t_triton_refuses"], {"key": key96, "key_cache": torch.zeros_like(key96)}, 0)
    print(f"  refusal: {refusal}")
    assert refusal == ("unsupported", "head_size 96 is not a power of two"), refusal
    key128 = torch.randn(128, device=DEVICE, dtype=torch.float16)
    cache = torch.zeros_like(key128)
    assert h.call(idx["t_triton_refuses"], {"key": key128, "key_cache": cache}, 0) is None
    _sync()
    assert torch.equal(_bits(cache), _bits(key128)), "head size 128 runs and copies bit-exactly"


# ---- issue 22: triton_mla_decode against a float64 torch reference of provider.h's MLA reader ----
def _mla_reference(query, cache_vals, block_tables, seq_lens, qsl, block_size, scale, r, causal, drop_rope=False):
    """out [rows, H, R] in float64: score over all R + P dims (the latent part only if drop_rope), value c[:, :R]."""
    out = torch.zeros(query.shape[0], query.shape[1], r, dtype=torch.float64)
    for s in range(block_tables.shape[0]):
        q0, q1, n = int(qsl[s]), int(qsl[s + 1]), int(seq_lens[s])
        t = torch.arange(n)
        rows = cache_vals[block_tables[s].long()[t // block_size], t % block_size]          # [n, R + P]
        keys = rows[:, :r] if drop_rope else rows
        q = query[q0:q1].double()[..., :keys.shape[1]]
        sc = torch.einsum("qhd,td->qht", q, keys) * scale
        if causal:
            pos = n - (q1 - q0) + torch.arange(q1 - q0).view(-1, 1, 1)
            sc = sc.masked_fill(t.view(1, 1, -1) > pos, float("-inf"))
        out[q0:q1] = torch.einsum("qht,tr->qhr", torch.softmax(sc, -1), rows[:, :r])
    return out


def _mla_case(heads, block_size, qlens, lens, dtype, cache_dtype, causal=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    r, p = 512, 64
    pages = [-(-n // block_size) for n in lens]
    num_blocks = sum(pages) + 3
    perm = torch.randperm(num_blocks, generator=g)[:sum(pages)]  # pages in shuffled order
    bt = torch.full((len(lens), max(pages)), num_blocks + 7, dtype=torch.int32)  # padding: out of range
    k = 0
    for s, n in enumerate(pages):
        bt[s, :n] = perm[k:k + n].to(torch.int32)
        k += n
    vals = torch.randn(num_blocks, block_size, r + p, generator=g, dtype=torch.float64)
    k_scale = 0.05 if cache_dtype is not None else 1.0
    if cache_dtype is not None:
        cache = (vals / k_scale).clamp(-400, 400).to(cache_dtype)
        cache_vals = cache.double() * k_scale
    else:
        cache = vals.to(dtype)
        cache_vals = cache.double()
    qsl = torch.tensor([0] + list(torch.tensor(qlens).cumsum(0)), dtype=torch.int32)
    query = (torch.randn(int(qsl[-1]), heads, r + p, generator=g) * 0.3).to(dtype)
    return query, cache, cache_vals, bt, torch.tensor(lens, dtype=torch.int32), qsl, k_scale


def test_mla_decode():
    """triton_mla_decode: 16/64/128 and 5 heads, pages of 1/16/64, decode and MTP rows, causal and not,
    bf16/fp16 and fp8 e4m3fn caches; NaN-poisoned out; a rope-dropping output is rejected by the same check."""
    scale = 1.0 / (192 ** 0.5)  # DeepSeek: 1/sqrt(qk_nope 128 + qk_rope 64)
    fp8 = getattr(torch, "float8_e4m3fn", None)
    for heads, bs, qlens, lens, dt, cdt, causal in (
            (16, 1, [1, 1, 1], [1, 77, 300], torch.bfloat16, None, True),
            (128, 16, [1, 1], [33, 1000], torch.bfloat16, None, True),
            (64, 64, [2, 4, 1], [5, 130, 64], torch.float16, None, True),
            (5, 16, [3, 8], [3, 200], torch.bfloat16, None, False),
            (16, 16, [1, 2], [90, 400], torch.bfloat16, fp8, True)):
        if cdt is fp8 and fp8 is None:
            continue
        q, cache, cache_vals, bt, sl, qsl, ks = _mla_case(heads, bs, qlens, lens, dt, cdt, causal, seed=heads + bs)
        out = torch.full((q.shape[0], heads, 512), float("nan"), dtype=dt, device=DEVICE)
        qd, cd, btd, sld, qsld = (x.to(DEVICE) for x in (q, cache, bt, sl, qsl))
        kst = torch.tensor([ks], dtype=torch.float32, device=DEVICE)
        kt.triton_mla_decode(out, qd, cd, cd, btd, sld, bs, max(lens), scale, ks, ks, query_start_loc=qsld,
                             seq_lens=sld, max_query_len=max(qlens), causal=causal,
                             k_scales=kst if cdt is not None else None, k_scale_tensor=kst)
        _sync()
        want = _mla_reference(q, cache_vals, bt, sl, qsl, bs, scale, 512, causal)
        got = out.double().cpu()
        err = (got - want).abs().max().item()
        tol = 2e-2 if dt is torch.bfloat16 else 4e-3
        print(f"  heads {heads} bs {bs} q {qlens} L {lens} {dt} cache {cdt} causal {causal}: max err {err:.2e}")
        assert torch.isfinite(got).all() and err < tol, f"max err {err} >= {tol}"
        wrong = _mla_reference(q, cache_vals, bt, sl, qsl, bs, scale, 512, causal, drop_rope=True)
        assert (wrong - want).abs().max().item() > tol, "the check cannot tell a rope-dropping output apart"


TESTS = [test_writers_all_layouts, test_fixture_fails_exactly_on_interleaved_and_padded,
         test_writers_more_than_65535_blocks, test_readers, test_reader_check_rejects_dropped_token,
         test_reader_large_block_ids, test_bad_arguments_raise, test_varlen_readers, test_varlen_decode_call,
         test_varlen_check_rejects_causal_off_by_one, test_triton_findings_through_the_bridge, test_mla_decode]


def main(argv):
    if SKIP_REASON is not None:
        print(f"SKIPPED: kvharness_triton tests need a GPU: {SKIP_REASON}")
        return 0
    print(f"torch {torch.__version__}, triton {triton.__version__}, {torch.cuda.get_device_name()}")
    failed = 0
    for test in TESTS:
        t0 = time.perf_counter()
        print(f"{test.__name__}:")
        try:
            test()
            status = "PASS"
        except Exception:  # report every test, not only the first failure
            traceback.print_exc()
            status = "FAIL"
            failed += 1
        print(f"{status} {test.__name__} ({time.perf_counter() - t0:.1f} s)", flush=True)
    if "--bench" in argv:
        bench()
    print(f"{len(TESTS) - failed} of {len(TESTS)} tests passed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
