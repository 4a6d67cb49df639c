// reshape_and_cache_shuffle: the shuffle=1 writer of the ROCm / ASM paged
// attention paths. K goes to [num_blocks, num_kv_heads, head_size/x, block_size, x],
// V to [num_blocks, num_kv_heads, block_size/x, head_size, x] (aiter layout).
// Every offset, the block base included, comes from the views' strides: this
// is the fix of the hybrid-model bug (vLLM PR discussion in shared/), where the
// block base was computed as if the cache were contiguous.
#include "writer_common.h"

namespace kvh::kernels {
namespace {

__global__ void reshape_and_cache_shuffle_kernel(const uint16_t* __restrict__ key, const uint16_t* __restrict__ value,
                                                 uint16_t* __restrict__ key_cache, uint16_t* __restrict__ value_cache,
                                                 const int64_t* __restrict__ slot_mapping, Strides5 ks, Strides5 vs,
                                                 Strides5 kcs, Strides5 vcs, int64_t block_size,
                                                 int64_t num_kv_heads, int64_t head_size, int64_t x) {
  const int64_t token = blockIdx.x;
  const int64_t slot = slot_mapping[token];
  if (slot < 0) return;
  const int64_t block = slot / block_size, offset = slot % block_size;
  for (int64_t i = threadIdx.x; i < num_kv_heads * head_size; i += blockDim.x) {
    const int64_t h = i / head_size, d = i % head_size;
    key_cache[block * kcs.s[0] + h * kcs.s[1] + (d / x) * kcs.s[2] + offset * kcs.s[3] + (d % x) * kcs.s[4]] =
        key[token * ks.s[0] + h * ks.s[1] + d * ks.s[2]];
    value_cache[block * vcs.s[0] + h * vcs.s[1] + (offset / x) * vcs.s[2] + d * vcs.s[3] + (offset % x) * vcs.s[4]] =
        value[token * vs.s[0] + h * vs.s[1] + d * vs.s[2]];
  }
}
KVH_DECLARE_BARRIER_FREE(reshape_and_cache_shuffle_kernel);

}  // namespace
}  // namespace kvh::kernels

extern "C" int kvh_reshape_and_cache_shuffle(const kvh_write_args* a, void* stream) {
  using namespace kvh::kernels;
  if (hipError_t e = check_write_args(*a, KVH_CACHE_SHUFFLE); e != hipSuccess) return e;
  const int64_t num_tokens = a->key.shape[0];
  if (num_tokens == 0) return hipSuccess;
  hipLaunchKernelGGL(reshape_and_cache_shuffle_kernel, dim3(unsigned(num_tokens)),
                     dim3(writer_block_threads(a->key.shape[1], a->key.shape[2])), 0, (hipStream_t)stream,
                     (const uint16_t*)a->key.data, (const uint16_t*)a->value.data, (uint16_t*)a->key_cache.data,
                     (uint16_t*)a->value_cache.data, (const int64_t*)a->slot_mapping.data, strides_of(a->key),
                     strides_of(a->value), strides_of(a->key_cache), strides_of(a->value_cache), a->block_size,
                     a->key.shape[1], a->key.shape[2], a->key_cache.shape[4]);
  return hipGetLastError();
}
