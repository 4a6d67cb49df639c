// The general paged decode-attention readers (design in paged_attention.h):
//   paged_attention_v1    V in pa_v1 layout   [num_blocks, num_kv_heads, head_size, block_size]
//   paged_attention_rocm  V in shuffle layout [num_blocks, num_kv_heads, block_size/x, head_size, x]
// K is x-split [num_blocks, num_kv_heads, head_size/x, block_size, x] for both.
//   paged_attention_nhd   K and V NHD [num_blocks, block_size, num_kv_heads, head_size]
//   paged_attention_hnd   K and V HND [num_blocks, num_kv_heads, block_size, head_size]
// The same kernel in all four: only the addressing policy differs (attention_args.h).
// fp16 and bf16, float32 accumulation, head_size any multiple of 8 up to 256,
// split-K over partitions of partition_size tokens (default 256).
#include "readers/paged_attention.h"

extern "C" int kvh_paged_attention_v1(const kvh_attention_args* a, void* stream) {
  return kvh::kernels::launch_paged_attention<KVH_CACHE_PA_V1>(*a, stream);
}

extern "C" int kvh_paged_attention_rocm(const kvh_attention_args* a, void* stream) {
  return kvh::kernels::launch_paged_attention<KVH_CACHE_SHUFFLE>(*a, stream);
}

extern "C" int kvh_paged_attention_nhd(const kvh_attention_args* a, void* stream) {
  return kvh::kernels::launch_paged_attention<KVH_CACHE_NHD>(*a, stream);
}

extern "C" int kvh_paged_attention_hnd(const kvh_attention_args* a, void* stream) {
  return kvh::kernels::launch_paged_attention<KVH_CACHE_HND>(*a, stream);
}

extern "C" uint64_t kvh_paged_attention_workspace_bytes(const kvh_attention_args* a) {
  return kvh::kernels::paged_attention_workspace_bytes(*a);
}
