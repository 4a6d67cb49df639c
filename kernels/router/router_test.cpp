// Routing policies: the aiter rules at their boundaries, the PR's two models,
// and the misroute the old policy makes (checked against the readers'
// declared capabilities in the registry).
#include "router/router.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "registry/registry.h"

namespace kvh::routing {
namespace {

const char* kOld = "aiter-v0.1.10.post3";
const char* kNew = "aiter-v0.1.12";

RouteInput step(int64_t num_seqs, int64_t num_heads, int64_t head_size, int64_t cus,
                CacheDtype dt = CacheDtype::bf16, int high_precision = 1) {
  return RouteInput{num_seqs, num_heads, head_size, dt, high_precision, cus};
}

// Planted bug (d): the large-workload test written with >=. Test-local: it
// exists to show that the boundary test below can tell the two apart.
std::string planted_route_ge(const RouteInput& in) {
  if (in.head_size != 128) return kRocmReader;
  if (in.high_precision == 2 || in.cache_dtype == CacheDtype::int8) return kAsmReader;
  return in.num_seqs * in.num_heads >= 2 * in.compute_units ? kAsmReader : kRocmReader;
}

TEST(Router, ThresholdIsStrictlyGreaterThanTwiceTheComputeUnits) {
  const int64_t cus = compute_units_of("MI355X");  // 256: threshold 512
  for (const char* policy : {kOld, kNew}) {
    EXPECT_EQ(route(policy, step(64, 8, 128, cus)).reader, kRocmReader) << policy;  // 512 == 2*CUs
    EXPECT_EQ(route(policy, step(513, 1, 128, cus)).reader, kAsmReader) << policy;  // 513 > 512
    EXPECT_EQ(route(policy, step(511, 1, 128, cus)).reader, kRocmReader) << policy;
  }
}

TEST(Router, PlantedGreaterOrEqualDiffersExactlyAtTheThreshold) {
  const int64_t cus = 256;
  const RouteInput at = step(64, 8, 128, cus);  // num_seqs*num_heads = 512 = 2*CUs
  EXPECT_EQ(route(kNew, at).reader, kRocmReader);
  EXPECT_EQ(planted_route_ge(at), kAsmReader);
  for (int64_t n : {63, 65})  // one step either side, both agree
    EXPECT_EQ(route(kNew, step(n, 8, 128, cus)).reader, planted_route_ge(step(n, 8, 128, cus))) << n;
}

TEST(Router, ReasonNamesTheRuleAndTheNumbers) {
  const RouteDecision d = route(kNew, step(256, 8, 128, 256));
  EXPECT_EQ(d.reader, kAsmReader);
  EXPECT_EQ(d.policy, "aiter-b4885d2");  // the canonical name of the alias asked for
  EXPECT_EQ(d.reason, "num_seqs*num_heads = 2048 > 2*CUs = 512 -> pa_fwd_asm");
  EXPECT_EQ(route(kNew, step(4, 8, 128, 256)).reason, "num_seqs*num_heads = 32 <= 2*CUs = 512 -> paged_attention_rocm");
  EXPECT_EQ(route(kNew, step(512, 4, 256, 256)).reason,
            "head_size = 256 != 128 (ASM kernel supports only 128) -> paged_attention_rocm");
  EXPECT_EQ(route(kOld, step(1, 1, 128, 256, CacheDtype::int8)).reason, "cache dtype int8 -> pa_fwd_asm");
  EXPECT_EQ(route(kOld, step(1, 1, 128, 256, CacheDtype::fp8, 2)).reason, "high_precision = 2 -> pa_fwd_asm");
}

TEST(Router, Int8AndHighPrecision2ForceAsmOnlyAt128UnderNewPolicy) {
  for (auto in : {step(1, 1, 256, 304, CacheDtype::int8), step(1, 1, 256, 304, CacheDtype::fp8, 2)}) {
    EXPECT_EQ(route(kOld, in).reader, kAsmReader);
    EXPECT_EQ(route(kNew, in).reader, kRocmReader);
    in.head_size = 128;
    EXPECT_EQ(route(kNew, in).reader, kAsmReader);
  }
  EXPECT_EQ(route(kNew, step(1, 1, 128, 304, CacheDtype::fp8, 0)).reader, kRocmReader);
}

// vLLM PR (shared/seed-pr-discussion.txt), MI355X, TP 8: Qwen3.5-397B has 32/8 = 4
// heads per rank and head_size 256; Qwen3-235B 64/8 = 8 heads and head_size 128.
TEST(Router, PrModelsAtBatch4And512) {
  const int64_t cus = compute_units_of("MI355X");
  const RouteInput qwen35_b4 = step(4, 4, 256, cus), qwen35_b512 = step(512, 4, 256, cus);
  EXPECT_EQ(route(kOld, qwen35_b4).reader, kRocmReader);
  EXPECT_EQ(route(kOld, qwen35_b512).reader, kAsmReader);  // the bug: 2048 > 512, head_size ignored
  EXPECT_EQ(route(kNew, qwen35_b512).reader, kRocmReader);
  EXPECT_EQ(route(kNew, step(512, 8, 128, cus)).reader, kAsmReader);  // Qwen3-235B still uses ASM
  EXPECT_EQ(route(kNew, step(4, 8, 128, cus)).reader, kRocmReader);
}

// The registered readers' declared capabilities: the new policy never sends a
// head size to a reader that does not declare it; the old one does.
TEST(Router, NewPolicyNeverMisroutesOldPolicyDoes) {
  Registry registry;
  auto supports = [&](const std::string& reader, int64_t head_size) {
    const Kernel* d = registry.find(reader);
    if (!d) return false;
    KernelUse use;
    use.head_size = head_size;
    use.cache_format = d->cache_format;
    return d->outside_capabilities(use).empty();
  };
  int old_misroutes = 0;
  for (int64_t hs : {64, 80, 96, 128, 192, 256})
    for (int64_t seqs : {1, 4, 64, 512})
      for (CacheDtype dt : {CacheDtype::bf16, CacheDtype::int8})
        for (int hp : {0, 1, 2}) {
          const RouteInput in = step(seqs, 8, hs, 304, dt, hp);
          EXPECT_TRUE(supports(route(kNew, in).reader, hs)) << route(kNew, in).reason;
          old_misroutes += !supports(route(kOld, in).reader, hs);
        }
  EXPECT_GT(old_misroutes, 0);
}

TEST(Router, UnknownPolicyListsTheKnownOnes) {
  try {
    route("aiter-v0.2", step(1, 1, 128, 304));
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("aiter-pre-b4885d2, aiter-v0.1.10.post3, aiter-b4885d2, aiter-v0.1.12"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(policy_names(), (std::vector<std::string>{"aiter-pre-b4885d2", kOld, "aiter-b4885d2", kNew}));
}

// Policies are named by the aiter commit of their rule; release tags are aliases that route alike.
TEST(Router, CommitNamesAndTagAliasesRouteAlike) {
  EXPECT_EQ(canonical_policy(kNew), "aiter-b4885d2");
  EXPECT_EQ(canonical_policy(kOld), "aiter-pre-b4885d2");
  EXPECT_EQ(canonical_policy("aiter-v0.2"), "");
  EXPECT_TRUE(is_regression_fixture("aiter-pre-b4885d2"));
  EXPECT_TRUE(is_regression_fixture(kOld));
  EXPECT_FALSE(is_regression_fixture("aiter-b4885d2"));
  const RouteInput big = step(512, 4, 256, 256);
  EXPECT_EQ(route("aiter-b4885d2", big).reader, route(kNew, big).reader);
  EXPECT_EQ(route("aiter-pre-b4885d2", big).reader, kAsmReader);
  EXPECT_EQ(route(kNew, big).policy, "aiter-b4885d2");
}

TEST(Router, RejectsImpossibleInputs) {
  EXPECT_THROW(route(kNew, step(1, 0, 128, 304)), std::invalid_argument);
  EXPECT_THROW(route(kNew, step(1, 1, 128, 0)), std::invalid_argument);
  EXPECT_THROW(route(kNew, step(-1, 1, 128, 304)), std::invalid_argument);
  EXPECT_THROW(route(kNew, step(1, 1, 128, 304, CacheDtype::bf16, 3)), std::invalid_argument);
}

TEST(Router, NamedTargets) {
  EXPECT_EQ(compute_units_of("MI300X"), 304);
  EXPECT_EQ(compute_units_of("MI325X"), 304);
  EXPECT_EQ(compute_units_of("MI355X"), 256);
  EXPECT_EQ(compute_units_of("MI250X"), 110);
  EXPECT_EQ(compute_units_of("MI210"), 104);
  try {
    compute_units_of("MI100");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("MI210, MI250X, MI300X, MI325X, MI355X"), std::string::npos) << e.what();
  }
}

TEST(Router, CacheDtypeNames) {
  EXPECT_EQ(parse_cache_dtype("int8"), CacheDtype::int8);
  EXPECT_EQ(parse_cache_dtype("fp8"), CacheDtype::fp8);
  EXPECT_STREQ(to_string(CacheDtype::bf16), "bf16");
  EXPECT_THROW(parse_cache_dtype("e4m3"), std::invalid_argument);
}

}  // namespace
}  // namespace kvh::routing
