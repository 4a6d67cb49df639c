#include "attention.h"

#include <gtest/gtest.h>

#include <cmath>
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

// The modifiers on the hand-computed case: q = [1, 0], K = [[1, 0], [0, 0]] -> logits [1, 0];
// V = [[1, 2], [3, 4]]; the query is token 1 (L = 2).
DecodeAttentionInput tiny() {
  RowMatrix q(1, 2), k(2, 2), v(2, 2);
  q << 1, 0;
  k << 1, 0, 0, 0;
  v << 1, 2, 3, 4;
  return one_seq(1, 1, 2, q, k, v, 1.0);
}

// A sink logit 0 adds exp(0) = 1 to the denominator once and nothing to the numerator:
// out = (e * V0 + V1) / (e + 1 + 1).
TEST(ReferenceAttentionModifiers, SinkJoinsTheDenominatorOnce) {
  DecodeAttentionInput in = tiny();
  in.sinks = {0.0};
  RowMatrix out = decode_attention(in);
  EXPECT_NEAR(out(0, 0), 1.2119415576170856, 1e-15);
  EXPECT_NEAR(out(0, 1), 2.0, 1e-15);
}

// A sink far above every logit takes almost all the weight: out -> 0, and stays finite.
TEST(ReferenceAttentionModifiers, DominantSinkDrivesTheOutputToZero) {
  DecodeAttentionInput in = tiny();
  in.sinks = {1000.0};
  RowMatrix out = decode_attention(in);
  EXPECT_NEAR(out(0, 0), 0.0, 1e-300);  // e^-999 (Eigen's exp may flush to a subnormal, not to 0)
  EXPECT_NEAR(out(0, 1), 0.0, 1e-300);
}

// softcap 0.5: logits [0.5 tanh(2), 0] = [0.48201379003790845, 0];
// out0 = (w + 3) / (w + 1) with w = exp(0.482...).
TEST(ReferenceAttentionModifiers, SoftcapAppliesCapTanh) {
  DecodeAttentionInput in = tiny();
  in.softcap = 0.5;
  EXPECT_NEAR(decode_attention(in)(0, 0), 1.763553421857599, 1e-15);
}

// ALiBi slope 1, L = 2: token 0 gets -1, token 1 (the query's) gets 0: logits [0, 0],
// so out is the mean of V.
TEST(ReferenceAttentionModifiers, AlibiAddsSlopeTimesDistance) {
  DecodeAttentionInput in = tiny();
  in.alibi_slopes = {1.0};
  RowMatrix out = decode_attention(in);
  EXPECT_NEAR(out(0, 0), 2.0, 1e-15);
  EXPECT_NEAR(out(0, 1), 3.0, 1e-15);
}

// Soft-cap first, then ALiBi (not capped): [0.482 - 10, 0]. Capping after ALiBi would give
// [0.5 tanh(-18), 0] ~ [-0.5, 0] and an output near 2.24 instead.
TEST(ReferenceAttentionModifiers, SoftcapComesBeforeAlibi) {
  DecodeAttentionInput in = tiny();
  in.softcap = 0.5;
  in.alibi_slopes = {10.0};
  EXPECT_NEAR(decode_attention(in)(0, 0), 2.999852975680231, 1e-14);
}

// A window of 1 keeps the query's own token only; a window >= L keeps all.
TEST(ReferenceAttentionModifiers, SlidingWindowKeepsTheLastTokens) {
  DecodeAttentionInput in = tiny();
  in.sliding_window = 1;
  RowMatrix out = decode_attention(in);
  EXPECT_EQ(out(0, 0), 3.0);
  EXPECT_EQ(out(0, 1), 4.0);
  in.sliding_window = 2;
  EXPECT_NEAR(decode_attention(in)(0, 0), 1.5378828427399902, 1e-15);
  in.sliding_window = 1000;
  EXPECT_NEAR(decode_attention(in)(0, 0), 1.5378828427399902, 1e-15);
}

// Window 3 of 5 equal-logit tokens (logit 0): V[2..4] weigh 1 each and the sink logit 0
// is a fourth weight-1 term with no value: out = sum(V[2..4]) / 4.
TEST(ReferenceAttentionModifiers, WindowAndSinkTogether) {
  RowMatrix q = RowMatrix::Zero(1, 1), k = RowMatrix::Zero(5, 1), v(5, 1);
  v << 100, 200, 1, 2, 3;
  DecodeAttentionInput in = one_seq(1, 1, 1, q, k, v, 1.0);
  in.sliding_window = 3;
  in.sinks = {0.0};
  EXPECT_NEAR(decode_attention(in)(0, 0), 6.0 / 4.0, 1e-15);
}

// Per-head values: head 1's sink must not reach head 0.
TEST(ReferenceAttentionModifiers, SinksAndSlopesArePerHead) {
  RowMatrix q = RowMatrix::Zero(1, 2), k = RowMatrix::Zero(2, 1), v(2, 1);
  v << 1, 3;
  DecodeAttentionInput in = one_seq(2, 1, 1, q, k, v, 1.0);
  in.sinks = {-1000.0, 0.0};
  RowMatrix out = decode_attention(in);
  EXPECT_NEAR(out(0, 0), 2.0, 1e-15);        // no sink weight
  EXPECT_NEAR(out(0, 1), 4.0 / 3.0, 1e-15);  // (1 + 3) / 3
}

// vLLM's / HF's get_alibi_slopes: 8 heads -> 2^-1 .. 2^-8; 12 heads -> those, then 2^-0.5, 2^-1.5, ...
TEST(ReferenceAttentionModifiers, StandardAlibiSlopes) {
  const auto s8 = alibi_slopes(8);
  ASSERT_EQ(s8.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(s8[size_t(i)], std::exp2(-(i + 1)));
  const auto s12 = alibi_slopes(12);
  ASSERT_EQ(s12.size(), 12u);
  for (int i = 0; i < 8; ++i) EXPECT_DOUBLE_EQ(s12[size_t(i)], s8[size_t(i)]);
  for (int k = 0; k < 4; ++k) EXPECT_DOUBLE_EQ(s12[size_t(8 + k)], std::exp2(-0.5 - k));
  // Per-rank slopes are slices of the global ones: rank 1 of 2 of an 8-head model is not alibi_slopes(4).
  EXPECT_NE(alibi_slopes(4)[0], s8[4]);
  EXPECT_THROW(alibi_slopes(0), std::invalid_argument);
}

TEST(ReferenceAttentionModifiers, RejectsBadModifiers) {
  DecodeAttentionInput in = tiny();
  in.sinks = {0.0, 1.0};
  EXPECT_THROW(decode_attention(in), std::invalid_argument);
  in = tiny();
  in.alibi_slopes = {};
  in.softcap = -1;
  EXPECT_THROW(decode_attention(in), std::invalid_argument);
  in = tiny();
  in.sliding_window = -2;
  EXPECT_THROW(decode_attention(in), std::invalid_argument);
}

}  // namespace
}  // namespace kvh::reference
