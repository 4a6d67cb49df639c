#include "report/results_fields.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "layout.h"
#include "report/results_io.h"

namespace kvh {

using json = nlohmann::json;

// ---- FieldIn ----

FieldIn FieldIn::inner(const json& object, const char* key, long index) const {
  FieldIn f(object, key);
  f.entry_ = entry_;
  f.place_ = place_ + key_ + (index < 0 ? std::string() : fmt::format("[{}]", index)) + ".";
  return f;
}

void FieldIn::bad(const std::string& what) const {
  const auto id = entry_->is_object() ? entry_->find("id") : entry_->end();
  throw std::runtime_error(fmt::format("case {}: field \"{}{}\": {}",
                                       id != entry_->end() && id->is_string() ? id->get<std::string>() : "(no id)",
                                       place_, key_, what));
}

void FieldIn::wrong_type(const char* expected) const {
  bad(fmt::format("expected {}, got {}", expected, e_.at(key_).type_name()));
}

const json& FieldIn::value() const {
  const auto it = e_.find(key_);
  if (it == e_.end()) bad("missing");
  return *it;
}

std::string FieldIn::str() const {
  const json& v = value();
  if (v.is_null()) return "";
  if (!v.is_string()) wrong_type("a string or null");
  return v.get<std::string>();
}

bool FieldIn::boolean() const {
  const json& v = value();
  if (!v.is_boolean()) wrong_type("true or false");
  return v.get<bool>();
}

std::optional<double> FieldIn::opt_num() const {
  if (!present() || e_.at(key_).is_null()) return std::nullopt;
  if (!e_.at(key_).is_number()) wrong_type("a number or null");
  return e_.at(key_).get<double>();
}

int64_t FieldIn::count() const {
  const json& v = value();
  if (!v.is_number_integer()) wrong_type("an integer >= 0");
  if (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max())
                             : v.get<int64_t>() < 0)
    bad(fmt::format("{} is not a count (an integer from 0 to 2^63-1)", v.dump()));
  return v.get<int64_t>();
}

std::string FieldIn::name_in(const std::vector<const char*>& names, const char* what, bool nullable) const {
  const json& v = value();
  if (v.is_null() && nullable) return "";
  if (v.is_null()) bad(fmt::format("null; expected a {}: {}", what, fmt::join(names, ", ")));
  const std::string s = str();
  if (std::none_of(names.begin(), names.end(), [&](const char* n) { return s == n; }))
    bad(fmt::format("'{}' is not a {} this kvharness knows: {}", s, what, fmt::join(names, ", ")));
  return s;
}

namespace {

// ---- writing: the shapes of values ----

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
json str_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }
bool is_write(const CaseResult& cr) { return cr.c.kind == CaseKind::Write; }
// Decode-only fields are null for writes.
json unless_write(const CaseResult& cr, json v) { return is_write(cr) ? json(nullptr) : std::move(v); }

// The first of `all` that `f`'s string names; refuses another name with "'NAME' <why>".
template <class E, size_t N>
E one_of(const FieldIn& f, const E (&all)[N], const char* why) {
  const std::string s = f.str();
  for (E x : all)
    if (s == to_string(x)) return x;
  f.bad(fmt::format("'{}' {}", s, why));
}

// Reads `f`'s string with parse (nullopt: unknown), refusing an unknown one with `why`.
template <class Parse>
auto parsed(const FieldIn& f, Parse parse, const char* why) {
  const auto v = parse(f.str());
  if (!v) f.bad(why);
  return *v;
}

// ---- the rows that take more than a line ----

void read_kv_cache_dtype(const FieldIn& f, CaseResult& cr) {  // after dtype
  const std::string kv = f.str();
  if (kv == to_string(KvCacheDType::Fp8E4m3fn)) cr.c.kv_cache_dtype = KvCacheDType::Fp8E4m3fn;
  else if (kv == to_string(KvCacheDType::Fp8E4m3fnuz)) cr.c.kv_cache_dtype = KvCacheDType::Fp8E4m3fnuz;
  else if (kv == to_string(KvCacheDType::Int8)) cr.c.kv_cache_dtype = KvCacheDType::Int8;
  else if (kv != to_string(cr.c.dtype)) f.bad(fmt::format("'{}' is neither the dtype, an fp8 format nor int8", kv));
}

void read_verdict(const FieldIn& f, CaseResult& cr) {
  try {
    cr.v.status = parse_status(f.str());
  } catch (const std::runtime_error& x) {
    f.bad(x.what());
  }
}

json write_causes(const CaseResult& cr) {
  json out = json::array();
  for (const Cause& k : cr.v.causes) {
    json o = json::object();
    for (const CauseField& cf : cause_fields()) o[cf.name] = cf.write(k);
    out.push_back(std::move(o));
  }
  return out;
}

void read_causes(const FieldIn& f, CaseResult& cr) {
  const json& causes = f.value();
  if (!causes.is_array()) f.bad("expected an array");
  for (size_t i = 0; i < causes.size(); ++i) {
    const json& o = causes[i];
    if (!o.is_object()) f.bad(fmt::format("[{}] is {}, expected an object", i, o.type_name()));
    Cause k;
    for (const CauseField& cf : cause_fields())
      if (!cf.optional || o.contains(cf.name)) cf.read(f.inner(o, cf.name, long(i)), k);
    cr.v.causes.push_back(std::move(k));
  }
}

void read_data_seed(const FieldIn& f, CaseResult& cr) {
  try {
    cr.data_seed = std::stoull(f.str());
  } catch (const std::logic_error&) {
    f.bad("expected a decimal 64-bit integer in a string");
  }
}

json write_phases(const CaseResult& cr) {
  json ph = json::object();
  for (int p = 0; p < kPhaseCount; ++p) ph[phase_name(Phase(p))] = cr.phases[size_t(p)];
  return ph;
}

void read_phases(const FieldIn& f, CaseResult& cr) {
  const json& ph = f.value();
  if (!ph.is_object()) f.bad("expected an object");
  for (int p = 0; p < kPhaseCount; ++p)
    cr.phases[size_t(p)] = f.inner(ph, phase_name(Phase(p))).opt_num().value_or(0);
}

constexpr FieldRole kKey = FieldRole::Key, kCase = FieldRole::Case, kResult = FieldRole::Result, kDerived = FieldRole::Derived;
constexpr bool kNullable = true, kNotNull = false;  // JsonField::nullable
constexpr bool kOptional = true, kRequired = false;  // JsonField::optional
using In = const FieldIn&;
using Out = CaseResult&;
using R = const CaseResult&;

// Rows in read order: a reader may use the fields above it (kv_cache_dtype the dtype,
// high_precision the router_policy, the decode-only fields the kind).
std::vector<ResultsField> make_results_fields() {
  return {
      {"id", kKey, kNotNull, kRequired, [](R r) -> json { return r.c.id(); }, nullptr,
       "stable across runs (cases/case.h Case::id); read back, the other fields must make this id"},
      {"kind", kCase, kNotNull, kRequired, [](R r) -> json { return to_string(r.c.kind); },
       [](In f, Out o) {
         const CaseKind all[] = {CaseKind::Write, CaseKind::Attention, CaseKind::Pipeline};
         o.c.kind = one_of(f, all, "is not write, attention or pipeline");
       },
       "write | attention | pipeline"},
      {"model", kCase, kNotNull, kRequired, [](R r) -> json { return r.c.model; },
       [](In f, Out o) { o.c.model = f.str(); }, "the model preset's name"},
      {"tp", kCase, kNotNull, kRequired, [](R r) -> json { return r.c.tp; },
       [](In f, Out o) { o.c.tp = f.num<int>(); }, "tensor-parallel ranks; head counts are per rank"},
      {"layout", kCase, kNotNull, kRequired, [](R r) -> json { return to_string(r.c.layout); },
       [](In f, Out o) { o.c.layout = parsed(f, parse_scheme, "not a layout this kvharness knows"); },
       "the cache layout scheme (cases/layout.h)"},
      {"head_size", kCase, kNotNull, kRequired, [](R r) -> json { return r.c.head_size; },
       [](In f, Out o) { o.c.head_size = f.num<int64_t>(); }, "elements per head"},
      {"num_heads", kCase, kNotNull, kRequired, [](R r) -> json { return r.c.num_heads; },
       [](In f, Out o) { o.c.num_heads = f.num<int64_t>(); }, "query heads per rank"},
      {"num_kv_heads", kCase, kNotNull, kRequired, [](R r) -> json { return r.c.num_kv_heads; },
       [](In f, Out o) { o.c.num_kv_heads = f.num<int64_t>(); }, "K/V heads per rank"},
      {"batch_size", kCase, kNotNull, kRequired, [](R r) -> json { return r.c.batch_size; },
       [](In f, Out o) { o.c.batch_size = f.num<int64_t>(); },
       "sequences for attention and pipeline, tokens for write"},
      {"block_size", kCase, kNotNull, kRequired, [](R r) -> json { return r.c.block_size; },
       [](In f, Out o) { o.c.block_size = f.num<int64_t>(); }, "tokens per cache block"},
      {"dtype", kCase, kNotNull, kRequired, [](R r) -> json { return to_string(r.c.dtype); },
       [](In f, Out o) {
         const DType all[] = {DType::F16, DType::BF16};
         o.c.dtype = one_of(f, all, "is not a dtype this kvharness knows");
       },
       "the K/V dtype: fp16 | bf16"},
      {"kv_cache_dtype", kCase, kNotNull, kOptional, [](R r) -> json { return r.c.kv_cache_dtype_name(); },
       read_kv_cache_dtype, "the cache's element type: fp16 | bf16 (the dtype) | fp8_e4m3fn | fp8_e4m3fnuz | int8"},
      {"kv_scales", kCase, kNotNull, kOptional, [](R r) -> json { return to_string(r.c.kv_scales); },
       [](In f, Out o) { o.c.kv_scales = parsed(f, parse_kv_scales, "not none, tensor, head, block, token or slot"); },
       "fp8/int8 dequant scales' granularity: none | tensor | head | block | token | slot"},
      {"kv_lora_rank", kCase, kNotNull, kOptional, [](R r) -> json { return r.c.kv_lora_rank; },
       [](In f, Out o) { o.c.kv_lora_rank = f.num<int64_t>(); }, "MLA: the latent cache's latent part; 0 = not MLA"},
      {"qk_rope_head_dim", kCase, kNotNull, kOptional, [](R r) -> json { return r.c.qk_rope_head_dim; },
       [](In f, Out o) { o.c.qk_rope_head_dim = f.num<int64_t>(); }, "MLA: the rope part; 0 = not MLA"},
      {"qk_nope_head_dim", kCase, kNotNull, kOptional, [](R r) -> json { return r.c.qk_nope_head_dim; },
       [](In f, Out o) { o.c.qk_nope_head_dim = f.num<int64_t>(); }, "MLA: the model's nope dim; 0 = not MLA"},
      {"softmax_scale", kCase, kNotNull, kOptional, [](R r) -> json { return r.c.softmax_scale; },
       [](In f, Out o) { o.c.softmax_scale = f.num<double>(); },
       "the case's softmax scale; 0 = the default (MLA: 1/sqrt(qk_nope_head_dim + qk_rope_head_dim))"},
      {"mla", kDerived, kNotNull, kRequired, [](R r) -> json { return r.c.mla(); }, nullptr,
       "true when the cache is MLA's latent cache (kv_lora_rank > 0)"},
      {"shuffle", kDerived, kNotNull, kRequired, [](R r) -> json { return r.c.shuffle(); }, nullptr,
       "1 when the V cache is shuffled (a shuffle writer or reader), else 0"},
      {"variant", kDerived, kNotNull, kRequired, [](R r) -> json { return r.c.variant(); }, nullptr,
       "the row name shown in the matrix: variant_name, else the kernels"},
      {"variant_name", kCase, kNullable, kOptional, [](R r) { return str_or_null(r.c.variant_name); },
       [](In f, Out o) { o.c.variant_name = f.str(); }, "the case file's display name of the row"},
      {"hybrid", kCase, kNotNull, kOptional, [](R r) -> json { return r.c.hybrid; },
       [](In f, Out o) { o.c.hybrid = f.boolean(); }, "the model preset is a hybrid one"},
      {"padded_page_bytes", kCase, kNotNull, kOptional, [](R r) -> json { return r.c.padded_page_bytes; },
       [](In f, Out o) { o.c.padded_page_bytes = f.num<int64_t>(); }, "padded layout: bytes a page; 0 = derived"},
      {"kernel_block_size", kCase, kNotNull, kOptional, [](R r) -> json { return r.c.kernel_block_size; },
       [](In f, Out o) { o.c.kernel_block_size = f.num<int64_t>(); },
       "kernel_pages: the kernel's page in tokens; 0 otherwise"},
      {"degenerate_stride", kCase, kNotNull, kOptional, [](R r) -> json { return r.c.degenerate_stride; },
       [](In f, Out o) { o.c.degenerate_stride = f.num<int64_t>(); },
       "degenerate_strides: the stride of the size-1 dims; 0 otherwise"},
      {"writer", kCase, kNullable, kRequired, [](R r) { return str_or_null(r.c.writer); },
       [](In f, Out o) { o.c.writer = f.str(); }, "the writer kernel (write, pipeline)"},
      {"reader", kCase, kNullable, kRequired, [](R r) { return str_or_null(r.c.reader); },
       [](In f, Out o) { o.c.reader = f.str(); }, "the reader kernel, when no router picks it"},
      {"router_policy", kCase, kNullable, kRequired, [](R r) { return str_or_null(r.c.router_policy); },
       [](In f, Out o) { o.c.router_policy = f.str(); }, "the router policy that picks the reader"},
      {"target", kCase, kNullable, kRequired, [](R r) { return str_or_null(r.c.target); },
       [](In f, Out o) { o.c.target = f.str(); }, "routing's compute units: a named target; null: the device's"},
      {"high_precision", kCase, kNullable, kRequired,
       [](R r) { return r.c.router_policy.empty() ? json(nullptr) : json(r.c.high_precision); },
       [](In f, Out o) {
         if (!o.c.router_policy.empty()) o.c.high_precision = f.num<int>();
       },
       "router input 0..2; null without a router"},
      {"routed_to", kResult, kNullable, kRequired, [](R r) { return str_or_null(r.routed_to); },
       [](In f, Out o) { o.routed_to = f.str(); }, "the reader that ran (attention, pipeline)"},
      {"expect_routed_to", kCase, kNullable, kRequired, [](R r) { return str_or_null(r.c.expect_routed_to); },
       [](In f, Out o) { o.c.expect_routed_to = f.str(); }, "the reader the router must pick, when the case says"},
      {"values", kCase, kNotNull, kRequired, [](R r) -> json { return to_string(r.c.values); },
       [](In f, Out o) { o.c.values = parsed(f, parse_value_dist, "not a value distribution this kvharness knows"); },
       "normal | sink | large (\"normal\" for writes too)"},
      {"stale", kCase, kNotNull, kOptional, [](R r) -> json { return to_string(r.c.stale); },
       [](In f, Out o) { o.c.stale = parsed(f, parse_stale, "not random, nan or inf"); },
       "what unwritten cache slots hold: random | nan | inf (\"random\" for writes)"},
      {"block_table_padding", kCase, kNullable, kOptional,
       [](R r) { return unless_write(r, block_table_padding_name(r.c.block_table_padding)); },
       [](In f, Out o) {
         if (!is_write(o)) o.c.block_table_padding = parsed(f, parse_block_table_padding, "not -1 or num_blocks+K");
       },
       "what block_tables' padding entries hold: -1 | num_blocks+K; null for writes"},
      {"min_block_id", kCase, kNullable, kOptional, [](R r) { return unless_write(r, r.c.min_block_id); },
       [](In f, Out o) {
         if (!is_write(o)) o.c.min_block_id = f.num<int64_t>();
       },
       "sequences' blocks come from ids >= this; null for writes"},
      {"route_reason", kResult, kNullable, kRequired, [](R r) { return str_or_null(r.route_reason); },
       [](In f, Out o) { o.route_reason = f.str(); }, "why the router picked routed_to"},
      {"sliding_window", kCase, kNotNull, kOptional, [](R r) -> json { return r.c.sliding_window; },
       [](In f, Out o) { o.c.sliding_window = f.num<int64_t>(); }, "left window in tokens; 0 = off"},
      {"sinks", kCase, kNotNull, kOptional, [](R r) -> json { return r.c.sinks; },
       [](In f, Out o) { o.c.sinks = f.boolean(); }, "per-head attention-sink logits"},
      {"softcap", kCase, kNotNull, kOptional, [](R r) -> json { return r.c.softcap; },
       [](In f, Out o) { o.c.softcap = f.num<double>(); }, "logits soft-cap; 0 = off"},
      {"alibi", kCase, kNotNull, kOptional, [](R r) -> json { return r.c.alibi; },
       [](In f, Out o) { o.c.alibi = f.boolean(); }, "ALiBi with the standard slopes"},
      {"tp_rank", kCase, kNotNull, kOptional, [](R r) -> json { return r.c.tp_rank; },
       [](In f, Out o) { o.c.tp_rank = f.num<int>(); }, "which rank's heads"},
      {"partition_size", kCase, kNotNull, kOptional, [](R r) -> json { return r.c.partition_size; },
       [](In f, Out o) { o.c.partition_size = f.num<int32_t>(); },
       "split-K partition in tokens; 0 = the reader's default"},
      // ---- issue 23 (B long contexts) ----
      {"tolerance", kCase, kNotNull, kOptional,
       [](R r) -> json { return r.c.derived_tolerance ? "derived" : "dtype"; },
       [](In f, Out o) { o.c.derived_tolerance = f.name_in({"dtype", "derived"}, "tolerance", kNotNull) == "derived"; },
       "how `out` was judged: dtype (atol/rtol by dtype) or derived (also the ulp bound of "
       "harness/check/tolerance.h)"},
      // ---- end issue 23 (B long contexts) ----
      // issue 23 (D): launch configurations
      {"launch_config", kCase, kNullable, kOptional, [](R r) { return str_or_null(r.c.launch_config); },
       [](In f, Out o) { o.c.launch_config = f.str(); },
       "the declared launch configuration the case ran (its writer's for writes, else its reader's; provider.h "
       "kvh_launch_config); null = the default launch"},
      {"context_len_min", kCase, kNullable, kRequired, [](R r) { return unless_write(r, r.c.context_len_min); },
       [](In f, Out o) {
         if (!is_write(o)) o.c.context_len_min = f.num<int64_t>();
       },
       "shortest sequence; null for writes"},
      {"context_len_max", kCase, kNullable, kRequired, [](R r) { return unless_write(r, r.c.context_len_max); },
       [](In f, Out o) {
         if (!is_write(o)) o.c.context_len_max = f.num<int64_t>();
       },
       "longest sequence; null for writes"},
      {"context_lens", kResult, kNullable, kOptional,
       [](R r) { return is_write(r) || r.context_lens.empty() ? json(nullptr) : json(r.context_lens); },
       [](In f, Out o) { o.context_lens = f.list<int32_t>(); }, "the per-sequence lengths that ran; null for writes"},
      {"given_context_lens", kCase, kNullable, kOptional,
       [](R r) { return r.c.context_lens.empty() ? json(nullptr) : json(r.c.context_lens); },
       [](In f, Out o) { o.c.context_lens = f.list<int64_t>(); },
       "the case file's explicit lengths (part of the id); null when drawn"},
      {"query_len_min", kCase, kNullable, kOptional, [](R r) { return unless_write(r, r.c.query_len_min); },
       [](In f, Out o) {
         if (!is_write(o)) o.c.query_len_min = f.num<int64_t>();
       },
       "fewest new query tokens of a sequence (1: decode); null for writes"},
      {"query_len_max", kCase, kNullable, kOptional, [](R r) { return unless_write(r, r.c.query_len_max); },
       [](In f, Out o) {
         if (!is_write(o)) o.c.query_len_max = f.num<int64_t>();
       },
       "most new query tokens of a sequence (1: decode); null for writes"},
      {"query_mixed", kCase, kNotNull, kOptional, [](R r) -> json { return r.c.query_mixed; },
       [](In f, Out o) { o.c.query_mixed = f.boolean(); },
       "a mixed batch: decode, speculative [2, 8] and chunks [query_len_min, query_len_max]"},
      {"causal", kCase, kNotNull, kOptional, [](R r) -> json { return r.c.causal; },
       [](In f, Out o) { o.c.causal = f.boolean(); }, "ragged queries: causal within each chunk"},
      {"query_lens", kResult, kNullable, kOptional,
       [](R r) { return is_write(r) || r.query_lens.empty() ? json(nullptr) : json(r.query_lens); },
       [](In f, Out o) { o.query_lens = f.list<int32_t>(); },
       "the per-sequence query lengths that ran; null for writes and decode cases"},
      {"padding_tokens", kResult, kNullable, kOptional,
       [](R r) { return r.padding_tokens.empty() ? json(nullptr) : json(r.padding_tokens); },
       [](In f, Out o) { o.padding_tokens = f.list<int64_t>(); },
       "write cases: the token indices whose slot_mapping entry is -1 (padding, drawn per case: "
       "harness/case/padding.h); null when none, and for attention and pipeline cases"},
      {"given_query_lens", kCase, kNullable, kOptional,
       [](R r) { return r.c.query_lens.empty() ? json(nullptr) : json(r.c.query_lens); },
       [](In f, Out o) { o.c.query_lens = f.list<int64_t>(); },
       "the case file's explicit query lengths (part of the id); null when drawn"},
      {"max_query_len", kDerived, kNotNull, kRequired, [](R r) -> json { return r.c.max_query_len(); }, nullptr,
       "the most query tokens a sequence of the case can have (1: decode, writes); the filter key"},
      {"verdict", kResult, kNotNull, kRequired, [](R r) -> json { return to_string(r.v.status); }, read_verdict,
       "PASS | FAIL | UNSUPPORTED | CRASH | XPASS | INTERRUPTED"},
      {"reason", kResult, kNullable, kRequired, [](R r) { return str_or_null(r.v.reason); },
       [](In f, Out o) { o.v.reason = f.name_in(reason_names(), "reason", kNullable); },
       "the primary cause's reason class (a cause's `reason`, below); null for PASS"},
      {"component", kResult, kNullable, kRequired, [](R r) { return str_or_null(r.v.component); },
       [](In f, Out o) { o.v.component = f.name_in(component_names(), "component", kNullable); },
       "writer | reader | router | harness | planner: the primary cause's"},
      {"causes", kResult, kNotNull, kRequired, write_causes, read_causes,
       "every failure found, in the order the case checks them (the cause fields below)"},
      {"expected_failure", kResult, kNotNull, kRequired, [](R r) -> json { return r.expected; },
       [](In f, Out o) { o.expected = f.boolean(); }, "a FAIL/CRASH whose every cause is expected: not counted"},
      {"expectations", kResult, kNotNull, kOptional, [](R r) -> json { return r.expectations; },
       [](In f, Out o) { o.expectations = f.list<std::string>(); },
       "file:line of the declarations that matched this case"},
      {"detail", kResult, kNullable, kRequired, [](R r) { return str_or_null(r.v.detail); },
       [](In f, Out o) { o.v.detail = f.str(); }, "the primary cause's paragraph"},
      {"max_abs_err", kResult, kNullable, kOptional, [](R r) { return opt(r.v.max_abs_err); },
       [](In f, Out o) { o.v.max_abs_err = f.opt_num(); }, "largest absolute error against the reference"},
      {"max_rel_err", kResult, kNullable, kOptional, [](R r) { return opt(r.v.max_rel_err); },
       [](In f, Out o) { o.v.max_rel_err = f.opt_num(); }, "largest relative error against the reference"},
      // ---- issue 23 (B long contexts) ----
      {"max_ulp_err", kResult, kNullable, kOptional, [](R r) { return opt(r.v.max_ulp_err); },
       [](In f, Out o) { o.v.max_ulp_err = f.opt_num(); },
       "attention: largest error in ulps of the output dtype at the reference value (output_ulp, "
       "harness/check/tolerance.h); null when nothing was compared"},
      // ---- end issue 23 (B long contexts) ----
      {"kernel_us", kResult, kNullable, kOptional, [](R r) { return opt(r.v.kernel_us); },
       [](In f, Out o) { o.v.kernel_us = f.opt_num(); },
       "median microseconds of the kernel (pipeline: the reader); null if not measured"},
      {"writer_us", kResult, kNullable, kOptional, [](R r) { return opt(r.v.writer_us); },
       [](In f, Out o) { o.v.writer_us = f.opt_num(); }, "pipeline: median microseconds of the writer"},
      {"host_us", kResult, kNullable, kOptional, [](R r) { return opt(r.v.host_us); },
       [](In f, Out o) { o.v.host_us = f.opt_num(); },
       "median host microseconds of one call of the kernel_us kernel (the bridge's and provider's overhead), when "
       "its provider times itself (a Python provider); null otherwise"},
      {"timing_method", kResult, kNullable, kOptional, [](R r) { return str_or_null(r.v.timing_method); },
       [](In f, Out o) { o.v.timing_method = f.str(); },
       "how kernel_us was measured: device_events (around each launch), graph (replays of a captured call), "
       "events_batch (around back-to-back calls), host_clock; null if not measured"},
      {"timing_reps", kResult, kNullable, kOptional,
       [](R r) { return r.v.timing_reps > 0 ? json(r.v.timing_reps) : json(nullptr); },
       [](In f, Out o) { o.v.timing_reps = int(f.opt_num().value_or(0)); },
       "timed launches behind kernel_us: as many as fit in --timing-budget of the case's wall time, 1 to "
       "--timing-reps (harness/bench/timing.h); null when a provider timed itself or nothing was timed"},
      {"bad_elements", kResult, kNotNull, kRequired, [](R r) -> json { return r.v.bad_elements; },
       [](In f, Out o) { o.v.bad_elements = f.count(); }, "elements out of tolerance: an integer >= 0"},
      {"seed", kCase, kNotNull, kRequired, [](R r) -> json { return r.c.seed; },
       [](In f, Out o) { o.c.seed = f.num<uint64_t>(); }, "the case file's seed"},
      {"data_seed", kResult, kNotNull, kRequired, [](R r) -> json { return std::to_string(r.data_seed); },
       read_data_seed, "seed of the random inputs: a 64-bit integer in a string, exact for every JSON reader"},
      {"key_layout", kResult, kNullable, kRequired, [](R r) { return str_or_null(r.key_layout); },
       [](In f, Out o) { o.key_layout = f.str(); }, "the K cache view, (shape):(stride)+offset"},
      {"value_layout", kResult, kNullable, kRequired, [](R r) { return str_or_null(r.value_layout); },
       [](In f, Out o) { o.value_layout = f.str(); }, "the V cache view, (shape):(stride)+offset"},
      {"source", kCase, kNotNull, kRequired, [](R r) -> json { return r.c.source; },
       [](In f, Out o) { o.c.source = f.str(); }, "file:line of the table that made the case"},
      {"repro", kResult, kNotNull, kRequired, [](R r) -> json { return r.repro; },
       [](In f, Out o) { o.repro = f.str(); }, "a command line that re-runs this case alone"},
      {"fixture", kResult, kNotNull, kRequired, [](R r) -> json { return r.fixture; },
       [](In f, Out o) { o.fixture = f.boolean(); }, "a regression fixture (kernel or router policy) took part"},
      {"reference_ms", kResult, kNullable, kOptional,
       [](R r) { return is_write(r) || r.reference_ms <= 0 ? json(nullptr) : json(r.reference_ms); },
       [](In f, Out o) { o.reference_ms = f.opt_num().value_or(0); },
       "wall ms of the float64 attention reference (host cores, overlapping the device work; `reference` in "
       "phases_ms is only the wait for it); null for writes"},
      {"reference_id", kResult, kNullable, kOptional, [](R r) { return str_or_null(r.reference_id); },
       [](In f, Out o) { o.reference_id = f.str(); },
       "16 hex digits naming the float64 reference's inputs (the case's logical inputs and drawn lengths, "
       "harness/case/reference_cache.h): cases of one id share one reference; null for writes and cases "
       "refused before it"},
      {"reference_reused", kResult, kNotNull, kOptional, [](R r) -> json { return r.reference_reused; },
       [](In f, Out o) { o.reference_reused = f.boolean(); },
       "the reference came from the run's reference cache (an earlier case of the same reference_id "
       "computed it; reference_ms is then null)"},
      {"wall_ms", kResult, kNotNull, kRequired, [](R r) -> json { return r.wall_ms; },
       [](In f, Out o) { o.wall_ms = f.num<double>(); }, "the case's wall time in ms"},
      {"phases_ms", kResult, kNotNull, kRequired, write_phases, read_phases,
       "ms per phase (harness/run/phases.h); they add up to about wall_ms"},
  };
}

using CIn = const FieldIn&;
using COut = Cause&;
using C = const Cause&;

std::vector<CauseField> make_cause_fields() {
  return {
      {"component", kResult, kNotNull, kRequired, [](C k) -> json { return k.component; },
       [](CIn f, COut k) { k.component = f.name_in(component_names(), "component", kNotNull); },
       "writer | reader | router | harness | planner"},
      {"reason", kResult, kNotNull, kRequired, [](C k) -> json { return k.reason; },
       [](CIn f, COut k) { k.reason = f.name_in(reason_names(), "reason", kNotNull); },
       "the reason class: mismatch | out_of_view_write | unwritten_output | nan_or_inf | misroute | "
       "unsupported_config | launch_error | crash | timeout | harness_error | xpass | interrupted"},
      {"detail", kResult, kNotNull, kRequired, [](C k) -> json { return k.detail; },
       [](CIn f, COut k) { k.detail = f.str(); }, "one paragraph a human can act on"},
      {"crash", kResult, kNotNull, kRequired, [](C k) -> json { return k.crash; },
       [](CIn f, COut k) { k.crash = f.boolean(); }, "a CRASH (never exempted by a fixture), not a FAIL"},
      {"expected_by", kResult, kNullable, kRequired, [](C k) { return str_or_null(k.expected_by); },
       [](CIn f, COut k) { k.expected_by = f.str(); }, "why this failure is expected (a fixture, a declaration)"},
  };
}

const char* role_name(FieldRole r) {
  switch (r) {
    case FieldRole::Key: return "key";
    case FieldRole::Case: return "case";
    case FieldRole::Result: return "result";
    case FieldRole::Derived: return "derived";
  }
  return "?";
}

// `text` for a Markdown table cell: "|" escaped.
std::string cell(const std::string& text) {
  std::string s;
  for (char ch : text) s += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return s;
}

// The docs' "absent" column: what reading an entry without the field does.
template <class Rec>
const char* absent(const JsonField<Rec>& f) {
  if (f.role == FieldRole::Derived) return "ignored";
  return f.optional ? "default" : "refused";
}

template <class Rec>
std::string markdown_table(const std::vector<JsonField<Rec>>& fields) {
  std::string s = "| field | role | null | absent | meaning |\n|---|---|---|---|---|\n";
  for (const auto& f : fields)
    s += fmt::format("| `{}` | {} | {} | {} | {} |\n", f.name, role_name(f.role), f.nullable ? "may be" : "never",
                     absent(f), cell(f.meaning));
  return s;
}

}  // namespace

const std::vector<ResultsField>& results_fields() {
  static const std::vector<ResultsField> fields = make_results_fields();
  return fields;
}

const std::vector<CauseField>& cause_fields() {
  static const std::vector<CauseField> fields = make_cause_fields();
  return fields;
}

std::string results_fields_markdown() {
  return "<!-- Generated from harness/report/results_fields.cpp by the ResultsFields.DocsPageIsCurrent test\n"
         "     (KVH_UPDATE_DOCS=1 rewrites it). Edit the table there, not this page. -->\n"
         "# results.json case entries\n\n"
         "Each object of results.json's `cases` array (schema `kvharness.results/1`; the run's header\n"
         "fields and what scripts and CI may rely on: [reports.md](reports.md), \"results.json\").\n"
         "The report writes every field below, and `--isolate`, `--resume`, `merge` read each one back\n"
         "from the same table.\n\n"
         "- role: `key` is the id, which the case read back (matched by id or rebuilt) must have;\n"
         "  `case` fields describe the case (always read back: they rebuild the case, or must be the\n"
         "  fields of the case matched by id, `--resume` and `--isolate`), `result` fields its outcome\n"
         "  (always read back), `derived` fields follow from the case (written, never read).\n"
         "- null: whether the value may be null (a field that does not apply, or not measured).\n"
         "- absent: what reading an entry without the field does: `default` (entries of older\n"
         "  versions; the field keeps its default), `ignored` (never read), or `refused` (the entry is\n"
         "  refused, naming the field;\n"
         "  a field that is null for some cases, such as `high_precision` without a router, only where\n"
         "  it is read).\n"
         "- meaning: where it lists the values as `a | b | c`, the reader refuses any other, naming the\n"
         "  field and the values it knows.\n\n" +
         markdown_table(results_fields()) + "\n## Cause objects (`causes`)\n\n" + markdown_table(cause_fields());
}

}  // namespace kvh
