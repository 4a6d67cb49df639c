// kvharness compare: outcome classes, what gates under each --fail-on, the
// compare filter, kernel_us ratios, interrupted cases, and input errors.
#include "report/compare.h"

#include "filter.h"
#include "report/report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace kvh::compare {
namespace {

using json = nlohmann::json;

/// One case entry as results.json writes it (only the fields compare reads).
json entry(const std::string& id, const std::string& verdict, const std::string& reason = "",
           std::optional<double> kernel_us = std::nullopt) {
  return {{"id", id},
          {"verdict", verdict},
          {"reason", reason.empty() ? json(nullptr) : json(reason)},
          {"writer", "w"},
          {"head_size", 128},
          {"layout", "kv_first"},
          {"shuffle", 0},
          {"detail", "d-" + id},
          {"kernel_us", kernel_us ? json(*kernel_us) : json(nullptr)}};
}

json expected(json e, bool yes = true) {
  e["expected_failure"] = yes;
  return e;
}

json run(std::vector<json> cases, bool complete = true) {
  json j;
  j["schema"] = "kvharness.results/1";
  j["backend"] = "cpu";
  j["device"] = "host";
  j["wave_size"] = 64;
  j["filter"] = "";
  j["complete"] = complete;
  j["cases"] = json::array();
  for (auto& c : cases) j["cases"].push_back(std::move(c));
  return j;
}

Options fail_on(FailOn f) {
  Options o;
  o.fail_on = f;
  return o;
}

int exit_for(const json& a, const json& b, Options o) { return exit_code(compare(a, b, o), o); }

TEST(Compare, ClassifiesEveryDifference) {
  json fixture_a = entry("fixture", "FAIL", "mismatch"), fixture_b = entry("fixture", "PASS");
  fixture_a["writer"] = fixture_b["writer"] = "fixture_shuffle_contiguous";
  const auto a = run({entry("same", "PASS"), entry("regress", "PASS"), entry("fix", "FAIL", "mismatch"),
                      entry("reason", "FAIL", "mismatch"), fixture_a, entry("gone", "PASS")});
  const auto b = run({entry("same", "PASS"), entry("regress", "CRASH", "crash"), entry("fix", "PASS"),
                      entry("reason", "FAIL", "out_of_view_write"), fixture_b,
                      entry("new", "UNSUPPORTED", "unsupported_config")},
                     false);
  const Comparison c = compare(a, b);
  EXPECT_EQ(c.same, 1);
  EXPECT_EQ(c.count(Change::Regressed), 1);
  EXPECT_EQ(c.count(Change::Fixed), 2);
  EXPECT_EQ(c.count(Change::Changed), 1);
  EXPECT_EQ(c.count(Change::OnlyInA), 1);
  EXPECT_EQ(c.count(Change::OnlyInB), 1);
  EXPECT_EQ(c.a.pass, 3);
  EXPECT_EQ(c.a.fail, 3);
  EXPECT_FALSE(c.b.complete);
  const std::string text = format(c, "a.json", "b.json");
  EXPECT_NE(text.find("REGRESSED (good in A, fails in B) (1):\n  regress: PASS -> CRASH crash"), std::string::npos)
      << text;
  EXPECT_NE(text.find("fixture [fixture]: FAIL mismatch -> PASS"), std::string::npos) << text;
  EXPECT_NE(text.find("reason: FAIL mismatch -> FAIL out_of_view_write"), std::string::npos) << text;
  EXPECT_NE(text.find("NO (INCOMPLETE)"), std::string::npos) << text;
  EXPECT_NE(text.find("gate (--fail-on regressions): 1 gating difference, exit 1 (5 other differences not gating)"),
            std::string::npos)
      << text;
}

TEST(Compare, IdenticalRunsHaveNoChanges) {
  const auto a = run({entry("x", "PASS"), entry("y", "FAIL", "mismatch")});
  EXPECT_TRUE(compare(a, a).changes.empty());
  EXPECT_EQ(compare(a, a).same, 2);
  for (FailOn f : {FailOn::Regressions, FailOn::Changes, FailOn::Any})
    EXPECT_EQ(exit_for(a, a, fail_on(f)), kExitNoGatingDifference);
}

TEST(Compare, CasesOfOneRunOnlyAreListedButFailOnlyWithFailOnAny) {
  // B is a PR that adds a case and drops one: intersection semantics by default.
  const auto a = run({entry("x", "PASS"), entry("dropped", "PASS")});
  const auto b = run({entry("x", "PASS"), entry("added", "FAIL", "mismatch")});
  EXPECT_EQ(exit_for(a, b, fail_on(FailOn::Regressions)), kExitNoGatingDifference);
  EXPECT_EQ(exit_for(a, b, fail_on(FailOn::Changes)), kExitNoGatingDifference);
  EXPECT_EQ(exit_for(a, b, fail_on(FailOn::Any)), kExitGatingDifference);
  const std::string text = format(compare(a, b), "a", "b");
  EXPECT_NE(text.find("ONLY IN A (1):\n  dropped: PASS -> -"), std::string::npos) << text;
  EXPECT_NE(text.find("ONLY IN B (1):\n  added: - -> FAIL mismatch"), std::string::npos) << text;
}

TEST(Compare, ARegressionFailsTheDefaultGate) {
  const auto a = run({entry("pass", "PASS"), entry("unsup", "UNSUPPORTED", "unsupported_config"),
                      expected(entry("xfail", "FAIL", "misroute")),
                      expected(entry("dropped_expectation", "FAIL", "mismatch"))});
  for (const auto& [id, b_entry] : std::vector<std::pair<std::string, json>>{
           {"pass", entry("pass", "FAIL", "mismatch")},
           {"unsup", entry("unsup", "CRASH", "crash")},
           {"xfail", entry("xfail", "CRASH", "crash")},
           // the same FAIL, no longer declared expected: now it counts
           {"dropped_expectation", expected(entry("dropped_expectation", "FAIL", "mismatch"), false)}}) {
    json b = a;
    for (auto& e : b["cases"])
      if (e["id"] == id) e = b_entry;
    const Comparison c = compare(a, b);
    EXPECT_EQ(c.count(Change::Regressed), 1) << b_entry.dump();
    EXPECT_EQ(exit_code(c, Options{}), kExitGatingDifference) << b_entry.dump();
  }
  // Already failing in A and failing otherwise in B: a change, not a regression.
  const auto fa = run({entry("f", "FAIL", "mismatch")}), fb = run({entry("f", "CRASH", "crash")});
  EXPECT_EQ(exit_for(fa, fb, Options{}), kExitNoGatingDifference);
  EXPECT_EQ(exit_for(fa, fb, fail_on(FailOn::Changes)), kExitGatingDifference);
}

TEST(Compare, FailOnChangesFailsOnAReasonChange) {
  const auto a = run({entry("x", "FAIL", "mismatch")});
  const auto b = run({entry("x", "FAIL", "out_of_view_write")});
  EXPECT_EQ(compare(a, b).count(Change::Changed), 1);
  EXPECT_EQ(exit_for(a, b, fail_on(FailOn::Regressions)), kExitNoGatingDifference);
  EXPECT_EQ(exit_for(a, b, fail_on(FailOn::Changes)), kExitGatingDifference);
  EXPECT_EQ(exit_for(a, b, fail_on(FailOn::Any)), kExitGatingDifference);
  // A fix is a change too.
  EXPECT_EQ(exit_for(a, run({entry("x", "PASS")}), fail_on(FailOn::Changes)), kExitGatingDifference);
  EXPECT_EQ(exit_for(a, run({entry("x", "PASS")}), fail_on(FailOn::Regressions)), kExitNoGatingDifference);
}

TEST(Compare, FilterRestrictsBothRuns) {
  json big_a = entry("big", "PASS"), big_b = entry("big", "FAIL", "mismatch");
  big_a["head_size"] = big_b["head_size"] = 256;
  const auto a = run({entry("small", "PASS"), big_a, entry("only_a", "PASS")});
  const auto b = run({entry("small", "PASS"), big_b});
  Options o;
  EXPECT_EQ(exit_for(a, b, o), kExitGatingDifference);
  o.filter = "head_size=128";
  Comparison c = compare(a, b, o);
  EXPECT_EQ(exit_code(c, o), kExitNoGatingDifference) << "the regression is outside the filter";
  EXPECT_EQ(c.same, 1);
  EXPECT_EQ(c.count(Change::OnlyInA), 1);
  EXPECT_EQ(c.a.cases, 2);
  EXPECT_EQ(c.a.total, 3);
  EXPECT_NE(format(c, "a", "b", o).find("2 of 3 cases kept"), std::string::npos);
  o.filter = "head_size=256,layout=kv_first|interleaved";
  c = compare(a, b, o);
  EXPECT_EQ(exit_code(c, o), kExitGatingDifference);
  EXPECT_EQ(c.same, 0);
  EXPECT_TRUE(c.changes.size() == 1 && c.changes[0].id == "big");
  o.filter = "shuffle=1";  // json 0 reads as "0", as case_field spells it
  EXPECT_EQ(compare(a, b, o).a.cases, 0);
  o.filter = "layout=kv-first";
  EXPECT_THROW(compare(a, b, o), FilterError) << "a typo is an error, as in run";
}

TEST(Compare, FilterFieldsOfAResultsEntryAreTheCaseFields) {
  // Every filter key must read the same from results.json as from the Case
  // run filtered, or `compare --filter X` would select other cases than `run --filter X`.
  CaseResult cr;
  cr.c.kind = CaseKind::Pipeline;
  cr.c.model = "Qwen3.5-397B-A17B";
  cr.c.tp = 4;
  cr.c.num_heads = 8;
  cr.c.num_kv_heads = 1;
  cr.c.head_size = 256;
  cr.c.layout = Scheme::Interleaved;
  cr.c.dtype = DType::BF16;
  cr.c.batch_size = 512;
  cr.c.writer = "reshape_and_cache_shuffle";
  cr.c.router_policy = "aiter-v0.1.12";
  cr.c.context_len_min = 1;
  cr.c.context_len_max = 4096;
  cr.c.variant_name = "after fix (shuffle=1)";
  cr.c.seed = 18446744073709551615ull;
  RunReport r;
  r.results = {cr};
  const json doc = json::parse(results_json(r));
  const auto fields = filter_fields(doc["cases"][0]);
  for (const auto& k : Filter::keys()) {
    const auto it = fields.find(k);
    EXPECT_EQ(it == fields.end() ? "" : it->second, case_field(cr.c, k)) << k;
  }
}

// The ragged-query filter keys too (max_query_len is derived: a mixed batch reaches 8), so that
// `compare --filter max_query_len=8,causal=0` selects what `run` would.
TEST(Compare, RaggedFilterFieldsOfAResultsEntryAreTheCaseFields) {
  CaseResult cr;
  cr.c.kind = CaseKind::Attention;
  cr.c.model = "Qwen3-235B-A22B";
  cr.c.reader = "paged_attention_rocm";
  cr.c.batch_size = 8;
  cr.c.context_len_min = 1;
  cr.c.context_len_max = 4096;
  cr.c.query_len_min = 2;
  cr.c.query_len_max = 4;
  cr.c.query_mixed = true;
  cr.c.causal = false;
  cr.query_lens = {1, 2, 8, 2, 4, 3, 1, 7};
  CaseResult write;
  write.c.model = "M";
  write.c.writer = "reshape_and_cache";
  for (const CaseResult& c : {cr, write}) {
    RunReport r;
    r.results = {c};
    const json doc = json::parse(results_json(r));
    const auto fields = filter_fields(doc["cases"][0]);
    for (const auto& k : Filter::keys()) {
      const auto it = fields.find(k);
      EXPECT_EQ(it == fields.end() ? "" : it->second, case_field(c.c, k)) << c.c.id() << ": " << k;
    }
    EXPECT_EQ(Filter("max_query_len=8,causal=0").matches(fields), Filter("max_query_len=8,causal=0").matches(c.c));
  }
  RunReport r;
  r.results = {cr};
  EXPECT_TRUE(Filter("max_query_len=8,causal=0").matches(filter_fields(json::parse(results_json(r))["cases"][0])));
}

TEST(Compare, KernelUsThresholdFlagsATwiceSlowerCase) {
  const auto a = run({entry("slow", "PASS", "", 10.0), entry("steady", "PASS", "", 10.0),
                      entry("faster", "PASS", "", 10.0), entry("failing", "FAIL", "mismatch", 1.0)});
  const auto b = run({entry("slow", "PASS", "", 20.0), entry("steady", "PASS", "", 10.5),
                      entry("faster", "PASS", "", 5.0), entry("failing", "FAIL", "mismatch", 9.0)});
  Options o;
  Comparison c = compare(a, b, o);
  EXPECT_EQ(exit_code(c, o), kExitNoGatingDifference) << "no threshold: ratios are information";
  ASSERT_EQ(c.timing.ratios.size(), 3u) << "only cases passing in both";
  EXPECT_EQ(c.timing.ratios[0].first, "slow");
  EXPECT_DOUBLE_EQ(c.timing.ratios[0].second, 2.0);
  EXPECT_DOUBLE_EQ(c.timing.median, 1.05);
  o.kernel_us_threshold = 1.2;
  c = compare(a, b, o);
  ASSERT_EQ(c.count(Change::Slower), 1);
  EXPECT_EQ(c.changes[0].id, "slow");
  EXPECT_EQ(exit_code(c, o), kExitGatingDifference);
  const std::string text = format(c, "a", "b", o);
  EXPECT_NE(text.find("SLOWER (kernel_us B/A > 1.2) (1):\n  slow: 10.00 us -> 20.00 us (2.00x)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("median 1.050x"), std::string::npos) << text;
  o.kernel_us_threshold = 2.5;
  EXPECT_EQ(exit_for(a, b, o), kExitNoGatingDifference);
}

TEST(Compare, InterruptedCasesAreAbsentNotRegressions) {
  const auto a = run({entry("x", "PASS"), entry("y", "PASS"), entry("z", "INTERRUPTED")});
  const auto b = run({entry("x", "PASS"), entry("y", "INTERRUPTED"), entry("z", "FAIL", "mismatch")}, false);
  const Comparison c = compare(a, b);
  EXPECT_EQ(c.count(Change::Interrupted), 2);
  EXPECT_EQ(c.count(Change::Regressed), 0);
  EXPECT_EQ(c.b.interrupted, 1);
  EXPECT_EQ(exit_for(a, b, fail_on(FailOn::Regressions)), kExitNoGatingDifference);
  EXPECT_EQ(exit_for(a, b, fail_on(FailOn::Changes)), kExitNoGatingDifference);
  EXPECT_EQ(exit_for(a, b, fail_on(FailOn::Any)), kExitGatingDifference);
  const std::string text = format(c, "a", "b");
  EXPECT_NE(text.find("INTERRUPTED (no verdict in one run: counted as absent) (2):\n  y: PASS -> INTERRUPTED"),
            std::string::npos)
      << text;
}

TEST(Compare, XpassInBIsARegressionAndAnExpectedFailInBothIsSame) {
  const auto a = run({expected(entry("fx", "FAIL", "mismatch")), expected(entry("kept", "FAIL", "misroute"))});
  const auto b = run({entry("fx", "XPASS"), expected(entry("kept", "FAIL", "misroute"))});
  const Comparison c = compare(a, b);
  EXPECT_EQ(c.count(Change::Regressed), 1);
  EXPECT_EQ(c.same, 1);
  EXPECT_EQ(c.a.xfail, 2);
  EXPECT_EQ(c.b.xpass, 1);
  EXPECT_EQ(exit_code(c, Options{}), kExitGatingDifference);
  EXPECT_NE(format(c, "a", "b").find("fx: XFAIL mismatch -> XPASS"), std::string::npos);
  // Files written before "expected_failure" mark an expected FAIL with "fixture": the same outcome.
  json legacy = entry("kept", "FAIL", "misroute");
  legacy["fixture"] = true;
  EXPECT_EQ(compare(run({legacy}), b, fail_on(FailOn::Any)).gating(FailOn::Any), 1) << "only fx, in B only";
  EXPECT_EQ(compare(run({legacy}), run({b["cases"][1]})).same, 1);
}

TEST(Compare, HeaderShowsBothRunsAndDashesForAbsentFields) {
  auto a = run({entry("x", "PASS")});
  auto b = a;
  b["seed"] = 7;
  b["tool_version"] = "v0.4-3-gabcdef";
  b["label"] = "rocm-6.4-image";
  b["filter"] = "head_size=128";
  const std::string text = format(compare(a, b), "a.json", "b.json");
  EXPECT_NE(text.find("A a.json\n  backend cpu | device host | wave size 64 | seed - | tool - | label -\n"
                      "  run filter - | complete yes | 1 cases: 1 PASS, 0 FAIL"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("B b.json\n  backend cpu | device host | wave size 64 | seed 7 | tool v0.4-3-gabcdef | "
                      "label rocm-6.4-image\n  run filter head_size=128 |"),
            std::string::npos)
      << text;
}

// A verdict, reason or component this version does not know is an input error (exit 2),
// named as results.json's reader names it (issue: `XFAIL mismatch -> XFAIL bogus` was shown);
// an unknown verdict was a regression (exit 1) before: neither is green.
TEST(Compare, RefusesVerdictsReasonsAndComponentsItDoesNotKnow) {
  const auto refusal = [](const json& bad) {
    for (bool b_is_bad : {false, true}) {
      const json good = run({entry("x", "FAIL", "mismatch")});
      try {
        b_is_bad ? compare(good, run({bad})) : compare(run({bad}), good);
        ADD_FAILURE() << "compared " << bad.dump();
      } catch (const InputError& e) {
        const std::string what = e.what();
        EXPECT_EQ(what.rfind(b_is_bad ? "B: cases[0]: case x: " : "A: cases[0]: case x: ", 0), 0u) << what;
        if (b_is_bad) return what;
      }
    }
    return std::string();
  };
  std::string why = refusal(entry("x", "MAYBE"));
  EXPECT_NE(why.find("field \"verdict\": verdict 'MAYBE' is not one this kvharness knows"), std::string::npos)
      << why;
  why = refusal(expected(entry("x", "FAIL", "bogus")));
  EXPECT_NE(why.find("field \"reason\": 'bogus'"), std::string::npos) << why;
  EXPECT_NE(why.find("out_of_view_write"), std::string::npos) << why << ": the reasons it knows";
  json e = entry("x", "FAIL", "mismatch");
  e["component"] = "gpu";
  why = refusal(e);
  EXPECT_NE(why.find("field \"component\": 'gpu'"), std::string::npos) << why;
  e = entry("x", "FAIL", "mismatch");
  e["causes"] = json::array({json{{"component", "writer"}, {"reason", "bogus"}, {"detail", "d"}, {"crash", false},
                                  {"expected_by", nullptr}}});
  why = refusal(e);
  EXPECT_NE(why.find("field \"causes[0].reason\": 'bogus'"), std::string::npos) << why;
}

class CompareFiles : public ::testing::Test {
 protected:
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kvh_compare_test_" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir); }
  void TearDown() override { std::filesystem::remove_all(dir); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
  // The InputError load() throws for `path`, which must name the file and what was expected.
  std::string error(const std::string& path) {
    try {
      load(path);
    } catch (const InputError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find(path), std::string::npos) << what;
      EXPECT_NE(what.find("kvharness results.json (\"schema\": \"kvharness.results/1\""), std::string::npos) << what;
      EXPECT_EQ(what.find("[json.exception"), std::string::npos) << "a parser message alone: " << what;
      return what;
    }
    ADD_FAILURE() << path << " loaded";
    return "";
  }
};

TEST_F(CompareFiles, ANonResultsFileGivesAClearError) {
  EXPECT_NE(error(write("summary.md", "# kvharness\n\nnot json")).find("not JSON (a syntax error at line 1, column 1)"),
            std::string::npos);
  EXPECT_NE(error(write("broken.json", "{\n  \"schema\": \"kvharness.results/1\",\n  \"cases\": [\n}"))
                .find("line 4, column 1"),
            std::string::npos);
  EXPECT_NE(error(write("empty.json", "")).find("not JSON"), std::string::npos);
  EXPECT_NE(error(write("array.json", "[1, 2]")).find("top level is array"), std::string::npos);
  EXPECT_NE(error(write("bench.json", R"({"kernels": []})")).find("without a \"schema\""), std::string::npos);
  EXPECT_NE(error(write("other.json", R"({"schema": "kvharness.bench/1", "cases": []})"))
                .find("\"schema\" is \"kvharness.bench/1\""),
            std::string::npos);
  EXPECT_NE(error(write("nocases.json", R"({"schema": "kvharness.results/1"})")).find("no \"cases\" array"),
            std::string::npos);
  EXPECT_NE(error(write("noverdict.json", R"({"schema": "kvharness.results/1", "cases": [{"id": "x"}]})"))
                .find("cases[0]: expected an object with string fields \"id\" and \"verdict\""),
            std::string::npos);
  std::filesystem::create_directories(dir / "empty_report");
  EXPECT_NE(error((dir / "empty_report").string()).find("a directory without results.json"), std::string::npos);
  EXPECT_NE(error((dir / "missing.json").string()).find("no such file"), std::string::npos);
  EXPECT_THROW(compare(json::object(), run({})), InputError);
}

TEST_F(CompareFiles, LoadsAFileOrItsReportDirectory) {
  const std::string text = run({entry("x", "PASS")}).dump();
  std::filesystem::create_directories(dir / "report");
  write("report/results.json", text);
  EXPECT_EQ(load((dir / "report").string()), json::parse(text));
  EXPECT_EQ(load((dir / "report" / "results.json").string()), json::parse(text));
}

TEST(Compare, FailOnParsesItsThreeLevels) {
  EXPECT_EQ(parse_fail_on("regressions"), FailOn::Regressions);
  EXPECT_EQ(parse_fail_on("changes"), FailOn::Changes);
  EXPECT_EQ(parse_fail_on("any"), FailOn::Any);
  EXPECT_THROW(parse_fail_on("regression"), std::invalid_argument);
}

// A CRASH declared expected (reasons = ["crash"]) is XFAIL; losing the declaration is a regression.
TEST(Compare, ADeclaredCrashIsExpectedAndLosingTheDeclarationRegresses) {
  auto doc = [](bool expected) {
    json d;
    d["schema"] = kSchema;
    d["complete"] = true;
    d["cases"] = json::array({json{{"id", "write/x"}, {"verdict", "CRASH"}, {"reason", "launch_error"},
                                   {"expected_failure", expected}}});
    return d;
  };
  Options o;
  const auto c = compare(doc(true), doc(false), o);
  EXPECT_EQ(c.count(Change::Regressed), 1);
  EXPECT_EQ(exit_code(c, o), kExitGatingDifference);
  EXPECT_EQ(compare(doc(true), doc(true), o).same, 1);
}

}  // namespace
}  // namespace kvh::compare
