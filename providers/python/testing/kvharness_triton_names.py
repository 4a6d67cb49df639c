"""Stand-ins under the Triton provider's kernel names (the torch kernels), so
that cases/triton.toml is checked on the CPU: its names resolve, its formats
match, and its expectations (the fixture fails on interleaved and padded
caches only, everything else passes) hold for correct kernels."""

import kvharness
from kvharness import reader, writer

import kvharness_torch as kt

writer("triton_reshape_and_cache", cache_format="pa_v1", description="stand-in")(kt.reshape_and_cache)
writer("triton_reshape_and_cache_shuffle", cache_format="shuffle", description="stand-in")(kt.reshape_and_cache_shuffle)
writer("triton_fixture_shuffle_contiguous", cache_format="shuffle", fixture=True,
       description="stand-in")(kt.fixture_shuffle_contiguous)
reader("triton_paged_attention_v1", cache_format="pa_v1", description="stand-in")(kt.paged_attention_v1)
reader("triton_paged_attention_shuffle", cache_format="shuffle", description="stand-in")(kt.paged_attention_shuffle)
reader("triton_unified_attention", cache_format="flash", max_query_len=kvharness.ANY_QUERY_LEN,
       modifiers=("sliding_window", "sinks", "softcap", "alibi", "non_causal"),
       description="stand-in")(kt.unified_attention_nhd)


def _splitk_workspaces(query, max_context_len, partition_size, **_):
    """As kvharness_triton._varlen_workspaces (which needs triton)."""
    n, h, d = query.shape
    splits = max(1, -(-int(max_context_len) // (int(partition_size) or 512)))
    return [("segm_max", (n, h, splits), "float32"), ("segm_expsum", (n, h, splits), "float32"),
            ("segm_output", (n, h, splits, d), "float32")]


@reader("triton_unified_attention_splitk", cache_format="flash", max_query_len=kvharness.ANY_QUERY_LEN,
        modifiers=("sliding_window", "sinks", "softcap", "alibi", "non_causal"), workspaces=_splitk_workspaces,
        description="stand-in")
def unified_attention_splitk(workspaces, **kwargs):
    kt.unified_attention_nhd(**kwargs)


# ---- issue 22: triton_mla_decode (kvharness_triton's MLA reader), the torch MLA reader standing in ----
from mla_torch_ref import mla as _mla  # noqa: E402  (sits beside this file)


def _mla_workspaces(query, **_):
    """As kvharness_triton._mla_workspaces (which needs triton): 4 splits, mla_out R + P wide."""
    n, h, d = (int(x) for x in query.shape)
    return [("mla_max", (n, h, 4), "float32"), ("mla_sum", (n, h, 4), "float32"), ("mla_out", (n, h, 4, d), "float32")]


@reader("triton_mla_decode", cache_format="mla", head_sizes=(576,), max_query_len=16, modifiers=("non_causal",),
        cache_dtypes=("fp16", "bf16", "fp8_e4m3fn"), kv_scales=("none", "tensor"),
        workspaces=_mla_workspaces, description="stand-in")
def triton_mla_decode(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale,
                      query_start_loc=None, seq_lens=None, causal=True, kv_cache_dtype=None, k_scales=None, k_scale=1.0,
                      workspaces=None, **_):
    _mla(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale, query_start_loc,
         seq_lens, causal, rope=True, kv_cache_dtype=kv_cache_dtype, k_scales=k_scales, k_scale=k_scale)
