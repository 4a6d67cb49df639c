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

struct TimingOptions {
  int warmup = 3;
  int reps = 20;        // 0: no timing
  bool on_cpu = false;  // time on the cpu backend too (host clock)
};

/// Whether cases are timed under `t` on this backend.
bool timing_enabled(const TimingOptions& t);

/// Median microseconds of `launch` (returns 0 or a runtime error code), or
/// nullopt when a timed launch returned an error code; then "; timing: <why>"
/// is appended to *note. A device fault (device::Error) propagates.
std::optional<double> time_kernel(const TimingOptions& t, const std::function<int()>& launch, std::string* note);

/// One kernel's time: kernel_us, host_us (provider timing only) and how
/// kernel_us was measured (timing_method_name of a kvh_timing_method; empty
/// when not measured).
struct KernelTime {
  std::optional<double> kernel_us, host_us;
  std::string method;
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
                            const std::function<int()>& launch, std::string* note);

}  // namespace kvh
