// The harness's window onto the backend: device memory, copies, the device's
// description. Implemented once in device.hip for all three backends; the
// harness never includes a runtime header itself.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace kvh::device {

/// What `kvharness info` prints and results.json records.
struct Info {
  std::string backend;      // cpu | cuda | rocm
  std::string name;         // device name, or "host SIMT (N workers)"
  std::string arch;         // gfx942, sm_90, x86_64
  int wave_size = 0;        // lanes per wavefront / warp
  int compute_units = 0;    // CUs / SMs / host workers
  size_t memory_bytes = 0;  // total device memory
};
Info info();

/// A runtime call failed; what() names the call and the runtime's error text.
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Owns `bytes` bytes of device memory. Throws Error when allocation fails.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t bytes);
  ~Buffer();
  Buffer(Buffer&& o) noexcept : ptr_(o.ptr_), bytes_(o.bytes_) { o.ptr_ = nullptr; o.bytes_ = 0; }
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* get() const { return ptr_; }
  size_t size() const { return bytes_; }
  void upload(const void* host, size_t bytes);
  void download(void* host, size_t bytes) const;

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

/// Waits for all device work; throws Error with the runtime's text if it failed.
void synchronize();
/// Text for an error code a launcher returned.
std::string error_text(int code);
/// cpu backend only: sets lanes per wavefront (32 or 64) and the random
/// fiber order; throws Error for other wave sizes or on GPU backends when
/// the request differs from the hardware.
void configure_host(int wave_size, bool random_order, uint64_t seed);

}  // namespace kvh::device
