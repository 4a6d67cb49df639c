#include "run/runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <cstdio>

#include "case/attention_case.h"
#include "device/device.h"
#include "check/expectations.h"
#include "run/isolate.h"
#include "router/router.h"
#include "case/write_case.h"

namespace kvh {

namespace {

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

std::vector<double> case_costs(const std::vector<Case>& cases, const Registry& registry) {
  constexpr double kPerCase = 1 << 20;  // setup, judging and reports: a small case is not free
  std::vector<double> out;
  out.reserve(cases.size());
  for (const Case& c : cases) {
    if (c.kind == CaseKind::Write) {  // K and V in, the cache, its snapshot and the reference's copy
      out.push_back(kPerCase + 4.0 * 2 * 2 * double(c.batch_size * c.num_kv_heads * c.head_size));
      continue;
    }
    const Kernel* k = c.router_policy.empty() ? registry.find(c.reader) : nullptr;
    const MemoryEstimate e = estimate_decode_memory(c, k ? k->cache_format : int32_t(KVH_CACHE_SHUFFLE));
    out.push_back(kPerCase + double(e.device_bytes + e.host_bytes));
  }
  return out;
}

std::string human_duration(double seconds) {
  if (seconds < 9.95) return fmt::format("{:.1f} s", std::max(0.0, seconds));
  const long s = std::lround(seconds);
  if (s < 60) return fmt::format("{} s", s);
  if (s < 3600) return fmt::format("{} min {:02} s", s / 60, s % 60);
  return fmt::format("{} h {:02} min", s / 3600, (s % 3600) / 60);
}

std::string heartbeat_line(size_t done, size_t total, int unexpected, double elapsed_s, double cost_done,
                           double cost_all) {
  const std::string left =
      done >= total    ? "nothing left"
      : cost_done <= 0 ? "estimate after the first case"
                       : "about " + human_duration(elapsed_s * (cost_all - cost_done) / cost_done) + " left";
  return fmt::format("kvharness: {}/{} cases done, {} unexpected failure(s) so far; {} elapsed, {}", done, total,
                     unexpected, human_duration(elapsed_s), left);
}

Heartbeat::Heartbeat(const std::vector<Case>& cases, const Registry& registry) : costs_(case_costs(cases, registry)) {
  for (double x : costs_) cost_all_ += x;
}

std::string Heartbeat::line(size_t done, size_t total, int unexpected) const {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  return heartbeat_line(done, total, unexpected, elapsed, cost_done_, cost_all_);
}

void on_fatal_signal(int sig) {
  if (g_on_fatal_signal) g_on_fatal_signal(sig);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

std::string shell_word(const std::string& s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char ch) {
    return std::isalnum(ch) || std::strchr("_./:=,@+-%", ch) != nullptr;
  });
  if (plain) return s;
  std::string out = "'";
  for (char ch : s) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

std::string repro_command(const RunOptions& o, const std::string& case_file, const std::string& id) {
  // Its own report directory: a repro never overwrites the run it came from. Every argument is one shell
  // word: a provider spec `python:M?src=PATH` holds a glob character, a path may hold spaces.
  std::string cmd = fmt::format("{} run {} --filter 'id={}' --report-dir reports/repro", shell_word(o.program),
                                shell_word(case_file), id);
  if (o.seed) cmd += fmt::format(" --seed {}", *o.seed);
  if (o.wave_size) cmd += fmt::format(" --wave-size {}", o.wave_size);
  if (o.random_order) cmd += " --random-order";
  if (o.launch_misrouted) cmd += " --launch-misrouted";
  for (const auto& p : o.providers) cmd += " --provider " + shell_word(p);
  for (const auto& r : o.replace_kernels) cmd += " --replace-kernel " + shell_word(r);
  for (const auto& r : o.replace_routers) cmd += " --replace-router " + shell_word(r);
  for (const auto& k : o.known_failures) cmd += " --known-failures " + shell_word(k);
  return cmd;
}

CaseResult run_one_case(const Case& c, const Registry& registry, const RunOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  CaseResult cr;
  note_running_component(component::kHarness);
  PhaseTimes phases{};
  std::optional<PhaseClock> clock(std::in_place, phases);
  std::optional<CurrentPhaseClock> current(std::in_place, *clock);
  try {
    cr = c.kind == CaseKind::Write ? run_write_case(c, registry, o.timing)
                                   : run_decode_case(c, registry, DecodeOptions{o.launch_misrouted, o.timing});
  } catch (const std::exception& e) {
    // Kernels cannot throw through the C ABI: what reaches here is the harness's (host allocation, ...).
    cr = CaseResult{};
    cr.c = c;
    add_cause(cr.v, component::kHarness, reason::kHarnessError,
              fmt::format("the harness failed, not the kernel: {}", e.what()), true);
  }
  try {
    device::settle();  // nothing of this case still runs when its pooled buffers serve the next
  } catch (const device::Error&) {
    // A fault here is the device's state, which the caller reads through device::healthy().
  }
  current.reset();
  clock.reset();  // the case's last phase ends here, its buffers freed
  note_running_component(component::kHarness);
  cr.phases = phases;
  cr.wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return cr;
}

RunReport start_report(const RunReport& base, const RunOptions& o) {
  RunReport rep = base;
  const device::Info info = device::info();
  rep.backend = info.backend;
  rep.device = info.name;
  rep.arch = info.arch;
  rep.wave_size = info.wave_size;
  rep.compute_units = info.compute_units;
  rep.started_at = utc_now();
  rep.case_files = o.case_files;
  rep.providers = o.providers;
  rep.filter = o.filter;
  rep.seed = o.seed;
  for (const auto& e : o.expectations) rep.expectation_sources.push_back(e.source);
  rep.results = o.resumed;  // --resume: the cases already decided, as they were
  return rep;
}

void finish_report(RunReport& rep, size_t total, int stop_signal) {
  rep.complete = rep.results.size() == total && rep.stopped_because.empty();
  if (stop_signal && !rep.complete) {
    rep.interrupted_by = stop_signal;
    if (rep.stopped_because.empty())
      rep.stopped_because = fmt::format("interrupted by signal {} ({}) after {} of {} cases", stop_signal,
                                        strsignal(stop_signal), rep.results.size(), total);
  }
  if (!rep.complete && rep.stopped_because.empty())
    rep.stopped_because = fmt::format("stopped after {} of {} cases", rep.results.size(), total);
  rep.finished_at = utc_now();
  rep.exit_code = exit_code_for(rep);
}

RunReport run_cases(const std::vector<Case>& cases, const std::vector<std::string>& case_file_of,
                    const Registry& registry, const RunOptions& o, const std::atomic<int>& stop,
                    const RunReport& given) {
  RunReport base = given;
  for (const auto& n : registry.names())  // --replace-kernel: reports name the substitute that ran
    if (const Kernel* k = registry.find(n); k && !k->substitute.empty()) base.replaced_kernels[n] = k->label();
  if (o.isolate) return run_cases_isolated(cases, case_file_of, registry, o, stop, base);
  RunReport rep = start_report(base, o);
  const size_t total = cases.size() + o.resumed.size();
  int pass = 0, fail = 0, other = 0;
  auto last_flush = std::chrono::steady_clock::now();
  // A hung kernel never returns (a fiber deadlock on the cpu backend, a kernel
  // that spins on a GPU): the watchdog writes the report with that case as
  // CRASH (timeout) and ends the process, so nothing computed is lost. It also
  // ends the run on SIGINT/SIGTERM, with the case in flight INTERRUPTED.
  std::mutex report_mutex;  // guards rep.results and `running`
  long running = -1;
  std::atomic<double> running_since{0.0};
  std::atomic<bool> finished{false};
  auto now_s = [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
  Heartbeat heartbeat(cases, registry);  // finished() under report_mutex
  // Ends the run at case `running`, which never returned: writes the report
  // with it as `status` and exits. Called with report_mutex held.
  auto abandon = [&](Status status, const char* why, const std::string& detail, int exit_code) {
    CaseResult cr;
    cr.c = cases[size_t(running)];
    cr.repro = repro_command(o, case_file_of[size_t(running)], cr.c.id());
    RunReport partial = rep;
    partial.complete = false;
    if (status == Status::Interrupted) {
      cr.v.status = status;
      cr.v.reason = why;
      cr.v.detail = detail;
      partial.interrupted_by = exit_code - 128;
      partial.stopped_because = fmt::format("interrupted by signal {} ({}) during case {}; {} of {} cases judged",
                                            partial.interrupted_by, strsignal(partial.interrupted_by), cr.c.id(),
                                            rep.results.size(), total);
    } else {
      // The kernel that was running (the case code notes it around each launch).
      const char* comp = running_component();
      add_cause(cr.v, comp, comp == component::kHarness ? reason::kHarnessError : why, detail, true);
      judge_expectations(cr, registry, o.expectations);
      partial.stopped_because = fmt::format("case {} did not return: {}", cr.c.id(), cr.v.detail);
    }
    partial.results.push_back(cr);
    partial.finished_at = utc_now();
    partial.exit_code = exit_code;
    try {
      write_report_files(partial, o.report_dir);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "\nkvharness: %s\n", e.what());
      std::_Exit(kExitHarness);
    }
    if (o.progress) std::fputc('\n', stderr);  // after the progress bar
    if (o.print_end) {  // the end a finished run prints, on its streams (issue 25, item 8)
      o.print_end(partial);
    } else {
      std::fprintf(stderr, "kvharness: %s\n", partial.stopped_because.c_str());
      std::printf("report: %s/summary.md\n", o.report_dir.c_str());
    }
    std::fflush(stdout);  // _Exit flushes nothing
    std::fflush(stderr);
    std::_Exit(exit_code);
  };
  // A wild access in a kernel on the cpu backend is a signal in this process:
  // report the case as CRASH instead of dying without a report. (Not
  // async-signal-safe; it runs only when the process is lost anyway.)
  g_on_fatal_signal = [&](int sig) {
    // Held by this very thread (a fault while writing the report: heap damage a kernel did
    // earlier shows up in malloc) would deadlock: stop at once instead.
    std::unique_lock<std::mutex> lk(report_mutex, std::defer_lock);
    for (int tries = 0; tries < 50 && !lk.try_lock(); ++tries)  // the watchdog holds it for moments only
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!lk.owns_lock()) {
      std::fprintf(stderr, "\nkvharness: signal %d (%s) while the harness held its report (heap damage from an "
                           "earlier case's out-of-bounds write on the cpu backend?); the last report on disk stands\n",
                   sig, strsignal(sig));
      std::_Exit(kExitHarness);
    }
    if (running < 0) return;
    abandon(Status::Crash, reason::kCrash,
            fmt::format("signal {} ({}) while the case ran: an out-of-bounds access on the cpu backend, or a fault "
                        "in the harness", sig, strsignal(sig)),
            kExitFail);
  };
  std::thread watchdog([&] {
    double last_beat = now_s();
    while (!finished.load()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const double t = now_s();
      std::lock_guard<std::mutex> lk(report_mutex);
      if (o.heartbeat_seconds > 0 && t - last_beat >= o.heartbeat_seconds) {
        last_beat = t;
        int unexpected = 0;
        for (const auto& cr : rep.results) unexpected += cr.unexpected_failure();
        std::fprintf(stderr, "%s\n",
                     heartbeat.line(rep.results.size(), total, unexpected).c_str());
        std::fflush(stderr);
      }
      if (running < 0) continue;
      if (const int sig = stop.load())
        abandon(Status::Interrupted, reason::kInterrupted, "the run was interrupted while this case ran: no verdict",
                128 + sig);
      const double elapsed = t - running_since.load();
      if (o.case_timeout_s > 0 && elapsed > o.case_timeout_s)
        abandon(Status::Crash, reason::kTimeout,
                fmt::format("the case ran {:.0f} s without returning (--case-timeout {}); a hung kernel?", elapsed,
                            o.case_timeout_s),
                kExitFail);
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
    running_since = now_s();
    {
      std::lock_guard<std::mutex> lk(report_mutex);
      running = long(i);
    }
    CaseResult cr = run_one_case(c, registry, o);
    cr.repro = repro_command(o, case_file_of[i], c.id());
    judge_expectations(cr, registry, o.expectations);
    (cr.v.status == Status::Pass ? pass : cr.unexpected_failure() ? fail : other)++;
    // A sticky device fault leaves the context unusable: every later case would CRASH too.
    const bool device_lost = cr.v.status == Status::Crash && !device::healthy();
    if (device_lost)
      rep.stopped_because = fmt::format("device fault in case {} (the device is unusable after it): {}", c.id(),
                                        cr.v.detail);
    {
      std::lock_guard<std::mutex> lk(report_mutex);
      running = -1;
      rep.results.push_back(std::move(cr));
      heartbeat.finished(i);
    }
    if (o.progress) draw_progress(rep.results.size(), total, pass, fail, other);
    if (o.fail_fast && rep.results.back().unexpected_failure()) {  // --fail-fast: the verdict is known
      rep.stopped_because = fmt::format("--fail-fast: case {} failed unexpectedly", c.id());
      break;
    }
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
  std::lock_guard<std::mutex> lk(report_mutex);
  finish_report(rep, total, stop.load());
  write_report_files(rep, o.report_dir);
  return rep;
}

int exit_code_for(const RunReport& r) {
  if (r.interrupted_by) return 128 + r.interrupted_by;
  bool any_ran = false, any_fail = false, harness = false;
  for (const auto& cr : r.results) {
    if (cr.v.status != Status::Unsupported) any_ran = true;
    any_fail |= cr.unexpected_failure();
    harness |= harness_fault(cr.v);
  }
  if (harness) return kExitHarness;
  if (any_fail || !r.complete) return kExitFail;
  return any_ran ? kExitPass : kExitNothingRunnable;
}

}  // namespace kvh
