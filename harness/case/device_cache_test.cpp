// The harness's device-side helpers against the host definitions they replace:
// the reference writer against reference::write_cache, fills against the host
// generator and the arena sentinel, first_difference against planted differences.
#include "case/device_cache.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <numeric>
#include <random>

#include "cache_writer.h"
#include "device/counter_rng.h"
#include "case/values.h"
#include "case/views.h"
#include "check/write_check.h"

namespace kvh {
namespace {

struct Shape {
  CacheFormat format;
  Scheme scheme;
  CacheGeometry geo;
};

std::vector<Shape> shapes() {
  std::vector<Shape> out;
  for (CacheFormat f : {CacheFormat::Flash, CacheFormat::PaV1, CacheFormat::Shuffle})
    for (Scheme s : {Scheme::Separate, Scheme::KvFirst, Scheme::Interleaved, Scheme::Padded, Scheme::Packed,
                     Scheme::Offset})
      for (CacheGeometry g : {CacheGeometry{5, 16, 2, 64, 8, 2}, CacheGeometry{3, 32, 3, 128, 8, 2}}) {
        auto made = make_cache_layout(f, s, g);
        if (made.layout) out.push_back({f, s, g});
      }
  return out;
}

TEST(DeviceCache, CacheMapAgreesWithTheReferenceOffsetOnEveryElementOfEveryLayout) {
  int layouts = 0;
  for (const Shape& sh : shapes()) {
    const CacheLayout L = *make_cache_layout(sh.format, sh.scheme, sh.geo).layout;
    for (bool is_value : {false, true}) {
      const device::CacheMap m = cache_map(L, is_value);
      const auto& g = L.geo;
      for (int64_t b = 0; b < g.num_blocks; ++b)
        for (int64_t h = 0; h < g.num_kv_heads; ++h)
          for (int64_t t = 0; t < g.block_size; ++t)
            for (int64_t d = 0; d < g.head_size; ++d) {
              const int64_t want = reference::cache_offset(L, is_value, b, h, t, d);
              const int64_t got = m.offset + b * m.sb + h * m.sh + (t / m.xt) * m.st_hi + (t % m.xt) * m.st_lo +
                                  (d / m.xd) * m.sd_hi + (d % m.xd) * m.sd_lo;
              ASSERT_EQ(got, want) << to_string(sh.format) << " " << to_string(sh.scheme) << (is_value ? " V" : " K")
                                   << " b" << b << " h" << h << " t" << t << " d" << d;
            }
    }
    ++layouts;
  }
  EXPECT_GE(layouts, 20);
}

// The device's reference writer leaves the same bytes as the host's, on every layout.
TEST(DeviceCache, DeviceReferenceWriterEqualsTheHostReferenceWriterByteForByte) {
  std::mt19937_64 rng(7);
  for (const Shape& sh : shapes()) {
    const CacheLayout L = *make_cache_layout(sh.format, sh.scheme, sh.geo).layout;
    const int64_t H = L.geo.num_kv_heads, D = L.geo.head_size, T = 23, margin = 4096;
    std::vector<int64_t> slots(size_t(L.geo.num_blocks * L.geo.block_size));
    std::iota(slots.begin(), slots.end(), 0);
    std::shuffle(slots.begin(), slots.end(), rng);
    slots.resize(size_t(T));
    slots[3] = -1;  // a padding token writes nothing
    const DeviceQkv qkv = make_device_qkv(T, 2, H, D, DType::BF16, 99, rng::kQueries, rng::kKeys, rng::kValues);
    DeviceArena dev(L.storage_elems, margin);
    dev.fill_cache(L, DType::BF16, 5);
    GuardedArena host = dev.download();
    device::Buffer d_slots(slots.size() * 8);
    d_slots.upload(slots.data(), slots.size() * 8);
    device::reference_write(dev.storage(), cache_map(L, false), cache_map(L, true), qkv.buf.get(), view16(qkv.views.k),
                            view16(qkv.views.v), static_cast<const int64_t*>(d_slots.get()), T, L.geo.block_size);
    const auto key = counter16(DType::BF16, rng::kInput, rng::stream_key(99, rng::kKeys), size_t(T * H * D));
    const auto value = counter16(DType::BF16, rng::kInput, rng::stream_key(99, rng::kValues), size_t(T * H * D));
    reference::write_cache(L, {key.begin(), key.end()}, {value.begin(), value.end()}, slots, host.storage_as<uint16_t>());
    const GuardedArena got = dev.download();
    ASSERT_TRUE(got.bytes() == host.bytes()) << to_string(sh.format) << " " << to_string(sh.scheme);
  }
}

// Padded pages leave storage no view owns (sentinels there too); interleaved pages own all of it
// (sentinels only in the margins).
TEST(DeviceCache, FillsMatchTheHostGeneratorAndTheArenaSentinel) {
  for (Scheme scheme : {Scheme::Padded, Scheme::Interleaved}) {
  SCOPED_TRACE(to_string(scheme));
  const CacheLayout L = *make_cache_layout(CacheFormat::Shuffle, scheme, {4, 16, 2, 64, 8, 2}).layout;
  DeviceArena dev(L.storage_elems, 512);
  dev.fill_cache(L, DType::F16, 42);
  const GuardedArena got = dev.download();
  // The host's copy of the fill (the explanation of a failing writer starts from it) is the same, byte for byte.
  ASSERT_TRUE(host_fill_cache(L, DType::F16, 42, 512).bytes() == got.bytes());
  ASSERT_FALSE(host_fill_cache(L, DType::F16, 43, 512).bytes() == got.bytes());
  const auto old_k = counter16(DType::F16, rng::kOldToken, rng::stream_key(42, rng::kOldKeys), size_t(L.key.numel()));
  std::vector<uint8_t> owned(size_t(L.storage_elems), 0);
  int64_t i = 0;
  for_each_offset(L.key, [&](int64_t off) {
    ASSERT_EQ(got.storage_as<uint16_t>()[off], old_k[size_t(i++)]) << "K element " << i - 1;
    owned[size_t(off)] = 1;
  });
  for_each_offset(L.value, [&](int64_t off) { owned[size_t(off)] = 1; });
  const GuardedArena sentinel(L.storage_elems, 2, 512);  // the host arena's sentinel everywhere
  for (size_t b = 0; b < got.bytes().size(); ++b) {
    const int64_t el = (int64_t(b) - 512) / 2;
    if (int64_t(b) >= 512 && el < L.storage_elems && owned[size_t(el)]) continue;
    ASSERT_EQ(got.bytes()[b], sentinel.bytes()[b]) << "byte " << b;
  }
  }
}

// Every format with every scheme that takes it, including the ones whose views have size-1
// dims with odd strides (degenerate_strides: 0, 1, 2^31) that the host fill merges away.
std::vector<std::pair<std::string, CacheLayout>> every_layout() {
  std::vector<std::pair<std::string, CacheLayout>> out;
  for (CacheFormat f : {CacheFormat::Flash, CacheFormat::PaV1, CacheFormat::Shuffle, CacheFormat::Hnd})
    for (Scheme s : {Scheme::Separate, Scheme::KvFirst, Scheme::Interleaved, Scheme::Padded, Scheme::Packed,
                     Scheme::Offset, Scheme::HeadInterleaved, Scheme::DegenerateStrides, Scheme::KernelPages})
      for (CacheGeometry g : {CacheGeometry{5, 16, 2, 64, 8, 2}, CacheGeometry{4, 16, 1, 32, 8, 2},
                              CacheGeometry{6, 1, 1, 8, 8, 2}, CacheGeometry{6, 1, 1, 1, 8, 2}})
        for (int64_t deg : {int64_t(0), int64_t(1), kDegenerateLargeStride}) {
          if (deg && s != Scheme::DegenerateStrides) continue;
          auto made = make_cache_layout(f, s, g, 0, 0, deg);
          if (made.layout)
            out.emplace_back(fmt::format("format {} {} {} blocks of {} x {} heads x {} degenerate {}", int(f),
                                         to_string(s), g.num_blocks, g.block_size, g.num_kv_heads, g.head_size, deg),
                             *made.layout);
        }
  return out;
}

// fill_cache's overwritten_pages: a flagged page's owned elements keep what the memory held;
// everything else is byte for byte the full fill, and the full fill is the host's, on every layout.
TEST(DeviceCache, FlaggedPagesAreLeftAloneAndEverythingElseIsTheFullFill) {
  const auto layouts = every_layout();
  ASSERT_GT(layouts.size(), 60u);
  // Pages of one element (every dim after the first has size 1) are a layout too.
  ASSERT_TRUE(std::any_of(layouts.begin(), layouts.end(), [](const auto& l) { return l.second.key.numel() == l.second.key.shape[0]; }));
  for (const auto& [name, L] : layouts) {
    SCOPED_TRACE(name);
    const int64_t pages = L.key.shape[0];
    std::vector<uint8_t> flags(size_t(pages), 0);
    flags[1] = flags[size_t(pages - 1)] = 1;
    DeviceArena full(L.storage_elems, 512), part(L.storage_elems, 512);
    full.fill_cache(L, DType::BF16, 7);
    ASSERT_TRUE(host_fill_cache(L, DType::BF16, 7, 512).bytes() == full.download().bytes());
    device::fill_random16(part.data(), part.size_bytes() / 2, true, 99);  // what the memory held before
    const GuardedArena before = part.download();
    part.fill_cache(L, DType::BF16, 7, Stale::Random, KvCacheDType::Same, flags);
    const GuardedArena want = full.download(), got = part.download();
    std::vector<uint8_t> flagged(size_t(L.storage_elems), 0);
    for (const StridedView* v : {&L.key, &L.value}) {
      const int64_t per_page = v->numel() / v->shape[0];
      int64_t i = 0;
      for_each_offset(*v, [&](int64_t off) { flagged[size_t(off)] = flags[size_t(i++ / per_page)]; });
    }
    int64_t kept = 0;
    for (size_t b = 0; b < got.bytes().size(); ++b) {
      const int64_t el = (int64_t(b) - 512) / 2;
      if (int64_t(b) >= 512 && el < L.storage_elems && flagged[size_t(el)]) {
        // Left alone: what was there, or the sentinel where the layout leaves unowned storage (fill_cache
        // writes the sentinel over the whole arena first then).
        ASSERT_TRUE(got.bytes()[b] == before.bytes()[b] || got.bytes()[b] == GuardedArena::sentinel(int64_t(b))) << b;
        kept += got.bytes()[b] != want.bytes()[b];
        continue;
      }
      ASSERT_EQ(got.bytes()[b], want.bytes()[b]) << "byte " << b;
    }
    EXPECT_GT(kept, 0) << "the flagged pages were filled anyway";
    EXPECT_THROW(part.fill_cache(L, DType::BF16, 7, Stale::Random, KvCacheDType::Same, std::vector<uint8_t>(2, 1)),
                 std::invalid_argument);
  }
}

TEST(DeviceCache, LargeCopiesAreExactAndPoolSizesComeInClasses) {
  // copy_d2d: the cpu backend cuts large copies into pieces on its workers (an odd size: a short last piece).
  const size_t n = (size_t(9) << 20) + 12345;
  device::Buffer a(n), b(n);
  device::fill_random16(a.get(), n / 2, false, 5);
  device::fill_random16(b.get(), n / 2, false, 6);
  device::copy_d2d(b.get(), a.get(), n);
  EXPECT_EQ(device::first_difference(a.get(), b.get(), n), -1);
  EXPECT_EQ(device::size_class(1000), 1000u);  // small sizes as asked
  EXPECT_EQ(device::size_class(size_t(8) << 20), size_t(8) << 20);
  EXPECT_EQ(device::size_class((size_t(8) << 20) + 1), (size_t(17) << 19));  // up to the next 1/16 of 8 MiB
  for (size_t bytes : {size_t(9) << 20, size_t(592) << 20, size_t(601) << 20, (size_t(1) << 31) + 1}) {
    EXPECT_GE(device::size_class(bytes), bytes);
    EXPECT_LE(device::size_class(bytes), bytes + bytes / 16);
  }
  EXPECT_EQ(device::size_class(size_t(592) << 20), device::size_class(size_t(601) << 20));  // neighbours share a class
}

TEST(DeviceCache, GeneratedInputsAreFiniteNonZeroAndInRange) {
  for (DType dt : {DType::F16, DType::BF16}) {
    const auto in = counter16(dt, rng::kInput, 12345, 1 << 16);
    const auto old = counter16(dt, rng::kOldToken, 12345, 1 << 16);
    double sum = 0;
    int small = 0;
    for (size_t i = 0; i < in.size(); ++i) {
      const double x = decode16(dt, in[i]), y = decode16(dt, old[i]);
      ASSERT_TRUE(std::isfinite(x) && x != 0 && std::fabs(x) < 2) << x;
      ASSERT_TRUE(std::isfinite(y) && std::fabs(y) >= 1.0 / 32 && std::fabs(y) < 64) << y;
      sum += x;
      small += std::fabs(x) < 1;
    }
    EXPECT_LT(std::fabs(sum / double(in.size())), 0.05);             // symmetric
    EXPECT_NEAR(double(small) / double(in.size()), 0.5, 0.02);       // uniform magnitude on [0, 2)
  }
  // Same key, same values; another key, other values.
  EXPECT_EQ(counter16(DType::F16, rng::kInput, 1, 64), counter16(DType::F16, rng::kInput, 1, 64));
  EXPECT_NE(counter16(DType::F16, rng::kInput, 1, 64), counter16(DType::F16, rng::kInput, 2, 64));
}

TEST(DeviceCache, FirstDifferenceFindsEveryPlantedByteAndNothingInEqualBuffers) {
  for (size_t n : {size_t(1), size_t(7), size_t(4096), size_t(1 << 20) + 5}) {
    std::vector<uint8_t> a(n);
    for (size_t i = 0; i < n; ++i) a[i] = uint8_t(i * 7 + 3);
    device::Buffer da(n), db(n);
    da.upload(a.data(), n);
    db.upload(a.data(), n);
    EXPECT_EQ(device::first_difference(da.get(), db.get(), n), -1) << n;
    for (size_t at : {size_t(0), n / 2, n - 1}) {
      std::vector<uint8_t> b = a;
      b[at] ^= 0x10;
      if (at + 3 < n) b[at + 3] ^= 0x01;  // a later difference must not hide the first
      db.upload(b.data(), n);
      EXPECT_EQ(device::first_difference(da.get(), db.get(), n), int64_t(at)) << n;
    }
  }
}

// Issue 23: sparse arenas. A kv_first shuffle cache whose views span more than 2^31 elements
// (2^20 + 8 pages of 2,048 elements each): only the touched pages and the margins are backed.
CacheLayout large_kv_first() {
  return *make_cache_layout(CacheFormat::Shuffle, Scheme::KvFirst, CacheGeometry{(1 << 20) + 8, 16, 1, 128, 8, 2})
              .layout;
}

TEST(SparseArena, PageRangesSortMergeAndDropMarginPages) {
  const auto r = page_ranges({7, 3, 4, -1, 5, 100, 9, 3}, 10);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].begin, 3);
  EXPECT_EQ(r[0].end, 6);
  EXPECT_EQ(r[1].begin, 7);
  EXPECT_EQ(r[1].end, 8);
  EXPECT_EQ(r[2].begin, 9);
  EXPECT_EQ(r[2].end, 10);
}

TEST(SparseArena, BacksOnlyTheTouchedPagesAndWorksOnThem) {
  const CacheLayout L = large_kv_first();
  ASSERT_GT(L.value.offset, int64_t(1) << 31);  // V's pages start past 2^31 elements
  const int64_t margin = 64 * 1024, top = L.key.shape[0] - 3;
  const std::vector<PageRange> touched = page_ranges({70000, 70001, top}, L.key.shape[0]);
  DeviceArena a(L, margin, touched), b(L, margin, touched);
  ASSERT_TRUE(a.sparse());
  EXPECT_GT(a.size_bytes(), size_t(8) << 30);
  EXPECT_LT(a.backed_bytes(), size_t(2) << 20);  // 3 pages of 4 KiB in each view, the margins
  a.fill_cache(L, DType::F16, 7);
  b.copy_from(a);
  device::synchronize();
  EXPECT_EQ(a.first_difference(b), -1);
  // The old tokens of a touched page, past 2^31 elements: finite, non-zero; the margin: the sentinel.
  const uint8_t* st = a.storage();
  uint16_t bits;
  std::memcpy(&bits, st + (L.value.offset + top * L.value.stride[0]) * 2, 2);
  EXPECT_NE(bits, 0);
  EXPECT_EQ(a.data()[5], GuardedArena::sentinel(5));
  // A difference in V's page `top` is found, at its arena byte.
  const int64_t at = margin + (L.value.offset + top * L.value.stride[0] + 3) * 2;
  b.data()[at] ^= 1;
  EXPECT_EQ(a.first_difference(b), at);
  EXPECT_THROW((void)a.download(), std::logic_error);
  // A normal-sized cache keeps the plain arena.
  const CacheLayout small =
      *make_cache_layout(CacheFormat::Shuffle, Scheme::KvFirst, CacheGeometry{8, 16, 1, 128, 8, 2}).layout;
  EXPECT_FALSE(DeviceArena(small, margin, touched).sparse());
}

TEST(SparseArenaDeathTest, AnUntouchedPageFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const CacheLayout L = large_kv_first();
  DeviceArena a(L, 64 * 1024, page_ranges({70000}, L.key.shape[0]));
  volatile uint8_t* st = a.storage();
  st[(L.key.offset + 70000 * L.key.stride[0]) * 2] = 1;  // touched
  // Page 70000 mod 65,536 = 4,464: where a 16-bit block id reads.
  EXPECT_EXIT((void)st[(L.key.offset + 4464 * L.key.stride[0]) * 2], device::died_of_unbacked_access, "");
}

}  // namespace
}  // namespace kvh

namespace kvh {
namespace {

// Issue 24: a failing writer is explained on the device (device::write_diff) exactly as the host
// check (check_write) explains it: the same reason, counts, worst element and detail, for each
// kind of damage alone and all together, on every layout, 16-bit, fp8 and int8.
TEST(DeviceCache, TheDeviceExplainsAFailingWriterAsTheHostDoes) {
  if (!device::host_reads_device_memory()) GTEST_SKIP() << "plants through host pointers (cpu backend)";
  enum Plant { Unwritten, Mismatch, OutOfView, NanGot, Margin, All };
  int checked = 0;
  for (const auto& [name, L16] : every_layout())
    for (KvCacheDType kv : {KvCacheDType::Same, KvCacheDType::Fp8E4m3fnuz, KvCacheDType::Int8})
      for (Plant plant : {Unwritten, Mismatch, OutOfView, NanGot, Margin, All}) {
        if (kv != KvCacheDType::Same && L16.geo.head_size < 16) continue;
        CacheLayout L = L16;
        if (kv != KvCacheDType::Same) {
          CacheGeometry g = L16.geo;
          g.elem_bytes = 1, g.x = 16;
          auto made = make_cache_layout(L16.format, L16.scheme, g);
          if (!made.layout) continue;
          L = *made.layout;
        }
        SCOPED_TRACE(fmt::format("{} kv {} plant {}", name, int(kv), int(plant)));
        const int64_t eb = L.geo.elem_bytes, margin = 256;
        const DType dtype = DType::BF16;
        DeviceArena expected(L.storage_elems, margin, eb), actual(L.storage_elems, margin, eb);
        expected.fill_cache(L, dtype, 42, Stale::Random, kv);
        device::settle();
        // The reference writer's tokens: a random third of the owned elements get new values.
        std::vector<int64_t> owned;
        for (const StridedView* v : {&L.key, &L.value}) for_each_offset(*v, [&](int64_t off) { owned.push_back(off); });
        std::sort(owned.begin(), owned.end());
        owned.erase(std::unique(owned.begin(), owned.end()), owned.end());
        std::mt19937_64 rng(uint64_t(checked) + 7);
        auto put = [&](uint8_t* storage, int64_t el, uint16_t bits) {
          if (eb == 1) storage[el] = uint8_t(bits);
          else std::memcpy(storage + 2 * el, &bits, 2);
        };
        std::vector<int64_t> changed;
        for (int64_t el : owned)
          if (rng() % 3 == 0) {
            put(expected.storage(), el, uint16_t(0x3c00 + rng() % 0x300));  // finite in every format
            changed.push_back(el);
          }
        if (changed.empty()) continue;
        actual.copy_from(expected);
        auto pick = [&](const std::vector<int64_t>& from) { return from[rng() % from.size()]; };
        uint8_t* a = actual.storage();
        const GuardedArena before = host_fill_cache(L, dtype, 42, margin, Stale::Random, kv);
        if (plant == Unwritten || plant == All)
          for (int i = 0; i < 3; ++i) {  // the old token back
            const int64_t el = pick(changed);
            std::memcpy(a + el * eb, before.storage() + el * eb, size_t(eb));
          }
        if (plant == Mismatch || plant == All)
          for (int i = 0; i < 4; ++i) put(a, pick(owned), uint16_t(0x4400 + rng() % 0x100));
        if (plant == NanGot || plant == All) put(a, pick(owned), eb == 1 ? 0x80 : 0x7fc1);
        if ((plant == OutOfView || plant == All) && int64_t(owned.size()) < L.storage_elems) {
          int64_t el = int64_t(rng() % uint64_t(L.storage_elems));
          while (std::binary_search(owned.begin(), owned.end(), el)) el = (el + 1) % L.storage_elems;
          a[el * eb] ^= 0x5a;
        }
        if (plant == Margin || plant == All) actual.data()[rng() % uint64_t(margin)] ^= 0x21;
        device::settle();
        const Verdict on_device = check_writer_on_device(L, dtype, 42, expected, actual, Stale::Random, kv);
        auto in_place = [](const DeviceArena& d) {
          return ArenaBytes(d.data(), d.size_bytes(), d.margin_bytes(), d.elem_bytes());
        };
        Verdict on_host = check_write(L, dtype, before, in_place(expected), in_place(actual), kv);
        if (on_host.status == Status::Pass) {
          EXPECT_EQ(on_device.status, Status::Pass);
          continue;
        }
        ASSERT_EQ(on_device.status, Status::Fail);
        EXPECT_EQ(on_device.reason, on_host.reason);
        EXPECT_EQ(on_device.detail, on_host.detail);
        EXPECT_EQ(on_device.bad_elements, on_host.bad_elements);
        EXPECT_EQ(on_device.max_abs_err.has_value(), on_host.max_abs_err.has_value());
        if (on_host.max_abs_err) EXPECT_EQ(*on_device.max_abs_err, *on_host.max_abs_err);
        ++checked;
      }
  EXPECT_GT(checked, 300);
}

}  // namespace
}  // namespace kvh
