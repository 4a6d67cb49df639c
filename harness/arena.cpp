#include "arena.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <stdexcept>

namespace kvh {

void* big_alloc(size_t bytes) {
  constexpr size_t kHuge = size_t(2) << 20;
  if (bytes < 2 * kHuge) {
    void* p = std::malloc(std::max<size_t>(bytes, 1));
    if (!p) throw std::bad_alloc();
    return p;
  }
  const size_t n = (bytes + kHuge - 1) / kHuge * kHuge;
  void* p = std::aligned_alloc(kHuge, n);
  if (!p) throw std::bad_alloc();
  madvise(p, n, MADV_HUGEPAGE);  // advice only: ignored where THP is off
  return p;
}

void big_free(void* p) noexcept { std::free(p); }

GuardedArena::GuardedArena(int64_t storage_elems, int64_t elem_bytes, int64_t margin_bytes)
    : storage_elems_(storage_elems), elem_bytes_(elem_bytes), margin_(margin_bytes) {
  if (margin_bytes % elem_bytes != 0) throw std::invalid_argument("arena margin must be whole elements");
  bytes_.resize(size_t(storage_elems * elem_bytes + 2 * margin_bytes));
  for (size_t i = 0; i < bytes_.size(); ++i) bytes_[i] = sentinel(int64_t(i));
}

GuardedArena::GuardedArena(int64_t storage_elems, int64_t elem_bytes, int64_t margin_bytes, Uninitialized)
    : storage_elems_(storage_elems), elem_bytes_(elem_bytes), margin_(margin_bytes) {
  bytes_.resize(size_t(storage_elems * elem_bytes + 2 * margin_bytes));
}

}  // namespace kvh
