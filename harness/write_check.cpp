#include "write_check.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include <unordered_map>

#include "cache_writer.h"
#include "values.h"

namespace kvh {

Verdict check_write(const CacheLayout& L, DType dtype, const std::function<std::optional<uint16_t>(int64_t)>& old_value,
                    const GuardedArena& expected, const GuardedArena& actual) {
  Verdict v;
  const auto& a = actual.bytes();
  const auto& e = expected.bytes();
  if (a.size() == e.size() && std::memcmp(a.data(), e.data(), a.size()) == 0) {
    v.max_abs_err = 0.0;
    v.max_rel_err = 0.0;
    return v;
  }
  const int64_t margin_elems = actual.margin_bytes() / 2;
  const int64_t total = int64_t(a.size()) / 2;
  int64_t out_of_view = 0, mismatched = 0, unwritten = 0;
  int64_t first_oov = 0, worst_elem = 0;
  double worst_abs = -1, worst_rel = 0;
  for (int64_t i = 0; i < total; ++i) {
    if (std::memcmp(&a[size_t(i * 2)], &e[size_t(i * 2)], 2) == 0) continue;
    const int64_t el = i - margin_elems;  // storage element index
    const bool owned = L.key.index_of(el) || L.value.index_of(el);
    if (!owned) {
      if (out_of_view++ == 0) first_oov = el;
      continue;
    }
    const uint16_t got = actual.elem16(el), want = expected.elem16(el);
    const auto old = old_value(el);
    if (old && got == *old) ++unwritten;
    else ++mismatched;
    const double g = decode16(dtype, got), w = decode16(dtype, want);
    double abs_err = std::isfinite(g) ? std::fabs(g - w) : INFINITY;
    if (abs_err > worst_abs) {
      worst_abs = abs_err;
      worst_rel = abs_err / std::max(std::fabs(w), 1e-30);
      worst_elem = el;
    }
  }
  v.status = Status::Fail;
  v.bad_elements = out_of_view + mismatched + unwritten;
  if (worst_abs >= 0) {
    v.max_abs_err = worst_abs;
    v.max_rel_err = worst_rel;
  }
  const std::string counts = fmt::format("{} out-of-view, {} mismatched, {} unwritten element(s)", out_of_view,
                                         mismatched, unwritten);
  const std::string worst =
      worst_abs >= 0 ? fmt::format("; worst element at storage element {} ({}): got {}, want {}", worst_elem,
                                   L.describe(worst_elem), decode16(dtype, actual.elem16(worst_elem)),
                                   decode16(dtype, expected.elem16(worst_elem)))
                     : "";
  if (out_of_view) {
    v.reason = reason::kOutOfView;
    v.detail = fmt::format("write outside the views: first bad byte at storage byte offset {} ({}); {}{}",
                           first_oov * 2, L.describe(first_oov), counts, worst);
  } else if (mismatched) {
    v.reason = reason::kMismatch;
    v.detail = counts + worst;
  } else {
    v.reason = reason::kUnwritten;
    v.detail = counts + worst;
  }
  return v;
}

Verdict check_writer_output(const CacheLayout& L, DType dtype, const std::vector<uint16_t>& key,
                            const std::vector<uint16_t>& value, const std::vector<int64_t>& slots,
                            GuardedArena& expected, const GuardedArena& actual) {
  // Remember what each element the reference writes held, to tell an unwritten element from a wrong one.
  uint16_t* st = expected.storage_as<uint16_t>();
  const int64_t H = L.geo.num_kv_heads, D = L.geo.head_size, B = L.geo.block_size;
  std::vector<std::pair<int64_t, uint16_t>> olds;
  olds.reserve(slots.size() * size_t(2 * H * D));
  for (int64_t slot : slots) {
    if (slot < 0) continue;
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < D; ++d)
        for (bool v : {false, true}) {
          const int64_t off = reference::cache_offset(L, v, slot / B, h, slot % B, d);
          olds.emplace_back(off, st[off]);
        }
  }
  reference::write_cache(L, key, value, slots, st);
  std::unordered_map<int64_t, uint16_t> old_map;  // built only if the check asks
  auto old_value = [&](int64_t off) -> std::optional<uint16_t> {
    if (old_map.empty()) old_map.insert(olds.begin(), olds.end());
    auto it = old_map.find(off);
    if (it == old_map.end()) return std::nullopt;
    return it->second;
  };
  Verdict v = check_write(L, dtype, old_value, expected, actual);
  attribute(v, component::kWriter);
  return v;
}

}  // namespace kvh
