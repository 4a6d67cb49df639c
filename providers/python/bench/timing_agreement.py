#!/usr/bin/env python3
"""Does a Python provider's kernel_us measure the device? (GPU only; kvharness 0.5 provider timing.)

  python3 providers/python/bench/timing_agreement.py [--kvharness build/cuda/harness/kvharness]
          [--out DIR] [--reps 50] [--tolerance 0.2] [--direct]

Runs a few cases of the Triton provider (providers/python/kvharness_triton.py) through
`kvharness run` (the bridge times each PASS: kernel_us, host_us, timing_method in results.json),
then, in this process, calls the same Triton kernel on tensors of the same shapes (the case's
heads, head size, block size, tokens or per-sequence context lengths from results.json; K/V and
the query as views of a fused QKV buffer, as the harness passes them) and measures its device
time independently twice:
  do_bench   triton.testing.do_bench_cudagraph, median
  profiler   torch.profiler: the device kernels' own durations, per call (sum over the call's kernels)
--direct skips `kvharness run`: the same shapes (reader context lengths spread over the range) are
timed by the bridge's timing code (kvharness/_timing.py through _bridge.Handle, as libkvh_python
calls it) in this process, for a GPU machine without a cuda build.
Prints one row per kernel: kernel_us, the two independent times, host_us, the method and
kernel_us over each independent time. The two bracket the device time (the profiler leaves out the
gaps between a call's kernels, do_bench_cudagraph keeps some launch cost of its own graph), so a
row agrees when kernel_us lies within 1 +- tolerance of either. Exit 0 when every row agrees, 1 when one does not,
2 when the run itself failed (no GPU, no triton, kvharness missing), 125 when nothing ran.
The bridge is found as `kvharness` finds it ($KVH_PYTHON_BRIDGE for a standalone build:
docs/backends.md "cuda"). Runs unattended; everything it writes goes under --out.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PROVIDERS = os.path.dirname(HERE)  # providers/python: kvharness_triton.py and the kvharness package

# Shapes of the measurement (a 512-token write), and decode readers at two context lengths.
CASES = """seeds = [1]
[[write]]
models = ["Qwen3-235B-A22B"]
tp = 1
layouts = ["separate"]
head_sizes = [128]
num_tokens = [16, 512]
block_sizes = [16]
dtypes = ["bf16"]
writers = ["triton_reshape_and_cache", "triton_reshape_and_cache_shuffle"]

[[attention]]
models = ["Qwen3-235B-A22B"]
tp = 1
layouts = ["separate"]
head_sizes = [128]
batch_sizes = [16]
context_lens = [1024, 4096]
block_sizes = [16]
dtypes = ["bf16"]
readers = ["triton_paged_attention_v1", "triton_paged_attention_shuffle"]
"""


def run_harness(args):
    """`kvharness run` on CASES; returns results.json's cases."""
    os.makedirs(args.out, exist_ok=True)
    case_file = os.path.join(args.out, "timing_agreement.toml")
    with open(case_file, "w") as f:
        f.write(CASES)
    report = os.path.join(args.out, "report")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (PROVIDERS, os.environ.get("PYTHONPATH")) if p))
    cmd = [args.kvharness, "run", case_file, "--provider", "python:kvharness_triton", "--report-dir", report,
           "--no-progress", "--timing-reps", str(args.reps)]
    print("$ " + " ".join(cmd), flush=True)
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    sys.stdout.write(p.stdout[-3000:])
    sys.stderr.write(p.stderr[-3000:])
    if p.returncode not in (0, 1):
        sys.exit(2)
    with open(os.path.join(report, "results.json")) as f:
        return json.load(f)["cases"]


def fused_qkv(torch, rows, num_heads, num_kv_heads, head_size, dtype):
    """query, key, value [rows, heads, head_size]: views of one fused QKV buffer (non-contiguous rows)."""
    width = (num_heads + 2 * num_kv_heads) * head_size
    buf = torch.randn(rows, width, dtype=dtype, device="cuda")
    q = buf[:, : num_heads * head_size].view(rows, num_heads, head_size)
    k = buf[:, num_heads * head_size: (num_heads + num_kv_heads) * head_size].view(rows, num_kv_heads, head_size)
    v = buf[:, (num_heads + num_kv_heads) * head_size:].view(rows, num_kv_heads, head_size)
    return q, k, v


def caches(torch, fmt, num_blocks, num_kv_heads, head_size, block_size, dtype):
    """key_cache, value_cache in format `fmt` (pa_v1 or shuffle), random, contiguous (layout "separate")."""
    x = 16 // torch.empty((), dtype=dtype).element_size()
    kc = torch.randn(num_blocks, num_kv_heads, head_size // x, block_size, x, dtype=dtype, device="cuda")
    if fmt == "pa_v1":
        vc = torch.randn(num_blocks, num_kv_heads, head_size, block_size, dtype=dtype, device="cuda")
    else:
        vc = torch.randn(num_blocks, num_kv_heads, block_size // x, head_size, x, dtype=dtype, device="cuda")
    return kc, vc


def writer_call(torch, kt, c):
    """(fn, kwargs): fn() calls writer c["writer"] with kwargs, a case of c's shapes."""
    T, KV, D, BS = c["batch_size"], c["num_kv_heads"], c["head_size"], c["block_size"]
    dtype = getattr(torch, {"fp16": "float16", "bf16": "bfloat16"}[c["dtype"]])
    _, k, v = fused_qkv(torch, T, c["num_heads"], KV, D, dtype)
    num_blocks = 2 * ((T + BS - 1) // BS) + 3
    fmt = "pa_v1" if c["writer"] == "triton_reshape_and_cache" else "shuffle"
    kc, vc = caches(torch, fmt, num_blocks, KV, D, BS, dtype)
    slots = torch.randperm(num_blocks * BS, device="cuda")[:T].to(torch.int64)
    kw = dict(key=k, value=v, key_cache=kc, value_cache=vc, slot_mapping=slots, block_size=BS)
    fn = getattr(kt, c["writer"])
    return (lambda: fn(**kw)), kw


def reader_call(torch, kt, c):
    """(fn, kwargs): fn() calls reader c["reader"] with kwargs, a case of c's shapes and context lengths."""
    lens = c["context_lens"]
    S, H, KV, D, BS = len(lens), c["num_heads"], c["num_kv_heads"], c["head_size"], c["block_size"]
    dtype = getattr(torch, {"fp16": "float16", "bf16": "bfloat16"}[c["dtype"]])
    q, _, _ = fused_qkv(torch, S, H, KV, D, dtype)
    pages = [(n + BS - 1) // BS for n in lens]
    num_blocks = sum(pages) + 3
    fmt = "pa_v1" if c["reader"] == "triton_paged_attention_v1" else "shuffle"
    kc, vc = caches(torch, fmt, num_blocks, KV, D, BS, dtype)
    perm = torch.randperm(num_blocks, device="cuda").to(torch.int32)
    tables = torch.zeros(S, max(pages), dtype=torch.int32, device="cuda")
    at = 0
    for s, n in enumerate(pages):
        tables[s, :n] = perm[at: at + n]
        at += n
    context_lens = torch.tensor(lens, dtype=torch.int32, device="cuda")
    out = torch.empty(S, H, D, dtype=dtype, device="cuda")
    max_len = max(lens)
    ws = torch.empty(kt._workspace_bytes(query=q, max_context_len=max_len, partition_size=0), dtype=torch.uint8,
                     device="cuda")
    kw = dict(out=out, query=q, key_cache=kc, value_cache=vc, block_tables=tables, context_lens=context_lens,
              block_size=BS, max_context_len=max_len, scale=D ** -0.5, k_scale=1.0, v_scale=1.0, partition_size=0,
              workspace=ws)
    fn = getattr(kt, c["reader"])
    return (lambda: fn(**kw)), kw


def direct_cases(args):
    """--direct: CASES' shapes timed by the bridge's own timing (kvharness._timing through _bridge.Handle,
    as libkvh_python calls it) in this process: results.json-like entries, no kvharness build needed."""
    import kvharness
    from kvharness import _bridge

    import kvharness_triton as kt

    H, KV, D, BS = 64, 4, 128, 16
    specs = [dict(kind="write", writer=w, batch_size=t) for w in ("triton_reshape_and_cache",
             "triton_reshape_and_cache_shuffle") for t in (16, 512)]
    specs += [dict(kind="attention", reader=r, batch_size=16,
                   context_lens=[lo + (hi - lo) * i // 15 for i in range(16)])
              for r in ("triton_paged_attention_v1", "triton_paged_attention_shuffle") for lo, hi in ((1, 1024), (1024, 4096))]
    cases = []
    for c in specs:
        c.update(num_heads=H, num_kv_heads=KV, head_size=D, block_size=BS, dtype="bf16", verdict="PASS", detail=None)
        import torch
        _, kw = writer_call(torch, kt, c) if c["kind"] == "write" else reader_call(torch, kt, c)
        name = c.get("writer") or c.get("reader")
        handle = _bridge.Handle([k for k in kvharness._KERNELS if k.name == name], _bridge.DEVICE_CUDA, 0)
        r = handle.time(0, lambda: dict(kw), 0, 3, args.reps)
        if isinstance(r, str):
            c.update(verdict="CRASH", detail=r, kernel_us=None)
        else:
            c.update(kernel_us=r[0], host_us=r[1], timing_method={1: "graph", 2: "events_batch", 3: "host_clock"}[r[2]])
        cases.append(c)
    return cases


def profiler_us(torch, fn, calls=50):
    """Device µs per call from torch.profiler's kernel records (the sum of the call's kernels)."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    total = 0.0
    for e in prof.events():
        dt = getattr(e, "device_type", None)
        if dt is not None and str(dt).endswith("CUDA"):
            total += getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0.0)
    return total / calls


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kvharness", default="build/cuda/harness/kvharness")
    ap.add_argument("--out", default="/tmp/kvh-timing-agreement")
    ap.add_argument("--reps", type=int, default=50, help="--timing-reps of the harness run")
    ap.add_argument("--tolerance", type=float, default=0.2,
                    help="largest |kernel_us / independent - 1| (of do_bench or the profiler, the closer)")
    ap.add_argument("--direct", action="store_true",
                    help="no kvharness run: the bridge's timing (kvharness/_timing.py) called in this process")
    args = ap.parse_args()
    try:
        import torch
        import triton.testing
    except ImportError as e:
        print(f"timing_agreement: needs torch and triton: {e}")
        return 2
    if not torch.cuda.is_available():
        print("timing_agreement: no GPU (torch.cuda.is_available() is False)")
        return 2
    sys.path.insert(0, PROVIDERS)
    if args.direct:
        cases = direct_cases(args)
    elif not os.access(args.kvharness, os.X_OK):
        print(f"timing_agreement: {args.kvharness} not found: build the cuda preset (docs/backends.md), or --direct")
        return 2
    else:
        cases = run_harness(args)
    import kvharness_triton as kt

    rows, bad = [], 0
    for c in cases:
        name = c["writer"] if c["kind"] == "write" else c["reader"]
        shape = (f"T={c['batch_size']}" if c["kind"] == "write" else
                 f"S={c['batch_size']} ctx<={max(c['context_lens'] or [0])}")
        shape += f" H={c['num_heads']}/{c['num_kv_heads']} D={c['head_size']} bs={c['block_size']}"
        if c["verdict"] != "PASS" or c.get("kernel_us") is None:
            rows.append((name, shape, c["verdict"], "", "", "", "", "", "", (c.get("detail") or "")[:80]))
            bad += 1
            continue
        fn, _ = writer_call(torch, kt, c) if c["kind"] == "write" else reader_call(torch, kt, c)
        bench_us = triton.testing.do_bench_cudagraph(fn, rep=200, return_mode="median") * 1000.0
        prof_us = profiler_us(torch, fn)
        # The two independent numbers bracket the call's device time: the profiler sums the kernels' own
        # durations (no gap between a reader's two kernels), do_bench_cudagraph keeps some of its graph's
        # launch cost (H200: 2.1 us against the profiler's 1.4 for a 16-token write). Agreement with either.
        r_bench, r_prof = c["kernel_us"] / bench_us, c["kernel_us"] / prof_us
        ok = min(abs(r_bench - 1), abs(r_prof - 1)) <= args.tolerance
        bad += not ok
        rows.append((name, shape, "PASS", f"{c['kernel_us']:.2f}", f"{bench_us:.2f}", f"{prof_us:.2f}",
                     f"{c['host_us']:.1f}" if c.get("host_us") else "-", c.get("timing_method") or "-",
                     f"{r_bench:.3f}", f"{r_prof:.3f}" + ("" if ok else " OUTSIDE")))
    head = ("kernel", "case", "verdict", "kernel_us", "do_bench_us", "profiler_us", "host_us", "method",
            "/do_bench", "/profiler")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(len(head))]
    print()
    for r in [head] + rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)))
    print(f"\n{len(rows)} cases; {bad} outside 1 +- {args.tolerance} or not timed")
    if not rows:
        return 125
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
