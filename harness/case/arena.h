// Guarded arenas: a tensor's whole storage plus a margin before and after, in
// one host buffer. Every byte no view owns holds a position-dependent
// sentinel, so a write outside the views changes a byte we can point at.
#pragma once
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "device/guard_pattern.h"

namespace kvh {

/// Large host buffers backed by transparent huge pages where the kernel
/// allows it (madvise mode): page faults dominate a case's time otherwise.
/// Freed blocks of 4 MiB and more are kept (up to 2 GiB, sizes in
/// device::size_class classes) for later requests of half to all their size,
/// except under ASan or with KVH_NO_POOL set (as the device pool); big_free
/// must be given the size big_alloc was asked for. Throws std::bad_alloc.
void* big_alloc(size_t bytes);
void big_free(void* p, size_t bytes) noexcept;

/// Allocator that leaves bytes uninitialised on resize: arenas reach gigabytes,
/// and every byte is written (sentinel or download) right after.
template <class T> struct DefaultInitAllocator : std::allocator<T> {
  template <class U> struct rebind { using other = DefaultInitAllocator<U>; };
  DefaultInitAllocator() = default;
  template <class U> DefaultInitAllocator(const DefaultInitAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(big_alloc(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { big_free(p, n * sizeof(T)); }
  template <class U> void construct(U* p) { ::new (static_cast<void*>(p)) U; }
  template <class U, class... A> void construct(U* p, A&&... a) { ::new (static_cast<void*>(p)) U(std::forward<A>(a)...); }
};
using ByteBuffer = std::vector<uint8_t, DefaultInitAllocator<uint8_t>>;
/// 16-bit elements, same allocator (host copies of inputs for the references).
using U16Buffer = std::vector<uint16_t, DefaultInitAllocator<uint16_t>>;

class GuardedArena {
 public:
  /// storage_elems elements of elem_bytes each, with margin_bytes on both sides
  /// (a multiple of elem_bytes). Filled with the sentinel (on all host cores).
  GuardedArena(int64_t storage_elems, int64_t elem_bytes, int64_t margin_bytes);
  /// Same size, contents uninitialised: for buffers a download fills in full.
  struct Uninitialized {};
  GuardedArena(int64_t storage_elems, int64_t elem_bytes, int64_t margin_bytes, Uninitialized);
  /// Sentinel byte at arena byte `i` (not a constant: catches shifted copies).
  static uint8_t sentinel(int64_t i) { return sentinel_byte(uint64_t(i)); }

  int64_t margin_bytes() const { return margin_; }
  int64_t elem_bytes() const { return elem_bytes_; }
  int64_t storage_elems() const { return storage_elems_; }
  ByteBuffer& bytes() { return bytes_; }
  const ByteBuffer& bytes() const { return bytes_; }
  /// Pointer to storage element 0 (after the front margin).
  uint8_t* storage() { return bytes_.data() + margin_; }
  const uint8_t* storage() const { return bytes_.data() + margin_; }
  template <class T> T* storage_as() { return reinterpret_cast<T*>(storage()); }
  template <class T> const T* storage_as() const { return reinterpret_cast<const T*>(storage()); }
  /// Element `e` of the storage (e may be negative: inside the front margin).
  uint16_t elem16(int64_t e) const {
    uint16_t v;
    std::memcpy(&v, storage() + e * 2, 2);
    return v;
  }

 private:
  int64_t storage_elems_, elem_bytes_, margin_;
  ByteBuffer bytes_;
};

/// A read-only window on a guarded arena's bytes: a GuardedArena's, or device
/// memory the host can read in place (device::host_reads_device_memory). Valid
/// while what it looks at lives.
struct ArenaBytes {
  const uint8_t* data = nullptr;  // arena byte 0 (the front margin's first)
  size_t size = 0;                // bytes, margins included
  int64_t margin = 0, elem_bytes = 2;
  ArenaBytes() = default;
  ArenaBytes(const uint8_t* d, size_t n, int64_t margin_bytes, int64_t elem)
      : data(d), size(n), margin(margin_bytes), elem_bytes(elem) {}
  ArenaBytes(const GuardedArena& g)  // NOLINT: a GuardedArena is viewed where an ArenaBytes is asked for
      : data(g.bytes().data()), size(g.bytes().size()), margin(g.margin_bytes()), elem_bytes(g.elem_bytes()) {}
  const uint8_t* storage() const { return data + margin; }
  /// Element `e` of the storage as 16 bits (e may be negative: inside the front margin).
  uint16_t elem16(int64_t e) const {
    uint16_t v;
    std::memcpy(&v, storage() + e * 2, 2);
    return v;
  }
};

}  // namespace kvh
