// The MLA cache writer (vLLM concat_and_cache_mla semantics; kvharness/provider.h KVH_CACHE_MLA):
// token t's kv_c [R] and k_pe [P] go, in that order, to the row of its slot in the latent cache
// [num_blocks, block_size, R + P]; negative slots write nothing. Every address comes from the
// views' strides (column views of one projection, separate/offset/padded caches, degenerate
// strides of size-1 dims). fp8 caches: code = encode(value / scale) with the one per-tensor scale
// (kv_scales TENSOR; NONE reads 1), round to nearest even, saturating (writer_common.h QuantizeFp8).
// The kernel is templated on the fp8 element policy so that the regression fixture and the planted
// mutant (kernels/fixtures, kernels/testing) differ from it by their policy alone.
#pragma once
#include "writers/writer_common.h"

namespace kvh::kernels {
namespace {  // one copy per translation unit: each registers its own instances with the host runtime

/// One thread block per token; its threads stride over the R + P elements of the row.
template <class E>
__global__ void concat_and_cache_mla_kernel(const uint16_t* __restrict__ kv_c, const uint16_t* __restrict__ k_pe,
                                            typename E::Out* __restrict__ cache, const int64_t* __restrict__ slots,
                                            int64_t kc_t, int64_t kc_d, int64_t pe_t, int64_t pe_d, int64_t c_block,
                                            int64_t c_tok, int64_t c_dim, int64_t block_size, int rank, int rope,
                                            const float* __restrict__ scale_p) {
  const int64_t token = blockIdx.x;
  const int64_t slot = slots[token];
  if (slot < 0) return;  // padding token
  const int64_t row = slot / block_size * c_block + slot % block_size * c_tok;
  const float scale = scale_p ? scale_p[0] : 1.f;
  for (int i = threadIdx.x; i < rank + rope; i += blockDim.x) {
    const uint16_t in = i < rank ? kv_c[token * kc_t + i * kc_d] : k_pe[token * pe_t + (i - rank) * pe_d];
    cache[row + i * c_dim] = E::store(in, scale);
  }
}

/// The checks of provider.h's MLA writer contract: key = kv_c [T, R], value = k_pe [T, P] (fp16 or
/// bf16, same dtype), key_cache = value_cache = [num_blocks, block_size, R + P] (the K/V dtype or an
/// fp8 one), slot_mapping [T] int64, kv_scales NONE or TENSOR (fp8 only). hipErrorInvalidValue otherwise.
inline hipError_t check_mla_write_args(const kvh_write_args& a) {
  const kvh_tensor &kc = a.key, &pe = a.value, &c = a.key_cache;
  if (kc.ndim != 2 || pe.ndim != 2 || c.ndim != 3 || a.value_cache.ndim != 3 || a.slot_mapping.ndim != 1 ||
      a.slot_mapping.dtype != KVH_DT_I64)
    return hipErrorInvalidValue;
  if (kc.dtype != pe.dtype || (kc.dtype != KVH_DT_F16 && kc.dtype != KVH_DT_BF16)) return hipErrorInvalidValue;
  if (a.value_cache.data != c.data || a.value_cache.dtype != c.dtype) return hipErrorInvalidValue;
  for (int i = 0; i < 3; ++i)
    if (a.value_cache.shape[i] != c.shape[i] || a.value_cache.stride[i] != c.stride[i]) return hipErrorInvalidValue;
  const bool fp8 = is_fp8(c.dtype);
  if (!fp8 && c.dtype != kc.dtype) return hipErrorInvalidValue;
  if (pe.shape[0] != kc.shape[0] || a.slot_mapping.shape[0] != kc.shape[0]) return hipErrorInvalidValue;
  if (c.shape[1] != a.block_size || c.shape[2] != kc.shape[1] + pe.shape[1]) return hipErrorInvalidValue;
  if (a.kv_scales != KVH_SCALES_NONE && (!fp8 || a.kv_scales != KVH_SCALES_TENSOR || !a.k_scales.data))
    return hipErrorInvalidValue;
  return hipSuccess;
}

/// Launches the writer with fp8 policy Q<T, fnuz> (writer_common.h QuantizeFp8's interface) for fp8 caches.
template <template <class, bool> class Q>
int launch_concat_and_cache_mla(const kvh_write_args* a, void* stream) {
  if (hipError_t e = check_mla_write_args(*a); e != hipSuccess) return e;
  const int64_t T = a->key.shape[0], R = a->key.shape[1], P = a->value.shape[1];
  if (T == 0) return hipSuccess;
  const float* scale = a->kv_scales == KVH_SCALES_TENSOR ? static_cast<const float*>(a->k_scales.data) : nullptr;
  const bool bf16 = a->key.dtype == KVH_DT_BF16;
  auto go = [&](auto e) {
    using E = decltype(e);
    hipLaunchKernelGGL(HIP_KERNEL_NAME(concat_and_cache_mla_kernel<E>), dim3(unsigned(T)),
                       dim3(writer_block_threads(1, R + P)), 0, (hipStream_t)stream, (const uint16_t*)a->key.data,
                       (const uint16_t*)a->value.data, (typename E::Out*)a->key_cache.data,
                       (const int64_t*)a->slot_mapping.data, a->key.stride[0], a->key.stride[1], a->value.stride[0],
                       a->value.stride[1], a->key_cache.stride[0], a->key_cache.stride[1], a->key_cache.stride[2],
                       a->block_size, int(R), int(P), scale);
    return int(hipGetLastError());
  };
  switch (a->key_cache.dtype) {
    case KVH_DT_FP8_E4M3FN: return bf16 ? go(Q<bf16_t, false>{}) : go(Q<fp16_t, false>{});
    case KVH_DT_FP8_E4M3FNUZ: return bf16 ? go(Q<bf16_t, true>{}) : go(Q<fp16_t, true>{});
    default: return go(Copy16{});
  }
}

}  // namespace
}  // namespace kvh::kernels

/// Declares the host runtime's barrier-free instances of the writer under policy Q (one per TU).
#define KVH_DECLARE_MLA_WRITER_INSTANCES(tag, Q)                                                                   \
  KVH_DECLARE_BARRIER_FREE_AS(tag##_copy16, concat_and_cache_mla_kernel<Copy16>);                                  \
  KVH_DECLARE_BARRIER_FREE_AS(tag##_fn_f16, concat_and_cache_mla_kernel<Q<fp16_t, false>>);                        \
  KVH_DECLARE_BARRIER_FREE_AS(tag##_fn_bf16, concat_and_cache_mla_kernel<Q<bf16_t, false>>);                       \
  KVH_DECLARE_BARRIER_FREE_AS(tag##_fnuz_f16, concat_and_cache_mla_kernel<Q<fp16_t, true>>);                       \
  KVH_DECLARE_BARRIER_FREE_AS(tag##_fnuz_bf16, concat_and_cache_mla_kernel<Q<bf16_t, true>>)
