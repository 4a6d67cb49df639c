// Sparse device buffers (issue 23): a reserved range of device addresses of
// which only some byte windows are backed by memory, so that a cache whose
// views span more than 2^31 elements and block ids past 65,535 costs only
// the pages a case touches. An access outside the windows faults:
//   cpu:       the range is mmap'd PROT_NONE with a guard of kGuardBytes on
//              each side (a wrapped 32-bit offset lands there, not in other
//              memory); a kernel's access is SIGSEGV, which the runner's
//              handler (runner.h on_fatal_signal) makes the case's CRASH.
//   CUDA/ROCm: the runtime's virtual memory API (cuMemAddressReserve /
//              hipMemAddressReserve, physical memory mapped per window); an
//              access outside is an illegal address fault, the device is
//              lost, the case is a CRASH (in an isolated worker: --isolate is
//              the default on GPUs). Where the API is missing or refuses, a
//              plain allocation of the whole range (every byte backed).
#pragma once
#include <csignal>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <sys/wait.h>

namespace kvh::device {

/// Bytes [begin, end) of a buffer.
struct ByteRange {
  size_t begin = 0, end = 0;
};

/// The unit a committed window is rounded out to, in bytes: the host page
/// size (cpu), the minimum allocation granularity of device 0's physical
/// memory (CUDA/ROCm; 2 MiB on the devices seen so far).
size_t sparse_granularity();

/// `windows` rounded out to multiples of `granularity`, clipped to [0, bytes),
/// sorted and merged (touching or overlapping windows become one).
std::vector<ByteRange> round_windows(std::vector<ByteRange> windows, size_t bytes, size_t granularity);

/// `bytes` bytes of device address space, of which round_windows(windows)
/// are backed by memory (contents undefined) and the rest faults when
/// accessed (see the file comment). Throws AllocError when neither the
/// reservation nor the fallback allocation succeeds.
class SparseBuffer {
 public:
  /// Bytes of PROT_NONE address space kept before and after the range on
  /// the cpu backend: a 32-bit element offset that wraps negative reaches
  /// at most 2^31 elements (4 GiB of 16-bit elements) before its view.
  static constexpr size_t kGuardBytes = size_t(8) << 30;

  SparseBuffer() = default;
  SparseBuffer(size_t bytes, std::vector<ByteRange> windows);
  ~SparseBuffer();
  SparseBuffer(SparseBuffer&& o) noexcept { swap(o); }
  SparseBuffer& operator=(SparseBuffer&& o) noexcept {
    swap(o);
    return *this;
  }
  SparseBuffer(const SparseBuffer&) = delete;
  SparseBuffer& operator=(const SparseBuffer&) = delete;

  void* get() const { return ptr_; }
  size_t size() const { return bytes_; }
  /// The backed windows, sorted and disjoint, within [0, size()); the whole
  /// range (one window) for the fallback.
  const std::vector<ByteRange>& windows() const { return windows_; }
  /// Bytes backed by memory (the sum of windows()).
  size_t committed_bytes() const;
  /// False for the fallback (a plain allocation: nothing faults).
  bool reserved() const { return reserved_; }

 private:
  void swap(SparseBuffer& o) noexcept;
  void release() noexcept;
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  std::vector<ByteRange> windows_;
  bool reserved_ = false;
  // Backend state: the cpu mapping's base and length; the GPU's physical handles (one a window).
  void* base_ = nullptr;
  size_t mapped_ = 0;
  std::vector<uint64_t> handles_;
  void* fallback_ = nullptr;
};

/// For death tests (cpu backend): whether a child's wait status `status` is
/// the death of an access to an unbacked page: SIGSEGV, or SIGABRT under
/// AddressSanitizer, whose SEGV handler reports and then aborts
/// (abort_on_error=1, the asan test preset's ASAN_OPTIONS).
inline bool died_of_unbacked_access(int status) {
  if (!WIFSIGNALED(status)) return false;
#if defined(__SANITIZE_ADDRESS__)
  if (WTERMSIG(status) == SIGABRT) return true;
#endif
  return WTERMSIG(status) == SIGSEGV;
}

}  // namespace kvh::device
