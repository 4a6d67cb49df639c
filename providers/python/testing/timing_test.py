#!/usr/bin/env python3
"""The bridge's provider timing (Handle.time, kvharness/_timing.py: kvh_kernel_desc.time), without the harness.

Run: python3 providers/python/testing/timing_test.py
  cpu (CI): method host_clock, kernel_us == host_us > 0; warmup + reps calls; a kernel that raises
            gives its error text, naming the provider line.
  gpu (skipped without CUDA and triton; run it on the GPU machine):
            a Triton writer is timed by graph replay and agrees with triton.testing.do_bench_cudagraph
            within 20%; a kernel that synchronizes cannot be captured: events_batch, and the process
            and stream stay usable (the next capture works, the kernel's output is right).
"""

import os
import sys
import unittest

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import kvharness  # noqa: E402
from kvharness import _bridge, _timing  # noqa: E402
import kvharness_torch  # noqa: E402

CUDA = torch.cuda.is_available()
try:
    import triton  # noqa: F401
    import triton.testing

    TRITON = True
except ImportError:
    TRITON = False

_calls = [0]


@kvharness.writer("planted_timing_counter", cache_format="flash")
def counter(key, value, key_cache, value_cache, slot_mapping, block_size):
    _calls[0] += 1
    kvharness_torch.reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, block_size)


@kvharness.writer("planted_timing_raises", cache_format="flash")
def raises(key, value, key_cache, value_cache, slot_mapping, block_size):
    raise ValueError("no timing for you")


@kvharness.writer("planted_timing_capturable", cache_format="flash")
def capturable(key, value, key_cache, value_cache, slot_mapping, block_size):
    """No padding slots, contiguous caches: index_copy_ needs no host synchronization."""
    n, h, d = key_cache.shape[0] * key_cache.shape[1], key.shape[1], key.shape[2]
    key_cache.view(n, h, d).index_copy_(0, slot_mapping, key)
    value_cache.view(n, h, d).index_copy_(0, slot_mapping, value)


@kvharness.writer("planted_timing_syncs", cache_format="flash")
def syncs(key, value, key_cache, value_cache, slot_mapping, block_size):
    kvharness_torch.reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, block_size)
    torch.cuda.synchronize()  # not allowed while capturing: the bridge falls back to events


def handle(name, device):
    k = [k for k in kvharness._KERNELS if k.name == name]
    return _bridge.Handle(k, _bridge.DEVICE_CPU if device == "cpu" else _bridge.DEVICE_CUDA, 0)


def nhd_write(device, tokens=512, kv_heads=4, head_size=128, block_size=16, dtype=torch.bfloat16):
    """make_kwargs() for an NHD write: key/value views of a fused buffer, a cache with room to spare."""
    buf = torch.randn(tokens, 3 * kv_heads * head_size, dtype=dtype, device=device)
    key = buf[:, : kv_heads * head_size].view(tokens, kv_heads, head_size)
    value = buf[:, kv_heads * head_size: 2 * kv_heads * head_size].view(tokens, kv_heads, head_size)
    blocks = 2 * tokens // block_size + 3
    kc = torch.zeros(blocks, block_size, kv_heads, head_size, dtype=dtype, device=device)
    vc = torch.zeros_like(kc)
    slots = torch.randperm(blocks * block_size, device=device)[:tokens].to(torch.int64)
    kw = dict(key=key, value=value, key_cache=kc, value_cache=vc, slot_mapping=slots, block_size=block_size)
    return (lambda: dict(kw)), kw


class Cpu(unittest.TestCase):
    def test_host_clock_counts_calls_and_reports_both_numbers(self):
        make, _ = nhd_write("cpu", tokens=32)
        _calls[0] = 0
        r = handle("planted_timing_counter", "cpu").time(0, make, 0, 2, 5)
        self.assertIsInstance(r, tuple, r)
        kernel_us, host_us, method = r
        self.assertEqual(method, _timing.HOST)
        self.assertGreater(kernel_us, 0)
        self.assertEqual(kernel_us, host_us)
        self.assertEqual(_calls[0], 2 + 5)

    def test_a_raising_kernel_gives_its_error_text(self):
        make, _ = nhd_write("cpu", tokens=8)
        r = handle("planted_timing_raises", "cpu").time(0, make, 0, 1, 3)
        self.assertIsInstance(r, str)
        self.assertIn("ValueError: no timing for you", r)
        self.assertIn("timing_test.py:", r)


@unittest.skipUnless(CUDA and TRITON, "needs a GPU and triton")
class Gpu(unittest.TestCase):
    def test_graph_replay_agrees_with_do_bench_cudagraph(self):
        import kvharness_triton  # noqa: F401  (registers triton_reshape_and_cache)

        make, kw = nhd_write("cuda")
        x = 8
        t, h, d = kw["key"].shape
        blocks, bs = kw["key_cache"].shape[:2]
        kc = torch.zeros(blocks, h, d // x, bs, x, dtype=kw["key"].dtype, device="cuda")
        vc = torch.zeros(blocks, h, d, bs, dtype=kw["key"].dtype, device="cuda")
        kw = dict(kw, key_cache=kc, value_cache=vc)
        r = handle("triton_reshape_and_cache", "cuda").time(0, lambda: dict(kw), 0, 3, 50)
        self.assertIsInstance(r, tuple, r)
        kernel_us, host_us, method = r
        fn = kvharness_triton.triton_reshape_and_cache
        bench_us = triton.testing.do_bench_cudagraph(lambda: fn(**kw), rep=200, return_mode="median") * 1000
        print(f"\ntriton_reshape_and_cache T={t}: kernel_us {kernel_us:.2f} (method {method}), "
              f"do_bench_cudagraph {bench_us:.2f} us, host_us {host_us:.1f}, ratio {kernel_us / bench_us:.3f}")
        self.assertEqual(method, _timing.GRAPH)
        self.assertLess(abs(kernel_us / bench_us - 1), 0.2)
        self.assertGreater(host_us, kernel_us)  # the launcher costs more than a 512-token write

    def test_a_kernel_that_synchronizes_falls_back_to_events_and_leaves_the_stream_usable(self):
        make, kw = nhd_write("cuda")
        r = handle("planted_timing_syncs", "cuda").time(0, make, 0, 2, 20)
        self.assertIsInstance(r, tuple, r)
        self.assertEqual(r[2], _timing.EVENTS_BATCH, r)
        self.assertGreater(r[0], 0)
        self.assertFalse(torch.cuda.is_current_stream_capturing())
        # The stream and the process still work: capture another kernel, and check what it wrote.
        make2, kw2 = nhd_write("cuda")
        r2 = handle("planted_timing_capturable", "cuda").time(0, make2, 0, 1, 10)
        self.assertIsInstance(r2, tuple, r2)
        self.assertEqual(r2[2], _timing.GRAPH, r2)
        torch.cuda.synchronize()
        slots = kw2["slot_mapping"]
        bs = kw2["block_size"]
        got = kw2["key_cache"][slots // bs, slots % bs]
        self.assertTrue(torch.equal(got, kw2["key"]))
        print(f"\nsynchronizing kernel: {r[0]:.2f} us by events_batch, host_us {r[1]:.1f}; "
              f"then a capture: {r2[0]:.2f} us by graph, host_us {r2[1]:.1f}")


if __name__ == "__main__":
    unittest.main(verbosity=2)
