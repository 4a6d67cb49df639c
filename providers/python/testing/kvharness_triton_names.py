"""Stand-ins under the Triton provider's kernel names (the torch kernels), so
that cases/triton.toml is checked on the CPU: its names resolve, its formats
match, and its expectations (the fixture fails on interleaved and padded
caches only, everything else passes) hold for correct kernels."""

from kvharness import reader, writer

import kvharness_torch as kt

writer("triton_reshape_and_cache", cache_format="pa_v1", description="stand-in")(kt.reshape_and_cache)
writer("triton_reshape_and_cache_shuffle", cache_format="shuffle", description="stand-in")(kt.reshape_and_cache_shuffle)
writer("triton_fixture_shuffle_contiguous", cache_format="shuffle", fixture=True,
       description="stand-in")(kt.fixture_shuffle_contiguous)
reader("triton_paged_attention_v1", cache_format="pa_v1", description="stand-in")(kt.paged_attention_v1)
reader("triton_paged_attention_shuffle", cache_format="shuffle", description="stand-in")(kt.paged_attention_shuffle)
