#include "arena.h"

#include <stdexcept>

namespace kvh {

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
