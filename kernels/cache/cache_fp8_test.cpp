// The kernels' fp8 codec (cache_fp8.h) against the independent reference codec
// (reference/fp8.h): every code decoded, and encoding over a sweep of float32
// values that includes every rounding boundary of both formats.
#include "cache/cache_fp8.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "../reference/fp8.h"
#include "../reference/int8.h"

namespace kvh::kernels {
namespace {

using reference::Fp8Format;

bool same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)); }

TEST(Fp8Kernel, DecodesEveryCodeAsTheReference) {
  for (bool fnuz : {false, true})
    for (int c = 0; c < 256; ++c)
      EXPECT_TRUE(same(fp8_to_float(uint8_t(c), fnuz), reference::fp8_decode(uint8_t(c), fnuz ? Fp8Format::E4M3FNUZ : Fp8Format::E4M3FN)))
          << (fnuz ? "fnuz" : "fn") << " code " << c;
}

// Floats around every midpoint between neighbouring codes (the midpoint, one
// float ulp below and above), the codes themselves, and a stride over all
// float32 bit patterns (NaN, Inf, subnormal floats, huge values included).
std::vector<float> sweep(bool fnuz) {
  std::vector<float> v;
  const Fp8Format f = fnuz ? Fp8Format::E4M3FNUZ : Fp8Format::E4M3FN;
  for (int c = 0; c < 127; ++c) {
    const double lo = reference::fp8_decode(uint8_t(c), f), hi = reference::fp8_decode(uint8_t(c + 1), f);
    if (std::isnan(lo) || std::isnan(hi)) continue;
    const float mid = float((lo + hi) / 2);
    for (float x : {float(lo), mid, std::nextafter(mid, 0.f), std::nextafter(mid, 1e9f)}) v.push_back(x), v.push_back(-x);
  }
  for (uint64_t u = 0; u <= 0xFFFFFFFFull; u += 0x10001ull) {
    float x;
    const uint32_t b = uint32_t(u);
    std::memcpy(&x, &b, 4);
    v.push_back(x);
  }
  return v;
}

TEST(Fp8Kernel, EncodesAsTheReference) {
  for (bool fnuz : {false, true}) {
    const Fp8Format f = fnuz ? Fp8Format::E4M3FNUZ : Fp8Format::E4M3FN;
    int bad = 0;
    for (float x : sweep(fnuz))
      if (float_to_fp8(x, fnuz) != reference::fp8_encode(double(x), f) && ++bad < 10)
        ADD_FAILURE() << (fnuz ? "fnuz" : "fn") << " value " << x << ": kernel " << int(float_to_fp8(x, fnuz))
                      << ", reference " << int(reference::fp8_encode(double(x), f));
    EXPECT_EQ(bad, 0);
  }
}

TEST(Fp8Kernel, ScaleLookupFollowsTheGranularity) {
  // [num_blocks=3, num_kv_heads=2, block_size=4] with distinct values; strides of a
  // non-contiguous view (padding after each head) so that a wrong stride shows.
  std::vector<float> t(3 * 2 * 5);
  for (size_t i = 0; i < t.size(); ++i) t[i] = 0.5f + float(i);
  const ScaleView tok{t.data(), {10, 5, 1}}, blk{t.data(), {2, 1, 0}}, head{t.data(), {3, 0, 0}};
  EXPECT_EQ(scale_at(KVH_SCALES_TOKEN, tok, -1.f, 2, 1, 3), t[2 * 10 + 5 + 3]);
  EXPECT_EQ(scale_at(KVH_SCALES_BLOCK, blk, -1.f, 2, 1, 3), t[2 * 2 + 1]);
  EXPECT_EQ(scale_at(KVH_SCALES_HEAD, head, -1.f, 2, 1, 3), t[3]);
  EXPECT_EQ(scale_at(KVH_SCALES_TENSOR, head, -1.f, 2, 1, 3), t[0]);
  EXPECT_EQ(scale_at(KVH_SCALES_NONE, head, -1.f, 2, 1, 3), -1.f);
  // SLOT [num_blocks, block_size]: the kv head does not move it.
  const ScaleView slot{t.data(), {5, 1, 0}};
  EXPECT_EQ(scale_at(KVH_SCALES_SLOT, slot, -1.f, 2, 1, 3), t[2 * 5 + 3]);
  EXPECT_EQ(scale_at(KVH_SCALES_SLOT, slot, -1.f, 2, 0, 3), t[2 * 5 + 3]);
}

// The kernels' int8 encoder (float_to_int8_sat) against reference/int8.h: every
// quarter and every tie in and beyond [-127, 127], the neighbours of each tie, Inf, NaN.
TEST(Int8Kernel, EncodesAsTheReference) {
  std::vector<float> qs = {INFINITY, -INFINITY, NAN, 1e30f, -1e30f, 0.f, -0.f};
  for (float q = -200.f; q <= 200.f; q += 0.25f) {
    qs.push_back(q);
    qs.push_back(std::nextafter(q, 1000.f));
    qs.push_back(std::nextafter(q, -1000.f));
  }
  for (float q : qs) {
    EXPECT_EQ(float_to_int8_sat(q), reference::int8_round_clamp(q)) << "q = " << q;
    EXPECT_NE(float_to_int8_sat(q), -128) << "q = " << q;
  }
  EXPECT_EQ(float_to_int8_sat(2.5f), 2);
  EXPECT_EQ(float_to_int8_sat(-3.5f), -4);
  EXPECT_EQ(CacheInt8::load(std::vector<uint8_t>{0x81}.data(), 0), -127.f);
}

}  // namespace
}  // namespace kvh::kernels
