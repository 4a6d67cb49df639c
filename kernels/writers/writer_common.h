// Small helpers shared by the cache-writer kernels: the argument check every
// launcher runs and the launch geometry. Cache addresses come from
// cache/cache_addressing.h (one type per format); the key/value inputs
// [num_tokens, num_kv_heads, head_size] are indexed through Strides5.
#pragma once
#include "cache/cache_addressing.h"
#include "cache/cache_fp8.h"
#include "kvh_runtime.h"
#include "kvharness/provider.h"

namespace kvh::kernels {

/// Strides of one view (the key/value inputs), passed by value into a kernel (elements, 64-bit).
struct Strides5 {
  int64_t s[5];
};

inline Strides5 strides_of(const kvh_tensor& t) {
  Strides5 r{};
  for (int i = 0; i < t.ndim && i < 5; ++i) r.s[i] = t.stride[i];
  return r;
}

/// Eight consecutive 16-bit elements along head_size (one x-vector of a
/// 16-bit cache): the unit the writers move, 16 bytes.
struct alignas(16) Chunk8 {
  uint16_t e[8];
};

/// Loads p[0], p[stride], ..., p[7*stride]: one 16-byte access when `contiguous`.
__device__ __forceinline__ Chunk8 load_chunk(const uint16_t* p, int64_t stride, bool contiguous) {
  Chunk8 c;
  if (contiguous) {
    c = *reinterpret_cast<const Chunk8*>(p);
  } else {
    for (int j = 0; j < 8; ++j) c.e[j] = p[j * stride];
  }
  return c;
}

/// Stores c to p[0], p[stride], ..., p[7*stride]: one 16-byte access when `contiguous`.
__device__ __forceinline__ void store_chunk(uint16_t* p, int64_t stride, bool contiguous, const Chunk8& c) {
  if (contiguous) {
    *reinterpret_cast<Chunk8*>(p) = c;
  } else {
    for (int j = 0; j < 8; ++j) p[j * stride] = c.e[j];
  }
}

/// True when every chunk of 8 elements along `dim` (starting at a multiple of
/// 8) is one aligned 16-byte run of view t: unit stride on dim, every other
/// stride a multiple of 8 elements, data 16-byte aligned. Any other view takes
/// the element-by-element path: still right, just slower.
inline bool chunks_contiguous(const kvh_tensor& t, int dim) {
  if (reinterpret_cast<uintptr_t>(t.data) % 16 != 0 || t.stride[dim] != 1) return false;
  for (int i = 0; i < t.ndim; ++i)
    if (i != dim && t.stride[i] % 8 != 0) return false;
  return true;
}

/// Checks the shapes a writer of `format` needs (NHD and HND: K and V of one shape). Returns hipErrorInvalidValue
/// when a rank, dtype or extent disagrees (the launcher then does not launch).
/// key/value are fp16 or bf16; the caches hold the same dtype or an fp8 one
/// (both caches alike), x = 16 bytes / cache element; fp8 scale tensors must
/// match kv_scales (fp8_scale_shapes_ok); a 16-bit cache takes no scales.
inline hipError_t check_write_args(const kvh_write_args& a, kvh_cache_format format) {
  const kvh_tensor& k = a.key;
  if (k.ndim != 3 || a.value.ndim != 3 || a.slot_mapping.ndim != 1 || a.slot_mapping.dtype != KVH_DT_I64)
    return hipErrorInvalidValue;
  if (k.dtype != a.value.dtype || a.key_cache.dtype != a.value_cache.dtype) return hipErrorInvalidValue;
  if (k.dtype != KVH_DT_F16 && k.dtype != KVH_DT_BF16) return hipErrorInvalidValue;
  const bool fp8 = is_quantized(a.key_cache.dtype);  // fp8 or int8: one byte, scales apply
  if (!fp8 && a.key_cache.dtype != k.dtype) return hipErrorInvalidValue;
  if (a.slot_mapping.shape[0] != k.shape[0] || a.value.shape[0] != k.shape[0]) return hipErrorInvalidValue;
  const int64_t heads = k.shape[1], hd = k.shape[2], bs = a.block_size;
  const kvh_tensor &kc = a.key_cache, &vc = a.value_cache;
  const KvScales sc = kv_scales_of(a);
  if (!fp8 && sc.granularity != KVH_SCALES_NONE) return hipErrorInvalidValue;
  if (!scale_tensor_ok(sc.granularity, a.k_scales, kc.shape[0], heads, bs) ||
      !scale_tensor_ok(sc.granularity, a.v_scales, kc.shape[0], heads, bs))
    return hipErrorInvalidValue;
  const int64_t elem_x = fp8 ? 16 : 8;  // 16 bytes / cache element
  switch (format) {
    case KVH_CACHE_NHD:
    case KVH_CACHE_HND: {
      const int tok = format == KVH_CACHE_NHD ? 1 : 2, head = 3 - tok;
      if (kc.ndim != 4 || vc.ndim != 4 || kc.shape[tok] != bs || kc.shape[head] != heads || kc.shape[3] != hd)
        return hipErrorInvalidValue;
      for (int i = 0; i < 4; ++i)
        if (vc.shape[i] != kc.shape[i]) return hipErrorInvalidValue;
      break;
    }
    case KVH_CACHE_PA_V1:
    case KVH_CACHE_SHUFFLE: {
      if (kc.ndim != 5 || kc.shape[1] != heads || kc.shape[3] != bs || kc.shape[2] * kc.shape[4] != hd)
        return hipErrorInvalidValue;
      const int64_t x = kc.shape[4];
      if (x != elem_x) return hipErrorInvalidValue;
      if (format == KVH_CACHE_PA_V1 && (vc.ndim != 4 || vc.shape[2] != hd || vc.shape[3] != bs)) return hipErrorInvalidValue;
      if (format == KVH_CACHE_SHUFFLE &&
          (vc.ndim != 5 || vc.shape[2] * vc.shape[4] != bs || vc.shape[3] != hd || vc.shape[4] != x))
        return hipErrorInvalidValue;
      break;
    }
    default: return hipErrorInvalidValue;
  }
  return hipSuccess;
}

/// Writer element policies: how an input element (16-bit bits) becomes a cache element.
/// Copy16: the bits as they are (fp16/bf16 caches). QuantizeFp8<T, fnuz>: the
/// input's value (T = fp16_t or bf16_t) divided by the scale, encoded to fp8
/// (round to nearest even, saturating; provider.h kvh_scale_granularity).
struct Copy16 {
  using Out = uint16_t;
  static constexpr int kX = 8;
  static constexpr bool kQuantized = false;
  static KVH_HD Out store(uint16_t in, float /*scale*/) { return in; }
};
template <class T, bool kFnuz> struct QuantizeFp8 {
  using Out = uint8_t;
  static constexpr int kX = 16;
  static constexpr bool kQuantized = true;
  static KVH_HD Out store(uint16_t in, float scale) { return float_to_fp8(to_float(T{in}) / scale, kFnuz); }
};
/// QuantizeInt8<T>: int8 caches (provider.h KVH_DT_I8): the value over the scale in float32,
/// rounded half to even and saturated at +-127 (cache_fp8.h float_to_int8_sat); the code's bits.
template <class T> struct QuantizeInt8 {
  using Out = uint8_t;
  static constexpr int kX = 16;
  static constexpr bool kQuantized = true;
  static KVH_HD Out store(uint16_t in, float scale) { return uint8_t(float_to_int8_sat(to_float(T{in}) / scale)); }
};

/// Stores the 8 elements of c to p[0], p[stride], ...: Copy16 through
/// store_chunk (16-byte store when `contiguous`), an fp8 policy element by element.
template <class E>
__device__ __forceinline__ void store_chunk_as(typename E::Out* p, int64_t stride, bool contiguous, const Chunk8& c,
                                               float scale) {
  if constexpr (!E::kQuantized) {
    store_chunk(p, stride, contiguous, c);
  } else {
    for (int j = 0; j < 8; ++j) p[j * stride] = E::store(c.e[j], scale);
  }
}

/// Calls fn(E{}) with the writer policy of a's cache and input dtypes; 
/// hipErrorInvalidValue for a pair no policy covers (check_write_args has refused it already).
template <class Fn> int with_writer_policy(const kvh_write_args& a, Fn&& fn) {
  const bool bf16 = a.key.dtype == KVH_DT_BF16;
  switch (a.key_cache.dtype) {
    case KVH_DT_F16:
    case KVH_DT_BF16: return fn(Copy16{});
    case KVH_DT_FP8_E4M3FN: return bf16 ? fn(QuantizeFp8<bf16_t, false>{}) : fn(QuantizeFp8<fp16_t, false>{});
    case KVH_DT_FP8_E4M3FNUZ: return bf16 ? fn(QuantizeFp8<bf16_t, true>{}) : fn(QuantizeFp8<fp16_t, true>{});
    case KVH_DT_I8: return bf16 ? fn(QuantizeInt8<bf16_t>{}) : fn(QuantizeInt8<fp16_t>{});
    default: return hipErrorInvalidValue;
  }
}

/// Threads per block for a writer: one work item (an element or an x-vector)
/// per thread, at least one wavefront (64), at most 256. On the host SIMT
/// runtime (cpu backend) 64 threads a block: there a thread is a function call
/// that repeats the token's prologue (slot load, block and offset divisions),
/// so fewer threads each looping over more items is the same work, cheaper.
/// The writers loop over a token's items with a stride of blockDim.x: any
/// block size is correct.
inline unsigned writer_block_threads(int64_t num_kv_heads, int64_t items_per_head) {
#if defined(KVH_BACKEND_HIP) || defined(KVH_BACKEND_CUDA)
  int64_t n = num_kv_heads * items_per_head;
  return unsigned(n < 256 ? (n < 64 ? 64 : n) : 256);
#else
  (void)num_kv_heads, (void)items_per_head;
  return 64;
#endif
}

}  // namespace kvh::kernels
