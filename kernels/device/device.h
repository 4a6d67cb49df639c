// The harness's window onto the backend: device memory, copies, the device's
// description. Implemented once in device.hip for all three backends; the
// harness never includes a runtime header itself.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvh::device {

/// What `kvharness info` prints and results.json records.
struct Info {
  std::string backend;      // cpu | cuda | rocm
  std::string name;         // device name, or "host SIMT (N workers)"
  std::string arch;         // gfx942, sm_90, x86_64
  int wave_size = 0;        // lanes per wavefront / warp
  int compute_units = 0;    // CUs / SMs / host workers
  size_t memory_bytes = 0;  // total device memory
  std::string runtime_version;  // "HIP runtime R, driver D" / "CUDA runtime R, driver D" / the host runtime
};
Info info();

/// A runtime call failed; what() names the call and the runtime's error text.
/// device_lost(): the failure is sticky (a kernel hit an illegal address, an
/// illegal instruction, ...): the device context is unusable for the rest of
/// the process, and the run must stop (see healthy()).
struct Error : std::runtime_error {
  explicit Error(const std::string& what, bool device_lost = false)
      : std::runtime_error(what), device_lost_(device_lost) {}
  bool device_lost() const { return device_lost_; }

 private:
  bool device_lost_;
};

/// A launcher returned a non-zero code while being timed (the device is fine).
struct LaunchError : Error {
  LaunchError(const std::string& what, int code) : Error(what), code(code) {}
  int code;
};

/// Device memory could not be allocated: the harness sized a buffer the
/// device cannot hold. Not a kernel's failure (verdict component "harness").
struct AllocError : Error {
  using Error::Error;
};

/// False under AddressSanitizer or with KVH_NO_POOL set (to anything but "0"):
/// then freed buffers are not kept for reuse (Buffer's pool, and the host's
/// block cache in harness/case/arena.h), so ASan sees every use after free.
bool pooling();

/// True when device memory is host memory (the cpu backend): after
/// synchronize() the host may read a Buffer's bytes where they are, with no download.
bool host_reads_device_memory();

/// The capacity a pooled allocation of `bytes` gets: from 8 MiB on, rounded up
/// to a sixteenth of its power of two (at most 6.25% more), so that cases of
/// nearly the same shape reuse each other's freed buffers instead of faulting
/// fresh memory in (the pools of Buffer and of harness/case/arena.h big_alloc).
size_t size_class(size_t bytes);

/// Owns `bytes` bytes of device memory, contents undefined (a freed buffer is
/// kept in a pool and handed to the next request of about its size). Throws
/// AllocError when allocation fails, after releasing the pool and retrying
/// (Error when the device is already lost).
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t bytes);
  ~Buffer();
  Buffer(Buffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_), cap_(o.cap_) { o.ptr_ = nullptr; o.bytes_ = o.cap_ = 0; }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* get() const { return ptr_; }
  size_t size() const { return bytes_; }
  void upload(const void* host, size_t bytes);
  void download(void* host, size_t bytes) const;
  /// Bytes [offset, offset + bytes) of the buffer to `host` (callable from
  /// several host threads at once: pageable copies are staged by the host).
  void download_range(void* host, size_t offset, size_t bytes) const;

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  size_t cap_ = 0;  // bytes allocated (a pooled buffer may be larger than asked)
};

/// Waits for all device work; throws Error with the runtime's text if it failed
/// (device_lost() set when the failure is sticky).
void synchronize();
/// Waits for the harness's own device work (fills, the reference writer,
/// copies) and throws Error if it failed: called before a kernel under test
/// is launched, so that an error of the harness's kernels is never blamed on
/// it, and between cases, so that a pooled buffer is reused only after
/// everything that used it has finished. Not counted by testing::inject_fault.
void settle();
/// False once the device context is unusable: a sticky fault (probed by
/// clearing the last error and synchronising again: a sticky error comes
/// back), or a fault injected through testing::inject_fault.
bool healthy();
/// Bytes of device memory currently owned by Buffer objects (hygiene checks).
size_t live_bytes();
/// Device-to-device copy of `bytes` bytes (ordered with kernel launches); the
/// two ranges must not overlap (the cpu backend copies large ones in pieces on
/// its kernel workers).
void copy_d2d(void* dst, const void* src, size_t bytes);
/// Fills `count` 16-bit elements at device address `dst` with finite,
/// non-zero values of magnitude 2^-4..2^3 (f16 bits, or bf16 when `bf16`)
/// derived from `seed`, on the device: for inputs of many gigabytes that only
/// need to be valid numbers (kvharness bench).
void fill_random16(void* dst, size_t count, bool bf16, uint64_t seed);

/// What time_launches measured, microseconds per launch.
struct Timing {
  double median_us = 0, min_us = 0, max_us = 0;
  int reps = 0;
  std::vector<double> samples_us;  // each timed run, ascending
};
/// Times `launch` (enqueues one run of a kernel, or of several, on the null
/// stream and returns 0 or a runtime error code): `warmup` untimed runs, then
/// `reps` (>= 1) timed runs. GPU backends bracket each run with a pair of
/// device events (all recorded back to back, one synchronize at the end), so
/// host launch overhead counts only where the device would otherwise idle;
/// the cpu backend times launch + synchronize on the host steady clock.
/// Throws LaunchError naming the code if `launch` returns non-zero, Error if
/// the device faults.
Timing time_launches(const std::function<int()>& launch, int warmup, int reps);
/// Runs `launch` n times untimed, synchronizes, and returns the host wall time of one launch
/// (µs, the n averaged, synchronize included): what a timed launch will cost the run.
/// Errors as time_launches.
double warm_up_us(const std::function<int()>& launch, int n);
/// time_launches(...).median_us.
double time_median_us(const std::function<int()>& launch, int warmup, int reps);

/// Test hooks (every backend): simulate a sticky device fault.
namespace testing {
/// The nth call of synchronize() from now (1: the next) throws Error with
/// device_lost() set, as if a kernel had hit an illegal address; from then on
/// every checked runtime call throws the same way and healthy() is false,
/// until clear_fault(). n <= 0 disarms. `kvharness run` arms it from the
/// environment variable KVH_INJECT_FAULT=n (for the end-to-end test).
void inject_fault(int nth_synchronize);
void clear_fault();
}  // namespace testing
/// Text for an error code a launcher returned.
std::string error_text(int code);
/// cpu backend only: sets lanes per wavefront (32 or 64) and the random
/// fiber order; throws Error for other wave sizes or on GPU backends when
/// the request differs from the hardware.
void configure_host(int wave_size, bool random_order, uint64_t seed);

}  // namespace kvh::device
