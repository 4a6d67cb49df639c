// The value distributions keep their contracts (value_dist.h), checked in
// double precision on the 16-bit values the kernels and the reference see.
#include "case/value_dist.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "device/counter_rng.h"
#include "case/values.h"

namespace kvh {
namespace {

struct Tensors {
  std::vector<int32_t> lens;
  std::vector<uint16_t> q, k, v;
};

Case decode_case(int64_t nh, int64_t nkv, int64_t hd, DType dt, ValueDist vd, std::vector<int32_t> lens) {
  Case c;
  c.kind = CaseKind::Attention;
  c.model = "m";
  c.num_heads = nh, c.num_kv_heads = nkv, c.head_size = hd, c.dtype = dt, c.values = vd;
  c.batch_size = int64_t(lens.size());
  c.context_lens.assign(lens.begin(), lens.end());
  c.reader = "paged_attention_rocm";
  return c;
}

Tensors shaped(const Case& c) {
  Tensors t;
  for (int64_t n : c.context_lens) t.lens.push_back(int32_t(n));
  int64_t T = 0;
  for (int32_t n : t.lens) T += n;
  // The harness's own input streams (uniform in [-2, 2)), the same draws for every `values`.
  const uint64_t seed = uint64_t(7 + c.head_size * 131 + c.num_heads * 17 + c.num_kv_heads);
  auto draw = [&](uint64_t stream, int64_t n) {
    const U16Buffer b = counter16(c.dtype, rng::kInput, rng::stream_key(seed, stream), size_t(n));
    return std::vector<uint16_t>(b.begin(), b.end());
  };
  t.k = draw(rng::kKeys, T * c.num_kv_heads * c.head_size);
  t.v = draw(rng::kValues, T * c.num_kv_heads * c.head_size);
  t.q = draw(rng::kQueries, c.batch_size * c.num_heads * c.head_size);
  shape_values(c, t.lens, t.q, t.k, t.v);
  return t;
}

// logits[t] of query head h of sequence i, scale 1/sqrt(head_size), in double.
std::vector<double> logits(const Case& c, const Tensors& t, int64_t i, int64_t h) {
  const int64_t hd = c.head_size, kv = h / (c.num_heads / c.num_kv_heads);
  int64_t tok0 = 0;
  for (int64_t j = 0; j < i; ++j) tok0 += t.lens[size_t(j)];
  std::vector<double> out;
  for (int64_t tok = 0; tok < t.lens[size_t(i)]; ++tok) {
    double dot = 0;
    for (int64_t d = 0; d < hd; ++d)
      dot += decode16(c.dtype, t.q[size_t((i * c.num_heads + h) * hd + d)]) *
             decode16(c.dtype, t.k[size_t(((tok0 + tok) * c.num_kv_heads + kv) * hd + d)]);
    out.push_back(dot / std::sqrt(double(hd)));
  }
  return out;
}

// Smallest gap, over every query head, between the dominant sink's logit and
// every other token's, and between the weaker sink's and every non-sink token's.
struct Margins {
  double dominant = 1e300, weak = 1e300;
};
Margins sink_margins(const Case& c, const Tensors& t) {
  Margins m;
  for (int64_t i = 0; i < c.batch_size; ++i) {
    const SinkTokens s = sink_tokens(c, i, t.lens[size_t(i)]);
    const int64_t dom = s.early_dominates ? s.early : s.last, weak = s.early_dominates ? s.last : s.early;
    for (int64_t h = 0; h < c.num_heads; ++h) {
      const auto l = logits(c, t, i, h);
      double other = -1e300, plain = -1e300;
      for (int64_t tok = 0; tok < int64_t(l.size()); ++tok) {
        if (tok != dom) other = std::max(other, l[size_t(tok)]);
        if (tok != dom && tok != weak) plain = std::max(plain, l[size_t(tok)]);
      }
      if (l.size() > 1) m.dominant = std::min(m.dominant, l[size_t(dom)] - other);
      if (weak >= 0 && l.size() > 2) m.weak = std::min(m.weak, l[size_t(weak)] - plain);
    }
  }
  return m;
}

TEST(ValueDist, SinkLogitsExceedEveryOtherByMoreThan100ForEveryQueryHead) {
  const std::vector<int32_t> lens{700, 1300, 1, 257, 2, 256};
  for (DType dt : {DType::F16, DType::BF16})
    for (int64_t hd : {64, 80, 96, 128, 256})
      for (auto [nh, nkv] : {std::pair<int64_t, int64_t>{4, 4}, {8, 4}, {16, 4}, {8, 1}, {64, 8}}) {
        const Case c = decode_case(nh, nkv, hd, dt, ValueDist::Sink, lens);
        const Margins m = sink_margins(c, shaped(c));
        EXPECT_GT(m.dominant, 100) << c.id();
        EXPECT_GT(m.weak, 100) << c.id();
      }
}

TEST(ValueDist, SinksSitInPartitionZeroAndTheLastAndAlternateDominance) {
  const Case c = decode_case(8, 2, 128, DType::BF16, ValueDist::Sink, {700, 1300, 1, 257});
  const std::vector<int64_t> lens{700, 1300, 1, 257};
  for (int64_t i = 0; i < 4; ++i) {
    const SinkTokens s = sink_tokens(c, i, lens[size_t(i)]);
    EXPECT_LT(s.early, std::min<int64_t>(256, lens[size_t(i)]));
    if (lens[size_t(i)] > 256) {
      EXPECT_EQ(s.last / 256, (lens[size_t(i)] - 1) / 256) << "the last partition of sequence " << i;
      EXPECT_EQ(s.early_dominates, i % 2 == 0);
    } else {
      EXPECT_EQ(s.last, -1);
      EXPECT_TRUE(s.early_dominates);
    }
  }
  EXPECT_EQ(sink_tokens(c, 3, 257).last, 256);  // a last partition of one token
}

// The known-bad input: unshaped values have no sink, so the same check fails.
TEST(ValueDist, NormalValuesHaveNoSinkMargin) {
  Case c = decode_case(8, 2, 128, DType::F16, ValueDist::Normal, {700, 1300});
  const Tensors t = shaped(c);
  c.values = ValueDist::Sink;  // read the sink positions of the sink case from the unshaped tensors
  EXPECT_LT(sink_margins(c, t).dominant, 100);
}

TEST(ValueDist, SinkMagnitudesArePowersOfTwoTheDtypesHold) {
  for (int64_t hd : {16, 64, 128, 256}) {
    const SinkMagnitudes m = sink_key_magnitudes(hd);
    EXPECT_EQ(std::exp2(std::round(std::log2(m.weak))), m.weak);
    EXPECT_EQ(std::exp2(std::round(std::log2(m.dominant))), m.dominant);
    EXPECT_LE(m.dominant, 1024) << "exactly representable in fp16 and bf16, logits far from float overflow";
  }
  EXPECT_EQ(sink_key_magnitudes(128).weak, 16);
  EXPECT_EQ(sink_key_magnitudes(128).dominant, 64);
}

TEST(ValueDist, LargeValuesReachTheDtypesRangeAndKeepTheLogits) {
  for (DType dt : {DType::F16, DType::BF16}) {
    Case c = decode_case(8, 2, 128, dt, ValueDist::Normal, {300, 40});
    const Tensors normal = shaped(c);
    c.values = ValueDist::Large;
    const Tensors large = shaped(c);
    double vmax = 0, kmax = 0;
    for (uint16_t e : large.v) vmax = std::max(vmax, std::fabs(decode16(dt, e)));
    for (uint16_t e : large.k) kmax = std::max(kmax, std::fabs(decode16(dt, e)));
    if (dt == DType::F16) {
      EXPECT_EQ(vmax, 65504.0);  // clamped to the largest finite half
      EXPECT_GE(kmax, 16384.0);
    } else {
      EXPECT_GE(vmax, std::exp2(111));
      EXPECT_LE(vmax * 32768, std::exp2(127)) << "2^15 tokens accumulate finitely in float32";
      EXPECT_GE(kmax, std::exp2(100));
    }
    for (uint16_t e : large.v) EXPECT_TRUE(std::isfinite(decode16(dt, e)));
    for (int64_t h = 0; h < 8; ++h) {
      const auto a = logits(c, normal, 0, h), b = logits(c, large, 0, h);
      for (size_t t = 0; t < a.size(); ++t) ASSERT_NEAR(a[t], b[t], 0.05) << "head " << h << " token " << t;
    }
    EXPECT_EQ(value_scale(c), std::exp2(dt == DType::F16 ? 15 : 111));
  }
}

TEST(ValueDist, DeterministicFromTheCaseAndNormalIsUntouched) {
  const Case c = decode_case(8, 2, 64, DType::F16, ValueDist::Sink, {300, 9});
  const Tensors a = shaped(c), b = shaped(c);
  EXPECT_EQ(a.q, b.q);
  EXPECT_EQ(a.k, b.k);
  Case n = c;
  n.values = ValueDist::Normal;
  Tensors t = shaped(n);
  const auto q = t.q, k = t.k, v = t.v;
  shape_values(n, t.lens, t.q, t.k, t.v);
  EXPECT_EQ(t.q, q);
  EXPECT_EQ(t.k, k);
  EXPECT_EQ(t.v, v);
  EXPECT_EQ(value_scale(n), 1.0);
}

TEST(ValueDist, SizesThatDisagreeWithTheCaseThrow) {
  const Case c = decode_case(8, 2, 64, DType::F16, ValueDist::Sink, {300, 9});
  Tensors t = shaped(c);
  t.k.pop_back();
  EXPECT_THROW(shape_values(c, t.lens, t.q, t.k, t.v), std::invalid_argument);
}

// Ragged queries: query rows query_start_loc[i] .. query_start_loc[i+1] are sequence i's, and
// every one of them gets the sequence's sink pattern. Checked against decode: a query whose
// every row of sequence i is decode's row i shapes into decode's shaped row i, row by row.
TEST(ValueDist, EveryQueryRowOfASequenceGetsItsSinkPattern) {
  for (DType dt : {DType::F16, DType::BF16}) {
    const Case c = decode_case(8, 2, 128, dt, ValueDist::Sink, {700, 1300, 1, 257, 40});
    const std::vector<int32_t> loc{0, 3, 4, 5, 65, 105};  // 3, 1, 1, 60 and 40 query tokens
    const int64_t row = c.num_heads * c.head_size;
    // The unshaped decode tensors, and a ragged query repeating row i for each of sequence i's tokens.
    Case n = c;
    n.values = ValueDist::Normal;
    const Tensors raw = shaped(n);
    std::vector<uint16_t> q;
    for (size_t i = 0; i + 1 < loc.size(); ++i)
      for (int32_t r = loc[i]; r < loc[i + 1]; ++r)
        q.insert(q.end(), raw.q.begin() + int64_t(i) * row, raw.q.begin() + int64_t(i + 1) * row);
    std::vector<uint16_t> qd = raw.q, kd = raw.k, vd = raw.v, kr = raw.k, vr = raw.v;
    shape_values(c, raw.lens, qd, kd, vd);
    shape_values(c, raw.lens, q, kr, vr, loc);
    EXPECT_EQ(kr, kd) << "K and V do not depend on the query rows";
    EXPECT_EQ(vr, vd);
    for (size_t i = 0; i + 1 < loc.size(); ++i)
      for (int32_t r = loc[i]; r < loc[i + 1]; ++r)
        ASSERT_TRUE(std::equal(q.begin() + int64_t(r) * row, q.begin() + int64_t(r + 1) * row,
                               qd.begin() + int64_t(i) * row))
            << to_string(dt) << ": query row " << r << " of sequence " << i;
    // So every row's sink logits dominate: sequence i's rows, as decode row i.
    Tensors t{raw.lens, qd, kd, vd};
    const Margins m = sink_margins(c, t);
    EXPECT_GT(m.dominant, 100);
    EXPECT_GT(m.weak, 100);
    // query_start_loc 0, 1, .., S is decode's one row a sequence.
    std::vector<int32_t> ones(6);
    for (int32_t i = 0; i < 6; ++i) ones[size_t(i)] = i;
    std::vector<uint16_t> q1 = raw.q, k1 = raw.k, v1 = raw.v;
    shape_values(c, raw.lens, q1, k1, v1, ones);
    EXPECT_EQ(q1, qd);
    EXPECT_EQ(k1, kd);
  }
}

TEST(ValueDist, QueryStartLocThatDisagreesWithTheQueryOrTheBatchThrows) {
  const Case c = decode_case(8, 2, 64, DType::F16, ValueDist::Sink, {300, 9});
  const int64_t row = c.num_heads * c.head_size;
  Tensors t = shaped(c);
  std::vector<uint16_t> q(size_t(7 * row));
  EXPECT_NO_THROW(shape_values(c, t.lens, q, t.k, t.v, {0, 5, 7}));
  EXPECT_THROW(shape_values(c, t.lens, q, t.k, t.v, {0, 5, 6}), std::invalid_argument) << "6 rows, the query has 7";
  EXPECT_THROW(shape_values(c, t.lens, q, t.k, t.v, {0, 5, 8}), std::invalid_argument) << "8 rows";
  EXPECT_THROW(shape_values(c, t.lens, q, t.k, t.v, {0, 7}), std::invalid_argument) << "one sequence of two";
  EXPECT_THROW(shape_values(c, t.lens, q, t.k, t.v, {0, 2, 5, 7}), std::invalid_argument) << "three of two";
  EXPECT_THROW(shape_values(c, t.lens, t.q, t.k, t.v, {0, 5, 7}), std::invalid_argument) << "a decode query of 2 rows";
}

}  // namespace
}  // namespace kvh

namespace kvh {
namespace {

// low_logits (issue 23): every logit of every query head's row, in double on the 16-bit values,
// below -6e4 and finite, at every head size and both dtypes, and the logits still differ between
// tokens. Known-bad input: the normal distribution's logits are all above -6e4.
TEST(ValueDist, LowLogitsPutsEveryLogitOfEveryRowBelowMinus6e4) {
  for (DType dt : {DType::F16, DType::BF16})
    for (int64_t hd : {64, 128, 256}) {
      const Case c = decode_case(8, 2, hd, dt, ValueDist::LowLogits, {1, 37});
      const Tensors t = shaped(c);
      Case n = c;
      n.values = ValueDist::Normal;
      const Tensors u = shaped(n);
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t h = 0; h < 8; ++h) {
          const std::vector<double> l = logits(c, t, i, h), normal = logits(n, u, i, h);
          for (double x : l) {
            EXPECT_LT(x, -6e4) << c.id() << " seq " << i << " head " << h;
            EXPECT_GT(x, -7e4) << "finite and near the edge: float32's ulp there is 2^-8";
          }
          for (double x : normal) EXPECT_GT(x, -6e4) << "the known-bad input has a logit above -6e4";
          if (l.size() > 1) EXPECT_NE(*std::min_element(l.begin(), l.end()), *std::max_element(l.begin(), l.end()));
        }
      EXPECT_EQ(t.v, u.v) << "V is not touched";
    }
}

// away_from_zero (issue 23): |K|, |V| in [0.5, 2], the drawn sign kept; Q untouched.
// Known-bad input: the normal draw has elements below 0.5 in magnitude.
TEST(ValueDist, AwayFromZeroKeepsKAndVAtLeastHalfAwayFromZero) {
  for (DType dt : {DType::F16, DType::BF16}) {
    const Case c = decode_case(4, 2, 128, dt, ValueDist::AwayFromZero, {40, 3});
    Case n = c;
    n.values = ValueDist::Normal;
    const Tensors t = shaped(c), u = shaped(n);
    EXPECT_EQ(t.q, u.q);
    int near_zero = 0;
    for (size_t i = 0; i < t.k.size(); ++i)
      for (auto [shaped_e, raw_e] : {std::pair{t.k[i], u.k[i]}, std::pair{t.v[i], u.v[i]}}) {
        const double x = decode16(dt, shaped_e), raw = decode16(dt, raw_e);
        EXPECT_GE(std::fabs(x), 0.5);
        EXPECT_LE(std::fabs(x), 2.0);
        EXPECT_EQ(x < 0, raw < 0);
        near_zero += std::fabs(raw) < 0.5;
      }
    EXPECT_GT(near_zero, 0) << "the known-bad input has elements near zero";
  }
}

}  // namespace
}  // namespace kvh
