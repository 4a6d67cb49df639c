#include "bench/timing.h"

#include "device/device.h"

namespace kvh {

bool timing_enabled(const TimingOptions& t) {
  static const bool gpu = device::info().backend != "cpu";
  return t.reps > 0 && (gpu || t.on_cpu);
}

std::optional<double> time_kernel(const TimingOptions& t, const std::function<int()>& launch, std::string* note) {
  try {
    return device::time_median_us(launch, t.warmup, t.reps);
  } catch (const device::LaunchError& e) {
    if (note) *note += (note->empty() ? "timing: " : "; timing: ") + std::string(e.what());
    return std::nullopt;
  }
}

}  // namespace kvh
