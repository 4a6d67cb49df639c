// The one header every kernel source includes. It picks the platform layer at
// build time and nothing else lives here (after llama.cpp's vendors/ headers):
//   KVH_BACKEND_HIP   native HIP (ROCm clang or hipcc)
//   KVH_BACKEND_CUDA  the same names mapped onto CUDA (nvcc 13)
//   otherwise         the host SIMT runtime on Boost.Fiber (the cpu backend)
// Kernels use HIP's names for the execution model (threadIdx, __syncthreads,
// hipLaunchKernelGGL, ...) and the kvh_* wrappers below for warp primitives,
// because CUDA 13 has no unsynchronised __shfl_xor to map HIP's onto.
#pragma once

#if defined(KVH_BACKEND_HIP)
#include "hip.h"
#elif defined(KVH_BACKEND_CUDA)
#include "cuda.h"
#else
#include "host.h"
#endif

#include "dtype.h"
