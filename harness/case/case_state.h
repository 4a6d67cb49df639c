// What the state of every case kind holds (case/attention_case.cpp's
// DecodeCase, case/write_case.cpp's WriteCase): the result being built, and
// which component a device error belongs to.
#pragma once
#include <chrono>
#include <string>
#include <utility>

#include "check/verdict.h"
#include "device/device.h"

namespace kvh {

struct CaseState {
  CaseResult r;
  const char* on_device = component::kHarness;  // the kernel launched last, until its synchronize returns
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  /// µs since the case began: what its kernel timing's budget is a share of (bench/timing.h).
  double elapsed_us() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started).count();
  }

  /// The case is UNSUPPORTED for `detail`; returns false (a stage's "stop here").
  bool unsupported(std::string detail) {
    r.v.status = Status::Unsupported;
    r.v.reason = reason::kUnsupported;
    r.v.detail = std::move(detail);
    return false;
  }
  /// From now on a device error is `component`'s (note_running_component tells --isolate).
  void running(const char* component) {
    on_device = component;
    note_running_component(component);
  }
};

/// Runs a case's device stages `f`: device memory running out is the
/// harness's (CRASH, the run stops), any other device error is a CRASH of
/// the component on the device (the harness's own is a harness error).
template <class F>
void run_device_stages(CaseState& s, F&& f) {
  try {
    f();
  } catch (const device::AllocError& e) {
    add_cause(s.r.v, component::kHarness, reason::kHarnessError, e.what(), true);
  } catch (const device::Error& e) {
    add_cause(s.r.v, s.on_device, s.on_device == component::kHarness ? reason::kHarnessError : reason::kCrash, e.what(),
              true);
  }
}

}  // namespace kvh
