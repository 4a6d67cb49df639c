// The runner under device faults, and kernel timing, on any backend:
//   - a sticky device fault (injected: testing::inject_fault makes the nth
//     device::synchronize throw as an illegal address would) turns that case
//     into CRASH with the error text, stops the run, keeps every verdict so
//     far in results.json with complete = false, and the exit code is 1;
//   - a case that throws without losing the device is CRASH and the run goes on;
//   - kernel_us: null on cpu by default, measured when asked (host clock).
#include "run/runner.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "case/attention_case.h"
#include "check/expectations.h"
#include "device/device.h"
#include "case/write_case.h"

extern "C" const kvh_kernel_desc* kvh_planted_writers(int32_t* count);

namespace kvh {
namespace {

Case write_case(const std::string& writer, int64_t tokens = 32) {
  Case c;
  c.model = "test";
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_size = 64;
  c.layout = Scheme::KvFirst;
  c.block_size = 16;
  c.batch_size = tokens;
  c.writer = writer;
  c.seed = 5;
  return c;
}

Case pipeline_case() {
  Case c = write_case("reshape_and_cache_shuffle");
  c.kind = CaseKind::Pipeline;
  c.batch_size = 2;
  c.reader = "paged_attention_rocm";
  c.context_len_min = 20;
  c.context_len_max = 40;
  return c;
}

std::string temp_dir(const std::string& name) {
  const auto d =
      std::filesystem::temp_directory_path() / ("kvh_runner_test_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d.string();
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream f(path);
  return nlohmann::json::parse(f);
}

struct FaultGuard {
  ~FaultGuard() { device::testing::clear_fault(); }
};

TEST(Runner, StickyDeviceFaultEndsTheRunCleanly) {
  FaultGuard guard;
  const Registry reg;
  std::vector<Case> cases;
  for (int64_t t : {16, 24, 32, 40}) cases.push_back(write_case("reshape_and_cache_flash", t));
  const std::vector<std::string> files(cases.size(), "test.toml");
  RunOptions o;
  o.report_dir = temp_dir("fault");
  o.timing.reps = 0;  // GPU backends: timing would add synchronize calls
  const size_t live_before = device::live_bytes();
  device::testing::inject_fault(2);  // one synchronize per write case: the second case faults
  const std::atomic<int> stop{0};
  const RunReport rep = run_cases(cases, files, reg, o, stop);

  ASSERT_EQ(rep.results.size(), 2u);  // stopped right after the faulting case
  EXPECT_EQ(rep.results[0].v.status, Status::Pass);
  EXPECT_EQ(rep.results[1].v.status, Status::Crash);
  EXPECT_EQ(rep.results[1].v.reason, reason::kCrash);
  EXPECT_NE(rep.results[1].v.detail.find("illegal memory access"), std::string::npos) << rep.results[1].v.detail;
  EXPECT_FALSE(rep.complete);
  EXPECT_NE(rep.stopped_because.find(cases[1].id()), std::string::npos) << rep.stopped_because;
  EXPECT_EQ(exit_code_for(rep), kExitFail);
  EXPECT_FALSE(device::healthy());
  EXPECT_EQ(device::live_bytes(), live_before);  // every buffer of the crashed case was freed

  const auto j = read_json(o.report_dir + "/results.json");
  EXPECT_EQ(j["complete"], false);
  ASSERT_EQ(j["cases"].size(), 2u);
  EXPECT_EQ(j["cases"][0]["verdict"], "PASS");
  EXPECT_EQ(j["cases"][1]["verdict"], "CRASH");
  EXPECT_TRUE(j["stopped_because"].is_string());

  device::testing::clear_fault();
  EXPECT_TRUE(device::healthy());
  std::filesystem::remove_all(o.report_dir);
}

TEST(Runner, FaultAtTheLastCaseStillMarksTheRunIncomplete) {
  FaultGuard guard;
  const Registry reg;
  const std::vector<Case> cases = {write_case("reshape_and_cache_flash"), pipeline_case()};
  RunOptions o;
  o.report_dir = temp_dir("fault_last");
  o.timing.reps = 0;
  device::testing::inject_fault(2);  // the pipeline's writer synchronize
  const RunReport rep = run_cases(cases, {"a.toml", "a.toml"}, reg, o, std::atomic<int>{0});
  ASSERT_EQ(rep.results.size(), 2u);
  EXPECT_EQ(rep.results[1].v.status, Status::Crash);
  EXPECT_FALSE(rep.complete);
  EXPECT_EQ(exit_code_for(rep), kExitFail);
  std::filesystem::remove_all(o.report_dir);
}

int throwing_writer(void*, const kvh_write_args*, void*) { throw std::runtime_error("the harness's own bug"); }

TEST(Runner, ACrashThatKeepsTheDeviceUsableDoesNotStopTheRun) {
  Registry reg;
  kvh_kernel_desc d{};
  d.abi_version = KVH_ABI_VERSION;
  d.name = "test_throwing_writer";
  d.description = "throws";
  d.role = KVH_ROLE_WRITER;
  d.cache_format = KVH_CACHE_NHD;
  d.write = throwing_writer;
  reg.add(d, "test");
  const std::vector<Case> cases = {write_case("test_throwing_writer"), write_case("reshape_and_cache_flash")};
  RunOptions o;
  o.report_dir = temp_dir("nonsticky");
  const RunReport rep = run_cases(cases, {"a.toml", "a.toml"}, reg, o, std::atomic<int>{0});
  ASSERT_EQ(rep.results.size(), 2u);
  EXPECT_EQ(rep.results[0].v.status, Status::Crash);
  EXPECT_EQ(rep.results[1].v.status, Status::Pass);
  EXPECT_TRUE(rep.complete);
  EXPECT_TRUE(rep.stopped_because.empty());
  std::filesystem::remove_all(o.report_dir);
}

TEST(Timing, KernelTimeIsNullOnCpuUnlessAsked) {
  const Registry reg;
  if (device::info().backend != "cpu") GTEST_SKIP() << "GPU backends time by default";
  EXPECT_FALSE(run_write_case(write_case("reshape_and_cache_flash"), reg).v.kernel_us.has_value());
  TimingOptions t;
  t.warmup = 1;
  t.reps = 3;
  t.on_cpu = true;
  const CaseResult w = run_write_case(write_case("reshape_and_cache_flash"), reg, t);
  EXPECT_EQ(w.v.status, Status::Pass);
  ASSERT_TRUE(w.v.kernel_us.has_value());
  EXPECT_GT(*w.v.kernel_us, 0);

  DecodeOptions d;
  d.timing = t;
  const CaseResult p = run_decode_case(pipeline_case(), reg, d);
  EXPECT_EQ(p.v.status, Status::Pass) << p.v.detail;
  EXPECT_TRUE(p.v.kernel_us.has_value());
  EXPECT_TRUE(p.v.writer_us.has_value());
  t.reps = 0;
  EXPECT_FALSE(run_write_case(write_case("reshape_and_cache_flash"), reg, t).v.kernel_us.has_value());
}

TEST(Timing, TimeLaunchesCountsAndReportsLaunchErrors) {
  int calls = 0;
  const device::Timing t = device::time_launches([&] { ++calls; return 0; }, 2, 21);
  EXPECT_EQ(calls, 23);
  EXPECT_EQ(t.reps, 21);
  EXPECT_LE(t.min_us, t.median_us);
  EXPECT_LE(t.median_us, t.max_us);
  try {
    device::time_launches([] { return 1; }, 0, 20);
    FAIL() << "no LaunchError";
  } catch (const device::LaunchError& e) {
    EXPECT_EQ(e.code, 1);
    EXPECT_FALSE(e.device_lost());
  }
  EXPECT_THROW(device::time_launches([] { return 0; }, 0, 0), std::invalid_argument);
}

}  // namespace
}  // namespace kvh

namespace kvh {
namespace {

// A judged result: `writer` (and router policy) failing in `comp` with `why`, or passing.
CaseResult result_of(const std::string& writer, const std::string& router, Status s, const char* comp = nullptr,
                     const char* why = reason::kMismatch) {
  CaseResult cr;
  cr.c.kind = CaseKind::Pipeline;
  cr.c.writer = writer;
  cr.c.router_policy = router;
  cr.routed_to = "paged_attention_rocm";
  if (s == Status::Fail || s == Status::Crash) add_cause(cr.v, comp, why, "test", s == Status::Crash);
  else cr.v.status = s;
  judge_expectations(cr, Registry(), {});
  return cr;
}

// Issue 7, defect 1: a fixture exempts only failures of its own component and kind.
TEST(Runner, ExitCodeExemptsOnlyAFixturesOwnFailures) {
  RunReport rep;
  rep.complete = true;
  rep.results = {result_of("reshape_and_cache_shuffle", "aiter-v0.1.12", Status::Pass),
                 result_of("fixture_shuffle_contiguous", "", Status::Fail, component::kWriter),
                 result_of("reshape_and_cache_shuffle", "aiter-v0.1.10.post3", Status::Fail, component::kRouter,
                           reason::kMisroute)};
  EXPECT_EQ(exit_code_for(rep), kExitPass) << "fixture writer and old router fail by design";
  rep.results.push_back(result_of("reshape_and_cache_shuffle", "aiter-v0.1.12", Status::Fail, component::kWriter));
  EXPECT_EQ(exit_code_for(rep), kExitFail);
  rep.results = {result_of("fixture_shuffle_contiguous", "", Status::Fail, component::kWriter)};
  EXPECT_EQ(exit_code_for(rep), kExitPass) << "a lone fixture repro that fails as expected ran fine";
  rep.results = {result_of("reshape_and_cache", "", Status::Unsupported)};
  EXPECT_EQ(exit_code_for(rep), kExitNothingRunnable);

  // The old router's case whose real writer fails: the writer's failure is not the router's to excuse.
  rep.results = {result_of("reshape_and_cache_shuffle", "aiter-v0.1.10.post3", Status::Fail, component::kWriter)};
  EXPECT_FALSE(rep.results[0].expected);
  EXPECT_EQ(exit_code_for(rep), kExitFail);
  // A fixture's CRASH is never expected.
  rep.results = {result_of("fixture_shuffle_contiguous", "", Status::Crash, component::kWriter, reason::kCrash)};
  EXPECT_EQ(exit_code_for(rep), kExitFail);
  // A fixture writer's case whose reader fails: not the writer's failure.
  rep.results = {result_of("fixture_shuffle_contiguous", "", Status::Fail, component::kReader, reason::kUnwritten)};
  EXPECT_EQ(exit_code_for(rep), kExitFail);
  // The old router's misroute is expected; a misroute of the fixed policy is not.
  rep.results = {result_of("reshape_and_cache_shuffle", "aiter-b4885d2", Status::Fail, component::kRouter, reason::kMisroute)};
  EXPECT_EQ(exit_code_for(rep), kExitFail);
  // A harness failure (host allocation) in a fixture's case: never expected, and exit 128 (git aborts a bisect).
  rep.results = {result_of("reshape_and_cache_shuffle", "aiter-v0.1.10.post3", Status::Crash, component::kHarness,
                           reason::kHarnessError)};
  EXPECT_FALSE(rep.results[0].expected);
  EXPECT_EQ(exit_code_for(rep), kExitHarness);
  // Interrupted: 128 + the signal.
  rep.results = {result_of("reshape_and_cache_shuffle", "", Status::Pass)};
  rep.interrupted_by = SIGINT;
  EXPECT_EQ(exit_code_for(rep), 130);
  rep.interrupted_by = SIGTERM;
  EXPECT_EQ(exit_code_for(rep), 143);
}

// Runs cases {ok, writer, ok} in a child process (the runner ends it) and
// returns the report it left in dir.
nlohmann::json run_until_the_runner_exits(const std::string& writer, const std::string& dir, double timeout_s,
                                          const char* expected_stderr) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  Case bad;
  bad.model = "test";
  bad.num_heads = 1;
  bad.num_kv_heads = 1;
  bad.head_size = 64;
  bad.batch_size = 4;
  bad.layout = Scheme::KvFirst;
  bad.writer = writer;
  Case ok = bad;
  ok.writer = "reshape_and_cache_flash";
  auto run = [&] {
    for (int sig : {SIGSEGV, SIGBUS}) std::signal(sig, on_fatal_signal);
    Registry reg;
    reg.add_provider(kvh_planted_writers, "planted");
    RunOptions o;
    o.report_dir = dir;
    o.case_timeout_s = timeout_s;
    std::atomic<int> stop{0};
    run_cases({ok, bad, ok}, {"x.toml", "x.toml", "x.toml"}, reg, o, stop);
  };
  EXPECT_EXIT(run(), ::testing::ExitedWithCode(kExitFail), expected_stderr);
  std::ifstream f(dir + "/results.json");
  EXPECT_TRUE(f) << "the runner writes the report before it exits";
  return f ? nlohmann::json::parse(f) : nlohmann::json();
}

TEST(Runner, AKernelThatSegfaultsOnTheCpuBackendIsACrashInTheReport) {
  if (device::info().backend != "cpu") GTEST_SKIP() << "a GPU reports the fault as a sticky error instead";
  const auto j = run_until_the_runner_exits("planted_wild_write", ::testing::TempDir() + "kvh_segv_report", 600, "signal 11");
  EXPECT_EQ(j["complete"], false);
  ASSERT_EQ(j["cases"].size(), 2u) << "the case before, and the one that faulted";
  EXPECT_EQ(j["cases"][0]["verdict"], "PASS");
  EXPECT_EQ(j["cases"][1]["verdict"], "CRASH");
  EXPECT_EQ(j["cases"][1]["reason"], "crash");
}

TEST(Runner, AHungCaseEndsTheRunWithItsReportWritten) {
  if (device::info().backend != "cpu") GTEST_SKIP() << "the planted hang is a fiber deadlock";
  const auto j = run_until_the_runner_exits("planted_hangs", ::testing::TempDir() + "kvh_hang_report", 1.5, "did not return");
  EXPECT_EQ(j["complete"], false);
  ASSERT_EQ(j["cases"].size(), 2u) << "the case before, and the hung one";
  EXPECT_EQ(j["cases"][0]["verdict"], "PASS");
  EXPECT_EQ(j["cases"][1]["verdict"], "CRASH");
  EXPECT_EQ(j["cases"][1]["reason"], "timeout");
}

}  // namespace
}  // namespace kvh

// A repro line is pasted into a shell: a provider spec with `?` (a glob) or a path with a space must
// stay one word each, and plain words stay as they were (what earlier reports printed).
namespace kvh {
namespace {

TEST(Runner, ReproCommandQuotesWhatTheShellWouldSplitOrGlob) {
  EXPECT_EQ(shell_word("python:kvharness_torch"), "python:kvharness_torch");
  EXPECT_EQ(shell_word("python:kvharness.stacks.vllm?src=/x/y"), "'python:kvharness.stacks.vllm?src=/x/y'");
  EXPECT_EQ(shell_word("it's"), "'it'\\''s'");
  EXPECT_EQ(shell_word(""), "''");
  RunOptions o;
  o.program = "kvharness";
  o.providers = {"python:kvharness.stacks.vllm?src=/src/vllm a"};
  o.replace_kernels = {"paged_attention_rocm=my_pa"};
  EXPECT_EQ(repro_command(o, "cases/stacks/vllm.toml", "write/x"),
            "kvharness run cases/stacks/vllm.toml --filter 'id=write/x' --report-dir reports/repro "
            "--provider 'python:kvharness.stacks.vllm?src=/src/vllm a' --replace-kernel paged_attention_rocm=my_pa");
}

}  // namespace
}  // namespace kvh

// Issue 25, item 9: the heartbeat says how long the run has gone and about how long is left,
// weighted by what each case costs, so a run whose large cases come last does not look stalled.
namespace kvh {
namespace {

TEST(Heartbeat, ElapsedAndAnEstimateWeightedByCost) {
  EXPECT_EQ(heartbeat_line(0, 10, 0, 0.4, 0, 100),
            "kvharness: 0/10 cases done, 0 unexpected failure(s) so far; 0.4 s elapsed, estimate after the first case");
  // Half the cases done but a quarter of the cost: three times as long again, not as long again.
  EXPECT_EQ(heartbeat_line(5, 10, 1, 40, 25, 100),
            "kvharness: 5/10 cases done, 1 unexpected failure(s) so far; 40 s elapsed, about 2 min 00 s left");
  EXPECT_EQ(heartbeat_line(10, 10, 0, 4000, 100, 100),
            "kvharness: 10/10 cases done, 0 unexpected failure(s) so far; 1 h 06 min elapsed, nothing left");
  EXPECT_EQ(human_duration(9.94), "9.9 s");
  EXPECT_EQ(human_duration(59.4), "59 s");
  EXPECT_EQ(human_duration(61), "1 min 01 s");
}

TEST(Heartbeat, ALargeDecodeCaseCostsMoreThanASmallWriteCase) {
  Registry reg;
  Case big = pipeline_case();
  big.batch_size = 64;
  big.context_len_min = big.context_len_max = 4096;
  const std::vector<double> costs = case_costs({write_case("reshape_and_cache", 4), pipeline_case(), big}, reg);
  ASSERT_EQ(costs.size(), 3u);
  EXPECT_GT(costs[0], 0);
  EXPECT_LT(costs[0], costs[1]);
  EXPECT_LT(10 * costs[1], costs[2]);
}

}  // namespace
}  // namespace kvh
