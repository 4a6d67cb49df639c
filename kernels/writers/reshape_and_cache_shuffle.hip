// reshape_and_cache_shuffle: the shuffle=1 writer of the ROCm / ASM paged
// attention paths. K goes to [num_blocks, num_kv_heads, head_size/x, block_size, x],
// V to [num_blocks, num_kv_heads, block_size/x, head_size, x] (aiter layout),
// x = 8 for the 16-bit caches, 16 for fp8 (quantized per writer_common.h QuantizeFp8).
// Every offset, the block base included, comes from the views' strides
// (ShuffleCacheAddr, cache/cache_addressing.h): this is the fix of the
// hybrid-model bug (vLLM PR discussion in shared/), where the block base was
// computed as if the cache were contiguous. K moves one x-vector a thread (16-byte accesses where the
// views allow); V, whose elements are x apart in this layout, one element a thread.
#include "writers/writer_common.h"

namespace kvh::kernels {
namespace {

template <class E>
__global__ void reshape_and_cache_shuffle_kernel(const uint16_t* __restrict__ key, const uint16_t* __restrict__ value,
                                                 typename E::Out* __restrict__ key_cache, typename E::Out* __restrict__ value_cache,
                                                 const int64_t* __restrict__ slot_mapping, Strides5 ks, Strides5 vs,
                                                 ShuffleCacheAddr<E::kX> cache, int64_t block_size, int num_kv_heads,
                                                 int head_size, bool vec_in, bool vec_k, KvScales sc) {
  const int64_t token = blockIdx.x;
  const int64_t slot = slot_mapping[token];
  if (slot < 0) return;  // padding token
  const int64_t block = slot / block_size, offset = slot % block_size;
  const int chunks = head_size / 8;  // runs of 8 dims (one x-vector, or half of one for fp8)
  for (int i = threadIdx.x; i < num_kv_heads * chunks; i += blockDim.x) {
    const int h = i / chunks, c = i - h * chunks;
    const Chunk8 k = load_chunk(key + token * ks.s[0] + h * ks.s[1] + int64_t(c) * 8 * ks.s[2], ks.s[2], vec_in);
    store_chunk_as<E>(key_cache + cache.k(block, h, offset, c * 8), cache.k.dim_stride(), vec_k, k,
                      scale_at(sc.granularity, sc.k, 1.f, block, h, offset));
  }
  // V's elements of one token are not adjacent in this layout: one element a
  // thread, so that a wavefront's stores at least cover neighbouring dims.
  for (int i = threadIdx.x; i < num_kv_heads * head_size; i += blockDim.x) {
    const int h = i / head_size, d = i - h * head_size;
    const float vsc = scale_at(sc.granularity, sc.v, 1.f, block, h, offset);
    value_cache[cache.v(block, h, offset, d)] = E::store(value[token * vs.s[0] + h * vs.s[1] + d * vs.s[2]], vsc);
  }
}
KVH_DECLARE_BARRIER_FREE_AS(reshape_and_cache_shuffle_kernel_copy16, reshape_and_cache_shuffle_kernel<Copy16>);
KVH_DECLARE_BARRIER_FREE_AS(reshape_and_cache_shuffle_kernel_fn_f16, reshape_and_cache_shuffle_kernel<QuantizeFp8<fp16_t, false>>);
KVH_DECLARE_BARRIER_FREE_AS(reshape_and_cache_shuffle_kernel_fn_bf16, reshape_and_cache_shuffle_kernel<QuantizeFp8<bf16_t, false>>);
KVH_DECLARE_BARRIER_FREE_AS(reshape_and_cache_shuffle_kernel_fnuz_f16, reshape_and_cache_shuffle_kernel<QuantizeFp8<fp16_t, true>>);
KVH_DECLARE_BARRIER_FREE_AS(reshape_and_cache_shuffle_kernel_fnuz_bf16, reshape_and_cache_shuffle_kernel<QuantizeFp8<bf16_t, true>>);
KVH_DECLARE_BARRIER_FREE_AS(reshape_and_cache_shuffle_kernel_i8_f16, reshape_and_cache_shuffle_kernel<QuantizeInt8<fp16_t>>);
KVH_DECLARE_BARRIER_FREE_AS(reshape_and_cache_shuffle_kernel_i8_bf16, reshape_and_cache_shuffle_kernel<QuantizeInt8<bf16_t>>);

}  // namespace
}  // namespace kvh::kernels

extern "C" int kvh_reshape_and_cache_shuffle(const kvh_write_args* a, void* stream) {
  using namespace kvh::kernels;
  if (hipError_t e = check_write_args(*a, KVH_CACHE_SHUFFLE); e != hipSuccess) return e;
  const int64_t num_tokens = a->key.shape[0];
  if (num_tokens == 0) return hipSuccess;
  const bool vec_in = chunks_contiguous(a->key, 2) && chunks_contiguous(a->value, 2);
  return with_writer_policy(*a, [&](auto e) {
    using E = decltype(e);
    hipLaunchKernelGGL(HIP_KERNEL_NAME(reshape_and_cache_shuffle_kernel<E>), dim3(unsigned(num_tokens)),
                       dim3(writer_block_threads(a->key.shape[1], a->key.shape[2])), 0, (hipStream_t)stream,
                       (const uint16_t*)a->key.data, (const uint16_t*)a->value.data, (typename E::Out*)a->key_cache.data,
                       (typename E::Out*)a->value_cache.data, (const int64_t*)a->slot_mapping.data, strides_of(a->key),
                       strides_of(a->value), ShuffleCacheAddr<E::kX>(a->key_cache, a->value_cache), a->block_size,
                       int(a->key.shape[1]), int(a->key.shape[2]), vec_in,
                       !E::kQuantized && chunks_contiguous(a->key_cache, 4), kv_scales_of(*a));
    return int(hipGetLastError());
  });
}
