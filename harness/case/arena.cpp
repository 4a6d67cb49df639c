#include "case/arena.h"

#include "device/device.h"
#include "run/parallel.h"

#include <sys/mman.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <cstdlib>
#include <new>
#include <stdexcept>

namespace kvh {

namespace {

constexpr size_t kHuge = size_t(2) << 20;

// Freed huge-page blocks, kept for the next case that needs about as much:
// returning them to the kernel and faulting fresh pages in again was a tenth
// of a case's time on the cpu backend. At most kCacheLimit bytes are kept.
constexpr size_t kCacheLimit = size_t(2) << 30;
struct BlockCache {
  std::mutex m;
  std::multimap<size_t, void*> free;  // rounded size -> block
  size_t held = 0;
};
BlockCache& cache() {
  static BlockCache* c = new BlockCache;  // never destroyed: arenas may outlive static destruction order
  return *c;
}
size_t rounded(size_t bytes) { return (device::size_class(bytes) + kHuge - 1) / kHuge * kHuge; }

}  // namespace

void* big_alloc(size_t bytes) {
  if (bytes < 2 * kHuge) {
    void* p = std::malloc(std::max<size_t>(bytes, 1));
    if (!p) throw std::bad_alloc();
    return p;
  }
  const size_t n = device::pooling() ? rounded(bytes) : (bytes + kHuge - 1) / kHuge * kHuge;  // a multiple of the alignment
  if (device::pooling()) {
    BlockCache& c = cache();
    std::lock_guard<std::mutex> lk(c.m);
    auto it = c.free.lower_bound(n);
    if (it != c.free.end() && it->first <= 2 * n) {
      void* p = it->second;
      c.held -= it->first;
      c.free.erase(it);
      return p;
    }
  }
  void* p = std::aligned_alloc(kHuge, n);
  if (!p) throw std::bad_alloc();
  madvise(p, n, MADV_HUGEPAGE);  // advice only: ignored where THP is off
  return p;
}

void big_free(void* p, size_t bytes) noexcept {
  if (!p) return;
  if (bytes < 2 * kHuge) return std::free(p);
  // A block reused for a smaller request keeps its own size class: remember the request's
  // rounded size only as a lower bound, so it is never handed out for more than it holds.
  const size_t n = rounded(bytes);
  if (!device::pooling()) return std::free(p);
  BlockCache& c = cache();
  std::lock_guard<std::mutex> lk(c.m);
  if (c.held + n > kCacheLimit) return std::free(p);
  c.free.emplace(n, p);
  c.held += n;
}

GuardedArena::GuardedArena(int64_t storage_elems, int64_t elem_bytes, int64_t margin_bytes)
    : storage_elems_(storage_elems), elem_bytes_(elem_bytes), margin_(margin_bytes) {
  if (margin_bytes % elem_bytes != 0) throw std::invalid_argument("arena margin must be whole elements");
  bytes_.resize(size_t(storage_elems * elem_bytes + 2 * margin_bytes));
  parallel_for(int64_t(bytes_.size()), 1 << 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) bytes_[size_t(i)] = sentinel(i);
  });
}

GuardedArena::GuardedArena(int64_t storage_elems, int64_t elem_bytes, int64_t margin_bytes, Uninitialized)
    : storage_elems_(storage_elems), elem_bytes_(elem_bytes), margin_(margin_bytes) {
  bytes_.resize(size_t(storage_elems * elem_bytes + 2 * margin_bytes));
}

}  // namespace kvh
