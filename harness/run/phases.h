// Where a case's wall time goes: each case charges its time to one phase at
// a time, so the phases of a case add up to its wall time (results.json
// "phases_ms", summary.md "Where the time went", `kvharness run --profile`).
#pragma once
#include <array>
#include <chrono>
#include <string>
#include <vector>

namespace kvh {

/// The phases of a case, in the order a case usually passes through them.
///   setup      routing, sequences, the layout (host bookkeeping)
///   alloc_fill arenas and device buffers, sentinels and old-token fills
///   inputs     keys, values and queries (the counter-based generator)
///   copy       host <-> device transfers
///   launch     the kernels under test, launch to synchronize
///   reference  the float64 reference (writer contents, attention)
///   check      comparisons and verdicts
///   timing     kernel_us / writer_us repetitions (GPU backends)
enum class Phase : int { Setup, AllocFill, Inputs, Copy, Launch, Reference, Check, Timing, Count };
constexpr int kPhaseCount = int(Phase::Count);

/// The phase's name in results.json and the reports ("alloc_fill", ...).
const char* phase_name(Phase p);

/// Milliseconds per phase.
using PhaseTimes = std::array<double, kPhaseCount>;

/// Charges wall time to the current phase: enter(p) closes the running
/// phase and opens p. The destructor closes the last one. Not thread-safe:
/// one clock per case.
class PhaseClock {
 public:
  explicit PhaseClock(PhaseTimes& out, Phase first = Phase::Setup);
  ~PhaseClock();
  PhaseClock(const PhaseClock&) = delete;
  PhaseClock& operator=(const PhaseClock&) = delete;
  void enter(Phase p);
  Phase current() const { return current_; }

 private:
  PhaseTimes& out_;
  Phase current_;
  std::chrono::steady_clock::time_point since_;
};

/// Makes `clock` the one enter_phase() drives on this thread while the
/// scope lives (the runner, around one case: what a case's code leaves
/// behind, its buffers' release included, is charged to its last phase).
class CurrentPhaseClock {
 public:
  explicit CurrentPhaseClock(PhaseClock& clock);
  ~CurrentPhaseClock();

 private:
  PhaseClock* previous_;
};
/// The case code's marker: from now on its time goes to `p`. A no-op when no
/// clock is current (unit tests that call a case function directly).
void enter_phase(Phase p);

/// Totals of phases over many cases, largest first: (name, ms) pairs.
std::vector<std::pair<std::string, double>> phase_totals(const std::vector<PhaseTimes>& cases);

}  // namespace kvh
