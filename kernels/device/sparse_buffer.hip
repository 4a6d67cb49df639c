#include "device/sparse_buffer.h"

#include <algorithm>
#include <string>
#include <utility>

#include "device/device.h"
#include "kvh_runtime.h"

#if defined(KVH_BACKEND_CUDA)
// The driver API's types; kernels/runtime/cuda.h shadows <cuda.h>, hence the
// toolkit's path from CMake. Its functions come through the runtime's entry
// point lookup, so nothing links libcuda.
#include KVH_CUDA_DRIVER_HEADER
#elif !defined(KVH_BACKEND_HIP)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace kvh::device {

std::vector<ByteRange> round_windows(std::vector<ByteRange> windows, size_t bytes, size_t granularity) {
  for (ByteRange& w : windows) {
    w.begin = std::min(w.begin / granularity * granularity, bytes);
    w.end = std::min((w.end + granularity - 1) / granularity * granularity, bytes);
  }
  std::sort(windows.begin(), windows.end(), [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
  std::vector<ByteRange> out;
  for (const ByteRange& w : windows) {
    if (w.end <= w.begin) continue;
    if (!out.empty() && w.begin <= out.back().end)
      out.back().end = std::max(out.back().end, w.end);
    else
      out.push_back(w);
  }
  return out;
}

size_t SparseBuffer::committed_bytes() const {
  size_t n = 0;
  for (const ByteRange& w : windows_) n += w.end - w.begin;
  return n;
}

void SparseBuffer::swap(SparseBuffer& o) noexcept {
  std::swap(ptr_, o.ptr_);
  std::swap(bytes_, o.bytes_);
  std::swap(windows_, o.windows_);
  std::swap(reserved_, o.reserved_);
  std::swap(base_, o.base_);
  std::swap(mapped_, o.mapped_);
  std::swap(handles_, o.handles_);
  std::swap(fallback_, o.fallback_);
}

SparseBuffer::~SparseBuffer() { release(); }

namespace {

// The fallback: every byte backed, one window.
void* plain_alloc(size_t bytes) {
  void* p = nullptr;
  if (hipMalloc(&p, std::max<size_t>(bytes, 1)) != hipSuccess) {
    (void)hipGetLastError();  // an allocation failure is not sticky: clear it
    throw AllocError("sparse buffer: neither a reservation nor a plain allocation of " + std::to_string(bytes) +
                     " bytes succeeded");
  }
  return p;
}

#if defined(KVH_BACKEND_CUDA)
// The driver's virtual memory calls, looked up once (null where the driver lacks them).
struct Vmm {
  CUresult (*reserve)(CUdeviceptr*, size_t, size_t, CUdeviceptr, unsigned long long) = nullptr;
  CUresult (*free_va)(CUdeviceptr, size_t) = nullptr;
  CUresult (*create)(CUmemGenericAllocationHandle*, size_t, const CUmemAllocationProp*, unsigned long long) = nullptr;
  CUresult (*release)(CUmemGenericAllocationHandle) = nullptr;
  CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long) = nullptr;
  CUresult (*unmap)(CUdeviceptr, size_t) = nullptr;
  CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc*, size_t) = nullptr;
  CUresult (*granularity)(size_t*, const CUmemAllocationProp*, CUmemAllocationGranularity_flags) = nullptr;
  bool ok() const { return reserve && free_va && create && release && map && unmap && set_access && granularity; }
};
template <class F> void lookup(const char* name, F& f) {
  void* p = nullptr;
#if CUDART_VERSION >= 12050
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, nullptr) != cudaSuccess) p = nullptr;
#else
  if (cudaGetDriverEntryPoint(name, &p, cudaEnableDefault) != cudaSuccess) p = nullptr;
#endif
  (void)cudaGetLastError();
  f = reinterpret_cast<F>(p);
}
const Vmm& vmm() {
  static const Vmm v = [] {
    Vmm m;
    lookup("cuMemAddressReserve", m.reserve);
    lookup("cuMemAddressFree", m.free_va);
    lookup("cuMemCreate", m.create);
    lookup("cuMemRelease", m.release);
    lookup("cuMemMap", m.map);
    lookup("cuMemUnmap", m.unmap);
    lookup("cuMemSetAccess", m.set_access);
    lookup("cuMemGetAllocationGranularity", m.granularity);
    return m;
  }();
  return v;
}
CUmemAllocationProp device_prop() {
  CUmemAllocationProp p{};
  int dev = 0;
  (void)cudaGetDevice(&dev);
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = dev;
  return p;
}
#elif defined(KVH_BACKEND_HIP)
hipMemAllocationProp device_prop() {
  hipMemAllocationProp p{};
  int dev = 0;
  (void)hipGetDevice(&dev);
  p.type = hipMemAllocationTypePinned;
  p.location.type = hipMemLocationTypeDevice;
  p.location.id = dev;
  return p;
}
#endif

}  // namespace

size_t sparse_granularity() {
#if defined(KVH_BACKEND_CUDA)
  static const size_t g = [] {
    size_t n = 0;
    const CUmemAllocationProp p = device_prop();
    if (!vmm().ok() || vmm().granularity(&n, &p, CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS || n == 0)
      return size_t(2) << 20;
    return n;
  }();
  return g;
#elif defined(KVH_BACKEND_HIP)
  static const size_t g = [] {
    size_t n = 0;
    const hipMemAllocationProp p = device_prop();
    if (hipMemGetAllocationGranularity(&n, &p, hipMemAllocationGranularityMinimum) != hipSuccess || n == 0) {
      (void)hipGetLastError();
      return size_t(2) << 20;
    }
    return n;
  }();
  return g;
#else
  static const size_t g = size_t(sysconf(_SC_PAGESIZE));
  return g;
#endif
}

SparseBuffer::SparseBuffer(size_t bytes, std::vector<ByteRange> windows) : bytes_(bytes) {
  const size_t gran = sparse_granularity();
  windows_ = round_windows(std::move(windows), bytes, gran);
  const size_t span = (bytes + gran - 1) / gran * gran;
#if defined(KVH_BACKEND_CUDA)
  const Vmm& v = vmm();
  CUdeviceptr va = 0;
  if (v.ok() && span > 0 && v.reserve(&va, span, 0, 0, 0) == CUDA_SUCCESS) {
    base_ = reinterpret_cast<void*>(va);
    mapped_ = span;
    ptr_ = base_;
    reserved_ = true;
    const CUmemAllocationProp prop = device_prop();
    CUmemAccessDesc access{};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    for (const ByteRange& w : windows_) {
      // windows_ ends are granularity multiples or `bytes`: map whole granules.
      const size_t len = (w.end - w.begin + gran - 1) / gran * gran;
      CUmemGenericAllocationHandle h = 0;
      bool ok = v.create(&h, len, &prop, 0) == CUDA_SUCCESS;
      if (ok) handles_.push_back(uint64_t(h));
      ok = ok && v.map(va + w.begin, len, 0, h, 0) == CUDA_SUCCESS;
      ok = ok && v.set_access(va + w.begin, len, &access, 1) == CUDA_SUCCESS;
      if (!ok) {  // out of memory, or the API refuses: the plain allocation, which may fail the same way
        release();
        bytes_ = bytes;
        break;
      }
    }
    if (reserved_) return;
  }
#elif defined(KVH_BACKEND_HIP)
  void* va = nullptr;
  if (span > 0 && hipMemAddressReserve(&va, span, 0, nullptr, 0) == hipSuccess) {
    base_ = va;
    mapped_ = span;
    ptr_ = base_;
    reserved_ = true;
    const hipMemAllocationProp prop = device_prop();
    hipMemAccessDesc access{};
    access.location = prop.location;
    access.flags = hipMemAccessFlagsProtReadWrite;
    for (const ByteRange& w : windows_) {
      const size_t len = (w.end - w.begin + gran - 1) / gran * gran;
      hipMemGenericAllocationHandle_t h{};
      bool ok = hipMemCreate(&h, len, &prop, 0) == hipSuccess;
      if (ok) handles_.push_back(reinterpret_cast<uint64_t>(h));
      void* at = static_cast<uint8_t*>(va) + w.begin;
      ok = ok && hipMemMap(at, len, 0, h, 0) == hipSuccess;
      ok = ok && hipMemSetAccess(at, len, &access, 1) == hipSuccess;
      if (!ok) {
        (void)hipGetLastError();
        release();
        bytes_ = bytes;
        break;
      }
    }
    if (reserved_) return;
  }
  (void)hipGetLastError();
#else
  mapped_ = span + 2 * kGuardBytes;
  void* m = mmap(nullptr, mapped_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m != MAP_FAILED) {
    base_ = m;
    ptr_ = static_cast<uint8_t*>(m) + kGuardBytes;
    reserved_ = true;
    for (const ByteRange& w : windows_) {
      uint8_t* at = static_cast<uint8_t*>(ptr_) + w.begin;
      const size_t len = (w.end - w.begin + gran - 1) / gran * gran;
      if (mprotect(at, len, PROT_READ | PROT_WRITE) != 0) {
        release();
        bytes_ = bytes;
        break;
      }
      (void)madvise(at, len, MADV_HUGEPAGE);  // as big_alloc: a window of gigabytes faults in 2 MiB at a time
    }
    if (reserved_) return;
  }
  mapped_ = 0;
#endif
  // The fallback: a plain allocation, every byte backed.
  windows_ = bytes ? std::vector<ByteRange>{{0, bytes}} : std::vector<ByteRange>{};
  fallback_ = ptr_ = plain_alloc(bytes);
}

void SparseBuffer::release() noexcept {
  if (fallback_) (void)hipFree(fallback_);
#if defined(KVH_BACKEND_CUDA)
  if (base_) {
    const CUdeviceptr va = reinterpret_cast<CUdeviceptr>(base_);
    const size_t gran = sparse_granularity();
    // Unmap what was mapped (every window up to the first failure), then release the handles.
    for (size_t i = 0; i < handles_.size() && i < windows_.size(); ++i)
      (void)vmm().unmap(va + windows_[i].begin, (windows_[i].end - windows_[i].begin + gran - 1) / gran * gran);
    for (uint64_t h : handles_) (void)vmm().release(CUmemGenericAllocationHandle(h));
    (void)vmm().free_va(va, mapped_);
  }
#elif defined(KVH_BACKEND_HIP)
  if (base_) {
    const size_t gran = sparse_granularity();
    for (size_t i = 0; i < handles_.size() && i < windows_.size(); ++i)
      (void)hipMemUnmap(static_cast<uint8_t*>(base_) + windows_[i].begin,
                        (windows_[i].end - windows_[i].begin + gran - 1) / gran * gran);
    for (uint64_t h : handles_) (void)hipMemRelease(reinterpret_cast<hipMemGenericAllocationHandle_t>(h));
    (void)hipMemAddressFree(base_, mapped_);
    (void)hipGetLastError();
  }
#else
  if (base_) munmap(base_, mapped_);
#endif
  ptr_ = base_ = fallback_ = nullptr;
  mapped_ = 0;
  handles_.clear();
  reserved_ = false;
}

}  // namespace kvh::device
