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
#include "case.h"

namespace kvh {

struct Tolerance {
  double atol, rtol;
};

inline Tolerance attention_tolerance(DType d) { return d == DType::F16 ? Tolerance{1e-3, 5e-3} : Tolerance{8e-3, 1.6e-2}; }

}  // namespace kvh
