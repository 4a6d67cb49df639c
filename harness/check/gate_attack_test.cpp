// Adversarial tests of the gate (issue 7): each TEST names a way the run, its
// reports or `compare` can go green (or blame the wrong component) when
// something is wrong. They were written against the landed gate and fail on
// it; each assertion says which defect it catches.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "case_file.h"
#include "report/compare.h"
#include "check/expectations.h"
#include "registry/registry.h"
#include "report/report.h"
#include "check/verdict.h"

namespace kvh {
namespace {

// A pipeline table whose only row is named and runs the fixed kernels, with a
// table-level declaration that the writer must fail (a row flipped from the
// fixture to the fix, as the issue's "flip one fixture" test does).
constexpr const char* kTableLevelDeclaration = R"(seeds = [1]
[[pipeline]]
models = ["Qwen3.5-397B-A17B"]
tp = 8
layouts = ["interleaved"]
batch_sizes = [4]
context_lens = [700, 1300]
block_sizes = [16]
dtypes = ["bf16"]
target = "MI355X"

[[pipeline.expected_failure]]
component = "writer"
reasons = ["mismatch", "out_of_view_write"]
why = "every row of this table must show the writer's bug"

[[pipeline.variants]]
name = "before fix"
writer = "reshape_and_cache_shuffle"
router = "aiter-v0.1.12"
)";

// Defect (gate lies): a [[pipeline.expected_failure]] (or [[attention.expected_failure]])
// at table level is scoped to variant_name "", so in a table whose variants are
// named it covers no case at all: the declared failure is never checked and a
// passing case is PASS, not XPASS.
TEST(GateAttack, TableLevelDeclarationCoversTheTablesNamedVariants) {
  const CaseFile cf = parse_case_file_text(kTableLevelDeclaration, "t.toml");
  ASSERT_EQ(cf.cases.size(), 1u);
  ASSERT_EQ(cf.expected_failures.size(), 1u);
  EXPECT_TRUE(cf.expected_failures[0].covers(cf.cases[0]))
      << "a table-level declaration covers nothing in a table with named variants (scope_variant \"\" vs \""
      << cf.cases[0].variant_name << "\")";
  CaseResult cr;
  cr.c = cf.cases[0];
  cr.routed_to = "paged_attention_rocm";
  judge_expectations(cr, Registry(), cf.expected_failures);
  EXPECT_STREQ(to_string(cr.v.status), "XPASS") << "a declared-to-fail case that passed is not XPASS: the run exits 0";
  EXPECT_TRUE(cr.unexpected_failure());
}

// Defect (gate lies, narrow): the issue says a fixture exempts only failures of
// its own component *and kind* (the contiguous-assumption writer's write
// mismatch). Today any non-CRASH writer failure of a fixture writer is exempt:
// a fixture that stops running (returns an error code) still counts as "failed
// as expected" wherever no declaration covers it.
TEST(GateAttack, FixtureWriterLaunchErrorIsNotItsExpectedFailure) {
  CaseResult cr;
  cr.c.kind = CaseKind::Write;
  cr.c.writer = "fixture_shuffle_contiguous";
  add_cause(cr.v, component::kWriter, reason::kLaunchError, "fixture_shuffle_contiguous returned invalid argument");
  judge_expectations(cr, Registry(), {});
  EXPECT_TRUE(cr.fixture);
  EXPECT_FALSE(cr.expected) << "the fixture's launch_error was exempted as its expected failure: "
                            << cr.v.causes.front().expected_by;
}

// Defect (gate lies, report set): a string that is not UTF-8 (a --label or
// KVH_LABEL from CI, a case file path, a provider's kernel name) makes
// nlohmann::json throw while the report is serialised: the run ends 128 after
// running every case, and the previous run's green report set stays in place
// (plus a .staging directory). The report must still be written.
TEST(GateAttack, ReportsSurviveNonUtf8Strings) {
  RunReport r;
  r.label = "runner-\xff\xfe";
  r.complete = true;
  r.exit_code = 0;
  EXPECT_NO_THROW((void)results_json(r)) << "results.json cannot be written for a label that is not UTF-8";
}

// Defect (gate lies, junit): control characters are not escaped in junit.xml
// (XML 1.0 forbids them even as character references), so a CI's JUnit parser
// rejects the file: `--label "$(printf 'a\001b')"` leaves a junit.xml that
// python's xml.dom.minidom cannot parse, while the run exits 0.
TEST(GateAttack, JunitHasNoRawControlCharacters) {
  RunReport r;
  r.label = std::string("a\x01" "b");
  r.filter = std::string("x\x1b[0m");
  r.complete = true;
  r.exit_code = 0;
  const std::string x = junit_xml(r);
  for (char ch : x) {
    const unsigned char u = static_cast<unsigned char>(ch);
    EXPECT_FALSE(u < 0x20 && u != '\n' && u != '\t' && u != '\r') << "junit.xml holds control character " << int(u);
  }
}

// Defect (gate lies, compare): B is a run that stopped on an input error (a
// broken case file: 0 cases, complete false, "error" set, exit_code 2). Every
// case of A is "only in A", which does not gate by default (nor with --fail-on
// changes), so `kvharness compare A B` says "no gating difference, exit 0".
TEST(GateAttack, CompareDoesNotPassARunThatNeverRan) {
  using json = nlohmann::json;
  json a;
  a["schema"] = compare::kSchema;
  a["complete"] = true;
  a["exit_code"] = 0;
  a["cases"] = json::array({json{{"id", "write/x"}, {"verdict", "PASS"}}});
  json b;
  b["schema"] = compare::kSchema;
  b["complete"] = false;
  b["exit_code"] = 2;
  b["error"] = "bad.toml:3:7: Error while parsing boolean";
  b["cases"] = json::array();
  for (compare::FailOn f : {compare::FailOn::Regressions, compare::FailOn::Changes}) {
    compare::Options o;
    o.fail_on = f;
    EXPECT_NE(compare::exit_code(compare::compare(a, b, o), o), compare::kExitNoGatingDifference)
        << "compare --fail-on " << compare::to_string(f) << " is green against a run that failed on an input error";
  }
}

}  // namespace
}  // namespace kvh
