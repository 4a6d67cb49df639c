// Planted-bug cache writers for the mutation test (never in the builtin
// provider): one per realistic bug of each built-in writer, built from one
// element-by-element writer of the three formats so that each differs from a
// correct writer by exactly one rule.
//   planted_flash_first_head_only     (reshape_and_cache_flash) the launch covers
//                                     head 0 only: invisible with one kv head per rank
//   planted_pa_v1_first_head_only     (reshape_and_cache) the same in the pa_v1 writer
//   planted_pa_v1_block_mask          (reshape_and_cache) offset = slot & (block_size - 1):
//                                     a power-of-two block_size assumed (544 breaks it)
//   planted_shuffle_first_head_only   (reshape_and_cache_shuffle) head 0 only
//   planted_shuffle_v_token_swapped   (reshape_and_cache_shuffle) V's token index
//                                     split as (offset % x, offset / x) instead of
//                                     (offset / x, offset % x)
// x = 8: 16-bit elements only (check_write_args rejects the rest). The right
// addresses come from cache/cache_addressing.h (CacheAddr); the swapped V
// split is written out by hand over the same strides.
#include "registry/kernel_desc.h"
#include "writers/writer_common.h"

namespace kvh::kernels {
namespace {

enum PlantedBug : int { kFirstHeadOnly = 1, kBlockMaskPow2 = 2, kVTokenSwapped = 3 };

template <int kFormat>
__global__ void planted_cache_writer_kernel(const uint16_t* key, const uint16_t* value, uint16_t* key_cache,
                                            uint16_t* value_cache, const int64_t* slot_mapping, Strides5 ks,
                                            Strides5 vs, CacheAddr<kFormat, 8> cache, int64_t block_size,
                                            int64_t num_kv_heads, int64_t head_size, int bug) {
  constexpr int64_t x = 8;
  const int64_t token = blockIdx.x;
  const int64_t slot = slot_mapping[token];
  if (slot < 0) return;
  const int64_t block = slot / block_size;
  const int64_t offset = bug == kBlockMaskPow2 ? slot & (block_size - 1) : slot % block_size;
  const int64_t heads = bug == kFirstHeadOnly ? 1 : num_kv_heads;
  for (int64_t i = threadIdx.x; i < heads * head_size; i += blockDim.x) {
    const int64_t h = i / head_size, d = i % head_size;
    const uint16_t k = key[token * ks.s[0] + h * ks.s[1] + d * ks.s[2]];
    const uint16_t v = value[token * vs.s[0] + h * vs.s[1] + d * vs.s[2]];
    const int64_t ko = cache.k(block, h, offset, d);
    int64_t vo;
    if constexpr (kFormat == KVH_CACHE_SHUFFLE) {
      const ShuffleValueAddr<8>& va = cache.v;
      if (bug == kVTokenSwapped)  // the planted bug, by hand: (offset % x, offset / x)
        vo = block * va.block + h * va.head + (offset % x) * va.token_group + d * va.dim + (offset / x) * va.token_elem;
      else
        vo = va(block, h, offset, d);
    } else {
      vo = cache.v(block, h, offset, d);
    }
    key_cache[ko] = k;
    value_cache[vo] = v;
  }
}

template <int kFormat, int kBug>
int launch(const kvh_write_args* a, void* stream) {
  if (hipError_t e = check_write_args(*a, kvh_cache_format(kFormat)); e != hipSuccess) return e;
  const int64_t num_tokens = a->key.shape[0];
  if (num_tokens == 0) return hipSuccess;
  hipLaunchKernelGGL(HIP_KERNEL_NAME(planted_cache_writer_kernel<kFormat>), dim3(unsigned(num_tokens)),
                     dim3(writer_block_threads(a->key.shape[1], a->key.shape[2])), 0, (hipStream_t)stream,
                     (const uint16_t*)a->key.data, (const uint16_t*)a->value.data, (uint16_t*)a->key_cache.data,
                     (uint16_t*)a->value_cache.data, (const int64_t*)a->slot_mapping.data, strides_of(a->key),
                     strides_of(a->value), CacheAddr<kFormat, 8>(a->key_cache, a->value_cache), a->block_size,
                     a->key.shape[1], a->key.shape[2], kBug);
  return hipGetLastError();
}

template <int kFormat, int kBug>
kvh_kernel_desc planted(const char* name, const char* description) {
  return writer_desc<launch<kFormat, kBug>>(name, description, kvh_cache_format(kFormat), 1);
}

const kvh_kernel_desc kPlanted[] = {
    planted<KVH_CACHE_NHD, kFirstHeadOnly>("planted_flash_first_head_only",
                                           "PLANTED BUG (NHD writer): writes kv head 0 only"),
    planted<KVH_CACHE_PA_V1, kFirstHeadOnly>("planted_pa_v1_first_head_only",
                                             "PLANTED BUG (pa_v1 writer): writes kv head 0 only"),
    planted<KVH_CACHE_PA_V1, kBlockMaskPow2>("planted_pa_v1_block_mask",
                                             "PLANTED BUG (pa_v1 writer): offset = slot & (block_size - 1)"),
    planted<KVH_CACHE_SHUFFLE, kFirstHeadOnly>("planted_shuffle_first_head_only",
                                               "PLANTED BUG (shuffle writer): writes kv head 0 only"),
    planted<KVH_CACHE_SHUFFLE, kVTokenSwapped>(
        "planted_shuffle_v_token_swapped", "PLANTED BUG (shuffle writer): V token index split as (offset % x, offset / x)"),
};

}  // namespace
}  // namespace kvh::kernels

/// The planted writers of the three formats, provider-style (kvharness/provider.h); fixture = 1.
extern "C" const kvh_kernel_desc* kvh_planted_cache_writers(int32_t* count) {
  *count = int32_t(sizeof(kvh::kernels::kPlanted) / sizeof(kvh::kernels::kPlanted[0]));
  return kvh::kernels::kPlanted;
}
