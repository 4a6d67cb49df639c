#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "report.h"

namespace kvh {

namespace {

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += ch;
    }
  }
  return o;
}

}  // namespace

void write_text_file(const std::filesystem::path& p, const std::string& text) {
  // Write then rename: a reader never sees half a report, and a crash keeps the last good one.
  const auto tmp = p.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f << text;
    if (!f) throw std::runtime_error(fmt::format("cannot write {}", tmp));
  }
  std::filesystem::rename(tmp, p);
}

std::string junit_xml(const RunReport& r) {
  // A regression fixture's FAIL is expected: a pass for JUnit readers, with the verdict kept in system-out.
  auto counts_as_failure = [](const CaseResult& cr) {
    return (cr.v.status == Status::Fail || cr.v.status == Status::Crash) && !cr.fixture;
  };
  int failures = 0, skipped = 0;
  for (const auto& cr : r.results) {
    failures += counts_as_failure(cr);
    skipped += cr.v.status == Status::Unsupported;
  }
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuite name=\"kvharness\" tests=\"{}\" failures=\"{}\" "
      "skipped=\"{}\">\n",
      r.results.size(), failures, skipped);
  for (const auto& cr : r.results) {
    out += fmt::format("  <testcase classname=\"{}.{}\" name=\"{}\" time=\"{:.3f}\">", to_string(cr.c.kind),
                       xml_escape(cr.c.model), xml_escape(cr.c.id()), cr.wall_ms / 1000.0);
    if (counts_as_failure(cr))
      out += fmt::format("<failure type=\"{}\" message=\"{}\">{}</failure>", cr.v.reason, xml_escape(cr.v.detail),
                         xml_escape(cr.repro));
    else if (cr.v.status == Status::Fail || cr.v.status == Status::Crash)
      out += fmt::format("<system-out>expected {} of a regression fixture ({}): {}</system-out>", to_string(cr.v.status),
                         cr.v.reason, xml_escape(cr.v.detail));
    else if (cr.v.status == Status::Unsupported)
      out += fmt::format("<skipped message=\"{}\"/>", xml_escape(cr.v.detail));
    out += "</testcase>\n";
  }
  return out + "</testsuite>\n";
}

void write_report_files(const RunReport& r, const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(fmt::format("cannot create report directory {}: {}", dir, ec.message()));
  const std::filesystem::path d(dir);
  write_text_file(d / "results.json", results_json(r));
  write_text_file(d / "summary.md", summary_markdown(r));
  write_text_file(d / "junit.xml", junit_xml(r));
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
