"""An MLA reader written in torch (issue 22), for the bridge's MLA side on the CPU: cache format
"mla" (the latent cache [num_blocks, block_size, R + P], key_cache and value_cache the same view),
query [num_query_tokens, num_heads, R + P], out [num_query_tokens, num_heads, R] (R = out.shape[2]),
ragged rows (query_start_loc, causal), 16-bit caches (torch 1.13 has no fp8 dtype). Semantics:
provider.h's KVH_CACHE_MLA reader; DeepSeek-class absorbed decode.

torch_mla_decode             the reader
fixture_torch_mla_rope_ignored  KNOWN BAD on purpose: the score over the latent part only (the
                             rope part dropped), so that the check is shown to fail on it
"""

from kvharness import reader

from mla_torch_ref import mla as _mla  # sibling module


_MLA = dict(cache_format="mla", max_query_len=16, modifiers=("non_causal",))


@reader("torch_mla_decode", **_MLA, description="torch absorbed MLA decode over the latent cache (test provider)")
def torch_mla_decode(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale,
                     query_start_loc=None, seq_lens=None, causal=True, **_):
    _mla(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale, query_start_loc,
         seq_lens, causal, rope=True)


@reader("fixture_torch_mla_rope_ignored", **_MLA, fixture=True,
        description="KNOWN BAD: torch MLA decode whose score ignores the rope part (the last P dims)")
def fixture_torch_mla_rope_ignored(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale,
                                   query_start_loc=None, seq_lens=None, causal=True, **_):
    _mla(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale, query_start_loc,
         seq_lens, causal, rope=False)
