// A run's results and the files written from them (reports/<run>/).
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "verdict.h"

namespace kvh {

/// Everything results.json records about a run.
struct RunReport {
  std::string backend, device, arch;
  int wave_size = 0;
  int compute_units = 0;
  std::string started_at, finished_at;  // ISO 8601 UTC
  bool complete = false;                // false if the run was cut short
  std::string stopped_because;          // why it was cut short (a device fault, a signal); empty otherwise
  std::vector<std::string> case_files;
  std::string filter;
  std::vector<CaseResult> results;
};

/// results.json, schema "kvharness.results/1" (DESIGN.md contract).
std::string results_json(const RunReport& r);
/// summary.md: matrices per kind, model and head size, per-model totals, every failure with its repro.
std::string summary_markdown(const RunReport& r);
/// junit.xml: one testcase per case; FAIL and CRASH are failures, UNSUPPORTED skipped.
std::string junit_xml(const RunReport& r);
/// Writes the three files into dir (created if missing). Throws std::runtime_error naming the file on I/O failure.
void write_report_files(const RunReport& r, const std::string& dir);
/// Writes `text` to `path` through a temporary file and a rename, so that a
/// reader never sees half a file. Throws std::runtime_error naming the file.
void write_text_file(const std::filesystem::path& path, const std::string& text);
/// Now, as ISO 8601 UTC.
std::string utc_now();

}  // namespace kvh
