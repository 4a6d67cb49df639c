// Host SIMT runtime: the HIP execution model on the CPU, so that the kernel
// sources compile as plain C++ and run on any machine (the `cpu` backend).
//   - a grid's blocks are spread over a pool of worker threads, one block at a
//     time per worker; a block's threads run as Boost.Fiber fibers on it;
//   - `__shared__` is thread_local, so it is per running block;
//   - __syncthreads is a fiber barrier over the block;
//   - kvh_shfl* exchange values through per-warp scratch between two warp
//     barriers; the wavefront size (64 or 32) is chosen at run time;
//   - launch limits are checked like HIP does (hipErrorInvalidConfiguration);
//   - optionally the ready fibers are picked in random order, so that a
//     missing barrier shows up as a wrong result instead of hiding behind
//     round-robin order.
// Only what the kernels here use is provided: anything else fails to compile.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <tuple>
#include <type_traits>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __restrict__ __restrict
#define __shared__ static thread_local

/// HIP error codes used here, with HIP's numeric values.
enum hipError_t : int {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorOutOfMemory = 2,
  hipErrorInvalidConfiguration = 9,
  hipErrorLaunchFailure = 719,
};
enum hipMemcpyKind { hipMemcpyHostToHost = 0, hipMemcpyHostToDevice = 1, hipMemcpyDeviceToHost = 2, hipMemcpyDeviceToDevice = 3 };
using hipStream_t = void*;

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

namespace kvh::host {

/// Per-thread (fiber) view of the launch, what threadIdx & co read.
struct ThreadState {
  dim3 thread_idx, block_idx, block_dim, grid_dim;
  unsigned linear_tid;
  struct BlockContext* block;
};
extern thread_local ThreadState* g_current;

/// Limits a launch is checked against (AMD CDNA values).
constexpr unsigned kMaxThreadsPerBlock = 1024;
constexpr size_t kMaxSharedBytesPerBlock = 64 * 1024;

/// Runtime settings; wave_size must be 32 or 64, workers 0 means one per core.
struct Config {
  int wave_size = 64;
  int workers = 0;
  bool random_order = false;
  uint64_t seed = 1;
};
Config& config();
int warp_size();

/// Kernels declared barrier-free (KVH_DECLARE_BARRIER_FREE) run their
/// threads as plain calls instead of fibers: the documented fast path for
/// kernels without __syncthreads or warp primitives. Such a kernel that calls
/// one anyway fails its launch with hipErrorLaunchFailure naming the kernel.
void declare_barrier_free(const void* kernel, const char* name);
const char* barrier_free_name(const void* kernel);

/// Launches `body` over grid x block; barrier_free_kernel names a declared kernel (null: fibers). Returns hipErrorInvalidConfiguration for
/// an empty grid, more than 1024 threads a block or more than 64 KiB of dynamic
/// shared memory; hipErrorLaunchFailure if the body threw (message in last_error_text()).
hipError_t launch(dim3 grid, dim3 block, size_t shared_bytes, const std::function<void()>& body,
                  const char* barrier_free_kernel = nullptr);
const char* last_error_text();

void sync_threads();
void* dynamic_shared();
uint64_t warp_exchange(uint64_t value, int src_lane_in_warp);

template <class T> T shfl_generic(T v, int src) {
  static_assert(sizeof(T) <= 8, "shuffle of a type wider than 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  bits = warp_exchange(bits, src);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}

}  // namespace kvh::host

#define threadIdx (::kvh::host::g_current->thread_idx)
#define blockIdx (::kvh::host::g_current->block_idx)
#define blockDim (::kvh::host::g_current->block_dim)
#define gridDim (::kvh::host::g_current->grid_dim)
#define warpSize (::kvh::host::warp_size())
#define HIP_KERNEL_NAME(...) __VA_ARGS__
#define KVH_DYNAMIC_SHARED(type, name) type* name = static_cast<type*>(::kvh::host::dynamic_shared())

inline void __syncthreads() { ::kvh::host::sync_threads(); }

template <class T> inline T kvh_shfl_xor(T v, int lane_mask) {
  int lane = int(::kvh::host::g_current->linear_tid) % warpSize;
  return ::kvh::host::shfl_generic(v, lane ^ lane_mask);
}
template <class T> inline T kvh_shfl(T v, int src_lane) { return ::kvh::host::shfl_generic(v, src_lane % warpSize); }
template <class T> inline T kvh_shfl_down(T v, unsigned delta) {
  int lane = int(::kvh::host::g_current->linear_tid) % warpSize;
  int src = lane + int(delta);
  return ::kvh::host::shfl_generic(v, src < warpSize ? src : lane);
}

hipError_t hipGetLastError();
hipError_t hipPeekAtLastError();
const char* hipGetErrorString(hipError_t e);
hipError_t hipMalloc(void** ptr, size_t bytes);
hipError_t hipFree(void* ptr);
hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind kind);
hipError_t hipMemset(void* dst, int value, size_t bytes);
hipError_t hipDeviceSynchronize();

namespace kvh::host {
void set_last_error(hipError_t e);
}

namespace kvh::host {
/// Binds the arguments by value, converted to the kernel's parameter types,
/// exactly as a GPU launch copies them; then runs the grid before returning.
template <class... P, class... A>
hipError_t launch_kernel(void (*kernel)(P...), dim3 grid, dim3 block, size_t shmem, A&&... args) {
  static_assert(sizeof...(P) == sizeof...(A), "kernel launched with the wrong number of arguments");
  std::tuple<std::decay_t<P>...> bound(std::forward<A>(args)...);
  return launch(grid, block, shmem, [kernel, &bound]() { std::apply(kernel, bound); },
                barrier_free_name(reinterpret_cast<const void*>(kernel)));
}
}  // namespace kvh::host

/// Declares, after its definition, that `kernel` uses no barrier and no warp
/// primitive (nothing on the GPU backends).
#define KVH_DECLARE_BARRIER_FREE(kernel)                                                     \
  static const bool kvh_barrier_free_##kernel = (::kvh::host::declare_barrier_free(       \
                                                     reinterpret_cast<const void*>(&kernel), #kernel), \
                                                 true)

/// The same for a template instance: `id` names the registration, the rest is the kernel.
#define KVH_DECLARE_BARRIER_FREE_AS(id, ...)                                                            \
  static const bool kvh_barrier_free_##id = (::kvh::host::declare_barrier_free(                        \
                                                 reinterpret_cast<const void*>(&__VA_ARGS__), #__VA_ARGS__), \
                                             true)

#define hipLaunchKernelGGL(kernel, grid, block, shmem, stream, ...) \
  ::kvh::host::set_last_error(::kvh::host::launch_kernel(kernel, dim3(grid), dim3(block), (shmem), ##__VA_ARGS__))
