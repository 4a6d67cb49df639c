#include "report/results_io.h"

#include <fmt/format.h>

#include <stdexcept>

#include "layout.h"

namespace kvh {

namespace {

using json = nlohmann::json;

[[noreturn]] void bad(const json& e, const char* key, const std::string& what) {
  const auto id = e.find("id");
  throw std::runtime_error(fmt::format("case {}: field \"{}\": {}",
                                       id != e.end() && id->is_string() ? id->get<std::string>() : "(no id)", key,
                                       what));
}

const json& field(const json& e, const char* key) {
  const auto it = e.find(key);
  if (it == e.end()) bad(e, key, "missing");
  return *it;
}

std::string str(const json& e, const char* key) {
  const json& v = field(e, key);
  if (v.is_null()) return "";
  if (!v.is_string()) bad(e, key, fmt::format("expected a string or null, got {}", v.type_name()));
  return v.get<std::string>();
}

template <class T>
T num(const json& e, const char* key) {
  const json& v = field(e, key);
  if (!v.is_number()) bad(e, key, fmt::format("expected a number, got {}", v.type_name()));
  return v.get<T>();
}

bool boolean(const json& e, const char* key) {
  const json& v = field(e, key);
  if (!v.is_boolean()) bad(e, key, fmt::format("expected true or false, got {}", v.type_name()));
  return v.get<bool>();
}

std::optional<double> opt_num(const json& e, const char* key) {
  const auto it = e.find(key);
  if (it == e.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) bad(e, key, fmt::format("expected a number or null, got {}", it->type_name()));
  return it->get<double>();
}

template <class T>
std::vector<T> list(const json& e, const char* key) {
  const auto it = e.find(key);
  if (it == e.end() || it->is_null()) return {};
  if (!it->is_array()) bad(e, key, fmt::format("expected an array or null, got {}", it->type_name()));
  try {
    return it->get<std::vector<T>>();
  } catch (const json::exception& x) {
    bad(e, key, x.what());
  }
}

// The case as the entry describes it (every field the id and the reports use).
Case rebuild_case(const json& e) {
  Case c;
  const std::string kind = str(e, "kind");
  if (kind == to_string(CaseKind::Write)) c.kind = CaseKind::Write;
  else if (kind == to_string(CaseKind::Attention)) c.kind = CaseKind::Attention;
  else if (kind == to_string(CaseKind::Pipeline)) c.kind = CaseKind::Pipeline;
  else bad(e, "kind", fmt::format("'{}' is not write, attention or pipeline", kind));
  c.model = str(e, "model");
  c.tp = num<int>(e, "tp");
  c.hybrid = e.contains("hybrid") ? boolean(e, "hybrid") : false;
  c.num_heads = num<int64_t>(e, "num_heads");
  c.num_kv_heads = num<int64_t>(e, "num_kv_heads");
  c.head_size = num<int64_t>(e, "head_size");
  const auto scheme = parse_scheme(str(e, "layout"));
  if (!scheme) bad(e, "layout", "not a layout this kvharness knows");
  c.layout = *scheme;
  c.block_size = num<int64_t>(e, "block_size");
  c.padded_page_bytes = e.contains("padded_page_bytes") ? num<int64_t>(e, "padded_page_bytes") : 0;
  const std::string dtype = str(e, "dtype");
  if (dtype == to_string(DType::F16)) c.dtype = DType::F16;
  else if (dtype == to_string(DType::BF16)) c.dtype = DType::BF16;
  else bad(e, "dtype", fmt::format("'{}' is not a dtype this kvharness knows", dtype));
  c.batch_size = num<int64_t>(e, "batch_size");
  c.writer = str(e, "writer");
  c.reader = str(e, "reader");
  c.router_policy = str(e, "router_policy");
  c.target = str(e, "target");
  if (!c.router_policy.empty()) c.high_precision = num<int>(e, "high_precision");
  if (c.kind != CaseKind::Write) {
    c.context_len_min = num<int64_t>(e, "context_len_min");
    c.context_len_max = num<int64_t>(e, "context_len_max");
  }
  c.context_lens = list<int64_t>(e, "given_context_lens");
  const auto values = parse_value_dist(str(e, "values"));
  if (!values) bad(e, "values", "not a value distribution this kvharness knows");
  c.values = *values;
  // Fields of later kvharness versions: their defaults when absent.
  if (e.contains("kv_cache_dtype")) {
    const std::string kv = str(e, "kv_cache_dtype");
    if (kv == to_string(KvCacheDType::Fp8E4m3fn)) c.kv_cache_dtype = KvCacheDType::Fp8E4m3fn;
    else if (kv == to_string(KvCacheDType::Fp8E4m3fnuz)) c.kv_cache_dtype = KvCacheDType::Fp8E4m3fnuz;
    else if (kv != dtype) bad(e, "kv_cache_dtype", fmt::format("'{}' is neither the dtype nor an fp8 format", kv));
  }
  if (e.contains("kv_scales")) {
    const auto scales = parse_kv_scales(str(e, "kv_scales"));
    if (!scales) bad(e, "kv_scales", "not none, tensor, head, block or token");
    c.kv_scales = *scales;
  }
  if (e.contains("stale")) {
    const auto stale = parse_stale(str(e, "stale"));
    if (!stale) bad(e, "stale", "not random, nan or inf");
    c.stale = *stale;
  }
  if (c.kind != CaseKind::Write && e.contains("block_table_padding")) {
    const auto padding = parse_block_table_padding(str(e, "block_table_padding"));
    if (!padding) bad(e, "block_table_padding", "not -1 or num_blocks+K");
    c.block_table_padding = *padding;
  }
  if (c.kind != CaseKind::Write && e.contains("min_block_id")) c.min_block_id = num<int64_t>(e, "min_block_id");
  if (e.contains("kernel_block_size")) c.kernel_block_size = num<int64_t>(e, "kernel_block_size");
  if (e.contains("degenerate_stride")) c.degenerate_stride = num<int64_t>(e, "degenerate_stride");
  if (e.contains("sliding_window")) c.sliding_window = num<int64_t>(e, "sliding_window");
  if (e.contains("sinks")) c.sinks = boolean(e, "sinks");
  if (e.contains("softcap")) c.softcap = num<double>(e, "softcap");
  if (e.contains("alibi")) c.alibi = boolean(e, "alibi");
  if (e.contains("tp_rank")) c.tp_rank = num<int>(e, "tp_rank");
  if (e.contains("partition_size")) c.partition_size = num<int32_t>(e, "partition_size");
  c.expect_routed_to = str(e, "expect_routed_to");
  c.variant_name = e.contains("variant_name") ? str(e, "variant_name") : "";
  c.seed = num<uint64_t>(e, "seed");
  c.source = str(e, "source");
  if (c.id() != str(e, "id"))
    bad(e, "id", fmt::format("the entry's fields make the id {}; written by another kvharness version?", c.id()));
  return c;
}

}  // namespace

Status parse_status(const std::string& s) {
  for (Status st : {Status::Pass, Status::Fail, Status::Unsupported, Status::Crash, Status::Xpass, Status::Interrupted})
    if (s == to_string(st)) return st;
  throw std::runtime_error(fmt::format("verdict '{}' is not one this kvharness knows", s));
}

CaseResult case_result_from_json(const json& e, const Case* c) {
  if (!e.is_object()) throw std::runtime_error(fmt::format("a case entry is {}, not an object", e.type_name()));
  CaseResult cr;
  if (c) {
    cr.c = *c;
    if (c->id() != str(e, "id")) bad(e, "id", fmt::format("expected {}", c->id()));
  } else {
    cr.c = rebuild_case(e);
  }
  try {
    cr.v.status = parse_status(str(e, "verdict"));
  } catch (const std::runtime_error& x) {
    bad(e, "verdict", x.what());
  }
  cr.v.reason = str(e, "reason");
  cr.v.detail = str(e, "detail");
  cr.v.component = str(e, "component");
  const json& causes = field(e, "causes");
  if (!causes.is_array()) bad(e, "causes", "expected an array");
  for (const json& k : causes) {
    if (!k.is_object()) bad(e, "causes", "expected objects");
    cr.v.causes.push_back(Cause{str(k, "component"), str(k, "reason"), str(k, "detail"), boolean(k, "crash"),
                                str(k, "expected_by")});
  }
  cr.v.max_abs_err = opt_num(e, "max_abs_err");
  cr.v.max_rel_err = opt_num(e, "max_rel_err");
  cr.v.kernel_us = opt_num(e, "kernel_us");
  cr.v.writer_us = opt_num(e, "writer_us");
  cr.v.bad_elements = num<int64_t>(e, "bad_elements");
  try {
    cr.data_seed = std::stoull(str(e, "data_seed"));
  } catch (const std::logic_error&) {
    bad(e, "data_seed", "expected a decimal 64-bit integer in a string");
  }
  cr.key_layout = str(e, "key_layout");
  cr.value_layout = str(e, "value_layout");
  cr.routed_to = str(e, "routed_to");
  cr.route_reason = str(e, "route_reason");
  cr.repro = str(e, "repro");
  cr.fixture = boolean(e, "fixture");
  cr.expected = boolean(e, "expected_failure");
  cr.expectations = list<std::string>(e, "expectations");
  cr.context_lens = list<int32_t>(e, "context_lens");
  cr.wall_ms = num<double>(e, "wall_ms");
  const json& ph = field(e, "phases_ms");
  if (!ph.is_object()) bad(e, "phases_ms", "expected an object");
  for (int p = 0; p < kPhaseCount; ++p) cr.phases[size_t(p)] = opt_num(ph, phase_name(Phase(p))).value_or(0);
  return cr;
}

}  // namespace kvh
