// What a case comes to: the contract's verdicts and reason classes
// (DESIGN.md "Contract that scripts and CI rely on").
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "case.h"
#include "run/phases.h"

namespace kvh {

/// Verdict classes. PASS, FAIL, UNSUPPORTED and CRASH are the contract's;
/// XPASS is a case that was declared to fail (a case file's
/// [[expected_failure]] or --known-failures) and did not: the harness or the
/// declaration lost sight of a bug, so it fails the run. INTERRUPTED is the
/// case that was running when SIGINT/SIGTERM arrived: no verdict on the kernel.
enum class Status { Pass, Fail, Unsupported, Crash, Xpass, Interrupted };
const char* to_string(Status s);

/// Reason classes for non-PASS verdicts, as results.json spells them.
namespace reason {
inline constexpr const char* kMismatch = "mismatch";
inline constexpr const char* kOutOfView = "out_of_view_write";
inline constexpr const char* kUnwritten = "unwritten_output";
inline constexpr const char* kNanOrInf = "nan_or_inf";
inline constexpr const char* kMisroute = "misroute";
inline constexpr const char* kUnsupported = "unsupported_config";
inline constexpr const char* kLaunchError = "launch_error";
inline constexpr const char* kCrash = "crash";
inline constexpr const char* kTimeout = "timeout";
inline constexpr const char* kHarnessError = "harness_error";  // host allocation, I/O: not the kernel's fault
inline constexpr const char* kXpass = "xpass";
inline constexpr const char* kInterrupted = "interrupted";
}  // namespace reason
/// Every reason class above, in that order: the ones a results.json reader accepts.
const std::vector<const char*>& reason_names();

/// Which part of a case a failure belongs to. A regression fixture exempts
/// only failures of its own component (DESIGN.md "Regression fixtures").
namespace component {
inline constexpr const char* kWriter = "writer";
inline constexpr const char* kReader = "reader";
inline constexpr const char* kRouter = "router";
inline constexpr const char* kHarness = "harness";
/// A reader's planner (provider.h kvh_plan_fn, kvharness 0.6): it raised or built a malformed plan.
inline constexpr const char* kPlanner = "planner";
}  // namespace component
/// Every component above, in that order: the ones a results.json reader accepts.
const std::vector<const char*>& component_names();

/// One failure found in a case. A pipeline can have several: the writer's
/// cache, the router's decision and the reader's output are judged apart.
struct Cause {
  std::string component;  // component::k*
  std::string reason;     // reason::k*
  std::string detail;
  bool crash = false;     // a CRASH (never exempted by a fixture), not a FAIL
  std::string expected_by;  // non-empty: why this failure is expected (a fixture, a declaration)
};

/// status/reason/detail/component are the primary (first) cause's; causes
/// lists every failure found, in the order the case checks them.
struct Verdict {
  Status status = Status::Pass;
  std::string reason;              // empty for PASS
  std::string detail;              // one paragraph a human can act on
  std::string component;           // component::k* of the primary cause; empty for PASS/UNSUPPORTED
  std::vector<Cause> causes;
  std::optional<double> max_abs_err, max_rel_err;
  std::optional<double> max_ulp_err;   // attention: largest |got - ref| / output_ulp(ref) (tolerance.h); issue 23 B
  std::optional<double> kernel_us;     // median µs of the kernel (pipeline: the reader); GPU backends, PASS only
  std::optional<double> writer_us;     // pipeline: median µs of the writer
  std::optional<double> host_us;       // median host µs of one call of the kernel_us kernel, when its provider times
                                       // itself (kvh_time_fn): the bridge's and the provider's host overhead
  std::string timing_method;           // how kernel_us was measured (timing.h names); empty: not measured
  int timing_reps = 0;                 // timed launches behind kernel_us (bench/timing.h budget); 0: a provider's
                                       // own timing, or not measured
  int64_t bad_elements = 0;
};

/// One case after it ran.
struct CaseResult {
  Case c;
  Verdict v;
  uint64_t data_seed = 0;          // seed of the random inputs
  std::string key_layout, value_layout;  // "(shape):(stride)+offset"
  std::string routed_to, route_reason;   // attention and pipeline: the reader that ran, and why
  std::string repro;               // command line that re-runs this case alone
  bool fixture = false;            // a regression fixture (kernel or router policy) took part
  bool expected = false;           // FAIL/CRASH whose every cause is expected (xfail): not counted
  std::vector<std::string> expectations;  // sources of the declarations that matched this case (file:line)
  std::vector<int32_t> context_lens;      // attention/pipeline: the drawn per-sequence lengths
  std::vector<int32_t> query_lens;        // ragged cases: the drawn per-sequence query lengths (empty: decode)
  std::vector<int64_t> padding_tokens;    // write cases: the token indices whose slot_mapping entry is -1
  double wall_ms = 0;
  PhaseTimes phases{};                    // ms per phase (phases.h); they add up to about wall_ms
  double reference_ms = 0;                // attention/pipeline: wall ms of the float64 attention reference,
                                          // on the host's cores while the device works (phases count the wait)
  std::string reference_id;               // attention/pipeline: 16 hex digits naming the reference's inputs
                                          // (harness/case/reference_cache.h); equal ids, one reference
  bool reference_reused = false;          // attention/pipeline: the reference came from the run's cache

  /// A FAIL, CRASH or XPASS that is not expected: what makes a run fail.
  bool unexpected_failure() const {
    return status_is_failure(v.status) && !expected;
  }
  static bool status_is_failure(Status s) { return s == Status::Fail || s == Status::Crash || s == Status::Xpass; }
};

/// Adds a failure to v: the first becomes the primary (status, reason,
/// detail, component).
void add_cause(Verdict& v, const char* component, const char* reason, std::string detail, bool crash = false);
/// Gives a verdict made without causes (a check's FAIL) its cause, owned by
/// `component`. PASS and UNSUPPORTED stay as they are.
void attribute(Verdict& v, const char* component);
/// The component whose kernel runs now (component::k*), or the harness: set
/// by the case code around each launch, read by the runner when a case never
/// returns (a hang, a fatal signal) to blame the right kernel.
void note_running_component(const char* component);
const char* running_component();
/// Called with the new component whenever note_running_component changes it
/// (nullptr: none). --isolate's worker tells its parent through it which
/// kernel runs, so that a crash that kills the worker still names it.
void set_running_component_hook(void (*hook)(const char*));
/// True when any cause belongs to the harness (host allocation, I/O).
bool harness_fault(const Verdict& v);

}  // namespace kvh
