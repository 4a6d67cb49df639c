"""vLLM's Triton cache writers and attention readers, called as vLLM's attention backends call them.

    --provider python:kvharness.stacks.vllm              the installed vllm package
    --provider "python:kvharness.stacks.vllm?src=PATH"   a vLLM source checkout at any commit (PATH/vllm/...),
                                                         no install, no import of the stack (_checkout.py)

Kernels (names prefixed `vllm_`; the vLLM commit range each call was checked against is beside it):

  vllm_triton_reshape_and_cache_flash   writer, flash (NHD)
  vllm_reshape_and_cache_shuffle_triton writer, shuffle (ROCM_AITER_FA backend; given the 4-D container)
  vllm_unified_attention                reader, flash, ragged (TRITON_ATTN backend)
  vllm_chunked_prefill_paged_decode     reader, pa_v1, decode calls (ROCM_ATTN backend)

Each kernel's file is loaded at its first call, so that one missing at a commit (a file that moved or
did not exist yet) is that kernel's UNSUPPORTED, and a file the stub layer cannot load is that kernel's
CRASH naming the import; the other kernels still run.
"""

from __future__ import annotations

import functools
import inspect

import kvharness
from kvharness import stacks
from kvharness.stacks import _checkout as ck

#: vLLM's stub layer: the stack modules its Triton kernel files import, served without the stack.
STUBS = {
    "vllm.platforms": ck.stub_platform,
    "vllm.logger": ck.stub_logger,
    "vllm.triton_utils": ck.stub_triton_utils,
    "vllm.envs": ck.stub_envs({"VLLM_BATCH_INVARIANT": False, "VLLM_ROCM_USE_AITER": False,
                               "VLLM_USE_TRITON_FLASH_ATTN": True, "VLLM_ROCM_SHUFFLE_KV_CACHE_LAYOUT": False}),
    # triton_unified_attention asks whether batch invariance is on (older commits).
    "vllm.model_executor.layers.batch_invariant": lambda m: setattr(m, "vllm_is_batch_invariant", lambda: False),
    # triton_unified_attention's kv_quant_mode enum (vllm/v1/kv_cache_interface.py, recent commits).
    "vllm.v1.kv_cache_interface": lambda m: setattr(m, "KVQuantMode", _kv_quant_mode()),
    # chunked_prefill_paged_decode (69f87df3): its compiled ROCm op is never served; the function asks
    # vllm.platforms.rocm whether to use it (inside the call), and prefix_prefill asks torch_utils.
    "vllm._custom_ops": ck.stub_compiled_ops,
    "vllm.platforms.rocm": lambda m: setattr(m, "use_rocm_custom_paged_attention", _no_custom_paged_attention),
    "vllm.utils.torch_utils": lambda m: setattr(m, "is_quantized_kv_cache", _is_quantized_kv_cache),
}


def _no_custom_paged_attention(*args, **kwargs) -> bool:
    """vllm.platforms.rocm.use_rocm_custom_paged_attention: False, so chunked_prefill_paged_decode takes its
    Triton path (the compiled ROCm op it would otherwise call is not part of a source checkout)."""
    return False


def _is_quantized_kv_cache(kv_cache_dtype: str) -> bool:
    """vllm.utils.torch_utils.is_quantized_kv_cache for the dtype strings this adapter passes ("auto", "fp8")."""
    return kv_cache_dtype != "auto"

STACK = ck.Stack(name="vllm", package="vllm", package_dirs=("vllm",), stubs=STUBS)

#: Kernel files may import each other inside these packages (pure Triton ops files).
ALLOW = ("vllm.v1.attention.ops.", "vllm.attention.ops.")


def _kv_quant_mode():
    import enum

    class KVQuantMode(enum.IntEnum):  # the values vLLM's triton_unified_attention documents
        NONE = 0
        FP8_PER_TENSOR = 1
        INT8_PER_TOKEN_HEAD = 2
        FP8_PER_TOKEN_HEAD = 3
        INT4_PER_TOKEN_HEAD = 4
        INT2_PER_TOKEN_HEAD = 5
    return KVQuantMode


_OPTS = stacks.options(__name__, keys=("src",))
if "src" in _OPTS and not _OPTS["src"]:
    raise ValueError("python:kvharness.stacks.vllm?src=: empty path; expected a vLLM source checkout folder")
CHECKOUT = ck.Checkout(STACK, _OPTS["src"], allow=ALLOW).activate() if "src" in _OPTS else None
SOURCE = f"vLLM checkout {CHECKOUT.root}" if CHECKOUT else "the installed vllm"

# Where each kernel lives, newest path first (vllm/attention/ops moved to vllm/v1/attention/ops).
_FILES = {
    "flash": (("vllm.v1.attention.ops.triton_reshape_and_cache_flash", "vllm.attention.ops.triton_reshape_and_cache_flash"),
              "triton_reshape_and_cache_flash", False),
    "unified": (("vllm.v1.attention.ops.triton_unified_attention", "vllm.attention.ops.triton_unified_attention"),
                "unified_attention", False),
    "chunked": (("vllm.v1.attention.ops.chunked_prefill_paged_decode", "vllm.attention.ops.chunked_prefill_paged_decode"),
                "chunked_prefill_paged_decode", False),
    # Defined under `if current_platform.is_rocm():` in a backend module importing half the stack: extracted.
    "shuffle": (("vllm.v1.attention.backends.rocm_aiter_fa",), "reshape_and_cache_shuffle_triton", True),
}


@functools.lru_cache(maxsize=None)
def kernel(which: str):
    """The stack's function for `which` (a _FILES key), from the checkout or the installed package.
    Raises kvharness.Unsupported (or RuntimeError) when no file at this commit defines it."""
    modules, name, extract = _FILES[which]
    if CHECKOUT is not None:
        present = [m for m in modules if CHECKOUT.path_of(m)]
        if not present:
            raise stacks.unsupported(f"{SOURCE} has no {name}: none of "
                                     + ", ".join(m.replace(".", "/") + ".py" for m in modules))
        if extract:
            try:
                return getattr(CHECKOUT.extract(present[0], [name]), name)
            except LookupError as e:
                raise stacks.unsupported(f"{SOURCE}: {e}") from None
        return getattr(CHECKOUT.load(present[0]), name)
    for m in modules:
        if not stacks.findable(m.rpartition(".")[0]):
            continue
        if extract:  # the backend module's import would pull the stack's engine; its kernel is ROCm-only there
            try:
                return getattr(ck.installed_extract(STACK, m, [name]), name)
            except ModuleNotFoundError:
                continue
            except LookupError as e:
                raise stacks.unsupported(f"{SOURCE}: {e}") from None
        if stacks.findable(m):
            return getattr(ck.installed(STACK, m), name)
    raise stacks.unsupported(f"{SOURCE} has no {name}: none of {', '.join(modules)}")


stacks.require("vllm", CHECKOUT)


def _call(fn, **kwargs):
    """fn(**kwargs) with only the keywords fn's signature has (vLLM adds keywords over time), so one
    adapter serves every commit; a keyword the adapter needs and fn lacks is the caller's check."""
    params = inspect.signature(fn).parameters
    return fn(**{k: v for k, v in kwargs.items() if k in params})


# ---- dtype names: the harness's cache dtypes and scales, as vLLM's backends pass them ----

def kv_cache_dtype_str(kv_cache_dtype) -> str:
    """vLLM's cache_config.cache_dtype for the case: "auto" (16-bit caches) or "fp8" (fp8_e4m3fn and
    fp8_e4m3fnuz alike; vLLM picks the variant by platform: current_platform.fp8_dtype())."""
    return "fp8" if kv_cache_dtype and kv_cache_dtype.startswith("fp8") else "auto"


def check_fp8_platform(kv_cache_dtype, cache):
    """vLLM stores fp8 as the platform's variant (e4m3fnuz on MI300, e4m3fn elsewhere); a case of the other
    variant is a call vLLM never makes here: Unsupported."""
    if not (kv_cache_dtype and kv_cache_dtype.startswith("fp8")):
        return
    import torch
    if not hasattr(torch, "float8_e4m3fn"):
        raise stacks.unsupported(f"torch {torch.__version__} has no float8 dtypes; vLLM's fp8 caches need them")
    want = ck.StubPlatform().fp8_dtype() if CHECKOUT else _installed_fp8_dtype()
    got = {"fp8_e4m3fn": "float8_e4m3fn", "fp8_e4m3fnuz": "float8_e4m3fnuz"}.get(kv_cache_dtype)
    if str(want) != "torch." + str(got):
        raise stacks.unsupported(f"vLLM on this platform stores fp8 as {want}, the case is {kv_cache_dtype}")


def _installed_fp8_dtype():
    return ck.installed(STACK, "vllm.platforms").current_platform.fp8_dtype()


def _scale(t, like):
    """A per-tensor scale as vLLM's layer._k_scale (float32, one element); 1.0 when the case has none."""
    import torch
    if t is not None:
        return t.reshape(1).to(torch.float32)
    return torch.ones(1, dtype=torch.float32, device=like.device)


# ---- writers ----

# Checked against vLLM 027e07f2 (vllm/v1/attention/ops/triton_reshape_and_cache_flash.py) and the
# TRITON_ATTN backend's do_kv_cache_update: (key, value, key_cache, value_cache, slot_mapping,
# kv_cache_dtype, layer._k_scale, layer._v_scale), caches [num_blocks, block_size, num_kv_heads, head_size].
@kvharness.writer("vllm_triton_reshape_and_cache_flash", cache_format="flash",
                  cache_dtypes=("fp16", "bf16", "fp8_e4m3fn", "fp8_e4m3fnuz"), kv_scales=("none", "tensor"),
                  description="vLLM triton_reshape_and_cache_flash (TRITON_ATTN backend's cache writer)")
def triton_reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype=None,
                                   k_scales=None, v_scales=None):
    check_fp8_platform(kv_cache_dtype, key_cache)
    kernel("flash")(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype_str(kv_cache_dtype),
                    _scale(k_scales, key), _scale(v_scales, key))


# Checked against vLLM 002d0eb6 (vllm/v1/attention/backends/rocm_aiter_fa.py, do_kv_cache_update):
# key_cache, value_cache = kv_cache.unbind(0), the [num_blocks, block_size, num_kv_heads, head_size]
# containers that the launcher reinterprets with .view_as([num_blocks, num_kv_heads, head_size // x,
# block_size, x]) / ([num_blocks, num_kv_heads, block_size // x, head_size, x]); scales are read as 1.0
# by the kernel (fp8 without scales only). A launcher that takes the 5-D views instead (no `view_as`
# in its source) gets the views.
# head_sizes: the kernel's tl.arange(0, BLOCK_SIZE=head_size) compiles for powers of two only.
@kvharness.writer("vllm_reshape_and_cache_shuffle_triton", cache_format="shuffle", head_sizes=(64, 128, 256),
                  cache_dtypes=("fp16", "bf16", "fp8_e4m3fn", "fp8_e4m3fnuz"), kv_scales=("none",),
                  description="vLLM ROCM_AITER_FA reshape_and_cache_shuffle_triton (shuffle KV cache writer)")
def reshape_and_cache_shuffle_triton(key, value, key_cache, value_cache, slot_mapping, key_cache_container,
                                     value_cache_container, kv_cache_dtype=None):
    import torch
    from kvharness import _containers
    check_fp8_platform(kv_cache_dtype, key_cache)
    fn = kernel("shuffle")
    k, v = key_cache, value_cache
    if _takes_container(fn):
        if key_cache_container is None or value_cache_container is None:
            problem = (_containers.container_problem(key_cache, "shuffle")
                       or _containers.container_problem(value_cache, "shuffle"))
            raise stacks.unsupported(f"vLLM's shuffle writer takes the allocation-shaped cache: {problem}")
        k, v = key_cache_container, value_cache_container
    nb, nkv = key_cache.shape[0], key_cache.shape[1]
    bs = key_cache.shape[3]
    ones = torch.ones((nb, nkv, bs), dtype=torch.float32, device=key.device)  # the kernel's scale layout
    fn(key, value, k, v, slot_mapping, kv_cache_dtype_str(kv_cache_dtype), ones, ones)


@functools.lru_cache(maxsize=None)
def _takes_container(fn) -> bool:
    try:
        return "view_as(" in inspect.getsource(fn)
    except (OSError, TypeError):
        return True


# ---- readers ----

def _window(sliding_window):
    """vLLM's window_size for a window of W tokens (the query's own included): (W - 1, 0); none: (-1, -1)."""
    return (sliding_window - 1, 0) if sliding_window else (-1, -1)


# Checked against vLLM 00139433 (vllm/v1/attention/ops/triton_unified_attention.py) and the TRITON_ATTN
# backend: keywords q, k, v, out, cu_seqlens_q, max_seqlen_q, seqused_k, max_seqlen_k, softmax_scale,
# causal=True (asserted), window_size, block_table, softcap, q_descale=None, k_descale/v_descale =
# layer._k_scale.expand((num_seqs, num_kv_heads)), alibi_slopes, sinks; kv_quant_mode where the
# signature has it. block_size is read from v.shape[1] (NHD).
@kvharness.reader("vllm_unified_attention", cache_format="flash", max_query_len=kvharness.ANY_QUERY_LEN,
                  modifiers=("sliding_window", "softcap", "alibi", "sinks"),
                  cache_dtypes=("fp16", "bf16", "fp8_e4m3fn", "fp8_e4m3fnuz"), kv_scales=("none", "tensor"),
                  description="vLLM triton unified_attention (TRITON_ATTN backend), 2-D launch")
def unified_attention(out, query, key_cache, value_cache, block_tables, scale, query_start_loc, seq_lens,
                      max_query_len, max_context_len, sliding_window=0, softcap=0.0, alibi_slopes=None,
                      sinks=None, k_scale_tensor=None, v_scale_tensor=None, kv_cache_dtype=None, k_scales=None,
                      v_scales=None):
    check_fp8_platform(kv_cache_dtype, key_cache)
    fn = kernel("unified")
    shape = (seq_lens.shape[0], key_cache.shape[2])
    k_descale = _scale(k_scales if k_scales is not None else k_scale_tensor, query).expand(shape)
    v_descale = _scale(v_scales if v_scales is not None else v_scale_tensor, query).expand(shape)
    extra = {}
    mode = getattr(inspect.getmodule(fn), "KVQuantMode", None)
    if mode is not None:
        fp8 = bool(kv_cache_dtype and kv_cache_dtype.startswith("fp8"))
        extra["kv_quant_mode"] = mode.FP8_PER_TENSOR if fp8 else mode.NONE
    _call(fn, q=query, k=key_cache, v=value_cache, out=out, cu_seqlens_q=query_start_loc,
          max_seqlen_q=max_query_len, seqused_k=seq_lens, max_seqlen_k=max_context_len, softmax_scale=scale,
          causal=True, window_size=_window(sliding_window), block_table=block_tables, softcap=softcap or 0.0,
          q_descale=None, k_descale=k_descale, v_descale=v_descale, alibi_slopes=alibi_slopes, sinks=sinks,
          **extra)


# Checked against vLLM 69f87df3 (vllm/v1/attention/ops/chunked_prefill_paged_decode.py) and the
# ROCM_ATTN backend: key_cache/value_cache from PagedAttention.split_kv_cache (pa_v1: K [num_blocks,
# num_kv_heads, head_size/x, block_size, x], V [num_blocks, num_kv_heads, head_size, block_size]),
# k_scale/v_scale = layer._k_scale/_v_scale, sm_scale, sliding_window in tokens. Decode calls only: its
# prefill path (max_query_len > 1) needs the new tokens' key/value, which the reader ABI does not pass.
@kvharness.reader("vllm_chunked_prefill_paged_decode", cache_format="pa_v1",
                  modifiers=("sliding_window", "alibi", "sinks"),
                  cache_dtypes=("fp16", "bf16", "fp8_e4m3fn", "fp8_e4m3fnuz"), kv_scales=("none", "tensor"),
                  description="vLLM chunked_prefill_paged_decode (ROCM_ATTN backend), decode path")
def chunked_prefill_paged_decode(out, query, key_cache, value_cache, block_tables, scale, query_start_loc,
                                 seq_lens, max_context_len, sliding_window=0, alibi_slopes=None, sinks=None,
                                 k_scale_tensor=None, v_scale_tensor=None, kv_cache_dtype=None, k_scales=None,
                                 v_scales=None):
    import torch
    check_fp8_platform(kv_cache_dtype, key_cache)
    fn = kernel("chunked")
    nkv, hs = key_cache.shape[1], query.shape[2]
    unused = torch.empty((query.shape[0], nkv, hs), dtype=query.dtype, device=query.device)  # decode: cache only
    _call(fn, query=query, key=unused, value=unused, output=out, kv_cache_dtype=kv_cache_dtype_str(kv_cache_dtype),
          key_cache=key_cache, value_cache=value_cache, block_table=block_tables, query_start_loc=query_start_loc,
          seq_lens=seq_lens, max_seq_len=max_context_len, max_query_len=1,
          k_scale=_scale(k_scales if k_scales is not None else k_scale_tensor, query),
          v_scale=_scale(v_scales if v_scales is not None else v_scale_tensor, query),
          alibi_slopes=alibi_slopes, sliding_window=sliding_window or None, sm_scale=scale, sinks=sinks)
