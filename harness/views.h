// Helpers that turn the case model's layouts into kernel arguments and walk
// strided views.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "kvharness/provider.h"
#include "layout.h"

namespace kvh {

/// kvh_tensor for view `v` of a storage whose element 0 is at device address `base`.
kvh_tensor to_tensor(const StridedView& v, void* base, int64_t elem_bytes, kvh_dtype dtype);
/// A contiguous tensor of `shape` at `data`.
kvh_tensor contiguous_tensor(void* data, std::vector<int64_t> shape, kvh_dtype dtype);
/// Calls fn(storage offset) for every element of v, in tensor order.
void for_each_offset(const StridedView& v, const std::function<void(int64_t)>& fn);

}  // namespace kvh
