#include "mla_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <stdexcept>

namespace kvh::reference {
namespace {

// R = 2, P = 1, one head: latent rows [1, 0 | 0] and [0, 0 | 1]; q = [0, 0 | 1].
MlaAttentionInput tiny(int64_t q_tokens) {
  MlaAttentionInput in;
  in.num_heads = 1, in.kv_lora_rank = 2, in.rope_dim = 1, in.scale = 1.0;
  in.query = RowMatrix(q_tokens, 3);
  for (int64_t j = 0; j < q_tokens; ++j) in.query.row(j) << 0, 0, 1;
  in.query_start_loc = {0, q_tokens};
  RowMatrix lat(2, 3);
  lat << 1, 0, 0, 0, 0, 1;
  in.latent = {lat};
  return in;
}

// Only the rope dim scores: logits [0, 1], weights [1, e] / (1 + e); the value of token 1
// is its first R dims [0, 0] (its rope 1 is no value): out = [1 / (1 + e), 0].
TEST(ReferenceMla, HandComputedDecodeScoresWithTheRopePart) {
  const RowMatrix out = mla_attention(tiny(1));
  ASSERT_EQ(out.rows(), 1);
  ASSERT_EQ(out.cols(), 2);
  EXPECT_NEAR(out(0, 0), 1.0 / (1.0 + std::exp(1.0)), 1e-15);
  EXPECT_EQ(out(0, 1), 0.0);
}

// Scoring over the first R dims only (the rope part dropped) gives equal weights, 0.5:
// the rope part changes the answer, so a reader that ignores it is caught.
TEST(ReferenceMla, TheRopePartMatters) {
  MlaAttentionInput in = tiny(1);
  const double with_rope = mla_attention(in)(0, 0);
  in.query(0, 2) = 0;  // the same query without its rope part
  const double without = mla_attention(in)(0, 0);
  EXPECT_NEAR(without, 0.5, 1e-15);
  EXPECT_GT(std::abs(with_rope - without), 0.2);
}

// Two query tokens of a 2-token sequence (multi-token decode): token 0 sits at p = 0 and
// sees key 0 alone -> out [1, 0]; token 1 sees both -> as decode. Non-causal: both as decode.
TEST(ReferenceMla, MultiTokenDecodeIsCausalAlignedToTheEnd) {
  MlaAttentionInput in = tiny(2);
  RowMatrix out = mla_attention(in);
  EXPECT_NEAR(out(0, 0), 1.0, 1e-15);
  EXPECT_NEAR(out(1, 0), 1.0 / (1.0 + std::exp(1.0)), 1e-15);
  in.causal = false;
  out = mla_attention(in);
  EXPECT_NEAR(out(0, 0), 1.0 / (1.0 + std::exp(1.0)), 1e-15);
}

// Heads share the latent: MLA equals MQA (ragged_sequence_attention with one kv head of
// R + P dims) whose values are the latent with its rope part zeroed, first R output dims.
TEST(ReferenceMla, EqualsMqaOverTheLatentWithRopeValuesZeroed) {
  std::mt19937 rng(7);
  std::normal_distribution<double> nd;
  const int64_t H = 4, R = 8, P = 4, D = R + P;
  MlaAttentionInput in;
  in.num_heads = H, in.kv_lora_rank = R, in.rope_dim = P, in.scale = 0.3;
  in.query_start_loc = {0, 1, 4, 6};
  in.query = RowMatrix(6, H * D);
  for (int64_t i = 0; i < in.query.size(); ++i) in.query.data()[i] = nd(rng);
  for (int64_t L : {5, 3, 9}) {
    RowMatrix lat(L, D);
    for (int64_t i = 0; i < lat.size(); ++i) lat.data()[i] = nd(rng);
    in.latent.push_back(lat);
  }
  const RowMatrix out = mla_attention(in);
  AttentionParams p;
  p.num_heads = H, p.num_kv_heads = 1, p.head_size = D, p.scale = in.scale;
  for (size_t s = 0; s < 3; ++s) {
    RowMatrix V = in.latent[s];
    V.rightCols(P).setZero();
    const int64_t r0 = in.query_start_loc[s], q = in.query_start_loc[s + 1] - r0;
    const RowMatrix mqa = ragged_sequence_attention(p, in.query.middleRows(r0, q), in.latent[s], V);
    for (int64_t j = 0; j < q; ++j)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t d = 0; d < R; ++d) EXPECT_NEAR(out(r0 + j, h * R + d), mqa(j, h * D + d), 1e-12);
  }
}

TEST(ReferenceMla, RefusesMalformedInputsByName) {
  MlaAttentionInput in = tiny(1);
  in.query = RowMatrix::Zero(1, 2);
  EXPECT_THROW(mla_attention(in), std::invalid_argument);
  in = tiny(3);  // 3 query tokens over a 2-token context
  try {
    mla_attention(in);
    FAIL() << "no throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("sequence 0: more query tokens"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kvh::reference
