// The reference FP8 codecs against a second decoding built another way, and
// the formats' named facts (the values ml_dtypes and PyTorch document).
#include "fp8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace kvh::reference {
namespace {

constexpr Fp8Format kFn = Fp8Format::E4M3FN, kFnuz = Fp8Format::E4M3FNUZ;

// Second decoding: the positive codes 0x00..0x7F are the non-negative values
// in increasing order, 8 per binade; walk them by adding the spacing, which
// starts at the smallest subnormal and doubles at every binade after the
// first normal one (codes 16, 24, ...). No exponent field, no bias formula.
std::vector<double> walked_table(double min_subnormal) {
  std::vector<double> t(128);
  double spacing = min_subnormal, v = 0;
  for (int c = 0; c < 128; ++c) {
    if (c >= 16 && c % 8 == 0) spacing *= 2;
    t[size_t(c)] = v;
    v += spacing;
  }
  return t;
}

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)); }

TEST(Fp8Reference, AllCodesOfE4m3fnMatchTheWalkedTable) {
  const auto t = walked_table(std::ldexp(1.0, -9));
  for (int c = 0; c < 256; ++c) {
    const bool nan = (c & 0x7F) == 0x7F;
    const double want = nan ? std::nan("") : (c & 0x80 ? -t[size_t(c & 0x7F)] : t[size_t(c)]);
    EXPECT_TRUE(same(fp8_decode(uint8_t(c), kFn), want)) << "code " << c;
    EXPECT_EQ(fp8_is_nan(uint8_t(c), kFn), nan) << "code " << c;
  }
}

TEST(Fp8Reference, AllCodesOfE4m3fnuzMatchTheWalkedTable) {
  const auto t = walked_table(std::ldexp(1.0, -10));
  for (int c = 0; c < 256; ++c) {
    const bool nan = c == 0x80;
    const double want = nan ? std::nan("") : (c & 0x80 ? -t[size_t(c & 0x7F)] : t[size_t(c)]);
    EXPECT_TRUE(same(fp8_decode(uint8_t(c), kFnuz), want)) << "code " << c;
    EXPECT_EQ(fp8_is_nan(uint8_t(c), kFnuz), nan) << "code " << c;
  }
}

TEST(Fp8Reference, NamedValuesOfE4m3fn) {
  EXPECT_EQ(fp8_decode(0x7E, kFn), 448.0);            // max finite
  EXPECT_EQ(fp8_decode(0xFE, kFn), -448.0);
  EXPECT_EQ(fp8_decode(0x01, kFn), 0.001953125);      // min subnormal 2^-9
  EXPECT_EQ(fp8_decode(0x07, kFn), 7 * 0.001953125);  // max subnormal
  EXPECT_EQ(fp8_decode(0x08, kFn), 0.015625);         // min normal 2^-6
  EXPECT_EQ(fp8_decode(0x38, kFn), 1.0);
  EXPECT_TRUE(std::isnan(fp8_decode(0x7F, kFn)));
  EXPECT_TRUE(std::isnan(fp8_decode(0xFF, kFn)));
  EXPECT_EQ(fp8_decode(0x80, kFn), 0.0);
  EXPECT_TRUE(std::signbit(fp8_decode(0x80, kFn)));  // -0 exists
  EXPECT_EQ(fp8_decode(0x78, kFn), 256.0);            // the E=15 binade is finite (no Inf)
}

TEST(Fp8Reference, NamedValuesOfE4m3fnuz) {
  EXPECT_EQ(fp8_decode(0x7F, kFnuz), 240.0);          // max finite
  EXPECT_EQ(fp8_decode(0xFF, kFnuz), -240.0);
  EXPECT_EQ(fp8_decode(0x01, kFnuz), 0.0009765625);   // min subnormal 2^-10
  EXPECT_EQ(fp8_decode(0x08, kFnuz), 0.0078125);      // min normal 2^-7
  EXPECT_EQ(fp8_decode(0x40, kFnuz), 1.0);
  EXPECT_TRUE(std::isnan(fp8_decode(0x80, kFnuz)));   // the only NaN, where fn has -0
  EXPECT_EQ(fp8_decode(0x00, kFnuz), 0.0);
  EXPECT_FALSE(std::signbit(fp8_decode(0x00, kFnuz)));
  // The same finite bits decode 2x apart.
  for (int c = 0; c < 256; ++c)
    if (!fp8_is_nan(uint8_t(c), kFn) && !fp8_is_nan(uint8_t(c), kFnuz))
      EXPECT_EQ(fp8_decode(uint8_t(c), kFn), 2 * fp8_decode(uint8_t(c), kFnuz)) << "code " << c;
}

TEST(Fp8Reference, EveryFiniteCodeRoundTrips) {
  for (Fp8Format f : {kFn, kFnuz})
    for (int c = 0; c < 256; ++c) {
      if (fp8_is_nan(uint8_t(c), f)) continue;
      EXPECT_EQ(fp8_encode(fp8_decode(uint8_t(c), f), f), c) << to_string(f) << " code " << c;
    }
}

TEST(Fp8Reference, EncodeRoundsTiesToEvenAndSaturates) {
  EXPECT_EQ(fp8_encode(1.0625, kFn), 0x38);   // midway 1.0 (M=0) and 1.125 (M=1): to M=0
  EXPECT_EQ(fp8_encode(1.1875, kFn), 0x3A);   // midway 1.125 and 1.25 (M=2): up
  EXPECT_EQ(fp8_encode(1.0626, kFn), 0x39);   // above the midpoint: up
  EXPECT_EQ(fp8_encode(std::ldexp(1.0, -10), kFn), 0x00);        // half the min subnormal: to 0 (even)
  EXPECT_EQ(fp8_encode(std::ldexp(1.5, -9), kFn), 0x02);         // 1.5 quanta: to 2 (even)
  EXPECT_EQ(fp8_encode(-std::ldexp(1.0, -11), kFn), 0x80);       // rounds to -0
  EXPECT_EQ(fp8_encode(-std::ldexp(1.0, -12), kFnuz), 0x00);     // fnuz has no -0
  EXPECT_EQ(fp8_encode(-0.0, kFnuz), 0x00);
  EXPECT_EQ(fp8_encode(-0.0, kFn), 0x80);
  EXPECT_EQ(fp8_encode(0.0146484375, kFn), 0x08);  // 7.5 subnormal quanta: to the min normal (8, even)
  EXPECT_EQ(fp8_encode(460.0, kFn), 0x7E);         // between 448 and the would-be 480: saturates
  EXPECT_EQ(fp8_encode(1e6, kFn), 0x7E);
  EXPECT_EQ(fp8_encode(-1e6, kFn), 0xFE);
  EXPECT_EQ(fp8_encode(1e6, kFnuz), 0x7F);
  EXPECT_EQ(fp8_encode(-250.0, kFnuz), 0xFF);
  EXPECT_EQ(fp8_encode(std::numeric_limits<double>::infinity(), kFn), 0x7E);
  EXPECT_EQ(fp8_encode(-std::numeric_limits<double>::infinity(), kFnuz), 0xFF);
  EXPECT_EQ(fp8_encode(std::nan(""), kFn), 0x7F);
  EXPECT_EQ(fp8_encode(-std::nan(""), kFn), 0x7F);  // a NaN's sign is not kept
  EXPECT_EQ(fp8_encode(std::nan(""), kFnuz), 0x80);
}

// Encoding is "the nearest finite code, ties to the even mantissa": check that
// against an exhaustive search over the codes for random values of every
// magnitude (including out of range), in both formats.
TEST(Fp8Reference, EncodeIsTheNearestCodeByExhaustiveSearch) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> mant(1.0, 2.0);
  std::uniform_int_distribution<int> ex(-14, 10);
  for (Fp8Format f : {kFn, kFnuz})
    for (int i = 0; i < 20000; ++i) {
      double v = std::ldexp(mant(rng), ex(rng)) * (i % 2 ? -1 : 1);
      if (i % 5 == 0) v = float(v);  // also values a float32 division produces
      int best = -1;
      double best_err = 0;
      for (int c = 0; c < 256; ++c) {
        if (fp8_is_nan(uint8_t(c), f)) continue;
        const double d = fp8_decode(uint8_t(c), f);
        // Same sign as v; fnuz's one zero serves both signs.
        if (std::signbit(d) != std::signbit(v) && !(d == 0 && f == kFnuz)) continue;
        const double err = std::fabs(d - v);
        if (best < 0 || err < best_err || (err == best_err && (c & 1) == 0)) best = c, best_err = err;
      }
      EXPECT_EQ(fp8_encode(v, f), best) << to_string(f) << " value " << v;
    }
}

TEST(Fp8Reference, Names) {
  EXPECT_STREQ(to_string(kFn), "fp8_e4m3fn");
  EXPECT_STREQ(to_string(kFnuz), "fp8_e4m3fnuz");
}

}  // namespace
}  // namespace kvh::reference
