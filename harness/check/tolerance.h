// Tolerances of decode attention by cache dtype: a 16-bit kernel output is
// accepted when |got - ref| <= atol + rtol * |ref|, against the float64
// reference computed from the same rounded 16-bit inputs.
//   fp16: atol 1e-3, rtol 5e-3. Rounding `out` to fp16 costs half an ulp
//         (2^-11 relative) and float32 logits/sums about 1e-5; these bounds
//         are 2-4x above that, and a single dropped token of a 257-token
//         sequence already moves outputs by about 4e-3.
//   bf16: atol 8e-3, rtol 1.6e-2: the same margin over bf16's half ulp (2^-8).
//   fp8 caches (e4m3fn, e4m3fnuz): the output dtype's numbers above. The
//         reference dequantizes the same codes with the same scales
//         (reference/fp8.h: decode(encode(x / scale)) * scale), so fp8's own
//         rounding (up to 2^-4 relative per element) is in both sides and
//         cancels; what remains is the kernel's float32 decode * scale (one
//         rounding, 2^-24) and the 16-bit output, as for 16-bit caches. A
//         reader that decodes with the wrong format is off by 2x (far beyond);
//         one that drops or misindexes scales by their ratio, log-uniform over
//         [2^-8, 2^-2) (harness/case/kv_scales.h), typically far beyond too.
// The numbers follow METHOD.md's guidance (16-bit operands land between 1e-3
// and 1e-2 relative error) and were checked against 1,000 random cases.
#pragma once
#include <algorithm>
#include <cmath>

#include "case.h"

namespace kvh {

struct Tolerance {
  double atol, rtol;
};

inline Tolerance attention_tolerance(DType d) { return d == DType::F16 ? Tolerance{1e-3, 5e-3} : Tolerance{8e-3, 1.6e-2}; }

// ---- issue 23 (B long contexts): errors in output ulps, and the derived tolerance ----
/// The spacing of the 16-bit output dtype's values at |x| (one ulp): fp16 has an 11-bit
/// significand, normals from 2^-14 and subnormals spaced 2^-24; bf16 an 8-bit significand,
/// normals from 2^-126, subnormals spaced 2^-133 (IEEE 754 binary16; bfloat16).
/// Units: the value's own (absolute). x = 0 gives the subnormal spacing.
inline double output_ulp(DType d, double x) {
  const int digits = d == DType::F16 ? 11 : 8, min_exp = d == DType::F16 ? -14 : -126;
  const int e = x == 0 ? min_exp : std::max(std::ilogb(std::fabs(x)), min_exp);
  return std::ldexp(1.0, e - (digits - 1));
}

/// The derived attention tolerance (case key `tolerance = "derived"`), per output element,
/// in output ulps: |got - ref| <= kDerivedUlps * output_ulp(ref) + kDerivedFloorUlps *
/// output_ulp(head_max), head_max = the largest |ref| of the element's (query row, head).
/// Why these numbers, for a correct kernel with 16-bit inputs, float32 arithmetic and a
/// 16-bit output, against the float64 reference of the same inputs:
///   - rounding `out` to its dtype: 0.5 ulp (1 ulp where the float32 value rounds up into
///     the next binade; the rest of the allowance covers it);
///   - float32 logits, exp and sums: a sequential float32 sum of n terms w_i v_i whose
///     partial sums grow like sqrt(k) (random signs) errs by ~2^-24 * n / sqrt(2) times
///     rms(w v), against |sum| ~ sqrt(n) rms(w v): ~2^-24 * sqrt(n) of the head's output
///     magnitude, 2^-16 at n = 2^17 tokens, 0.03 fp16 ulp (blocked and split-K sums do
///     better); the float64 reference has no such term;
///   - a 16-bit P before P.V (Triton kernels cast p to V's dtype): 2^-12 relative per p in
///     fp16, random: ~0.25 ulp of the head's largest output;
///   - exp2-based exponentials (exp2(x * log2 e)): a few float32 ulps of each weight, as
///     the float32 term.
/// So 1.5 ulps of the element plus 0.5 ulp of the head's largest output (the absolute
/// errors above do not shrink with an element near zero, whose own ulp does).
/// Where it is not claimed, and the key is refused (cases/case_file.cpp): fp8/int8 caches
/// (the kernel's dequant order is its own), MLA (bf16 internal math in the Gluon/ASM
/// kernels), bf16 outputs (a Triton kernel that casts p to bf16 adds 2^-9 relative per
/// weight, and only fp16 was measured; bf16 keeps the dtype tolerance). Measured on the
/// cpu backend, 40,000 and 70,000 tokens, partition_size 64 and 256: paged_attention_rocm,
/// paged_attention_v1, pa_fwd_asm, unified_attention_2d/3d within 0.5-1.4 element ulps; the
/// planted fp16 exp-sum reduce at 66,000 tokens (1,032 partitions): 38 ulps (~2 %).
constexpr double kDerivedUlps = 1.5;
constexpr double kDerivedFloorUlps = 0.5;
// ---- end issue 23 (B long contexts) ----

}  // namespace kvh
