#include "cache_writer.h"

#include <gtest/gtest.h>

namespace kvh::reference {
namespace {

// Hand-placed elements: the expected offsets are worked out from DESIGN.md's
// shapes, not from cache_offset's own formula.
TEST(ReferenceWriter, ShuffleOffsetsMatchHandComputedPositions) {
  CacheGeometry g{4, 16, 2, 32, 8, 2};
  auto L = *make_cache_layout(CacheFormat::Shuffle, Scheme::Interleaved, g).layout;
  const int64_t page = 16 * 2 * 32;  // 1024
  // K [blocks, heads, hd/x, bs, x]: block 3, head 1, token 5, dim 19 -> [3,1,2,5,3]
  EXPECT_EQ(cache_offset(L, false, 3, 1, 5, 19), 3 * 2 * page + 1 * 512 + 2 * 128 + 5 * 8 + 3);
  // V [blocks, heads, bs/x, hd, x]: token 13 -> [3,1,1,19,5], V page after K's
  EXPECT_EQ(cache_offset(L, true, 3, 1, 13, 19), 3 * 2 * page + page + 1 * 512 + 1 * 256 + 19 * 8 + 5);
}

TEST(ReferenceWriter, PaV1ValueIsHeadSizeByBlockSize) {
  CacheGeometry g{2, 16, 1, 64, 8, 2};
  auto L = *make_cache_layout(CacheFormat::PaV1, Scheme::KvFirst, g).layout;
  EXPECT_EQ(cache_offset(L, true, 1, 0, 7, 10), 2 * 1024 + 1024 + 10 * 16 + 7);
}

// HND [blocks, heads, bs, hd], head_interleaved: K and V of a head adjacent, the head stride 2 * bs * hd.
TEST(ReferenceWriter, HndHeadInterleavedOffsetsMatchHandComputedPositions) {
  CacheGeometry g{3, 16, 2, 32, 8, 2};
  auto L = *make_cache_layout(CacheFormat::Hnd, Scheme::HeadInterleaved, g).layout;
  const int64_t head_page = 16 * 32;  // 512
  EXPECT_EQ(cache_offset(L, false, 2, 1, 5, 19), 2 * 4 * head_page + 1 * 2 * head_page + 5 * 32 + 19);
  EXPECT_EQ(cache_offset(L, true, 2, 1, 5, 19), 2 * 4 * head_page + 1 * 2 * head_page + head_page + 5 * 32 + 19);
}

TEST(ReferenceWriter, WritesOnlyMappedSlotsAndSkipsPadding) {
  CacheGeometry g{2, 4, 1, 8, 8, 2};
  auto L = *make_cache_layout(CacheFormat::Flash, Scheme::KvFirst, g).layout;
  std::vector<uint16_t> storage(size_t(L.storage_elems), 0xEEEE);
  std::vector<uint16_t> k(16), v(16);
  for (int i = 0; i < 16; ++i) k[i] = uint16_t(100 + i), v[i] = uint16_t(200 + i);
  write_cache(L, k, v, {5, -1}, storage.data());
  int changed = 0;
  for (auto e : storage) changed += e != 0xEEEE;
  EXPECT_EQ(changed, 16);  // one token: 8 K + 8 V elements
  EXPECT_EQ(storage[size_t(1 * 32 + 1 * 8 + 3)], 103);        // K block 1 token 1 dim 3
  EXPECT_EQ(storage[size_t(64 + 1 * 32 + 1 * 8 + 3)], 203);   // V
  EXPECT_THROW(write_cache(L, k, v, {8, 0}, storage.data()), std::out_of_range);
}

}  // namespace
}  // namespace kvh::reference
