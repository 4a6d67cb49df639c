// Reference cache writer: the cache contents a correct writer must produce,
// computed from the logical K/V, slot_mapping and the layout description
// alone. It shares no code with kernels/: its index math is "tensor index of
// (block, head, token, dim) in this format, dotted with the view's strides".
#pragma once
#include <cstdint>
#include <vector>

#include "layout.h"

namespace kvh::reference {

/// Storage element offset of logical (block, head, token-in-block, dim) in
/// view `v` of a cache in format `f`; is_value picks V's element order.
int64_t cache_offset(const CacheLayout& L, bool is_value, int64_t block, int64_t head, int64_t token, int64_t dim);

/// Applies the writes. key, value: logical [num_tokens, num_kv_heads, head_size]
/// contiguous (16-bit element bits); slot_mapping: [num_tokens], negative =
/// padding (skipped); storage: the whole storage buffer of L (L.storage_elems
/// elements), updated in place. Throws std::out_of_range for a slot beyond
/// the cache.
void write_cache(const CacheLayout& L, const std::vector<uint16_t>& key, const std::vector<uint16_t>& value,
                 const std::vector<int64_t>& slot_mapping, uint16_t* storage);

}  // namespace kvh::reference
