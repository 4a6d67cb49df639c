#include "report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace kvh {
namespace {

RunReport sample() {
  RunReport r;
  r.backend = "cpu";
  r.complete = true;
  CaseResult a;
  a.c.model = "M";
  a.c.writer = "reshape_and_cache_shuffle";
  a.c.layout = Scheme::Interleaved;
  a.repro = "kvharness run x.toml --filter 'id=...'";
  CaseResult b = a;
  b.c.writer = "fixture_shuffle_contiguous";
  b.v.status = Status::Fail;
  b.v.reason = "mismatch";
  b.v.detail = "3 mismatched <elements>";
  b.v.max_abs_err = 2.5;
  r.results = {a, b};
  return r;
}

TEST(Report, ResultsJsonFollowsTheContract) {
  auto j = nlohmann::json::parse(results_json(sample()));
  EXPECT_EQ(j["schema"], "kvharness.results/1");
  EXPECT_EQ(j["complete"], true);
  ASSERT_EQ(j["cases"].size(), 2u);
  for (const char* k : {"id", "kind", "model", "layout", "head_size", "num_heads", "num_kv_heads", "batch_size",
                        "block_size", "dtype", "shuffle", "variant", "writer", "reader", "router_policy", "routed_to",
                        "verdict", "reason", "max_abs_err", "max_rel_err", "kernel_us", "repro"})
    EXPECT_TRUE(j["cases"][0].contains(k)) << k;
  EXPECT_EQ(j["cases"][0]["verdict"], "PASS");
  EXPECT_TRUE(j["cases"][0]["reason"].is_null());
  EXPECT_EQ(j["cases"][1]["verdict"], "FAIL");
  EXPECT_EQ(j["cases"][1]["max_abs_err"], 2.5);
  EXPECT_EQ(j["cases"][1]["shuffle"], 1);
}

TEST(Report, SummaryHasTheMatrixAndEveryFailureWithItsRepro) {
  const std::string md = summary_markdown(sample());
  EXPECT_NE(md.find("| variant | interleaved |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fixture_shuffle_contiguous | **FAIL** 1/1 |"), std::string::npos) << md;
  EXPECT_NE(md.find("| reshape_and_cache_shuffle | PASS |"), std::string::npos) << md;
  EXPECT_NE(md.find("reproduce: `kvharness run x.toml"), std::string::npos) << md;
}

TEST(Report, JunitEscapesAndCountsFailures) {
  const std::string x = junit_xml(sample());
  EXPECT_NE(x.find("failures=\"1\""), std::string::npos);
  EXPECT_NE(x.find("&lt;elements&gt;"), std::string::npos);
}

TEST(Report, ExpectedFailuresOfFixturesAreNotJunitFailures) {
  RunReport r = sample();
  r.results[1].fixture = true;
  const std::string x = junit_xml(r);
  EXPECT_NE(x.find("failures=\"0\""), std::string::npos) << x;
  EXPECT_NE(x.find("expected FAIL of a regression fixture"), std::string::npos) << x;
  const std::string md = summary_markdown(r);
  EXPECT_NE(md.find("**0 unexpected failure(s)**; 1 expected"), std::string::npos) << md;
  EXPECT_EQ(nlohmann::json::parse(results_json(r))["cases"][1]["fixture"], true);
}

}  // namespace
}  // namespace kvh
