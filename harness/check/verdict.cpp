#include "check/verdict.h"

#include <atomic>

namespace kvh {

const char* to_string(Status s) {
  switch (s) {
    case Status::Pass: return "PASS";
    case Status::Fail: return "FAIL";
    case Status::Unsupported: return "UNSUPPORTED";
    case Status::Crash: return "CRASH";
    case Status::Xpass: return "XPASS";
    case Status::Interrupted: return "INTERRUPTED";
  }
  return "?";
}

const std::vector<const char*>& reason_names() {
  using namespace reason;
  static const std::vector<const char*> names = {kMismatch, kOutOfView,    kUnwritten,   kNanOrInf,
                                                 kMisroute, kUnsupported,  kLaunchError, kCrash,
                                                 kTimeout,  kHarnessError, kXpass,       kInterrupted};
  return names;
}

const std::vector<const char*>& component_names() {
  using namespace component;
  static const std::vector<const char*> names = {kWriter, kReader, kRouter, kHarness, kPlanner};
  return names;
}

void add_cause(Verdict& v, const char* comp, const char* why, std::string detail, bool crash) {
  if (v.causes.empty()) {
    v.status = crash ? Status::Crash : Status::Fail;
    v.reason = why;
    v.detail = detail;
    v.component = comp;
  } else if (crash) {
    v.status = Status::Crash;  // a CRASH anywhere makes the case a CRASH
  }
  v.causes.push_back(Cause{comp, why, std::move(detail), crash, {}});
}

void attribute(Verdict& v, const char* comp) {
  if ((v.status != Status::Fail && v.status != Status::Crash) || !v.causes.empty()) return;
  v.component = comp;
  v.causes.push_back(Cause{comp, v.reason, v.detail, v.status == Status::Crash, {}});
}

namespace {
std::atomic<const char*> g_running_component{component::kHarness};
std::atomic<void (*)(const char*)> g_component_hook{nullptr};
}  // namespace

void note_running_component(const char* c) {
  const char* before = g_running_component.exchange(c);
  if (auto hook = g_component_hook.load(); hook && before != c) hook(c);
}
void set_running_component_hook(void (*hook)(const char*)) { g_component_hook.store(hook); }
const char* running_component() { return g_running_component.load(); }

bool harness_fault(const Verdict& v) {
  for (const auto& c : v.causes)
    if (c.component == component::kHarness) return true;
  return false;
}

}  // namespace kvh
