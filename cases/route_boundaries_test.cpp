// cases/route_boundaries states the routing threshold and the targets' compute
// units independently of kernels/router (cases/ includes nothing of kernels/);
// this test holds the two statements together.
#include "route_boundaries.h"

#include <gtest/gtest.h>

#include "router.h"

namespace kvh {
namespace {

TEST(RouteBoundaries, TargetsAgreeWithTheRouter) {
  for (const auto& t : routing::target_names()) EXPECT_EQ(target_compute_units_of(t), routing::compute_units_of(t)) << t;
}

// For every policy, every head count and target: the decision is the same on
// both sides of each gap except across the threshold, where it flips once
// (head_size 128, so that the fixed policy's head-size test does not decide).
TEST(RouteBoundaries, TheDecisionFlipsExactlyBetweenAtAndAbove) {
  for (const auto& policy : routing::policy_names())
    for (int64_t heads : {1, 3, 4, 8, 16, 64})
      for (const auto& target : routing::target_names()) {
        const int64_t cus = routing::compute_units_of(target);
        const auto b = route_boundary_batches(heads, cus);
        auto reader = [&](int64_t n) {
          return routing::route(policy, routing::RouteInput{n, heads, 128, routing::CacheDtype::bf16, 1, cus}).reader;
        };
        ASSERT_EQ(b.size(), 3u);
        EXPECT_EQ(reader(b[0]), routing::kRocmReader);
        EXPECT_EQ(reader(b[1]), routing::kRocmReader) << policy << " " << heads << " " << target;
        EXPECT_EQ(reader(b[2]), routing::kAsmReader) << policy << " " << heads << " " << target;
      }
}

}  // namespace
}  // namespace kvh
