#include "attention.h"

#include <gtest/gtest.h>

#include <stdexcept>

namespace kvh::reference {
namespace {

DecodeAttentionInput one_seq(int64_t H, int64_t KVH, int64_t D, RowMatrix q, RowMatrix k, RowMatrix v, double scale) {
  DecodeAttentionInput in;
  in.num_heads = H, in.num_kv_heads = KVH, in.head_size = D, in.scale = scale;
  in.query = std::move(q);
  in.keys = {std::move(k)};
  in.values = {std::move(v)};
  return in;
}

// q = [1, 0], K = [[1, 0], [0, 0]] -> logits [1, 0], weights [e, 1] / (e + 1);
// V = [[1, 2], [3, 4]] -> out = V0 + (V1 - V0) / (e + 1) = [1, 2] + 2 * 0.2689414213699951.
TEST(ReferenceAttention, TinyHandComputedCase) {
  RowMatrix q(1, 2), k(2, 2), v(2, 2);
  q << 1, 0;
  k << 1, 0, 0, 0;
  v << 1, 2, 3, 4;
  RowMatrix out = decode_attention(one_seq(1, 1, 2, q, k, v, 1.0));
  EXPECT_NEAR(out(0, 0), 1.5378828427399902, 1e-15);
  EXPECT_NEAR(out(0, 1), 2.5378828427399902, 1e-15);
}

TEST(ReferenceAttention, ScaleMultipliesTheLogits) {
  RowMatrix q(1, 2), k(2, 2), v(2, 2);
  q << 2, 0;  // logits [2, 0] * 0.5 = [1, 0]: the same weights as the hand-computed case
  k << 1, 0, 0, 0;
  v << 1, 2, 3, 4;
  RowMatrix out = decode_attention(one_seq(1, 1, 2, q, k, v, 0.5));
  EXPECT_NEAR(out(0, 0), 1.5378828427399902, 1e-15);
}

TEST(ReferenceAttention, OneTokenGivesItsValue) {
  RowMatrix q = RowMatrix::Random(1, 2 * 8), k = RowMatrix::Random(1, 8), v = RowMatrix::Random(1, 8);
  RowMatrix out = decode_attention(one_seq(2, 1, 8, q, k, v, 0.3));
  for (int h = 0; h < 2; ++h)
    for (int d = 0; d < 8; ++d) EXPECT_DOUBLE_EQ(out(0, h * 8 + d), v(0, d));
}

TEST(ReferenceAttention, EqualKeysGiveTheMeanOfValues) {
  const int T = 7, D = 4;
  RowMatrix q = RowMatrix::Random(1, D), k(T, D), v = RowMatrix::Random(T, D);
  for (int t = 0; t < T; ++t) k.row(t) << 0.5, -1, 2, 0.25;
  RowMatrix out = decode_attention(one_seq(1, 1, D, q, k, v, 0.7));
  for (int d = 0; d < D; ++d) EXPECT_NEAR(out(0, d), v.col(d).mean(), 1e-14);
}

// num_heads 4, num_kv_heads 2: heads 0, 1 read kv head 0; heads 2, 3 read kv head 1.
TEST(ReferenceAttention, GqaMapsHeadToHeadDividedByGroupSize) {
  const int D = 2;
  RowMatrix q = RowMatrix::Random(1, 4 * D), k = RowMatrix::Random(1, 2 * D), v(1, 2 * D);
  v << 10, 11, 20, 21;  // kv head 0: [10, 11]; kv head 1: [20, 21]
  RowMatrix out = decode_attention(one_seq(4, 2, D, q, k, v, 1.0));
  const double expect[4][2] = {{10, 11}, {10, 11}, {20, 21}, {20, 21}};
  for (int h = 0; h < 4; ++h)
    for (int d = 0; d < D; ++d) EXPECT_EQ(out(0, h * D + d), expect[h][d]) << "head " << h;
}

TEST(ReferenceAttention, SequencesAreIndependentAndEmptyOnesAreZero) {
  DecodeAttentionInput in = one_seq(1, 1, 2, RowMatrix::Ones(2, 2), RowMatrix::Ones(1, 2), RowMatrix::Constant(1, 2, 5), 1);
  in.keys.push_back(RowMatrix(0, 2));
  in.values.push_back(RowMatrix(0, 2));
  RowMatrix out = decode_attention(in);
  EXPECT_EQ(out(0, 0), 5);
  EXPECT_EQ(out(1, 0), 0);
  EXPECT_EQ(out(1, 1), 0);
}

TEST(ReferenceAttention, LargeLogitsStayFinite) {
  RowMatrix q(1, 1), k(2, 1), v(2, 1);
  q << 1;
  k << 2000, 1000;  // exp(2000) overflows double; the max-subtracted form does not
  v << 3, 4;
  EXPECT_DOUBLE_EQ(decode_attention(one_seq(1, 1, 1, q, k, v, 1.0))(0, 0), 3.0);
}

TEST(ReferenceAttention, RejectsInconsistentShapes) {
  RowMatrix q = RowMatrix::Zero(1, 6), k = RowMatrix::Zero(2, 2), v = RowMatrix::Zero(2, 2);
  EXPECT_THROW(decode_attention(one_seq(3, 2, 2, q, k, v, 1)), std::invalid_argument);  // 3 % 2 != 0
  EXPECT_THROW(decode_attention(one_seq(3, 1, 2, q, k, RowMatrix::Zero(1, 2), 1)), std::invalid_argument);
  EXPECT_THROW(decode_attention(one_seq(3, 1, 4, q, k, v, 1)), std::invalid_argument);
  DecodeAttentionInput two_rows = one_seq(3, 1, 2, RowMatrix::Zero(2, 6), k, v, 1);
  EXPECT_THROW(decode_attention(two_rows), std::invalid_argument);  // one K/V for two sequences
}

}  // namespace
}  // namespace kvh::reference
