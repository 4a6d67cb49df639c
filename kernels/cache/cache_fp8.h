// FP8 cache elements on the device: decode and encode of e4m3fn and
// e4m3fnuz (provider.h states both formats), the scale lookup of the four
// kv_scales granularities, and the cache-element policies the writers and
// readers are templated on. Plain bit manipulation on float32, the same bits
// on every backend (host SIMT, CUDA, HIP). reference/fp8.h is the independent
// codec the harness checks these against (kernels/cache/cache_fp8_test.cpp).
#pragma once
#include <math.h>
#include <stdint.h>

#include "kvh_runtime.h"
#include "kvharness/provider.h"

namespace kvh::kernels {

/// Float value of fp8 code c: e4m3fn (bias 7, NaN S.1111.111) or, with
/// fnuz, e4m3fnuz (bias 8, NaN 0x80 only, no -0). NaN codes give a quiet NaN.
KVH_HD inline float fp8_to_float(uint8_t c, bool fnuz) {
  const uint32_t sign = uint32_t(c & 0x80u) << 24, e = (c >> 3) & 0xFu, m = c & 0x7u;
  if (fnuz ? c == 0x80u : (c & 0x7Fu) == 0x7Fu) return bits_to_float(0x7FC00000u | sign);
  if (e == 0) {  // subnormal: m * 2^(-6-3) or 2^(-7-3)
    const float f = float(m) * (fnuz ? 0.0009765625f : 0.001953125f);
    return sign ? -f : f;
  }
  const uint32_t bias = fnuz ? 8u : 7u;
  return bits_to_float(sign | ((e + 127u - bias) << 23) | (m << 20));
}

/// fp8 code of f: round to nearest even; magnitudes at or above the largest
/// finite value (448 fn, 240 fnuz), Inf included, saturate to it; NaN gives
/// the NaN code (fn: 0x7F whatever the NaN's sign, fnuz: 0x80); fnuz has no -0 (gives 0x00).
KVH_HD inline uint8_t float_to_fp8(float f, bool fnuz) {
  const uint32_t u = float_to_bits(f), a = u & 0x7FFFFFFFu;
  const uint8_t sign = uint8_t((u >> 24) & 0x80u);
  if (a > 0x7F800000u) return fnuz ? uint8_t(0x80) : uint8_t(0x7F);  // a NaN's sign is not kept
  const uint32_t bias = fnuz ? 8u : 7u;
  if (a >= (fnuz ? 0x43700000u : 0x43E00000u)) return uint8_t(sign | (fnuz ? 0x7F : 0x7E));  // >= 240 / 448
  uint32_t code;
  if ((a >> 23) >= 128u - bias) {  // normal in fp8: keep 3 mantissa bits, round the other 20 to even
    const uint32_t r = (a + 0x7FFFFu + ((a >> 20) & 1u)) >> 20;
    code = r - ((127u - bias) << 3);  // exponent rebiased; a mantissa carry moves to the exponent
  } else {  // subnormal in fp8: round |f| / 2^(-bias-2) to an integer, ties to even (8 = min normal)
    const float s = bits_to_float(a) * (fnuz ? 1024.f : 512.f);
    code = uint32_t(s);
    const float rest = s - float(code);
    if (rest > 0.5f || (rest == 0.5f && (code & 1u))) ++code;
  }
  if (code == 0) return fnuz ? uint8_t(0) : sign;
  return uint8_t(sign | code);
}

/// int8 code of q = value / scale (provider.h KVH_DT_I8): round half to even
/// (rintf in the default rounding mode, as vLLM's float_to_int8_rn's
/// nearbyint), saturating at +-127 (never -128); NaN gives 0.
KVH_HD inline int8_t float_to_int8_sat(float q) {
  if (q != q) return 0;
  return int8_t(rintf(fminf(fmaxf(q, -127.f), 127.f)));
}

/// One f32 scale tensor (k_scales or v_scales): data and up to 3 strides (elements).
struct ScaleView {
  const float* data;
  int64_t s[3];
};

/// The scales of a launch: granularity (kvh_scale_granularity) and the two views.
struct KvScales {
  int32_t granularity;
  ScaleView k, v;
};

/// Scale of (physical block, kv head, token-in-block) of view `v` under
/// `granularity` (provider.h: TENSOR [1], HEAD [num_kv_heads], BLOCK
/// [num_blocks, num_kv_heads], TOKEN [num_blocks, num_kv_heads, block_size],
/// SLOT [num_blocks, block_size]);
/// `none` when the granularity is NONE.
KVH_HD inline float scale_at(int32_t granularity, const ScaleView& v, float none, int64_t block, int64_t kv_head,
                             int64_t tok) {
  switch (granularity) {
    case KVH_SCALES_TENSOR: return v.data[0];
    case KVH_SCALES_HEAD: return v.data[kv_head * v.s[0]];
    case KVH_SCALES_BLOCK: return v.data[block * v.s[0] + kv_head * v.s[1]];
    case KVH_SCALES_TOKEN: return v.data[block * v.s[0] + kv_head * v.s[1] + tok * v.s[2]];
    case KVH_SCALES_SLOT: return v.data[block * v.s[0] + tok * v.s[1]];
    default: return none;
  }
}

inline ScaleView scale_view_of(const kvh_tensor& t) {
  ScaleView v{static_cast<const float*>(t.data), {0, 0, 0}};
  for (int i = 0; i < t.ndim && i < 3; ++i) v.s[i] = t.stride[i];
  return v;
}

/// Checks a scale tensor against `granularity` (shape per provider.h, f32, data set).
inline bool scale_tensor_ok(int32_t granularity, const kvh_tensor& t, int64_t num_blocks, int64_t num_kv_heads,
                            int64_t block_size) {
  if (granularity == KVH_SCALES_NONE) return true;
  if (!t.data || t.dtype != KVH_DT_F32) return false;
  switch (granularity) {
    case KVH_SCALES_TENSOR: return t.ndim == 1 && t.shape[0] == 1;
    case KVH_SCALES_HEAD: return t.ndim == 1 && t.shape[0] == num_kv_heads;
    case KVH_SCALES_BLOCK: return t.ndim == 2 && t.shape[0] == num_blocks && t.shape[1] == num_kv_heads;
    case KVH_SCALES_TOKEN:
      return t.ndim == 3 && t.shape[0] == num_blocks && t.shape[1] == num_kv_heads && t.shape[2] == block_size;
    case KVH_SCALES_SLOT: return t.ndim == 2 && t.shape[0] == num_blocks && t.shape[1] == block_size;
    default: return false;
  }
}

inline bool is_fp8(int32_t dtype) { return dtype == KVH_DT_FP8_E4M3FN || dtype == KVH_DT_FP8_E4M3FNUZ; }
/// One-byte codes with dequant scales: fp8 or int8 (x = 16, kv_scales apply).
inline bool is_quantized(int32_t dtype) { return is_fp8(dtype) || dtype == KVH_DT_I8; }

/// Cache-element policies. Storage: the cache's element type; kX = 16 bytes /
/// sizeof(Storage) (DESIGN.md); load: the dequantized value before the
/// scale; kQuantized: whether scales apply.
template <class T> struct Cache16 {
  using Storage = T;
  static constexpr int kX = 8;
  static constexpr bool kQuantized = false;
  static KVH_HD float load(const Storage* p, int64_t i) { return to_float(p[i]); }
};
template <bool kFnuz> struct CacheFp8 {
  using Storage = uint8_t;
  static constexpr int kX = 16;
  static constexpr bool kQuantized = true;
  static KVH_HD float load(const Storage* p, int64_t i) { return fp8_to_float(p[i], kFnuz); }
};

/// int8 caches (provider.h KVH_DT_I8): the code's value; the scale applies after.
struct CacheInt8 {
  using Storage = uint8_t;
  static constexpr int kX = 16;
  static constexpr bool kQuantized = true;
  static KVH_HD float load(const Storage* p, int64_t i) { return float(int8_t(p[i])); }
};

/// The k_scales/v_scales of reader or writer args, when the struct has them (ABI 0.3 fields).
template <class Args> KvScales kv_scales_of(const Args& a) {
  KvScales s{KVH_SCALES_NONE, {nullptr, {0, 0, 0}}, {nullptr, {0, 0, 0}}};
  if (!KVH_HAS_FIELD(&a, Args, v_scales)) return s;
  s.granularity = a.kv_scales;
  s.k = scale_view_of(a.k_scales);
  s.v = scale_view_of(a.v_scales);
  return s;
}

}  // namespace kvh::kernels
