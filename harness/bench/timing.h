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
#pragma once
#include <functional>
#include <optional>
#include <string>

namespace kvh {

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

}  // namespace kvh
