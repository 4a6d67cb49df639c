"""Launch configurations through the Python bridge (issue 23 (D)): torch readers that declare
configurations the way a Triton provider does (configs=[dict(num_warps=...), ...]).

  torch_pa_configs                      the torch shuffle reader; raises unless it gets one declared
                                        configuration's keywords or its own defaults
  fixture_torch_pa_reduce_needs_4_warps known-bad: the same reader whose "split-K reduce" drops the
                                        upper half of every head at fewer than 4 warps (the public
                                        report's Triton miscompile: right at 4 warps, wrong at 2)
"""

from kvharness import reader

import kvharness_torch as kt

CONFIGS = [dict(num_warps=2), dict(name="w4s2", num_warps=4, num_stages=2)]
_ALLOWED = {(8, 1), (2, 1), (4, 2)}  # the defaults, then CONFIGS


@reader("torch_pa_configs", cache_format="shuffle", configs=CONFIGS,
        description="torch shuffle reader declaring launch configurations num_warps2 and w4s2")
def pa_configs(out, query, key_cache, value_cache, block_tables, context_lens, block_size, max_context_len, scale,
               k_scale, v_scale, partition_size, workspace, *, num_warps=8, num_stages=1):
    if (num_warps, num_stages) not in _ALLOWED:
        raise ValueError(f"num_warps={num_warps}, num_stages={num_stages}: not a declared configuration")
    kt.paged_attention_shuffle(out, query, key_cache, value_cache, block_tables, context_lens, block_size,
                               max_context_len, scale, k_scale, v_scale, partition_size, workspace)


@reader("fixture_torch_pa_reduce_needs_4_warps", cache_format="shuffle", configs=CONFIGS, fixture=True,
        description="REGRESSION FIXTURE: torch_pa_configs whose reduce drops dims head_size/2.. below 4 warps")
def fixture_reduce_needs_4_warps(out, query, key_cache, value_cache, block_tables, context_lens, block_size,
                                 max_context_len, scale, k_scale, v_scale, partition_size, workspace, *,
                                 num_warps=8, num_stages=1):
    kt.paged_attention_shuffle(out, query, key_cache, value_cache, block_tables, context_lens, block_size,
                               max_context_len, scale, k_scale, v_scale, partition_size, workspace)
    if num_warps < 4:
        out[:, :, out.shape[2] // 2:] = 0
