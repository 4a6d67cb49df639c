"""SGLang's Triton decode attention, called as SGLang's triton attention backend calls it.

    --provider python:kvharness.stacks.sglang              the installed sglang package
    --provider "python:kvharness.stacks.sglang?src=PATH"   an SGLang source checkout (PATH/python/sglang/...)

Kernels (prefixed `sglang_`):

  sglang_decode_attention_fwd   reader, flash (NHD) caches seen as SGLang's token pool, decode calls

SGLang keeps K and V in a token-level pool, k_buffer/v_buffer [pool_tokens, num_kv_heads, head_size],
addressed by kv_indptr [num_seqs + 1] / kv_indices [tokens] (page size 1), not by block tables. The
adapter converts the harness's block_tables to token indices (page b, offset t -> b * block_size + t)
and views the NHD cache as the pool, which a cache allows when its pages are contiguous in tokens
(page stride = block_size * token stride: separate, kv_first, offset); interleaved or padded pages
have no token-pool view (UNSUPPORTED: SGLang never lays a pool out so).
"""

from __future__ import annotations

import functools
import inspect

import kvharness
from kvharness import stacks
from kvharness.stacks import _checkout as ck


def _stub_utils(module):
    """sglang.srt.utils: the platform queries the kernel files ask (is_hip, is_cuda, ...)."""
    plat = ck.StubPlatform()
    queries = {"is_hip": plat.is_rocm, "is_cuda": plat.is_cuda, "is_cuda_alike": plat.is_cuda_alike,
               "is_cpu": plat.is_cpu, "is_npu": lambda: False, "is_xpu": lambda: False, "is_hpu": lambda: False}

    def __getattr__(name):
        if name in queries:
            return queries[name]
        raise AttributeError(f"sglang.srt.utils.{name} is not in the kvharness stub ({', '.join(sorted(queries))})")
    module.__getattr__ = __getattr__


#: SGLang's stub layer.
STUBS = {"sglang.srt.utils": _stub_utils}
STACK = ck.Stack(name="sglang", package="sglang", package_dirs=("python/sglang", "sglang"), stubs=STUBS)
ALLOW = ("sglang.srt.layers.attention.triton_ops.", "sglang.kernels.ops.attention.")

_OPTS = stacks.options(__name__, keys=("src",))
if "src" in _OPTS and not _OPTS["src"]:
    raise ValueError("python:kvharness.stacks.sglang?src=: empty path; expected an SGLang source checkout folder")
CHECKOUT = ck.Checkout(STACK, _OPTS["src"], allow=ALLOW).activate() if "src" in _OPTS else None


stacks.require("sglang", CHECKOUT)
SOURCE = f"SGLang checkout {CHECKOUT.root}" if CHECKOUT else "the installed sglang"

_DECODE = ("sglang.srt.layers.attention.triton_ops.decode_attention", "sglang.kernels.ops.attention.decode_attention")

#: The triton backend's split count (server arg --triton-attention-num-kv-splits, default 8).
MAX_KV_SPLITS = 8


@functools.lru_cache(maxsize=None)
def decode_attention_fwd_fn():
    """SGLang's decode_attention_fwd from the checkout or the installed package (Unsupported when absent)."""
    if CHECKOUT is not None:
        present = [m for m in _DECODE if CHECKOUT.path_of(m)]
        if not present:
            raise stacks.unsupported(f"{SOURCE} has no decode_attention_fwd: none of "
                                     + ", ".join("python/" + m.replace(".", "/") + ".py" for m in _DECODE))
        return CHECKOUT.load(present[0]).decode_attention_fwd
    for m in _DECODE:
        if stacks.findable(m):
            return ck.installed(STACK, m).decode_attention_fwd
    raise stacks.unsupported(f"{SOURCE} has no decode_attention_fwd: none of {', '.join(_DECODE)}")


def token_pool(cache):
    """The NHD cache view [num_blocks, block_size, num_kv_heads, head_size] as SGLang's token pool
    [num_blocks * block_size, num_kv_heads, head_size] over the same storage. Raises Unsupported when the
    pages are not contiguous in tokens (page stride != block_size * token stride)."""
    nb, bs, nkv, hs = cache.shape
    if nb > 1 and cache.stride(0) != bs * cache.stride(1):
        raise stacks.unsupported(f"SGLang's token pool needs pages contiguous in tokens (page stride = block_size *"
                                 f" token stride); the cache view {tuple(cache.shape)}:{tuple(cache.stride())} has "
                                 f"page stride {cache.stride(0)}, block_size * token stride {bs * cache.stride(1)}")
    return cache.as_strided((nb * bs, nkv, hs), (cache.stride(1), cache.stride(2), cache.stride(3)),
                            cache.storage_offset())


def token_indices(block_tables, seq_lens, block_size):
    """kv_indptr int32 [num_seqs + 1] and kv_indices int32 [sum(seq_lens)]: token t of sequence s at pool row
    block_tables[s][t // block_size] * block_size + t % block_size."""
    import torch
    lens = seq_lens.long()
    indptr = torch.zeros(lens.shape[0] + 1, dtype=torch.int32, device=seq_lens.device)
    indptr[1:] = torch.cumsum(lens, 0).to(torch.int32)
    rows = []
    for s, n in enumerate(lens.tolist()):
        t = torch.arange(n, device=seq_lens.device)
        rows.append(block_tables[s].long()[t // block_size] * block_size + t % block_size)
    indices = torch.cat(rows).to(torch.int32) if rows else torch.zeros(0, dtype=torch.int32, device=seq_lens.device)
    return indptr, indices


# Checked against SGLang 03cd2ec4 (python/sglang/srt/layers/attention/triton_ops/decode_attention.py) and its
# triton backend's forward_decode: decode_attention_fwd(q, k_buffer, v_buffer, o, kv_indptr, kv_indices,
# attn_logits [bs, num_heads, max_kv_splits, head_size] f32, attn_lse [bs, num_heads, max_kv_splits] f32,
# num_kv_splits int32 [bs], max_kv_splits, sm_scale, logit_cap, sinks); later signatures add k_scale/v_scale
# (passed where the signature has them).
@kvharness.reader("sglang_decode_attention_fwd", cache_format="flash", modifiers=("softcap", "sinks"),
                  description="SGLang triton decode_attention_fwd over the NHD cache seen as its token pool")
def decode_attention_fwd(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale,
                         k_scale=1.0, v_scale=1.0, softcap=0.0, sinks=None):
    import torch
    fn = decode_attention_fwd_fn()
    params = inspect.signature(fn).parameters
    if sinks is not None and "sinks" not in params:
        raise stacks.unsupported(f"{SOURCE}: this decode_attention_fwd takes no sinks")
    k_pool, v_pool = token_pool(key_cache), token_pool(value_cache)
    indptr, indices = token_indices(block_tables, context_lens, block_size)
    n, h, d = query.shape
    logits = torch.empty((n, h, MAX_KV_SPLITS, value_cache.shape[3]), dtype=torch.float32, device=query.device)
    lse = torch.empty((n, h, MAX_KV_SPLITS), dtype=torch.float32, device=query.device)
    splits = torch.full((n,), MAX_KV_SPLITS, dtype=torch.int32, device=query.device)
    kwargs = dict(q=query, k_buffer=k_pool, v_buffer=v_pool, o=out, kv_indptr=indptr, kv_indices=indices,
                  attn_logits=logits, attn_lse=lse, num_kv_splits=splits, max_kv_splits=MAX_KV_SPLITS,
                  sm_scale=scale, k_scale=k_scale, v_scale=v_scale, logit_cap=softcap or 0.0, sinks=sinks)
    missing = [p.name for p in params.values() if p.default is p.empty and p.name not in kwargs]
    if missing:
        raise stacks.unsupported(f"{SOURCE}: decode_attention_fwd needs {missing}, which the adapter does not know")
    fn(**{k: v for k, v in kwargs.items() if k in params})
