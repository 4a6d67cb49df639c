#include "cache_writer.h"

#include <stdexcept>
#include <string>

namespace kvh::reference {

namespace {
int64_t dot(const StridedView& v, std::initializer_list<int64_t> idx) {
  int64_t off = v.offset;
  size_t d = 0;
  for (int64_t i : idx) off += i * v.stride[d++];
  return off;
}
}  // namespace

int64_t cache_offset(const CacheLayout& L, bool is_value, int64_t b, int64_t h, int64_t t, int64_t d) {
  const StridedView& v = is_value ? L.value : L.key;
  const int64_t x = L.geo.x;
  switch (L.format) {
    case CacheFormat::Flash:
    case CacheFormat::Mla: return dot(v, {b, t, h, d});  // mla: h is 0, d within the view's part
    case CacheFormat::Hnd: return dot(v, {b, h, t, d});
    case CacheFormat::PaV1:
      return is_value ? dot(v, {b, h, d, t}) : dot(v, {b, h, d / x, t, d % x});
    case CacheFormat::Shuffle:
      return is_value ? dot(v, {b, h, t / x, d, t % x}) : dot(v, {b, h, d / x, t, d % x});
  }
  throw std::logic_error("unknown cache format");
}

void write_cache(const CacheLayout& L, const std::vector<uint16_t>& key, const std::vector<uint16_t>& value,
                 const std::vector<int64_t>& slot_mapping, uint16_t* storage) {
  const auto& g = L.geo;
  const int64_t per_token = g.num_kv_heads * g.head_size;
  for (size_t tok = 0; tok < slot_mapping.size(); ++tok) {
    const int64_t slot = slot_mapping[tok];
    if (slot < 0) continue;
    const int64_t block = slot / g.block_size, t = slot % g.block_size;
    if (block >= g.num_blocks)
      throw std::out_of_range("slot " + std::to_string(slot) + " is beyond the cache's " +
                              std::to_string(g.num_blocks) + " blocks");
    for (int64_t h = 0; h < g.num_kv_heads; ++h)
      for (int64_t d = 0; d < g.head_size; ++d) {
        const size_t src = tok * size_t(per_token) + size_t(h * g.head_size + d);
        storage[cache_offset(L, false, block, h, t, d)] = key[src];
        storage[cache_offset(L, true, block, h, t, d)] = value[src];
      }
  }
}

}  // namespace kvh::reference
