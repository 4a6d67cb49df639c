#include <nlohmann/json.hpp>

#include "report/report.h"
#include "report/results_io.h"

namespace kvh {

namespace {
nlohmann::json str_or_null(const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); }
}  // namespace

std::string results_json(const RunReport& r) {
  nlohmann::json j;
  j["schema"] = "kvharness.results/1";
  j["backend"] = r.backend;
  j["device"] = r.device;
  j["arch"] = r.arch;
  j["wave_size"] = r.wave_size;
  j["compute_units"] = r.compute_units;
  j["started_at"] = r.started_at;
  j["finished_at"] = str_or_null(r.finished_at);
  j["complete"] = r.complete;
  j["stopped_because"] = str_or_null(r.stopped_because);
  j["case_files"] = r.case_files;
  j["providers"] = r.providers;
  j["filter"] = r.filter;
  j["seed"] = r.seed ? nlohmann::json(*r.seed) : nlohmann::json(nullptr);
  j["exit_code"] = r.exit_code < 0 ? nlohmann::json(nullptr) : nlohmann::json(r.exit_code);
  j["error"] = str_or_null(r.error);
  j["interrupted_by"] = r.interrupted_by ? nlohmann::json(r.interrupted_by) : nlohmann::json(nullptr);
  j["tool_version"] = r.tool_version;
  j["command_line"] = r.command_line;
  j["host"] = r.host;
  j["runtime_version"] = r.runtime_version;
  j["label"] = str_or_null(r.label);
  j["identity"] = str_or_null(r.identity);
  j["shard"] = str_or_null(r.shard);
  j["merged_from"] = r.merged_from;
  j["expectation_sources"] = r.expectation_sources;
  j["replaced_kernels"] = r.replaced_kernels;  // --replace-kernel: REAL -> "REAL (replaced by ORIGIN:WITH)"
  const Counts n = count(r);
  // The classes of report.h's Outcome: fail and crash are the unexpected ones, xfail the expected.
  j["counts"] = {{"cases", r.results.size()}, {"pass", n.pass},           {"fail", n.fail},
                 {"xfail", n.xfail},          {"xpass", n.xpass},         {"crash", n.crash},
                 {"unsupported", n.unsupported}, {"interrupted", n.interrupted}, {"expected_failures", n.xfail},
                 {"unexpected_failures", n.unexpected()}, {"harness_failures", n.harness}};
  auto& cases = j["cases"] = nlohmann::json::array();
  for (const auto& cr : r.results) cases.push_back(case_result_json(cr));
  // Strings from outside (a label, paths, a provider's kernel names) may not be UTF-8: replace, never throw.
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace kvh
