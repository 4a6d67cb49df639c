// Runs a list of cases, keeps the report on disk as it goes, and maps the
// outcome to an exit code that suits `git bisect run`.
#pragma once
#include <atomic>
#include <functional>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "registry.h"
#include "report.h"
#include "timing.h"

namespace kvh {

/// Exit codes (DESIGN.md "CLI"): 0 all pass, 1 any failure, 125 nothing runnable, 2 usage or input error.
enum ExitCode { kExitPass = 0, kExitFail = 1, kExitUsage = 2, kExitNothingRunnable = 125 };

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
  double flush_seconds = 2.0;        // how often the partial report is rewritten
  double case_timeout_s = 600;       // a case running longer is a hung kernel: CRASH (timeout), run ends
  bool launch_misrouted = false;     // launch misrouted kernels anyway and report the damage
  TimingOptions timing;              // kernel_us of passing cases (GPU backends; reps 0: off)
};

/// The command line that re-runs case `id` alone under `o`.
std::string repro_command(const RunOptions& o, const std::string& case_file, const std::string& id);

/// Runs `cases` (which came from o.case_files) and writes the report. A case
/// that throws becomes CRASH and the run goes on, unless the device is lost
/// (a sticky fault such as an illegal address: device::healthy() is false
/// after the CRASH): then the run stops there, with every verdict so far in
/// the report, complete = false and stopped_because naming the case. `stop`
/// set from outside (SIGINT) ends the run after the current case with
/// complete = false.
RunReport run_cases(const std::vector<Case>& cases, const std::vector<std::string>& case_file_of,
                    const Registry& registry, const RunOptions& o, const std::atomic<bool>& stop);

/// Handler for SIGSEGV, SIGBUS, SIGFPE, SIGILL: while run_cases runs, writes the
/// report with the running case as CRASH and exits 1; otherwise re-raises.
void on_fatal_signal(int sig);
extern std::function<void(int)> g_on_fatal_signal;

/// 1 if a case not marked `fixture` FAILed or CRASHed, or the run was cut
/// short; 125 if no case ran (every one UNSUPPORTED); else 0.
int exit_code_for(const RunReport& r, const Registry& registry);

}  // namespace kvh
