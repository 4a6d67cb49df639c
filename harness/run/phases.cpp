#include "run/phases.h"

#include <algorithm>

namespace kvh {

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::Setup: return "setup";
    case Phase::AllocFill: return "alloc_fill";
    case Phase::Inputs: return "inputs";
    case Phase::Copy: return "copy";
    case Phase::Launch: return "launch";
    case Phase::Reference: return "reference";
    case Phase::Check: return "check";
    case Phase::Timing: return "timing";
    case Phase::Count: break;
  }
  return "?";
}

PhaseClock::PhaseClock(PhaseTimes& out, Phase first)
    : out_(out), current_(first), since_(std::chrono::steady_clock::now()) {}

PhaseClock::~PhaseClock() { enter(current_); }

void PhaseClock::enter(Phase p) {
  const auto now = std::chrono::steady_clock::now();
  out_[size_t(current_)] += std::chrono::duration<double, std::milli>(now - since_).count();
  since_ = now;
  current_ = p;
}

namespace {
thread_local PhaseClock* g_current_clock = nullptr;
}

CurrentPhaseClock::CurrentPhaseClock(PhaseClock& clock) : previous_(g_current_clock) { g_current_clock = &clock; }
CurrentPhaseClock::~CurrentPhaseClock() { g_current_clock = previous_; }

void enter_phase(Phase p) {
  if (g_current_clock) g_current_clock->enter(p);
}

std::vector<std::pair<std::string, double>> phase_totals(const std::vector<PhaseTimes>& cases) {
  std::vector<std::pair<std::string, double>> out;
  for (int p = 0; p < kPhaseCount; ++p) {
    double sum = 0;
    for (const auto& t : cases) sum += t[size_t(p)];
    out.emplace_back(phase_name(Phase(p)), sum);
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

}  // namespace kvh
