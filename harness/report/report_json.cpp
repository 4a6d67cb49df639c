#include <nlohmann/json.hpp>

#include "report/report.h"
#include "report/results_io.h"

namespace kvh {

namespace {
nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }
nlohmann::json str_or_null(const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); }
}  // namespace

nlohmann::json case_result_json(const CaseResult& cr) {
  const Case& c = cr.c;
  const bool write = c.kind == CaseKind::Write;
  nlohmann::json e;
  e["id"] = c.id();
  e["kind"] = to_string(c.kind);
  e["model"] = c.model;
  e["tp"] = c.tp;
  e["layout"] = to_string(c.layout);
  e["head_size"] = c.head_size;
  e["num_heads"] = c.num_heads;
  e["num_kv_heads"] = c.num_kv_heads;
  e["batch_size"] = c.batch_size;
  e["block_size"] = c.block_size;
  e["dtype"] = to_string(c.dtype);
  e["kv_cache_dtype"] = c.kv_cache_dtype_name();  // fp16, bf16, fp8_e4m3fn, fp8_e4m3fnuz
  e["kv_scales"] = to_string(c.kv_scales);       // none, tensor, head, block, token
  e["shuffle"] = c.shuffle();
  e["variant"] = c.variant();
  e["variant_name"] = str_or_null(c.variant_name);
  e["hybrid"] = c.hybrid;
  e["padded_page_bytes"] = c.padded_page_bytes;
  e["kernel_block_size"] = c.kernel_block_size;  // kernel_pages: the kernel's page; 0 otherwise
  e["degenerate_stride"] = c.degenerate_stride;  // degenerate_strides: the size-1 dims' stride; 0 otherwise
  e["writer"] = str_or_null(c.writer);
  e["reader"] = str_or_null(c.reader);
  e["router_policy"] = str_or_null(c.router_policy);
  e["target"] = str_or_null(c.target);
  e["high_precision"] = c.router_policy.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.high_precision);
  e["routed_to"] = str_or_null(cr.routed_to);
  e["expect_routed_to"] = str_or_null(c.expect_routed_to);
  e["values"] = to_string(c.values);  // "normal" for writes too: the filter key of run and compare
  e["stale"] = to_string(c.stale);    // "random" for writes too: their caches start with random old tokens
  e["block_table_padding"] = write ? nlohmann::json(nullptr) : nlohmann::json(block_table_padding_name(c.block_table_padding));
  e["min_block_id"] = write ? nlohmann::json(nullptr) : nlohmann::json(c.min_block_id);
  e["route_reason"] = str_or_null(cr.route_reason);
  // Score modifiers and split control (the filter keys of the same names): defaults for writes.
  e["sliding_window"] = c.sliding_window;
  e["sinks"] = c.sinks;
  e["softcap"] = c.softcap;
  e["alibi"] = c.alibi;
  e["tp_rank"] = c.tp_rank;
  e["partition_size"] = c.partition_size;
  e["context_len_min"] = write ? nlohmann::json(nullptr) : nlohmann::json(c.context_len_min);
  e["context_len_max"] = write ? nlohmann::json(nullptr) : nlohmann::json(c.context_len_max);
  e["context_lens"] = write || cr.context_lens.empty() ? nlohmann::json(nullptr) : nlohmann::json(cr.context_lens);
  // The case file's explicit list (null when the lengths were drawn): the id depends on it.
  e["given_context_lens"] = c.context_lens.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.context_lens);
  e["verdict"] = to_string(cr.v.status);
  e["reason"] = str_or_null(cr.v.reason);
  e["component"] = str_or_null(cr.v.component);
  auto& causes = e["causes"] = nlohmann::json::array();
  for (const auto& k : cr.v.causes)
    causes.push_back({{"component", k.component}, {"reason", k.reason}, {"crash", k.crash},
                      {"detail", k.detail}, {"expected_by", str_or_null(k.expected_by)}});
  e["expected_failure"] = cr.expected;  // FAIL/CRASH whose every cause is expected: not counted
  e["expectations"] = cr.expectations;
  e["detail"] = str_or_null(cr.v.detail);
  e["max_abs_err"] = opt(cr.v.max_abs_err);
  e["max_rel_err"] = opt(cr.v.max_rel_err);
  e["kernel_us"] = opt(cr.v.kernel_us);
  e["writer_us"] = opt(cr.v.writer_us);
  e["bad_elements"] = cr.v.bad_elements;
  e["seed"] = c.seed;
  e["data_seed"] = std::to_string(cr.data_seed);  // 64-bit: a string keeps JSON readers exact
  e["key_layout"] = str_or_null(cr.key_layout);
  e["value_layout"] = str_or_null(cr.value_layout);
  e["source"] = c.source;
  e["repro"] = cr.repro;
  e["fixture"] = cr.fixture;  // a regression fixture (kernel or router policy) took part
  e["wall_ms"] = cr.wall_ms;
  nlohmann::json ph = nlohmann::json::object();
  for (int p = 0; p < kPhaseCount; ++p) ph[phase_name(Phase(p))] = cr.phases[size_t(p)];
  e["phases_ms"] = std::move(ph);
  return e;
}

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
  const Counts n = count(r);
  j["counts"] = {{"cases", r.results.size()}, {"pass", n.pass},           {"fail", n.fail},
                 {"crash", n.crash},          {"unsupported", n.unsupported}, {"xpass", n.xpass},
                 {"interrupted", n.interrupted}, {"expected_failures", n.expected},
                 {"unexpected_failures", n.unexpected}, {"harness_failures", n.harness}};
  auto& cases = j["cases"] = nlohmann::json::array();
  for (const auto& cr : r.results) cases.push_back(case_result_json(cr));
  // Strings from outside (a label, paths, a provider's kernel names) may not be UTF-8: replace, never throw.
  return j.dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace kvh
