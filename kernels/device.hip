#include "device.h"

#include <algorithm>
#include <thread>

#include "kvh_runtime.h"

namespace kvh::device {

namespace {
void check(hipError_t e, const char* what) {
  if (e != hipSuccess) throw Error(std::string(what) + " failed: " + hipGetErrorString(e));
}
}  // namespace

Buffer::Buffer(size_t bytes) : bytes_(bytes) { check(hipMalloc(&ptr_, bytes), "hipMalloc"); }
Buffer::~Buffer() {
  if (ptr_) (void)hipFree(ptr_);
}
Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) (void)hipFree(ptr_);
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}
void Buffer::upload(const void* host, size_t bytes) { check(hipMemcpy(ptr_, host, bytes, hipMemcpyHostToDevice), "hipMemcpy H2D"); }
void Buffer::download(void* host, size_t bytes) const {
  check(hipMemcpy(host, ptr_, bytes, hipMemcpyDeviceToHost), "hipMemcpy D2H");
}

void synchronize() {
  check(hipDeviceSynchronize(), "hipDeviceSynchronize");
  check(hipGetLastError(), "kernel");
}

std::string error_text(int code) {
#if !defined(KVH_BACKEND_HIP) && !defined(KVH_BACKEND_CUDA)
  if (code == hipErrorLaunchFailure || code == hipErrorInvalidConfiguration)
    return std::string(hipGetErrorString(hipError_t(code))) + ": " + kvh::host::last_error_text();
#endif
  return hipGetErrorString(hipError_t(code));
}

#if defined(KVH_BACKEND_HIP) || defined(KVH_BACKEND_CUDA)
Info info() {
  Info i;
  int dev = 0;
  check(hipGetDevice(&dev), "hipGetDevice");
  hipDeviceProp_t p;
  check(hipGetDeviceProperties(&p, dev), "hipGetDeviceProperties");
  i.name = p.name;
  i.wave_size = p.warpSize;
  i.compute_units = p.multiProcessorCount;
  i.memory_bytes = p.totalGlobalMem;
#if defined(KVH_BACKEND_HIP)
  i.backend = "rocm";
  i.arch = p.gcnArchName;
#else
  i.backend = "cuda";
  i.arch = "sm_" + std::to_string(p.major) + std::to_string(p.minor);
#endif
  return i;
}

void configure_host(int wave_size, bool, uint64_t) {
  if (wave_size != 0 && wave_size != info().wave_size)
    throw Error("wave size " + std::to_string(wave_size) + " requested, but this device has " +
                std::to_string(info().wave_size));
}
#else
Info info() {
  Info i;
  auto& c = kvh::host::config();
  int workers = c.workers > 0 ? c.workers : int(std::max(1u, std::thread::hardware_concurrency()));
  i.backend = "cpu";
  i.name = "host SIMT runtime (Boost.Fiber, " + std::to_string(workers) + " workers)";
  i.arch = "x86_64";
  i.wave_size = c.wave_size;
  i.compute_units = workers;
  i.memory_bytes = 0;
  return i;
}

void configure_host(int wave_size, bool random_order, uint64_t seed) {
  if (wave_size != 0) {
    if (wave_size != 32 && wave_size != 64) throw Error("wave size must be 32 or 64, got " + std::to_string(wave_size));
    kvh::host::config().wave_size = wave_size;
  }
  kvh::host::config().random_order = random_order;
  kvh::host::config().seed = seed;
}
#endif

}  // namespace kvh::device
