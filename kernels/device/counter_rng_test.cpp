// The host fills' fast path (fill_run16, old_token16, input16) against the
// generator's definition (bits16_of_word, bits16): the same bits for every
// lane value, at every alignment, length and stride.
#include "device/counter_rng.h"

#include <gtest/gtest.h>

#include <vector>

namespace kvh::rng {
namespace {

TEST(CounterRng, OldTokenLaneArithmeticEqualsTheDefinitionForEvery16BitLane) {
  for (bool bf16 : {false, true})
    for (unsigned r = 0; r < 0x10000u; ++r)
      ASSERT_EQ(old_token16(bf16, r), bits16_of_word(kOldToken, bf16, uint64_t(r), 0)) << "r " << r << " bf16 " << bf16;
}

TEST(CounterRng, InputLaneArithmeticEqualsTheDefinitionForEveryBitItReads) {
  // The element reads bits 0..23 and 31 of its lane: every combination of them.
  for (bool bf16 : {false, true})
    for (uint32_t hi : {0u, 0x7F000000u, 0x80000000u, 0xFF000000u})
      for (uint32_t lo = 0; lo < (1u << 24); ++lo) {
        const uint32_t r = hi | lo;
        ASSERT_EQ(input16(bf16, r), bits16_of_word(kInput, bf16, uint64_t(r), 0)) << "r " << r << " bf16 " << bf16;
      }
}

TEST(CounterRng, FillRunEqualsElementByElementAtEveryAlignmentLengthAndStride) {
  for (int kind : {int(kInput), int(kOldToken)})
    for (bool bf16 : {false, true})
      for (uint64_t first : {0ull, 1ull, 2ull, 3ull, 5ull, 127ull, 1000003ull})
        for (int64_t n : {0, 1, 3, 4, 63, 64, 65, 127, 128, 129, 1000})
          for (int64_t stride : {1, 3}) {
            std::vector<uint16_t> got(size_t(n * stride + 1), 0xABCD);
            fill_run16(kind, bf16, got.data(), stride, n, 0x1234567u, first);
            for (int64_t i = 0; i < n; ++i)
              ASSERT_EQ(got[size_t(i * stride)], bits16(kind, bf16, 0x1234567u, first + uint64_t(i)))
                  << "kind " << kind << " bf16 " << bf16 << " first " << first << " n " << n << " stride " << stride
                  << " i " << i;
            for (size_t j = 0; j < got.size(); ++j)  // nothing between or after the elements
              if (stride == 1 ? int64_t(j) >= n : (int64_t(j) % stride != 0 || int64_t(j) >= n * stride))
                ASSERT_EQ(got[j], 0xABCD) << "wrote position " << j;
          }
}

TEST(CounterRng, AWrongLaneOrderWouldBeSeen) {
  // The control: swapping two lanes of a word changes the elements, so the tests above can fail.
  const uint64_t w = at(7, 0);
  EXPECT_NE(bits16_of_word(kOldToken, false, w, 0), bits16_of_word(kOldToken, false, w, 1));
  EXPECT_NE(bits16_of_word(kInput, false, w, 0), bits16_of_word(kInput, false, w, 1));
}

}  // namespace
}  // namespace kvh::rng
