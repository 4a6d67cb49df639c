// Reference int8 KV-cache codec (provider.h KVH_DT_I8), written from the
// definition and sharing no code with kernels/: symmetric, value = code * scale;
// a writer stores clamp(round_half_even(value / scale), -127, 127), the
// division in float32. Header-only arithmetic with no library calls, so that the
// harness's device work (the reference cache writer) uses the same code.
//
// Rounding follows vLLM's float_to_int8_rn (csrc/quantization/compressed_tensors/
// int8_quant_kernels.cu): round to nearest, ties to even (nearbyint on ROCm,
// cvt.rni.sat on CUDA). It saturates at [-128, 127]; we saturate at +-127,
// the symmetric range of a scale chosen as absmax / 127: negation stays exact,
// and -128 is never written, so the harness uses it as the stale-cache marker
// (harness/case/stale.h).
#pragma once
#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define KVH_REF_I8_HD __host__ __device__
#else
#define KVH_REF_I8_HD
#endif

namespace kvh::reference {

/// Largest code magnitude a writer stores.
constexpr int kInt8MaxCode = 127;

/// round_half_even(q) for a finite float q, clamped to [-127, 127]; NaN gives 0
/// (no writer is given NaN inputs; 0 keeps the function total). Works on
/// the float's value only: the integer part by truncation through int64 (|q|
/// is clamped first, so it fits), then the tie rule on the exact remainder.
KVH_REF_I8_HD inline int8_t int8_round_clamp(float q) {
  if (q != q) return 0;
  if (q >= 127.f) return 127;
  if (q <= -127.f) return -127;
  const bool neg = q < 0;
  const float a = neg ? -q : q;
  int32_t i = int32_t(a);         // truncation: a < 127, exact
  const float rest = a - float(i);  // exact: a and i share the binade's ulp or finer
  if (rest > 0.5f || (rest == 0.5f && (i & 1))) ++i;
  return int8_t(neg ? -i : i);
}

/// The code of value v under `scale`: clamp(round_half_even(float(v) / scale), -127, 127).
KVH_REF_I8_HD inline int8_t int8_encode(float v, float scale) { return int8_round_clamp(v / scale); }

/// The value of `code` under `scale`, in double: code * scale, exact (an 8-bit
/// integer times a float fits in double's 53 bits).
KVH_REF_I8_HD inline double int8_decode(int8_t code, float scale) { return double(code) * double(scale); }

}  // namespace kvh::reference
