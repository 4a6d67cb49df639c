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
  const reference::Fp8Format f8 =
      kv == KvCacheDType::Fp8E4m3fnuz ? reference::Fp8Format::E4M3FNUZ : reference::Fp8Format::E4M3FN;
  auto elem = [&](const ArenaBytes& g, int64_t el) -> uint16_t { return eb == 1 ? g.storage()[el] : g.elem16(el); };
  auto decode = [&](uint16_t bits) {
    if (kv == KvCacheDType::Int8) return double(int8_t(uint8_t(bits)));  // the code (scales apart): int8 compares code by code
    return kv == KvCacheDType::Same ? decode16(dtype, bits) : reference::fp8_decode(uint8_t(bits), f8);
  };
  const int64_t margin_elems = actual.margin / eb;
  const int64_t total = int64_t(actual.size) / eb;
  // Which storage elements the views own: one pass over each view (split on its outermost dim
  // across the host's cores), not a search per differing element.
  std::vector<uint8_t> owned(size_t(L.storage_elems), 0);
  for (const StridedView* view : {&L.key, &L.value})
    parallel_for_each_offset(*view, [&](int64_t off, int64_t) { owned[size_t(off)] = 1; });
  // Elements of the arena in chunks, each chunk tallied on its own, merged in order (the
  // first out-of-view element and the first worst element stay the first).
  struct Tally {
    int64_t out_of_view = 0, mismatched = 0, unwritten = 0, first_oov = -1, worst_elem = 0;
    double worst_abs = -1, worst_rel = 0;
  };
  constexpr int64_t kChunk = 1 << 16;
  std::vector<Tally> tallies(size_t((total + kChunk - 1) / kChunk));
  parallel_for(int64_t(tallies.size()), 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; ++c) {
      Tally& t = tallies[size_t(c)];
      const int64_t begin = c * kChunk, end = std::min(total, begin + kChunk);
      if (std::memcmp(&a[size_t(begin * eb)], &e[size_t(begin * eb)], size_t((end - begin) * eb)) == 0) continue;
      for (int64_t i = begin; i < end; ++i) {
        if (std::memcmp(&a[size_t(i * eb)], &e[size_t(i * eb)], size_t(eb)) == 0) continue;
        const int64_t el = i - margin_elems;  // storage element index
        if (el < 0 || el >= L.storage_elems || !owned[size_t(el)]) {
          if (t.out_of_view++ == 0) t.first_oov = el;
          continue;
        }
        const uint16_t got = elem(actual, el), want = elem(expected, el);
        // An element the reference changed that still holds its old value was never written. (One it
        // did not change cannot be unwritten: want == old there, and got differs from want.)
        if (got == elem(before, el)) ++t.unwritten;
        else ++t.mismatched;
        const double g = decode(got), w = decode(want);
        const double abs_err = std::isfinite(g) ? std::fabs(g - w) : INFINITY;
        if (abs_err > t.worst_abs) {
          t.worst_abs = abs_err;
          t.worst_rel = abs_err / std::max(std::fabs(w), 1e-30);
          t.worst_elem = el;
        }
      }
    }
  });
  int64_t out_of_view = 0, mismatched = 0, unwritten = 0, first_oov = 0, worst_elem = 0;
  double worst_abs = -1, worst_rel = 0;
  for (const Tally& t : tallies) {
    if (t.out_of_view && out_of_view == 0) first_oov = t.first_oov;
    out_of_view += t.out_of_view;
    mismatched += t.mismatched;
    unwritten += t.unwritten;
    if (t.worst_abs > worst_abs) worst_abs = t.worst_abs, worst_rel = t.worst_rel, worst_elem = t.worst_elem;
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
                                   L.describe(worst_elem), decode(elem(actual, worst_elem)),
                                   decode(elem(expected, worst_elem)))
                     : "";
  if (out_of_view) {
    v.reason = reason::kOutOfView;
    v.detail = fmt::format("write outside the views: first bad byte at storage byte offset {} ({}); {}{}",
                           first_oov * eb, L.describe(first_oov), counts, worst);
  } else if (mismatched) {
    v.reason = reason::kMismatch;
    v.detail = counts + worst;
  } else {
    v.reason = reason::kUnwritten;
    v.detail = counts + worst;
  }
  return v;
}

}  // namespace kvh
