"""Synthetic source checkouts of vLLM and SGLang for the adapters' tests (CPU, torch only).

Each kernel file has the function the adapter calls, with the upstream signature (names, order,
defaults), written here in plain torch: it checks the arguments the way the stack's kernel reads them
(shapes, the kv_cache_dtype string, scale tensors, window tuples) and then writes or attends through
the views, using kvharness_torch for the arithmetic. The files import the stack modules the real
files import (stubbed by the loader), and the backend module imports modules the loader must never
load, so extraction is exercised. No upstream code is copied.

  write_vllm(root, shuffle="fixed"|"contiguous")   PATH/vllm/... as a vLLM checkout
  write_sglang(root)                               PATH/python/sglang/... as an SGLang checkout
"""

import os
import textwrap

_FLASH = '''
import torch
from vllm.platforms import current_platform
from vllm.triton_utils import tl, triton


def triton_reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype, k_scale,
                                   v_scale):
    assert kv_cache_dtype == "auto" or kv_cache_dtype.startswith("fp8"), kv_cache_dtype
    assert k_scale.dtype == torch.float32 and v_scale.dtype == torch.float32
    assert key_cache.ndim == 4  # [num_blocks, block_size, num_heads, head_size]
    block_size = key_cache.shape[1]
    keep = slot_mapping >= 0
    slots = slot_mapping[keep]
    blk = torch.div(slots, block_size, rounding_mode="floor")
    key_cache[blk, slots % block_size] = key[:slot_mapping.shape[0]][keep]
    value_cache[blk, slots % block_size] = value[:slot_mapping.shape[0]][keep]
'''

# The ROCm backend: imports half of the stack at the top, defines the writer only on ROCm.
_BACKEND = '''
from dataclasses import dataclass

import torch

from vllm._aiter_ops import rocm_aiter_ops
from vllm.config import VllmConfig
from vllm.logger import init_logger
from vllm.platforms import current_platform

_PARTITION_SIZE_ROCM = 256
if current_platform.is_rocm():
    from vllm.triton_utils import tl, triton

    def _shuffle_write(key, value, new_key_cache, new_value_cache, slot_mapping):
        {WRITE}

    def reshape_and_cache_shuffle_triton(key, value, key_cache, value_cache, slot_mapping, kv_cache_dtype,
                                         k_scales, v_scales):
        num_tokens = slot_mapping.shape[0]
        _, num_kv_heads, head_size = key.shape
        num_blocks, block_size, _, _ = key_cache.shape
        x = 16 // key_cache.element_size()
        k_template = torch.empty([num_blocks, num_kv_heads, head_size // x, block_size, x],
                                 dtype=key_cache.dtype, device="meta")
        v_template = torch.empty([num_blocks, num_kv_heads, block_size // x, head_size, x],
                                 dtype=value_cache.dtype, device="meta")
        assert k_scales.shape == (num_blocks, num_kv_heads, block_size), k_scales.shape
        _shuffle_write(key, value, key_cache.view_as(k_template), value_cache.view_as(v_template), slot_mapping)


logger = init_logger(__name__)


@dataclass
class AiterFlashAttentionMetadata:
    max_query_len: int
'''

# Writes through the 5-D views (the strides of the view).
_WRITE_FIXED = '''import kvharness_torch
        kvharness_torch.reshape_and_cache_shuffle(key, value, new_key_cache, new_value_cache, slot_mapping,
                                                  new_key_cache.shape[3])'''
# Block base = block_id * num_kv_heads * head_size * block_size (the contiguous assumption).
_WRITE_CONTIGUOUS = '''import kvharness_torch
        kvharness_torch.fixture_shuffle_contiguous(key, value, new_key_cache, new_value_cache, slot_mapping,
                                                   new_key_cache.shape[3])'''

_UNIFIED = '''
import torch

import vllm.envs as envs
from vllm.logger import init_logger
from vllm.platforms import current_platform
from vllm.triton_utils import tl, triton
from vllm.v1.kv_cache_interface import KVQuantMode

is_batch_invariant = envs.VLLM_BATCH_INVARIANT


def unified_attention(q, k, v, out, cu_seqlens_q, max_seqlen_q, seqused_k, max_seqlen_k, softmax_scale, causal,
                      window_size, block_table, softcap, q_descale, k_descale, v_descale, seq_threshold_3D=None,
                      num_par_softmax_segments=None, softmax_segm_output=None, softmax_segm_max=None,
                      softmax_segm_expsum=None, alibi_slopes=None, output_scale=None, qq_bias=None, sinks=None,
                      mm_prefix_range=None, use_alibi_sqrt=False, kv_quant_mode=KVQuantMode.NONE,
                      k_scale_cache=None, v_scale_cache=None):
    import kvharness_torch
    assert causal, "Only causal attention is supported"
    assert q_descale is None, "Q scales not supported"
    assert isinstance(window_size, tuple) and len(window_size) == 2, window_size
    num_seqs, num_kv_heads = len(seqused_k), k.shape[2]
    assert tuple(k_descale.shape) == (num_seqs, num_kv_heads), k_descale.shape
    assert kv_quant_mode in (KVQuantMode.NONE, KVQuantMode.FP8_PER_TENSOR)
    block_size = v.shape[1]
    window = 1 + window_size[0] if window_size[0] >= 0 else 0
    kvharness_torch.unified_attention_nhd(
        out, q, k, v, block_table, seqused_k, block_size, softmax_scale, float(k_descale[0, 0]),
        float(v_descale[0, 0]), query_start_loc=cu_seqlens_q, seq_lens=seqused_k, causal=True,
        sliding_window=window, softcap=softcap, sinks=sinks, alibi_slopes=alibi_slopes)
'''

_CHUNKED = '''
import torch

from vllm import _custom_ops as ops
from vllm.platforms import current_platform
from vllm.triton_utils import tl, triton

from .prefix_prefill import context_attention_fwd


def chunked_prefill_paged_decode(query, key, value, output, kv_cache_dtype, key_cache, value_cache, block_table,
                                 query_start_loc, seq_lens, max_seq_len, max_query_len, k_scale, v_scale,
                                 alibi_slopes=None, sliding_window=None, sm_scale=None, output_scale=None,
                                 sinks=None, is_block_table_ptr=False, causal=True):
    import kvharness_torch
    from vllm.platforms.rocm import use_rocm_custom_paged_attention
    assert not use_rocm_custom_paged_attention(query.dtype, query.shape[1], key_cache.shape[1], 16, max_seq_len)
    assert callable(ops.paged_attention_rocm)  # served, never called
    assert max_query_len == 1 and context_attention_fwd() == "prefill path"
    assert key_cache.ndim == 5 and value_cache.ndim == 4  # pa_v1
    assert kv_cache_dtype in ("auto", "fp8"), kv_cache_dtype
    block_size = value_cache.shape[3]
    nb, nkv, _, _, x = key_cache.shape
    k_nhd = key_cache.permute(0, 3, 1, 2, 4).reshape(nb, block_size, nkv, -1)  # a copy: reading only
    v_nhd = value_cache.permute(0, 3, 1, 2)
    kvharness_torch.unified_attention_nhd(output, query, k_nhd, v_nhd, block_table, seq_lens, block_size, sm_scale,
                                          float(k_scale), float(v_scale), query_start_loc=query_start_loc,
                                          seq_lens=seq_lens, sliding_window=sliding_window or 0, sinks=sinks,
                                          alibi_slopes=alibi_slopes)
'''

_PREFIX = '''
from vllm.platforms import current_platform
from vllm.utils.torch_utils import is_quantized_kv_cache

BASE_BLOCK = 128 if current_platform.has_device_capability(80) else 64
IS_TURING = current_platform.get_device_capability() == (7, 5)
assert not is_quantized_kv_cache("auto") and is_quantized_kv_cache("fp8")


def context_attention_fwd(*args, **kwargs):
    return "prefill path"
'''

_SGLANG_DECODE = '''
import torch
import triton
import triton.language as tl

from sglang.srt.utils import is_hip

_is_hip = is_hip()


def decode_attention_fwd(q, k_buffer, v_buffer, o, kv_indptr, kv_indices, attn_logits, attn_lse, num_kv_splits,
                         max_kv_splits, sm_scale, logit_cap=0.0, sinks=None, xai_temperature_len=-1):
    """Token-level pool: k_buffer/v_buffer [pool_tokens, num_kv_heads, head_size]."""
    assert k_buffer.ndim == 3 and v_buffer.ndim == 3
    assert attn_logits.dtype == torch.float32 and attn_lse.dtype == torch.float32
    batch = q.shape[0]
    assert kv_indptr.shape[0] == batch + 1 and num_kv_splits.shape[0] == batch
    num_heads, num_kv_heads = q.shape[1], k_buffer.shape[1]
    group = num_heads // num_kv_heads
    for b in range(batch):
        idx = kv_indices[int(kv_indptr[b]):int(kv_indptr[b + 1])].long()
        kk = k_buffer[idx].float()  # [L, kv_heads, d]
        vv = v_buffer[idx].float()
        for h in range(num_heads):
            s = (kk[:, h // group] @ q[b, h].float()) * sm_scale
            if logit_cap > 0:
                s = logit_cap * torch.tanh(s / logit_cap)
            if sinks is not None:  # one more logit in the denominator, carrying no value
                p = torch.softmax(torch.cat([s, sinks[h].float().view(1)]), 0)[:-1]
            else:
                p = torch.softmax(s, 0)
            o[b, h] = (p @ vv[:, h // group]).to(o.dtype)
'''


def _write(root, files):
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(textwrap.dedent(text).lstrip())


# An "installed" vllm: the stack modules the kernel files import, as small real modules (no stubs).
_INSTALLED = {
    "vllm/platforms/__init__.py": """
        import torch

        class _Platform:
            def is_rocm(self):
                return torch.version.hip is not None

            def fp8_dtype(self):
                return torch.float8_e4m3fn

            def has_device_capability(self, capability):
                return False

            def get_device_capability(self):
                return None

        current_platform = _Platform()
    """,
    "vllm/platforms/rocm.py": "def use_rocm_custom_paged_attention(*args):\n    return False\n",
    "vllm/_custom_ops.py": "def paged_attention_rocm(*args):\n    raise RuntimeError('compiled op')\n",
    "vllm/utils/__init__.py": "",
    "vllm/utils/torch_utils.py": "def is_quantized_kv_cache(kv_cache_dtype):\n    return kv_cache_dtype != 'auto'\n",
    "vllm/logger.py": "import logging\ninit_logger = logging.getLogger\n",
    "vllm/triton_utils/__init__.py": "tl = triton = None  # the fakes never launch Triton\n",
    "vllm/envs.py": "VLLM_BATCH_INVARIANT = False\n",
    "vllm/v1/kv_cache_interface.py": """
        import enum

        class KVQuantMode(enum.IntEnum):
            NONE = 0
            FP8_PER_TENSOR = 1
    """,
}


def write_vllm(root, shuffle="fixed", installed=False):
    """A vLLM checkout at root: the four kernel files at their vllm/v1 paths, package __init__ files that
    would import the stack (the loader must not run them). installed=True: an importable package (put
    root on sys.path) with small real stack modules instead."""
    poison = "raise RuntimeError('vllm package __init__ ran: the loader imported the stack')\n"
    if installed:
        poison = ""
        _write(root, _INSTALLED)
    write = _WRITE_FIXED if shuffle == "fixed" else _WRITE_CONTIGUOUS
    _write(root, {
        "vllm/__init__.py": poison,
        "vllm/v1/__init__.py": poison,
        "vllm/v1/attention/ops/__init__.py": poison,
        "vllm/v1/attention/ops/triton_reshape_and_cache_flash.py": _FLASH,
        "vllm/v1/attention/ops/triton_unified_attention.py": _UNIFIED,
        "vllm/v1/attention/ops/chunked_prefill_paged_decode.py": _CHUNKED,
        "vllm/v1/attention/ops/prefix_prefill.py": _PREFIX,
        "vllm/v1/attention/backends/rocm_aiter_fa.py": _BACKEND.replace("{WRITE}", write),
    })


def write_sglang(root):
    """An SGLang checkout at root (python/sglang/...)."""
    poison = "raise RuntimeError('sglang package __init__ ran: the loader imported the stack')\n"
    _write(root, {
        "python/sglang/__init__.py": poison,
        "python/sglang/srt/layers/attention/triton_ops/decode_attention.py": _SGLANG_DECODE,
    })


if __name__ == "__main__":  # fake_stacks.py vllm|vllm-contiguous|sglang DIR: write one checkout (docs, demos)
    import sys
    kinds = {"vllm": lambda d: write_vllm(d), "vllm-contiguous": lambda d: write_vllm(d, shuffle="contiguous"),
             "sglang": write_sglang}
    if len(sys.argv) != 3 or sys.argv[1] not in kinds:
        sys.exit(f"usage: fake_stacks.py {'|'.join(kinds)} DIR (a synthetic checkout: torch stand-ins with the "
                 "stack's signatures)")
    kinds[sys.argv[1]](sys.argv[2])
