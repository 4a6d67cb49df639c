// Helpers that turn the case model's layouts into kernel arguments and walk
// strided views.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "kvharness/provider.h"
#include "layout.h"
#include "run/parallel.h"

namespace kvh {

/// kvh_tensor for view `v` of a storage whose element 0 is at device address `base`.
kvh_tensor to_tensor(const StridedView& v, void* base, int64_t elem_bytes, kvh_dtype dtype);
/// A contiguous tensor of `shape` at `data`.
kvh_tensor contiguous_tensor(void* data, std::vector<int64_t> shape, kvh_dtype dtype);
/// Calls fn(storage offset) for every element of v, in tensor order (a
/// template: it runs once per cache element, billions of times in the large suite).
template <class Fn> void for_each_offset(const StridedView& v, Fn&& fn) {
  const size_t n = v.shape.size();
  for (int64_t s : v.shape)
    if (s == 0) return;
  std::vector<int64_t> idx(n, 0);
  const int64_t inner = v.shape[n - 1], inner_stride = v.stride[n - 1];
  int64_t off = v.offset;
  for (;;) {
    for (int64_t i = 0; i < inner; ++i) fn(off + i * inner_stride);
    size_t d = n - 1;
    for (;;) {
      if (d == 0) return;
      --d;
      if (++idx[d] < v.shape[d]) {
        off += v.stride[d];
        break;
      }
      off -= (v.shape[d] - 1) * v.stride[d];
      idx[d] = 0;
    }
  }
}

/// for_each_offset on all host cores: fn(storage offset, logical index) for
/// every element of v, the view split on its outermost dim (the logical index
/// numbers elements in tensor order, as the device fills do).
template <class Fn> void parallel_for_each_offset(const StridedView& v, Fn&& fn) {
  if (v.shape.empty() || v.shape[0] == 0) return;
  const int64_t inner = v.numel() / v.shape[0];
  parallel_for(v.shape[0], 1, [&](int64_t b, int64_t e) {
    StridedView part = v;
    part.shape[0] = e - b;
    part.offset += b * v.stride[0];
    int64_t i = b * inner;
    for_each_offset(part, [&](int64_t off) { fn(off, i++); });
  });
}

}  // namespace kvh
