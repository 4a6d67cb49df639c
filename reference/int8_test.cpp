#include "int8.h"

#include <gtest/gtest.h>

#include <cmath>

namespace kvh::reference {
namespace {

// Ties go to the even integer (vLLM's nearbyint, FE_TONEAREST), not away from zero.
TEST(Int8Codec, TiesRoundToEven) {
  EXPECT_EQ(int8_round_clamp(0.5f), 0);
  EXPECT_EQ(int8_round_clamp(1.5f), 2);
  EXPECT_EQ(int8_round_clamp(2.5f), 2);
  EXPECT_EQ(int8_round_clamp(-2.5f), -2);
  EXPECT_EQ(int8_round_clamp(-3.5f), -4);
  EXPECT_EQ(int8_round_clamp(126.5f), 126);
  EXPECT_EQ(int8_round_clamp(125.5f), 126);
  EXPECT_EQ(int8_round_clamp(std::nextafter(2.5f, 3.f)), 3);
  EXPECT_EQ(int8_round_clamp(std::nextafter(2.5f, 2.f)), 2);
  EXPECT_EQ(int8_round_clamp(0.49999997f), 0);
}

// Matches std::nearbyint (round to nearest even) on a sweep of quarter steps, inside the range.
TEST(Int8Codec, MatchesNearbyintInRange) {
  for (float q = -126.75f; q <= 126.75f; q += 0.25f)
    EXPECT_EQ(int8_round_clamp(q), int(std::nearbyint(q))) << "q = " << q;
}

// Saturation at +-127: -128 is never produced, Inf saturates, NaN gives 0.
TEST(Int8Codec, SaturatesSymmetricallyAndNeverWritesMinus128) {
  EXPECT_EQ(int8_round_clamp(127.4f), 127);
  EXPECT_EQ(int8_round_clamp(127.5f), 127);
  EXPECT_EQ(int8_round_clamp(1e30f), 127);
  EXPECT_EQ(int8_round_clamp(INFINITY), 127);
  EXPECT_EQ(int8_round_clamp(-127.5f), -127);
  EXPECT_EQ(int8_round_clamp(-128.f), -127);
  EXPECT_EQ(int8_round_clamp(-1e30f), -127);
  EXPECT_EQ(int8_round_clamp(-INFINITY), -127);
  EXPECT_EQ(int8_round_clamp(NAN), 0);
  for (float q = -300.f; q <= 300.f; q += 0.125f) EXPECT_NE(int8_round_clamp(q), -128) << q;
}

// encode divides in float32, decode multiplies exactly.
TEST(Int8Codec, EncodeDividesInFloatDecodeIsExact) {
  const float scale = 0.0123f;
  EXPECT_EQ(int8_encode(1.0f, scale), int8_round_clamp(1.0f / scale));
  EXPECT_EQ(int8_encode(5.0f, scale), 127);  // an outlier saturates
  EXPECT_EQ(int8_decode(int8_t(-127), scale), -127.0 * double(scale));
  EXPECT_EQ(int8_decode(int8_t(3), 0.25f), 0.75);
}

}  // namespace
}  // namespace kvh::reference
