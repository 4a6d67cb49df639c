// Reference FP8 codecs, written from the formats' definitions (OCP 8-bit
// floating point spec v1.0 for E4M3; PyTorch's float8_e4m3fnuz for the "fnuz"
// variant), sharing no code with kernels/. Header-only arithmetic on double
// (no library calls, no bit tricks on floats) so that the harness's own device
// work (kernels/device/device_ops.hip, the reference cache writer) can use the same
// code on a GPU: the writer check then compares a kernel's quantization with
// this one, byte for byte.
//
// Both formats: 1 sign bit, 4 exponent bits E, 3 mantissa bits M, no Inf.
//   e4m3fn   bias 7.  E=0: subnormal M * 2^-9; else (1 + M/8) * 2^(E-7).
//            NaN = S.1111.111 (0x7F, 0xFF); largest finite 0x7E = 448;
//            0x80 is -0.
//   e4m3fnuz bias 8.  E=0: subnormal M * 2^-10; else (1 + M/8) * 2^(E-8).
//            0x80 is the only NaN (no -0); largest finite 0x7F = 240.
// The same code decodes to values 2x apart in the two formats (when finite).
#pragma once
#include <stdint.h>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define KVH_REF_HD __host__ __device__
#else
#define KVH_REF_HD
#endif

namespace kvh::reference {

/// The two FP8 cache formats.
enum class Fp8Format { E4M3FN, E4M3FNUZ };

/// Parameters of a format, from its definition.
struct Fp8Spec {
  int bias;              // exponent bias
  double max_finite;     // largest finite magnitude
  uint8_t max_code;      // its positive code
  bool has_negative_zero;
};

KVH_REF_HD inline Fp8Spec fp8_spec(Fp8Format f) {
  return f == Fp8Format::E4M3FN ? Fp8Spec{7, 448.0, 0x7E, true} : Fp8Spec{8, 240.0, 0x7F, false};
}

/// 2^e for a small integer e, by repeated doubling or halving (exact).
KVH_REF_HD inline double fp8_pow2(int e) {
  double r = 1.0;
  for (; e > 0; --e) r *= 2.0;
  for (; e < 0; ++e) r *= 0.5;
  return r;
}

/// True when `code` is a NaN of format f (fn: S.1111.111; fnuz: 0x80 only).
KVH_REF_HD inline bool fp8_is_nan(uint8_t code, Fp8Format f) {
  return f == Fp8Format::E4M3FN ? (code & 0x7F) == 0x7F : code == 0x80;
}

/// The value of `code` in format f: NaN for a NaN code (as 0.0/0.0), -0.0 for
/// e4m3fn's 0x80. Every finite code is exact in double (and in float).
KVH_REF_HD inline double fp8_decode(uint8_t code, Fp8Format f) {
  if (fp8_is_nan(code, f)) {
    volatile double zero = 0.0;  // a quiet NaN without <cmath>
    return zero / zero;
  }
  const Fp8Spec s = fp8_spec(f);
  const int E = (code >> 3) & 0xF, M = code & 0x7;
  const double mag = E == 0 ? M * fp8_pow2(1 - s.bias - 3) : (8 + M) * fp8_pow2(E - s.bias - 3);
  return (code & 0x80) ? -mag : mag;
}

/// The code of `v` in format f: round to nearest, ties to the even mantissa;
/// magnitudes above the largest finite value (Inf included) saturate to it
/// with v's sign; NaN gives the format's NaN (fn: 0x7F, the NaN's sign not
/// kept; fnuz: 0x80). Zero: fn keeps the sign (0x00 / 0x80), fnuz has only 0x00
/// (a negative value that rounds to zero too).
KVH_REF_HD inline uint8_t fp8_encode(double v, Fp8Format f) {
  const Fp8Spec s = fp8_spec(f);
  const bool neg = v < 0 || (v == 0 && 1.0 / v < 0);  // -0.0 counts as negative
  if (v != v) return f == Fp8Format::E4M3FN ? uint8_t(0x7F) : uint8_t(0x80);
  const uint8_t sign = neg ? 0x80 : 0;
  double a = neg ? -v : v;
  if (a >= s.max_finite) return uint8_t(sign | s.max_code);
  // The binade: the largest E in [1 - bias, 15 - bias] with 2^E <= a (the
  // lowest one also holds the subnormals); the quantum there is 2^(E - 3).
  int e = 15 - s.bias;
  double p = fp8_pow2(e);
  while (e > 1 - s.bias && a < p) {
    --e;
    p *= 0.5;
  }
  const double quantum = fp8_pow2(e - 3);
  const double q = a / quantum;  // exact: a has 53 bits at most, quantum is a power of two
  int64_t n = int64_t(q);        // q < 16: truncation is floor
  const double rest = q - double(n);
  if (rest > 0.5 || (rest == 0.5 && (n & 1))) ++n;
  const double r = double(n) * quantum;  // the rounded magnitude (<= max_finite: see above)
  if (r == 0) return s.has_negative_zero ? sign : uint8_t(0);
  // Bits of r: the subnormal binade has E = 0, M = r / 2^(1 - bias - 3).
  const double min_normal = fp8_pow2(1 - s.bias);
  if (r < min_normal) return uint8_t(sign | int(r / fp8_pow2(1 - s.bias - 3)));
  int E = 1;
  double b = min_normal;
  while (r >= 2 * b) {
    b *= 2;
    ++E;
  }
  const int M = int(r / b * 8.0) - 8;
  return uint8_t(sign | (E << 3) | M);
}

/// Host helpers (fp8.cpp).
/// "fp8_e4m3fn" / "fp8_e4m3fnuz".
const char* to_string(Fp8Format f);

}  // namespace kvh::reference
