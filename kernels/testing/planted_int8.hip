// PLANTED BUG for the mutation test (issue 22), never in the builtin provider:
// planted_int8_scales_heads_swapped, an NHD (flash) cache writer that quantizes
// an int8 cache with the scale of the neighbouring kv head (head h uses
// h ^ 1's, when that head exists) at the per-kv-head granularities (HEAD,
// BLOCK, TOKEN). Every other cache dtype and granularity goes to the real
// reshape_and_cache_flash, so only int8 cases with two or more kv heads a rank
// can kill it.
#include "registry/kernel_desc.h"
#include "writers/writer_common.h"

extern "C" int kvh_reshape_and_cache_flash(const kvh_write_args* a, void* stream);

namespace kvh::kernels {
namespace {

template <class T>
__global__ void planted_int8_heads_swapped_kernel(const uint16_t* key, const uint16_t* value, uint8_t* key_cache,
                                                  uint8_t* value_cache, const int64_t* slot_mapping, Strides5 ks,
                                                  Strides5 vs, NhdCacheAddr cache, int64_t block_size,
                                                  int64_t num_kv_heads, int64_t head_size, KvScales sc) {
  const int64_t token = blockIdx.x;
  const int64_t slot = slot_mapping[token];
  if (slot < 0) return;
  const int64_t block = slot / block_size, offset = slot % block_size;
  for (int64_t i = threadIdx.x; i < num_kv_heads * head_size; i += blockDim.x) {
    const int64_t h = i / head_size, d = i % head_size;
    const int64_t sh = (h ^ 1) < num_kv_heads ? (h ^ 1) : h;  // the bug: the neighbour's scale
    key_cache[cache.k(block, h, offset, d)] =
        QuantizeInt8<T>::store(key[token * ks.s[0] + h * ks.s[1] + d * ks.s[2]],
                               scale_at(sc.granularity, sc.k, 1.f, block, sh, offset));
    value_cache[cache.v(block, h, offset, d)] =
        QuantizeInt8<T>::store(value[token * vs.s[0] + h * vs.s[1] + d * vs.s[2]],
                               scale_at(sc.granularity, sc.v, 1.f, block, sh, offset));
  }
}
KVH_DECLARE_BARRIER_FREE_AS(planted_int8_heads_swapped_f16, planted_int8_heads_swapped_kernel<fp16_t>);
KVH_DECLARE_BARRIER_FREE_AS(planted_int8_heads_swapped_bf16, planted_int8_heads_swapped_kernel<bf16_t>);

int int8_scales_heads_swapped(const kvh_write_args* a, void* stream) {
  const KvScales sc = kv_scales_of(*a);
  const bool per_head = sc.granularity == KVH_SCALES_HEAD || sc.granularity == KVH_SCALES_BLOCK ||
                        sc.granularity == KVH_SCALES_TOKEN;
  if (a->key_cache.dtype != KVH_DT_I8 || !per_head) return kvh_reshape_and_cache_flash(a, stream);
  if (hipError_t e = check_write_args(*a, KVH_CACHE_NHD); e != hipSuccess) return e;
  const int64_t num_tokens = a->key.shape[0];
  if (num_tokens == 0) return hipSuccess;
  auto launch = [&](auto t) {
    using T = decltype(t);
    hipLaunchKernelGGL(HIP_KERNEL_NAME(planted_int8_heads_swapped_kernel<T>), dim3(unsigned(num_tokens)),
                       dim3(writer_block_threads(a->key.shape[1], a->key.shape[2])), 0, (hipStream_t)stream,
                       (const uint16_t*)a->key.data, (const uint16_t*)a->value.data, (uint8_t*)a->key_cache.data,
                       (uint8_t*)a->value_cache.data, (const int64_t*)a->slot_mapping.data, strides_of(a->key),
                       strides_of(a->value), NhdCacheAddr(a->key_cache, a->value_cache), a->block_size,
                       a->key.shape[1], a->key.shape[2], sc);
    return int(hipGetLastError());
  };
  return a->key.dtype == KVH_DT_BF16 ? launch(bf16_t{}) : launch(fp16_t{});
}

// The real writer's capabilities (it stands in for reshape_and_cache_flash under --replace-kernel).
kvh_capabilities int8_writer_caps() {
  kvh_capabilities c{};
  c.cache_dtypes = (1u << KVH_DT_F16) | (1u << KVH_DT_BF16) | (1u << KVH_DT_FP8_E4M3FN) |
                   (1u << KVH_DT_FP8_E4M3FNUZ) | (1u << KVH_DT_I8);
  c.kv_scales = (1u << KVH_SCALES_NONE) | (1u << KVH_SCALES_TENSOR) | (1u << KVH_SCALES_HEAD) |
                (1u << KVH_SCALES_BLOCK) | (1u << KVH_SCALES_TOKEN) | (1u << KVH_SCALES_SLOT);
  return c;
}
const kvh_capabilities kInt8WriterCaps = int8_writer_caps();

const kvh_kernel_desc kPlantedInt8[] = {
    writer_desc<int8_scales_heads_swapped>(
        "planted_int8_scales_heads_swapped",
        "PLANTED (int8): kv head h quantized with kv head h^1's scale (per-head, per-block, per-token scales)",
        KVH_CACHE_NHD, 1, &kInt8WriterCaps),
};

}  // namespace
}  // namespace kvh::kernels

extern "C" const kvh_kernel_desc* kvh_planted_int8(int32_t* count) {
  *count = int32_t(sizeof(kvh::kernels::kPlantedInt8) / sizeof(kvh::kernels::kPlantedInt8[0]));
  return kvh::kernels::kPlantedInt8;
}
