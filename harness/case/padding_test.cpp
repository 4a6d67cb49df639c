// padding_tokens: every mode occurs, the draw is per case (not a fixed position), and the
// first and the last token are each a real token in most cases.
#include "case/padding.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace kvh {
namespace {

TEST(PaddingTokens, EveryModeOccursAndNoPositionIsAlwaysPadding) {
  int none = 0, both_ends = 0, first_real = 0, last_real = 0;
  std::vector<int> padded_at(4, 0);
  const int cases = 400;
  for (uint64_t seed = 1; seed <= uint64_t(cases); ++seed) {
    const std::vector<int64_t> p = padding_tokens(4, seed * 0x9E3779B97F4A7C15ull);
    ASSERT_TRUE(std::is_sorted(p.begin(), p.end()));
    for (int64_t i : p) {
      ASSERT_GE(i, 0);
      ASSERT_LT(i, 4);
      ++padded_at[size_t(i)];
    }
    none += p.empty();
    const bool first = std::find(p.begin(), p.end(), 0) != p.end(), last = std::find(p.begin(), p.end(), 3) != p.end();
    both_ends += first && last;
    first_real += !first;
    last_real += !last;
  }
  EXPECT_GT(none, cases / 8);
  EXPECT_GT(both_ends, cases / 8);
  EXPECT_GT(first_real, cases / 2);
  EXPECT_GT(last_real, cases / 2);
  for (int n : padded_at) EXPECT_GT(n, 0);  // every position is padding somewhere
  for (int n : padded_at) EXPECT_LT(n, cases);  // and a real token elsewhere
}

TEST(PaddingTokens, DeterministicPerSeedAndDifferentAcrossSeeds) {
  EXPECT_EQ(padding_tokens(512, 42), padding_tokens(512, 42));
  int differ = 0;
  for (uint64_t s = 0; s < 20; ++s) differ += padding_tokens(512, s) != padding_tokens(512, s + 1);
  EXPECT_GT(differ, 10);
  EXPECT_TRUE(padding_tokens(0, 1).empty());
}

}  // namespace
}  // namespace kvh
