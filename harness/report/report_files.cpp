#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "report/report.h"

namespace kvh {

namespace fs = std::filesystem;

namespace {

// Length of the well-formed UTF-8 sequence at s[i], 0 if it is not one.
size_t utf8_length(const std::string& s, size_t i) {
  const auto u = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = u(i);
  const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((u(i + k) >> 6) != 0x2) return 0;
  return n;
}

// XML 1.0 text: escapes markup, and replaces what no XML parser accepts (control
// characters, bytes that are not UTF-8) with U+FFFD, so a CI's JUnit reader never rejects the file.
std::string xml_escape(const std::string& s) {
  std::string o;
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_length(s, i);
    const unsigned char ch = static_cast<unsigned char>(s[i]);
    if (n == 0 || (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r')) {
      o += "\xEF\xBF\xBD";
      i += n ? n : 1;
      continue;
    }
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o.append(s, i, n);
    }
    i += n;
  }
  return o;
}

// JUnit consumers split class names at dots into packages: "Qwen3.5-397B" would
// become a package "Qwen3" and a class "5-397B". Anything but [A-Za-z0-9_-] becomes '_'.
std::string class_part(const std::string& s) {
  std::string o;
  for (char ch : s) o += (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_') ? ch : '_';
  return o;
}

[[noreturn]] void io_error(const std::string& what, const fs::path& p) {
  throw std::runtime_error(fmt::format("cannot {} {}: {}", what, p.string(), std::strerror(errno)));
}

// Writes, flushes and closes one file, checking every step (a full disk shows at write, fsync or close).
void write_fully(const fs::path& p, const std::string& text) {
  const int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) io_error("create", p);
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      ::close(fd);
      errno = e;
      io_error("write", p);
    }
    done += size_t(n);
  }
  if (::fsync(fd) != 0 && errno != EINVAL) {
    const int e = errno;
    ::close(fd);
    errno = e;
    io_error("flush", p);
  }
  if (::close(fd) != 0) io_error("close", p);
}

const std::set<std::string>& report_file_names() {
  static const std::set<std::string> names = {"summary.md", "results.json", "junit.xml"};
  return names;
}

}  // namespace

void write_text_file(const fs::path& p, const std::string& text) {
  // Write then rename: a reader never sees half a file, and a crash keeps the last good one.
  const fs::path tmp = p.string() + ".tmp";
  write_fully(tmp, text);
  if (::rename(tmp.c_str(), p.c_str()) != 0) io_error("rename into place", p);
}

const char* to_string(Outcome o) {
  switch (o) {
    case Outcome::Pass: return "PASS";
    case Outcome::Fail: return "FAIL";
    case Outcome::XFail: return "XFAIL";
    case Outcome::XPass: return "XPASS";
    case Outcome::Crash: return "CRASH";
    case Outcome::Unsupported: return "UNSUPPORTED";
    case Outcome::Interrupted: return "INTERRUPTED";
    case Outcome::Other: break;
  }
  return "other";
}

Outcome outcome_of(Status s, bool expected) {
  switch (s) {
    case Status::Pass: return Outcome::Pass;
    case Status::Fail: return expected ? Outcome::XFail : Outcome::Fail;
    case Status::Crash: return expected ? Outcome::XFail : Outcome::Crash;
    case Status::Unsupported: return Outcome::Unsupported;
    case Status::Xpass: return Outcome::XPass;
    case Status::Interrupted: return Outcome::Interrupted;
  }
  return Outcome::Other;
}

Outcome outcome_of(const std::string& verdict, bool expected) {
  for (Status s : {Status::Pass, Status::Fail, Status::Unsupported, Status::Crash, Status::Xpass, Status::Interrupted})
    if (verdict == to_string(s)) return outcome_of(s, expected);
  return Outcome::Other;
}

void Counts::add(Outcome o) {
  ++cases;
  switch (o) {
    case Outcome::Pass: ++pass; break;
    case Outcome::Fail: ++fail; break;
    case Outcome::XFail: ++xfail; break;
    case Outcome::XPass: ++xpass; break;
    case Outcome::Crash: ++crash; break;
    case Outcome::Unsupported: ++unsupported; break;
    case Outcome::Interrupted: ++interrupted; break;
    case Outcome::Other: ++other; break;
  }
}

Counts count(const RunReport& r) {
  Counts n;
  for (const auto& cr : r.results) {
    n.add(outcome_of(cr.v.status, cr.expected));
    n.harness += harness_fault(cr.v);
  }
  return n;
}

std::string counts_text(const Counts& n) {
  std::string s = fmt::format("{} PASS, {} FAIL, {} XFAIL, {} XPASS, {} CRASH, {} UNSUPPORTED", n.pass, n.fail,
                              n.xfail, n.xpass, n.crash, n.unsupported);
  if (n.interrupted) s += fmt::format(", {} INTERRUPTED", n.interrupted);
  if (n.other) s += fmt::format(", {} other", n.other);
  return s;
}

std::string junit_xml(const RunReport& r) {
  const Counts n = count(r);
  // A run that did not finish, stopped on an input error, or judged nothing (every case UNSUPPORTED)
  // is an <error>: a CI that reads only junit fails.
  const bool nothing_ran = r.complete && r.error.empty() && !r.results.empty() &&
                           std::all_of(r.results.begin(), r.results.end(),
                                       [](const CaseResult& cr) { return cr.v.status == Status::Unsupported; });
  const bool run_error = !r.complete || !r.error.empty() || nothing_ran;
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"kvharness\" tests=\"{}\" failures=\"{}\" "
      "errors=\"{}\" skipped=\"{}\" timestamp=\"{}\">\n",
      r.results.size() + (run_error ? 1 : 0), n.unexpected(), run_error ? 1 : 0, n.unsupported + n.interrupted,
      r.started_at);
  out += "  <properties>\n";
  auto prop = [&](const char* k, const std::string& v) {
    out += fmt::format("    <property name=\"{}\" value=\"{}\"/>\n", k, xml_escape(v));
  };
  prop("backend", r.backend);
  prop("device", r.device);
  prop("arch", r.arch);
  prop("wave_size", std::to_string(r.wave_size));
  prop("tool_version", r.tool_version);
  prop("label", r.label);
  prop("filter", r.filter);
  prop("seed", r.seed ? std::to_string(*r.seed) : "");
  prop("complete", r.complete ? "true" : "false");
  prop("exit_code", std::to_string(r.exit_code));
  prop("expected_failures", std::to_string(n.xfail));
  prop("counts", counts_text(n));
  out += "  </properties>\n";
  if (run_error) {
    const std::string why = !r.error.empty() ? r.error
                            : nothing_ran    ? "nothing was judged: every case is UNSUPPORTED"
                            : !r.stopped_because.empty() ? r.stopped_because
                                                         : "the run did not finish (killed?)";
    out += fmt::format("  <testcase classname=\"kvharness.run\" name=\"run complete\" time=\"0\"><error type=\"{}\" "
                       "message=\"{}\"/></testcase>\n",
                       !r.error.empty() ? "input_error" : nothing_ran ? "nothing_ran" : "incomplete", xml_escape(why));
  }
  for (const auto& cr : r.results) {
    out += fmt::format("  <testcase classname=\"kvharness.{}.{}\" name=\"{}\" time=\"{:.3f}\">", to_string(cr.c.kind),
                       class_part(cr.c.model), xml_escape(cr.c.id()), cr.wall_ms / 1000.0);
    if (cr.unexpected_failure())
      out += fmt::format("<failure type=\"{}\" message=\"{} {} ({}): {}\">{}</failure>", cr.v.reason,
                         to_string(cr.v.status), cr.v.reason, cr.v.component, xml_escape(cr.v.detail),
                         xml_escape(cr.repro));
    else if (cr.v.status == Status::Fail || cr.v.status == Status::Crash)
      out += fmt::format("<system-out>expected {} ({}): {}</system-out>", to_string(cr.v.status), cr.v.reason,
                         xml_escape(cr.v.causes.empty() ? cr.v.detail : cr.v.causes.front().expected_by));
    else if (cr.v.status == Status::Unsupported || cr.v.status == Status::Interrupted)
      out += fmt::format("<skipped message=\"{}: {}\"/>", to_string(cr.v.status), xml_escape(cr.v.detail));
    out += "</testcase>\n";
  }
  return out + "</testsuite>\n";
}

// The report directory as written: through a symlink, its target; "dir/" as "dir".
fs::path report_dir_path(const std::string& dir) {
  if (dir.empty()) throw std::runtime_error("--report-dir is empty; expected a directory");
  fs::path target = fs::absolute(fs::path(dir)).lexically_normal();
  if (!target.has_filename()) target = target.parent_path();
  std::error_code ec;
  // A report directory reached through a symlink (reports/latest -> an artifact directory): replace the target.
  if (fs::is_symlink(target, ec)) target = fs::weakly_canonical(target);
  return target;
}

void check_report_dir(const std::string& dir) {
  const fs::path final_dir = report_dir_path(dir);
  std::error_code ec;
  if (!fs::exists(final_dir, ec)) return;
  // The directory is replaced as a whole: refuse one that holds anything else than a report set.
  if (!fs::is_directory(final_dir)) throw std::runtime_error(fmt::format("report directory {} is not a directory", dir));
  if (final_dir == fs::current_path(ec))
    throw std::runtime_error(fmt::format("report directory {} is the current directory; give --report-dir a "
                                         "directory of its own", dir));
  for (const auto& e : fs::directory_iterator(final_dir)) {
    const std::string name = e.path().filename().string();
    const bool leftover_tmp = name.size() > 4 && name.compare(name.size() - 4, 4, ".tmp") == 0;
    if (!report_file_names().count(name) && !leftover_tmp)
      throw std::runtime_error(fmt::format(
          "report directory {} holds '{}', which kvharness did not write; each run replaces the directory as a "
          "whole, so give --report-dir a directory of its own",
          dir, name));
  }
}

void write_report_files(const RunReport& r, const std::string& dir) {
  check_report_dir(dir);
  const fs::path final_dir = report_dir_path(dir);
  const fs::path parent = final_dir.parent_path();
  std::error_code ec;
  fs::create_directories(parent, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create {}: {}", parent.string(), ec.message()));
  const fs::path staging = parent / fmt::format(".{}.staging-{}", final_dir.filename().string(), ::getpid());
  fs::remove_all(staging, ec);
  fs::create_directory(staging, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create {}: {}", staging.string(), ec.message()));
  try {
    write_fully(staging / "results.json", results_json(r));
    write_fully(staging / "summary.md", summary_markdown(r));
    write_fully(staging / "junit.xml", junit_xml(r));
  } catch (...) {
    fs::remove_all(staging, ec);  // a failed set leaves nothing behind
    throw;
  }
  if (!fs::exists(final_dir)) {
    if (::rename(staging.c_str(), final_dir.c_str()) != 0) io_error("move the report set into", final_dir);
    return;
  }
  if (::renameat2(AT_FDCWD, staging.c_str(), AT_FDCWD, final_dir.c_str(), RENAME_EXCHANGE) != 0) {
    // No atomic exchange here (an old kernel, some network file systems): two renames, the old set kept until the new is in place.
    const fs::path old = parent / fmt::format(".{}.old-{}", final_dir.filename().string(), ::getpid());
    if (::rename(final_dir.c_str(), old.c_str()) != 0) io_error("move the previous report set out of", final_dir);
    if (::rename(staging.c_str(), final_dir.c_str()) != 0) io_error("move the report set into", final_dir);
    fs::remove_all(old, ec);
    return;
  }
  fs::remove_all(staging, ec);  // now holds the previous set
}

std::string utc_now() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace kvh
