// 16-bit float storage types and their conversions, written as plain bit
// manipulation so that every backend (host, CUDA, HIP) computes the same bits.
// fp16 is IEEE binary16; bf16 is the top half of binary32, rounded to nearest
// even on the way down (as PyTorch and hip_bfloat16 do).
#pragma once
#include <stdint.h>

#ifndef KVH_HD
#define KVH_HD __host__ __device__
#endif

namespace kvh {

struct fp16_t { uint16_t bits; };
struct bf16_t { uint16_t bits; };

KVH_HD inline float bits_to_float(uint32_t u) { union { uint32_t u; float f; } c; c.u = u; return c.f; }
KVH_HD inline uint32_t float_to_bits(float f) { union { uint32_t u; float f; } c; c.f = f; return c.u; }

KVH_HD inline float to_float(bf16_t v) { return bits_to_float(uint32_t(v.bits) << 16); }
KVH_HD inline float to_float(fp16_t v) {
  uint32_t sign = uint32_t(v.bits & 0x8000u) << 16;
  uint32_t exp = (v.bits >> 10) & 0x1fu, man = v.bits & 0x3ffu;
  if (exp == 0x1f) return bits_to_float(sign | 0x7f800000u | (man << 13));     // inf / nan
  if (exp != 0) return bits_to_float(sign | ((exp + 112u) << 23) | (man << 13)); // normal
  // subnormal: value = man * 2^-24, exact in float
  float f = float(man) * 5.9604644775390625e-8f;
  return sign ? -f : f;
}

KVH_HD inline bf16_t to_bf16(float f) {
  uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16_t{uint16_t((u >> 16) | 0x40u)};  // quiet nan
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16_t{uint16_t(u >> 16)};
}

KVH_HD inline fp16_t to_fp16(float f) {
  uint32_t u = float_to_bits(f);
  uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return fp16_t{uint16_t(sign | 0x7e00u)};
  if (a >= 0x477ff000u) return fp16_t{uint16_t(sign | 0x7c00u)};  // rounds to >= 65520: inf
  if (a < 0x38800000u) {                                          // below 2^-14: subnormal
    // round(|f| * 2^24) to nearest even gives the subnormal mantissa
    float s = bits_to_float(a) * 16777216.0f;
    uint32_t m = uint32_t(s);
    float rem = s - float(m);
    if (rem > 0.5f || (rem == 0.5f && (m & 1u))) ++m;
    return fp16_t{uint16_t(sign | m)};
  }
  uint32_t exp = (a >> 23) - 112u, man = a & 0x7fffffu;
  uint32_t h = (exp << 10) | (man >> 13);
  uint32_t rest = man & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return fp16_t{uint16_t(sign | h)};
}

template <class T> KVH_HD inline T from_float(float f);
template <> KVH_HD inline fp16_t from_float<fp16_t>(float f) { return to_fp16(f); }
template <> KVH_HD inline bf16_t from_float<bf16_t>(float f) { return to_bf16(f); }

}  // namespace kvh
