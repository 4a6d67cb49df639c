// kernel_us (results.json) for a case: how it is measured and when.
//   - GPU backends only by default; on the cpu backend kernel_us stays null
//     (the results.json contract), unless TimingOptions::on_cpu (tests).
//   - Only a case that PASSes is timed: a wrong kernel's time means nothing,
//     and relaunching it could only spread its damage.
//   - Timed after the correctness launch and after its results were copied
//     back, so the verdict always comes from the first launch on poisoned
//     outputs. Relaunching is idempotent: a writer writes the same bytes to
//     the same slots, a reader overwrites `out` and its workspace.
//   - warmup untimed launches, then reps timed ones (device events), median.
//   - A kernel whose provider times itself (kvh_kernel_desc.time, kvharness
//     0.5: the Python bridge) is asked instead, on the same arguments and
//     under the same rules: its kernel_us is device time (graph replays or
//     events around a batch of calls), with host_us, its host overhead, beside.
#pragma once
#include <functional>
#include <optional>
#include <string>

namespace kvh {

struct Kernel;

/// How a case's kernels are timed. Budgeted (the default, issue 24): the verdict's launch has
/// warmed the kernel (`warmup` adds untimed launches); the first timed launch's host wall time
/// sizes the rest: as many timed launches as fit in `budget` times the case's wall time so far,
/// at least 1 and at most `reps`; so timing adds about `budget` to a run however small its
/// kernels. budget 0: always `reps`.
struct TimingOptions {
  int warmup = 0;
  int reps = 20;        // the most timed launches; 0: no timing
  double budget = 0.08; // share of the case's wall time the timing may add; 0: no budget (reps every time)
  bool on_cpu = false;  // time on the cpu backend too (host clock)
};

/// The timed launches a kernel gets: reps when t.budget is 0, else budget_us / per_launch_us
/// clamped to [1, t.reps] (budget_us: t.budget times the case's wall time so far, shared by the
/// kernels the case times; per_launch_us: the first timed launch's host wall time).
int budgeted_reps(const TimingOptions& t, double budget_us, double per_launch_us);

/// Whether cases are timed under `t` on this backend.
bool timing_enabled(const TimingOptions& t);

/// Median microseconds of `launch` (returns 0 or a runtime error code), or
/// nullopt when a timed launch returned an error code; then "; timing: <why>"
/// is appended to *note. A device fault (device::Error) propagates.
/// budget_us: the case's timing budget for this kernel (budgeted_reps); *reps_out, when given,
/// is set to the timed launches made.
std::optional<double> time_kernel(const TimingOptions& t, const std::function<int()>& launch, std::string* note,
                                  double budget_us = 0, int* reps_out = nullptr);

/// One kernel's time: kernel_us, host_us (provider timing only) and how
/// kernel_us was measured (timing_method_name of a kvh_timing_method; empty
/// when not measured).
struct KernelTime {
  std::optional<double> kernel_us, host_us;
  std::string method;
  int reps = 0;  // timed launches behind kernel_us (0: not measured here, or by the provider)
};

/// Name of a kvh_timing_method in results.json: "graph", "events_batch",
/// "host_clock", "device_events"; "" for KVH_TIMING_NONE or an unknown value.
const char* timing_method_name(int method);

/// Times kernel `k` on `args` (the kvh_write_args or kvh_attention_args of
/// the verdict's launch, by its role): through k.time when its provider has
/// one, else time_kernel(launch) (device_events on a GPU, host_clock on the
/// cpu backend). A provider that raised or returned an error code, or a
/// measurement that is not a finite positive number, leaves kernel_us null
/// and appends "; timing: <why>" to *note. A device fault propagates.
KernelTime time_case_kernel(const TimingOptions& t, const Kernel& k, const void* args,
                            const std::function<int()>& launch, std::string* note, double budget_us = 0);

}  // namespace kvh
