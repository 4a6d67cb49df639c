#!/usr/bin/env python3
"""Unit tests of the kvharness package, its private _bridge and kvharness_torch, without the harness.

Run: python3 -m unittest discover -s providers/python/testing -p 'kvharness_api_test.py'
(sys.path gets providers/python). Tensors reach kernels through real DLPack
capsules of strided views, as the bridge hands them over.
"""

import math
import os
import sys
import tempfile
import textwrap
import unittest

import torch
import torch.utils.dlpack

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import kvharness  # noqa: E402
from kvharness import _bridge  # noqa: E402
import kvharness_torch as kt  # noqa: E402

sys.path.insert(0, HERE)
import kvharness_planted  # noqa: E402


def capsules(**kw):
    return {k: torch.utils.dlpack.to_dlpack(v) if isinstance(v, torch.Tensor) else v for k, v in kw.items()}


class Decorators(unittest.TestCase):
    def test_return_the_function_unchanged_and_register_it(self):
        def f(**kw):
            return 42
        n = len(kvharness._KERNELS)
        self.assertIs(kvharness.writer("t_unchanged", cache_format="flash")(f), f)
        self.assertEqual(f(), 42)
        self.assertEqual(len(kvharness._KERNELS), n + 1)
        self.assertEqual(kvharness._KERNELS[-1].name, "t_unchanged")
        self.assertEqual(kvharness._KERNELS[-1].module, __name__)

    def test_hnd_readers_register_with_the_abi_code(self):
        kvharness.reader("t_hnd", cache_format="hnd", block_sizes=(16,))(lambda **kw: None)
        self.assertEqual(kvharness._KERNELS[-1].cache_format, "hnd")
        self.assertEqual(kvharness.CACHE_FORMATS["hnd"], 3)  # KVH_CACHE_HND
        self.assertEqual(kvharness.CACHE_FORMATS["flash"], 0)  # KVH_CACHE_NHD

    def test_mla_readers_and_int8_caches_register_with_the_abi_codes(self):  # kvharness 0.6 (issue 22)
        kvharness.reader("t_mla", cache_format="mla", cache_dtypes=("bf16", "fp8_e4m3fn"), kv_scales=("none", "tensor"),
                         max_query_len=8)(lambda **kw: None)
        self.assertEqual(kvharness._KERNELS[-1].cache_format, "mla")
        self.assertEqual(kvharness.CACHE_FORMATS["mla"], 4)  # KVH_CACHE_MLA
        self.assertEqual(kvharness.CACHE_DTYPES["int8"], 8)  # KVH_DT_I8
        self.assertIn("kv_lora_rank", kvharness.ROUTE_ARGS)
        with self.assertRaisesRegex(ValueError, "cache_format 'latent'"):
            kvharness.reader("t_latent", cache_format="latent")(lambda **kw: None)

    def test_bad_declarations_raise_at_import(self):
        for kwargs, text in (({"cache_format": "nhd"}, "cache_format 'nhd'"),
                             ({"cache_format": "flash", "dtypes": ("fp32",)}, "dtypes"),
                             ({"cache_format": "flash", "head_sizes": (0,)}, "head_sizes"),
                             ({"cache_format": "flash", "head_sizes": 128}, "head_sizes")):
            with self.assertRaises((ValueError, TypeError)) as e:
                kvharness.writer("t_bad", **kwargs)(lambda **kw: None)
            self.assertIn(text, str(e.exception))
        with self.assertRaises(ValueError):
            kvharness.reader("t_bad", cache_format="pa_v1", max_gqa_ratio=-1)(lambda **kw: None)
        for kwargs, text in (({"cache_dtypes": ("fp8_e5m2",)}, "cache_dtypes"), ({"kv_scales": ("channel",)}, "kv_scales")):
            with self.assertRaises(ValueError) as e:
                kvharness.reader("t_bad", cache_format="shuffle", **kwargs)(lambda **kw: None)
            self.assertIn(text, str(e.exception))

    def test_fp8_declarations_reach_the_bridge_as_masks(self):
        kvharness.reader("t_fp8", cache_format="shuffle", cache_dtypes=("bf16", "fp8_e4m3fnuz"),
                         kv_scales=("none", "token"))(lambda **kw: None)
        h = _bridge.Handle([kvharness._KERNELS[-1]], _bridge.DEVICE_CPU, 0)
        self.assertEqual(h.kernels[0]["cache_dtypes_mask"], (1 << 2) | (1 << 7))
        self.assertEqual(h.kernels[0]["kv_scales_mask"], (1 << 0) | (1 << 4))
        kvharness.writer("t_plain", cache_format="flash")(lambda **kw: None)
        h = _bridge.Handle([kvharness._KERNELS[-1]], _bridge.DEVICE_CPU, 0)
        self.assertEqual(h.kernels[0]["cache_dtypes_mask"], 0)  # the K/V dtype only
        self.assertEqual(h.kernels[0]["kv_scales_mask"], 1)     # none only

    def test_fp8_caches_arrive_as_bytes_or_torch_float8(self):
        seen = {}
        def f(key_cache, kv_cache_dtype, k_scales):
            seen.update(dtype=key_cache.dtype, fmt=kv_cache_dtype, scales=k_scales)
        kvharness.reader("t_fp8_call", cache_format="shuffle", cache_dtypes=("fp8_e4m3fn",))(f)
        h = _bridge.Handle([kvharness._KERNELS[-1]], _bridge.DEVICE_CPU, 0)
        cache = torch.zeros(4, 16, dtype=torch.uint8)
        scales = torch.full((2,), 0.5)
        self.assertIsNone(h.call(0, capsules(key_cache=cache, kv_cache_dtype="fp8_e4m3fn", k_scales=scales), 0))
        self.assertEqual(seen["fmt"], "fp8_e4m3fn")
        self.assertEqual(seen["dtype"], getattr(torch, "float8_e4m3fn", torch.uint8))
        self.assertEqual(seen["scales"].tolist(), [0.5, 0.5])
        for bad in (("window",), "sinks"):  # an unknown name; a string is not a sequence of names
            with self.assertRaises(ValueError) as e:
                kvharness.reader("t_bad", cache_format="pa_v1", modifiers=bad)(lambda **kw: None)
            self.assertIn("modifiers", str(e.exception))


class Modifiers(unittest.TestCase):
    def test_declared_modifiers_reach_the_bridge_as_kvh_modifier_bits(self):
        d = tempfile.mkdtemp()
        path = os.path.join(d, "kvh_tmp_modifiers.py")
        with open(path, "w") as f:
            f.write(textwrap.dedent("""
                import kvharness
                @kvharness.reader("t_mods", cache_format="shuffle", modifiers=("sinks", "alibi"))
                def r(out, sinks, alibi_slopes, head_offset, **kw):
                    pass
                @kvharness.reader("t_plain", cache_format="shuffle")
                def p(out, **kw):
                    pass
            """))
        h, err = _bridge.load(path, _bridge.DEVICE_CPU, 0)
        self.assertIsNone(err)
        masks = {k["name"]: k["modifiers_mask"] for k in h.kernels}
        self.assertEqual(masks, {"t_mods": 2 | 8, "t_plain": 0})  # provider.h: KVH_MOD_SINKS 2, KVH_MOD_ALIBI 8


class Bridge(unittest.TestCase):
    def load(self, source):
        d = tempfile.mkdtemp()
        path = os.path.join(d, f"kvh_tmp_{abs(hash(source))}.py")
        with open(path, "w") as f:
            f.write(textwrap.dedent(source))
        return path, _bridge.load(path, _bridge.DEVICE_CPU, 0)

    def test_calls_write_through_capsules_into_the_callers_storage(self):
        path, (h, err) = self.load("""
            from kvharness import writer
            @writer("t_fill", cache_format="flash")
            def fill(key_cache, block_size):
                key_cache.fill_(block_size)
            """)
        self.assertIsNone(err)
        buf = torch.zeros(4, 6)
        view = buf[1:3, ::2]  # strided, offset: must be written in place
        self.assertIsNone(h.call(0, capsules(key_cache=view, block_size=7, future_field=1), 0))
        expect = torch.zeros(4, 6)
        expect[1:3, ::2] = 7
        self.assertTrue(torch.equal(buf, expect), buf)

    def test_an_exception_names_type_message_and_the_providers_line(self):
        path, (h, err) = self.load("""
            from kvharness import writer
            def helper(n):
                raise KeyError(n)
            @writer("t_raise", cache_format="flash")
            def f(block_size):
                helper(block_size)
            """)
        msg = h.call(0, {"block_size": 3}, 0)
        self.assertIn("KeyError: 3", msg)
        self.assertTrue(msg.endswith(f"{path}:4)"), msg)  # the raising line in the helper

    def test_a_missing_argument_points_at_the_declaration(self):
        path, (h, err) = self.load("""
            from kvharness import writer
            @writer("t_args", cache_format="flash")
            def f(block_size, not_an_argument):
                pass
            """)
        msg = h.call(0, {"block_size": 3}, 0)
        self.assertIn("TypeError", msg)
        self.assertIn("not_an_argument", msg)
        self.assertTrue(msg.endswith(":3)"), msg)  # the kernel's declaration (its decorator line)

    def test_import_errors_and_empty_modules(self):
        _, (h, err) = self.load("import kvh_no_such_module_xyz\n")
        self.assertIsNone(h)
        self.assertIn("import failed: ModuleNotFoundError: No module named 'kvh_no_such_module_xyz'", err)
        self.assertTrue(err.endswith(":1)"), err)
        _, (h, err) = self.load("x = (\n")
        self.assertIn("SyntaxError", err)
        _, (h, err) = self.load("x = 1\n")
        self.assertIn("registers no kernel", err)

    def test_workspace_bytes(self):
        _, (h, err) = self.load("""
            from kvharness import reader
            @reader("t_ws", cache_format="pa_v1", workspace_bytes=lambda block_size, **kw: 3 * block_size)
            def f(**kw):
                pass
            """)
        self.assertTrue(h.kernels[0]["has_workspace"])
        self.assertEqual(h.workspace_bytes(0, {"block_size": 16, "query": None}), 48)


# ---- kvharness 0.5: call-time refusal, the stack's frame in CRASH messages ----


def stack_tree(files):
    """A synthetic stack: {relative path: source} under a fresh root put on sys.path; returns the root."""
    root = tempfile.mkdtemp()
    for rel, src in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(textwrap.dedent(src))
    sys.path.insert(0, root)
    return root


class Findings(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # fakestack/attention/ops/paged.py: the stack's kernel file, two modules below the provider.
        stack_tree({
            "fakestack/__init__.py": "",
            "fakestack/attention/__init__.py": "",
            "fakestack/attention/ops/__init__.py": "",
            "fakestack/attention/ops/paged.py": """
                import json
                import kvharness

                def unified_attention(head_size):
                    if head_size == 96:
                        raise RuntimeError(f"out of resource: shared memory, Required: {head_size * 1024}")  # STACK RAISE
                    if head_size == 80:
                        raise kvharness.Unsupported(f"head_size {head_size} is not a power of two")
                    if head_size == 72:
                        json.loads("{")  # the standard library raises below the stack's line  # STACK JSON
                    if head_size == 64:
                        import torch
                        torch.nn.functional.interpolate(torch.zeros(1), scale_factor=2)  # torch raises below  # STACK TORCH
                """,
        })

    def test_unsupported_is_exported(self):
        self.assertIn("Unsupported", kvharness.__all__)
        self.assertTrue(issubclass(kvharness.Unsupported, Exception))
        self.assertEqual(kvharness.Unsupported("why").reason, "why")

    def test_a_kernel_that_raises_unsupported_returns_the_reason(self):
        _, h, idx = load_source("""
            import kvharness
            from kvharness import writer, reader
            @writer("t_refuses", cache_format="flash")
            def w(block_size):
                raise kvharness.Unsupported(f"block_size {block_size} needs too much shared memory")
            @writer("t_empty_reason", cache_format="flash")
            def e(block_size):
                raise kvharness.Unsupported()
            def ws(block_size, **kw):
                raise kvharness.Unsupported("no split-K plan")
            @reader("t_ws_refuses", cache_format="pa_v1", workspace_bytes=ws)
            def r(**kw):
                pass
            def typed(block_size, **kw):
                raise kvharness.Unsupported("no typed workspaces")
            @reader("t_typed_refuses", cache_format="flash", workspaces=typed)
            def t(**kw):
                pass
            """)
        self.assertEqual(h.call(idx["t_refuses"], {"block_size": 544}, 0),
                         ("unsupported", "block_size 544 needs too much shared memory"))
        self.assertEqual(h.call(idx["t_empty_reason"], {"block_size": 16}, 0)[0], "unsupported")
        self.assertTrue(h.call(idx["t_empty_reason"], {"block_size": 16}, 0)[1], "never an empty reason")
        self.assertEqual(h.workspace_bytes(idx["t_ws_refuses"], {"block_size": 16, "query": None}),
                         ("unsupported", "no split-K plan"))
        self.assertEqual(h.workspaces(idx["t_typed_refuses"], decode_kwargs()), ("unsupported", "no typed workspaces"))

    def test_unsupported_raised_inside_the_stack_counts_the_same(self):
        _, h, idx = load_source("""
            from kvharness import writer
            from fakestack.attention.ops import paged
            @writer("t_stack", cache_format="flash")
            def w(head_size):
                paged.unified_attention(head_size)
            """)
        self.assertEqual(h.call(idx["t_stack"], {"head_size": 80}, 0), ("unsupported", "head_size 80 is not a power of two"))
        self.assertIsNone(h.call(idx["t_stack"], {"head_size": 128}, 0))

    def test_a_crash_names_the_providers_line_and_the_stacks_frame(self):
        path, h, idx = load_source("""
            from kvharness import writer
            from fakestack.attention.ops import paged
            @writer("t_stack", cache_format="flash")
            def w(head_size):
                paged.unified_attention(head_size)  # PROVIDER CALL
            """)
        stack = os.path.join("fakestack", "attention", "ops", "paged.py")
        stack_line = marked_line_of(sys.modules["fakestack.attention.ops.paged"].__file__, "# STACK RAISE")
        msg = h.call(idx["t_stack"], {"head_size": 96}, 0)
        self.assertTrue(msg.startswith("RuntimeError: out of resource: shared memory, Required: 98304 ("), msg)
        self.assertTrue(msg.endswith(f"{path}:6; raised in {stack}:{stack_line} in unified_attention)"), msg)
        # The standard library's frame below the stack's line is not where the stack raised.
        json_line = marked_line_of(sys.modules["fakestack.attention.ops.paged"].__file__, "# STACK JSON")
        msg = h.call(idx["t_stack"], {"head_size": 72}, 0)
        self.assertIn("JSONDecodeError", msg)
        self.assertTrue(msg.endswith(f"{path}:6; raised in {stack}:{json_line} in unified_attention)"), msg)
        torch_line = marked_line_of(sys.modules["fakestack.attention.ops.paged"].__file__, "# STACK TORCH")
        msg = h.call(idx["t_stack"], {"head_size": 64}, 0)
        self.assertTrue(msg.startswith("NotImplementedError: "), msg)
        self.assertTrue(msg.endswith(f"{path}:6; raised in {stack}:{torch_line} in unified_attention)"), msg)

    def test_without_a_stack_frame_only_the_providers_line(self):
        path, h, idx = load_source("""
            from kvharness import writer
            def helper(n):
                raise KeyError(n)
            @writer("t_local", cache_format="flash")
            def w(block_size):
                helper(block_size)
            @writer("t_stdlib", cache_format="flash")
            def s(block_size):
                import json
                json.loads("{")
            """)
        msg = h.call(idx["t_local"], {"block_size": 3}, 0)
        self.assertTrue(msg.endswith(f"{path}:4)"), msg)  # the helper in the provider file: nothing deeper
        self.assertNotIn("raised in", msg)
        # Only the standard library below the provider: its innermost frame, as the innermost frame overall.
        msg = h.call(idx["t_stdlib"], {"block_size": 3}, 0)
        self.assertRegex(msg, rf"{path}:11; raised in .*json.*\.py:\d+ in \w+\)$")


def marked_line_of(path, marker):
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if marker in line:
                return i
    raise AssertionError(f"{path}: no line marked {marker!r}")


# ---- kvharness_torch against plain-Python references on strided views ----

X = 8


def interleaved(num_blocks, page_shape_k, page_shape_v, dtype=torch.float16, pad=24):
    """K and V views of one buffer, blocks-first interleaved with padding: (buf, k, v)."""
    pk, pv = math.prod(page_shape_k), math.prod(page_shape_v)
    stride = pk + pv + pad
    buf = torch.full((num_blocks * stride,), -7.0, dtype=dtype)

    def view(shape, offset):
        inner = [1] * len(shape)
        for i in range(len(shape) - 2, -1, -1):
            inner[i] = inner[i + 1] * shape[i + 1]
        return buf.as_strided((num_blocks, *shape), (stride, *inner), offset)
    return buf, view(page_shape_k, 0), view(page_shape_v, pk)


class TorchProvider(unittest.TestCase):
    H, D, BS, NB = 2, 16, 16, 6

    def inputs(self, n=20):
        g = torch.Generator().manual_seed(0)
        fused = torch.randn(n, 3 * self.H * self.D, generator=g).half()
        key = fused[:, self.H * self.D:2 * self.H * self.D].view(n, self.H, self.D)
        value = fused[:, 2 * self.H * self.D:].view(n, self.H, self.D)
        slots = torch.randperm((self.NB - 1) * self.BS, generator=g)[:n] + self.BS
        slots[3] = -1
        return key, value, slots

    def check_writer(self, fn, k_shape, v_shape, k_index, v_index):
        """fn on an interleaved, padded cache == element-by-element reference writes on a twin buffer."""
        key, value, slots = self.inputs()
        buf, kc, vc = interleaved(self.NB, k_shape, v_shape)
        ref_buf, ref_k, ref_v = interleaved(self.NB, k_shape, v_shape)
        fn(key=key, value=value, key_cache=kc, value_cache=vc, slot_mapping=slots, block_size=self.BS)
        for t, s in enumerate(slots.tolist()):
            if s < 0:
                continue
            b, o = divmod(s, self.BS)
            for h in range(self.H):
                for d in range(self.D):
                    ref_k[(b,) + k_index(o, h, d)] = key[t, h, d]
                    ref_v[(b,) + v_index(o, h, d)] = value[t, h, d]
        self.assertTrue(torch.equal(buf, ref_buf), (buf != ref_buf).nonzero()[:5])
        self.assertFalse(torch.equal(buf, interleaved(self.NB, k_shape, v_shape)[0]), "nothing was written")

    def test_flash_writer(self):
        self.check_writer(kt.reshape_and_cache_flash, (self.BS, self.H, self.D), (self.BS, self.H, self.D),
                          lambda o, h, d: (o, h, d), lambda o, h, d: (o, h, d))

    def test_pa_v1_writer(self):
        self.check_writer(kt.reshape_and_cache, (self.H, self.D // X, self.BS, X), (self.H, self.D, self.BS),
                          lambda o, h, d: (h, d // X, o, d % X), lambda o, h, d: (h, d, o))

    def test_shuffle_writer(self):
        self.check_writer(kt.reshape_and_cache_shuffle, (self.H, self.D // X, self.BS, X),
                          (self.H, self.BS // X, self.D, X),
                          lambda o, h, d: (h, d // X, o, d % X), lambda o, h, d: (h, o // X, d, o % X))

    def test_writer_on_padded_cache_leaves_padding_alone(self):
        key, value, slots = self.inputs()
        buf, kc, vc = interleaved(self.NB, (self.BS, self.H, self.D), (self.BS, self.H, self.D), pad=24)
        kt.reshape_and_cache_flash(key, value, kc, vc, slots, self.BS)
        page = 2 * self.BS * self.H * self.D
        pad = buf.view(self.NB, page + 24)[:, page:]
        self.assertTrue(torch.all(pad == -7.0))

    def test_fixture_is_right_only_on_contiguous_caches(self):
        key, value, slots = self.inputs()
        shape_k, shape_v = (self.NB, self.H, self.D // X, self.BS, X), (self.NB, self.H, self.BS // X, self.D, X)
        for contiguous in (True, False):
            if contiguous:
                kc, vc = torch.zeros(shape_k).half(), torch.zeros(shape_v).half()
            else:
                _, kc, vc = interleaved(self.NB, shape_k[1:], shape_v[1:])
            good_k, good_v = kc.clone(), vc.clone()
            kt.reshape_and_cache_shuffle(key, value, good_k, good_v, slots, self.BS)
            kt.fixture_shuffle_contiguous(key, value, kc, vc, slots, self.BS)
            same = torch.equal(kc, good_k) and torch.equal(vc, good_v)
            self.assertEqual(same, contiguous)

    def test_readers_match_a_float64_reference_with_gqa_and_lengths(self):
        g = torch.Generator().manual_seed(1)
        nh, nkv, d, bs, nb = 8, 2, 16, 16, 12
        lens = [1, 17, 40]
        n_tok = sum(lens)
        key = torch.randn(n_tok, nkv, d, generator=g).half()
        value = torch.randn(n_tok, nkv, d, generator=g).half()
        query = torch.randn(len(lens), nh, d, generator=g).half()
        ids = torch.randperm(nb - 1, generator=g) + 1
        tables = torch.zeros(len(lens), 3, dtype=torch.int32)
        slots, used = [], 0
        for i, n in enumerate(lens):
            nblk = -(-n // bs)
            tables[i, :nblk] = ids[used:used + nblk].int()
            used += nblk
            slots += [int(tables[i, t // bs]) * bs + t % bs for t in range(n)]
        slots = torch.tensor(slots)
        for fmt, write, read, v_shape in (
                ("pa_v1", kt.reshape_and_cache, kt.paged_attention_v1, (nkv, d, bs)),
                ("shuffle", kt.reshape_and_cache_shuffle, kt.paged_attention_shuffle, (nkv, bs // X, d, X))):
            _, kc, vc = interleaved(nb, (nkv, d // X, bs, X), v_shape)
            write(key, value, kc, vc, slots, bs)
            out = torch.full((len(lens), nh, d), float("nan")).half()
            read(out=out, query=query, key_cache=kc, value_cache=vc, block_tables=tables,
                 context_lens=torch.tensor(lens, dtype=torch.int32), block_size=bs, max_context_len=max(lens),
                 scale=d ** -0.5, k_scale=1.0, v_scale=1.0, partition_size=0, workspace=None)
            start = 0
            for i, n in enumerate(lens):
                k = key[start:start + n].double()
                v = value[start:start + n].double()
                start += n
                for h in range(nh):
                    kv = h // (nh // nkv)
                    p = torch.softmax(k[:, kv] @ query[i, h].double() * d ** -0.5, 0)
                    ref = p @ v[:, kv]
                    torch.testing.assert_close(out[i, h].double(), ref, atol=2e-3, rtol=5e-3, msg=f"{fmt} {i} {h}")


# ---- kvharness 0.4: ragged-query arguments, capabilities, typed workspaces ----


def load_source(source):
    d = tempfile.mkdtemp()
    path = os.path.join(d, f"kvh_tmp_{abs(hash(source))}.py")
    with open(path, "w") as f:
        f.write(textwrap.dedent(source))
    h, err = _bridge.load(path, _bridge.DEVICE_CPU, 0)
    assert err is None, err
    return path, h, {k["name"]: i for i, k in enumerate(h.kernels)}


def decode_kwargs(num_seqs=3, **extra):
    """The keywords bridge.cpp passes a reader on a decode call (capsules), plus `extra`."""
    kw = dict(out=torch.zeros(num_seqs, 4, 8), query=torch.zeros(num_seqs, 4, 8), key_cache=torch.zeros(2, 16, 1, 8),
              value_cache=torch.zeros(2, 16, 1, 8), block_tables=torch.zeros(num_seqs, 1, dtype=torch.int32),
              context_lens=torch.tensor([5, 1, 9][:num_seqs], dtype=torch.int32), block_size=16,
              max_context_len=9, scale=0.5, k_scale=0.25, v_scale=2.0, partition_size=0, workspace=None)
    kw.update(extra)
    return capsules(**kw)


RAGGED = dict(query_start_loc=torch.tensor([0, 2, 3, 7], dtype=torch.int32),
              seq_lens=torch.tensor([5, 1, 9], dtype=torch.int32), max_query_len=4, num_query_tokens=7,
              causal=False, k_scale_tensor=torch.tensor([0.25]), v_scale_tensor=torch.tensor([2.0]))


class RaggedDeclarations(unittest.TestCase):
    def test_max_query_len_and_non_causal_reach_the_bridge(self):
        _, h, idx = load_source("""
            import kvharness
            @kvharness.reader("t_ragged", cache_format="flash", max_query_len=kvharness.ANY_QUERY_LEN,
                              modifiers=("non_causal",))
            def r(**kw):
                pass
            @kvharness.reader("t_chunk", cache_format="flash", max_query_len=64, modifiers=("sinks",))
            def c(out, **kw):
                pass
            @kvharness.reader("t_decode", cache_format="flash")
            def d(out, **kw):
                pass
            @kvharness.reader("t_names_causal", cache_format="flash")
            def n(out, causal, **kw):
                pass
            """)
        k = {name: h.kernels[i] for name, i in idx.items()}
        self.assertEqual(k["t_ragged"]["max_query_len"], 2 ** 31 - 1)
        self.assertEqual(k["t_ragged"]["modifiers_mask"], 16)  # KVH_MOD_NON_CAUSAL
        self.assertFalse(k["t_ragged"]["modifier_kwargs"])     # non_causal is not a score modifier
        self.assertEqual((k["t_chunk"]["max_query_len"], k["t_chunk"]["modifiers_mask"]), (64, 2))
        self.assertTrue(k["t_chunk"]["modifier_kwargs"])
        self.assertEqual(k["t_decode"]["max_query_len"], 1)
        self.assertEqual([k[n]["ragged_kwargs"] for n in ("t_ragged", "t_chunk", "t_decode", "t_names_causal")],
                         [True, True, False, True])

    def test_bad_max_query_len_raises_at_import(self):
        for bad in (-1, "8", True, 2 ** 31, 1.5):
            with self.assertRaises(ValueError) as e:
                kvharness.reader("t_bad_mql", cache_format="flash", max_query_len=bad)(lambda **kw: None)
            self.assertIn("max_query_len", str(e.exception))


class RaggedArguments(unittest.TestCase):
    SOURCE = """
        import kvharness
        SEEN = {}
        def fixed(out, query, key_cache, value_cache, block_tables, context_lens, block_size, max_context_len,
                  scale, k_scale, v_scale, partition_size, workspace):
            SEEN["fixed"] = True
        @kvharness.reader("t_old_forwarder", cache_format="flash")
        def old(**kwargs):
            fixed(**kwargs)  # written before kvharness 0.4: a new keyword would break it
        @kvharness.reader("t_by_name", cache_format="flash")
        def by_name(out, query_start_loc, seq_lens, causal, num_query_tokens, max_query_len, k_scale_tensor):
            SEEN["by_name"] = dict(qsl=query_start_loc.tolist(), lens=seq_lens.tolist(), causal=causal,
                                   n=num_query_tokens, mql=max_query_len, ks=k_scale_tensor.tolist())
        @kvharness.reader("t_ragged_kwargs", cache_format="flash", max_query_len=16, modifiers=("non_causal",))
        def ragged(**kwargs):
            SEEN["ragged"] = sorted(kwargs)
        """

    @classmethod
    def setUpClass(cls):  # once: a module name is loaded once per process
        cls.path, cls.h, cls.idx = load_source(cls.SOURCE)
        cls.mod = sys.modules[os.path.splitext(os.path.basename(cls.path))[0]]

    def test_readers_that_do_not_name_them_never_see_them(self):
        self.assertIsNone(self.h.call(self.idx["t_old_forwarder"], decode_kwargs(**RAGGED), 0))
        self.assertTrue(self.mod.SEEN["fixed"])

    def test_a_reader_takes_them_by_name(self):
        self.assertIsNone(self.h.call(self.idx["t_by_name"], decode_kwargs(**RAGGED), 0))
        self.assertEqual(self.mod.SEEN["by_name"], dict(qsl=[0, 2, 3, 7], lens=[5, 1, 9], causal=False, n=7, mql=4,
                                                        ks=[0.25]))

    def test_a_ragged_reader_gets_them_through_kwargs(self):
        self.assertIsNone(self.h.call(self.idx["t_ragged_kwargs"], decode_kwargs(**RAGGED), 0))
        self.assertTrue(set(kvharness.RAGGED_ARGS) <= set(self.mod.SEEN["ragged"]), self.mod.SEEN["ragged"])

    def test_unfilled_fields_arrive_as_a_decode_call(self):
        # bridge.cpp passes None for the tensors the harness did not fill (a decode call, an older harness).
        unfilled = dict(query_start_loc=None, seq_lens=None, max_query_len=1, num_query_tokens=3, causal=True,
                        k_scale_tensor=None, v_scale_tensor=None)
        self.assertIsNone(self.h.call(self.idx["t_by_name"], decode_kwargs(**unfilled), 0))
        self.assertEqual(self.mod.SEEN["by_name"], dict(qsl=[0, 1, 2, 3], lens=[5, 1, 9], causal=True, n=3, mql=1,
                                                        ks=[0.25]))


class TypedWorkspaces(unittest.TestCase):
    SOURCE = """
        import torch
        import kvharness
        SEEN = {}
        def specs(query, num_query_tokens, max_context_len, partition_size, **kw):
            splits = -(-max_context_len // (partition_size or 4))
            n, h, d = query.shape
            return [("segm_max", (n, h, splits), torch.float32), ("segm_expsum", [n, h, splits], "float32"),
                    ("segm_output", (n, h, splits, d), "torch.bfloat16"), ("counts", n, torch.int32)]
        @kvharness.reader("t_typed", cache_format="flash", max_query_len=64, workspaces=specs)
        def typed(out, workspaces, segm_output, **kw):
            SEEN["typed"] = {n: (str(t.dtype), tuple(t.shape)) for n, t in workspaces.items()}
            SEEN["by_name"] = segm_output is workspaces["segm_output"]
            workspaces["counts"].fill_(7)
        @kvharness.reader("t_static", cache_format="flash", workspaces=[("scratch", (2, 3), "int64")])
        def static(workspaces):
            SEEN["static"] = {n: tuple(t.shape) for n, t in workspaces.items()}
        def bad_dtype(query, **kw):
            return [("ok", 4, "float32"), ("segm_max", (query.shape[0], 2), "float8")]
        @kvharness.reader("t_bad_dtype", cache_format="flash", workspaces=bad_dtype)
        def r1(**kw):
            pass
        @kvharness.reader("t_raises", cache_format="flash", workspaces=lambda query, **kw: 1 // 0)
        def r2(**kw):
            pass
        """

    @classmethod
    def setUpClass(cls):  # once: a module name is loaded once per process
        cls.path, cls.h, cls.idx = load_source(cls.SOURCE)
        cls.mod = sys.modules[os.path.splitext(os.path.basename(cls.path))[0]]

    def test_declarations_become_kvh_workspace_specs(self):
        self.assertTrue(self.h.kernels[self.idx["t_typed"]]["has_workspaces"])
        self.assertFalse(self.h.kernels[self.idx["t_typed"]]["has_workspace"])
        specs = self.h.workspaces(self.idx["t_typed"], decode_kwargs(**RAGGED))
        # query [3, 4, 8], max_context_len 9, partition 4: 3 splits; kvh_dtype f32 4, bf16 2, i32 5
        self.assertEqual(specs, [("segm_max", 4, [3, 4, 3]), ("segm_expsum", 4, [3, 4, 3]),
                                 ("segm_output", 2, [3, 4, 3, 8]), ("counts", 5, [3])])
        self.assertEqual(self.h.workspaces(self.idx["t_static"], decode_kwargs()), [("scratch", 3, [2, 3])])

    def test_the_reader_gets_them_as_a_dict_and_by_name(self):
        i = self.idx["t_typed"]
        self.h.workspaces(i, decode_kwargs(**RAGGED))
        counts = torch.zeros(3, dtype=torch.int32)
        ws = [torch.full((3, 4, 3), float("nan")), torch.full((3, 4, 3), float("nan")),
              torch.zeros(3, 4, 3, 8, dtype=torch.bfloat16), counts]
        kw = decode_kwargs(**RAGGED)
        kw["workspaces"] = [torch.utils.dlpack.to_dlpack(t) for t in ws]
        self.assertIsNone(self.h.call(i, kw, 0))
        self.assertEqual(self.mod.SEEN["typed"], {
            "segm_max": ("torch.float32", (3, 4, 3)), "segm_expsum": ("torch.float32", (3, 4, 3)),
            "segm_output": ("torch.bfloat16", (3, 4, 3, 8)), "counts": ("torch.int32", (3,))})
        self.assertTrue(self.mod.SEEN["by_name"])
        self.assertEqual(counts.tolist(), [7, 7, 7])  # in place, on the harness's buffer

    def test_names_follow_the_call_when_another_sizing_came_last(self):
        i = self.idx["t_typed"]
        self.h.workspaces(i, decode_kwargs(partition_size=1))  # the latest sizing had 9 splits
        ws = [torch.zeros(3, 4, 3), torch.zeros(3, 4, 3), torch.zeros(3, 4, 3, 8, dtype=torch.bfloat16),
              torch.zeros(3, dtype=torch.int32)]
        kw = decode_kwargs(**RAGGED)
        kw["workspaces"] = [torch.utils.dlpack.to_dlpack(t) for t in ws]
        self.assertIsNone(self.h.call(i, kw, 0))
        self.assertEqual(sorted(self.mod.SEEN["typed"]), ["counts", "segm_expsum", "segm_max", "segm_output"])

    def test_workspaces_that_do_not_match_the_declaration_are_an_error(self):
        i = self.idx["t_typed"]
        kw = decode_kwargs(**RAGGED)
        kw["workspaces"] = []  # a harness older than 0.4 passes none
        msg = self.h.call(i, kw, 0)
        self.assertIn("RuntimeError: reader 't_typed': declares typed workspaces", msg)
        self.assertIn("harness older than kvharness 0.4", msg)

    def test_a_bad_declaration_names_the_reader_and_the_entry(self):
        msg = self.h.workspaces(self.idx["t_bad_dtype"], decode_kwargs())
        self.assertIsInstance(msg, str)
        self.assertIn("ValueError: reader 't_bad_dtype': workspaces entry 1 ('segm_max'): dtype 'float8'", msg)
        self.assertTrue(msg.endswith(f"{self.path}:{self.line('def bad_dtype')})"), msg)  # the declaration
        msg = self.h.workspaces(self.idx["t_raises"], decode_kwargs())
        self.assertIn("ZeroDivisionError", msg)

    def line(self, text):
        with open(self.path) as f:
            return next(n for n, line in enumerate(f, 1) if text in line)

    def test_bad_static_declarations_raise_at_import(self):
        long = "x" * 32
        for ws, text in (
                ([("a", (4,), "float8")], "entry 0 ('a'): dtype 'float8'"),
                ([("a", (4,), "float32"), ("b", (2, -1), "float32")], "entry 1 ('b'): shape (2, -1)"),
                ([("w%d" % i, 1, "float32") for i in range(9)], "9 entries, at most 8"),
                ([(long, 1, "float32")], "name of 32 bytes; at most 31"),
                ([("é" * 16, 1, "float32")], "name of 32 bytes"),             # UTF-8 bytes, not characters
                ([("a", (), "float32")], "0 dims"),
                ([("a", (1,) * 7, "float32")], "7 dims"),
                ([("a", 1, "float32"), ("a", 2, "int32")], "entry 1 ('a'): the name is used twice"),
                ([("out", 1, "float32")], "the name is a reader argument"),
                ([("a", (2.0,), "float32")], "expected ints"),
                ([("a", 1)], "expected a (name, shape, dtype)"),
                ([("", 1, "float32")], "non-empty str"),
                ("segm_max", "expected a list"),
                (42, "expected a list")):
            with self.assertRaises((ValueError, TypeError), msg=text) as e:
                kvharness.reader("t_bad_ws", cache_format="flash", workspaces=ws)(lambda **kw: None)
            self.assertIn("reader 't_bad_ws': workspaces", str(e.exception))
            self.assertIn(text, str(e.exception))
        self.assertEqual(kvharness.workspace_specs("t", [("x" * 31, (0, 5), torch.int64)]), [("x" * 31, 3, (0, 5))])
        with self.assertRaises(ValueError) as e:
            kvharness.reader("t_both", cache_format="flash", workspace_bytes=lambda **kw: 1,
                             workspaces=[("a", 1, "float32")])(lambda **kw: None)
        self.assertIn("not both", str(e.exception))


class TritonModule(unittest.TestCase):
    def test_without_triton_the_import_fails_naming_it_and_registers_nothing(self):
        try:
            import triton  # noqa: F401
        except ImportError:
            pass
        else:
            self.skipTest("triton is installed")
        n = len(kvharness._KERNELS)
        with self.assertRaises(ImportError) as e:
            import kvharness_triton  # noqa: F401
        self.assertEqual(e.exception.name, "triton")
        self.assertEqual(len(kvharness._KERNELS), n)


# ---- torch_unified_attention_* against a float64 brute force on ragged batches ----


def brute_force(query, seqs, starts, scale, causal, window=0, softcap=0.0, sinks=None, alibi=None, group=1):
    """float64, one query token, one head and one key at a time, from provider.h's definition.
    seqs[s] = (K, V) [L_s, num_kv_heads, head_size]; query rows starts[s] .. starts[s + 1]."""
    out = torch.zeros(query.shape, dtype=torch.float64)
    for s, (k, v) in enumerate(seqs):
        L, n_q = k.shape[0], starts[s + 1] - starts[s]
        k, v = k.double(), v.double()
        for j in range(n_q):
            row = starts[s] + j
            p = L - n_q + j
            seen = [t for t in range(L) if (not causal or t <= p) and (window == 0 or t > p - window)]
            for h in range(query.shape[1]):
                kv = h // group
                logits = []
                for t in seen:
                    x = float(k[t, kv] @ query[row, h].double()) * scale
                    if softcap > 0:
                        x = softcap * math.tanh(x / softcap)
                    if alibi is not None:
                        x += float(alibi[h]) * (t - p)
                    logits.append(x)
                top = max(logits + ([float(sinks[h])] if sinks is not None else []))
                w = [math.exp(x - top) for x in logits]
                denom = sum(w) + (math.exp(float(sinks[h]) - top) if sinks is not None else 0.0)
                out[row, h] = sum(wt * v[t, kv] for wt, t in zip(w, seen)) / denom
    return out


class RaggedTorchReaders(unittest.TestCase):
    NH, NKV, D, BS, NB = 12, 2, 16, 16, 24  # GQA 6:1 over 2 kv heads
    Q_LENS = [1, 3, 9, 40, 1, 5, 2, 7]      # a chunk of 40 among speculative/decode steps
    CTX = [0, 11, 30, 23, 64, 0, 17, 2]     # tokens before the new ones (0: the whole sequence is new)

    @classmethod
    def setUpClass(cls):
        g = torch.Generator().manual_seed(7)
        cls.lens = [q + c for q, c in zip(cls.Q_LENS, cls.CTX)]
        cls.starts = [0]
        for q in cls.Q_LENS:
            cls.starts.append(cls.starts[-1] + q)
        T = cls.starts[-1]
        cls.seqs = [(torch.randn(L, cls.NKV, cls.D, generator=g).half(),
                     torch.randn(L, cls.NKV, cls.D, generator=g).half()) for L in cls.lens]
        fused = torch.randn(T, (cls.NH + 2) * cls.D + 8, generator=g).half()  # a view of a fused QKV buffer
        cls.query = fused[:, :cls.NH * cls.D].view(T, cls.NH, cls.D)
        blocks = [-(-L // cls.BS) for L in cls.lens]
        ids = torch.randperm(cls.NB - 1, generator=g)[:sum(blocks)] + 1
        cls.tables = torch.zeros(len(cls.lens), max(blocks) + 1, dtype=torch.int32)  # + a padding column
        slots, at = [], 0
        for s, L in enumerate(cls.lens):
            cls.tables[s, :blocks[s]] = ids[at:at + blocks[s]].int()
            at += blocks[s]
            slots += [int(cls.tables[s, t // cls.BS]) * cls.BS + t % cls.BS for t in range(L)]
        cls.slots = torch.tensor(slots)
        cls.sinks = torch.rand(cls.NH, generator=g) * 3 - 1
        cls.alibi = torch.tensor([2.0 ** (-8.0 * (h + 1) / cls.NH) for h in range(cls.NH)])
        cls.refs = {}

    def caches(self, fmt):
        page = (self.BS, self.NKV, self.D) if fmt == "flash" else (self.NKV, self.BS, self.D)
        _, kc, vc = interleaved(self.NB, page, page)
        write = kt.reshape_and_cache_flash if fmt == "flash" else kt.reshape_and_cache_flash_hnd
        write(torch.cat([k for k, _ in self.seqs]), torch.cat([v for _, v in self.seqs]), kc, vc, self.slots, self.BS)
        return kc, vc

    def args(self, kc, vc, causal, mods, q_lens=None):
        starts = self.starts
        return dict(query=self.query, key_cache=kc, value_cache=vc, block_tables=self.tables,
                    context_lens=torch.tensor(self.lens, dtype=torch.int32), block_size=self.BS,
                    max_context_len=max(self.lens), scale=self.D ** -0.5, k_scale=1.0, v_scale=1.0, partition_size=0,
                    workspace=None, query_start_loc=torch.tensor(starts, dtype=torch.int32),
                    seq_lens=torch.tensor(self.lens, dtype=torch.int32), max_query_len=max(self.Q_LENS),
                    num_query_tokens=starts[-1], causal=causal, sliding_window=mods.get("window", 0),
                    softcap=mods.get("softcap", 0.0), head_offset=0,
                    sinks=self.sinks if mods.get("sinks") else None,
                    alibi_slopes=self.alibi if mods.get("alibi") else None)

    def reference(self, causal, mods):
        key = (causal, tuple(sorted(mods.items())))
        if key not in self.refs:
            self.refs[key] = brute_force(self.query, self.seqs, self.starts, self.D ** -0.5, causal,
                                         window=mods.get("window", 0), softcap=mods.get("softcap", 0.0),
                                         sinks=self.sinks if mods.get("sinks") else None,
                                         alibi=self.alibi if mods.get("alibi") else None, group=self.NH // self.NKV)
        return self.refs[key]

    def run_reader(self, fn, fmt, causal, mods):
        kc, vc = self.caches(fmt)
        out_buf = torch.full((self.starts[-1], self.NH + 1, self.D), float("nan")).half()
        out = out_buf[:, 1:]  # strided, offset
        fn(out=out, **self.args(kc, vc, causal, mods))
        self.assertTrue(torch.isnan(out_buf[:, 0]).all(), "wrote outside out")
        return out

    def mismatches(self, out, ref):
        """(token, head) pairs off tolerance (the harness's fp16 bound, |d| <= 2e-3 + 5e-3 |ref|)."""
        bad = ~((out.double() - ref).abs() <= 2e-3 + 5e-3 * ref.abs())
        return sorted({(int(t), int(h)) for t, h, _ in bad.nonzero().tolist()})

    MODS = ({}, {"window": 7}, {"alibi": True}, {"softcap": 2.0}, {"sinks": True},
            {"window": 5, "alibi": True, "softcap": 3.0, "sinks": True})

    def test_long_chunks_are_scored_a_few_rows_at_a_time(self):
        from unittest import mock
        mods = {"window": 5, "alibi": True, "softcap": 3.0, "sinks": True}
        with mock.patch.object(kt, "_SCORE_ELEMENTS", 1000):  # 1 row of the 40-token chunk at a time
            out = self.run_reader(kt.unified_attention_nhd, "flash", True, mods)
        self.assertEqual(self.mismatches(out, self.reference(True, mods)), [])

    def test_nhd_and_hnd_match_the_brute_force(self):
        for fmt, fn in (("flash", kt.unified_attention_nhd), ("hnd", kt.unified_attention_hnd)):
            for causal in (True, False):
                for mods in self.MODS:
                    with self.subTest(fmt=fmt, causal=causal, **mods):
                        out = self.run_reader(fn, fmt, causal, mods)
                        self.assertEqual(self.mismatches(out, self.reference(causal, mods)), [])

    def test_through_the_bridge_with_capsules(self):
        h, err = _bridge.load("kvharness_torch", _bridge.DEVICE_CPU, 0)
        self.assertIsNone(err)
        names = [k["name"] for k in h.kernels]
        i = names.index("torch_unified_attention_nhd")
        self.assertEqual(h.kernels[i]["max_query_len"], kvharness.ANY_QUERY_LEN)
        self.assertEqual(h.kernels[i]["modifiers_mask"], 1 | 2 | 4 | 8 | 16)
        self.assertEqual(h.kernels[names.index("torch_paged_attention_nhd")]["max_query_len"], 1)  # decode only
        kc, vc = self.caches("flash")
        mods = {"window": 5, "alibi": True, "softcap": 3.0, "sinks": True}
        out = torch.full((self.starts[-1], self.NH, self.D), float("nan")).half()
        self.assertIsNone(h.call(i, capsules(out=out, **self.args(kc, vc, True, mods)), 0))
        self.assertEqual(self.mismatches(out, self.reference(True, mods)), [])

    def test_a_decode_call_without_the_ragged_arguments(self):
        # What a harness before 0.4 passes: one token per sequence, no query_start_loc/seq_lens.
        kc, vc = self.caches("flash")
        last = [s - 1 for s in self.starts[1:]]
        query = self.query[last]
        args = self.args(kc, vc, True, {})
        for k in ("query_start_loc", "seq_lens", "causal", "max_query_len", "num_query_tokens"):
            del args[k]
        args["query"] = query
        out = torch.full(query.shape, float("nan")).half()
        kt.unified_attention_nhd(out=out, **args)
        ref = self.reference(True, {})[last]
        self.assertEqual(self.mismatches(out, ref), [])

    def test_the_check_catches_a_causal_mask_off_by_one(self):
        planted = kvharness_planted.ragged_causal_off_by_one
        bad = self.mismatches(self.run_reader(planted, "flash", True, {}), self.reference(True, {}))
        # Wrong on every token of a causal chunk but the last of each sequence, right everywhere else.
        wrong_tokens = {t for t, _ in bad}
        expect = {self.starts[s] + j for s, q in enumerate(self.Q_LENS) for j in range(q - 1)}
        self.assertEqual(wrong_tokens, expect)
        self.assertEqual(self.mismatches(self.run_reader(planted, "flash", False, {}), self.reference(False, {})), [])


# ---- issue 23 (D launch configurations) ----
class LaunchConfigs(unittest.TestCase):
    """reader()/writer() configs=[...]: checked at import, handed to the bridge as (name, params),
    and a call naming one gets that configuration's keyword arguments."""

    def test_declarations_become_names_and_params(self):
        @kvharness.reader("t_cfg", cache_format="shuffle",
                          configs=[dict(num_warps=2), dict(name="w4s2", num_warps=4, num_stages=2, BLOCK_N=64)],
                          workspace_bytes=lambda block_size, num_warps=8, **kw: block_size * num_warps)
        def f(out, block_size, num_warps=8, num_stages=1, BLOCK_N=32):
            out.fill_(num_warps * 100 + num_stages * 10 + BLOCK_N // 32)
        k = kvharness._KERNELS[-1]
        self.assertEqual([(n, p) for n, p, _ in k.launch_configs],
                         [("num_warps2", "num_warps=2"), ("w4s2", "num_warps=4,num_stages=2,BLOCK_N=64")])
        h = _bridge.Handle([k], _bridge.DEVICE_CPU, 0)
        self.assertEqual(h.kernels[0]["launch_configs"], [("num_warps2", "num_warps=2"),
                                                          ("w4s2", "num_warps=4,num_stages=2,BLOCK_N=64")])
        out = torch.full((2,), -1.0)
        for config, want in ((None, 811.0), ("num_warps2", 211.0), ("w4s2", 422.0)):
            kw = capsules(out=out, block_size=16)
            if config:
                kw["launch_config"] = config
            self.assertIsNone(h.call(0, kw, 0))
            self.assertEqual(out.tolist(), [want, want], config)
        # The workspace function gets the keywords it takes.
        self.assertEqual(h.workspace_bytes(0, {"block_size": 16, "launch_config": "num_warps2"}), 32)
        self.assertEqual(h.workspace_bytes(0, {"block_size": 16}), 128)
        msg = h.call(0, dict(capsules(out=out, block_size=16), launch_config="w8"), 0)
        self.assertIn("launch configuration 'w8' is not one the kernel declares (num_warps2, w4s2)", msg)

    def test_a_kernel_without_configs_declares_none(self):
        kvharness.writer("t_nocfg", cache_format="flash")(lambda **kw: None)
        self.assertIsNone(kvharness._KERNELS[-1].launch_configs)
        h = _bridge.Handle([kvharness._KERNELS[-1]], _bridge.DEVICE_CPU, 0)
        self.assertEqual(h.kernels[0]["launch_configs"], [])

    def test_bad_declarations_raise_at_import(self):
        def fn(out, num_warps=8):
            pass
        for configs, err, needle in (
                (dict(num_warps=2), TypeError, "expected a non-empty list of dicts"),
                ([], TypeError, "expected a non-empty list of dicts"),
                ([{}], TypeError, "configs[0]: {}; expected a non-empty dict"),
                ([dict(num_warps=2), dict(num_warps=2)], ValueError, "the name 'num_warps2' is used twice"),
                ([dict(block_size=16)], ValueError, "'block_size': the harness passes that argument itself"),
                ([dict(num_stages=2)], TypeError, "'num_stages': the function does not take that keyword"),
                ([{"num-warps": 2}], ValueError, "a keyword must be an identifier"),
                ([dict(num_warps="2,4")], TypeError, "expected an int, float, bool or a non-empty str without ','"),
                ([dict(num_warps=[2])], TypeError, "value [2]"),
                ([dict(num_warps="two warps")], ValueError, "name 'num_warpstwo warps'; expected 1..64 characters"),
                ([dict(name="w 2", num_warps=2)], ValueError, "name 'w 2'")):
            with self.assertRaises(err, msg=repr(configs)) as cm:
                kvharness.reader("t_badcfg", cache_format="shuffle", configs=configs)(fn)
            self.assertIn("kernel 't_badcfg': configs", str(cm.exception))
            self.assertIn(needle, str(cm.exception))
        with self.assertRaises(ValueError) as cm:
            kvharness.writer("t_badcfg_w", cache_format="flash", configs=[dict(slot_mapping=1)])(lambda **kw: None)
        self.assertIn("the harness passes that argument itself", str(cm.exception))
# ---- end issue 23 (D launch configurations) ----


if __name__ == "__main__":
    unittest.main()
