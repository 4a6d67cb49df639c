#include "device/device.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "kvh_runtime.h"

#if !defined(KVH_BACKEND_HIP) && !defined(KVH_BACKEND_CUDA)
#include <boost/version.hpp>
#endif

namespace kvh::device {

namespace {

std::atomic<size_t> g_live_bytes{0};
// testing::inject_fault: synchronize() calls left before the fault (0: disarmed), and whether it fired.
std::atomic<int> g_fault_countdown{0};
std::atomic<bool> g_faulted{false};

constexpr const char* kInjectedText =
    "an illegal memory access was encountered (fault injected by testing::inject_fault / KVH_INJECT_FAULT)";

// A sticky error survives clearing the last error: the next synchronize returns it again.
bool context_lost() {
#if defined(KVH_BACKEND_HIP) || defined(KVH_BACKEND_CUDA)
  (void)hipGetLastError();
  return hipDeviceSynchronize() != hipSuccess;
#else
  return false;  // host runtime: a kernel that throws fails its own launch only
#endif
}

[[noreturn]] void throw_injected(const char* what) {
  throw Error(std::string(what) + " failed: " + kInjectedText, true);
}

void check(hipError_t e, const char* what) {
  if (g_faulted) throw_injected(what);
  if (e == hipSuccess) return;
  const bool lost = context_lost();
  throw Error(std::string(what) + " failed: " + hipGetErrorString(e) +
                  (lost ? " (sticky: the device context is lost)" : ""),
              lost);
}

__global__ void fill_random16_kernel(uint16_t* dst, uint64_t count, int bf16, uint64_t seed) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    const unsigned sign = unsigned(z >> 63) << 15, e = unsigned((z >> 32) & 7u);  // magnitude 2^(e-4)
    dst[i] = bf16 ? uint16_t(sign | ((123u + e) << 7) | unsigned(z & 0x7Fu))
                  : uint16_t(sign | ((11u + e) << 10) | unsigned(z & 0x3FFu));
  }
}
KVH_DECLARE_BARRIER_FREE(fill_random16_kernel);

}  // namespace

namespace {

// Freed buffers wait here for the next case that needs about as much: device
// allocation (and, on the cpu backend, first-touch page faults) is otherwise a
// large part of a small case. A buffer is reused for requests of half to all
// of its size; the pool holds at most kPoolLimit bytes.
#if defined(KVH_BACKEND_HIP) || defined(KVH_BACKEND_CUDA)
constexpr size_t kPoolLimit = size_t(16) << 30;
#else
constexpr size_t kPoolLimit = size_t(4) << 30;
#endif
struct Pool {
  std::mutex m;
  std::multimap<size_t, void*> free;  // capacity -> pointer
  size_t held = 0;
};
Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: buffers may be freed during static destruction
  return *p;
}
void* pool_take(size_t bytes, size_t& cap) {
  if (!pooling()) return nullptr;
  Pool& p = pool();
  std::lock_guard<std::mutex> lk(p.m);
  auto it = p.free.lower_bound(bytes);
  if (it == p.free.end() || it->first > 2 * bytes + 4096) return nullptr;
  cap = it->first;
  void* ptr = it->second;
  p.held -= cap;
  p.free.erase(it);
  return ptr;
}
void pool_release_all() {
  Pool& p = pool();
  std::lock_guard<std::mutex> lk(p.m);
  for (auto& [cap, ptr] : p.free) (void)hipFree(ptr);
  p.free.clear();
  p.held = 0;
}
void pool_give(void* ptr, size_t cap) {
  if (g_faulted || !pooling()) return (void)hipFree(ptr);
  Pool& p = pool();
  std::lock_guard<std::mutex> lk(p.m);
  if (p.held + cap > kPoolLimit) return (void)hipFree(ptr);
  p.free.emplace(cap, ptr);
  p.held += cap;
}

}  // namespace

// Under AddressSanitizer, or with KVH_NO_POOL set (not to "0"), every buffer is a fresh
// allocation: a pooled buffer may be larger than asked and is never freed, so
// ASan would miss an access past a buffer's end or after its release.
bool pooling() {
#if defined(__SANITIZE_ADDRESS__)
  return false;
#else
  static const bool on = [] {
    const char* v = std::getenv("KVH_NO_POOL");
    return v == nullptr || std::string(v) == "0";
  }();
  return on;
#endif
}

bool host_reads_device_memory() {
#if defined(KVH_BACKEND_HIP) || defined(KVH_BACKEND_CUDA)
  return false;
#else
  return true;
#endif
}

size_t size_class(size_t bytes) {
  if (bytes < (size_t(8) << 20)) return bytes;
  size_t top = size_t(1) << (63 - __builtin_clzll(bytes));  // the power of two at or below bytes
  const size_t step = top / 16;
  return (bytes + step - 1) / step * step;
}

Buffer::Buffer(size_t bytes) : bytes_(bytes) {
  if (g_faulted) throw_injected("hipMalloc");
  if ((ptr_ = pool_take(bytes, cap_))) {
    g_live_bytes += bytes_;
    return;
  }
  cap_ = pooling() ? size_class(bytes) : bytes;  // unpooled (ASan): exactly what was asked
  hipError_t e = hipMalloc(&ptr_, cap_);
  if (e != hipSuccess && !context_lost()) {  // the pool may hold what this needs
    (void)hipGetLastError();
    pool_release_all();
    cap_ = bytes;  // no room for the rounding either
    e = hipMalloc(&ptr_, cap_);
  }
  if (e != hipSuccess && !context_lost()) {
    (void)hipGetLastError();  // an allocation failure is not sticky: clear it
    ptr_ = nullptr;
    throw AllocError("hipMalloc of " + std::to_string(bytes) + " bytes failed: " + hipGetErrorString(e));
  }
  check(e, "hipMalloc");
  g_live_bytes += bytes_;
}
Buffer::~Buffer() {
  if (ptr_) pool_give(ptr_, cap_), g_live_bytes -= bytes_;
}
Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) pool_give(ptr_, cap_), g_live_bytes -= bytes_;
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    cap_ = o.cap_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
    o.cap_ = 0;
  }
  return *this;
}
void Buffer::upload(const void* host, size_t bytes) { check(hipMemcpy(ptr_, host, bytes, hipMemcpyHostToDevice), "hipMemcpy H2D"); }
void Buffer::download(void* host, size_t bytes) const {
  check(hipMemcpy(host, ptr_, bytes, hipMemcpyDeviceToHost), "hipMemcpy D2H");
}
void Buffer::download_range(void* host, size_t offset, size_t bytes) const {
  if (offset + bytes > bytes_) throw Error("download_range past the end of the buffer");
  check(hipMemcpy(host, static_cast<const uint8_t*>(ptr_) + offset, bytes, hipMemcpyDeviceToHost), "hipMemcpy D2H");
}

void synchronize() {
  if (g_fault_countdown > 0 && --g_fault_countdown == 0) {
    g_faulted = true;
    throw_injected("hipDeviceSynchronize");
  }
  check(hipDeviceSynchronize(), "hipDeviceSynchronize");
  check(hipGetLastError(), "kernel");
}

void settle() {
  check(hipDeviceSynchronize(), "hipDeviceSynchronize (the harness's own device work)");
  check(hipGetLastError(), "the harness's own kernels");
}

bool healthy() { return !g_faulted && !context_lost(); }

size_t live_bytes() { return g_live_bytes; }

#if !defined(KVH_BACKEND_HIP) && !defined(KVH_BACKEND_CUDA)
namespace {
// Host runtime: "device" memory is host memory, and one thread's memmove of a
// cache snapshot (hundreds of MiB) leaves the other cores idle: one 1 MiB
// piece a work item, spread over the kernel workers.
constexpr size_t kCopyPiece = size_t(1) << 20;
__global__ void copy_pieces_kernel(uint8_t* dst, const uint8_t* src, uint64_t bytes) {
  const uint64_t p = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x, begin = p * kCopyPiece;
  if (begin < bytes) std::memcpy(dst + begin, src + begin, size_t(std::min<uint64_t>(kCopyPiece, bytes - begin)));
}
KVH_DECLARE_BARRIER_FREE(copy_pieces_kernel);
}  // namespace
#endif

void copy_d2d(void* dst, const void* src, size_t bytes) {
#if !defined(KVH_BACKEND_HIP) && !defined(KVH_BACKEND_CUDA)
  if (bytes >= 4 * kCopyPiece) {
    const unsigned pieces = unsigned((bytes + kCopyPiece - 1) / kCopyPiece);
    hipLaunchKernelGGL(copy_pieces_kernel, dim3(pieces), dim3(1), 0, 0, static_cast<uint8_t*>(dst),
                       static_cast<const uint8_t*>(src), uint64_t(bytes));
    check(hipGetLastError(), "copy_d2d");
    return;
  }
#endif
  check(hipMemcpy(dst, src, bytes, hipMemcpyDeviceToDevice), "hipMemcpy D2D");
}

void fill_random16(void* dst, size_t count, bool bf16, uint64_t seed) {
  if (count == 0) return;
  const unsigned threads = 256;
  const uint64_t blocks = std::min<uint64_t>((count + threads - 1) / threads, 8192);
  hipLaunchKernelGGL(fill_random16_kernel, dim3(unsigned(blocks)), dim3(threads), 0, 0, static_cast<uint16_t*>(dst),
                     uint64_t(count), int(bf16), seed);
  check(hipGetLastError(), "fill_random16 launch");
}

namespace {
// The events of time_launches: created once per thread and reused (a run times thousands of
// kernels; creating and destroying 40 events each time cost more than some kernels).
struct Events {
#if defined(KVH_BACKEND_HIP) || defined(KVH_BACKEND_CUDA)
  std::vector<hipEvent_t>& ev;
  explicit Events(int n) : ev(pool()) {
    while (ev.size() < size_t(n)) {
      hipEvent_t e;
      check(hipEventCreate(&e), "hipEventCreate");
      ev.push_back(e);
    }
  }
  static std::vector<hipEvent_t>& pool() {
    static thread_local std::vector<hipEvent_t> p;
    return p;
  }
#endif
};
}  // namespace

namespace {
// One launch of a timing: an error code is a LaunchError, or an Error when the context is lost.
void run_timed(const std::function<int()>& launch) {
  const int rc = launch();
  if (rc == 0) return;
  if (context_lost())
    throw Error("launch returned " + error_text(rc) + " while being timed (sticky: the device context is lost)", true);
  throw LaunchError("launch returned " + error_text(rc) + " while being timed", rc);
}
}  // namespace

double warm_up_us(const std::function<int()>& launch, int n) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) run_timed(launch);
  synchronize();
  return n > 0 ? std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n : 0.0;
}

Timing time_launches(const std::function<int()>& launch, int warmup, int reps) {
  if (reps < 1) throw std::invalid_argument("time_launches: reps must be at least 1");
  auto run = [&] { run_timed(launch); };
  for (int i = 0; i < warmup; ++i) run();
  synchronize();
  std::vector<double> us(static_cast<size_t>(reps), 0.0);
#if defined(KVH_BACKEND_HIP) || defined(KVH_BACKEND_CUDA)
  Events events(2 * reps);
  for (int i = 0; i < reps; ++i) {
    check(hipEventRecord(events.ev[size_t(2 * i)], 0), "hipEventRecord");
    run();
    check(hipEventRecord(events.ev[size_t(2 * i + 1)], 0), "hipEventRecord");
  }
  synchronize();  // a fault in a timed run surfaces here, with device_lost() set
  for (int i = 0; i < reps; ++i) {
    float ms = 0;
    check(hipEventElapsedTime(&ms, events.ev[size_t(2 * i)], events.ev[size_t(2 * i + 1)]), "hipEventElapsedTime");
    us[size_t(i)] = double(ms) * 1000.0;
  }
#else
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    synchronize();
    us[size_t(i)] = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
#endif
  std::sort(us.begin(), us.end());
  Timing t;
  t.reps = reps;
  t.min_us = us.front();
  t.max_us = us.back();
  t.median_us = reps % 2 ? us[size_t(reps / 2)] : 0.5 * (us[size_t(reps / 2 - 1)] + us[size_t(reps / 2)]);
  t.samples_us = std::move(us);
  return t;
}

double time_median_us(const std::function<int()>& launch, int warmup, int reps) {
  return time_launches(launch, warmup, reps).median_us;
}

namespace testing {
void inject_fault(int nth_synchronize) { g_fault_countdown = nth_synchronize > 0 ? nth_synchronize : 0; }
void clear_fault() {
  g_fault_countdown = 0;
  g_faulted = false;
}
}  // namespace testing

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
  int runtime = 0, driver = 0;
  (void)hipRuntimeGetVersion(&runtime);
  (void)hipDriverGetVersion(&driver);
#if defined(KVH_BACKEND_HIP)
  i.runtime_version = "HIP runtime " + std::to_string(runtime) + ", driver " + std::to_string(driver);
#else
  i.runtime_version = "CUDA runtime " + std::to_string(runtime) + ", driver " + std::to_string(driver);
#endif
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
  i.runtime_version = "kvharness host SIMT runtime, Boost " + std::to_string(BOOST_VERSION / 100000) + "." +
                      std::to_string(BOOST_VERSION / 100 % 1000);
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
