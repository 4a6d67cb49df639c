// Runs a list of cases, keeps the report on disk as it goes, and maps the
// outcome to an exit code that suits `git bisect run`.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "expectation.h"
#include "registry/registry.h"
#include "report/report.h"
#include "bench/timing.h"

namespace kvh {

/// Exit codes, chosen for `git bisect run` (README "Exit codes"):
///   0    good: every case ran, no unexpected failure
///   1    bad: a kernel under test failed unexpectedly (FAIL, CRASH, XPASS)
///   2    usage or input error (with --bisect: 125, the commit cannot be tested)
///   125  this commit cannot be tested: nothing runnable, a provider that does not load
///   128  harness-side failure (host allocation, I/O): git aborts the bisect
///   128+N  interrupted by signal N (130 SIGINT, 143 SIGTERM): git aborts the bisect
enum ExitCode {
  kExitPass = 0,
  kExitFail = 1,
  kExitUsage = 2,
  kExitNothingRunnable = 125,
  kExitHarness = 128,
};

struct RunOptions {
  std::string program = "kvharness";  // how this binary was invoked: repro commands start with it
  std::vector<std::string> case_files;
  std::string filter;
  std::string report_dir = "reports/latest";
  std::optional<uint64_t> seed;      // replaces every case file's seeds
  int wave_size = 0;                 // 0: the backend's default
  bool random_order = false;         // cpu backend: random fiber order
  bool progress = false;             // draw a progress bar on stderr
  std::vector<std::string> providers;
  std::vector<std::string> replace_kernels;  // --replace-kernel REAL=WITH (Registry::replace)
  std::vector<std::string> replace_routers;  // --replace-router REAL=WITH (routing::substitute_policy)
  bool fail_fast = false;            // stop at the first unexpected failure (the run is incomplete, exit 1)
  double flush_seconds = 2.0;        // how often the partial report is rewritten
  double case_timeout_s = 600;       // a case running longer is a hung kernel: CRASH (timeout), run ends
  bool launch_misrouted = false;     // launch misrouted kernels anyway and report the damage
  TimingOptions timing;              // kernel_us of passing cases (GPU backends; reps 0: off)
  std::vector<ExpectedFailure> expectations;  // case files' [[expected_failure]] and --known-failures
  std::vector<std::string> known_failures;    // --known-failures files (repro commands repeat them)
  double heartbeat_seconds = 0;      // > 0: print a progress line this often (non-TTY runs)
  bool isolate = false;              // --isolate: run the cases in worker processes (harness/run/isolate.h)
  int isolate_batch = 0;             // --isolate-batch: cases per worker process (0: all; a crash starts a new one)
  std::vector<std::string> worker_command;  // --isolate: a worker's argv (this binary, the run's arguments)
  std::vector<size_t> worker_index;  // --isolate: case i's index in the worker's list (which --shard and
                                     // --resume did not shorten); empty: the same list
  std::vector<CaseResult> resumed;   // --resume: cases the resumed run decided; reported as they were
  // Prints the end of a run (verdict counts, the `report:` line) as the command line does; run_cases
  // calls it itself only when it abandons a run whose case never returned (a signal or a timeout
  // during a case), so that the end reads the same, on the same stream, however the run ended.
  std::function<void(const RunReport&)> print_end;
};

/// `s` as one POSIX shell word: unchanged when it holds only [A-Za-z0-9_./:=,@+%-], else single-quoted
/// (a provider spec `python:kvharness.stacks.vllm?src=PATH` holds the glob character `?`).
std::string shell_word(const std::string& s);
/// The command line that re-runs case `id` alone under `o`; every argument one shell word.
std::string repro_command(const RunOptions& o, const std::string& case_file, const std::string& id);

/// Relative cost of each case, for the heartbeat's estimate of the time left: the bytes it
/// allocates and checks (a decode case's estimate_decode_memory, a write case's K, V and cache
/// bytes) plus a fixed part per case (setup and judging). Only ratios between cases matter.
std::vector<double> case_costs(const std::vector<Case>& cases, const Registry& registry);
/// "35 s", "2 min 05 s", "1 h 02 min": a duration as a person reads it.
std::string human_duration(double seconds);
/// The heartbeat of a run whose stderr is not a terminal: "kvharness: D/T cases done, U unexpected
/// failure(s) so far; E elapsed, about L left". The estimate scales the elapsed time by the cost
/// still to run over the cost run so far (this process's cases only: resumed ones took no time
/// here); "estimate after the first case" while nothing has run.
std::string heartbeat_line(size_t done, size_t total, int unexpected, double elapsed_s, double cost_done,
                           double cost_all);

/// A run's heartbeat state, one per run loop (run_cases, run_cases_isolated): when it started and
/// the cost of the cases done (case_costs; the caller serialises finished()).
class Heartbeat {
 public:
  Heartbeat(const std::vector<Case>& cases, const Registry& registry);
  /// Case `i` (an index into the constructor's cases) has its verdict.
  void finished(size_t i) { cost_done_ += costs_[i]; }
  /// heartbeat_line for now, `done` of `total` cases judged.
  std::string line(size_t done, size_t total, int unexpected) const;

 private:
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  std::vector<double> costs_;
  double cost_done_ = 0, cost_all_ = 0;
};

/// Runs `cases` (which came from o.case_files), judges each against
/// o.expectations (harness/check/expectations.h) and writes the report, starting
/// from `base` (the run's metadata: command line, version, label). A case
/// that throws is a harness failure (CRASH, component "harness") and the run
/// goes on, unless the device is lost (a sticky fault such as an illegal
/// address: device::healthy() is false after the CRASH): then the run stops
/// there, with every verdict so far in the report, complete = false and
/// stopped_because naming the case. `stop` set from outside to a signal
/// number (SIGINT, SIGTERM) ends the run at once: the case in flight gets no
/// verdict (INTERRUPTED), the report says incomplete, and the process exits
/// with 128 + that number. The returned report carries its exit_code.
RunReport run_cases(const std::vector<Case>& cases, const std::vector<std::string>& case_file_of,
                    const Registry& registry, const RunOptions& o, const std::atomic<int>& stop,
                    const RunReport& base = {});

/// Runs one case in this process and times it: its verdict as the case code
/// gives it (not yet judged against expectations, no repro line), phases and
/// wall_ms. A harness exception becomes CRASH harness_error; the device is
/// settled afterwards (device::healthy() tells whether a fault was sticky).
CaseResult run_one_case(const Case& c, const Registry& registry, const RunOptions& o);

/// The report of a run about to start: `base` plus the device, start time,
/// case files, filter, seed, expectation sources, and o.resumed as the first results.
RunReport start_report(const RunReport& base, const RunOptions& o);

/// Closes a run of `total` cases (resumed ones included): complete when every
/// one has a result and nothing stopped it; stopped_because, interrupted_by
/// (from `stop_signal`, 0 if none), finished_at and exit_code.
void finish_report(RunReport& rep, size_t total, int stop_signal);

/// Handler for SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT: while run_cases runs, writes the
/// report with the running case as CRASH and exits 1; otherwise re-raises.
void on_fatal_signal(int sig);
extern std::function<void(int)> g_on_fatal_signal;

/// The exit code of a finished (or stopped) run: 128+signal if interrupted;
/// 128 if the harness failed (a cause of component "harness"); 1 if any case
/// failed unexpectedly (FAIL, CRASH or XPASS not expected) or the run was cut
/// short; 125 if no case ran (every one UNSUPPORTED); else 0.
int exit_code_for(const RunReport& r);

}  // namespace kvh
