#include "runner.h"

#include <fmt/format.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <cstdio>

#include "device.h"
#include "attention_case.h"
#include "router.h"
#include "write_case.h"

namespace kvh {

namespace {

// A case whose writer, reader or router policy is a known-bad regression
// fixture: its failures are expected.
bool is_fixture(const Registry& reg, const CaseResult& cr) {
  if (!cr.c.router_policy.empty() && routing::is_regression_fixture(cr.c.router_policy)) return true;
  for (const std::string* name : {&cr.c.writer, &cr.c.reader, &cr.routed_to}) {
    const Kernel* d = name->empty() ? nullptr : reg.find(*name);
    if (d && d->fixture) return true;
  }
  return false;
}

void draw_progress(size_t done, size_t total, int pass, int fail, int other) {
  const int width = 30;
  const int filled = total ? int(double(done) / double(total) * width) : width;
  std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu  PASS %d  FAIL %d  other %d", filled,
               "##############################", width - filled, "", done, total, pass, fail, other);
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

}  // namespace

std::function<void(int)> g_on_fatal_signal;

void on_fatal_signal(int sig) {
  if (g_on_fatal_signal) g_on_fatal_signal(sig);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

std::string repro_command(const RunOptions& o, const std::string& case_file, const std::string& id) {
  // Its own report directory: a repro never overwrites the run it came from.
  std::string cmd = fmt::format("{} run {} --filter 'id={}' --report-dir reports/repro", o.program, case_file, id);
  if (o.seed) cmd += fmt::format(" --seed {}", *o.seed);
  if (o.wave_size) cmd += fmt::format(" --wave-size {}", o.wave_size);
  if (o.random_order) cmd += " --random-order";
  if (o.launch_misrouted) cmd += " --launch-misrouted";
  for (const auto& p : o.providers) cmd += " --provider " + p;
  return cmd;
}

RunReport run_cases(const std::vector<Case>& cases, const std::vector<std::string>& case_file_of,
                    const Registry& registry, const RunOptions& o, const std::atomic<bool>& stop) {
  RunReport rep;
  const device::Info info = device::info();
  rep.backend = info.backend;
  rep.device = info.name;
  rep.arch = info.arch;
  rep.wave_size = info.wave_size;
  rep.compute_units = info.compute_units;
  rep.started_at = utc_now();
  rep.case_files = o.case_files;
  rep.filter = o.filter;
  int pass = 0, fail = 0, other = 0;
  auto last_flush = std::chrono::steady_clock::now();
  // A hung kernel never returns (a fiber deadlock on the cpu backend, a kernel
  // that spins on a GPU): the watchdog writes the report with that case as
  // CRASH (timeout) and ends the process, so nothing computed is lost.
  std::mutex report_mutex;
  std::atomic<long> running{-1};
  std::atomic<double> running_since{0.0};
  std::atomic<bool> finished{false};
  auto now_s = [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
  // Ends the run at case i, which never returned: writes the report with it
  // as CRASH and exits 1.
  auto abandon = [&](long i, const char* why, const std::string& detail) {
    CaseResult cr;
    cr.c = cases[size_t(i)];
    cr.v.status = Status::Crash;
    cr.v.reason = why;
    cr.v.detail = detail;
    cr.repro = repro_command(o, case_file_of[size_t(i)], cr.c.id());
    RunReport partial = rep;
    partial.results.push_back(cr);
    partial.complete = false;
    partial.stopped_because = fmt::format("case {} did not return: {}", cr.c.id(), cr.v.detail);
    partial.finished_at = utc_now();
    write_report_files(partial, o.report_dir);
    std::fprintf(stderr, "\nkvharness: %s\nreport: %s/summary.md\n", partial.stopped_because.c_str(),
                 o.report_dir.c_str());
    std::_Exit(kExitFail);
  };
  // A wild access in a kernel on the cpu backend is a signal in this process:
  // report the case as CRASH instead of dying without a report. (Not
  // async-signal-safe; it runs only when the process is lost anyway.)
  g_on_fatal_signal = [&](int sig) {
    const long i = running.load();
    if (i < 0) return;
    abandon(i, reason::kCrash, fmt::format("signal {} ({}) while the case ran: an out-of-bounds access on the cpu "
                                           "backend, or a fault in the harness", sig, strsignal(sig)));
  };
  std::thread watchdog([&] {
    double stop_seen = 0;
    while (!finished.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const long i = running.load();
      if (i < 0) continue;
      const double t = now_s(), elapsed = t - running_since.load();
      if (stop.load() && stop_seen == 0) stop_seen = t;
      const bool timed_out = o.case_timeout_s > 0 && elapsed > o.case_timeout_s;
      const bool stuck_after_stop = stop_seen > 0 && t - stop_seen > 5.0;
      if (!timed_out && !stuck_after_stop) continue;
      std::lock_guard<std::mutex> lk(report_mutex);
      abandon(i, reason::kTimeout,
              fmt::format("the case ran {:.0f} s without returning ({}); a hung kernel?", elapsed,
                          timed_out ? fmt::format("--case-timeout {}", o.case_timeout_s) : "interrupted"));
    }
  });
  struct Join {
    std::thread& t;
    std::atomic<bool>& f;
    ~Join() {
      g_on_fatal_signal = nullptr;
      f = true;
      t.join();
    }
  } join{watchdog, finished};
  for (size_t i = 0; i < cases.size() && !stop.load(); ++i) {
    const Case& c = cases[i];
    const auto t0 = std::chrono::steady_clock::now();
    running_since = now_s();
    running = long(i);
    CaseResult cr;
    try {
      cr = c.kind == CaseKind::Write ? run_write_case(c, registry, o.timing)
                                     : run_decode_case(c, registry, DecodeOptions{o.launch_misrouted, o.timing});
    } catch (const std::exception& e) {
      cr.c = c;
      cr.v.status = Status::Crash;
      cr.v.reason = reason::kCrash;
      cr.v.detail = fmt::format("the harness caught an exception: {}", e.what());
    }
    cr.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    cr.repro = repro_command(o, case_file_of[i], c.id());
    cr.fixture = is_fixture(registry, cr);
    (cr.v.status == Status::Pass ? pass : cr.v.status == Status::Fail ? fail : other)++;
    // A sticky device fault leaves the context unusable: every later case would CRASH too.
    const bool device_lost = cr.v.status == Status::Crash && !device::healthy();
    if (device_lost)
      rep.stopped_because = fmt::format("device fault in case {} (the device is unusable after it): {}", c.id(),
                                        cr.v.detail);
    {
      std::lock_guard<std::mutex> lk(report_mutex);
      running = -1;
      rep.results.push_back(std::move(cr));
    }
    if (o.progress) draw_progress(i + 1, cases.size(), pass, fail, other);
    if (device_lost) {
      if (o.progress) std::fprintf(stderr, "\n");
      break;
    }
    // Keep a partial report on disk: a fault that kills the process loses nothing already computed.
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - last_flush).count() > o.flush_seconds) {
      std::lock_guard<std::mutex> lk(report_mutex);
      write_report_files(rep, o.report_dir);
      last_flush = std::chrono::steady_clock::now();
    }
  }
  rep.complete = rep.results.size() == cases.size() && rep.stopped_because.empty();
  if (!rep.complete && rep.stopped_because.empty())
    rep.stopped_because = fmt::format("interrupted after {} of {} cases", rep.results.size(), cases.size());
  rep.finished_at = utc_now();
  write_report_files(rep, o.report_dir);
  return rep;
}

int exit_code_for(const RunReport& r, const Registry& registry) {
  bool any_ran = false, any_fail = false;
  for (const auto& cr : r.results) {
    if (cr.v.status != Status::Unsupported) any_ran = true;
    if ((cr.v.status == Status::Fail || cr.v.status == Status::Crash) && !(cr.fixture || is_fixture(registry, cr)))
      any_fail = true;
  }
  if (any_fail || !r.complete) return kExitFail;
  return any_ran ? kExitPass : kExitNothingRunnable;
}

}  // namespace kvh
