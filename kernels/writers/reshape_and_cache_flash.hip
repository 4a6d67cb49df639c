// reshape_and_cache_flash: writes one new token's K and V per slot into an NHD
// cache [num_blocks, block_size, num_kv_heads, head_size] (vLLM semantics).
// reshape_and_cache_flash_hnd is the same kernel given an HND cache
// [num_blocks, num_kv_heads, block_size, head_size] (as vLLM hands FlashInfer's
// HND cache to the flash writer): both formats address a cache by one stride
// per coordinate (cache/cache_addressing.h NhdCacheAddr, HndCacheAddr), so the
// kernel takes that addressing and serves both.
// Every address comes from the view's strides, so interleaved, padded and
// packed caches work; slots are int64 and negative slots are skipped. When
// head_size is a multiple of 8 a thread moves 8 elements per step (16-byte
// accesses where the views allow); other head sizes go element by element.
// fp8 caches (writer_common.h QuantizeFp8): each element is divided by its
// scale (k_scales/v_scales at the token's block, head and slot) and encoded.
#include "writers/writer_common.h"

namespace kvh::kernels {
namespace {

template <class E>
__global__ void reshape_and_cache_flash_kernel(const uint16_t* __restrict__ key, const uint16_t* __restrict__ value,
                                               typename E::Out* __restrict__ key_cache,
                                               typename E::Out* __restrict__ value_cache,
                                               const int64_t* __restrict__ slot_mapping, Strides5 ks, Strides5 vs,
                                               UnsplitKvAddr cache, int64_t block_size, int num_kv_heads, int head_size,
                                               bool chunked, bool vec_in, bool vec_out, KvScales sc) {
  const int64_t token = blockIdx.x;
  const int64_t slot = slot_mapping[token];
  if (slot < 0) return;  // padding token
  const int64_t block = slot / block_size, offset = slot % block_size;
  // The slot's base in each cache, taken once: a thread's heads and dims add to it.
  const int64_t kslot = cache.k.slot_offset(block, offset), vslot = cache.v.slot_offset(block, offset);
  auto k_at = [&](int64_t h, int64_t d) { return kslot + cache.k.head_offset(h) + cache.k.dim_offset(d); };
  auto v_at = [&](int64_t h, int64_t d) { return vslot + cache.v.head_offset(h) + cache.v.dim_offset(d); };
  if (chunked) {
    const int chunks = head_size / 8;
    for (int i = threadIdx.x; i < num_kv_heads * chunks; i += blockDim.x) {
      const int h = i / chunks, d = (i - h * chunks) * 8;
      const Chunk8 k = load_chunk(key + token * ks.s[0] + h * ks.s[1] + d * ks.s[2], ks.s[2], vec_in);
      const Chunk8 v = load_chunk(value + token * vs.s[0] + h * vs.s[1] + d * vs.s[2], vs.s[2], vec_in);
      store_chunk_as<E>(key_cache + k_at(h, d), cache.k.dim_stride(), vec_out, k,
                        scale_at(sc.granularity, sc.k, 1.f, block, h, offset));
      store_chunk_as<E>(value_cache + v_at(h, d), cache.v.dim_stride(), vec_out, v,
                        scale_at(sc.granularity, sc.v, 1.f, block, h, offset));
    }
    return;
  }
  for (int i = threadIdx.x; i < num_kv_heads * head_size; i += blockDim.x) {
    const int h = i / head_size, d = i - h * head_size;
    key_cache[k_at(h, d)] =
        E::store(key[token * ks.s[0] + h * ks.s[1] + d * ks.s[2]], scale_at(sc.granularity, sc.k, 1.f, block, h, offset));
    value_cache[v_at(h, d)] = E::store(value[token * vs.s[0] + h * vs.s[1] + d * vs.s[2]],
                                       scale_at(sc.granularity, sc.v, 1.f, block, h, offset));
  }
}
KVH_DECLARE_BARRIER_FREE_AS(reshape_and_cache_flash_kernel_copy16, reshape_and_cache_flash_kernel<Copy16>);
KVH_DECLARE_BARRIER_FREE_AS(reshape_and_cache_flash_kernel_fn_f16, reshape_and_cache_flash_kernel<QuantizeFp8<fp16_t, false>>);
KVH_DECLARE_BARRIER_FREE_AS(reshape_and_cache_flash_kernel_fn_bf16, reshape_and_cache_flash_kernel<QuantizeFp8<bf16_t, false>>);
KVH_DECLARE_BARRIER_FREE_AS(reshape_and_cache_flash_kernel_fnuz_f16, reshape_and_cache_flash_kernel<QuantizeFp8<fp16_t, true>>);
KVH_DECLARE_BARRIER_FREE_AS(reshape_and_cache_flash_kernel_fnuz_bf16, reshape_and_cache_flash_kernel<QuantizeFp8<bf16_t, true>>);
KVH_DECLARE_BARRIER_FREE_AS(reshape_and_cache_flash_kernel_i8_f16, reshape_and_cache_flash_kernel<QuantizeInt8<fp16_t>>);
KVH_DECLARE_BARRIER_FREE_AS(reshape_and_cache_flash_kernel_i8_bf16, reshape_and_cache_flash_kernel<QuantizeInt8<bf16_t>>);

}  // namespace
}  // namespace kvh::kernels

namespace {
// The NHD writer over `cache`: NhdCacheAddr or HndCacheAddr of a's caches (the same kernel).
int launch_flash(const kvh_write_args* a, void* stream, kvh::kernels::UnsplitKvAddr cache) {
  using namespace kvh::kernels;
  const int64_t num_tokens = a->key.shape[0], heads = a->key.shape[1], hd = a->key.shape[2];
  if (num_tokens == 0) return hipSuccess;
  const bool chunked = hd % 8 == 0;
  const bool vec_in = chunked && chunks_contiguous(a->key, 2) && chunks_contiguous(a->value, 2);
  const bool vec_out = chunked && chunks_contiguous(a->key_cache, 3) && chunks_contiguous(a->value_cache, 3);
  return with_writer_policy(*a, [&](auto e) {
    using E = decltype(e);
    hipLaunchKernelGGL(HIP_KERNEL_NAME(reshape_and_cache_flash_kernel<E>), dim3(unsigned(num_tokens)),
                       dim3(writer_block_threads(heads, chunked ? hd / 8 : hd)), 0, (hipStream_t)stream,
                       (const uint16_t*)a->key.data, (const uint16_t*)a->value.data, (typename E::Out*)a->key_cache.data,
                       (typename E::Out*)a->value_cache.data, (const int64_t*)a->slot_mapping.data, strides_of(a->key),
                       strides_of(a->value), cache, a->block_size, int(heads), int(hd), chunked, vec_in, vec_out,
                       kv_scales_of(*a));
    return int(hipGetLastError());
  });
}
}  // namespace

extern "C" int kvh_reshape_and_cache_flash(const kvh_write_args* a, void* stream) {
  using namespace kvh::kernels;
  if (hipError_t e = check_write_args(*a, KVH_CACHE_NHD); e != hipSuccess) return e;
  return launch_flash(a, stream, NhdCacheAddr(a->key_cache, a->value_cache));
}

extern "C" int kvh_reshape_and_cache_flash_hnd(const kvh_write_args* a, void* stream) {
  using namespace kvh::kernels;
  if (hipError_t e = check_write_args(*a, KVH_CACHE_HND); e != hipSuccess) return e;
  return launch_flash(a, stream, HndCacheAddr(a->key_cache, a->value_cache));
}
