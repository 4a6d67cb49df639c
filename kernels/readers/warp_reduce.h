// Reductions over groups of lanes inside one warp, for any wavefront size:
// widths are bounded by the runtime `warpSize` (64 on CDNA, 32 on CUDA, either
// on the cpu backend), never by a constant.
#pragma once
#include <cmath>

#include "kvh_runtime.h"

namespace kvh::kernels {

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

/// Butterfly reduction over aligned groups of `width` consecutive lanes
/// (width a power of two <= warpSize); every lane gets its group's result.
/// Precondition: every lane of the warp calls it with the same width.
template <class Op>
__device__ inline float group_reduce(float v, int width, Op op) {
  for (int mask = width / 2; mask > 0; mask /= 2) v = op(v, kvh_shfl_xor(v, mask));
  return v;
}

/// Largest power of two <= n, at least 1.
__host__ __device__ inline int floor_pow2(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

}  // namespace kvh::kernels
