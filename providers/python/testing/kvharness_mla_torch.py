"""An MLA reader written in torch (issue 22), for the bridge's MLA side on the CPU: cache format
"mla" (the latent cache [num_blocks, block_size, R + P], key_cache and value_cache the same view),
query [num_query_tokens, num_heads, R + P], out [num_query_tokens, num_heads, R] (R = out.shape[2]),
ragged rows (query_start_loc, causal), 16-bit and fp8 caches (fp8 arrives as uint8 codes under torch 1.13:
mla_torch_ref.fp8_decode). Semantics:
provider.h's KVH_CACHE_MLA reader; DeepSeek-class absorbed decode.

torch_mla_decode             the reader
fixture_torch_mla_rope_ignored  KNOWN BAD on purpose: the score over the latent part only (the
                             rope part dropped), so that the check is shown to fail on it
"""

from kvharness import reader

from mla_torch_ref import mla as _mla  # sibling module


_MLA = dict(cache_format="mla", head_sizes=(576,), max_query_len=16, modifiers=("non_causal",),
            cache_dtypes=("fp16", "bf16", "fp8_e4m3fn", "fp8_e4m3fnuz"), kv_scales=("none", "tensor"))  # R 512 + P 64


@reader("torch_mla_decode", **_MLA, description="torch absorbed MLA decode over the latent cache (test provider)")
def torch_mla_decode(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale,
                     query_start_loc=None, seq_lens=None, causal=True, kv_cache_dtype=None, k_scales=None,
                     k_scale=1.0, **_):
    _mla(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale, query_start_loc,
         seq_lens, causal, rope=True, kv_cache_dtype=kv_cache_dtype, k_scales=k_scales, k_scale=k_scale)


@reader("fixture_torch_mla_rope_ignored", **_MLA, fixture=True,
        description="KNOWN BAD: torch MLA decode whose score ignores the rope part (the last P dims)")
def fixture_torch_mla_rope_ignored(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale,
                                   query_start_loc=None, seq_lens=None, causal=True, kv_cache_dtype=None,
                                   k_scales=None, k_scale=1.0, **_):
    _mla(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale, query_start_loc,
         seq_lens, causal, rope=False, kv_cache_dtype=kv_cache_dtype, k_scales=k_scales, k_scale=k_scale)
