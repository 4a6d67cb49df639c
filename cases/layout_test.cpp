#include "layout.h"

#include <gtest/gtest.h>

namespace kvh {
namespace {

CacheGeometry geo(int64_t nb, int64_t bs, int64_t nkv, int64_t hd) { return {nb, bs, nkv, hd, 8, 2}; }

// Literal tuples from a public report on vLLM's interleaved hybrid cache:
// K view (1233, 64, 4, 256) stride (131072, 1024, 256, 1) offset 0, V offset 65536.
TEST(Layout, BlocksFirstInterleavedFlashMatchesTheRealWorldTuple) {
  auto r = make_cache_layout(CacheFormat::Flash, Scheme::Interleaved, geo(1233, 64, 4, 256));
  ASSERT_TRUE(r.layout) << r.reason;
  EXPECT_EQ(r.layout->key.str(), "(1233,64,4,256):(131072,1024,256,1)+0");
  EXPECT_EQ(r.layout->value.str(), "(1233,64,4,256):(131072,1024,256,1)+65536");
}

TEST(Layout, KvFirstShuffleIsTwoContiguousHalves) {
  auto r = make_cache_layout(CacheFormat::Shuffle, Scheme::KvFirst, geo(10, 16, 2, 128));
  ASSERT_TRUE(r.layout);
  const int64_t page = 16 * 2 * 128;
  EXPECT_EQ(r.layout->key.str(), "(10,2,16,16,8):(4096,2048,128,8,1)+0");
  EXPECT_EQ(r.layout->value.str(), "(10,2,2,128,8):(4096,2048,1024,8,1)+40960");
  EXPECT_EQ(r.layout->storage_elems, 2 * 10 * page);
}

TEST(Layout, PaddedPagesLeavePaddingThatBelongsToNobody) {
  auto r = make_cache_layout(CacheFormat::PaV1, Scheme::Padded, geo(4, 16, 1, 64), 5000);
  ASSERT_TRUE(r.layout) << r.reason;
  const auto& L = *r.layout;
  EXPECT_EQ(L.block_stride, 2500);
  EXPECT_EQ(L.value.offset, 1024);
  EXPECT_EQ(L.describe(2 * 2500 + 2048), "page padding of block 2");
  EXPECT_EQ(L.describe(2500 + 1024), "V page of block 1 (head 0, token 0, dim 0)");
  auto small = make_cache_layout(CacheFormat::PaV1, Scheme::Padded, geo(4, 16, 1, 64), 4096);
  EXPECT_FALSE(small.layout);
  EXPECT_NE(small.reason.find("does not exceed"), std::string::npos);
}

TEST(Layout, PackedLastDimSplitsOneTensorIntoKAndV) {
  auto r = make_cache_layout(CacheFormat::Flash, Scheme::Packed, geo(3, 16, 2, 64));
  ASSERT_TRUE(r.layout);
  EXPECT_EQ(r.layout->key.str(), "(3,16,2,64):(4096,128,2048,1)+0");
  EXPECT_EQ(r.layout->value.str(), "(3,16,2,64):(4096,128,2048,1)+64");
  auto shuffle = make_cache_layout(CacheFormat::Shuffle, Scheme::Packed, geo(3, 16, 2, 64));
  EXPECT_FALSE(shuffle.layout);
}

TEST(Layout, ImpossibleShapesGiveReasonsNotLayouts) {
  auto hd = make_cache_layout(CacheFormat::Shuffle, Scheme::KvFirst, geo(3, 16, 2, 68));
  EXPECT_FALSE(hd.layout);
  EXPECT_NE(hd.reason.find("head_size 68 is not a multiple of x = 8"), std::string::npos);
  auto bs = make_cache_layout(CacheFormat::Shuffle, Scheme::KvFirst, geo(3, 20, 2, 64));
  EXPECT_NE(bs.reason.find("block_size 20"), std::string::npos);
  EXPECT_TRUE(make_cache_layout(CacheFormat::PaV1, Scheme::KvFirst, geo(3, 20, 2, 64)).layout);
}

TEST(Layout, IndexOfInvertsEveryOwnedElementAndRejectsTheRest) {
  for (auto s : {Scheme::Separate, Scheme::Interleaved, Scheme::Padded, Scheme::Offset}) {
    auto r = make_cache_layout(CacheFormat::Shuffle, s, geo(3, 16, 2, 32));
    ASSERT_TRUE(r.layout) << to_string(s);
    const auto& v = r.layout->value;
    int64_t owned = 0;
    for (int64_t e = -5; e < r.layout->storage_elems + 5; ++e) {
      auto i = v.index_of(e);
      if (!i) continue;
      ++owned;
      int64_t back = v.offset;
      for (size_t d = 0; d < i->size(); ++d) back += (*i)[d] * v.stride[d];
      ASSERT_EQ(back, e);
    }
    EXPECT_EQ(owned, v.numel()) << to_string(s);
  }
}

TEST(Layout, DescribeNamesMarginsAndGaps) {
  auto r = make_cache_layout(CacheFormat::Flash, Scheme::Separate, geo(2, 16, 1, 64));
  const auto& L = *r.layout;
  EXPECT_EQ(L.describe(-3), "arena margin, 3 elements before the storage");
  EXPECT_EQ(L.describe(L.storage_elems), "arena margin, 1 elements after the storage");
  EXPECT_EQ(L.describe(2 * 1024 + 1), "gap between the K and V allocations");
  EXPECT_EQ(L.describe(1024 + 64 * 3 + 5), "K page of block 1 (head 0, token 3, dim 5)");
}

TEST(Layout, HndIsHeadsBeforeTokens) {
  auto r = make_cache_layout(CacheFormat::Hnd, Scheme::KvFirst, geo(3, 16, 2, 64));
  ASSERT_TRUE(r.layout) << r.reason;
  EXPECT_EQ(r.layout->key.str(), "(3,2,16,64):(2048,1024,64,1)+0");
  EXPECT_EQ(r.layout->value.str(), "(3,2,16,64):(2048,1024,64,1)+6144");
  EXPECT_EQ(r.layout->describe(2048 + 1024 + 64 * 5 + 7), "K page of block 1 (head 1, token 5, dim 7)");
  EXPECT_TRUE(make_cache_layout(CacheFormat::Hnd, Scheme::KvFirst, geo(3, 16, 2, 60)).layout) << "no x split";
  EXPECT_EQ(parse_cache_format("hnd"), CacheFormat::Hnd);
}

// K and V pages alternate per kv head: storage (num_blocks, num_kv_heads, 2, block_size*head_size).
TEST(Layout, HeadInterleavedDoublesTheHeadStride) {
  auto r = make_cache_layout(CacheFormat::Hnd, Scheme::HeadInterleaved, geo(3, 16, 2, 64));
  ASSERT_TRUE(r.layout) << r.reason;
  EXPECT_EQ(r.layout->key.str(), "(3,2,16,64):(4096,2048,64,1)+0");
  EXPECT_EQ(r.layout->value.str(), "(3,2,16,64):(4096,2048,64,1)+1024");
  EXPECT_EQ(r.layout->describe(4096 + 2048 + 1024 + 3), "V page of block 1 (head 1, token 0, dim 3)");
  auto pa = make_cache_layout(CacheFormat::PaV1, Scheme::HeadInterleaved, geo(3, 16, 2, 64));
  ASSERT_TRUE(pa.layout);
  EXPECT_EQ(pa.layout->value.str(), "(3,2,64,16):(4096,2048,16,1)+1024");
  auto nhd = make_cache_layout(CacheFormat::Flash, Scheme::HeadInterleaved, geo(3, 16, 2, 64));
  EXPECT_FALSE(nhd.layout);
  EXPECT_NE(nhd.reason.find("needs the kv head as dim 1"), std::string::npos) << nhd.reason;
}

TEST(Layout, DegenerateStridesReplaceOnlySizeOneDims) {
  for (int64_t s : {int64_t(0), int64_t(1), kDegenerateLargeStride}) {
    auto r = make_cache_layout(CacheFormat::Flash, Scheme::DegenerateStrides, geo(3, 16, 1, 64), 0, 0, s);
    ASSERT_TRUE(r.layout) << r.reason;
    EXPECT_EQ(r.layout->key.stride, (std::vector<int64_t>{1024, 64, s, 1}));
    EXPECT_EQ(r.layout->degenerate_stride, s);
    // Every owned element is still found, whatever the size-1 dim's stride.
    const auto& v = r.layout->value;
    int64_t owned = 0;
    for (int64_t e = 0; e < r.layout->storage_elems; ++e) owned += v.index_of(e).has_value();
    EXPECT_EQ(owned, v.numel()) << s;
  }
  auto hnd = make_cache_layout(CacheFormat::Hnd, Scheme::DegenerateStrides, geo(3, 1, 2, 64), 0, 0, 1);
  ASSERT_TRUE(hnd.layout);
  EXPECT_EQ(hnd.layout->key.str(), "(3,2,1,64):(128,64,1,1)+0");  // block_size 1 is the size-1 dim
  auto none = make_cache_layout(CacheFormat::Hnd, Scheme::DegenerateStrides, geo(3, 16, 2, 64));
  EXPECT_FALSE(none.layout);
  EXPECT_NE(none.reason.find("needs a size-1 cache dim"), std::string::npos);
  StridedView q{{1, 4, 64}, {768, 64, 1}, 0};
  EXPECT_EQ(apply_degenerate_strides(q, 0), 1);
  EXPECT_EQ(q.str(), "(1,4,64):(0,64,1)+0");
}

// geo is in kernel pages already: the layout is kv_first's, the harness expands the tables.
TEST(Layout, KernelPagesAreKvFirstInKernelPages) {
  auto r = make_cache_layout(CacheFormat::Flash, Scheme::KernelPages, geo(8, 16, 2, 64));
  auto kv = make_cache_layout(CacheFormat::Flash, Scheme::KvFirst, geo(8, 16, 2, 64));
  ASSERT_TRUE(r.layout && kv.layout);
  EXPECT_EQ(r.layout->key.str(), kv.layout->key.str());
  EXPECT_EQ(r.layout->value.str(), kv.layout->value.str());
  EXPECT_EQ(parse_scheme("kernel_pages"), Scheme::KernelPages);
}


// The mla format: K (latent) and V (rope) views of the same rows, the kernel's 3-D view over both.
TEST(MlaLayout, ViewsShareRows) {
  CacheGeometry g{5, 16, 1, 512, 8, 2, 64};
  for (Scheme s : {Scheme::Separate, Scheme::Offset, Scheme::Padded}) {
    auto made = make_cache_layout(CacheFormat::Mla, s, g);
    ASSERT_TRUE(made.layout) << to_string(s) << ": " << made.reason;
    const CacheLayout& L = *made.layout;
    EXPECT_EQ(L.latent.shape, (std::vector<int64_t>{5, 16, 576}));
    EXPECT_EQ(L.key.shape, (std::vector<int64_t>{5, 16, 1, 512}));
    EXPECT_EQ(L.value.shape, (std::vector<int64_t>{5, 16, 1, 64}));
    EXPECT_EQ(L.value.offset, L.key.offset + 512);
    EXPECT_EQ(L.latent.offset, L.key.offset);
    EXPECT_EQ(L.latent.stride[1], 576);
    EXPECT_GE(L.block_stride, 16 * 576);
    EXPECT_EQ(L.storage_elems, L.key.offset + 5 * L.block_stride);
    EXPECT_EQ(L.describe(L.key.offset + L.block_stride * 2 + 576 * 3 + 7), "latent (kv_c) of block 2 (token 3, dim 7)");
    EXPECT_EQ(L.describe(L.key.offset + L.block_stride * 2 + 576 * 3 + 520), "rope (k_pe) of block 2 (token 3, dim 520)");
  }
}

TEST(MlaLayout, RefusesWhatALatentCacheCannotBe) {
  CacheGeometry g{5, 16, 1, 512, 8, 2, 64};
  EXPECT_NE(make_cache_layout(CacheFormat::Mla, Scheme::KvFirst, g).reason.find("does not apply to the mla cache"),
            std::string::npos);
  EXPECT_NE(make_cache_layout(CacheFormat::Mla, Scheme::DegenerateStrides, g, 0, 0, 0).reason.find("block_size 1"),
            std::string::npos);
  g.block_size = 1;
  auto d = make_cache_layout(CacheFormat::Mla, Scheme::DegenerateStrides, g, 0, 0, 0);
  ASSERT_TRUE(d.layout) << d.reason;
  EXPECT_EQ(d.layout->latent.stride[1], 0);
  g.rope_dim = 0;
  EXPECT_NE(make_cache_layout(CacheFormat::Mla, Scheme::Separate, g).reason.find("rope part"), std::string::npos);
}

}  // namespace
}  // namespace kvh
