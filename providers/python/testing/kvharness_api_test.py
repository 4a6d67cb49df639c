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


if __name__ == "__main__":
    unittest.main()
