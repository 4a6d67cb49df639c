#!/usr/bin/env python3
"""kvharness.stacks.aiter and @kvharness.router on synthetic module trees written here (CTest, CPU).

  stacks_aiter_test.py [--kvharness BIN --out DIR]

A fake aiter checkout (aiter/ops/attention.py, our own code in the shape of the library's file:
imports of its JIT build, csrc interfaces and Triton, compile_ops entry points, a dispatch picking
between pa_fwd_asm and paged_attention_rocm by head_size and batch) in two versions, before and
after a fix like ROCm/aiter@b4885d2. Without --kvharness: the loader and the interception alone.
With it: the router through the bridge and the harness (expect_routed_to PASS and misroute FAIL,
--replace-router, route boundaries, a routed built-in reader running, a planted Python router
that raises / names an unknown kernel / returns a bad type). Exit status 0 when every check holds.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # providers/python: the kvharness package
FAILURES = []

DISPATCH = '''\
import torch
import triton
import triton.language as tl
from csrc.cpp_itfs.pa.pa import paged_attention_rocm as paged_attention_rocm_core
from csrc.cpp_itfs.torch_utils import direct_register_custom_op
from aiter import dtypes
from ..jit.core import compile_ops
{extra_import}

@compile_ops("module_attention_asm", fc_name="pa_fwd")
def pa_fwd_asm(Q, K, V, block_tables, context_lens, block_tables_stride0, max_qlen=1, K_QScale=None,
               V_QScale=None, out_=None, qo_indptr=None, high_precision=1, kernelName=None): ...


def paged_attention_rocm(out, exp_sums, max_logits, tmp_out, query, key_cache, value_cache, num_kv_heads, scale,
                         block_tables, context_lens, block_size, max_context_len, alibi_slopes, kv_cache_dtype,
                         k_scale, v_scale, fp8_out_scale=None, partition_size=256, mtp=1, q_scale=None):
    paged_attention_rocm_core(out, query)
    return out


direct_register_custom_op("paged_attention_rocm", paged_attention_rocm, ["out"])


def _asm_wanted(num_seqs, num_heads, head_size, dtype, high_precision):
    {head_size_test}
    if high_precision == 2 or dtype == torch.int8:
        return True
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return num_seqs * num_heads > 2 * props.multi_processor_count


def paged_attention_common(Q, K, V, exp_sums, max_logits, tmp_out, block_tables, context_lens,
                           block_tables_stride0, scale, max_qlen=1, max_seq_len=1, K_QScale_hip=None,
                           V_QScale_hip=None, out_=None, high_precision=1, kv_cache_dtype="auto",
                           kv_cache_tensor_dtype=None):
    if Q.dim() != 3:
        raise ValueError("Q must be [num_seqs, num_heads, head_size]")
    num_seqs, num_heads, head_size = Q.shape
    if _asm_wanted(num_seqs, num_heads, head_size, kv_cache_tensor_dtype or K.dtype, high_precision):
        return pa_fwd_asm(Q, K, V, block_tables, context_lens, block_tables_stride0, max_qlen,
                          out_=out_, high_precision=high_precision)
    out = out_ if out_ is not None else torch.empty_like(Q)
    paged_attention_rocm(out, exp_sums, max_logits, tmp_out, Q, K, V, int(K.size(1)), scale, block_tables,
                         context_lens, int(K.size(3)), max_seq_len, None, kv_cache_dtype, K_QScale_hip,
                         V_QScale_hip)
    return out
'''
BEFORE = "pass  # no head-size test (before the fix)"
AFTER = "if head_size != 128:\n        return False"


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILURES.append(what)


def checkout(root, name, head_size_test, extra_import=""):
    """A partial fake aiter checkout: root/name/aiter/ops/attention.py only."""
    d = os.path.join(root, name, "aiter", "ops")
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "attention.py"), "w") as f:
        f.write(DISPATCH.format(head_size_test=head_size_test, extra_import=extra_import))
    return os.path.join(root, name)


STEP = dict(num_heads=4, num_kv_heads=1, block_size=16, dtype="bf16", cache_dtype="bf16", max_context_len=64,
            max_query_len=1, high_precision=1)


def in_process(src, code):
    """Runs `code` in a fresh interpreter with KVH_AITER_SRC=src (one aiter source per process)."""
    env = dict(os.environ, KVH_AITER_SRC=src, PYTHONPATH=os.path.dirname(HERE))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    return p.returncode, p.stdout.strip(), p.stderr.strip()


ROUTE = ("from kvharness.stacks import aiter as a\nm = a.dispatch_module()\n"
         "print(a.route(m, {cus}, num_seqs={n}, head_size={hs}, **{step!r}))")


def loader_and_interception(root):
    before = checkout(root, "before", BEFORE)
    after = checkout(root, "after", AFTER)
    # 256 CUs: threshold 512 heads; 160 seqs * 4 heads = 640 above it, 4 * 4 below.
    for src, n, hs, want in [(before, 160, 256, "pa_fwd_asm"), (after, 160, 256, "paged_attention_rocm"),
                             (before, 4, 256, "paged_attention_rocm"), (after, 160, 128, "pa_fwd_asm"),
                             (after, 4, 128, "paged_attention_rocm")]:
        rc, out, err = in_process(src, ROUTE.format(cus=256, n=n, hs=hs, step=STEP))
        check(rc == 0 and out == want, f"{os.path.basename(src)}: {n} seqs, head_size {hs} -> {want} (got {out!r} {err[-300:]})")
    # The compute units reach the dispatch: 1000 CUs put 160 * 4 under the threshold.
    rc, out, err = in_process(before, ROUTE.format(cus=1000, n=160, hs=256, step=STEP))
    check(out == "paged_attention_rocm", f"compute_units reach the dispatch (got {out!r} {err[-300:]})")
    # Globals restored after the call, also after a dispatch that raised; entry points are stubs outside it.
    code = ("from kvharness.stacks import aiter as a\nimport torch\nm = a.dispatch_module()\n"
            "g = (m.pa_fwd_asm, m.paged_attention_rocm, m.torch)\n"
            "a.route(m, 8, num_seqs=1, head_size=128, **%r)\n"
            "try:\n  a._intercept.intercept(m, tuple(a.KERNEL_NAMES), lambda: m.paged_attention_common(*[torch.empty(2, device='meta')]*8, 1, 1.0))\n"
            "except ValueError as e: print('raised', e)\n"
            "print((m.pa_fwd_asm, m.paged_attention_rocm, m.torch) == g)\n"
            "try: m.pa_fwd_asm(None, None, None, None, None, 1)\n"
            "except Exception as e: print(type(e).__name__, e)\n") % STEP
    rc, out, err = in_process(after, code)
    lines = out.splitlines()
    check(rc == 0 and len(lines) == 3 and lines[0].startswith("raised Q must be") and lines[1] == "True",
          f"the dispatch's own error propagates and the globals are restored (got {out!r} {err[-300:]})")
    check(len(lines) == 3 and lines[2].startswith("StubCalled aiter entry point pa_fwd_asm is a kvharness stub"),
          f"a compile_ops entry point outside the interception is a stub that says so (got {lines[-1:]})")
    # An import the stub layer cannot satisfy: a clear error naming it and the file's line.
    missing = checkout(root, "missing", AFTER, extra_import="import kvh_no_such_module_xyz")
    rc, out, err = in_process(missing, "from kvharness.stacks import aiter as a\na.dispatch_module()")
    check(rc != 0 and "kvh_no_such_module_xyz" in err and "attention.py:8" in err and "stub layer" in err,
          f"a missing import names itself and attention.py:8 (got {err[-400:]!r})")
    check(not in_process(os.path.join(root, "nothing"), "from kvharness.stacks import aiter as a\na.dispatch_module()")[0] == 0,
          "a source without aiter/ops/attention.py is an error")
    return before, after


CASES = '''\
seeds = [1]
[[attention]]
models = ["Qwen3.5-397B-A17B"]   # 32 heads, 2 kv heads, head_size 256; tp 8: 4 heads, 1 kv head per rank
tp = 8
layouts = ["separate"]
batch_sizes = [4, 160]
context_lens = [1, 40]
block_sizes = [16]
dtypes = ["bf16"]
routers = ["aiter_paged_attention_common"]
target = "MI355X"
expect_routed_to = "paged_attention_rocm"
'''
BOUNDARY = '''\
seeds = [1]
[[attention]]
models = ["Qwen3-235B-A22B"]     # head_size 128; tp 8: 8 heads, 1 kv head per rank
tp = 8
layouts = ["separate"]
batch_sizes = [2]
route_boundaries = true
context_lens = [1, 40]
block_sizes = [16]
dtypes = ["bf16"]
routers = ["aiter_paged_attention_common"]
target = "MI355X"
expect_routed_to = [{ reader = "paged_attention_rocm", batch_range = [1, 64] },
                    { reader = "pa_fwd_asm", batch_range = [65, 65536] }]
'''
PLANTED = '''\
import kvharness

@kvharness.router("planted_router_raises")
def raises(head_size):
    raise RuntimeError(f"no kernel for head_size {head_size}")  # RAISES

@kvharness.router("planted_router_unknown", kernel_names={"asm_v9": "pa_ragged_asm_v9"})
def unknown(**kw):
    return "asm_v9", "always"

@kvharness.router("planted_router_bad_type")
def bad_type(num_seqs):
    return 42
'''


def run(args, *cli, env=None):
    cmd = [args.kvharness, *cli]
    p = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    print("$ " + " ".join(cmd) + f"  -> {p.returncode}")
    if p.returncode not in (0, 1):
        sys.stdout.write(p.stdout[-1500:] + p.stderr[-1500:])
    return p


def cases_of(d):
    with open(os.path.join(d, "results.json")) as f:
        return json.load(f)["cases"]


def through_harness(args, root, before, after):
    cases = os.path.join(root, "aiter_cases.toml")
    with open(cases, "w") as f:
        f.write(CASES)
    prov = ["--provider", "python:kvharness.stacks.aiter", "--no-progress"]
    out = os.path.join(args.out, "after")  # the checkout as the spec's parameter; below as $KVH_AITER_SRC
    p = run(args, "run", cases, "--provider", "python:kvharness.stacks.aiter?src=" + after, "--no-progress",
            "--report-dir", out)
    cs = cases_of(out) if p.returncode in (0, 1) else []
    check(p.returncode == 0 and len(cs) == 2 and all(c["verdict"] == "PASS" for c in cs),
          f"after the fix: every case PASS, exit 0 (exit {p.returncode}, {[c['verdict'] for c in cs]})")
    check(all(c["routed_to"] == "paged_attention_rocm" and "called paged_attention_rocm" in (c["route_reason"] or "")
              for c in cs), "the routed built-in reader ran; the reason names aiter's call")
    out = os.path.join(args.out, "before")
    p = run(args, "run", cases, "--provider", "python:kvharness.stacks.aiter?src=" + before, "--no-progress",
            "--report-dir", out)
    cs = {c["batch_size"]: c for c in cases_of(out)} if p.returncode in (0, 1) else {}
    check(p.returncode == 1 and cs.get(160, {}).get("verdict") == "FAIL" and cs[160]["reason"] == "misroute"
          and cs[160]["routed_to"] == "pa_fwd_asm" and cs.get(4, {}).get("verdict") == "PASS",
          f"before the fix: batch 160 FAIL misroute to pa_fwd_asm, batch 4 PASS (exit {p.returncode})")
    # --replace-router: the built-in model's cases routed by the real dispatch.
    routing = os.path.join(root, "builtin_policy.toml")
    with open(routing, "w") as f:
        f.write(CASES.replace('"aiter_paged_attention_common"', '"aiter-v0.1.12"'))
    out = os.path.join(args.out, "replace")
    p = run(args, "run", routing, *prov, "--replace-router", "aiter-v0.1.12=aiter_paged_attention_common",
            "--report-dir", out, env=dict(KVH_AITER_SRC=before))
    cs = {c["batch_size"]: c for c in cases_of(out)} if p.returncode in (0, 1) else {}
    check(p.returncode == 1 and cs.get(160, {}).get("reason") == "misroute"
          and cs[160]["router_policy"] == "aiter-v0.1.12"
          and (cs[160]["route_reason"] or "").startswith("aiter_paged_attention_common: "),
          f"--replace-router aiter-v0.1.12=aiter_paged_attention_common: judged as aiter-v0.1.12, the substitute named")
    # Route boundaries judged by the real dispatch (head_size 128: batches 63, 64, 65 around 2 * 256 / 8).
    bfile = os.path.join(root, "boundary.toml")
    with open(bfile, "w") as f:
        f.write(BOUNDARY)
    out = os.path.join(args.out, "boundary")
    p = run(args, "run", bfile, *prov, "--report-dir", out, env=dict(KVH_AITER_SRC=after))
    cs = sorted((c["batch_size"], c["routed_to"], c["verdict"]) for c in cases_of(out)) if p.returncode in (0, 1) else []
    check(p.returncode == 0 and [b for b, _, _ in cs] == [2, 63, 64, 65]
          and [r for _, r, _ in cs] == ["paged_attention_rocm"] * 3 + ["pa_fwd_asm"],
          f"route boundaries 63/64/65 judged by the real dispatch (got {cs})")
    # Planted Python routers: a raise is CRASH with the message and the line; unknown and bad returns.
    planted = os.path.join(root, "kvharness_planted_routers.py")
    with open(planted, "w") as f:
        f.write(PLANTED)
    pf = os.path.join(root, "planted.toml")
    with open(pf, "w") as f:
        f.write(CASES.replace('["aiter_paged_attention_common"]',
                              '["planted_router_raises", "planted_router_unknown", "planted_router_bad_type"]')
                .replace('expect_routed_to = "paged_attention_rocm"\n', '').replace("[4, 160]", "[4]"))
    out = os.path.join(args.out, "planted")
    p = run(args, "run", pf, "--provider", "python:" + planted, "--no-progress", "--report-dir", out)
    cs = {c["router_policy"]: c for c in cases_of(out)} if p.returncode in (0, 1) else {}
    r = cs.get("planted_router_raises", {})
    check(r.get("verdict") == "CRASH" and "router planted_router_raises raised: RuntimeError: no kernel for head_size 256"
          in (r.get("detail") or "") and "kvharness_planted_routers.py:5" in (r.get("detail") or ""),
          f"a raising router: CRASH with its message and line ({r.get('verdict')}: {r.get('detail')})")
    u = cs.get("planted_router_unknown", {})
    check(u.get("verdict") == "FAIL" and u.get("reason") == "misroute" and "'pa_ragged_asm_v9'" in (u.get("detail") or "")
          and "called asm_v9" in (u.get("detail") or ""),
          f"an unknown routed kernel: FAIL misroute naming it ({u.get('verdict')}: {u.get('detail')})")
    b = cs.get("planted_router_bad_type", {})
    check(b.get("verdict") == "CRASH" and "returned 42" in (b.get("detail") or ""),
          f"a bad return: CRASH naming it ({b.get('verdict')}: {b.get('detail')})")
    # No checkout and no installed aiter: the provider does not load (exit 125), naming ?src=.
    import importlib.util
    p = run(args, "info", "--provider", "python:kvharness.stacks.aiter")
    check(importlib.util.find_spec("aiter") is not None or p.returncode == 125 and "aiter is not installed" in p.stderr and "?src=PATH" in p.stderr,
          f"no aiter and no ?src: exit 125 naming the alternative (exit {p.returncode})")
    p = run(args, "info", "--provider", "python:" + planted)
    check("planted_router_raises" in p.stdout and "python:" in p.stdout, "kvharness info lists the provider's routers")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--kvharness")
    ap.add_argument("--out")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as root:
        before, after = loader_and_interception(root)
        if args.kvharness:
            os.makedirs(args.out, exist_ok=True)
            through_harness(args, root, before, after)
    print(f"{len(FAILURES)} failure(s)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
