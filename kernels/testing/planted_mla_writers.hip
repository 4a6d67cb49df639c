// Planted-bug MLA cache writers for the mutation test and the write-case tests (never in the
// builtin provider). Each is concat_and_cache_mla with one rule broken:
//   planted_mla_fp8_scale_multiply   (issue 22's public fp8 MLA writer bug, first half) stores
//                                    encode(value * scale) instead of encode(value / scale)
//   planted_mla_fp8_value_convert    (its second half) stores the integer value of value / scale,
//                                    saturated to the byte, instead of its fp8 bits
//   planted_mla_swaps_halves         writes k_pe first and kv_c after it (the rope part at 0)
//   planted_mla_writes_pad_columns   uses the projection row's columns past k_pe as scratch (writes
//                                    its input)
//   planted_mla_ignores_padding      writes padding tokens (slot < 0) at their negative slot
#include "registry/kernel_desc.h"
#include "writers/concat_and_cache_mla.h"

namespace kvh::kernels {
namespace {

template <class T, bool kFnuz> struct ScaleMultiply {
  using Out = uint8_t;
  static constexpr int kX = 16;
  static constexpr bool kQuantized = true;
  static KVH_HD Out store(uint16_t in, float scale) { return float_to_fp8(to_float(T{in}) * scale, kFnuz); }
};

template <class T, bool kFnuz> struct ValueConvert {
  using Out = uint8_t;
  static constexpr int kX = 16;
  static constexpr bool kQuantized = true;
  static KVH_HD Out store(uint16_t in, float scale) {
    const float f = to_float(T{in}) / scale;
    const float c = f > 127.f ? 127.f : (f < -128.f ? -128.f : f);
    return uint8_t(int8_t(c));  // the number, not the fp8 code
  }
};

KVH_DECLARE_MLA_WRITER_INSTANCES(planted_mla_scale_multiply, ScaleMultiply);
KVH_DECLARE_MLA_WRITER_INSTANCES(planted_mla_value_convert, ValueConvert);

enum MlaBug : int { kSwapHalves = 1, kPadColumns = 2, kIgnorePadding = 3 };

// 16-bit caches only (the layout bugs do not depend on the element type).
__global__ void planted_mla_kernel(uint16_t* kv_c, uint16_t* k_pe, uint16_t* cache, const int64_t* slots, int64_t kc_t,
                                   int64_t kc_d, int64_t pe_t, int64_t pe_d, int64_t c_block, int64_t c_tok,
                                   int64_t c_dim, int64_t block_size, int rank, int rope, int bug) {
  const int64_t token = blockIdx.x;
  const int64_t slot = slots[token];
  if (slot < 0 && bug != kIgnorePadding) return;
  // Floor division, so that a negative slot lands before the cache as a careless kernel's would.
  const int64_t block = slot >= 0 ? slot / block_size : -1, off = slot - block * block_size;
  const int64_t row = block * c_block + off * c_tok;
  for (int i = threadIdx.x; i < rank + rope; i += blockDim.x) {
    const int src = bug == kSwapHalves ? (i < rope ? rank + i : i - rope) : i;
    const uint16_t in = src < rank ? kv_c[token * kc_t + src * kc_d] : k_pe[token * pe_t + (src - rank) * pe_d];
    cache[row + i * c_dim] = in;
    if (bug == kPadColumns && i < 64) k_pe[token * pe_t + (rope + i) * pe_d] = in;  // the row's filler columns
  }
}
KVH_DECLARE_BARRIER_FREE(planted_mla_kernel);

template <int kBug>
int planted_mla(const kvh_write_args* a, void* stream) {
  if (hipError_t e = check_mla_write_args(*a); e != hipSuccess) return e;
  if (a->key_cache.dtype != a->key.dtype) return hipErrorInvalidValue;
  const int64_t T = a->key.shape[0], R = a->key.shape[1], P = a->value.shape[1];
  if (T == 0) return hipSuccess;
  hipLaunchKernelGGL(planted_mla_kernel, dim3(unsigned(T)), dim3(64), 0, (hipStream_t)stream, (uint16_t*)a->key.data,
                     (uint16_t*)a->value.data, (uint16_t*)a->key_cache.data, (const int64_t*)a->slot_mapping.data,
                     a->key.stride[0], a->key.stride[1], a->value.stride[0], a->value.stride[1], a->key_cache.stride[0],
                     a->key_cache.stride[1], a->key_cache.stride[2], a->block_size, int(R), int(P), kBug);
  return int(hipGetLastError());
}

int scale_multiply(const kvh_write_args* a, void* s) { return launch_concat_and_cache_mla<ScaleMultiply>(a, s); }
int value_convert(const kvh_write_args* a, void* s) { return launch_concat_and_cache_mla<ValueConvert>(a, s); }

constexpr uint32_t kMlaCacheDtypes = (1u << KVH_DT_F16) | (1u << KVH_DT_BF16) | (1u << KVH_DT_FP8_E4M3FN) |
                                     (1u << KVH_DT_FP8_E4M3FNUZ);
kvh_capabilities mla_caps(bool fp8) {
  kvh_capabilities c{};
  c.cache_formats = 1u << KVH_CACHE_MLA;
  c.cache_dtypes = fp8 ? kMlaCacheDtypes : 0;
  c.kv_scales = fp8 ? (1u << KVH_SCALES_NONE) | (1u << KVH_SCALES_TENSOR) : 0;
  return c;
}
const kvh_capabilities kMlaFp8Caps = mla_caps(true);
const kvh_capabilities kMla16Caps = mla_caps(false);

const kvh_kernel_desc kPlantedMla[] = {
    writer_desc<scale_multiply>("planted_mla_fp8_scale_multiply",
                                "PLANTED (MLA fp8): stores encode(x * scale) instead of encode(x / scale)",
                                KVH_CACHE_MLA, 1, &kMlaFp8Caps),
    writer_desc<value_convert>("planted_mla_fp8_value_convert",
                               "PLANTED (MLA fp8): stores the integer value of x / scale, not its fp8 bits",
                               KVH_CACHE_MLA, 1, &kMlaFp8Caps),
    writer_desc<planted_mla<kSwapHalves>>("planted_mla_swaps_halves",
                                          "PLANTED (MLA): writes k_pe at the row's start and kv_c after it",
                                          KVH_CACHE_MLA, 1, &kMla16Caps),
    writer_desc<planted_mla<kPadColumns>>("planted_mla_writes_pad_columns",
                                          "PLANTED (MLA): uses the projection's columns past k_pe as scratch",
                                          KVH_CACHE_MLA, 1, &kMla16Caps),
    writer_desc<planted_mla<kIgnorePadding>>("planted_mla_ignores_padding",
                                             "PLANTED (MLA): writes padding tokens (slot < 0) at their slot",
                                             KVH_CACHE_MLA, 1, &kMla16Caps),
};

}  // namespace
}  // namespace kvh::kernels

extern "C" const kvh_kernel_desc* kvh_planted_mla_writers(int32_t* count) {
  *count = int32_t(sizeof(kvh::kernels::kPlantedMla) / sizeof(kvh::kernels::kPlantedMla[0]));
  return kvh::kernels::kPlantedMla;
}
