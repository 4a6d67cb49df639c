#include "bench/timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "device/device.h"
#include "registry/registry.h"

namespace kvh {

namespace {
bool on_gpu() {
  static const bool gpu = device::info().backend != "cpu";
  return gpu;
}

void add_note(std::string* note, const std::string& why) {
  if (note) *note += (note->empty() ? "timing: " : "; timing: ") + why;
}

// A provider's own measurement (kvh_time_fn); a device fault after it propagates like a launch's.
KernelTime provider_time(const TimingOptions& t, const Kernel& k, const void* args, std::string* note) {
  kvh_timing out{};
  const int rc = k.time(args, nullptr, t.warmup, t.reps, &out);
  device::synchronize();
  KernelTime r;
  if (rc == KVH_RAISED) {
    add_note(note, k.last_error());
  } else if (rc != 0) {
    add_note(note, fmt::format("{} (error code {})", device::error_text(rc), rc));
  } else if (out.method == KVH_TIMING_NONE || !*timing_method_name(out.method)) {
    add_note(note, fmt::format("{}'s provider did not time the call (method {})", k.name, out.method));
  } else if (!std::isfinite(out.kernel_us) || out.kernel_us <= 0) {
    add_note(note, fmt::format("{}'s provider measured kernel_us = {}", k.name, out.kernel_us));
  } else {
    r.kernel_us = out.kernel_us;
    r.method = timing_method_name(out.method);
    if (std::isfinite(out.host_us) && out.host_us > 0) r.host_us = out.host_us;
  }
  return r;
}
}  // namespace

bool timing_enabled(const TimingOptions& t) { return t.reps > 0 && (on_gpu() || t.on_cpu); }

int budgeted_reps(const TimingOptions& t, double budget_us, double per_launch_us) {
  if (t.budget <= 0 || t.reps <= 1 || !(per_launch_us > 0)) return t.reps;
  const double n = std::floor(std::max(budget_us, 0.0) / per_launch_us);
  return int(std::clamp(n, 1.0, double(t.reps)));
}

std::optional<double> time_kernel(const TimingOptions& t, const std::function<int()>& launch, std::string* note,
                                  double budget_us, int* reps_out) {
  try {
    // The verdict's launch has warmed the kernel; --timing-warmup adds untimed launches. The first
    // timed launch also sizes the rest: its host wall time is what one launch costs the run.
    if (t.warmup > 0) device::warm_up_us(launch, t.warmup);
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<double> us = device::time_launches(launch, 0, 1).samples_us;
    const double per_launch = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    const int reps = budgeted_reps(t, budget_us, per_launch);
    if (reps > 1) {
      const std::vector<double> more = device::time_launches(launch, 0, reps - 1).samples_us;
      us.insert(us.end(), more.begin(), more.end());
    }
    if (reps_out) *reps_out = int(us.size());
    std::sort(us.begin(), us.end());
    const size_t n = us.size();
    return n % 2 ? us[n / 2] : 0.5 * (us[n / 2 - 1] + us[n / 2]);
  } catch (const device::LaunchError& e) {
    add_note(note, e.what());
    return std::nullopt;
  }
}

const char* timing_method_name(int method) {
  switch (method) {
    case KVH_TIMING_GRAPH: return "graph";
    case KVH_TIMING_EVENTS_BATCH: return "events_batch";
    case KVH_TIMING_HOST: return "host_clock";
    case KVH_TIMING_EVENTS: return "device_events";
  }
  return "";
}

KernelTime time_case_kernel(const TimingOptions& t, const Kernel& k, const void* args,
                            const std::function<int()>& launch, std::string* note, double budget_us) {
  if (k.time) return provider_time(t, k, args, note);
  KernelTime r;
  r.kernel_us = time_kernel(t, launch, note, budget_us, &r.reps);
  if (r.kernel_us) r.method = timing_method_name(on_gpu() ? KVH_TIMING_EVENTS : KVH_TIMING_HOST);
  return r;
}

}  // namespace kvh
