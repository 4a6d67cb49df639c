#include "check/write_check.h"

#include <fmt/format.h>

#include <cmath>
#include <algorithm>
#include <cstring>

#include "../reference/fp8.h"
#include "run/parallel.h"
#include "case/values.h"
#include "case/views.h"

namespace kvh {

namespace {
// A cache element's value: a 16-bit float, an fp8 code's value, or an int8 code itself (scales
// apart: int8 compares code by code).
double decode_elem(DType dtype, KvCacheDType kv, uint32_t bits) {
  if (kv == KvCacheDType::Int8) return double(int8_t(uint8_t(bits)));
  if (kv == KvCacheDType::Same) return decode16(dtype, uint16_t(bits));
  return reference::fp8_decode(uint8_t(bits),
                               kv == KvCacheDType::Fp8E4m3fnuz ? reference::Fp8Format::E4M3FNUZ : reference::Fp8Format::E4M3FN);
}
}  // namespace

Verdict check_write(const CacheLayout& L, DType dtype, const ArenaBytes& before, const ArenaBytes& expected,
                    const ArenaBytes& actual, KvCacheDType kv) {
  Verdict v;
  const uint8_t* a = actual.data;
  const uint8_t* e = expected.data;
  if (actual.size == expected.size && std::memcmp(a, e, actual.size) == 0) {
    v.max_abs_err = 0.0;
    v.max_rel_err = 0.0;
    return v;
  }
  const int64_t eb = actual.elem_bytes;  // 2, or 1 for an fp8 cache
  auto elem = [&](const ArenaBytes& g, int64_t el) -> uint16_t { return eb == 1 ? g.storage()[el] : g.elem16(el); };
  auto decode = [&](uint16_t bits) { return decode_elem(dtype, kv, bits); };
  const int64_t margin_elems = actual.margin / eb;
  const int64_t total = int64_t(actual.size) / eb;
  // Which storage elements the views own: one pass over each view (split on its outermost dim
  // across the host's cores), not a search per differing element.
  std::vector<uint8_t> owned(size_t(L.storage_elems), 0);
  for (const StridedView* view : {&L.key, &L.value})
    parallel_for_each_offset(*view, [&](int64_t off, int64_t) { owned[size_t(off)] = 1; });
  // Elements of the arena in chunks, each chunk tallied on its own, merged in order (the
  // first of each class and the first worst element stay the first).
  constexpr int64_t kChunk = 1 << 16;
  std::vector<device::WriteDiff> tallies(size_t((total + kChunk - 1) / kChunk));
  parallel_for(int64_t(tallies.size()), 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      device::WriteDiff& t = tallies[size_t(c)];
      const int64_t begin = c * kChunk, end = std::min(total, begin + kChunk);
      if (std::memcmp(&a[size_t(begin * eb)], &e[size_t(begin * eb)], size_t((end - begin) * eb)) == 0) continue;
      for (int64_t i = begin; i < end; ++i) {
        if (std::memcmp(&a[size_t(i * eb)], &e[size_t(i * eb)], size_t(eb)) == 0) continue;
        const int64_t el = i - margin_elems;  // storage element index
        if (el < 0 || el >= L.storage_elems || !owned[size_t(el)]) {
          if (t.out_of_view++ == 0) t.first_out_of_view = el;
          continue;
        }
        const uint16_t got = elem(actual, el), want = elem(expected, el);
        // An element the reference changed that still holds its old value was never written. (One it
        // did not change cannot be unwritten: want == old there, and got differs from want.)
        if (got == elem(before, el)) {
          if (t.unwritten++ == 0) t.first_unwritten = el;
        } else if (t.mismatched++ == 0) {
          t.first_mismatched = el;
        }
        const double g = decode(got), w = decode(want);
        const double abs_err = std::isfinite(g) ? std::fabs(g - w) : INFINITY;
        if (abs_err > t.worst_abs) t.worst_abs = abs_err, t.worst = el, t.worst_got = got, t.worst_want = want;
      }
    }
  });
  device::WriteDiff d;
  for (const device::WriteDiff& t : tallies) {  // in index order: the first chunk with a class has its first
    if (t.out_of_view && !d.out_of_view) d.first_out_of_view = t.first_out_of_view;
    if (t.mismatched && !d.mismatched) d.first_mismatched = t.first_mismatched;
    if (t.unwritten && !d.unwritten) d.first_unwritten = t.first_unwritten;
    d.out_of_view += t.out_of_view;
    d.mismatched += t.mismatched;
    d.unwritten += t.unwritten;
    if (t.worst_abs > d.worst_abs) d.worst_abs = t.worst_abs, d.worst = t.worst, d.worst_got = t.worst_got, d.worst_want = t.worst_want;
  }
  return write_verdict(L, dtype, d, kv);
}

Verdict write_verdict(const CacheLayout& L, DType dtype, const device::WriteDiff& d, KvCacheDType kv) {
  Verdict v;
  const int64_t eb = L.geo.elem_bytes;
  auto decode = [&](uint32_t bits) { return decode_elem(dtype, kv, bits); };
  v.status = Status::Fail;
  v.bad_elements = d.out_of_view + d.mismatched + d.unwritten;
  if (d.worst_abs >= 0) {
    v.max_abs_err = d.worst_abs;
    v.max_rel_err = d.worst_abs / std::max(std::fabs(decode(d.worst_want)), 1e-30);
  }
  const std::string counts = fmt::format("{} out-of-view, {} mismatched, {} unwritten element(s)", d.out_of_view,
                                         d.mismatched, d.unwritten);
  const std::string worst =
      d.worst_abs >= 0 ? fmt::format("; worst element at storage element {} ({}): got {}, want {}", d.worst,
                                     L.describe(d.worst), decode(d.worst_got), decode(d.worst_want))
                       : "";
  // The first element of the primary class, when it is not the worst one already named.
  auto first = [&](const char* what, int64_t el) {
    return el != d.worst ? fmt::format("; first {} at storage element {} ({})", what, el, L.describe(el))
                                    : std::string();
  };
  if (d.out_of_view) {
    v.reason = reason::kOutOfView;
    v.detail = fmt::format("write outside the views: first bad byte at storage byte offset {} ({}); {}{}",
                           d.first_out_of_view * eb, L.describe(d.first_out_of_view), counts, worst);
  } else if (d.mismatched) {
    v.reason = reason::kMismatch;
    v.detail = counts + worst + first("mismatched", d.first_mismatched);
  } else {
    v.reason = reason::kUnwritten;
    v.detail = counts + worst + first("unwritten", d.first_unwritten);
  }
  return v;
}

}  // namespace kvh
