// The stated route (Case::expect_routed_to) and the substitutions that the
// mutation test runs (Registry::replace, routing::substitute_policy): a
// planted router whose threshold moved from > to >= is a misroute on the
// threshold even though the kernel it picks could run the case.
#include <gtest/gtest.h>

#include "case/attention_case.h"
#include "check/expectations.h"
#include "planted_routers.h"
#include "router/router.h"

extern "C" const kvh_kernel_desc* kvh_planted_readers(int32_t* count);

namespace kvh {
namespace {

// 4 heads, cus=8: threshold 16. Batch 4 sits on it: 4 * 4 = 16, not above -> paged_attention_rocm.
Case on_threshold(const std::string& expect) {
  Case c;
  c.kind = CaseKind::Attention;
  c.model = "test";
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_size = 128;  // pa_fwd_asm can run it: only the stated route can tell
  c.layout = Scheme::KvFirst;
  c.block_size = 16;
  c.batch_size = 4;
  c.context_len_min = 1;
  c.context_len_max = 300;
  c.dtype = DType::BF16;
  c.router_policy = "aiter-v0.1.12";
  c.target = "cus=8";
  c.expect_routed_to = expect;
  return c;
}

// The planted policies, once per process; substitutions are undone by each test.
struct Planted : ::testing::Test {
  static void SetUpTestSuite() {
    static bool done = false;
    if (!done) testing::register_planted_routers(), done = true;
  }
  void TearDown() override { routing::substitute_policy("aiter-b4885d2", "aiter-b4885d2"); }
};

TEST_F(Planted, TheStatedRoutePassesWithTheRealPolicy) {
  const Registry reg;
  const CaseResult r = run_decode_case(on_threshold("paged_attention_rocm"), reg, DecodeOptions{});
  EXPECT_EQ(r.v.status, Status::Pass) << r.v.detail;
  EXPECT_EQ(r.routed_to, "paged_attention_rocm");
}

TEST_F(Planted, AMovedThresholdIsAMisrouteEvenToACapableKernel) {
  const Registry reg;
  routing::substitute_policy("aiter-v0.1.12", "planted_router_ge_threshold");
  const CaseResult r = run_decode_case(on_threshold("paged_attention_rocm"), reg, DecodeOptions{});
  EXPECT_EQ(r.routed_to, "pa_fwd_asm");
  EXPECT_EQ(r.v.status, Status::Fail);
  EXPECT_EQ(r.v.component, "router");
  EXPECT_EQ(r.v.reason, "misroute");
  EXPECT_NE(r.v.detail.find("the case file expects paged_attention_rocm"), std::string::npos) << r.v.detail;
  // Without a stated route the same planted policy goes unseen: pa_fwd_asm computes head_size 128 right.
  const CaseResult unstated = run_decode_case(on_threshold(""), reg, DecodeOptions{});
  EXPECT_EQ(unstated.v.status, Status::Pass) << unstated.v.detail;
  // One batch either side the two rules agree.
  for (int64_t batch : {3, 5}) {
    Case c = on_threshold(batch == 3 ? "paged_attention_rocm" : "pa_fwd_asm");
    c.batch_size = batch;
    EXPECT_EQ(run_decode_case(c, reg, DecodeOptions{}).v.status, Status::Pass) << batch;
  }
}

TEST_F(Planted, SubstitutionKeepsThePolicysNameAndFixtureStatus) {
  routing::substitute_policy("aiter-b4885d2", "aiter-pre-b4885d2");
  const routing::RouteDecision d =
      routing::route("aiter-v0.1.12", routing::RouteInput{1, 1, 256, routing::CacheDtype::bf16, 2, 8});
  EXPECT_EQ(d.reader, routing::kAsmReader);  // the old rule: high_precision 2 before any head-size test
  EXPECT_EQ(d.policy, "aiter-b4885d2");
  EXPECT_FALSE(routing::is_regression_fixture("aiter-v0.1.12"));
  EXPECT_THROW(routing::substitute_policy("aiter-b4885d2", "nope"), std::invalid_argument);
  EXPECT_THROW(routing::add_policy("aiter-v0.1.12", testing::planted_routers()[0].rule), std::invalid_argument);
}

TEST(ReplaceKernel, APlantedReaderRunsUnderTheRealNameAndIsJudgedAsIt) {
  Registry reg;
  reg.add_provider(kvh_planted_readers, "planted");
  reg.replace("paged_attention_rocm", "planted_gqa_modulo");
  const Kernel* k = reg.find("paged_attention_rocm");
  ASSERT_NE(k, nullptr);
  EXPECT_FALSE(k->fixture) << "a stand-in for a production kernel is not exempt";
  EXPECT_NE(k->description.find("planted_gqa_modulo in place of paged_attention_rocm"), std::string::npos);
  Case c = on_threshold("");
  c.router_policy.clear();
  c.target.clear();
  c.reader = "paged_attention_rocm";
  c.num_heads = 8;  // group 4 over 2 kv heads: h % 2 != h / 4
  const CaseResult r = run_decode_case(c, reg, DecodeOptions{});
  EXPECT_EQ(r.v.status, Status::Fail) << r.v.detail;
  EXPECT_EQ(r.v.component, "reader");
  EXPECT_EQ(r.v.reason, "mismatch");
}

// A fixture's expected failures cover the fixture only: a production substitute for it, a production
// router that sends a case to it, or a production rule in place of a fixture policy fail unexpectedly.
TEST(ReplaceKernel, AProductionSubstituteForAFixtureIsNoFixture) {
  Registry reg;
  reg.add_provider(kvh_planted_readers, "planted");
  reg.replace("fixture_shuffle_contiguous", "reshape_and_cache_shuffle");
  EXPECT_FALSE(reg.find("fixture_shuffle_contiguous")->fixture);
  Registry both;
  both.replace("fixture_shuffle_contiguous", "fixture_shuffle_contiguous");
  EXPECT_TRUE(both.find("fixture_shuffle_contiguous")->fixture) << "a fixture in place of a fixture stays one";
}

TEST_F(Planted, AProductionRuleInPlaceOfAFixturePolicyIsNoFixture) {
  EXPECT_TRUE(routing::is_regression_fixture("aiter-pre-b4885d2"));
  routing::substitute_policy("aiter-pre-b4885d2", "aiter-b4885d2");
  EXPECT_FALSE(routing::is_regression_fixture("aiter-pre-b4885d2"));
  routing::substitute_policy("aiter-pre-b4885d2", "aiter-pre-b4885d2");
  EXPECT_TRUE(routing::is_regression_fixture("aiter-pre-b4885d2"));
}

TEST(FixtureExpectations, AProductionRouterThatPicksAFixtureReaderFailsUnexpectedly) {
  const Registry reg;
  ASSERT_TRUE(reg.find("fixture_mask_by_zero") && reg.find("fixture_mask_by_zero")->fixture);
  auto judged = [&](const std::string& router, const std::string& reader) {
    CaseResult r;
    r.c = on_threshold("");
    r.c.router_policy = router;
    r.c.reader = reader;
    r.routed_to = "fixture_mask_by_zero";
    add_cause(r.v, component::kReader, reason::kMismatch, "wrong output");
    judge_expectations(r, reg, {});
    return r.expected;
  };
  EXPECT_TRUE(judged("", "fixture_mask_by_zero")) << "named directly: the fixture's own expected failure";
  EXPECT_FALSE(judged("aiter-v0.1.12", "")) << "a production router's pick is the router's failure";
  EXPECT_TRUE(judged("aiter-pre-b4885d2", "")) << "a fixture router's pick may be a fixture's expected failure";
}

TEST(ReplaceKernel, UnknownNamesAndMismatchedRolesOrFormatsAreErrors) {
  Registry reg;
  reg.add_provider(kvh_planted_readers, "planted");
  EXPECT_THROW(reg.replace("paged_attention_rocm", "nope"), std::invalid_argument);
  EXPECT_THROW(reg.replace("nope", "planted_gqa_modulo"), std::invalid_argument);
  try {
    reg.replace("paged_attention_v1", "planted_gqa_modulo");  // a shuffle reader for a pa_v1 one
    ADD_FAILURE();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("planted_gqa_modulo is a shuffle reader, paged_attention_v1 a pa_v1 reader"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(reg.replace("reshape_and_cache_shuffle", "paged_attention_rocm"), std::invalid_argument);
}

}  // namespace
}  // namespace kvh
