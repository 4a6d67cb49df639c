// cases/route_boundaries states the routing threshold and the targets' compute
// units independently of kernels/router (cases/ includes nothing of kernels/);
// this test holds the two statements together.
#include "route_boundaries.h"

#include <gtest/gtest.h>

#include "case_file.h"
#include "planted_routers.h"
#include "router/router.h"

namespace kvh {
namespace {

TEST(RouteBoundaries, TargetsAgreeWithTheRouter) {
  for (const auto& t : routing::target_names()) EXPECT_EQ(target_compute_units_of(t), routing::compute_units_of(t)) << t;
  // The loader and the filter take a target's names from the key table (cases/ includes nothing of kernels/).
  EXPECT_EQ(named_targets(), routing::target_names());
  EXPECT_EQ(case_key(KeyTable::Attention, "target").values, routing::target_names());
  EXPECT_EQ(case_key(KeyTable::Pipeline, "target").values, routing::target_names());
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

namespace kvh {
namespace {

// The committed suites state the route of every router case, and each stated
// route is what the policy's rule gives (the hand derivation in the case files
// agrees with kernels/router).
TEST(StatedRoutes, EveryRouterCaseOfTheCommittedSuitesStatesTheRouteItsPolicyGives) {
  for (const char* file : {"default.toml", "seed-pr.toml"}) {
    const auto cases = load_case_file(std::string(KVH_CASES_DIR) + "/" + file);
    int routed = 0;
    for (const Case& c : cases) {
      if (c.router_policy.empty()) continue;
      ++routed;
      ASSERT_FALSE(c.expect_routed_to.empty()) << file << ": " << c.id() << " states no route";
      routing::RouteInput in{c.batch_size, c.num_heads, c.head_size,
                             c.dtype == DType::F16 ? routing::CacheDtype::fp16 : routing::CacheDtype::bf16,
                             c.high_precision, *target_compute_units_of(c.target)};
      EXPECT_EQ(c.expect_routed_to, routing::route(c.router_policy, in).reader) << file << ": " << c.id();
    }
    EXPECT_GT(routed, 0) << file;
  }
}

// The check above can fail: under a planted rule whose threshold moved from > to >=, the
// default suite's boundary cases state routes the rule does not give.
TEST(StatedRoutes, APlantedThresholdDisagreesWithTheDefaultSuitesStatedRoutes) {
  testing::register_planted_routers();
  routing::substitute_policy("aiter-b4885d2", "planted_router_ge_threshold");
  int disagree = 0;
  for (const Case& c : load_case_file(std::string(KVH_CASES_DIR) + "/default.toml")) {
    if (c.router_policy.empty()) continue;
    routing::RouteInput in{c.batch_size, c.num_heads, c.head_size, routing::CacheDtype::bf16, c.high_precision,
                           *target_compute_units_of(c.target)};
    disagree += c.expect_routed_to != routing::route(c.router_policy, in).reader;
  }
  routing::substitute_policy("aiter-b4885d2", "aiter-b4885d2");
  EXPECT_GT(disagree, 0);
}

}  // namespace
}  // namespace kvh
