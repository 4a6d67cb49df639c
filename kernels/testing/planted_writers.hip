// PLANTED BUGS for the harness's own tests, never registered in the builtin
// provider: each one breaks exactly one rule a cache writer must keep, so a
// test can show that the check for that rule fails. Flash (NHD) cache.
#include <cstdlib>

#include "registry/kernel_desc.h"
#include "writers/writer_common.h"

#include <math.h>

namespace kvh::kernels {
namespace {

enum PlantedWriterBug : int {
  kIgnoresNegativeSlot = 1,  // writes padding tokens (slot -1) too
  kWritesOnePast = 2,        // also writes the element just after its slot's last one
  kSwapsKV = 3,              // K into the V cache and V into the K cache
  kSkipsLastToken = 4,       // never writes the last token
  kInt32Offset = 5,          // the element offset kept in 32 bits: wraps past 2^31 (issue 23)
};

__global__ void planted_writer_kernel(const uint16_t* key, const uint16_t* value, uint16_t* key_cache,
                                      uint16_t* value_cache, const int64_t* slot_mapping, Strides5 ks, Strides5 vs,
                                      NhdCacheAddr cache, int64_t block_size, int64_t num_kv_heads,
                                      int64_t head_size, int bug) {
  const int64_t token = blockIdx.x;
  if (bug == kSkipsLastToken && token == int64_t(gridDim.x) - 1) return;
  const int64_t slot = slot_mapping[token];
  if (slot < 0 && bug != kIgnoresNegativeSlot) return;
  const int64_t block = slot / block_size, offset = slot % block_size;
  uint16_t* kc = bug == kSwapsKV ? value_cache : key_cache;
  uint16_t* vc = bug == kSwapsKV ? key_cache : value_cache;
  for (int64_t i = threadIdx.x; i < num_kv_heads * head_size; i += blockDim.x) {
    const int64_t h = i / head_size, d = i % head_size;
    int64_t ko = cache.k(block, h, offset, d), vo = cache.v(block, h, offset, d);
    if (bug == kInt32Offset) ko = int32_t(ko), vo = int32_t(vo);  // `int offset = ...`: right below 2^31
    kc[ko] = key[token * ks.s[0] + h * ks.s[1] + d * ks.s[2]];
    vc[vo] = value[token * vs.s[0] + h * vs.s[1] + d * vs.s[2]];
    if (bug == kWritesOnePast && i == num_kv_heads * head_size - 1) vc[vo + 1] = vc[vo];
  }
}
KVH_DECLARE_BARRIER_FREE(planted_writer_kernel);

int launch_planted(const kvh_write_args* a, void* stream, int bug) {
  if (hipError_t e = check_write_args(*a, KVH_CACHE_NHD); e != hipSuccess) return e;
  const int64_t num_tokens = a->key.shape[0];
  if (num_tokens == 0) return hipSuccess;
  hipLaunchKernelGGL(planted_writer_kernel, dim3(unsigned(num_tokens)),
                     dim3(writer_block_threads(a->key.shape[1], a->key.shape[2])), 0, (hipStream_t)stream,
                     (const uint16_t*)a->key.data, (const uint16_t*)a->value.data, (uint16_t*)a->key_cache.data,
                     (uint16_t*)a->value_cache.data, (const int64_t*)a->slot_mapping.data, strides_of(a->key),
                     strides_of(a->value), NhdCacheAddr(a->key_cache, a->value_cache), a->block_size,
                     a->key.shape[1], a->key.shape[2], bug);
  return hipGetLastError();
}

// fp8 quantization bugs (issue 11), NHD, element by element; fp16 keys/values.
enum PlantedFp8Bug : int {
  kFp8Truncates = 1,          // rounds toward zero instead of to nearest even
  kFp8MultipliesScale = 2,    // stores encode(x * scale) instead of encode(x / scale)
  kFp8TokenScaleSwapped = 3,  // token scales [blocks, kv heads, block_size] read as [blocks, block_size, kv heads]
};

__global__ void planted_fp8_writer_kernel(const uint16_t* key, const uint16_t* value, uint8_t* key_cache,
                                          uint8_t* value_cache, const int64_t* slot_mapping, Strides5 ks, Strides5 vs,
                                          NhdCacheAddr cache, int64_t block_size, int64_t num_kv_heads,
                                          int64_t head_size, KvScales sc, bool fnuz, int bug) {
  const int64_t token = blockIdx.x;
  const int64_t slot = slot_mapping[token];
  if (slot < 0) return;
  const int64_t block = slot / block_size, offset = slot % block_size;
  for (int64_t i = threadIdx.x; i < num_kv_heads * head_size; i += blockDim.x) {
    const int64_t h = i / head_size, d = i % head_size;
    for (int m = 0; m < 2; ++m) {
      const ScaleView& view = m ? sc.v : sc.k;
      float scale = scale_at(sc.granularity, view, 1.f, block, h, offset);
      if (bug == kFp8TokenScaleSwapped && sc.granularity == KVH_SCALES_TOKEN)
        scale = view.data[block * view.s[0] + offset * num_kv_heads + h];
      const float x = to_float(fp16_t{m ? value[token * vs.s[0] + h * vs.s[1] + d * vs.s[2]]
                                        : key[token * ks.s[0] + h * ks.s[1] + d * ks.s[2]]});
      const float q = bug == kFp8MultipliesScale ? x * scale : x / scale;
      uint8_t code = float_to_fp8(q, fnuz);
      if (bug == kFp8Truncates && (code & 0x7F) != 0 && fabsf(fp8_to_float(code, fnuz)) > fabsf(q)) --code;
      if (m)
        value_cache[cache.v(block, h, offset, d)] = code;
      else
        key_cache[cache.k(block, h, offset, d)] = code;
    }
  }
}
KVH_DECLARE_BARRIER_FREE(planted_fp8_writer_kernel);

int launch_planted_fp8(const kvh_write_args* a, void* stream, int bug) {
  if (hipError_t e = check_write_args(*a, KVH_CACHE_NHD); e != hipSuccess) return e;
  if (!is_fp8(a->key_cache.dtype) || a->key.dtype != KVH_DT_F16) return hipErrorInvalidValue;
  const int64_t num_tokens = a->key.shape[0];
  if (num_tokens == 0) return hipSuccess;
  hipLaunchKernelGGL(planted_fp8_writer_kernel, dim3(unsigned(num_tokens)),
                     dim3(writer_block_threads(a->key.shape[1], a->key.shape[2])), 0, (hipStream_t)stream,
                     (const uint16_t*)a->key.data, (const uint16_t*)a->value.data, (uint8_t*)a->key_cache.data,
                     (uint8_t*)a->value_cache.data, (const int64_t*)a->slot_mapping.data, strides_of(a->key),
                     strides_of(a->value), NhdCacheAddr(a->key_cache, a->value_cache), a->block_size,
                     a->key.shape[1], a->key.shape[2], kv_scales_of(*a), a->key_cache.dtype == KVH_DT_FP8_E4M3FNUZ, bug);
  return hipGetLastError();
}

// Half the block waits at a barrier the other half never reaches: a hang (a
// deadlock of fibers on the cpu backend), for the runner's watchdog test.
__global__ void planted_hang_kernel(int64_t* sink) {
  if (threadIdx.x < blockDim.x / 2) __syncthreads();
  if (threadIdx.x == 0) sink[0] = 1;
}

int hangs(const kvh_write_args* a, void* stream) {
  hipLaunchKernelGGL(planted_hang_kernel, dim3(1), dim3(64), 0, (hipStream_t)stream, (int64_t*)a->slot_mapping.data);
  return hipGetLastError();
}

// Writes 2^40 elements before the cache: a segfault on the cpu backend, an
// illegal address on a GPU, for the runner's crash test.
__global__ void planted_wild_write_kernel(uint16_t* key_cache) {
  if (threadIdx.x == 0) key_cache[-(int64_t(1) << 40)] = 1;
}

int wild_write(const kvh_write_args* a, void* stream) {
  hipLaunchKernelGGL(planted_wild_write_kernel, dim3(1), dim3(64), 0, (hipStream_t)stream, (uint16_t*)a->key_cache.data);
  return hipGetLastError();
}

// Aborts the process at launch (a library's failed assertion): --isolate's crash test.
int aborts(const kvh_write_args*, void*) { std::abort(); }

int ignores_negative_slot(const kvh_write_args* a, void* s) { return launch_planted(a, s, kIgnoresNegativeSlot); }
int writes_one_past(const kvh_write_args* a, void* s) { return launch_planted(a, s, kWritesOnePast); }
int swaps_kv(const kvh_write_args* a, void* s) { return launch_planted(a, s, kSwapsKV); }
int skips_last_token(const kvh_write_args* a, void* s) { return launch_planted(a, s, kSkipsLastToken); }
int int32_offset(const kvh_write_args* a, void* s) { return launch_planted(a, s, kInt32Offset); }

int fp8_truncates(const kvh_write_args* a, void* s) { return launch_planted_fp8(a, s, kFp8Truncates); }
int fp8_multiplies_scale(const kvh_write_args* a, void* s) { return launch_planted_fp8(a, s, kFp8MultipliesScale); }
int fp8_token_scale_swapped(const kvh_write_args* a, void* s) { return launch_planted_fp8(a, s, kFp8TokenScaleSwapped); }

template <int (*F)(const kvh_write_args*, void*)>
kvh_kernel_desc planted(const char* name, const char* description) {
  return writer_desc<F>(name, description, KVH_CACHE_NHD, 1);
}

kvh_capabilities fp8_writer_caps() {
  kvh_capabilities c{};
  c.dtypes = 1u << KVH_DT_F16;
  c.cache_dtypes = (1u << KVH_DT_FP8_E4M3FN) | (1u << KVH_DT_FP8_E4M3FNUZ);
  c.kv_scales = (1u << KVH_SCALES_NONE) | (1u << KVH_SCALES_TENSOR) | (1u << KVH_SCALES_HEAD) |
                (1u << KVH_SCALES_BLOCK) | (1u << KVH_SCALES_TOKEN);
  return c;
}
const kvh_capabilities kFp8WriterCaps = fp8_writer_caps();

template <int (*F)(const kvh_write_args*, void*)>
kvh_kernel_desc planted_fp8(const char* name, const char* description) {
  return writer_desc<F>(name, description, KVH_CACHE_NHD, 1, &kFp8WriterCaps);
}

const kvh_kernel_desc kPlanted[] = {
    planted<ignores_negative_slot>("planted_ignores_negative_slot", "PLANTED: writes padding tokens (slot < 0)"),
    planted<writes_one_past>("planted_writes_one_past", "PLANTED: writes one element past its slot"),
    planted<swaps_kv>("planted_swaps_kv", "PLANTED: swaps the K and V caches"),
    planted<skips_last_token>("planted_skips_last_token", "PLANTED: never writes the last token"),
    planted<int32_offset>("planted_writer_int32_offset",
                          "PLANTED: computes the cache element offset in int32 (wraps past 2^31 elements)"),
    planted<wild_write>("planted_wild_write", "PLANTED: writes 2^40 elements before the cache (a fault)"),
    planted<hangs>("planted_hangs", "PLANTED: a barrier half the block never reaches (hangs)"),
    planted<aborts>("planted_aborts", "PLANTED: aborts the process at launch (a failed assertion)"),
    planted_fp8<fp8_truncates>("planted_fp8_truncates", "PLANTED (fp8): rounds toward zero, not to nearest even"),
    planted_fp8<fp8_multiplies_scale>("planted_fp8_multiplies_scale",
                                      "PLANTED (fp8): stores encode(x * scale) instead of encode(x / scale)"),
    planted_fp8<fp8_token_scale_swapped>(
        "planted_fp8_token_scale_swapped",
        "PLANTED (fp8): token scales [blocks, kv heads, block_size] indexed as [blocks, block_size, kv heads]"),
};

}  // namespace
}  // namespace kvh::kernels

extern "C" const kvh_kernel_desc* kvh_planted_writers(int32_t* count) {
  *count = int32_t(sizeof(kvh::kernels::kPlanted) / sizeof(kvh::kernels::kPlanted[0]));
  return kvh::kernels::kPlanted;
}
