// HIP-on-CUDA: maps the HIP runtime names this project uses onto CUDA, one
// name a line. The distribution's HIP-on-NVIDIA headers do not build with
// CUDA 13, hence this project-owned mapping. Warp size is 32.
#pragma once
#include <cuda_runtime.h>

#define hipError_t cudaError_t
#define hipSuccess cudaSuccess
#define hipErrorInvalidValue cudaErrorInvalidValue
#define hipErrorInvalidConfiguration cudaErrorInvalidConfiguration
#define hipErrorOutOfMemory cudaErrorMemoryAllocation
#define hipStream_t cudaStream_t
#define hipEvent_t cudaEvent_t
#define hipDeviceProp_t cudaDeviceProp
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemset cudaMemset
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipDeviceSynchronize cudaDeviceSynchronize
#define hipGetLastError cudaGetLastError
#define hipPeekAtLastError cudaPeekAtLastError
#define hipGetErrorString cudaGetErrorString
#define hipGetDevice cudaGetDevice
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipMemGetInfo cudaMemGetInfo
#define hipEventCreate cudaEventCreate
#define hipEventDestroy cudaEventDestroy
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime
#define hipDriverGetVersion cudaDriverGetVersion
#define hipRuntimeGetVersion cudaRuntimeGetVersion
#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) \
  kernel<<<(grid), (block), (shmem), (stream)>>>(__VA_ARGS__)

#define KVH_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#define KVH_DECLARE_BARRIER_FREE(kernel) static_assert(true, "")
#define KVH_DECLARE_BARRIER_FREE_AS(id, ...) static_assert(true, "")
#ifndef HIP_KERNEL_NAME
#define HIP_KERNEL_NAME(...) __VA_ARGS__
#endif

template <class T> __device__ __forceinline__ T kvh_shfl_xor(T v, int lane_mask) { return __shfl_xor_sync(0xffffffffu, v, lane_mask); }
template <class T> __device__ __forceinline__ T kvh_shfl(T v, int src_lane) { return __shfl_sync(0xffffffffu, v, src_lane); }
template <class T> __device__ __forceinline__ T kvh_shfl_down(T v, unsigned delta) { return __shfl_down_sync(0xffffffffu, v, delta); }
