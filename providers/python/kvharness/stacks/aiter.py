"""kvharness.stacks.aiter: the ROCm kernel library's (aiter, github.com/ROCm/aiter) own paged-attention
routing, as a kvharness router.

Registers router `aiter_paged_attention_common`: for a case's routing inputs it calls aiter's
dispatch, aiter.ops.attention.paged_attention_common, with tensors of the shapes and dtypes the case
implies (on torch's meta device: nothing is allocated or computed), intercepts its kernel entry
points pa_fwd_asm and paged_attention_rocm (module globals, swapped for recorders during the call:
_intercept.py) and reports the one it called, as the harness's readers of the same names (the
built-in models of those kernels). torch.cuda's compute-unit query inside the dispatch
(_should_use_asm_kernel reads multi_processor_count) answers the case's compute_units.

Sources (one per process):
  installed package   --provider python:kvharness.stacks.aiter            imports aiter.ops.attention
  source checkout     --provider "python:kvharness.stacks.aiter?src=PATH"  executes PATH/aiter/ops/attention.py
                      alone with the stub layer of _aiter_stubs.py (aiter's JIT build, csrc interfaces,
                      Triton when absent); $KVH_AITER_SRC=PATH does the same without the parameter (the tests'
                      hook: a run should use ?src=, which repro lines and identity record)

Checked against (git log -- aiter/ops/attention.py of ROCm/aiter):
  4a4ba08eb (2026-01-16, #1821) adds paged_attention_common(Q, K, V, exp_sums, max_logits, tmp_out,
      block_tables, context_lens, block_tables_stride0, scale, max_qlen, max_seq_len, K_QScale_hip,
      V_QScale_hip, K_QScale_asm, V_QScale_asm, out_, qo_indptr, high_precision, kernelName,
      kv_cache_dtype, kv_cache_tensor_dtype): pa_fwd_asm when _should_use_asm_kernel(num_seqs,
      num_heads, kv_cache_tensor_dtype) (int8 cache, or num_seqs * num_heads > 2 * CUs) or
      high_precision == 2, else paged_attention_rocm. No head-size test.
  b4885d2ed (2026-03-14, #2273, first in v0.1.12; parent b48fcf66b) "restrict ASM paged attention
      to head_size=128": _should_use_asm_kernel(num_seqs, num_heads, head_size, dtype,
      high_precision) returns False first for head_size != 128.
  0056982d1 (stored HEAD, 2026-08): pa_fwd_asm wraps the compile_ops entry _pa_fwd_asm; the
      dispatch still calls pa_fwd_asm and paged_attention_rocm by their global names.
The arguments are passed by keyword, filtered by the dispatch's signature, so either version runs.
"""

from __future__ import annotations

import importlib
import inspect
import os
import types

import kvharness
from kvharness import stacks
from kvharness.stacks import _intercept

ROUTER = "aiter_paged_attention_common"
#: aiter's kernel entry points the dispatch chooses between -> the harness readers that model them.
KERNEL_NAMES = {"pa_fwd_asm": "pa_fwd_asm", "paged_attention_rocm": "paged_attention_rocm"}
PARTITION_SIZE = 256  # the dispatch passes partition_size=256 to paged_attention_rocm

_module = None
_SRC = stacks.options(__name__, keys=("src",)).get("src", "")  # read while the bridge imports us
stacks.require("aiter", _SRC or os.environ.get("KVH_AITER_SRC") or None)


def _check_checkout(src: str) -> None:
    """A checkout must hold aiter/ops/attention.py (the dispatch): else stop before any case (exit 125)."""
    want = os.path.join(src, "aiter", "ops", "attention.py")
    if not os.path.isdir(src):
        raise ImportError(f"python:kvharness.stacks.aiter?src={src}: no such folder; expected an aiter source checkout")
    if not os.path.isfile(want):
        raise ImportError(f"python:kvharness.stacks.aiter?src={src} is not an aiter source checkout: expected the "
                          f"dispatch file at {want}")


if _SRC or os.environ.get("KVH_AITER_SRC"):
    _check_checkout(_SRC or os.environ["KVH_AITER_SRC"])


def source() -> str:
    """Where the dispatch comes from: the spec's ?src=PATH or $KVH_AITER_SRC (a checkout), else ""
    (the installed package)."""
    return _SRC or os.environ.get("KVH_AITER_SRC", "")


def dispatch_module():
    """aiter.ops.attention, from source() (loaded once)."""
    global _module
    if _module is None:
        src = source()
        if src:
            from kvharness.stacks import _aiter_stubs
            _module = _aiter_stubs.load_dispatch(src)
        else:
            _module = importlib.import_module("aiter.ops.attention")
    return _module


class _Props:
    def __init__(self, cus):
        self.multi_processor_count = cus
        self.name = "kvharness routing target"
        self.gcnArchName = "gfx942"


def _torch_with_cus(torch, cus):
    """A stand-in for the dispatch module's `torch`: torch itself, but torch.cuda answers the
    case's compute units (and device 0) instead of asking a GPU."""
    cuda = types.SimpleNamespace(current_device=lambda: 0, get_device_properties=lambda *_: _Props(cus),
                                 is_available=lambda: True)

    class Cuda(types.ModuleType):
        def __getattr__(self, attr):
            return getattr(cuda, attr) if hasattr(cuda, attr) else getattr(torch.cuda, attr)

    class Torch(types.ModuleType):
        def __getattr__(self, attr):
            return getattr(torch, attr)

    t = Torch("torch")
    t.cuda = Cuda("torch.cuda")
    return t


def _cache_dtype(torch, name, dtype):
    if name in ("fp8_e4m3fn", "fp8_e4m3fnuz"):
        return getattr(torch, name.replace("fp8_", "float8_"), torch.uint8)
    return dtype


def step_arguments(torch, num_seqs, num_heads, num_kv_heads, head_size, block_size, dtype, cache_dtype,
                   max_context_len, max_query_len, high_precision, num_query_tokens=None):
    """paged_attention_common's keyword arguments for one decode step, as aiter's callers build
    them (meta tensors): Q [num_seqs, num_heads, head_size]; K shuffle [num_blocks, num_kv_heads,
    head_size/x, block_size, x], V [num_blocks, num_kv_heads, block_size/x, head_size, x];
    exp_sums/max_logits f32 [num_seqs, num_heads, partitions], tmp_out [..., head_size];
    block_tables int32 [num_seqs, max_blocks], context_lens int32 [num_seqs]."""
    meta = dict(device="meta")
    qdt = torch.float16 if dtype == "fp16" else torch.bfloat16
    kdt = _cache_dtype(torch, cache_dtype, qdt)
    x = 16 // (2 if kdt == qdt else 1)  # 16 bytes of cache elements
    max_blocks = max(1, -(-max_context_len // block_size))
    num_blocks = num_seqs * max_blocks + 1
    parts = max(1, -(-max_context_len // PARTITION_SIZE))
    fp8 = kdt != qdt
    return dict(
        Q=torch.empty(num_seqs, num_heads, head_size, dtype=qdt, **meta),
        K=torch.empty(num_blocks, num_kv_heads, head_size // x, block_size, x, dtype=kdt, **meta),
        V=torch.empty(num_blocks, num_kv_heads, max(1, block_size // x), head_size, x, dtype=kdt, **meta),
        exp_sums=torch.empty(num_seqs, num_heads, parts, dtype=torch.float32, **meta),
        max_logits=torch.empty(num_seqs, num_heads, parts, dtype=torch.float32, **meta),
        tmp_out=torch.empty(num_seqs, num_heads, parts, head_size, dtype=qdt, **meta),
        block_tables=torch.empty(num_seqs, max_blocks, dtype=torch.int32, **meta),
        context_lens=torch.empty(num_seqs, dtype=torch.int32, **meta),
        block_tables_stride0=max_blocks, scale=head_size ** -0.5, max_qlen=max_query_len,
        max_seq_len=max_context_len, high_precision=high_precision,
        K_QScale_hip=torch.empty(1, dtype=torch.float32, **meta) if fp8 else None,
        V_QScale_hip=torch.empty(1, dtype=torch.float32, **meta) if fp8 else None,
        kv_cache_dtype="fp8" if fp8 else "auto", kv_cache_tensor_dtype=kdt)


def route(module, compute_units, **step):
    """The entry point module.paged_attention_common calls for `step` (step_arguments' keywords,
    torch being the real one) on a device of `compute_units` CUs."""
    import torch
    dispatch = module.paged_attention_common
    kwargs = step_arguments(torch, **step)
    params = inspect.signature(dispatch).parameters
    kwargs = {k: v for k, v in kwargs.items() if k in params}
    return _intercept.intercept(module, tuple(KERNEL_NAMES), lambda: dispatch(**kwargs),
                                overrides={"torch": _torch_with_cus(torch, compute_units)})


@kvharness.router(ROUTER, kernel_names=KERNEL_NAMES,
                  description="aiter's paged_attention_common (aiter/ops/attention.py), intercepted")
def paged_attention_common(num_seqs, num_heads, num_kv_heads, head_size, block_size, dtype, cache_dtype,
                           max_context_len, max_query_len, high_precision, compute_units):
    m = dispatch_module()
    called = route(m, compute_units, num_seqs=num_seqs, num_heads=num_heads, num_kv_heads=num_kv_heads,
                   head_size=head_size, block_size=block_size, dtype=dtype, cache_dtype=cache_dtype,
                   max_context_len=max_context_len, max_query_len=max_query_len, high_precision=high_precision)
    where = source() or "installed aiter"
    return called, f"aiter paged_attention_common ({where}) called {called}"
