#include "case/views.h"

#include <stdexcept>

namespace kvh {

kvh_tensor to_tensor(const StridedView& v, void* base, int64_t elem_bytes, kvh_dtype dtype) {
  if (v.shape.size() > KVH_MAX_DIMS) throw std::invalid_argument("view has too many dims");
  kvh_tensor t{};
  t.data = static_cast<uint8_t*>(base) + v.offset * elem_bytes;
  t.dtype = dtype;
  t.ndim = int32_t(v.shape.size());
  for (size_t i = 0; i < v.shape.size(); ++i) {
    t.shape[i] = v.shape[i];
    t.stride[i] = v.stride[i];
  }
  return t;
}

kvh_tensor contiguous_tensor(void* data, std::vector<int64_t> shape, kvh_dtype dtype) {
  StridedView v;
  v.shape = shape;
  v.stride.resize(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    v.stride[i] = acc;
    acc *= shape[i];
  }
  return to_tensor(v, data, 0, dtype);
}

}  // namespace kvh
