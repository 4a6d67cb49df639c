// Native HIP: the kernel-facing names are HIP's own; only the kvh_* warp
// wrappers need defining. Wave size is whatever the target has (64 on CDNA).
#pragma once
#include <hip/hip_runtime.h>

#define KVH_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#define KVH_DECLARE_BARRIER_FREE(kernel) static_assert(true, "")
#define KVH_DECLARE_BARRIER_FREE_AS(id, ...) static_assert(true, "")

template <class T> __device__ __forceinline__ T kvh_shfl_xor(T v, int lane_mask) { return __shfl_xor(v, lane_mask); }
template <class T> __device__ __forceinline__ T kvh_shfl(T v, int src_lane) { return __shfl(v, src_lane); }
template <class T> __device__ __forceinline__ T kvh_shfl_down(T v, unsigned delta) { return __shfl_down(v, delta); }
