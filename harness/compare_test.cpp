// kvharness compare: regressions, fixes, other changes and cases of one run only.
#include "compare.h"

#include <gtest/gtest.h>

namespace kvh::compare {
namespace {

using Row = std::tuple<std::string, std::string, std::string, std::string>;  // id, verdict, reason, writer

nlohmann::json run(std::vector<Row> cases, bool complete = true) {
  nlohmann::json j;
  j["schema"] = "kvharness.results/1";
  j["backend"] = "cpu";
  j["complete"] = complete;
  j["cases"] = nlohmann::json::array();
  for (auto& [id, verdict, reason, writer] : cases)
    j["cases"].push_back({{"id", id}, {"verdict", verdict},
                          {"reason", reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(reason)},
                          {"writer", writer}, {"detail", "d-" + id}});
  return j;
}

TEST(Compare, ClassifiesEveryDifference) {
  const auto a = run({{"same", "PASS", "", "w"},
                      {"regress", "PASS", "", "w"},
                      {"fix", "FAIL", "mismatch", "w"},
                      {"reason", "FAIL", "mismatch", "w"},
                      {"fixture", "FAIL", "mismatch", "fixture_shuffle_contiguous"},
                      {"gone", "PASS", "", "w"}});
  const auto b = run({{"same", "PASS", "", "w"},
                      {"regress", "CRASH", "crash", "w"},
                      {"fix", "PASS", "", "w"},
                      {"reason", "FAIL", "out_of_view_write", "w"},
                      {"fixture", "PASS", "", "fixture_shuffle_contiguous"},
                      {"new", "UNSUPPORTED", "unsupported_config", "w"}},
                     false);
  const Comparison c = compare(a, b);
  EXPECT_EQ(c.same, 1);
  EXPECT_EQ(c.count(Change::Regressed), 1);
  EXPECT_EQ(c.count(Change::Fixed), 2);
  EXPECT_EQ(c.count(Change::Changed), 1);
  EXPECT_EQ(c.count(Change::OnlyInA), 1);
  EXPECT_EQ(c.count(Change::OnlyInB), 1);
  EXPECT_EQ(c.a.pass, 3);
  EXPECT_FALSE(c.b.complete);
  const std::string text = format(c, "a.json", "b.json");
  EXPECT_NE(text.find("REGRESSED (A ok, B fails) (1):\n  regress: PASS -> CRASH crash"), std::string::npos) << text;
  EXPECT_NE(text.find("fixture [fixture]: FAIL mismatch -> PASS"), std::string::npos) << text;
  EXPECT_NE(text.find("reason: FAIL mismatch -> FAIL out_of_view_write"), std::string::npos) << text;
  EXPECT_NE(text.find("(INCOMPLETE)"), std::string::npos) << text;
}

TEST(Compare, IdenticalRunsHaveNoChanges) {
  const auto a = run({{"x", "PASS", "", "w"}, {"y", "FAIL", "mismatch", "w"}});
  EXPECT_TRUE(compare(a, a).changes.empty());
  EXPECT_EQ(compare(a, a).same, 2);
}

TEST(Compare, RejectsWhatIsNotAResultsFile) {
  EXPECT_THROW(compare(nlohmann::json::object(), run({})), std::runtime_error);
  EXPECT_THROW(load("/nonexistent/results.json"), std::runtime_error);
}

}  // namespace
}  // namespace kvh::compare
