// The MLA reference writer: each written slot's row is kv_c then k_pe of its token, bit for bit;
// every other element keeps what fill_cache put there; padding slots write nothing.
#include "case/mla_inputs.h"

#include <gtest/gtest.h>

#include <vector>

#include "device/counter_rng.h"

namespace kvh {
namespace {

TEST(MlaInputs, ReferenceWriterPutsKvCThenKPeInEachSlotsRow) {
  for (Scheme s : {Scheme::Separate, Scheme::Offset, Scheme::Padded}) {
    const int64_t R = 32, P = 16, T = 5, bs = 4;
    CacheGeometry g{6, bs, 1, R, 8, 2, P};
    auto made = make_cache_layout(CacheFormat::Mla, s, g);
    ASSERT_TRUE(made.layout) << made.reason;
    const CacheLayout& L = *made.layout;
    DeviceArena cache(L.storage_elems, 4096);
    cache.fill_cache(L, DType::F16, 7);
    const GuardedArena before = cache.download();
    DeviceQkv kv = make_device_mla_kv(T, R, P, DType::F16, 7, rng::kKeys, rng::kValues);
    const std::vector<int64_t> slots{5, 9, -1, 23, 4};
    device::Buffer d_slots(slots.size() * 8);
    d_slots.upload(slots.data(), slots.size() * 8);
    reference_write_mla_into(cache, L, kv.buf.get(), kv.views, static_cast<const int64_t*>(d_slots.get()), T);
    device::synchronize();
    const GuardedArena after = cache.download();
    std::vector<uint16_t> src(kv.buf.size() / 2);
    kv.buf.download(src.data(), kv.buf.size());
    auto elem = [](const GuardedArena& a, int64_t i) { return a.elem16(i); };
    std::vector<char> written(size_t(L.storage_elems), 0);
    for (int64_t t = 0; t < T; ++t) {
      if (slots[size_t(t)] < 0) continue;
      const int64_t row = L.latent.offset + slots[size_t(t)] / bs * L.block_stride + slots[size_t(t)] % bs * (R + P);
      for (int64_t d = 0; d < R + P; ++d) {
        const uint16_t want = src[size_t(t * (R + P + kMlaProjectionPad) + d)];
        EXPECT_EQ(elem(after, row + d), want) << to_string(s) << " token " << t << " dim " << d;
        written[size_t(row + d)] = 1;
      }
    }
    for (int64_t i = 0; i < L.storage_elems; ++i)
      if (!written[size_t(i)]) ASSERT_EQ(elem(after, i), elem(before, i)) << to_string(s) << " element " << i;
  }
}

TEST(MlaInputs, WriterViewsAreTwoDimensionalColumnViewsOfOneProjection) {
  const FusedQkv f = mla_kv_views(3, 512, 64);
  const StridedView kc = mla_writer_view(f.k), kpe = mla_writer_view(f.v);
  EXPECT_EQ(kc.str(), "(3,512):(640,1)+0");
  EXPECT_EQ(kpe.str(), "(3,64):(640,1)+512");
}

}  // namespace
}  // namespace kvh
