#include "report/report.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <algorithm>
#include <regex>
#include <set>
#include <sstream>

#include "case_file.h"
#include "check/expectations.h"
#include "registry/registry.h"
#include "report/compare.h"

namespace kvh {
namespace {

std::string fmt_repro(uint64_t seed) { return "kvharness run x.toml --filter 'id=" + std::to_string(seed) + "'"; }

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
  add_cause(b.v, component::kWriter, reason::kMismatch, "3 mismatched <elements>");
  b.v.max_abs_err = 2.5;
  a.wall_ms = 30;
  a.phases[size_t(Phase::Launch)] = 20;
  a.phases[size_t(Phase::Check)] = 10;
  b.wall_ms = 5;
  b.phases[size_t(Phase::Inputs)] = 5;
  r.results = {a, b};
  return r;
}

TEST(Report, PhasesAreRecordedPerCaseAndSummedInTheSummary) {
  auto j = nlohmann::json::parse(results_json(sample()));
  ASSERT_TRUE(j["cases"][0].contains("phases_ms"));
  for (const char* p : {"setup", "alloc_fill", "inputs", "copy", "launch", "reference", "check", "timing"})
    EXPECT_TRUE(j["cases"][0]["phases_ms"].contains(p)) << p;
  EXPECT_EQ(j["cases"][0]["phases_ms"]["launch"], 20.0);
  const std::string md = time_profile_markdown(sample(), 1);
  // Largest first: launch 20 ms of the 35 summed, then check, then inputs; one slowest case.
  EXPECT_NE(md.find("| launch | 0.02 | 57.1% |\n| check | 0.01 | 28.6% |\n| inputs | 0.01 | 14.3% |"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| largest phase |"), std::string::npos) << md;
  EXPECT_NE(md.find("launch 20.0 ms"), std::string::npos) << md;
  EXPECT_NE(summary_markdown(sample()).find("## Where the time went"), std::string::npos);
}

// The references line counts decode cases by reference_id; write cases (no id) are not counted.
TEST(Report, ReferencesLineCountsTheSharedReferences) {
  std::vector<CaseResult> rs(4);
  rs[0].reference_id = rs[1].reference_id = "a";
  rs[1].reference_reused = true;
  rs[2].reference_id = "b";
  EXPECT_EQ(references_line(rs),
            "References: 3 decode case(s) over 2 distinct float64 reference(s), 1.50 cases a reference; 2 computed, 1 "
            "reused from the run's reference cache.");
  EXPECT_EQ(references_line({rs[3]}), "References: no decode case (write cases only: nothing to share).");
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

// Issue 11: every case records what its cache held outside its tokens; the summary gives each stale pattern and
// padding its own matrix, so a fixture's nan_or_inf under stale nan never shares a cell with its random PASS.
TEST(Report, StaleAndPaddingAreRecordedAndSplitTheMatrices) {
  RunReport r;
  r.backend = "cpu";
  r.complete = true;
  CaseResult a;
  a.c.kind = CaseKind::Attention;
  a.c.model = "M";
  a.c.reader = "fixture_mask_by_zero";
  a.c.layout = Scheme::KvFirst;
  CaseResult b = a;
  b.c.stale = Stale::Nan;
  b.c.block_table_padding = 3;
  add_cause(b.v, component::kReader, reason::kNanOrInf, "first NaN/Inf at seq 0");
  CaseResult w;  // a write case: padding and min_block_id do not apply
  w.c.model = "M";
  w.c.writer = "reshape_and_cache";
  r.results = {a, b, w};
  const auto j = nlohmann::json::parse(results_json(r));
  EXPECT_EQ(j["cases"][0]["stale"], "random");
  EXPECT_EQ(j["cases"][0]["block_table_padding"], "-1");
  EXPECT_EQ(j["cases"][0]["min_block_id"], 1);
  EXPECT_EQ(j["cases"][1]["stale"], "nan");
  EXPECT_EQ(j["cases"][1]["block_table_padding"], "num_blocks+3");
  EXPECT_EQ(j["cases"][2]["stale"], "random");
  EXPECT_TRUE(j["cases"][2]["block_table_padding"].is_null());
  const std::string md = summary_markdown(r);
  EXPECT_NE(md.find("head_size 0\n"), std::string::npos) << md;
  EXPECT_NE(md.find("head_size 0, stale nan, block_table_padding num_blocks+3\n"), std::string::npos) << md;
}

TEST(Report, SummaryHasTheMatrixAndEveryFailureWithItsRepro) {
  const std::string md = summary_markdown(sample());
  EXPECT_NE(md.find("| variant | interleaved |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fixture_shuffle_contiguous | **FAIL** mismatch |"), std::string::npos) << md;
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
  r.results[1].expected = true;
  r.results[1].v.causes[0].expected_by = "regression fixture fixture_shuffle_contiguous (writer)";
  const std::string x = junit_xml(r);
  EXPECT_NE(x.find("failures=\"0\""), std::string::npos) << x;
  EXPECT_NE(x.find("expected FAIL (mismatch): regression fixture"), std::string::npos) << x;
  const std::string md = summary_markdown(r);
  EXPECT_NE(md.find("- 2 cases: 1 PASS, 0 FAIL, 1 XFAIL, 0 XPASS, 0 CRASH, 0 UNSUPPORTED\n- **0 unexpected failure(s)**"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| fixture_shuffle_contiguous | xfail mismatch |"), std::string::npos) << md;
  const auto j = nlohmann::json::parse(results_json(r));
  EXPECT_EQ(j["cases"][1]["fixture"], true);
  EXPECT_EQ(j["cases"][1]["expected_failure"], true);
  EXPECT_EQ(j["cases"][1]["causes"][0]["component"], "writer");
}

// Issue 7, defect 8: cells tell an unexpected FAIL from an expected one and CRASH from FAIL; unexpected first.
TEST(Report, CellsShowTheClassAndUnexpectedFailuresComeFirst) {
  RunReport r = sample();
  CaseResult crash = r.results[0];
  crash.c.writer = "reshape_and_cache";
  add_cause(crash.v, component::kWriter, reason::kCrash, "signal 11", true);
  CaseResult xfail = r.results[1];
  xfail.c.layout = Scheme::Padded;
  xfail.expected = true;
  CaseResult unsup = r.results[0];
  unsup.c.layout = Scheme::Padded;
  unsup.v.status = Status::Unsupported;
  r.results.push_back(crash);
  r.results.push_back(xfail);
  r.results.push_back(unsup);
  const std::string md = summary_markdown(r);
  EXPECT_NE(md.find("| reshape_and_cache | **CRASH** crash |"), std::string::npos) << md;
  EXPECT_NE(md.find("| fixture_shuffle_contiguous | **FAIL** mismatch | xfail mismatch |"), std::string::npos) << md;
  EXPECT_NE(md.find("| reshape_and_cache_shuffle | PASS | n/a |"), std::string::npos) << md;
  const size_t unexpected = md.find("## Unexpected failures"), matrices = md.find("## Matrices"),
               expected = md.find("## Expected failures");
  ASSERT_NE(unexpected, std::string::npos);
  EXPECT_LT(unexpected, matrices);
  EXPECT_LT(matrices, expected);
  EXPECT_NE(md.find("### reshape_and_cache — CRASH crash (1 case)\n\n- message (the first case's; the others differ at most in numbers): signal 11\n"),
            std::string::npos)
      << md;
  const auto j = nlohmann::json::parse(results_json(r));
  EXPECT_EQ(j["counts"]["unexpected_failures"], 2);
  EXPECT_EQ(j["counts"]["expected_failures"], 1);
  EXPECT_EQ(j["counts"]["crash"], 1);
}

// Issue 21: what groups CRASH and UNSUPPORTED messages. Numbers go, source lines and names stay.
TEST(Report, MessageKeyDropsPerCaseNumbersButKeepsLinesAndNames) {
  EXPECT_EQ(message_key("out of resource: shared memory, Required: 139264, Hardware limit: 101376 (k.py:42)"),
            "out of resource: shared memory, Required: N, Hardware limit: N (k.py:42)");
  EXPECT_EQ(message_key("head_size 96 is not a power of two"), "head_size N is not a power of two");
  EXPECT_EQ(message_key("fp8_e4m3fn on gfx942, sm_90: 1.5e-03 at 0x7f3a12 [4, 128]"),
            "fp8_e4m3fn on gfx942, sm_90: N at 0xN [N, N]");
  // Known-bad contrasts: two raising lines, two words, must stay apart.
  EXPECT_NE(message_key("boom (k.py:42)"), message_key("boom (k.py:50)"));
  EXPECT_NE(message_key("float16 unsupported"), message_key("float32 unsupported"));
}

CaseResult crashed(const std::string& reader, const std::string& message, uint64_t seed) {
  CaseResult cr;
  cr.c.kind = CaseKind::Attention;
  cr.c.model = "M";
  cr.c.reader = reader;
  cr.c.seed = seed;
  cr.c.layout = seed % 2 ? Scheme::Interleaved : Scheme::KvFirst;
  cr.routed_to = reader;
  cr.repro = fmt_repro(seed);
  add_cause(cr.v, component::kReader, reason::kLaunchError, reader + " raised: " + message, true);
  return cr;
}

// Issue 21: one compile error that hits 96 cases is ONE finding with its count, a few ids and one repro;
// a second message of that kernel, and the same message of another kernel, are findings of their own.
TEST(Report, CrashesAreGroupedByKernelAndMessage) {
  RunReport r = sample();
  for (uint64_t i = 0; i < 96; ++i)
    r.results.push_back(crashed("triton_pa", "RuntimeError: out of resource: shared memory, Required: " +
                                                 std::to_string(65536 + 1024 * i) + ", Hardware limit: 101376 (p.py:7)",
                                i));
  r.results.push_back(crashed("triton_pa", "CompilationError: at 2:11:\n    offs = tl.arange(0, D)\n           ^\n"
                                             "arange's range must be a power of 2 (p.py:15; raised in "
                                             "triton/compiler/compiler.py:80 in make_ir)", 300));
  r.results.push_back(crashed("triton_pa", "RuntimeError: out of resource: shared memory (p.py:9)", 200));
  r.results.push_back(crashed("triton_pa", "RuntimeError: out of resource: shared memory (p.py:9)", 201));
  r.results.push_back(crashed("other_pa", "RuntimeError: out of resource: shared memory (p.py:9)", 202));
  const std::string md = summary_markdown(r);
  const std::string unexpected = md.substr(md.find("## Unexpected failures"), md.find("## Matrices") - md.find("## Unexpected failures"));
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = unexpected.find(what); at != std::string::npos; at = unexpected.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("\n### "), 4u + 1u) << unexpected;  // the four crash findings, and sample()'s FAIL group
  // A multi-line message (Triton quotes the kernel's source) stays on its list item's line.
  EXPECT_NE(unexpected.find("- message (the first case's; the others differ at most in numbers): triton_pa raised: CompilationError: at 2:11: ⏎     offs = "
                            "tl.arange(0, D) ⏎            ^ ⏎ arange's range must be a power of 2 (p.py:15; raised in "
                            "triton/compiler/compiler.py:80 in make_ir)\n"),
            std::string::npos)
      << unexpected;
  EXPECT_NE(unexpected.find("### triton_pa — CRASH launch_error (96 cases)\n\n- message (the first case's; the others differ at most in numbers): triton_pa "
                            "raised: RuntimeError: out of resource: shared memory, Required: 65536, Hardware limit: 101376 "
                            "(p.py:7)\n- 96 cases (interleaved, kv_first): `"),
            std::string::npos)
      << unexpected;
  EXPECT_NE(unexpected.find(" and 93 more"), std::string::npos) << unexpected;
  EXPECT_NE(unexpected.find("### triton_pa — CRASH launch_error (2 cases)\n\n- message (the first case's; the others differ at most in numbers): triton_pa "
                            "raised: RuntimeError: out of resource: shared memory (p.py:9)\n"),
            std::string::npos)
      << unexpected;
  EXPECT_NE(unexpected.find("### other_pa — CRASH launch_error (1 case)\n\n- message (the first case's; the others differ at most in numbers): other_pa "
                            "raised: RuntimeError: out of resource: shared memory (p.py:9)\n"),
            std::string::npos)
      << unexpected;
  EXPECT_EQ(count("- reproduce: "), 4u + 1u) << "one repro per crash finding";
  EXPECT_NE(unexpected.find("messages that differ only in numbers"), std::string::npos) << "the rule is stated";
  // results.json keeps every case.
  EXPECT_EQ(nlohmann::json::parse(results_json(r))["cases"].size(), r.results.size());
}

TEST(Report, UnsupportedCasesAreGroupedByKernelAndMessage) {
  RunReport r = sample();
  for (uint64_t i = 0; i < 5; ++i) {
    CaseResult u = crashed("vllm_unified_attention", "", i);
    u.v = Verdict{};
    u.v.status = Status::Unsupported;
    u.v.reason = reason::kUnsupported;
    u.v.detail = "vllm_unified_attention refused the case at call time: head_size " + std::to_string(80 + 16 * i) +
                 " is not a power of two";
    r.results.push_back(u);
  }
  CaseResult other = r.results.back();
  other.c.reader = other.routed_to = "aiter_pa";
  other.v.detail = "aiter_pa refused the case at call time: head_size 96 is not a power of two";
  r.results.push_back(other);
  const std::string md = summary_markdown(r);
  const std::string u = md.substr(md.find("## Unsupported"));
  EXPECT_NE(u.find("| vllm_unified_attention | vllm_unified_attention refused the case at call time: head_size 80 "
                   "is not a power of two | 5 | `"),
            std::string::npos)
      << u;
  EXPECT_NE(u.find("| aiter_pa | aiter_pa refused the case at call time: head_size 96 is not a power of two | 1 |"),
            std::string::npos)
      << u;
  EXPECT_NE(u.find(" and 2 more |"), std::string::npos) << u;
}

// Issue 21: under --replace-kernel the header, the headings and the matrix rows name the substitute.
TEST(Report, ReplacedKernelsAreNamedByTheirSubstitute) {
  RunReport r = sample();
  r.replaced_kernels["paged_attention_rocm"] = "paged_attention_rocm (replaced by python:mod:my_pa)";
  r.results.push_back(crashed("paged_attention_rocm", "RuntimeError: x (mod.py:3)", 1));
  r.results.push_back(crashed("paged_attention_rocm_v2", "RuntimeError: x (mod.py:3)", 2));  // not replaced
  const std::string md = summary_markdown(r);
  EXPECT_NE(md.find("and headings and rows say `REAL (replaced by WITH)`): `paged_attention_rocm` -> "
                    "`python:mod:my_pa`\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("### paged_attention_rocm (replaced by python:mod:my_pa) — CRASH"), std::string::npos) << md;
  EXPECT_NE(md.find("| reference+paged_attention_rocm (replaced by python:mod:my_pa) |"), std::string::npos) << md;
  EXPECT_NE(md.find("### paged_attention_rocm_v2 — CRASH"), std::string::npos) << "a whole name only: " << md;
  EXPECT_EQ(nlohmann::json::parse(results_json(r))["replaced_kernels"]["paged_attention_rocm"],
            "paged_attention_rocm (replaced by python:mod:my_pa)");
}

// Issue 7, defect 4: an interrupted run's junit.xml carries an error, so a CI that reads only junit fails.
TEST(Report, AnIncompleteRunIsAJunitError) {
  RunReport r = sample();
  r.results.resize(1);
  r.complete = false;
  r.stopped_because = "interrupted by signal 2";
  const std::string x = junit_xml(r);
  EXPECT_NE(x.find("errors=\"1\""), std::string::npos) << x;
  EXPECT_NE(x.find("<error type=\"incomplete\" message=\"interrupted by signal 2\""), std::string::npos) << x;
  r.complete = true;
  EXPECT_NE(junit_xml(r).find("errors=\"0\""), std::string::npos);
}

// junit class names: no dots from model names (CI tools split packages at dots).
TEST(Report, JunitClassNamesHaveNoDotsFromModelNames) {
  RunReport r = sample();
  r.results[0].c.model = "Qwen3.5-397B-A17B";
  const std::string x = junit_xml(r);
  EXPECT_NE(x.find("classname=\"kvharness.write.Qwen3_5-397B-A17B\""), std::string::npos) << x;
}

// Issue 7, defect 5: the three files replace the previous set as one, and I/O errors are raised.
TEST(ReportFiles, ASetReplacesTheLastAndLeavesNoStagingBehind) {
  namespace fs = std::filesystem;
  const fs::path root = fs::path(::testing::TempDir()) / "kvh_report_set";
  fs::remove_all(root);
  const std::string dir = (root / "latest").string();
  RunReport r = sample();
  r.exit_code = 1;
  write_report_files(r, dir);
  r.results.resize(1);
  r.exit_code = 0;
  write_report_files(r, dir);
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(root)) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"latest"})) << "a staging directory was left behind";
  names.clear();
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  EXPECT_EQ(names, (std::set<std::string>{"junit.xml", "results.json", "summary.md"}));
  std::ifstream f(dir + "/results.json");
  EXPECT_EQ(nlohmann::json::parse(f)["exit_code"], 0) << "the second set replaced the first";

  // A report directory whose parent is a regular file: the error names the path.
  std::ofstream(root / "file") << "x";
  try {
    write_report_files(r, (root / "file" / "latest").string());
    ADD_FAILURE() << "no error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find((root / "file").string()), std::string::npos) << e.what();
  }
  fs::remove_all(root);
}

// Issue 25, item 1: a matrix names what its batch axis counts (a write case's tokens, a decode case's
// sequences), singular where it is one, and every number axis reads in increasing order; the pipeline
// summary's batch columns too ("2, 4, 160", not "160, 2, 4" as text sorts them).
TEST(Report, MatrixAxesAreNamedAndOrderedNumerically) {
  RunReport r;
  r.complete = true;
  for (int64_t b : {160, 2, 4})
    for (int64_t bs : {32, 16}) {
      CaseResult cr;
      cr.c.kind = CaseKind::Attention;
      cr.c.model = "M";
      cr.c.reader = "paged_attention_rocm";
      cr.c.batch_size = b;
      cr.c.block_size = bs;
      cr.c.dtype = DType::BF16;
      r.results.push_back(cr);
    }
  CaseResult w;
  w.c.model = "W";
  w.c.writer = "reshape_and_cache";
  w.c.batch_size = 1;
  r.results.push_back(w);
  for (int64_t b : {160, 4}) {
    CaseResult p;
    p.c.kind = CaseKind::Pipeline;
    p.c.model = "P";
    p.c.writer = "reshape_and_cache_shuffle";
    p.c.reader = "paged_attention_rocm";
    p.c.batch_size = b;
    r.results.push_back(p);
  }
  const std::string md = summary_markdown(r);
  EXPECT_NE(md.find("Each cell covers: block_size 16, 32; batches of 2, 4, 160 sequences; bf16.\n"), std::string::npos)
      << md;
  EXPECT_NE(md.find("Each cell covers: block_size 16; a batch of 1 token; fp16.\n"), std::string::npos) << md;
  EXPECT_NE(md.find("Each cell covers: block_size 16; batches of 4, 160 sequences; fp16.\n"), std::string::npos) << md;
  EXPECT_NE(md.find("| Model | Type | batch_size=4 | batch_size=160 |"), std::string::npos) << md;
  EXPECT_EQ(md.find(" tokens, "), std::string::npos) << "no axis sorted as text: " << md;
  EXPECT_EQ(md.find("1 tokens"), std::string::npos) << md;
}

// A write case of the fixture writer that failed as the case file declared.
constexpr const char* kFixtureDeclared = R"(seeds = [1]
[[write]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["interleaved", "padded"]
num_tokens = [4]
block_sizes = [16]
dtypes = ["bf16"]
writers = ["fixture_shuffle_contiguous"]

[[write.expected_failure]]
component = "writer"
reasons = ["mismatch"]
why = "contiguous block base: writes into other blocks' pages"
)";

// Issue 25, item 2: the `why` of a declaration that covers a fixture kernel's failure is shown; before,
// the fixture's own exemption ("regression fixture X") hid it.
TEST(Report, AFixturesFailureShowsTheDeclarationsWhy) {
  const CaseFile cf = parse_case_file_text(kFixtureDeclared, "t.toml");
  ASSERT_EQ(cf.cases.size(), 2u);
  CaseResult cr;
  cr.c = cf.cases[0];
  add_cause(cr.v, component::kWriter, reason::kMismatch, "K page of block 17 differs");
  judge_expectations(cr, Registry(), cf.expected_failures);
  ASSERT_TRUE(cr.expected);
  EXPECT_EQ(cr.v.causes[0].expected_by, "regression fixture fixture_shuffle_contiguous (writer); " +
                                            cf.expected_failures[0].source +
                                            ": contiguous block base: writes into other blocks' pages");
  RunReport r;
  r.complete = true;
  r.results = {cr};
  EXPECT_NE(summary_markdown(r).find("contiguous block base: writes into other blocks' pages"), std::string::npos);
}

// Issue 25, item 3: expected failures are grouped like unexpected ones, by (kernel, layout, reason): each
// group once, with its count, what expects it (the declaration's `why`), a few ids and ONE repro.
TEST(Report, ExpectedFailuresAreGroupedWithTheirWhyAndOneRepro) {
  RunReport r;
  r.complete = true;
  for (int i = 0; i < 30; ++i) {
    CaseResult cr;
    cr.c.model = "M";
    cr.c.writer = "fixture_shuffle_contiguous";
    cr.c.layout = i % 2 ? Scheme::Interleaved : Scheme::Padded;
    cr.c.seed = uint64_t(i);
    cr.repro = fmt_repro(uint64_t(i));
    add_cause(cr.v, component::kWriter, reason::kMismatch, "K page of block " + std::to_string(i) + " differs");
    cr.v.causes[0].expected_by = "regression fixture fixture_shuffle_contiguous (writer); t.toml:11: contiguous base";
    cr.expected = true;
    r.results.push_back(cr);
  }
  const std::string md = summary_markdown(r);
  const std::string x = md.substr(md.find("## Expected failures"));
  const std::string padded = "\n### fixture_shuffle_contiguous — padded — XFAIL mismatch (15 cases)\n\n"
                             "- expected: writer mismatch: regression fixture fixture_shuffle_contiguous (writer); "
                             "t.toml:11: contiguous base\n- cases: `" +
                             r.results[0].c.id() + "`, `" + r.results[2].c.id() + "`, `" + r.results[4].c.id() +
                             "` and 12 more\n- the first: K page of block 0 differs\n- reproduce: `" + fmt_repro(0) +
                             "`\n";
  EXPECT_NE(x.find(padded), std::string::npos) << x;
  EXPECT_NE(x.find("\n### fixture_shuffle_contiguous — interleaved — XFAIL mismatch (15 cases)\n"), std::string::npos) << x;
  size_t repros = 0;
  for (size_t at = x.find("- reproduce: "); at != std::string::npos; at = x.find("- reproduce: ", at + 1)) ++repros;
  EXPECT_EQ(repros, 2u) << "one repro per group, not per case";
  EXPECT_EQ(x.find("#### "), std::string::npos) << "no case listed in full";
}

// Issue 25, item 11: an XPASS group's heading says XPASS once ("XPASS xpass" before).
TEST(Report, AnXpassHeadingSaysXpassOnce) {
  RunReport r = sample();
  r.results[1].v = Verdict{};
  r.results[1].v.status = Status::Xpass;
  r.results[1].v.reason = reason::kXpass;
  r.results[1].v.detail = "declared to fail with writer mismatch (t.toml:11: why), but it passed";
  const std::string md = summary_markdown(r);
  EXPECT_NE(md.find("\n### fixture_shuffle_contiguous — interleaved — XPASS (1 case)\n"), std::string::npos) << md;
  EXPECT_EQ(md.find("XPASS xpass"), std::string::npos) << md;
}

// Issue 25, item 4: the header names every provider, each substitution as REAL -> WITH, the case files,
// the filter, the seed, the backend and the device.
TEST(Report, TheHeaderNamesWhatRan) {
  RunReport r = sample();
  r.backend = "cpu";
  r.device = "host CPU (2 cores)";
  r.arch = "x86_64";
  r.case_files = {"cases/seed-pr.toml", "mine.toml"};
  r.filter = "batch_size=4";
  r.seed = 7;
  r.providers = {"python:my_kernels", "python:./other.py"};
  r.replaced_kernels["paged_attention_rocm"] = "paged_attention_rocm (replaced by python:my_kernels:my_pa)";
  const std::string md = summary_markdown(r);
  EXPECT_NE(md.find("- backend: cpu (host CPU (2 cores), x86_64)"), std::string::npos) << md;
  EXPECT_NE(md.find("- case files: `cases/seed-pr.toml`, `mine.toml`; filter: `batch_size=4`; seed: 7\n"
                    "- providers (--provider): `python:my_kernels`, `python:./other.py`\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find(": `paged_attention_rocm` -> `python:my_kernels:my_pa`\n"), std::string::npos) << md;
  r.providers.clear();
  r.filter.clear();
  r.seed.reset();
  const std::string plain = summary_markdown(r);
  EXPECT_NE(plain.find("filter: none; seed: from the case files\n- providers (--provider): none (built-in kernels only)\n"),
            std::string::npos)
      << plain;
  // results.json keeps the providers, so a merged or resumed report names them too.
  EXPECT_EQ(nlohmann::json::parse(results_json(sample()))["providers"], nlohmann::json::array());
}

// `md` without its code spans: what a Markdown renderer would parse as Markdown and HTML.
std::string outside_code_spans(const std::string& md) {
  return std::regex_replace(md, std::regex("`[^`\n]*`"), "");
}

// Issue 25, item 12: strings from kernels (a provider's exception) and case files (a `why`, model and
// variant names) reach summary.md escaped: no tag, link or emphasis of theirs survives outside code
// spans (which CommonMark shows literally), and a `|` never splits a table row.
TEST(Report, StringsFromKernelsAndCaseFilesAreEscaped) {
  const std::string img = "<img src=x onerror=alert(1)>";
  RunReport r = sample();
  r.label = img;
  r.device = "<script>x</script>";
  r.providers = {"python:" + img};
  CaseResult& f = r.results[1];
  f.c.model = "M" + img;
  f.c.variant_name = "*[click](javascript:alert(1))*";
  f.v.causes[0].detail = f.v.detail = "RuntimeError(\"" + img + "\") | ` & __init__";
  CaseResult xf = f;
  xf.c.layout = Scheme::Padded;
  xf.expected = true;
  xf.v.causes[0].expected_by = "t.toml:3: " + img;
  CaseResult crash = crashed("p<b>x</b>", img, 3);
  CaseResult unsup = crash;
  unsup.v = Verdict{};
  unsup.v.status = Status::Unsupported;
  unsup.v.detail = "refused: a|b " + img;
  r.results.push_back(xf);
  r.results.push_back(crash);
  r.results.push_back(unsup);
  const std::string md = summary_markdown(r);
  const std::string text = outside_code_spans(md);
  for (const char* raw : {"<img", "<script", "<b>", "*[click", "__init__"})
    EXPECT_EQ(text.find(raw), std::string::npos) << raw << " reached summary.md unescaped:\n" << md;
  EXPECT_FALSE(std::regex_search(text, std::regex(R"((^|[^\\])\]\()"))) << "a link survived:\n" << md;
  EXPECT_NE(md.find("RuntimeError(\"&lt;img src=x onerror=alert(1)>\") \\| \\` &amp; \\_\\_init\\_\\_"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("\\*\\[click\\](javascript:alert(1))\\*"), std::string::npos) << md;
  EXPECT_NE(md.find("writer mismatch: t.toml:3: &lt;img src=x onerror=alert(1)>"), std::string::npos) << md;
  EXPECT_NE(md.find("| p&lt;b>x&lt;/b> | refused: a\\|b &lt;img"), std::string::npos) << md;
  // Every table row keeps its column count: an escaped | is no cell border.
  std::istringstream lines(md);
  std::string line;
  size_t head_cols = 0;
  while (std::getline(lines, line)) {
    if (line.rfind("| kernel | reason", 0) == 0) head_cols = size_t(std::count(line.begin(), line.end(), '|'));
    if (head_cols && line.rfind("| p&lt;b", 0) == 0) {
      size_t bars = 0;
      for (size_t i = 0; i < line.size(); ++i) bars += line[i] == '|' && (i == 0 || line[i - 1] != '\\');
      EXPECT_EQ(bars, head_cols) << line;
    }
  }
}

// Issue 25, item 7: one counting scheme. An expected FAIL or CRASH is XFAIL in run's line (counts_text),
// summary.md, results.json's counts, junit.xml and compare's header; "143 FAIL" in one and "143 XFAIL"
// in another is gone.
TEST(Report, OneCountingSchemeForRunSummaryJsonJunitAndCompare) {
  RunReport r = sample();  // PASS, unexpected FAIL
  CaseResult xfail = r.results[1];
  xfail.expected = true;
  CaseResult xcrash = crashed("fixture_x", "boom", 5);
  xcrash.expected = true;
  CaseResult xpass = r.results[0];
  xpass.v.status = Status::Xpass;
  CaseResult unsup = r.results[0];
  unsup.v.status = Status::Unsupported;
  r.results.insert(r.results.end(), {xfail, xcrash, xpass, unsup});
  const std::string want = "1 PASS, 1 FAIL, 2 XFAIL, 1 XPASS, 0 CRASH, 1 UNSUPPORTED";
  const Counts n = count(r);
  EXPECT_EQ(counts_text(n), want);
  EXPECT_EQ(n.unexpected(), 2);
  const std::string md = summary_markdown(r);
  EXPECT_NE(md.find("- 6 cases: " + want + "\n- **2 unexpected failure(s)**"), std::string::npos) << md;
  EXPECT_NE(md.find("| model | kind | cases | PASS | FAIL | XFAIL | XPASS | CRASH | UNSUPPORTED |\n|---|---|---|---|---|---|"
                    "---|---|---|\n| M | write | 5 | 1 | 1 | 1 | 1 | 0 | 1 |\n| M | attention | 1 | 0 | 0 | 1 | 0 | 0 | 0 |\n"),
            std::string::npos)
      << "the per-model table counts in the same classes: " << md;
  EXPECT_NE(junit_xml(r).find("<property name=\"counts\" value=\"" + want + "\"/>"), std::string::npos);
  const auto j = nlohmann::json::parse(results_json(r));
  EXPECT_EQ(j["counts"]["fail"], 1);
  EXPECT_EQ(j["counts"]["xfail"], 2);
  EXPECT_EQ(j["counts"]["crash"], 0);
  EXPECT_EQ(j["counts"]["unexpected_failures"], 2);
  const compare::Comparison c = compare::compare(j, j);
  EXPECT_EQ(counts_text(c.a), want);
  EXPECT_NE(compare::format(c, "A", "B").find("6 cases: " + want + "\n"), std::string::npos);
}

}  // namespace
}  // namespace kvh
