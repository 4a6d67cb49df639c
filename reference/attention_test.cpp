#include "attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

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

// ---- Ragged attention ----

// Random non-zero entries in [-2, -0.05] U [0.05, 2].
RowMatrix random_nonzero(int64_t rows, int64_t cols, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> mag(0.05, 2.0);
  std::bernoulli_distribution neg(0.5);
  RowMatrix m(rows, cols);
  for (int64_t i = 0; i < m.size(); ++i) m.data()[i] = neg(rng) ? -mag(rng) : mag(rng);
  return m;
}

// A ragged batch with the given (q_s, L_s) per sequence.
RaggedAttentionInput ragged_batch(int64_t H, int64_t KVH, int64_t D, const std::vector<std::pair<int64_t, int64_t>>& q_and_l,
                                  std::mt19937_64& rng) {
  RaggedAttentionInput in;
  in.num_heads = H, in.num_kv_heads = KVH, in.head_size = D, in.scale = 1.0 / std::sqrt(double(D));
  in.query_start_loc = {0};
  for (const auto& [q, L] : q_and_l) {
    in.query_start_loc.push_back(in.query_start_loc.back() + q);
    in.keys.push_back(random_nonzero(L, KVH * D, rng));
    in.values.push_back(random_nonzero(L, KVH * D, rng));
  }
  in.query = random_nonzero(in.query_start_loc.back(), H * D, rng);
  return in;
}

// Bugs a kernel could have, planted in the brute force to show the comparison sees them.
enum class Planted { kNone, kCausalOffByOne, kWindowFromEnd, kDropLastRow };

// Token by token, head by head, key by key: scalar loops and an explicit visibility test,
// sharing nothing with attention.cpp.
RowMatrix brute_force(const RaggedAttentionInput& in, Planted bug = Planted::kNone) {
  const int64_t H = in.num_heads, D = in.head_size, group = in.num_heads / in.num_kv_heads;
  const int64_t W = in.sliding_window;
  RowMatrix out = RowMatrix::Zero(in.query.rows(), H * D);
  for (size_t s = 0; s + 1 < in.query_start_loc.size(); ++s) {
    const RowMatrix &K = in.keys[s], &V = in.values[s];
    const int64_t L = K.rows(), q = in.query_start_loc[s + 1] - in.query_start_loc[s];
    for (int64_t j = 0; j < q; ++j) {
      const int64_t row = in.query_start_loc[s] + j;
      if (bug == Planted::kDropLastRow && j == q - 1) continue;
      const int64_t p = L - q + j;
      const int64_t mask_p = bug == Planted::kCausalOffByOne ? p - 1 : p;
      const int64_t window_p = bug == Planted::kWindowFromEnd ? L - 1 : mask_p;
      for (int64_t h = 0; h < H; ++h) {
        const int64_t kvh = h / group;
        std::vector<double> logit;
        std::vector<int64_t> token;
        for (int64_t t = 0; t < L; ++t) {
          const bool causal_ok = !in.causal || t <= mask_p;
          const bool window_ok = W == 0 || t > window_p - W;
          if (!causal_ok || !window_ok) continue;
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += in.query(row, h * D + d) * K(t, kvh * D + d);
          double x = in.scale * dot;
          if (in.softcap > 0) x = in.softcap * std::tanh(x / in.softcap);
          if (!in.alibi_slopes.empty()) x += in.alibi_slopes[size_t(h)] * double(t - p);
          logit.push_back(x);
          token.push_back(t);
        }
        double m = -std::numeric_limits<double>::infinity();
        for (double x : logit) m = std::max(m, x);
        if (!in.sinks.empty()) m = std::max(m, in.sinks[size_t(h)]);
        double denom = in.sinks.empty() ? 0.0 : std::exp(in.sinks[size_t(h)] - m);
        for (double x : logit) denom += std::exp(x - m);
        for (int64_t d = 0; d < D; ++d) {
          double acc = 0;
          for (size_t i = 0; i < logit.size(); ++i) acc += std::exp(logit[i] - m) * V(token[i], kvh * D + d);
          out(row, h * D + d) = acc / denom;
        }
      }
    }
  }
  return out;
}

double max_abs_diff(const RowMatrix& a, const RowMatrix& b) {
  EXPECT_EQ(a.rows(), b.rows());
  EXPECT_EQ(a.cols(), b.cols());
  if (a.rows() != b.rows() || a.cols() != b.cols()) return std::numeric_limits<double>::infinity();
  return (a - b).cwiseAbs().maxCoeff();
}

// Every combination of the modifiers on `base` (window, softcap, ALiBi, sinks, causal).
void for_each_modifier_combination(const RaggedAttentionInput& base, std::mt19937_64& rng,
                                   const std::function<void(const RaggedAttentionInput&, const std::string&)>& f) {
  std::uniform_real_distribution<double> sink(-1.0, 2.0);
  std::vector<double> sinks(size_t(base.num_heads));
  for (double& x : sinks) x = sink(rng);
  const std::vector<double> slopes = alibi_slopes(base.num_heads);
  for (int64_t window : {0, 1, 5, 17, 1000})
    for (double softcap : {0.0, 0.8})
      for (bool alibi : {false, true})
        for (bool with_sinks : {false, true})
          for (bool causal : {true, false}) {
            RaggedAttentionInput in = base;
            in.sliding_window = window, in.softcap = softcap, in.causal = causal;
            if (alibi) in.alibi_slopes = slopes;
            if (with_sinks) in.sinks = sinks;
            f(in, "window " + std::to_string(window) + " softcap " + std::to_string(softcap) + " alibi " +
                      std::to_string(alibi) + " sinks " + std::to_string(with_sinks) + " causal " +
                      std::to_string(causal));
          }
}

// q_s = 1 everywhere: ragged_attention is decode_attention, modifiers and all.
TEST(ReferenceRaggedAttention, OneQueryTokenPerSequenceIsDecode) {
  std::mt19937_64 rng(11);
  const RaggedAttentionInput base = ragged_batch(12, 2, 8, {{1, 1}, {1, 7}, {1, 30}, {1, 2}, {1, 19}}, rng);
  for_each_modifier_combination(base, rng, [](const RaggedAttentionInput& in, const std::string& what) {
    DecodeAttentionInput dec;
    static_cast<AttentionParams&>(dec) = in;
    dec.query = in.query, dec.keys = in.keys, dec.values = in.values;
    EXPECT_LT(max_abs_diff(ragged_attention(in), decode_attention(dec)), 1e-12) << what;
  });
}

// Random ragged batches (decode rows, short prefills, a chunk of 40, q = L) against the brute force.
TEST(ReferenceRaggedAttention, MatchesBruteForceOnRandomRaggedBatches) {
  std::mt19937_64 rng(12);
  std::uniform_int_distribution<int64_t> qd(1, 9), extra(0, 60);
  for (int batch = 0; batch < 3; ++batch) {
    std::vector<std::pair<int64_t, int64_t>> q_and_l;
    for (int s = 0; s < 5; ++s) {
      const int64_t q = qd(rng);
      q_and_l.push_back({q, std::min<int64_t>(100, q + extra(rng))});
    }
    q_and_l.push_back({40, 40 + extra(rng)});  // a prefill chunk over an earlier context
    q_and_l.push_back({9, 9});                 // a whole prompt: q = L
    q_and_l.push_back({1, 100});
    std::shuffle(q_and_l.begin(), q_and_l.end(), rng);
    const RaggedAttentionInput base = ragged_batch(12, 2, 8, q_and_l, rng);
    for_each_modifier_combination(base, rng, [](const RaggedAttentionInput& in, const std::string& what) {
      EXPECT_LT(max_abs_diff(ragged_attention(in), brute_force(in)), 1e-12) << what;
    });
  }
}

// A prefill chunk big enough to be cut into several tiles of query tokens (2^21 logits a
// tile: here 6 * 1500 per token, so 233 tokens a tile), window and all.
TEST(ReferenceRaggedAttention, TiledLongChunkMatchesBruteForce) {
  std::mt19937_64 rng(13);
  RaggedAttentionInput in = ragged_batch(6, 1, 4, {{700, 1500}, {3, 5}}, rng);
  EXPECT_LT(max_abs_diff(ragged_attention(in), brute_force(in)), 1e-12);
  in.sliding_window = 300, in.alibi_slopes = alibi_slopes(6), in.sinks = std::vector<double>(6, 0.5);
  EXPECT_LT(max_abs_diff(ragged_attention(in), brute_force(in)), 1e-12);
  in.causal = false;
  EXPECT_LT(max_abs_diff(ragged_attention(in), brute_force(in)), 1e-12);
}

// The per-sequence entry point gives the rows of the batched one; q = 0 gives no rows.
TEST(ReferenceRaggedAttention, SequenceEntryPointGivesTheBatchRows) {
  std::mt19937_64 rng(14);
  RaggedAttentionInput in = ragged_batch(4, 2, 8, {{3, 10}, {0, 4}, {5, 5}}, rng);
  in.sliding_window = 4, in.softcap = 1.5;
  const RowMatrix all = ragged_attention(in);
  for (size_t s = 0; s < 3; ++s) {
    const int64_t a = in.query_start_loc[s], q = in.query_start_loc[s + 1] - a;
    const RowMatrix one = ragged_sequence_attention(in, in.query.middleRows(a, q), in.keys[s], in.values[s]);
    ASSERT_EQ(one.rows(), q);
    if (q > 0) EXPECT_EQ(max_abs_diff(one, all.middleRows(a, q)), 0.0);
  }
}

// The comparison of MatchesBruteForceOnRandomRaggedBatches sees each planted bug.
TEST(ReferenceRaggedAttention, PlantedBugsAreSeen) {
  std::mt19937_64 rng(15);
  // L > q everywhere: a mask one token early still leaves each query a key.
  RaggedAttentionInput in = ragged_batch(12, 2, 8, {{40, 100}, {5, 30}, {1, 20}}, rng);
  const RowMatrix ref = ragged_attention(in);
  EXPECT_LT(max_abs_diff(ref, brute_force(in)), 1e-12);
  EXPECT_GT(max_abs_diff(ref, brute_force(in, Planted::kCausalOffByOne)), 1e-3);
  EXPECT_GT(max_abs_diff(ref, brute_force(in, Planted::kDropLastRow)), 1e-3);
  in.sliding_window = 50;  // > q - 1: the window from the end still leaves each query a key
  const RowMatrix windowed = ragged_attention(in);
  EXPECT_LT(max_abs_diff(windowed, brute_force(in)), 1e-12);
  EXPECT_GT(max_abs_diff(windowed, brute_force(in, Planted::kWindowFromEnd)), 1e-3);
  EXPECT_GT(max_abs_diff(windowed, brute_force(in, Planted::kCausalOffByOne)), 1e-3);
}

// Three tokens, the last two new (q = 2, L = 3), one head, D = 1, q = k = 0 (equal logits):
// token 0 of the query (p = 1) averages V[0..1], token 1 (p = 2) averages V[0..2];
// not causal, both average V[0..2]; window 1 keeps V[p] alone.
TEST(ReferenceRaggedAttention, TinyCausalAlignedToTheEnd) {
  RaggedAttentionInput in;
  in.num_heads = in.num_kv_heads = in.head_size = 1;
  in.query = RowMatrix::Zero(2, 1);
  in.query_start_loc = {0, 2};
  in.keys = {RowMatrix::Zero(3, 1)};
  RowMatrix v(3, 1);
  v << 1, 2, 6;
  in.values = {v};
  RowMatrix out = ragged_attention(in);
  EXPECT_NEAR(out(0, 0), 1.5, 1e-15);
  EXPECT_NEAR(out(1, 0), 3.0, 1e-15);
  in.causal = false;
  out = ragged_attention(in);
  EXPECT_NEAR(out(0, 0), 3.0, 1e-15);
  EXPECT_NEAR(out(1, 0), 3.0, 1e-15);
  in.causal = true, in.sliding_window = 1;
  out = ragged_attention(in);
  EXPECT_EQ(out(0, 0), 2.0);
  EXPECT_EQ(out(1, 0), 6.0);
}

// The message of the std::invalid_argument f throws ("" when it throws none).
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(ReferenceRaggedAttention, RejectsBadInputsWithClearMessages) {
  std::mt19937_64 rng(16);
  const RaggedAttentionInput good = ragged_batch(4, 2, 2, {{2, 3}, {1, 4}}, rng);
  ASSERT_EQ(error_of([&] { ragged_attention(good); }), "");
  auto message = [&](const std::function<void(RaggedAttentionInput&)>& spoil) {
    RaggedAttentionInput in = good;
    spoil(in);
    return error_of([&] { ragged_attention(in); });
  };
  auto has = [](const std::string& msg, const std::string& part) {
    return msg.rfind("ragged_attention: ", 0) == 0 && msg.find(part) != std::string::npos;
  };
  EXPECT_PRED2(has, message([](auto& in) { in.num_heads = 0; }), "must be positive");
  EXPECT_PRED2(has, message([](auto& in) { in.num_kv_heads = 3; }), "num_heads 4 is not a multiple of num_kv_heads 3");
  EXPECT_PRED2(has, message([](auto& in) { in.query = RowMatrix::Ones(3, 6); }), "num_heads * head_size columns");
  EXPECT_PRED2(has, message([](auto& in) { in.query_start_loc = {0, 3}; }), "query_start_loc needs num_seqs + 1 = 3 entries, has 2");
  EXPECT_PRED2(has, message([](auto& in) { in.query_start_loc = {1, 2, 3}; }), "query_start_loc must start at 0");
  EXPECT_PRED2(has, message([](auto& in) { in.query_start_loc = {0, 3, 2}; }), "query_start_loc decreases at sequence 1");
  EXPECT_PRED2(has, message([](auto& in) { in.query_start_loc = {0, 2, 2}; }), "query_start_loc ends at 2, query has 3 rows");
  EXPECT_PRED2(has, message([](auto& in) { in.keys[0] = RowMatrix::Ones(1, 4), in.values[0] = RowMatrix::Ones(1, 4); }),
               "sequence 0: more query tokens (2) than context tokens (1)");
  EXPECT_PRED2(has, message([](auto& in) { in.values.pop_back(); }), "values has 1 sequences, keys 2");
  EXPECT_PRED2(has, message([](auto& in) { in.keys[1] = RowMatrix::Ones(4, 3); }), "sequence 1: keys/values must have num_kv_heads * head_size columns");
  EXPECT_PRED2(has, message([](auto& in) { in.values[1] = RowMatrix::Ones(5, 4); }), "sequence 1: keys and values of a sequence must have the same context_len");
  EXPECT_PRED2(has, message([](auto& in) { in.sliding_window = -1; }), "sliding_window must be >= 0");
  EXPECT_PRED2(has, message([](auto& in) { in.softcap = -0.5; }), "softcap must be >= 0");
  EXPECT_PRED2(has, message([](auto& in) { in.sinks = {1, 2, 3}; }), "sinks must be empty or have num_heads entries");
  EXPECT_PRED2(has, message([](auto& in) { in.alibi_slopes = {1}; }), "alibi_slopes must be empty or have num_heads entries");
  // The per-sequence entry point names itself.
  const std::string msg = error_of([&] {
    ragged_sequence_attention(good, RowMatrix::Ones(4, 8), good.keys[0], good.values[0]);
  });
  EXPECT_EQ(msg, "ragged_sequence_attention: more query tokens (4) than context tokens (3)");
}

}  // namespace
}  // namespace kvh::reference
