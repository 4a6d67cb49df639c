#include "case/guarded_array.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "case/views.h"

namespace kvh {

GuardedArray::GuardedArray(std::string name, std::vector<int64_t> shape, kvh_dtype dtype, int64_t elem_bytes,
                           Access access, int64_t margin_bytes)
    : name_(std::move(name)),
      shape_(std::move(shape)),
      dtype_(dtype),
      access_(access),
      host_([&] {
        int64_t n = 1;
        for (int64_t d : shape_) n *= d;
        return n;
      }(), elem_bytes, margin_bytes) {
  std::memset(host_.storage(), 0, size_t(elems() * elem_bytes));
}

void GuardedArray::fill_margins(const void* value) {
  const int64_t eb = host_.elem_bytes(), m = host_.margin_bytes();
  uint8_t* b = host_.bytes().data();
  const int64_t tail = m + elems() * eb;
  for (int64_t i = 0; i + eb <= m; i += eb) {
    std::memcpy(b + i, value, size_t(eb));
    std::memcpy(b + tail + i, value, size_t(eb));
  }
}

void GuardedArray::fill_elements(const void* value) {
  const int64_t eb = host_.elem_bytes();
  for (int64_t e = 0; e < elems(); ++e) std::memcpy(host_.storage() + e * eb, value, size_t(eb));
}

void GuardedArray::upload() {
  dev_ = device::Buffer(host_.bytes().size());
  dev_.upload(host_.bytes().data(), host_.bytes().size());
}

kvh_tensor GuardedArray::tensor() const {
  return contiguous_tensor(static_cast<uint8_t*>(dev_.get()) + host_.margin_bytes(), shape_, dtype_);
}

std::string GuardedArray::check_after() const {
  ByteBuffer after(host_.bytes().size());
  dev_.download(after.data(), after.size());
  const ByteBuffer& before = host_.bytes();
  const int64_t eb = host_.elem_bytes(), m = host_.margin_bytes(), tail = m + elems() * eb;
  for (int64_t i = 0; i < int64_t(after.size()); ++i) {
    if (after[size_t(i)] == before[size_t(i)]) continue;
    if (i < m) return fmt::format("the reader wrote before {} (byte {} before its start)", name_, m - i);
    if (i >= tail) return fmt::format("the reader wrote past {} (byte {} after its end)", name_, i - tail + 1);
    if (access_ == Access::Read) return fmt::format("the reader wrote into {} (element {})", name_, (i - m) / eb);
    i = tail - 1;  // a workspace's elements are the reader's: only its margins count
  }
  return "";
}

GuardedArray& GuardedArrays::add(std::string name, std::vector<int64_t> shape, kvh_dtype dtype, int64_t elem_bytes,
                                 GuardedArray::Access access, int64_t margin_bytes) {
  arrays.emplace_back(std::move(name), std::move(shape), dtype, elem_bytes, access, margin_bytes);
  return arrays.back();
}

kvh_tensor GuardedArrays::add_i32(std::string name, const std::vector<int32_t>& values, std::optional<int32_t> margin,
                                  std::vector<int64_t> shape, int64_t reach) {
  if (shape.empty()) shape = {int64_t(values.size())};
  const int64_t margin_bytes = std::max<int64_t>(kSmallMargin, (reach * 4 + 4095) / 4096 * 4096);
  GuardedArray& a = add(std::move(name), std::move(shape), KVH_DT_I32, 4, GuardedArray::Access::Read, margin_bytes);
  std::copy(values.begin(), values.end(), a.host_as<int32_t>());
  if (margin) a.fill_margins(&*margin);
  a.upload();
  return a.tensor();
}

kvh_tensor GuardedArrays::add_f32(std::string name, const std::vector<float>& values) {
  if (values.empty()) return kvh_tensor{};
  GuardedArray& a = add(std::move(name), {int64_t(values.size())}, KVH_DT_F32, 4, GuardedArray::Access::Read);
  std::copy(values.begin(), values.end(), a.host_as<float>());
  a.upload();
  return a.tensor();
}

std::string GuardedArrays::check_after() const {
  for (const GuardedArray& a : arrays)
    if (std::string why = a.check_after(); !why.empty()) return why;
  return "";
}

}  // namespace kvh
