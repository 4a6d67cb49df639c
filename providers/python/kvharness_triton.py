"""Triton kernels for kvharness: paged KV-cache writers and split-K decode readers.

GPU only (CUDA or ROCm torch with triton). Every kernel here was written for this
project; vLLM's and aiter's kernels were read for their semantics only.

Kernels (names as the harness sees them):
  triton_reshape_and_cache_shuffle   writer, cache_format "shuffle"
  triton_reshape_and_cache           writer, cache_format "pa_v1"
  triton_paged_attention_v1          reader, cache_format "pa_v1"
  triton_paged_attention_shuffle     reader, cache_format "shuffle"
  triton_fixture_shuffle_contiguous  writer, "shuffle", fixture: KNOWN BAD on purpose
  triton_unified_attention           reader, cache_format "flash" (NHD), ragged queries (query_start_loc)
  triton_unified_attention_splitk    the same, split-K with typed workspaces
  triton_mla_decode                  reader, cache_format "mla": absorbed MLA decode over the latent
                                     cache, split-K (MLA_NUM_SPLITS splits) and a reduce (issue 22)

Shapes (outermost first, elements; x = 16 // element_size, 8 for fp16/bf16):
  key, value     [num_tokens, num_kv_heads, head_size], any strides
  slot_mapping   [num_tokens] int64, slot = block_id * block_size + offset; negative = skip
  key_cache      [num_blocks, num_kv_heads, head_size/x, block_size, x]          (both formats)
  value_cache    pa_v1   [num_blocks, num_kv_heads, head_size, block_size]
                 shuffle [num_blocks, num_kv_heads, block_size/x, head_size, x]
  query, out     [num_seqs, num_heads, head_size], any strides (ragged readers: [num_query_tokens, ...])
  block_tables   [num_seqs, max_blocks_per_seq] int32; context_lens [num_seqs] int32
  NHD caches     key_cache, value_cache [num_blocks, block_size, num_kv_heads, head_size] (ragged readers)
  query_start_loc [num_seqs + 1] int32, seq_lens [num_seqs] int32 (ragged readers)
  MLA (R = kv_lora_rank = out.shape[2], P = qk_rope_head_dim = query.shape[2] - R)
                 key_cache = value_cache = the latent cache [num_blocks, block_size, R + P];
                 query [num_query_tokens, num_heads, R + P], out [num_query_tokens, num_heads, R]

Every address is built from the strides of the views the harness hands over
(tensor.stride(), in elements) in int64 arithmetic, so blocks-first interleaved
and padded caches, storage offsets, block ids above 65,535 and element offsets
above 2^31 are all addressed correctly. Nothing is copied: the kernels write
into the given key_cache/value_cache/out views in place. Launches go to torch's
current stream (triton's default), which the bridge sets to the harness's stream.
"""

import torch
import triton
import triton.language as tl

import kvharness
from kvharness import reader, writer

#: Split-K partition (tokens) used when the harness passes partition_size = 0.
DEFAULT_PARTITION_SIZE = 512

_SUPPORTED_DTYPES = (torch.float16, torch.bfloat16)


# --------------------------------------------------------------------------- #
# Argument checks (raise ValueError naming the argument and what was expected)
# --------------------------------------------------------------------------- #


def _check_dims(name, t, ndim):
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name}: expected a torch.Tensor, got {type(t).__name__}")
    if t.dim() != ndim:
        raise ValueError(f"{name}: expected {ndim} dims, got shape {tuple(t.shape)}")


def _check_gpu(tensors):
    dev = tensors[0][1].device
    for name, t in tensors:
        if t.device.type != "cuda":  # ROCm torch reports its GPUs as "cuda" too
            raise ValueError(f"{name}: Triton kernels need a GPU tensor, got one on {t.device}")
        if t.device != dev:
            raise ValueError(f"{name}: on {t.device}, but {tensors[0][0]} is on {dev}")


def _check_cache_shapes(cache_format, key_cache, value_cache, num_kv_heads, head_size, block_size):
    """Checks key_cache/value_cache against the format's shapes; returns (num_blocks, x)."""
    _check_dims("key_cache", key_cache, 5)
    num_blocks, _, _, _, x = key_cache.shape
    if key_cache.dtype not in _SUPPORTED_DTYPES:
        raise ValueError(f"key_cache: dtype {key_cache.dtype} not supported (float16 or bfloat16)")
    if value_cache.dtype != key_cache.dtype:
        raise ValueError(f"value_cache: dtype {value_cache.dtype} differs from key_cache's {key_cache.dtype}")
    if x != 16 // key_cache.element_size():
        raise ValueError(f"key_cache: last dim x = {x}, expected 16 / element_size = {16 // key_cache.element_size()}")
    if head_size % x != 0:
        raise ValueError(f"head_size {head_size} is not a multiple of x = {x}")
    want_k = (num_blocks, num_kv_heads, head_size // x, block_size, x)
    if tuple(key_cache.shape) != want_k:
        raise ValueError(f"key_cache: shape {tuple(key_cache.shape)}, expected {want_k} "
                         "[num_blocks, num_kv_heads, head_size/x, block_size, x]")
    if cache_format == "pa_v1":
        want_v = (num_blocks, num_kv_heads, head_size, block_size)
        what = "[num_blocks, num_kv_heads, head_size, block_size]"
    else:
        if block_size % x != 0:
            raise ValueError(f"block_size {block_size} is not a multiple of x = {x} (shuffled V cache)")
        want_v = (num_blocks, num_kv_heads, block_size // x, head_size, x)
        what = "[num_blocks, num_kv_heads, block_size/x, head_size, x]"
    if tuple(value_cache.shape) != want_v:
        raise ValueError(f"value_cache: shape {tuple(value_cache.shape)}, expected {want_v} {what} ({cache_format})")
    return num_blocks, x


def _strides5(t):
    """The tensor's 5 strides (elements); a 4-dim pa_v1 V cache gets a trailing 0."""
    s = list(t.stride())
    return s + [0] * (5 - len(s))


# --------------------------------------------------------------------------- #
# Writers
# --------------------------------------------------------------------------- #


@triton.jit
def _reshape_and_cache_kernel(
    key_ptr, value_ptr, key_cache_ptr, value_cache_ptr, slot_mapping_ptr,
    k_s0, k_s1, k_s2,
    v_s0, v_s1, v_s2,
    kc_s0, kc_s1, kc_s2, kc_s3, kc_s4,
    vc_s0, vc_s1, vc_s2, vc_s3, vc_s4,
    sm_s0,
    block_size, num_kv_heads,
    HEAD_SIZE: tl.constexpr, D_PAD: tl.constexpr, X: tl.constexpr, BLOCK_H: tl.constexpr,
    V_SHUFFLE: tl.constexpr, CONTIGUOUS_BLOCK_BASE: tl.constexpr,
):
    """One program per (token, group of BLOCK_H kv heads): copies key[token, h, :]
    and value[token, h, :] into the slot's place in both caches.

    V_SHUFFLE: V cache [nb, H, bs/X, D, X] (else pa_v1 [nb, H, D, bs]).
    CONTIGUOUS_BLOCK_BASE: the known-bad fixture's addressing (every cache offset
    computed as for a contiguous cache from the view's data pointer).
    """
    token = tl.program_id(0).to(tl.int64)
    slot = tl.load(slot_mapping_ptr + token * sm_s0).to(tl.int64)
    if slot < 0:  # padding token
        return
    block = slot // block_size
    off = slot % block_size

    h = tl.program_id(1).to(tl.int64) * BLOCK_H + tl.arange(0, BLOCK_H).to(tl.int64)
    d = tl.arange(0, D_PAD).to(tl.int64)
    mask = (h < num_kv_heads)[:, None] & (d < HEAD_SIZE)[None, :]
    hh = h[:, None]
    dd = d[None, :]

    k = tl.load(key_ptr + token * k_s0 + hh * k_s1 + dd * k_s2, mask=mask)
    v = tl.load(value_ptr + token * v_s0 + hh * v_s1 + dd * v_s2, mask=mask)

    if CONTIGUOUS_BLOCK_BASE:
        # THE BUG (kept on purpose): block base block * num_kv_heads * head_size * block_size
        # from the view's data pointer, inner offsets as if contiguous; ignores the views' strides.
        page = block * num_kv_heads * HEAD_SIZE * block_size
        head_base = page + hh * (HEAD_SIZE * block_size)
        k_off = head_base + (dd // X) * (block_size * X) + off * X + dd % X
        v_off = head_base + (off // X) * (HEAD_SIZE * X) + dd * X + off % X
    else:
        k_off = block * kc_s0 + hh * kc_s1 + (dd // X) * kc_s2 + off * kc_s3 + (dd % X) * kc_s4
        if V_SHUFFLE:
            v_off = block * vc_s0 + hh * vc_s1 + (off // X) * vc_s2 + dd * vc_s3 + (off % X) * vc_s4
        else:
            v_off = block * vc_s0 + hh * vc_s1 + dd * vc_s2 + off * vc_s3
    tl.store(key_cache_ptr + k_off, k, mask=mask)
    tl.store(value_cache_ptr + v_off, v, mask=mask)


def _launch_writer(cache_format, key, value, key_cache, value_cache, slot_mapping, block_size,
                   contiguous_block_base=False):
    for name, t in (("key", key), ("value", value)):
        _check_dims(name, t, 3)
    _check_dims("slot_mapping", slot_mapping, 1)
    _check_dims("value_cache", value_cache, 4 if cache_format == "pa_v1" else 5)
    num_tokens, num_kv_heads, head_size = key.shape
    if tuple(value.shape) != tuple(key.shape):
        raise ValueError(f"value: shape {tuple(value.shape)} differs from key's {tuple(key.shape)}")
    if slot_mapping.shape[0] != num_tokens:
        raise ValueError(f"slot_mapping: {slot_mapping.shape[0]} entries, expected num_tokens = {num_tokens}")
    if slot_mapping.dtype != torch.int64:
        raise ValueError(f"slot_mapping: dtype {slot_mapping.dtype}, expected torch.int64")
    block_size = int(block_size)
    if block_size <= 0:
        raise ValueError(f"block_size: {block_size}, expected > 0")
    _, x = _check_cache_shapes(cache_format, key_cache, value_cache, num_kv_heads, head_size, block_size)
    for name, t in (("key", key), ("value", value)):
        if t.dtype != key_cache.dtype:
            raise ValueError(f"{name}: dtype {t.dtype} differs from key_cache's {key_cache.dtype}")
    _check_gpu([("key_cache", key_cache), ("value_cache", value_cache), ("key", key), ("value", value),
                ("slot_mapping", slot_mapping)])
    if num_tokens == 0:
        return

    d_pad = triton.next_power_of_2(head_size)
    block_h = min(triton.next_power_of_2(num_kv_heads), max(1, 2048 // d_pad))
    grid = (num_tokens, triton.cdiv(num_kv_heads, block_h))
    with torch.cuda.device(key_cache.device):
        _reshape_and_cache_kernel[grid](
            key, value, key_cache, value_cache, slot_mapping,
            *key.stride(), *value.stride(), *_strides5(key_cache), *_strides5(value_cache),
            slot_mapping.stride(0), block_size, num_kv_heads,
            HEAD_SIZE=head_size, D_PAD=d_pad, X=x, BLOCK_H=block_h,
            V_SHUFFLE=cache_format == "shuffle", CONTIGUOUS_BLOCK_BASE=contiguous_block_base,
            num_warps=4 if block_h * d_pad >= 1024 else 2,
        )


@writer("triton_reshape_and_cache_shuffle", cache_format="shuffle",
        description="Triton shuffle-layout cache writer (x-split K, V [nb, H, bs/x, D, x]); stride-aware, int64 offsets",
        dtypes=("fp16", "bf16"))
def triton_reshape_and_cache_shuffle(key, value, key_cache, value_cache, slot_mapping, block_size):
    """Writes key/value [num_tokens, num_kv_heads, head_size] into the shuffle caches at slot_mapping."""
    _launch_writer("shuffle", key, value, key_cache, value_cache, slot_mapping, block_size)


@writer("triton_reshape_and_cache", cache_format="pa_v1",
        description="Triton pa_v1 cache writer (x-split K, V [nb, H, D, bs]); stride-aware, int64 offsets",
        dtypes=("fp16", "bf16"))
def triton_reshape_and_cache(key, value, key_cache, value_cache, slot_mapping, block_size):
    """Writes key/value [num_tokens, num_kv_heads, head_size] into the pa_v1 caches at slot_mapping."""
    _launch_writer("pa_v1", key, value, key_cache, value_cache, slot_mapping, block_size)


@writer("triton_fixture_shuffle_contiguous", cache_format="shuffle", fixture=True,
        description="KNOWN BAD: shuffle writer with the contiguous block base block_id*num_kv_heads*head_size*"
                    "block_size from each view's data pointer (the public PR thread's bug); right on separate "
                    "and kv_first caches, wrong on interleaved and padded ones",
        dtypes=("fp16", "bf16"))
def triton_fixture_shuffle_contiguous(key, value, key_cache, value_cache, slot_mapping, block_size):
    """Regression fixture: the shuffle writer addressing each cache as if it were contiguous."""
    _launch_writer("shuffle", key, value, key_cache, value_cache, slot_mapping, block_size,
                   contiguous_block_base=True)


# --------------------------------------------------------------------------- #
# Readers: split-K paged decode attention
# --------------------------------------------------------------------------- #
#
# Pass 1, grid (num_seqs, num_kv_heads * head_chunks, max_partitions): program
#   (s, kv * head_chunks + c, p) runs an online softmax over tokens
#   [p*P, min((p+1)*P, ctx)) of sequence s for GROUP_BLOCK (16) query heads of kv
#   head kv's GQA group (query head h reads kv head h // (num_heads // num_kv_heads)),
#   so each K/V tile is loaded once for all of them. It walks the cache blocks
#   the partition overlaps, BLOCKS_PER_ITER blocks per iteration (unrolled, so
#   their loads are in flight together); one block's id is a scalar, so the
#   compiler sees the contiguous runs inside the block and vectorises the loads.
#   Per block, TILE_T = max(16, next_pow2(block_size)) token rows (rows past block_size masked):
#     logits [heads, tokens] = q . K^T   tl.dot on the 16-bit inputs, float32 accumulation
#                                        (the products are exact in float32)
#     out   += p . V                     tl.dot in float32 ("ieee": no TF32 rounding of p)
#   It stores each head's partition max logit m_p, exp-sum l_p = sum exp(s_t - m_p)
#   and unnormalised o_p = sum exp(s_t - m_p) v_t to the workspace. Empty
#   partitions store nothing.
# Pass 2, grid (num_seqs, num_heads): out = v_scale * sum_p e^(m_p-M) o_p / sum_p e^(m_p-M) l_p,
#   M the running max, rescaled as each partition comes in.
# Workspace (float32), index i = (s*num_heads + h)*max_partitions + p:
#   max_logits [i], exp_sums [i] (each region padded to 256 bytes), partial_out [i, head_size].
#
# The strides of dims 3 and 4 of both caches are compile-time constants (KC_S3,
# KC_S4, VC_S3, VC_S4 = the views' values, 0 for the 4-dim pa_v1 V cache's
# missing dim 4; a recompile per distinct value), so that contiguity inside a
# block is visible to the compiler; all other strides are runtime int64 math.

#: Query heads per program of pass 1 (tl.dot needs at least 16 rows).
_GROUP_BLOCK = 16
#: Launch options of pass 1 (performance only; every choice computes the same float32 math).
#: H200, 64 seqs x 4096 tokens, 32/8 heads, head_size 128: 8 warps / 2 stages 2.9 ms,
#: 4 warps / 1 stage 3.4 ms (triton.testing.do_bench, both passes).
_PARTITION_LAUNCH = dict(num_warps=8, num_stages=2)
#: issue 23 (D): the launch configurations the split-K readers declare (kvharness reader(configs=...)):
#: pass 1's num_warps / num_stages and the reduce's warps (0: 1 up to head_size 128, else 2). A case
#: file's `launch_configs = "all"` runs each; the math is the same at every one, so each must pass.
_PA_CONFIGS = [dict(name="w8s2", num_warps=8, num_stages=2), dict(name="w4s1", num_warps=4, num_stages=1),
               dict(name="w4s1_r4", num_warps=4, num_stages=1, reduce_num_warps=4),
               dict(name="w2s1_r2", num_warps=2, num_stages=1, reduce_num_warps=2)]


@triton.jit
def _paged_attention_partition_kernel(
    q_ptr, key_cache_ptr, value_cache_ptr, block_tables_ptr, context_lens_ptr,
    max_logits_ws, exp_sums_ws, partial_out_ws,
    q_s0, q_s1, q_s2,
    kc_s0, kc_s1, kc_s2,
    vc_s0, vc_s1, vc_s2,
    bt_s0, bt_s1, cl_s0,
    num_heads, queries_per_kv, head_chunks, max_partitions, partition_size, max_tokens, qk_scale,
    KC_S3: tl.constexpr, KC_S4: tl.constexpr, VC_S3: tl.constexpr, VC_S4: tl.constexpr,
    HEAD_SIZE: tl.constexpr, D_PAD: tl.constexpr, X: tl.constexpr, BLOCK_SIZE: tl.constexpr,
    TILE_T: tl.constexpr, BLOCKS_PER_ITER: tl.constexpr, GROUP_BLOCK: tl.constexpr, V_SHUFFLE: tl.constexpr,
    GATHER: tl.constexpr,
):
    seq = tl.program_id(0).to(tl.int64)
    kv_head = tl.program_id(1).to(tl.int64) // head_chunks
    chunk = tl.program_id(1).to(tl.int64) % head_chunks
    part = tl.program_id(2).to(tl.int64)
    ctx = tl.minimum(tl.load(context_lens_ptr + seq * cl_s0).to(tl.int64), max_tokens)
    start = part * partition_size
    if start >= ctx:
        return
    end = tl.minimum(start + partition_size, ctx)

    j = chunk * GROUP_BLOCK + tl.arange(0, GROUP_BLOCK).to(tl.int64)  # index inside the GQA group
    h_mask = j < queries_per_kv
    head = kv_head * queries_per_kv + j  # [GROUP_BLOCK] query heads
    d = tl.arange(0, D_PAD).to(tl.int64)
    d_mask = d < HEAD_SIZE
    q = tl.load(q_ptr + seq * q_s0 + head[:, None] * q_s1 + d[None, :] * q_s2,
                mask=h_mask[:, None] & d_mask[None, :], other=0.0)
    off = tl.arange(0, TILE_T).to(tl.int64)  # token inside its block
    # Offsets inside one block: K [token, dim] and V [token, dim] of kv head kv_head.
    k_in_block = kv_head * kc_s1 + off[:, None] * KC_S3 + ((d // X) * kc_s2 + (d % X) * KC_S4)[None, :]
    if V_SHUFFLE:
        v_in_block = kv_head * vc_s1 + ((off // X) * vc_s2 + (off % X) * VC_S4)[:, None] + (d * VC_S3)[None, :]
    else:
        v_in_block = kv_head * vc_s1 + (off * VC_S3)[:, None] + (d * vc_s2)[None, :]
    bt_row = block_tables_ptr + seq * bt_s0
    first_block = start // BLOCK_SIZE
    last_block = (end - 1) // BLOCK_SIZE

    m = tl.full([GROUP_BLOCK], float("-inf"), dtype=tl.float32)
    exp_sum = tl.zeros([GROUP_BLOCK], dtype=tl.float32)
    acc = tl.zeros([GROUP_BLOCK, D_PAD], dtype=tl.float32)
    if GATHER:
        # Blocks larger than a tile (hybrid models' 544-token pages): TILE_T tokens at a time, each
        # token's block id gathered from the table, so a tile may span two blocks.
        for t0 in range(start, end, TILE_T):
            tok = t0 + off
            t_mask = tok < end
            block = tl.load(bt_row + (tok // BLOCK_SIZE) * bt_s1, mask=t_mask, other=0).to(tl.int64)
            in_block = tok % BLOCK_SIZE
            kv_mask = t_mask[:, None] & d_mask[None, :]
            k_addr = (block * kc_s0 + kv_head * kc_s1 + in_block * KC_S3)[:, None] + \
                ((d // X) * kc_s2 + (d % X) * KC_S4)[None, :]
            k = tl.load(key_cache_ptr + k_addr, mask=kv_mask, other=0.0)  # [TILE_T, D_PAD]
            s = tl.dot(q, tl.trans(k), out_dtype=tl.float32) * qk_scale  # [GROUP_BLOCK, TILE_T]
            s = tl.where(t_mask[None, :], s, float("-inf"))
            m_new = tl.maximum(m, tl.max(s, axis=1))
            m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
            alpha = tl.exp(m - m_safe)
            p = tl.exp(s - m_safe[:, None])
            if V_SHUFFLE:
                v_addr = (block * vc_s0 + kv_head * vc_s1 + (in_block // X) * vc_s2 + (in_block % X) * VC_S4)[:, None] \
                    + (d * VC_S3)[None, :]
            else:
                v_addr = (block * vc_s0 + kv_head * vc_s1 + in_block * VC_S3)[:, None] + (d * vc_s2)[None, :]
            v = tl.load(value_cache_ptr + v_addr, mask=kv_mask, other=0.0).to(tl.float32)
            acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
            exp_sum = exp_sum * alpha + tl.sum(p, axis=1)
            m = m_new
    else:
        for b0 in range(first_block, last_block + 1, BLOCKS_PER_ITER):
            for u in tl.static_range(BLOCKS_PER_ITER):
                b = b0 + u
                block = tl.load(bt_row + b * bt_s1, mask=b <= last_block, other=0).to(tl.int64)
                tok = b * BLOCK_SIZE + off
                t_mask = (off < BLOCK_SIZE) & (tok >= start) & (tok < end)  # blocks past last_block: all False
                kv_mask = t_mask[:, None] & d_mask[None, :]

                k = tl.load(key_cache_ptr + block * kc_s0 + k_in_block, mask=kv_mask, other=0.0)  # [TILE_T, D_PAD]
                s = tl.dot(q, tl.trans(k), out_dtype=tl.float32) * qk_scale  # [GROUP_BLOCK, TILE_T]
                s = tl.where(t_mask[None, :], s, float("-inf"))
                m_new = tl.maximum(m, tl.max(s, axis=1))
                m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a block with no token of this partition
                alpha = tl.exp(m - m_safe)
                p = tl.exp(s - m_safe[:, None])

                v = tl.load(value_cache_ptr + block * vc_s0 + v_in_block, mask=kv_mask, other=0.0).to(tl.float32)
                acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
                exp_sum = exp_sum * alpha + tl.sum(p, axis=1)
                m = m_new

    i = (seq * num_heads + head) * max_partitions + part  # [GROUP_BLOCK]
    tl.store(max_logits_ws.to(tl.pointer_type(tl.float32)) + i, m, mask=h_mask)
    tl.store(exp_sums_ws.to(tl.pointer_type(tl.float32)) + i, exp_sum, mask=h_mask)
    tl.store(partial_out_ws.to(tl.pointer_type(tl.float32)) + i[:, None] * HEAD_SIZE + d[None, :], acc,
             mask=h_mask[:, None] & d_mask[None, :])


@triton.jit
def _paged_attention_reduce_kernel(
    out_ptr, context_lens_ptr, max_logits_ws, exp_sums_ws, partial_out_ws,
    o_s0, o_s1, o_s2, cl_s0,
    num_heads, max_partitions, partition_size, max_tokens, v_scale,
    HEAD_SIZE: tl.constexpr, D_PAD: tl.constexpr,
):
    seq = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1).to(tl.int64)
    d = tl.arange(0, D_PAD).to(tl.int64)
    d_mask = d < HEAD_SIZE
    out_row = out_ptr + seq * o_s0 + head * o_s1 + d * o_s2
    ctx = tl.minimum(tl.load(context_lens_ptr + seq * cl_s0).to(tl.int64), max_tokens)
    if ctx <= 0:  # nothing to attend to (context_lens >= 1 by contract): zeros, never garbage
        tl.store(out_row, tl.zeros([D_PAD], dtype=tl.float32).to(out_ptr.dtype.element_ty), mask=d_mask)
        return
    num_parts = tl.minimum((ctx + partition_size - 1) // partition_size, max_partitions)

    max_logits = max_logits_ws.to(tl.pointer_type(tl.float32))
    exp_sums = exp_sums_ws.to(tl.pointer_type(tl.float32))
    partial_out = partial_out_ws.to(tl.pointer_type(tl.float32))
    base = (seq * num_heads + head) * max_partitions
    big_m = tl.load(max_logits + base)
    big_l = tl.load(exp_sums + base)
    acc = tl.load(partial_out + base * HEAD_SIZE + d, mask=d_mask, other=0.0)
    for p in range(1, num_parts):
        m_p = tl.load(max_logits + base + p)
        l_p = tl.load(exp_sums + base + p)
        o_p = tl.load(partial_out + (base + p) * HEAD_SIZE + d, mask=d_mask, other=0.0)
        m_new = tl.maximum(big_m, m_p)
        c_old = tl.exp(big_m - m_new)
        c_p = tl.exp(m_p - m_new)
        big_l = big_l * c_old + l_p * c_p
        acc = acc * c_old + o_p * c_p
        big_m = m_new
    result = acc * (v_scale / big_l)
    tl.store(out_row, result.to(out_ptr.dtype.element_ty), mask=d_mask)


def _align(n, a=256):
    return (n + a - 1) // a * a


def _workspace_layout(num_seqs, num_heads, head_size, max_context_len, partition_size):
    """(max_partitions, bytes of each stats region, total bytes incl. 16 bytes of alignment slack)."""
    max_partitions = max(1, triton.cdiv(int(max_context_len), partition_size))
    n = num_seqs * num_heads * max_partitions
    stats = _align(4 * n)
    return max_partitions, stats, 2 * stats + 4 * n * head_size + 16


def _partition_size(partition_size):
    p = int(partition_size) if partition_size else DEFAULT_PARTITION_SIZE
    if p <= 0:
        raise ValueError(f"partition_size: {partition_size}, expected > 0 (0 = default {DEFAULT_PARTITION_SIZE})")
    return p


def _workspace_bytes(*, query, max_context_len, partition_size, **_):
    """Workspace the readers need: see _workspace_layout (float32 split-K partials)."""
    num_seqs, num_heads, head_size = (int(n) for n in query.shape)
    return _workspace_layout(num_seqs, num_heads, head_size, max_context_len, _partition_size(partition_size))[2]


def _launch_attention(cache_format, out, query, key_cache, value_cache, block_tables, context_lens, block_size,
                      max_context_len, scale, k_scale, v_scale, partition_size, workspace,
                      num_warps=_PARTITION_LAUNCH["num_warps"], num_stages=_PARTITION_LAUNCH["num_stages"],
                      reduce_num_warps=0):
    _check_dims("query", query, 3)
    _check_dims("out", out, 3)
    _check_dims("value_cache", value_cache, 4 if cache_format == "pa_v1" else 5)
    _check_dims("block_tables", block_tables, 2)
    _check_dims("context_lens", context_lens, 1)
    num_seqs, num_heads, head_size = query.shape
    if tuple(out.shape) != tuple(query.shape):
        raise ValueError(f"out: shape {tuple(out.shape)} differs from query's {tuple(query.shape)}")
    block_size = int(block_size)
    if block_size <= 0:
        raise ValueError(f"block_size: {block_size}, expected > 0")
    num_kv_heads = key_cache.shape[1] if key_cache.dim() == 5 else -1
    _check_cache_shapes(cache_format, key_cache, value_cache, num_kv_heads, head_size, block_size)
    x = key_cache.shape[4]
    if num_heads % num_kv_heads != 0:
        raise ValueError(f"query: num_heads {num_heads} is not a multiple of num_kv_heads {num_kv_heads}")
    for name, t in (("query", query), ("out", out)):
        if t.dtype != key_cache.dtype:
            raise ValueError(f"{name}: dtype {t.dtype} differs from key_cache's {key_cache.dtype}")
    if block_tables.dtype != torch.int32 or block_tables.shape[0] != num_seqs:
        raise ValueError(f"block_tables: {block_tables.dtype} {tuple(block_tables.shape)}, expected int32 "
                         f"[num_seqs = {num_seqs}, max_blocks_per_seq]")
    if context_lens.dtype != torch.int32 or context_lens.shape[0] != num_seqs:
        raise ValueError(f"context_lens: {context_lens.dtype} {tuple(context_lens.shape)}, expected int32 "
                         f"[num_seqs = {num_seqs}]")
    _check_gpu([("out", out), ("query", query), ("key_cache", key_cache), ("value_cache", value_cache),
                ("block_tables", block_tables), ("context_lens", context_lens)])
    if num_seqs == 0:
        return
    part_size = _partition_size(partition_size)
    max_context_len = int(max_context_len)
    # Never read past block_tables' rows nor past the partitions the workspace holds.
    max_tokens = max(0, min(max_context_len, block_tables.shape[1] * block_size))
    max_partitions, stats_bytes, need = _workspace_layout(num_seqs, num_heads, head_size, max_context_len, part_size)

    if workspace is None:
        workspace = torch.empty(need, dtype=torch.uint8, device=out.device)
    else:
        _check_dims("workspace", workspace, 1)
        _check_gpu([("out", out), ("workspace", workspace)])
        if workspace.numel() * workspace.element_size() < need:
            raise ValueError(f"workspace: {workspace.numel() * workspace.element_size()} bytes, "
                             f"need {need} (workspace_bytes)")
        workspace = workspace.view(torch.uint8) if workspace.dtype != torch.uint8 else workspace
        if workspace.stride(0) != 1:
            raise ValueError(f"workspace: stride {workspace.stride(0)}, expected a dense byte buffer")
    pad = (-workspace.data_ptr()) % 16  # float32 regions start 16-byte aligned
    max_logits = workspace[pad:]
    exp_sums = workspace[pad + stats_bytes:]
    partial_out = workspace[pad + 2 * stats_bytes:]

    d_pad = max(16, triton.next_power_of_2(head_size))
    # A whole block per tile up to 64 tokens; larger blocks (hybrid pages of 544) are walked in
    # tiles of 64 (32 for head sizes over 128) with per-token block ids, within shared memory.
    gather = block_size > 64
    tile_t = (64 if d_pad <= 128 else 32) if gather else max(16, triton.next_power_of_2(block_size))
    blocks_per_iter = 1 if gather else max(1, (64 if d_pad <= 128 else 32) // tile_t)
    queries_per_kv = num_heads // num_kv_heads
    head_chunks = triton.cdiv(queries_per_kv, _GROUP_BLOCK)
    kc_s, vc_s = _strides5(key_cache), _strides5(value_cache)
    with torch.cuda.device(out.device):
        _paged_attention_partition_kernel[(num_seqs, num_kv_heads * head_chunks, max_partitions)](
            query, key_cache, value_cache, block_tables, context_lens, max_logits, exp_sums, partial_out,
            *query.stride(), *kc_s[:3], *vc_s[:3],
            block_tables.stride(0), block_tables.stride(1), context_lens.stride(0),
            num_heads, queries_per_kv, head_chunks, max_partitions, part_size, max_tokens,
            float(scale) * float(k_scale),
            KC_S3=kc_s[3], KC_S4=kc_s[4], VC_S3=vc_s[3], VC_S4=vc_s[4],
            HEAD_SIZE=head_size, D_PAD=d_pad, X=x, BLOCK_SIZE=block_size, TILE_T=tile_t,
            BLOCKS_PER_ITER=blocks_per_iter, GROUP_BLOCK=_GROUP_BLOCK, V_SHUFFLE=cache_format == "shuffle",
            GATHER=gather,
            num_warps=int(num_warps), num_stages=int(num_stages),
        )
        _paged_attention_reduce_kernel[(num_seqs, num_heads)](
            out, context_lens, max_logits, exp_sums, partial_out,
            *out.stride(), context_lens.stride(0),
            num_heads, max_partitions, part_size, max_tokens, float(v_scale),
            HEAD_SIZE=head_size, D_PAD=d_pad,
            num_warps=int(reduce_num_warps) or (1 if d_pad <= 128 else 2),
        )


@reader("triton_paged_attention_v1", cache_format="pa_v1", head_sizes=None, block_sizes=None,
        dtypes=("fp16", "bf16"), max_gqa_ratio=0,
        description="Triton split-K paged decode attention, V in pa_v1 layout; fp32 online softmax, "
                    f"partition {DEFAULT_PARTITION_SIZE} tokens by default",
        workspace_bytes=_workspace_bytes, configs=_PA_CONFIGS)
def triton_paged_attention_v1(out, query, key_cache, value_cache, block_tables, context_lens, block_size,
                              max_context_len, scale, k_scale, v_scale, partition_size, workspace, *,
                              num_warps=8, num_stages=2, reduce_num_warps=0):
    """Decode attention over pa_v1 caches; writes out [num_seqs, num_heads, head_size] in place."""
    _launch_attention("pa_v1", out, query, key_cache, value_cache, block_tables, context_lens, block_size,
                      max_context_len, scale, k_scale, v_scale, partition_size, workspace,
                      num_warps, num_stages, reduce_num_warps)


@reader("triton_paged_attention_shuffle", cache_format="shuffle", head_sizes=None, block_sizes=None,
        dtypes=("fp16", "bf16"), max_gqa_ratio=0,
        description="Triton split-K paged decode attention, V in shuffle layout; fp32 online softmax, "
                    f"partition {DEFAULT_PARTITION_SIZE} tokens by default",
        workspace_bytes=_workspace_bytes, configs=_PA_CONFIGS)
def triton_paged_attention_shuffle(out, query, key_cache, value_cache, block_tables, context_lens, block_size,
                                   max_context_len, scale, k_scale, v_scale, partition_size, workspace, *,
                                   num_warps=8, num_stages=2, reduce_num_warps=0):
    """Decode attention over shuffle caches; writes out [num_seqs, num_heads, head_size] in place."""
    _launch_attention("shuffle", out, query, key_cache, value_cache, block_tables, context_lens, block_size,
                      max_context_len, scale, k_scale, v_scale, partition_size, workspace,
                      num_warps, num_stages, reduce_num_warps)


# --------------------------------------------------------------------------- #
# Readers: ragged (varlen) paged attention over an NHD cache
# --------------------------------------------------------------------------- #
#
# Chunked prefill, speculative decode and decode in one launch (include/kvharness/provider.h,
# kvharness 0.4): sequence s has q_s new query tokens at rows query_start_loc[s] .. of query/out
# [num_query_tokens, num_heads, head_size] and L_s = seq_lens[s] tokens in the NHD cache
# [num_blocks, block_size, num_kv_heads, head_size]; its query token j sits at p = L_s - q_s + j.
#
# Grid (query blocks, num_seqs, num_kv_heads * splits): program (b, s, kv * splits + c) takes query
# tokens b*BLOCK_Q .. b*BLOCK_Q + BLOCK_Q - 1 of sequence s (it returns at once past q_s) for
# every query head of kv head kv's GQA group, as BLOCK_M = BLOCK_Q * G_PAD rows (row r: token
# r // G_PAD, group member r % G_PAD), so each K/V tile is loaded once for all of them. It walks
# the keys the block's rows may see, TILE_T tokens at a time, each token's physical block looked
# up in block_tables (so any block size works, tiles may span blocks):
#   causal: keys up to the last row's position; sliding window: from the first row's p - window + 1;
#   split-K (SPLIT): only keys [c*P, (c+1)*P) of partition c.
# Per tile: S = (q . K^T) * scale * k_scale (tl.dot, float32 accumulation), softcap, ALiBi
# slope * (t - p), the row's own causal/window mask, then an online softmax (running max m,
# exp-sum l, unnormalised acc += p . V in float32).
# Single pass: the sink logit seeds the softmax (m = sink, l = 1: it joins the denominator once and
# carries no value); out = v_scale * acc / l.
# Split-K: each program stores (m, l, acc) of its partition to the typed workspaces segm_max,
# segm_expsum [num_query_tokens, num_heads, splits] and segm_output [..., splits, head_size]
# (float32; an empty partition stores m = -inf, l = 0, acc = 0, so every entry the reduce reads is
# written); the reduce, one program per (query token, head), merges the splits and the sink.

#: Rows (query tokens x GQA group members) per program of the varlen kernel, at most.
_VARLEN_MAX_ROWS = 64


@triton.jit
def _varlen_attention_kernel(
    out_ptr, q_ptr, key_cache_ptr, value_cache_ptr, block_tables_ptr, seq_lens_ptr, query_start_loc_ptr,
    sinks_ptr, alibi_ptr, segm_max_ptr, segm_expsum_ptr, segm_output_ptr,
    o_s0, o_s1, o_s2, q_s0, q_s1, q_s2,
    kc_s0, kc_s1, kc_s2, kc_s3, vc_s0, vc_s1, vc_s2, vc_s3,
    bt_s0, bt_s1, sl_s0, qsl_s0, sk_s0, al_s0,
    wm_s0, wm_s1, wm_s2, wo_s0, wo_s1, wo_s2, wo_s3,
    queries_per_kv, num_splits, block_size, partition_size, sliding_window, qk_scale, v_scale, softcap,
    HEAD_SIZE: tl.constexpr, D_PAD: tl.constexpr, BLOCK_Q: tl.constexpr, G_PAD: tl.constexpr,
    TILE_T: tl.constexpr, CAUSAL: tl.constexpr, USE_SINKS: tl.constexpr, USE_ALIBI: tl.constexpr,
    USE_SOFTCAP: tl.constexpr, SPLIT: tl.constexpr,
):
    BLOCK_M: tl.constexpr = BLOCK_Q * G_PAD
    q_block = tl.program_id(0).to(tl.int64)
    seq = tl.program_id(1).to(tl.int64)
    kv_head = tl.program_id(2).to(tl.int64) // num_splits
    split = tl.program_id(2).to(tl.int64) % num_splits
    q_start = tl.load(query_start_loc_ptr + seq * qsl_s0).to(tl.int64)
    q_len = tl.load(query_start_loc_ptr + (seq + 1) * qsl_s0).to(tl.int64) - q_start
    if q_block * BLOCK_Q >= q_len:
        return
    seq_len = tl.load(seq_lens_ptr + seq * sl_s0).to(tl.int64)

    r = tl.arange(0, BLOCK_M).to(tl.int64)
    j = q_block * BLOCK_Q + r // G_PAD            # query token of the sequence
    member = r % G_PAD                            # index inside the GQA group
    row_ok = (j < q_len) & (member < queries_per_kv)
    head = kv_head * queries_per_kv + member
    token = q_start + j                           # query/out row
    pos = seq_len - q_len + j                     # the token's position in its sequence
    d = tl.arange(0, D_PAD).to(tl.int64)
    d_mask = d < HEAD_SIZE
    q = tl.load(q_ptr + token[:, None] * q_s0 + head[:, None] * q_s1 + d[None, :] * q_s2,
                mask=row_ok[:, None] & d_mask[None, :], other=0.0)

    # Keys any row of this block may see.
    first_pos = seq_len - q_len + q_block * BLOCK_Q
    last_pos = seq_len - q_len + tl.minimum(q_len, q_block * BLOCK_Q + BLOCK_Q) - 1
    hi = seq_len
    if CAUSAL:
        hi = tl.minimum(hi, last_pos + 1)
    lo = first_pos * 0
    if sliding_window > 0:
        lo = tl.maximum(lo, first_pos - sliding_window + 1)
    if SPLIT:
        lo = tl.maximum(lo, split * partition_size)
        hi = tl.minimum(hi, (split + 1) * partition_size)

    if USE_SINKS and not SPLIT:
        m = tl.load(sinks_ptr + head * sk_s0, mask=row_ok, other=0.0).to(tl.float32)
        exp_sum = tl.full([BLOCK_M], 1.0, dtype=tl.float32)
    else:
        m = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
        exp_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    if USE_ALIBI:
        slope = tl.load(alibi_ptr + head * al_s0, mask=row_ok, other=0.0).to(tl.float32)
    acc = tl.zeros([BLOCK_M, D_PAD], dtype=tl.float32)
    bt_row = block_tables_ptr + seq * bt_s0
    off = tl.arange(0, TILE_T).to(tl.int64)
    for t0 in range(lo, hi, TILE_T):
        tok = t0 + off
        t_ok = tok < hi
        block = tl.load(bt_row + (tok // block_size) * bt_s1, mask=t_ok, other=0).to(tl.int64)
        in_block = tok % block_size
        kv_mask = t_ok[:, None] & d_mask[None, :]
        k = tl.load(key_cache_ptr + (block * kc_s0 + in_block * kc_s1 + kv_head * kc_s2)[:, None] +
                    (d * kc_s3)[None, :], mask=kv_mask, other=0.0)         # [TILE_T, D_PAD]
        s = tl.dot(q, tl.trans(k), out_dtype=tl.float32) * qk_scale          # [BLOCK_M, TILE_T]
        if USE_SOFTCAP:  # cap * tanh(s / cap), tanh(x) = 1 - 2 / (exp(2x) + 1)
            s = softcap * (1.0 - 2.0 / (tl.exp(2.0 * s / softcap) + 1.0))
        rel = tok[None, :] - pos[:, None]                                    # t - p
        if USE_ALIBI:
            s += slope[:, None] * rel.to(tl.float32)
        seen = t_ok[None, :] & row_ok[:, None]
        if CAUSAL:
            seen = seen & (rel <= 0)
        if sliding_window > 0:
            seen = seen & (rel > -sliding_window)
        s = tl.where(seen, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row that sees nothing yet
        alpha = tl.exp(m - m_safe)
        p = tl.exp(s - m_safe[:, None])
        v = tl.load(value_cache_ptr + (block * vc_s0 + in_block * vc_s1 + kv_head * vc_s2)[:, None] +
                    (d * vc_s3)[None, :], mask=kv_mask, other=0.0).to(tl.float32)
        acc = acc * alpha[:, None] + tl.dot(p, v, input_precision="ieee")
        exp_sum = exp_sum * alpha + tl.sum(p, axis=1)
        m = m_new

    if SPLIT:
        w = token * wm_s0 + head * wm_s1 + split * wm_s2
        tl.store(segm_max_ptr + w, m, mask=row_ok)
        tl.store(segm_expsum_ptr + w, exp_sum, mask=row_ok)
        tl.store(segm_output_ptr + (token * wo_s0 + head * wo_s1 + split * wo_s2)[:, None] + (d * wo_s3)[None, :],
                 acc, mask=row_ok[:, None] & d_mask[None, :])
    else:
        denom = tl.where(exp_sum > 0.0, exp_sum, 1.0)
        result = acc * (v_scale / denom)[:, None]
        tl.store(out_ptr + token[:, None] * o_s0 + head[:, None] * o_s1 + d[None, :] * o_s2,
                 result.to(out_ptr.dtype.element_ty), mask=row_ok[:, None] & d_mask[None, :])


@triton.jit
def _varlen_reduce_kernel(
    out_ptr, sinks_ptr, segm_max_ptr, segm_expsum_ptr, segm_output_ptr,
    o_s0, o_s1, o_s2, sk_s0, wm_s0, wm_s1, wm_s2, wo_s0, wo_s1, wo_s2, wo_s3,
    num_splits, v_scale,
    HEAD_SIZE: tl.constexpr, D_PAD: tl.constexpr, USE_SINKS: tl.constexpr,
):
    token = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1).to(tl.int64)
    d = tl.arange(0, D_PAD).to(tl.int64)
    d_mask = d < HEAD_SIZE
    w = token * wm_s0 + head * wm_s1
    big_m = tl.load(segm_max_ptr + w)
    big_l = tl.load(segm_expsum_ptr + w)
    acc = tl.load(segm_output_ptr + token * wo_s0 + head * wo_s1 + d * wo_s3, mask=d_mask, other=0.0)
    for c in range(1, num_splits):
        m_c = tl.load(segm_max_ptr + w + c * wm_s2)
        l_c = tl.load(segm_expsum_ptr + w + c * wm_s2)
        o_c = tl.load(segm_output_ptr + token * wo_s0 + head * wo_s1 + c * wo_s2 + d * wo_s3, mask=d_mask, other=0.0)
        m_new = tl.maximum(big_m, m_c)
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # no split so far saw a key
        c_old = tl.exp(big_m - m_safe)
        c_new = tl.exp(m_c - m_safe)
        big_l = big_l * c_old + l_c * c_new
        acc = acc * c_old + o_c * c_new
        big_m = m_new
    if USE_SINKS:  # the sink logit joins the denominator once, with no value
        sink = tl.load(sinks_ptr + head * sk_s0).to(tl.float32)
        m_new = tl.maximum(big_m, sink)
        c_old = tl.exp(big_m - m_new)
        big_l = big_l * c_old + tl.exp(sink - m_new)
        acc = acc * c_old
    denom = tl.where(big_l > 0.0, big_l, 1.0)
    tl.store(out_ptr + token * o_s0 + head * o_s1 + d * o_s2, (acc * (v_scale / denom)).to(out_ptr.dtype.element_ty),
             mask=d_mask)


def _num_splits(max_context_len, partition_size):
    return max(1, triton.cdiv(int(max_context_len), _partition_size(partition_size)))


def _varlen_workspaces(*, query, max_context_len, partition_size, **_):
    """Typed workspaces of triton_unified_attention_splitk: float32 partials per (query token, head, split)."""
    n, h, d = (int(x) for x in query.shape)
    splits = _num_splits(max_context_len, partition_size)
    return [("segm_max", (n, h, splits), "float32"), ("segm_expsum", (n, h, splits), "float32"),
            ("segm_output", (n, h, splits, d), "float32")]


def _launch_varlen(out, query, key_cache, value_cache, block_tables, context_lens, block_size, max_context_len, scale,
                   k_scale, v_scale, partition_size, query_start_loc, seq_lens, max_query_len, causal, sliding_window,
                   softcap, sinks, alibi_slopes, split, workspaces, num_warps=4, num_stages=2, reduce_num_warps=0):
    for name, t, n in (("query", query, 3), ("out", out, 3), ("key_cache", key_cache, 4),
                       ("value_cache", value_cache, 4), ("block_tables", block_tables, 2),
                       ("context_lens", context_lens, 1)):
        _check_dims(name, t, n)
    num_tokens, num_heads, head_size = query.shape
    num_blocks, bs, num_kv_heads, kv_head_size = key_cache.shape
    block_size = int(block_size)
    if bs != block_size or kv_head_size != head_size:
        raise ValueError(f"key_cache: shape {tuple(key_cache.shape)}, expected [num_blocks, block_size = {block_size}, "
                         f"num_kv_heads, head_size = {head_size}] (NHD)")
    if tuple(value_cache.shape) != tuple(key_cache.shape):
        raise ValueError(f"value_cache: shape {tuple(value_cache.shape)} differs from key_cache's "
                         f"{tuple(key_cache.shape)}")
    if tuple(out.shape) != tuple(query.shape):
        raise ValueError(f"out: shape {tuple(out.shape)} differs from query's {tuple(query.shape)}")
    if num_heads % num_kv_heads != 0:
        raise ValueError(f"query: num_heads {num_heads} is not a multiple of num_kv_heads {num_kv_heads}")
    for name, t in (("query", query), ("out", out), ("key_cache", key_cache), ("value_cache", value_cache)):
        if t.dtype not in _SUPPORTED_DTYPES or t.dtype != query.dtype:
            raise ValueError(f"{name}: dtype {t.dtype}; expected float16 or bfloat16, that of query ({query.dtype})")
    num_seqs = block_tables.shape[0]
    if query_start_loc is None:  # a direct decode call: one query token per sequence
        query_start_loc = torch.arange(num_seqs + 1, dtype=torch.int32, device=query.device)
        max_query_len = 1
    if seq_lens is None:
        seq_lens = context_lens
    for name, t, n in (("query_start_loc", query_start_loc, num_seqs + 1), ("seq_lens", seq_lens, num_seqs)):
        _check_dims(name, t, 1)
        if t.dtype != torch.int32 or t.shape[0] != n:
            raise ValueError(f"{name}: {t.dtype} {tuple(t.shape)}, expected int32 [{n}]")
    if block_tables.dtype != torch.int32:
        raise ValueError(f"block_tables: dtype {block_tables.dtype}, expected torch.int32")
    if max_query_len is None:
        max_query_len = int((query_start_loc[1:] - query_start_loc[:-1]).max()) if num_seqs else 0
    for name, t in (("sinks", sinks), ("alibi_slopes", alibi_slopes)):
        if t is not None and (t.dim() != 1 or t.shape[0] != num_heads):
            raise ValueError(f"{name}: shape {tuple(t.shape)}, expected [num_heads = {num_heads}]")
    _check_gpu([("out", out), ("query", query), ("key_cache", key_cache), ("value_cache", value_cache),
                ("block_tables", block_tables), ("query_start_loc", query_start_loc), ("seq_lens", seq_lens)] +
               [(n, t) for n, t in (("sinks", sinks), ("alibi_slopes", alibi_slopes)) if t is not None])
    if num_seqs == 0 or num_tokens == 0 or int(max_query_len) <= 0:
        return

    group = num_heads // num_kv_heads
    g_pad = triton.next_power_of_2(group)
    block_m = max(16, min(_VARLEN_MAX_ROWS, g_pad * triton.next_power_of_2(int(max_query_len))), g_pad)
    block_q = block_m // g_pad
    d_pad = max(16, triton.next_power_of_2(head_size))
    tile_t = 64 if d_pad <= 64 else 32 if d_pad <= 128 else 16
    part = _partition_size(partition_size)
    num_splits = _num_splits(max_context_len, partition_size) if split else 1

    if split:
        want = {n: (shape, torch.float32) for n, shape, _ in _varlen_workspaces(
            query=query, max_context_len=max_context_len, partition_size=partition_size)}
        if not workspaces:  # a direct call: its own
            workspaces = {n: torch.empty(shape, dtype=dt, device=out.device) for n, (shape, dt) in want.items()}
        for n, (shape, dt) in want.items():
            t = workspaces.get(n)
            if t is None or tuple(t.shape) != tuple(shape) or t.dtype != dt:
                raise ValueError(f"workspaces[{n!r}]: {None if t is None else (t.dtype, tuple(t.shape))}, "
                                 f"expected {dt} {shape}")
        _check_gpu([("out", out)] + [(f"workspaces[{n!r}]", workspaces[n]) for n in want])
        seg_m, seg_l, seg_o = workspaces["segm_max"], workspaces["segm_expsum"], workspaces["segm_output"]
    else:
        seg_m = seg_l = seg_o = out  # unused
    wm = seg_m.stride() if split else (0, 0, 0)
    wo = seg_o.stride() if split else (0, 0, 0, 0)
    if split and (seg_l.stride() != seg_m.stride()):
        raise ValueError(f"workspaces['segm_expsum']: strides {seg_l.stride()} differ from segm_max's {seg_m.stride()}")
    dummy = query_start_loc  # a pointer for absent sinks/alibi_slopes (never read)
    grid = (triton.cdiv(int(max_query_len), block_q), num_seqs, num_kv_heads * num_splits)
    with torch.cuda.device(out.device):
        _varlen_attention_kernel[grid](
            out, query, key_cache, value_cache, block_tables, seq_lens, query_start_loc,
            sinks if sinks is not None else dummy, alibi_slopes if alibi_slopes is not None else dummy,
            seg_m, seg_l, seg_o,
            *out.stride(), *query.stride(), *key_cache.stride(), *value_cache.stride(),
            block_tables.stride(0), block_tables.stride(1), seq_lens.stride(0), query_start_loc.stride(0),
            sinks.stride(0) if sinks is not None else 0, alibi_slopes.stride(0) if alibi_slopes is not None else 0,
            *wm, *wo,
            group, num_splits, block_size, part, int(sliding_window or 0), float(scale) * float(k_scale),
            float(v_scale), float(softcap or 0.0),
            HEAD_SIZE=head_size, D_PAD=d_pad, BLOCK_Q=block_q, G_PAD=g_pad, TILE_T=tile_t, CAUSAL=bool(causal),
            USE_SINKS=sinks is not None, USE_ALIBI=alibi_slopes is not None, USE_SOFTCAP=bool(softcap and softcap > 0),
            SPLIT=bool(split), num_warps=int(num_warps), num_stages=int(num_stages),
        )
        if split:
            _varlen_reduce_kernel[(num_tokens, num_heads)](
                out, sinks if sinks is not None else dummy, seg_m, seg_l, seg_o,
                *out.stride(), sinks.stride(0) if sinks is not None else 0, *wm, *wo, num_splits, float(v_scale),
                HEAD_SIZE=head_size, D_PAD=d_pad, USE_SINKS=sinks is not None,
                num_warps=int(reduce_num_warps) or (1 if d_pad <= 128 else 2),
            )


_VARLEN = dict(cache_format="flash", dtypes=("fp16", "bf16"), max_query_len=kvharness.ANY_QUERY_LEN,
               modifiers=("sliding_window", "sinks", "softcap", "alibi", "non_causal"))


@reader("triton_unified_attention", **_VARLEN,
        description="Triton ragged (varlen) paged attention over NHD K and V: one program per (query block of a "
                    "sequence, kv head), GQA group in one tile, online softmax in fp32; causal or not, every modifier")
def triton_unified_attention(out, query, key_cache, value_cache, block_tables, context_lens, block_size,
                             max_context_len, scale, k_scale, v_scale, partition_size=0, query_start_loc=None,
                             seq_lens=None, max_query_len=None, causal=True, sliding_window=0, softcap=0.0, sinks=None,
                             alibi_slopes=None, **_):
    """Writes out [num_query_tokens, num_heads, head_size] in place (provider.h's ragged semantics)."""
    _launch_varlen(out, query, key_cache, value_cache, block_tables, context_lens, block_size, max_context_len, scale,
                   k_scale, v_scale, partition_size, query_start_loc, seq_lens, max_query_len, causal, sliding_window,
                   softcap, sinks, alibi_slopes, split=False, workspaces=None)


#: issue 23 (D): triton_unified_attention_splitk's launch configurations (as _PA_CONFIGS; default 4 warps, 2 stages).
_VARLEN_SPLITK_CONFIGS = [dict(name="w4s2", num_warps=4, num_stages=2),
                          dict(name="w2s1_r2", num_warps=2, num_stages=1, reduce_num_warps=2),
                          dict(name="w8s2_r4", num_warps=8, num_stages=2, reduce_num_warps=4)]


@reader("triton_unified_attention_splitk", **_VARLEN, workspaces=_varlen_workspaces, configs=_VARLEN_SPLITK_CONFIGS,
        description="Triton ragged (varlen) paged attention over NHD K and V, split-K over partitions of "
                    f"partition_size tokens ({DEFAULT_PARTITION_SIZE} by default) with typed float32 workspaces "
                    "segm_max/segm_expsum/segm_output and a reduce kernel")
def triton_unified_attention_splitk(out, query, key_cache, value_cache, block_tables, context_lens, block_size,
                                    max_context_len, scale, k_scale, v_scale, partition_size=0, query_start_loc=None,
                                    seq_lens=None, max_query_len=None, causal=True, sliding_window=0, softcap=0.0,
                                    sinks=None, alibi_slopes=None, workspaces=None, num_warps=4, num_stages=2,
                                    reduce_num_warps=0, **_):
    """As triton_unified_attention, in two passes through `workspaces` (the harness's, or its own)."""
    _launch_varlen(out, query, key_cache, value_cache, block_tables, context_lens, block_size, max_context_len, scale,
                   k_scale, v_scale, partition_size, query_start_loc, seq_lens, max_query_len, causal, sliding_window,
                   softcap, sinks, alibi_slopes, split=True, workspaces=workspaces, num_warps=num_warps,
                   num_stages=num_stages, reduce_num_warps=reduce_num_warps)


# --------------------------------------------------------------------------- #
# MLA: absorbed multi-head latent attention decode over the latent cache (issue 22)
# --------------------------------------------------------------------------- #
# provider.h's KVH_CACHE_MLA reader semantics: one latent head of R + P elements per token
# (R = kv_lora_rank, P = qk_rope_head_dim) shared by every query head;
#   score(h, t) = scale * k_scale * (q[h, :R] . c[t, :R] + q[h, R:] . c[t, R:]),
#   out[h] = k_scale * sum_t softmax_t(score) c[t, :R]   (fp8 caches: c holds the codes).
# Ragged (MTP / speculative decode): sequence s owns query rows query_start_loc[s] .. and its
# query token j sits at p = L_s - q_s + j; causal: it sees keys t <= p.
#
# Grid (num_seqs * max_query_len, head blocks, MLA_NUM_SPLITS): program (s * max_query_len + j,
# hb, c) takes query token j of sequence s (returns past q_s) for heads hb*BLOCK_H .., and the
# keys of split c: the visible keys [0, hi) cut into MLA_NUM_SPLITS chunks of TILE_T-aligned
# length. Per tile of TILE_T keys (each key's page looked up in block_tables), the latent part
# and the rope part are loaded separately (two tl.dot for the score), the latent tile is reused
# as the value; online softmax in float32. Each program stores (m, l, acc) to the typed
# workspaces mla_max, mla_sum [num_query_tokens, num_heads, splits], mla_out [..., splits, R + P]
# (an empty split stores m = -inf, l = 0, acc = 0); the reduce, one program per (query row,
# head), merges the splits and writes out = k_scale * acc / l.

#: Splits of every sequence's keys (fixed: the reader has no planner).
MLA_NUM_SPLITS = 4
#: Query heads per program (tl.dot needs >= 16 rows; fewer heads are masked).
_MLA_BLOCK_H = 16
#: Keys per tile.
_MLA_TILE_T = 16
#: fp8 e4m3fnuz (MI300's format) converts in Triton on ROCm only.
_MLA_DECLARED_CACHE_DTYPES = ("fp16", "bf16", "fp8_e4m3fn") + (("fp8_e4m3fnuz",) if torch.version.hip else ())
_MLA_CACHE_DTYPES = (torch.float16, torch.bfloat16) + tuple(
    getattr(torch, n) for n in ("float8_e4m3fn", "float8_e4m3fnuz") if hasattr(torch, n))


@triton.jit
def _mla_decode_kernel(
    q_ptr, cache_ptr, block_tables_ptr, seq_lens_ptr, query_start_loc_ptr, k_scale_ptr,
    ws_max_ptr, ws_sum_ptr, ws_out_ptr,
    q_s0, q_s1, q_s2, c_s0, c_s1, c_s2, bt_s0, bt_s1, sl_s0, qsl_s0,
    wm_s0, wm_s1, wm_s2, wo_s0, wo_s1, wo_s2, wo_s3,
    num_heads, max_query_len, block_size, scale,
    R: tl.constexpr, P: tl.constexpr, R_PAD: tl.constexpr, P_PAD: tl.constexpr, BLOCK_H: tl.constexpr,
    TILE_T: tl.constexpr, NUM_SPLITS: tl.constexpr, CAUSAL: tl.constexpr,
):
    seq = tl.program_id(0).to(tl.int64) // max_query_len
    j = tl.program_id(0).to(tl.int64) % max_query_len
    split = tl.program_id(2).to(tl.int64)
    q_start = tl.load(query_start_loc_ptr + seq * qsl_s0).to(tl.int64)
    q_len = tl.load(query_start_loc_ptr + (seq + 1) * qsl_s0).to(tl.int64) - q_start
    if j >= q_len:
        return
    seq_len = tl.load(seq_lens_ptr + seq * sl_s0).to(tl.int64)
    token = q_start + j
    hi = seq_len
    if CAUSAL:
        hi = seq_len - q_len + j + 1
    chunk = tl.cdiv(tl.cdiv(hi, NUM_SPLITS), TILE_T) * TILE_T
    lo = split * chunk
    end = tl.minimum(hi, lo + chunk)

    h = tl.program_id(1).to(tl.int64) * BLOCK_H + tl.arange(0, BLOCK_H).to(tl.int64)
    h_ok = h < num_heads
    dr = tl.arange(0, R_PAD).to(tl.int64)
    dp = tl.arange(0, P_PAD).to(tl.int64)
    r_ok = dr < R
    p_ok = dp < P
    q_row = q_ptr + token * q_s0 + h[:, None] * q_s1
    q_lat = tl.load(q_row + dr[None, :] * q_s2, mask=h_ok[:, None] & r_ok[None, :], other=0.0)
    q_rope = tl.load(q_row + (R + dp[None, :]) * q_s2, mask=h_ok[:, None] & p_ok[None, :], other=0.0)
    qk_scale = scale * tl.load(k_scale_ptr)

    m = tl.full([BLOCK_H], float("-inf"), dtype=tl.float32)
    l = tl.zeros([BLOCK_H], dtype=tl.float32)
    acc = tl.zeros([BLOCK_H, R_PAD], dtype=tl.float32)
    bt_row = block_tables_ptr + seq * bt_s0
    off = tl.arange(0, TILE_T).to(tl.int64)
    for t0 in range(lo, end, TILE_T):
        t = t0 + off
        t_ok = t < end
        page = tl.load(bt_row + (t // block_size) * bt_s1, mask=t_ok, other=0).to(tl.int64)
        row = cache_ptr + page * c_s0 + (t % block_size) * c_s1
        c_lat = tl.load(row[:, None] + dr[None, :] * c_s2, mask=t_ok[:, None] & r_ok[None, :], other=0.0)
        c_rope = tl.load(row[:, None] + (R + dp[None, :]) * c_s2, mask=t_ok[:, None] & p_ok[None, :], other=0.0)
        # fp8 codes are exact in the query's 16-bit type; the scale is applied once, outside.
        s = tl.dot(q_lat, tl.trans(c_lat.to(q_lat.dtype)), out_dtype=tl.float32)
        s += tl.dot(q_rope, tl.trans(c_rope.to(q_rope.dtype)), out_dtype=tl.float32)
        s = tl.where(t_ok[None, :] & h_ok[:, None], s * qk_scale, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.exp(m - m_safe)
        p = tl.exp(s - m_safe[:, None])
        acc = acc * alpha[:, None] + tl.dot(p, c_lat.to(tl.float32), input_precision="ieee")
        l = l * alpha + tl.sum(p, axis=1)
        m = m_new

    w = token * wm_s0 + h * wm_s1 + split * wm_s2
    tl.store(ws_max_ptr + w, m, mask=h_ok)
    tl.store(ws_sum_ptr + w, l, mask=h_ok)
    tl.store(ws_out_ptr + (token * wo_s0 + h * wo_s1 + split * wo_s2)[:, None] + (dr * wo_s3)[None, :], acc,
             mask=h_ok[:, None] & r_ok[None, :])


@triton.jit
def _mla_reduce_kernel(
    out_ptr, k_scale_ptr, ws_max_ptr, ws_sum_ptr, ws_out_ptr,
    o_s0, o_s1, o_s2, wm_s0, wm_s1, wm_s2, wo_s0, wo_s1, wo_s2, wo_s3,
    R: tl.constexpr, R_PAD: tl.constexpr, NUM_SPLITS: tl.constexpr,
):
    token = tl.program_id(0).to(tl.int64)
    head = tl.program_id(1).to(tl.int64)
    d = tl.arange(0, R_PAD).to(tl.int64)
    d_ok = d < R
    w = token * wm_s0 + head * wm_s1
    big_m = tl.load(ws_max_ptr + w)
    big_l = tl.load(ws_sum_ptr + w)
    acc = tl.load(ws_out_ptr + token * wo_s0 + head * wo_s1 + d * wo_s3, mask=d_ok, other=0.0)
    for c in range(1, NUM_SPLITS):
        m_c = tl.load(ws_max_ptr + w + c * wm_s2)
        l_c = tl.load(ws_sum_ptr + w + c * wm_s2)
        o_c = tl.load(ws_out_ptr + token * wo_s0 + head * wo_s1 + c * wo_s2 + d * wo_s3, mask=d_ok, other=0.0)
        m_new = tl.maximum(big_m, m_c)
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)
        c_old = tl.exp(big_m - m_safe)
        c_new = tl.exp(m_c - m_safe)
        big_l = big_l * c_old + l_c * c_new
        acc = acc * c_old + o_c * c_new
        big_m = m_new
    denom = tl.where(big_l > 0.0, big_l, 1.0)
    result = acc * (tl.load(k_scale_ptr) / denom)
    tl.store(out_ptr + token * o_s0 + head * o_s1 + d * o_s2, result.to(out_ptr.dtype.element_ty), mask=d_ok)


def _mla_workspaces(*, query, **_):
    """Typed workspaces of triton_mla_decode: float32 partials per (query row, head, split). A workspaces
    function does not see `out`, so mla_out is R + P wide (query's last dim); only its first R columns are used."""
    n, h, d = (int(x) for x in query.shape)
    return [("mla_max", (n, h, MLA_NUM_SPLITS), "float32"), ("mla_sum", (n, h, MLA_NUM_SPLITS), "float32"),
            ("mla_out", (n, h, MLA_NUM_SPLITS, d), "float32")]


def _mla_scale_tensor(k_scale, k_scales, k_scale_tensor, device):
    """The per-tensor dequant scale as a float32 [1] device tensor (never a host sync)."""
    for t in (k_scales, k_scale_tensor):
        if t is not None:
            if t.dtype != torch.float32 or t.numel() != 1:
                raise ValueError(f"k_scales: {t.dtype} {tuple(t.shape)}, expected float32 [1] (per-tensor scale)")
            return t
    return torch.full((1,), float(k_scale), dtype=torch.float32, device=device)


@reader("triton_mla_decode", cache_format="mla", dtypes=("fp16", "bf16"), head_sizes=(576,),  # R 512 + P 64
        cache_dtypes=_MLA_DECLARED_CACHE_DTYPES, kv_scales=("none", "tensor"),
        max_query_len=16, modifiers=("non_causal",), workspaces=_mla_workspaces,
        description="Triton absorbed MLA decode over the latent cache [num_blocks, block_size, R + P]: split-K "
                    f"({MLA_NUM_SPLITS} splits, typed float32 workspaces mla_max/mla_sum/mla_out) and a reduce; "
                    "decode and multi-token decode (up to 16 tokens), fp16/bf16 and fp8 per-tensor caches")
def triton_mla_decode(out, query, key_cache, value_cache, block_tables, context_lens, block_size, max_context_len,
                      scale, k_scale, v_scale, partition_size=0, query_start_loc=None, seq_lens=None,
                      max_query_len=None, causal=True, k_scales=None, k_scale_tensor=None, workspaces=None, **_):
    """Writes out [num_query_tokens, num_heads, R] in place (provider.h's KVH_CACHE_MLA reader)."""
    for name, t, n in (("query", query, 3), ("out", out, 3), ("key_cache", key_cache, 3),
                       ("block_tables", block_tables, 2), ("context_lens", context_lens, 1)):
        _check_dims(name, t, n)
    num_tokens, num_heads, d = (int(x) for x in query.shape)
    r = int(out.shape[2])
    p = d - r
    if tuple(out.shape[:2]) != (num_tokens, num_heads) or p < 1:
        raise ValueError(f"out: shape {tuple(out.shape)}, expected [{num_tokens}, {num_heads}, kv_lora_rank < {d}]")
    if int(key_cache.shape[1]) != int(block_size) or int(key_cache.shape[2]) != d:
        raise ValueError(f"key_cache: shape {tuple(key_cache.shape)}, expected [num_blocks, block_size = "
                         f"{block_size}, kv_lora_rank + qk_rope_head_dim = {d}] (mla)")
    if value_cache is not None and (value_cache.data_ptr() != key_cache.data_ptr() or
                                    tuple(value_cache.shape) != tuple(key_cache.shape)):
        raise ValueError("value_cache: expected the latent cache itself (key_cache's view)")
    for name, t in (("query", query), ("out", out)):
        if t.dtype not in _SUPPORTED_DTYPES or t.dtype != query.dtype:
            raise ValueError(f"{name}: dtype {t.dtype}; expected float16 or bfloat16, that of query ({query.dtype})")
    if key_cache.dtype not in _MLA_CACHE_DTYPES or (key_cache.element_size() == 2 and key_cache.dtype != query.dtype):
        raise ValueError(f"key_cache: dtype {key_cache.dtype}; expected query's dtype or an fp8 dtype")
    num_seqs = int(block_tables.shape[0])
    if query_start_loc is None:  # a direct decode call
        query_start_loc = torch.arange(num_seqs + 1, dtype=torch.int32, device=query.device)
        max_query_len = 1
    if seq_lens is None:
        seq_lens = context_lens
    for name, t, n in (("query_start_loc", query_start_loc, num_seqs + 1), ("seq_lens", seq_lens, num_seqs)):
        if t.dtype != torch.int32 or tuple(t.shape) != (n,):
            raise ValueError(f"{name}: {t.dtype} {tuple(t.shape)}, expected int32 [{n}]")
    if block_tables.dtype != torch.int32:
        raise ValueError(f"block_tables: dtype {block_tables.dtype}, expected torch.int32")
    if max_query_len is None:
        max_query_len = int((query_start_loc[1:] - query_start_loc[:-1]).max()) if num_seqs else 0
    scale_t = _mla_scale_tensor(k_scale, k_scales, k_scale_tensor, query.device)
    want = {n: shape for n, shape, _ in _mla_workspaces(query=query)}
    if not workspaces:  # a direct call: its own
        workspaces = {n: torch.empty(shape, dtype=torch.float32, device=out.device) for n, shape in want.items()}
    for n, shape in want.items():
        t = workspaces.get(n)
        if t is None or tuple(t.shape) != shape or t.dtype != torch.float32:
            raise ValueError(f"workspaces[{n!r}]: {None if t is None else (t.dtype, tuple(t.shape))}, "
                             f"expected float32 {shape}")
    ws_m, ws_l, ws_o = workspaces["mla_max"], workspaces["mla_sum"], workspaces["mla_out"]
    if ws_l.stride() != ws_m.stride():
        raise ValueError(f"workspaces['mla_sum']: strides {ws_l.stride()} differ from mla_max's {ws_m.stride()}")
    _check_gpu([("out", out), ("query", query), ("key_cache", key_cache), ("block_tables", block_tables),
                ("query_start_loc", query_start_loc), ("seq_lens", seq_lens), ("k_scale", scale_t),
                ("workspaces['mla_out']", ws_o)])
    if num_seqs == 0 or num_tokens == 0 or int(max_query_len) <= 0:
        return
    r_pad, p_pad = max(16, triton.next_power_of_2(r)), max(16, triton.next_power_of_2(p))
    grid = (num_seqs * int(max_query_len), triton.cdiv(num_heads, _MLA_BLOCK_H), MLA_NUM_SPLITS)
    with torch.cuda.device(out.device):
        _mla_decode_kernel[grid](
            query, key_cache, block_tables, seq_lens, query_start_loc, scale_t, ws_m, ws_l, ws_o,
            *query.stride(), *key_cache.stride(), block_tables.stride(0), block_tables.stride(1),
            seq_lens.stride(0), query_start_loc.stride(0), *ws_m.stride(), *ws_o.stride(),
            num_heads, int(max_query_len), int(block_size), float(scale),
            R=r, P=p, R_PAD=r_pad, P_PAD=p_pad, BLOCK_H=_MLA_BLOCK_H, TILE_T=_MLA_TILE_T,
            NUM_SPLITS=MLA_NUM_SPLITS, CAUSAL=bool(causal), num_warps=4, num_stages=1,
        )
        _mla_reduce_kernel[(num_tokens, num_heads)](
            out, scale_t, ws_m, ws_l, ws_o, *out.stride(), *ws_m.stride(), *ws_o.stride(),
            R=r, R_PAD=r_pad, NUM_SPLITS=MLA_NUM_SPLITS, num_warps=4,
        )
