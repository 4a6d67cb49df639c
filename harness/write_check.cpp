#include "write_check.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

#include "values.h"
#include "views.h"

namespace kvh {

Verdict check_write(const CacheLayout& L, DType dtype, const GuardedArena& before, const GuardedArena& expected,
                    const GuardedArena& actual) {
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
  // Which storage elements the views own: one pass over each view, not a search per differing element.
  std::vector<uint8_t> owned(size_t(L.storage_elems), 0);
  for_each_offset(L.key, [&](int64_t off) { owned[size_t(off)] = 1; });
  for_each_offset(L.value, [&](int64_t off) { owned[size_t(off)] = 1; });
  for (int64_t i = 0; i < total; ++i) {
    if (std::memcmp(&a[size_t(i * 2)], &e[size_t(i * 2)], 2) == 0) continue;
    const int64_t el = i - margin_elems;  // storage element index
    if (el < 0 || el >= L.storage_elems || !owned[size_t(el)]) {
      if (out_of_view++ == 0) first_oov = el;
      continue;
    }
    const uint16_t got = actual.elem16(el), want = expected.elem16(el);
    // An element the reference changed that still holds its old value was never written. (One it
    // did not change cannot be unwritten: want == old there, and got differs from want.)
    if (got == before.elem16(el)) ++unwritten;
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

}  // namespace kvh
