#include "run/isolate.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstring>
#include <map>
#include <stdexcept>

#include "device/device.h"
#include "check/expectations.h"
#include "report/results_io.h"

extern char** environ;

namespace kvh {

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ---- worker side ----

// Writes one line to the parent; a parent that is gone ends the worker.
void send_line(const nlohmann::json& j) {
  const std::string line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(kIsolateFd, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) std::_Exit(kExitHarness);
    done += size_t(n);
  }
}

void send_component(const char* component) { send_line({{"component", component}}); }

// ---- parent side ----

struct Worker {
  pid_t pid = -1;
  int fd = -1;  // read end of the worker's kIsolateFd
};

// Starts `argv` with kIsolateFd the write end of a new pipe and `todo` in KVH_ISOLATE_CASES.
Worker spawn_worker(const std::vector<std::string>& argv, const std::vector<size_t>& todo) {
  if (argv.empty()) throw std::runtime_error("--isolate: no worker command");
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(fmt::format("--isolate: cannot create a pipe: {}", std::strerror(errno)));
  int wfd = fds[1];
  if (wfd == kIsolateFd) {  // dup2 onto itself would keep close-on-exec
    wfd = ::fcntl(fds[1], F_DUPFD_CLOEXEC, 10);
    ::close(fds[1]);
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, wfd, kIsolateFd);
  std::vector<std::string> env;
  const std::string prefix = std::string(kIsolateCasesEnv) + "=";
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, prefix.c_str(), prefix.size()) != 0) env.emplace_back(*e);
  env.push_back(prefix + format_index_list(todo));
  std::vector<char*> argp, envp;
  for (const auto& a : argv) argp.push_back(const_cast<char*>(a.c_str()));
  argp.push_back(nullptr);
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  Worker w;
  const int rc = ::posix_spawn(&w.pid, argp[0], &fa, nullptr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  ::close(wfd);
  if (rc != 0) {
    ::close(fds[0]);
    throw std::runtime_error(fmt::format("--isolate: cannot start the worker {}: {}", argv[0], std::strerror(rc)));
  }
  w.fd = fds[0];
  return w;
}

// What a worker's end says about the case it was running.
std::string death_of(int status) {
  if (WIFSIGNALED(status))
    return fmt::format("its worker process died of signal {} ({})", WTERMSIG(status), strsignal(WTERMSIG(status)));
  if (WIFEXITED(status)) return fmt::format("its worker process exited with status {}", WEXITSTATUS(status));
  return fmt::format("its worker process ended (wait status {})", status);
}

void draw_progress(size_t done, size_t total, int pass, int fail, int other) {
  const int width = 30;
  const int filled = total ? int(double(done) / double(total) * width) : width;
  std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu  PASS %d  FAIL %d  other %d  (isolated)", filled,
               "##############################", width - filled, "", done, total, pass, fail, other);
  if (done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

}  // namespace

std::vector<size_t> parse_index_list(const std::string& s, size_t count) {
  std::vector<size_t> out;
  size_t pos = 0;
  while (pos < s.size()) {
    const size_t comma = std::min(s.find(',', pos), s.size());
    const std::string part = s.substr(pos, comma - pos);
    pos = comma + 1;
    size_t a = 0, b = 0;
    try {
      size_t used = 0;
      a = std::stoul(part, &used);
      b = a;
      if (used < part.size()) {
        if (part[used] != '-') throw std::invalid_argument("");
        size_t used2 = 0;
        b = std::stoul(part.substr(used + 1), &used2);
        if (used + 1 + used2 != part.size()) throw std::invalid_argument("");
      }
    } catch (const std::logic_error&) {
      throw std::invalid_argument(fmt::format("'{}': expected an index or a range A-B", part));
    }
    if (b < a || b >= count)
      throw std::invalid_argument(fmt::format("'{}': not a range of indices below {}", part, count));
    for (size_t i = a; i <= b; ++i) out.push_back(i);
  }
  return out;
}

std::string format_index_list(const std::vector<size_t>& idx) {
  std::string out;
  for (size_t k = 0; k < idx.size();) {
    size_t e = k;
    while (e + 1 < idx.size() && idx[e + 1] == idx[e] + 1) ++e;
    out += (out.empty() ? "" : ",") + (e == k ? std::to_string(idx[k]) : fmt::format("{}-{}", idx[k], idx[e]));
    k = e + 1;
  }
  return out;
}

int isolate_worker_main(const std::vector<Case>& cases, const Registry& registry, const RunOptions& o) {
  const char* env = std::getenv(kIsolateCasesEnv);
  std::vector<size_t> todo;
  try {
    if (!env) throw std::invalid_argument("not set");
    todo = parse_index_list(env, cases.size());
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "kvharness --isolate worker: %s: %s\n", kIsolateCasesEnv, e.what());
    return kExitUsage;
  }
  std::signal(SIGINT, SIG_IGN);  // Ctrl-C reaches the whole process group: the parent decides
  const rlimit no_core{0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // a crashing kernel costs no core dump
  set_running_component_hook(send_component);
  for (size_t i : todo) {
    send_line({{"start", i}});
    CaseResult cr = run_one_case(cases[i], registry, o);
    send_line({{"result", i}, {"case", case_result_json(cr)}});
    if (cr.v.status == Status::Crash && !device::healthy()) return 3;  // the context is lost: a fresh worker goes on
  }
  return 0;
}

RunReport run_cases_isolated(const std::vector<Case>& cases, const std::vector<std::string>& case_file_of,
                             const Registry& registry, const RunOptions& o, const std::atomic<int>& stop,
                             const RunReport& base) {
  RunReport rep = start_report(base, o);
  const size_t total = cases.size() + o.resumed.size();
  // Groups of o.isolate_batch cases (0: all), each started in a fresh worker.
  std::vector<std::vector<size_t>> groups;
  for (size_t i = 0; i < cases.size(); ++i) {
    if (groups.empty() || (o.isolate_batch > 0 && groups.back().size() >= size_t(o.isolate_batch)))
      groups.emplace_back();
    groups.back().push_back(i);
  }
  // Case indices here <-> in the worker's list (o.worker_index).
  std::map<size_t, size_t> from_worker_index;
  for (size_t i = 0; i < o.worker_index.size(); ++i) from_worker_index[o.worker_index[i]] = i;
  auto to_worker = [&](size_t i) { return o.worker_index.empty() ? i : o.worker_index.at(i); };
  auto from_worker = [&](size_t w) {
    if (o.worker_index.empty()) return w;
    const auto it = from_worker_index.find(w);
    if (it == from_worker_index.end()) throw std::runtime_error(fmt::format("case {} is not one of this run", w));
    return it->second;
  };
  int pass = 0, fail = 0, other = 0;
  double last_flush = now_s(), last_beat = now_s();
  Heartbeat heartbeat(cases, registry);
  bool stopped = false;
  auto record = [&](CaseResult cr, size_t i) {
    cr.repro = repro_command(o, case_file_of[i], cases[i].id());
    judge_expectations(cr, registry, o.expectations);
    (cr.v.status == Status::Pass ? pass : cr.unexpected_failure() ? fail : other)++;
    rep.results.push_back(std::move(cr));
    heartbeat.finished(i);
    if (o.progress) draw_progress(rep.results.size(), total, pass, fail, other);
    if (o.fail_fast && rep.results.back().unexpected_failure()) {
      rep.stopped_because = fmt::format("--fail-fast: case {} failed unexpectedly", cases[i].id());
      stopped = true;
    }
    // A partial report on disk while the worker runs (one worker may run the whole suite):
    // a SIGKILL of this process loses nothing already judged.
    if (now_s() - last_flush > o.flush_seconds && !stopped) {
      write_report_files(rep, o.report_dir);
      last_flush = now_s();
    }
  };
  for (const auto& group : groups) {
    size_t next = 0;  // the group's first undecided case
    while (next < group.size() && !stopped) {
      if (stop.load()) {
        stopped = true;
        break;
      }
      std::vector<size_t> todo(group.begin() + long(next), group.end());
      for (size_t& i : todo) i = to_worker(i);
      const Worker w = spawn_worker(o.worker_command, todo);
      enum class Kill { None, Interrupt, Timeout, FailFast } killed = Kill::None;
      long running = -1;
      double since = 0;
      std::string comp = component::kHarness, buf;
      int decided = 0;
      for (bool eof = false; !eof;) {
        pollfd p{w.fd, POLLIN, 0};
        if (::poll(&p, 1, 100) > 0) {
          char tmp[1 << 16];
          const ssize_t n = ::read(w.fd, tmp, sizeof tmp);
          if (n > 0) buf.append(tmp, size_t(n));
          else if (n == 0 || (errno != EINTR && errno != EAGAIN)) eof = true;
        }
        for (size_t nl; killed == Kill::None && (nl = buf.find('\n')) != std::string::npos;) {
          const std::string line = buf.substr(0, nl);
          buf.erase(0, nl + 1);
          nlohmann::json j;
          try {
            j = nlohmann::json::parse(line);
            if (j.contains("start")) {
              running = long(from_worker(j.at("start").get<size_t>()));
              since = now_s();
              comp = component::kHarness;
            } else if (j.contains("component")) {
              comp = j.at("component").get<std::string>();
            } else if (j.contains("result")) {
              const size_t i = from_worker(j.at("result").get<size_t>());
              if (i != group[next]) throw std::runtime_error(fmt::format("result for case {}, expected {}", i, group[next]));
              record(case_result_from_json(j.at("case"), &cases[i]), i);
              ++next;
              ++decided;
              running = -1;
              if (stopped) {  // --fail-fast
                ::kill(w.pid, SIGKILL);
                killed = Kill::FailFast;
              }
            }
          } catch (const std::exception& e) {
            ::kill(w.pid, SIGKILL);
            ::waitpid(w.pid, nullptr, 0);
            ::close(w.fd);
            throw std::runtime_error(fmt::format("--isolate: the worker sent a line this parent cannot read ({}): {}",
                                                 e.what(), line.substr(0, 200)));
          }
        }
        const double t = now_s();
        if (killed == Kill::None && stop.load()) {
          ::kill(w.pid, SIGKILL);
          killed = Kill::Interrupt;
        }
        if (killed == Kill::None && running >= 0 && o.case_timeout_s > 0 && t - since > o.case_timeout_s) {
          ::kill(w.pid, SIGKILL);
          killed = Kill::Timeout;
        }
        if (o.heartbeat_seconds > 0 && t - last_beat >= o.heartbeat_seconds) {
          last_beat = t;
          std::fprintf(stderr, "%s (isolated)\n",
                       heartbeat.line(rep.results.size(), total, fail).c_str());
          std::fflush(stderr);
        }
      }
      int status = 0;
      while (::waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
      }
      ::close(w.fd);
      if (killed == Kill::FailFast) break;
      if (running >= 0) {
        const size_t i = size_t(running);
        CaseResult cr;
        cr.c = cases[i];
        cr.wall_ms = (now_s() - since) * 1000;
        if (killed == Kill::Interrupt) {
          cr.v.status = Status::Interrupted;
          cr.v.reason = reason::kInterrupted;
          cr.v.detail = "the run was interrupted while this case ran: no verdict";
          cr.repro = repro_command(o, case_file_of[i], cr.c.id());
          rep.results.push_back(std::move(cr));
          rep.stopped_because = fmt::format("interrupted by signal {} ({}) during case {}; {} of {} cases judged",
                                            stop.load(), strsignal(stop.load()), cases[i].id(),
                                            rep.results.size() - 1, total);
          stopped = true;
          break;
        }
        // The kernel that ran (the worker said so before it died) owns the crash.
        const char* c = comp == component::kWriter   ? component::kWriter
                        : comp == component::kReader ? component::kReader
                        : comp == component::kRouter ? component::kRouter
                                                     : component::kHarness;
        const std::string detail =
            killed == Kill::Timeout
                ? fmt::format("the case ran {:.0f} s without returning (--case-timeout {}); a hung kernel? its worker "
                              "process was killed and the run went on",
                              now_s() - since, o.case_timeout_s)
                : fmt::format("{} while the case ran: an abort, an out-of-bounds access or a device fault in the {}; "
                              "the run went on in a new worker",
                              death_of(status), c);
        add_cause(cr.v, c,
                  c == component::kHarness    ? reason::kHarnessError
                  : killed == Kill::Timeout   ? reason::kTimeout
                                              : reason::kCrash,
                  detail, true);
        record(std::move(cr), i);
        ++next;
      } else if (killed == Kill::Interrupt) {
        stopped = true;
      } else if (next < group.size() && decided == 0) {
        // It died before its first case: every worker would. A harness failure, not the kernels'.
        const size_t i = group[next];
        CaseResult cr;
        cr.c = cases[i];
        add_cause(cr.v, component::kHarness, reason::kHarnessError,
                  fmt::format("--isolate: {} before its first case (see its messages above)", death_of(status)), true);
        record(std::move(cr), i);
        rep.stopped_because = fmt::format("--isolate: a worker process failed to start: {}", death_of(status));
        stopped = true;
      }
    }
    if (stopped) break;
  }
  finish_report(rep, total, stop.load());
  write_report_files(rep, o.report_dir);
  return rep;
}

}  // namespace kvh
