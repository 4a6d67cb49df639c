// The cache addressing types (cache_addressing.h) against cases/layout.h: for
// every layout scheme each format has, every element (block, head, token, dim)
// of K and V must land on the storage element whose tensor index
// (StridedView::index_of) is that element's index in the format's shape, as
// DESIGN.md's table gives it (written out here, not taken from the kernels).
// Then the check is shown to catch a planted wrong stride.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cache/cache_addressing.h"
#include "layout.h"

namespace kvh::kernels {
namespace {

// The tensor index of (b, h, t, d) in `format`'s K or V shape (DESIGN.md "Domain facts").
std::vector<int64_t> tensor_index(CacheFormat format, bool is_value, int64_t x, int64_t b, int64_t h, int64_t t,
                                  int64_t d) {
  switch (format) {
    case CacheFormat::Flash: return {b, t, h, d};
    case CacheFormat::Hnd: return {b, h, t, d};
    case CacheFormat::PaV1:
      if (is_value) return {b, h, d, t};
      return {b, h, d / x, t, d % x};
    case CacheFormat::Shuffle:
      if (is_value) return {b, h, t / x, d, t % x};
      return {b, h, d / x, t, d % x};
  }
  return {};
}

kvh_tensor tensor_of(const StridedView& v) {
  kvh_tensor t{};
  t.ndim = int32_t(v.shape.size());
  for (int i = 0; i < t.ndim; ++i) t.shape[i] = v.shape[i], t.stride[i] = v.stride[i];
  return t;
}

// Mismatches of one cache's addressing `a` (the view's data pointer at storage
// element view.offset, as the harness hands it to kernels) against view.index_of
// over blocks `blocks` and every head, token and dim; also that the partial
// offsets add up to it and that dim_offset(c*x + e) = c * dim_offset(x) +
// e * dim_stride(), the walk the readers take. Names the first few in `why`.
template <class A>
int64_t mismatches(const A& a, const StridedView& view, const CacheLayout& L, bool is_value,
                   const std::vector<int64_t>& blocks, int kX, std::string& why) {
  const CacheGeometry& g = L.geo;
  int64_t bad = 0;
  auto note = [&](const std::string& s) {
    if (bad++ < 3) why += s + "\n";
  };
  for (int64_t d = 0; d < g.head_size; ++d)
    if (a.dim_offset(d) != (d / kX) * a.dim_offset(kX) + (d % kX) * a.dim_stride())
      note("dim " + std::to_string(d) + ": dim_offset not linear in the x-vector walk");
  for (int64_t b : blocks)
    for (int64_t h = 0; h < g.num_kv_heads; ++h)
      for (int64_t t = 0; t < g.block_size; ++t)
        for (int64_t d = 0; d < g.head_size; ++d) {
          const int64_t elem = view.offset + a(b, h, t, d);
          const auto got = view.index_of(elem);
          const auto want = tensor_index(L.format, is_value, g.x, b, h, t, d);
          if (a.token_offset(b, h, t) + a.dim_offset(d) != a(b, h, t, d) ||
              a.slot_offset(b, t) + a.head_offset(h) != a.token_offset(b, h, t))
            note("token_offset + dim_offset or slot_offset + head_offset differs");
          if (!got || *got != want)
            note(std::string(is_value ? "V" : "K") + " (" + std::to_string(b) + "," + std::to_string(h) + "," +
                 std::to_string(t) + "," + std::to_string(d) + ") -> storage " + std::to_string(elem) + ", " +
                 (got ? "another element" : "no element") + " of " + view.str());
        }
  return bad;
}

// The addressing type of L's format at x = kX, built the way the launchers
// build it (from kvh_tensors) from the views `key` and `value` (L's own, or a
// planted wrong one), judged by L's own views over `blocks` (all when empty).
template <int kX>
int64_t check_layout(const CacheLayout& L, const StridedView& key, const StridedView& value, std::vector<int64_t> blocks,
                     std::string& why) {
  if (blocks.empty())
    for (int64_t b = 0; b < L.geo.num_blocks; ++b) blocks.push_back(b);
  const kvh_tensor kt = tensor_of(key), vt = tensor_of(value);
  auto both = [&](auto cache, auto with_offsets) {
    // The storage offset as a field gives the same elements as a data pointer at the view's first element.
    int64_t bad = 0;
    if (with_offsets.k(0, 0, 0, 0) != key.offset + cache.k(0, 0, 0, 0) ||
        with_offsets.v(0, 0, 0, 0) != value.offset + cache.v(0, 0, 0, 0))
      ++bad, why += "storage offset field disagrees\n";
    return bad + mismatches(cache.k, L.key, L, false, blocks, kX, why) +
           mismatches(cache.v, L.value, L, true, blocks, kX, why);
  };
  switch (L.format) {
    case CacheFormat::Flash:
      return both(NhdCacheAddr(kt, vt), NhdCacheAddr(kt.stride, vt.stride, key.offset, value.offset));
    case CacheFormat::Hnd:
      return both(HndCacheAddr(kt, vt), HndCacheAddr(kt.stride, vt.stride, key.offset, value.offset));
    case CacheFormat::PaV1:
      return both(PaV1CacheAddr<kX>(kt, vt), PaV1CacheAddr<kX>(kt.stride, vt.stride, key.offset, value.offset));
    case CacheFormat::Shuffle:
      return both(ShuffleCacheAddr<kX>(kt, vt), ShuffleCacheAddr<kX>(kt.stride, vt.stride, key.offset, value.offset));
  }
  return 1;
}

int64_t check_layout(const CacheLayout& L, const StridedView& key, const StridedView& value,
                     const std::vector<int64_t>& blocks, std::string& why) {
  return L.geo.x == 16 ? check_layout<16>(L, key, value, blocks, why) : check_layout<8>(L, key, value, blocks, why);
}

const CacheFormat kFormats[] = {CacheFormat::Flash, CacheFormat::Hnd, CacheFormat::PaV1, CacheFormat::Shuffle};

CacheGeometry geometry(int64_t nb, int64_t bs, int64_t heads, int64_t hd, int64_t elem_bytes) {
  CacheGeometry g;
  g.num_blocks = nb, g.block_size = bs, g.num_kv_heads = heads, g.head_size = hd;
  g.elem_bytes = elem_bytes, g.x = 16 / elem_bytes;
  return g;
}

std::string name_of(const CacheLayout& L) {
  return std::string(to_string(L.format)) + "/" + to_string(L.scheme) + " K " + L.key.str() + " V " + L.value.str();
}

// Every element of every layout each format has, except large (its corners
// below), at 16-bit (x = 8) and fp8 (x = 16) sizes; the one-kv-head and
// one-token geometries give degenerate_strides its size-1 dims, each with a
// stride of 0, 1 and 2^31.
TEST(CacheAddressing, EveryElementOfEveryLayout) {
  const CacheGeometry geos[] = {geometry(3, 16, 2, 32, 2), geometry(2, 32, 1, 48, 1), geometry(3, 16, 1, 16, 2),
                                geometry(3, 1, 2, 16, 2)};
  int layouts = 0;
  for (CacheFormat f : kFormats)
    for (const CacheGeometry& g : geos)
      for (Scheme s : all_schemes()) {
        if (s == Scheme::Large) continue;
        for (int64_t degenerate : {int64_t(0), int64_t(1), kDegenerateLargeStride}) {
          if (s != Scheme::DegenerateStrides && degenerate != 0) continue;
          const LayoutOrReason r = make_cache_layout(f, s, g, 0, 0, degenerate);
          if (!r.layout) continue;  // the combination does not exist (packed outside flash, ...)
          const CacheLayout& L = *r.layout;
          std::string why;
          EXPECT_EQ(check_layout(L, L.key, L.value, {}, why), 0) << name_of(L) << "\n" << why;
          ++layouts;
        }
      }
  // flash, hnd, pa_v1: 7 schemes in each of 4 geometries + 3 degenerate strides
  // in 3; shuffle (no block_size 1): 7 in 3 + 3 in 2. 37 * 3 + 27 = 138.
  EXPECT_GE(layouts, 138);
}

// The schemes that must exist for each format, once each (the loop above skips
// what make_cache_layout refuses; this pins what it must not refuse).
TEST(CacheAddressing, EachFormatHasItsSchemes) {
  const CacheGeometry g16 = geometry(3, 16, 2, 32, 2), g1 = geometry(2, 32, 1, 48, 1);
  for (CacheFormat f : kFormats)
    for (Scheme s : {Scheme::Separate, Scheme::KvFirst, Scheme::Interleaved, Scheme::Padded, Scheme::Packed,
                     Scheme::Offset, Scheme::HeadInterleaved, Scheme::DegenerateStrides, Scheme::KernelPages}) {
      const bool exists = (s != Scheme::Packed || f == CacheFormat::Flash) &&
                          (s != Scheme::HeadInterleaved || f != CacheFormat::Flash);
      const LayoutOrReason r = make_cache_layout(f, s, s == Scheme::DegenerateStrides ? g1 : g16, 0, 0, 1);
      EXPECT_EQ(r.layout.has_value(), exists) << to_string(f) << "/" << to_string(s) << ": " << r.reason;
    }
}

// Large: more than 65,535 blocks, element offsets inside each view past 2^31.
// Every element of the first block, of blocks 65,535 and 65,536 and of the last.
TEST(CacheAddressing, LargeLayoutsPast2To31) {
  const CacheGeometry g = geometry(70000, 16, 8, 128, 2);
  for (CacheFormat f : kFormats) {
    const LayoutOrReason r = make_cache_layout(f, Scheme::Large, g);
    ASSERT_TRUE(r.layout) << r.reason;
    const CacheLayout& L = *r.layout;
    ASSERT_GT(L.key.end(), int64_t(1) << 31) << name_of(L);
    std::string why;
    EXPECT_EQ(check_layout(L, L.key, L.value, {0, 65535, 65536, g.num_blocks - 1}, why), 0) << name_of(L) << "\n" << why;
  }
}

// The check catches a planted wrong stride: every stride of a dim longer than
// one, doubled in the view the addressing is built from (the layout's own
// views stay the judge), in K or in V, makes elements land elsewhere.
TEST(CacheAddressing, CatchesEveryPlantedWrongStride) {
  const CacheGeometry g = geometry(3, 16, 2, 32, 2);
  for (CacheFormat f : kFormats)
    for (Scheme s : {Scheme::KvFirst, Scheme::Interleaved, Scheme::HeadInterleaved, Scheme::Packed}) {
      const LayoutOrReason r = make_cache_layout(f, s, g);
      if (!r.layout) continue;
      const CacheLayout& L = *r.layout;
      for (bool is_value : {false, true}) {
        const StridedView& view = is_value ? L.value : L.key;
        for (size_t i = 0; i < view.stride.size(); ++i) {
          if (view.shape[i] == 1) continue;
          StridedView wrong = view;
          wrong.stride[i] *= 2;
          std::string why;
          EXPECT_GT(check_layout(L, is_value ? L.key : wrong, is_value ? wrong : L.value, {}, why), 0)
              << name_of(L) << (is_value ? ": V" : ": K") << " stride " << i << " doubled";
        }
      }
    }
}

// The hybrid-model bug (DESIGN.md "blocks-first interleaved"): addressing built
// from the contiguous strides of the views' shapes, right for kv_first, wrong
// for interleaved and padded caches, in every format.
TEST(CacheAddressing, CatchesContiguousBlockBase) {
  const CacheGeometry g = geometry(3, 16, 2, 32, 2);
  auto contiguous = [](StridedView v) {
    int64_t s = 1;
    for (size_t i = v.shape.size(); i-- > 0;) v.stride[i] = s, s *= v.shape[i];
    return v;
  };
  for (CacheFormat f : kFormats)
    for (Scheme s : {Scheme::KvFirst, Scheme::Interleaved, Scheme::Padded}) {
      const CacheLayout L = *make_cache_layout(f, s, g).layout;
      std::string why;
      const int64_t bad = check_layout(L, contiguous(L.key), contiguous(L.value), {}, why);
      if (s == Scheme::KvFirst)
        EXPECT_EQ(bad, 0) << name_of(L) << "\n" << why;
      else
        EXPECT_GT(bad, 0) << name_of(L);
    }
}

// pa_v1 and shuffle share their K and differ in V: each format's addressing
// is its own (a pa_v1 addressing on a shuffle cache misplaces V only).
TEST(CacheAddressing, FormatsAreNotInterchangeable) {
  const CacheLayout L = *make_cache_layout(CacheFormat::Shuffle, Scheme::KvFirst, geometry(2, 16, 2, 32, 2)).layout;
  const PaV1CacheAddr<8> wrong(tensor_of(L.key), tensor_of(L.value));
  std::string why;
  const std::vector<int64_t> blocks{0, 1};
  EXPECT_EQ(mismatches(wrong.k, L.key, L, false, blocks, 8, why), 0) << why;
  EXPECT_GT(mismatches(wrong.v, L.value, L, true, blocks, 8, why), 0);
}

// FlashInfer's struct has 32-bit strides; these are 64-bit: a stride past 2^31
// times a block id past 65,535 stays exact.
TEST(CacheAddressing, OffsetsAre64Bit) {
  const int64_t ks[5] = {int64_t(3) << 31, 1 << 20, 4096, 8, 1}, vs[5] = {int64_t(3) << 31, 1 << 20, 8192, 8, 1};
  const ShuffleCacheAddr<8> a(ks, vs);
  EXPECT_EQ(a.k(70000, 3, 15, 127), 70000 * (int64_t(3) << 31) + 3 * (1 << 20) + (127 / 8) * 4096 + 15 * 8 + 127 % 8);
  EXPECT_EQ(a.v(70000, 3, 15, 127), 70000 * (int64_t(3) << 31) + 3 * (1 << 20) + (15 / 8) * 8192 + 127 * 8 + 15 % 8);
}

}  // namespace
}  // namespace kvh::kernels
