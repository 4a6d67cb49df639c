#include "case_file.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>
#include <set>
#include <toml++/toml.h>

#include "dtype_names.h"
#include "filter.h"
#include "keys.h"
#include "model.h"
#include "route_boundaries.h"

namespace kvh {

namespace {

// Where the loader is: the file, and the kind of table whose keys it reads.
// Every key goes through get(), which holds the loader to the key table.
struct Ctx {
  std::string file;
  KeyTable table = KeyTable::TopLevel;
  KeysRead* read = nullptr;  // keys_test.cpp: every key looked up, per table

  // The same file, reading a table of kind `t`.
  Ctx in(KeyTable t) const {
    Ctx c = *this;
    c.table = t;
    return c;
  }
  // Key `key` of `t` (a table of kind `table`), or null. std::logic_error when
  // the key table does not list it for `table`.
  const toml::node* get(const toml::table& t, const std::string& key) const {
    case_key(table, key);
    if (read) (*read)[table].insert(key);
    return t.get(key);
  }
  // The key's row in the key table: its closed set of values, its bounds.
  const CaseKey& key(const std::string& key) const { return case_key(table, key); }
  [[noreturn]] void fail(const toml::node& n, const std::string& field, const std::string& msg) const {
    throw CaseFileError(fmt::format("{}:{}: field '{}': {}", file, n.source().begin.line, field, msg));
  }
};

/// Whether a kv_cache_dtype name is a one-byte quantized cache (fp8_* or int8), which takes scales.
bool is_quantized_cache_name(const std::string& d) { return d.rfind("fp8_", 0) == 0 || d == "int8"; }

std::string type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::array: return "an array";
    case toml::node_type::table: return "a table";
    default: return "another type";
  }
}

// A non-empty array of strings, each among `allowed`, or (`allowed` empty) the key's closed set of values.
std::vector<std::string> strings(const Ctx& c, const toml::table& t, const std::string& key, bool required,
                                 const std::vector<std::string>& allowed = {}) {
  const std::vector<std::string>& closed = allowed.empty() ? c.key(key).values : allowed;
  const toml::node* n = c.get(t, key);
  if (!n) {
    if (required) c.fail(t, key, "missing; expected an array of strings");
    return {};
  }
  const toml::array* a = n->as_array();
  if (!a || a->empty()) c.fail(*n, key, "expected a non-empty array of strings, got " + type_name(*n));
  std::vector<std::string> out;
  for (const auto& e : *a) {
    auto s = e.value<std::string>();
    if (!s) c.fail(e, key, "expected a string element, got " + type_name(e));
    if (!closed.empty() && std::find(closed.begin(), closed.end(), *s) == closed.end()) {
      // A serving stack's dtype name (vLLM's "fp8"): say which kvharness name it is.
      const std::string hint = key == "kv_cache_dtype" || key == "dtypes" ? stack_dtype_hint(*s) : "";
      c.fail(e, key, fmt::format("unknown value '{}'; expected one of {}{}", *s, fmt::join(closed, ", "),
                                 hint.empty() ? "" : "." + hint));
    }
    out.push_back(*s);
  }
  return out;
}

// Bounds (the key table's) keep a typo from becoming a 4 GB allocation or a silent int truncation.
std::vector<int64_t> integers(const Ctx& c, const toml::table& t, const std::string& key, bool required) {
  const auto [min_value, max_value] = c.key(key).range;
  const toml::node* n = c.get(t, key);
  if (!n) {
    if (required) c.fail(t, key, "missing; expected an array of integers");
    return {};
  }
  const toml::array* a = n->as_array();
  if (!a || a->empty()) c.fail(*n, key, "expected a non-empty array of integers, got " + type_name(*n));
  std::vector<int64_t> out;
  for (const auto& e : *a) {
    auto v = e.value<int64_t>();
    if (!v || !e.is_integer()) c.fail(e, key, "expected an integer element, got " + type_name(e));
    if (*v < min_value || *v > max_value)
      c.fail(e, key, fmt::format("expected an integer in [{}, {}], got {}", min_value, max_value, *v));
    out.push_back(*v);
  }
  return out;
}

// One integer in [range.lo, range.hi]; `dflt` when absent.
int64_t integer_in(const Ctx& c, const toml::table& t, const std::string& key, int64_t dflt, KeyRange range) {
  const auto [min_value, max_value] = range;
  const toml::node* n = c.get(t, key);
  if (!n) return dflt;
  if (!n->is_integer()) c.fail(*n, key, "expected an integer, got " + type_name(*n));
  int64_t v = *n->value<int64_t>();
  if (v < min_value || v > max_value)
    c.fail(*n, key, fmt::format("expected an integer in [{}, {}], got {}", min_value, max_value, v));
  return v;
}

// One integer within the key table's bounds; `dflt` when absent.
int64_t integer(const Ctx& c, const toml::table& t, const std::string& key, int64_t dflt) {
  return integer_in(c, t, key, dflt, c.key(key).range);
}

std::string string_field(const Ctx& c, const toml::table& t, const std::string& key, const std::string& dflt) {
  const toml::node* n = c.get(t, key);
  if (!n) return dflt;
  if (!n->is_string()) c.fail(*n, key, "expected a string, got " + type_name(*n));
  return *n->value<std::string>();
}

// "file:line" of each element of array `key` of `t` (the array's own line where an element has
// none), in order: an unknown kernel name's error points at the name, not at the table.
std::vector<std::string> element_sources(const Ctx& c, const toml::table& t, const std::string& key) {
  std::vector<std::string> out;
  const toml::node* n = c.get(t, key);
  if (const toml::array* a = n ? n->as_array() : nullptr)
    for (const auto& e : *a)
      out.push_back(fmt::format("{}:{}", c.file, (e.source().begin ? e.source() : n->source()).begin.line));
  return out;
}

// "file:line" of key `key` of `t`, or "" when absent.
std::string key_source(const Ctx& c, const toml::table& t, const std::string& key) {
  const toml::node* n = c.get(t, key);
  return n ? fmt::format("{}:{}", c.file, n->source().begin.line) : "";
}

// Where an error about key `key` of `t` points: its value, else the table.
const toml::node& node_of(const Ctx& c, const toml::table& t, const std::string& key) {
  const toml::node* n = c.get(t, key);
  return n ? *n : static_cast<const toml::node&>(t);
}

// Refuses a key that a table of kind c.table does not accept (cases/keys.h); `table` names it in the error.
void only_keys(const Ctx& c, const toml::table& t, const std::string& table) {
  const std::set<std::string> keys = accepted_keys(c.table);
  for (const auto& [k, v] : t)
    if (!keys.count(std::string(k.str())))
      c.fail(v, std::string(k.str()), fmt::format("unknown field in [{}]; expected one of {}", table, fmt::join(keys, ", ")));
}

// One [[expected_failure]] or [[known_failure]] table (cases/expectation.h); c.table
// says which. Scoped (inside a table or variant, which names the cases): `filter` only narrows them.
ExpectedFailure parse_expectation(const Ctx& c, const toml::table& t, const std::string& table) {
  const bool scoped = c.table == KeyTable::ScopedExpectedFailure;
  only_keys(c, t, table);
  ExpectedFailure e;
  e.source = fmt::format("{}:{}", c.file, t.source().begin.line);
  e.filter = string_field(c, t, "filter", "");
  if (!scoped) e.ids = strings(c, t, "ids", false);
  if (!scoped && e.filter.empty() && e.ids.empty())
    c.fail(t, "filter", "a declaration needs a 'filter' or 'ids' naming its cases");
  if (!e.filter.empty()) {
    try {
      Filter f(e.filter);
    } catch (const FilterError& err) {
      c.fail(node_of(c, t, "filter"), "filter", err.what());
    }
  }
  e.component = string_field(c, t, "component", "");
  const auto& comps = c.key("component").values;
  if (!e.component.empty() && std::find(comps.begin(), comps.end(), e.component) == comps.end())
    c.fail(node_of(c, t, "component"), "component",
           fmt::format("unknown component '{}'; expected one of {} (a harness failure is never expected)", e.component,
                       fmt::join(comps, ", ")));
  e.reasons = strings(c, t, "reasons", false);
  e.why = string_field(c, t, "why", "");
  if (e.why.empty()) c.fail(t, "why", "missing; say which bug makes these cases fail");
  return e;
}

// The kind of table a declaration under a table of kind `parent` is.
KeyTable declaration_table(KeyTable parent) {
  if (parent == KeyTable::KnownFailuresTopLevel) return KeyTable::KnownFailure;
  return parent == KeyTable::TopLevel ? KeyTable::ExpectedFailure : KeyTable::ScopedExpectedFailure;
}

// The declarations under key `key` of `t` (an array of tables). `scope`: the
// table and variant they are scoped to, or null for top-level ones.
std::vector<ExpectedFailure> expectations_of(const Ctx& c, const toml::table& t, const std::string& key,
                                             const std::pair<std::string, std::string>* scope = nullptr) {
  std::vector<ExpectedFailure> out;
  if (const toml::node* n = c.get(t, key)) {
    const toml::array* arr = n->as_array();
    if (!arr || !arr->is_array_of_tables()) c.fail(*n, key, "expected an array of tables ([[" + key + "]] or [{...}])");
    for (const auto& e : *arr) {
      out.push_back(parse_expectation(c.in(declaration_table(c.table)), *e.as_table(), key));
      if (scope) out.back().scope_source = scope->first, out.back().scope_variant = scope->second;
    }
  }
  return out;
}

// Bounds on what one file may ask for, so that a few bytes of TOML cannot
// become gigabytes (seen while writing fuzz/case_file_fuzz: each axis was
// bounded, their product was not). Far above every committed suite
// (default.toml makes 1,520 cases; the largest decode case, seed-pr's batch
// 512 x 1300 tokens at head size 256, needs about 0.7 GB of cache).
constexpr size_t kMaxCasesPerFile = 100000;
constexpr int64_t kMaxKvCacheBytes = int64_t(64) << 30;  // 64 GiB, an H200 holds 141

// Appends k to out unless a bound above is passed: then CaseFileError at table t.
void add_case(const Ctx& c, const toml::table& t, std::vector<Case>& out, Case&& k) {
  if (out.size() >= kMaxCasesPerFile)
    c.fail(t, to_string(k.kind), fmt::format("the file expands to more than {} cases; split it or use fewer values per axis",
                                             kMaxCasesPerFile));
  // K and V of every token, 2 bytes an element (fp16 and bf16). The large
  // layout sizes its cache by its own rule (layout.h), not by the tokens.
  // A decode case's blocks below min_block_id are cache too (unused, but allocated).
  const int64_t tokens = k.kind == CaseKind::Write ? k.batch_size
                                                   : k.batch_size * k.context_len_max + (k.min_block_id - 1) * k.block_size;
  // MLA: one latent row (head_size = kv_lora_rank + qk_rope_head_dim) a token, no separate V.
  const int64_t bytes = tokens * k.num_kv_heads * k.head_size * 2 * (k.mla() ? 1 : 2);  // each factor <= 2^36, 2^12, 2^10
  // Blame the key that makes most of the tokens, at its own line.
  const bool by_min_block = k.kind != CaseKind::Write && (k.min_block_id - 1) * k.block_size > k.batch_size * k.context_len_max;
  const char* field = k.kind == CaseKind::Write ? "num_tokens" : by_min_block ? "min_block_id" : "batch_sizes";
  if (k.layout != Scheme::Large && bytes > kMaxKvCacheBytes)
    c.fail(node_of(c, t, field), field,
           fmt::format("{} tokens x {} kv heads x head size {} need {} GiB of {} cache; at most {} GiB per case",
                       tokens, k.num_kv_heads, k.head_size, bytes >> 30, k.mla() ? "latent" : "K/V",
                       kMaxKvCacheBytes >> 30));
  out.push_back(std::move(k));
}

// A decode axis given as one value or a non-empty array of them; `elem` parses and checks one
// element (failing through c.fail with `expected` otherwise). Absent: {dflt}.
// `single(n)`: whether n is one value although it may be an array ([min, max] of query_lens).
template <class T, class Elem>
std::vector<T> axis(const Ctx& c, const toml::table& t, const std::string& key, T dflt, Elem&& elem,
                    bool (*single)(const toml::node&) = nullptr) {
  const toml::node* n = c.get(t, key);
  if (!n) return {dflt};
  std::vector<T> out;
  if (const toml::array* a = n->as_array(); a && !(single && single(*n))) {
    if (a->empty()) c.fail(*n, key, "expected a value or a non-empty array of values");
    for (const auto& e : *a) out.push_back(elem(e));
  } else {
    out.push_back(elem(*n));
  }
  return out;
}

// The axes every table has: models at tp, head sizes, layouts, block sizes,
// dtypes, seeds. Calls emit(base) for each combination, outermost first.
struct CommonAxes {
  std::vector<std::string> models, layouts, dtypes, kv_cache_dtypes, kv_scales;
  std::vector<int64_t> head_sizes, block_sizes;
  std::vector<int64_t> tps{1};            // one case axis; tp = the smallest (tp_rank's bound)
  int tp = 1;
  bool layouts_given = true;              // false: `layouts` absent (MLA tables: separate)
  // MLA overrides of the models' shapes (0: the model's) and the softmax scales (0: the default).
  int64_t kv_lora_rank = 0, qk_rope_head_dim = 0, qk_nope_head_dim = 0;
  std::vector<double> softmax_scales{0};
  int64_t padded = 0;
  int64_t kernel_block_size = 0;          // kernel_pages layout
  std::vector<int64_t> degenerate_strides;  // degenerate_strides layout
};

// The MLA keys of a case table (cases/keys.h): the latent shape's overrides and the softmax scales.
void mla_axes(const Ctx& c, const toml::table& t, CommonAxes& a) {
  a.kv_lora_rank = integer(c, t, "kv_lora_rank", 0);
  a.qk_rope_head_dim = integer(c, t, "qk_rope_head_dim", 0);
  a.qk_nope_head_dim = integer(c, t, "qk_nope_head_dim", 0);
  const KeyRange r = c.key("softmax_scale").range;
  a.softmax_scales = axis<double>(c, t, "softmax_scale", 0.0, [&c, r](const toml::node& e) {
    if (!e.is_number()) c.fail(e, "softmax_scale", "expected a scale > 0 (e.g. 0.1352), got " + type_name(e));
    const double v = *e.value<double>();
    if (!(v > double(r.lo) && v <= double(r.hi)))
      c.fail(e, "softmax_scale", fmt::format("expected a scale in (0, {}], got {}", r.hi, v));
    return v;
  });
}

// The latent shape of model m's cases in a table with axes a: m's, or the table's overrides.
struct MlaShape {
  int64_t kv_lora_rank = 0, rope = 0, nope = 0;
};
MlaShape mla_shape(const Ctx& c, const toml::table& t, const CommonAxes& a, const ModelPreset& m) {
  MlaShape s{a.kv_lora_rank ? a.kv_lora_rank : m.kv_lora_rank, a.qk_rope_head_dim ? a.qk_rope_head_dim : m.qk_rope_head_dim,
             a.qk_nope_head_dim ? a.qk_nope_head_dim : m.qk_nope_head_dim};
  const bool scale_default = std::find(a.softmax_scales.begin(), a.softmax_scales.end(), 0.0) != a.softmax_scales.end();
  if (s.kv_lora_rank == 0) {
    for (const char* k : {"qk_rope_head_dim", "qk_nope_head_dim", "softmax_scale"})
      if (c.get(t, k))
        c.fail(node_of(c, t, k), k,
               fmt::format("applies to MLA tables only; model {} is not MLA (add kv_lora_rank, or use an MLA "
                           "preset: DeepSeek-V3, DeepSeek-V2-Lite, Kimi-K2)",
                           m.name));
    return s;
  }
  if (s.rope == 0)
    c.fail(node_of(c, t, "kv_lora_rank"), "qk_rope_head_dim",
           fmt::format("model {} is not MLA: kv_lora_rank needs qk_rope_head_dim beside it", m.name));
  if (s.nope == 0 && scale_default)
    c.fail(node_of(c, t, "kv_lora_rank"), "qk_nope_head_dim",
           fmt::format("model {} is not MLA: the default softmax scale 1/sqrt(qk_nope_head_dim + qk_rope_head_dim) "
                       "needs qk_nope_head_dim (or give softmax_scale)",
                       m.name));
  if (c.get(t, "head_sizes"))
    c.fail(node_of(c, t, "head_sizes"), "head_sizes",
           fmt::format("model {} is MLA: its head size is kv_lora_rank + qk_rope_head_dim ({}); set those instead",
                       m.name, s.kv_lora_rank + s.rope));
  static const std::vector<std::string> mla_layouts{"separate", "offset", "padded", "degenerate_strides"};
  for (const auto& l : a.layouts)
    if (std::find(mla_layouts.begin(), mla_layouts.end(), l) == mla_layouts.end())
      c.fail(node_of(c, t, "layouts"), "layouts",
             fmt::format("layout '{}' does not apply to the MLA latent cache of {} (one latent tensor); expected "
                         "one of {}",
                         l, m.name, fmt::join(mla_layouts, ", ")));
  return s;
}

CommonAxes common_axes(const Ctx& c, const toml::table& t, const std::map<std::string, ModelPreset>& models) {
  std::vector<std::string> model_names;
  for (auto& [n, _] : models) model_names.push_back(n);
  CommonAxes a;
  a.models = strings(c, t, "models", true, model_names);
  a.tps = axis<int64_t>(c, t, "tp", 1, [&c](const toml::node& e) {
    const KeyRange r = c.key("tp").range;
    if (!e.is_integer() || *e.value<int64_t>() < r.lo || *e.value<int64_t>() > r.hi)
      c.fail(e, "tp", fmt::format("expected an integer in [{}, {}], got {}", r.lo, r.hi,
                                  e.is_integer() ? std::to_string(*e.value<int64_t>()) : type_name(e)));
    return *e.value<int64_t>();
  });
  a.tp = int(*std::min_element(a.tps.begin(), a.tps.end()));
  a.layouts = strings(c, t, "layouts", false);
  a.layouts_given = !a.layouts.empty();
  mla_axes(c, t, a);
  a.head_sizes = integers(c, t, "head_sizes", false);
  a.block_sizes = integers(c, t, "block_sizes", true);
  a.dtypes = strings(c, t, "dtypes", true);
  a.padded = integer(c, t, "padded_page_bytes", 0);
  // kernel_pages: block_sizes are the cache manager's blocks, kernel_block_size the kernel's page.
  const bool kernel_pages = std::find(a.layouts.begin(), a.layouts.end(), "kernel_pages") != a.layouts.end();
  a.kernel_block_size = integer(c, t, "kernel_block_size", 0);
  if (kernel_pages != (a.kernel_block_size > 0))
    c.fail(node_of(c, t, "kernel_block_size"), "kernel_block_size",
           kernel_pages ? "the kernel_pages layout needs kernel_block_size (the kernel's page, dividing block_sizes)"
                        : "kernel_block_size applies to the kernel_pages layout only");
  for (int64_t bs : a.block_sizes)
    if (kernel_pages && bs % a.kernel_block_size != 0)
      c.fail(node_of(c, t, "block_sizes"), "block_sizes",
             fmt::format("block_size {} is not a multiple of kernel_block_size {} (kernel_pages: a manager block "
                         "holds whole kernel pages)",
                         bs, a.kernel_block_size));
  const bool degenerate = std::find(a.layouts.begin(), a.layouts.end(), "degenerate_strides") != a.layouts.end();
  a.degenerate_strides = integers(c, t, "degenerate_strides", false);
  if (!degenerate && !a.degenerate_strides.empty())
    c.fail(node_of(c, t, "degenerate_strides"), "degenerate_strides", "applies to the degenerate_strides layout only");
  if (a.degenerate_strides.empty()) a.degenerate_strides = {0, 1, kDegenerateLargeStride};
  // The cache's element type (default: the K/V dtype) and the scales' granularity (default none).
  // fp16/bf16 name the 16-bit cache of cases of that dtype; scales apply to fp8 and int8 caches only.
  a.kv_cache_dtypes = strings(c, t, "kv_cache_dtype", false);
  a.kv_scales = strings(c, t, "kv_scales", false);
  const bool any_fp8 = std::any_of(a.kv_cache_dtypes.begin(), a.kv_cache_dtypes.end(), is_quantized_cache_name);
  if (!any_fp8 && std::any_of(a.kv_scales.begin(), a.kv_scales.end(), [](const std::string& g) { return g != "none"; }))
    c.fail(node_of(c, t, "kv_scales"), "kv_scales",
           "scales (tensor, head, block, token, slot) need an fp8 or int8 cache: add kv_cache_dtype = "
           "[\"fp8_e4m3fn\"], [\"fp8_e4m3fnuz\"] or [\"int8\"]");
  // int8 codes have no scale-free meaning (provider.h KVH_DT_I8: value = code * scale).
  if (std::find(a.kv_cache_dtypes.begin(), a.kv_cache_dtypes.end(), "int8") != a.kv_cache_dtypes.end() &&
      (a.kv_scales.empty() || std::find(a.kv_scales.begin(), a.kv_scales.end(), "none") != a.kv_scales.end()))
    c.fail(node_of(c, t, "kv_cache_dtype"), "kv_cache_dtype",
           "an int8 cache needs dequant scales: give kv_scales without \"none\" (tensor, head, block, token or "
           "slot)");
  if (!a.kv_cache_dtypes.empty() && !any_fp8)
    for (const auto& d : a.kv_cache_dtypes)
      if (std::find(a.dtypes.begin(), a.dtypes.end(), d) == a.dtypes.end())
        c.fail(node_of(c, t, "kv_cache_dtype"), "kv_cache_dtype",
               fmt::format("a 16-bit cache holds the K/V dtype; '{}' is not among dtypes", d));
  if (a.kv_cache_dtypes.empty()) a.kv_cache_dtypes = {"same"};
  if (a.kv_scales.empty()) a.kv_scales = {"none"};
  return a;
}

template <class Emit>
void for_each_base(const Ctx& c, const toml::table& t, CaseKind kind, const CommonAxes& a,
                   const std::map<std::string, ModelPreset>& models, Emit&& emit) {
  const std::string where = fmt::format("{}:{}", c.file, t.source().begin.line);
  for (const auto& name : a.models)
  for (int64_t tp : a.tps) {
    ModelPreset m = models.at(name);
    const MlaShape mla = mla_shape(c, t, a, m);
    if (mla.kv_lora_rank > 0)  // one latent head, on every rank
      m.num_kv_heads = 1, m.head_size = int(mla.kv_lora_rank + mla.rope);
    else if (!a.layouts_given)
      c.fail(t, "layouts", "missing; expected an array of strings");
    const std::vector<std::string> layouts = a.layouts_given ? a.layouts : std::vector<std::string>{"separate"};
    RankShape r{};
    try {
      r = per_rank(m, int(tp));
    } catch (const std::invalid_argument& e) {
      c.fail(node_of(c, t, "tp"), "tp", e.what());
    }
    if (r.num_heads % r.num_kv_heads != 0)
      c.fail(node_of(c, t, "tp"), "tp",
             fmt::format("{} at tp {} has {} heads and {} kv heads per rank: not a whole GQA group", m.name, tp,
                         r.num_heads, r.num_kv_heads));
    const std::vector<int64_t> hs = a.head_sizes.empty() ? std::vector<int64_t>{m.head_size} : a.head_sizes;
    for (int64_t hd : hs)
      for (const auto& layout : layouts)
        for (int64_t bs : a.block_sizes)
          for (const auto& dt : a.dtypes)
            for (const auto& kvd : a.kv_cache_dtypes)
              for (const auto& sc : a.kv_scales)
              for (double softmax_scale : a.softmax_scales) {
            // A 16-bit entry applies to cases of its own dtype, scales to fp8 and int8 caches only.
            const bool fp8 = is_quantized_cache_name(kvd);
            if ((!fp8 && kvd != "same" && kvd != dt) || (!fp8 && sc != "none")) continue;
            Case k;
            k.kind = kind;
            k.model = m.name;
            k.tp = int(tp);
            k.kv_lora_rank = mla.kv_lora_rank, k.qk_rope_head_dim = mla.rope, k.qk_nope_head_dim = mla.nope;
            k.softmax_scale = softmax_scale;
            k.hybrid = m.hybrid;
            k.num_heads = r.num_heads;
            k.num_kv_heads = r.num_kv_heads;
            k.head_size = hd;
            k.layout = *parse_scheme(layout);
            k.block_size = bs;
            k.padded_page_bytes = a.padded;
            if (k.layout == Scheme::KernelPages) k.kernel_block_size = a.kernel_block_size;
            k.dtype = dt == "fp16" ? DType::F16 : DType::BF16;
            k.kv_cache_dtype = kvd == "fp8_e4m3fn"     ? KvCacheDType::Fp8E4m3fn
                               : kvd == "fp8_e4m3fnuz" ? KvCacheDType::Fp8E4m3fnuz
                               : kvd == "int8"         ? KvCacheDType::Int8
                                                       : KvCacheDType::Same;
            k.kv_scales = *parse_kv_scales(sc);
            k.source = where;
            if (k.layout != Scheme::DegenerateStrides) {
              emit(k);
              continue;
            }
            for (int64_t stride : a.degenerate_strides) {
              k.degenerate_stride = stride;
              emit(k);
            }
          }
  }
}

// ---- issue 23 (D): launch configurations ----
// `launch_configs` of a table: "all" or a non-empty array of configuration names (what the table's
// writer ([[write]]) or reader declares is checked against the registry when the harness expands
// the cases); {} when absent. Reader rows only: a router picks its reader case by case.
std::vector<std::string> launch_configs_of(const Ctx& c, const toml::table& t, bool routed) {
  const toml::node* n = c.get(t, "launch_configs");
  if (!n) return {};
  if (routed) c.fail(*n, "launch_configs", "applies to reader rows only; this table has a router row");
  if (n->is_string()) {
    if (*n->value<std::string>() != "all")
      c.fail(*n, "launch_configs", "expected \"all\" or an array of configuration names, got '" +
                                       *n->value<std::string>() + "'");
    return {"all"};
  }
  const toml::array* a = n->as_array();
  if (!a || a->empty())
    c.fail(*n, "launch_configs", "expected \"all\" or a non-empty array of configuration names, got " + type_name(*n));
  std::vector<std::string> out;
  for (const auto& e : *a) {
    const std::optional<std::string> s = e.value<std::string>();
    const bool ok = s && e.is_string() && !s->empty() && s->size() <= 64 &&
                    std::all_of(s->begin(), s->end(), [](char ch) { return std::isalnum((unsigned char)ch) || ch == '_' || ch == '.' || ch == '-'; });
    if (!ok)
      c.fail(e, "launch_configs", "expected a configuration name (1..64 characters of [A-Za-z0-9_.-]), got " +
                                      (e.is_string() ? "'" + *s + "'" : type_name(e)));
    if (std::find(out.begin(), out.end(), *s) != out.end()) c.fail(e, "launch_configs", "'" + *s + "' given twice");
    out.push_back(*s);
  }
  return out;
}
// ---- end issue 23 (D) ----

void expand_write(const Ctx& c, const toml::table& t, const std::map<std::string, ModelPreset>& models,
                  const std::vector<int64_t>& seeds, std::vector<Case>& out, std::vector<ExpectedFailure>& expected) {
  only_keys(c, t, "write");
  const std::pair<std::string, std::string> scope{fmt::format("{}:{}", c.file, t.source().begin.line), ""};
  for (auto& e : expectations_of(c, t, "expected_failure", &scope)) expected.push_back(std::move(e));
  const CommonAxes axes = common_axes(c, t, models);
  const auto num_tokens = integers(c, t, "num_tokens", true);
  const auto writers = strings(c, t, "writers", true);
  const std::vector<std::string> writers_at = element_sources(c, t, "writers");
  const std::vector<std::string> launch_configs = launch_configs_of(c, t, false);  // issue 23 (D)
  const std::string launch_configs_at =
      launch_configs.empty() ? "" : fmt::format("{}:{}", c.file, node_of(c, t, "launch_configs").source().begin.line);
  for_each_base(c, t, CaseKind::Write, axes, models, [&](const Case& base) {
    for (int64_t n : num_tokens)
      for (size_t wi = 0; wi < writers.size(); ++wi)
        for (int64_t seed : seeds) {
          Case k = base;
          k.batch_size = n;
          k.writer = writers[wi];
          k.writer_source = writers_at[wi];
          k.seed = uint64_t(seed);
          k.launch_configs = launch_configs, k.launch_configs_source = launch_configs_at;  // issue 23 (D)
          add_case(c, t, out, std::move(k));
        }
  });
}

// `expect_routed_to` of a table or variant: the reader its router cases must
// be routed to. A string applies to every case; an array of tables
// {reader, routers, head_sizes, dtypes, batch_sizes, batch_range, high_precision}
// is searched in order and the first entry whose present keys all match wins;
// a router case that no entry matches is an error (the file must say).
struct RouteRule {
  std::string reader;
  std::vector<std::string> routers, dtypes;
  std::vector<int64_t> head_sizes, batch_sizes;
  int64_t batch_min = 0, batch_max = int64_t(1) << 40;
  int high_precision = -1;  // -1: any
};
struct RouteExpectation {
  std::vector<RouteRule> rules;  // empty: nothing stated
  std::string source;            // file:line of the key
  bool stated() const { return !rules.empty(); }
};

// One entry of `expect_routed_to = [{...}]` (c.table: RouteRule).
RouteRule route_rule(const Ctx& c, const toml::table& rt) {
  only_keys(c, rt, "expect_routed_to");
  RouteRule r;
  r.reader = string_field(c, rt, "reader", "");
  if (r.reader.empty()) c.fail(rt, "expect_routed_to", "an entry needs 'reader', the kernel the router must pick");
  r.routers = strings(c, rt, "routers", false);
  r.dtypes = strings(c, rt, "dtypes", false);
  r.head_sizes = integers(c, rt, "head_sizes", false);
  r.batch_sizes = integers(c, rt, "batch_sizes", false);
  const auto range = integers(c, rt, "batch_range", false);
  if (!range.empty()) {
    if (range.size() != 2 || range[0] > range[1])
      c.fail(node_of(c, rt, "batch_range"), "batch_range", "expected [min, max] with min <= max");
    r.batch_min = range[0], r.batch_max = range[1];
  }
  r.high_precision = int(integer(c, rt, "high_precision", -1));
  return r;
}

RouteExpectation route_expectation(const Ctx& c, const toml::table& t) {
  RouteExpectation out;
  const toml::node* n = c.get(t, "expect_routed_to");
  if (!n) return out;
  out.source = fmt::format("{}:{}", c.file, n->source().begin.line);
  if (n->is_string()) {
    RouteRule r;
    r.reader = *n->value<std::string>();
    if (r.reader.empty()) c.fail(*n, "expect_routed_to", "expected a reader name, got an empty string");
    out.rules.push_back(r);
    return out;
  }
  const toml::array* a = n->as_array();
  if (!a || a->empty() || !a->is_array_of_tables())
    c.fail(*n, "expect_routed_to",
           fmt::format("expected a reader name or an array of tables {{{}}}, got {}",
                       fmt::join(keys_of(KeyTable::RouteRule), ", "), type_name(*n)));
  for (const auto& e : *a) out.rules.push_back(route_rule(c.in(KeyTable::RouteRule), *e.as_table()));
  return out;
}

// The reader `e` states for case k; CaseFileError at `where` when no entry matches.
std::string expected_route(const Ctx& c, const toml::table& where, const RouteExpectation& e, const Case& k) {
  auto has = [](const auto& v, const auto& x) { return v.empty() || std::find(v.begin(), v.end(), x) != v.end(); };
  for (const RouteRule& r : e.rules)
    if (has(r.routers, k.router_policy) && has(r.dtypes, std::string(to_string(k.dtype))) &&
        has(r.head_sizes, k.head_size) && has(r.batch_sizes, k.batch_size) && k.batch_size >= r.batch_min &&
        k.batch_size <= r.batch_max && (r.high_precision < 0 || r.high_precision == k.high_precision))
      return r.reader;
  c.fail(where, "expect_routed_to",
         fmt::format("no entry of the expected routes at {} matches router {}, head_size {}, dtype {}, batch {}, "
                     "high_precision {}; every router case needs one",
                     e.source, k.router_policy, k.head_size, to_string(k.dtype), k.batch_size, k.high_precision));
}

// The score-modifier and split-control axes of a decode table (case.h), each off by default.
struct ModifierAxes {
  std::vector<int64_t> sliding_window;
  std::vector<bool> sinks, alibi;
  std::vector<double> softcap;
  std::vector<int64_t> tp_rank, partition_size;
};

ModifierAxes modifier_axes(const Ctx& c, const toml::table& t, int tp) {
  auto int_in = [&](const std::string& key, int64_t lo, int64_t hi, const std::string& what) {
    return [&c, key, lo, hi, what](const toml::node& e) {
      if (!e.is_integer()) c.fail(e, key, fmt::format("expected {}, got {}", what, type_name(e)));
      const int64_t v = *e.value<int64_t>();
      if (v < lo || v > hi) c.fail(e, key, fmt::format("expected {}, got {}", what, v));
      return v;
    };
  };
  auto boolean = [&](const std::string& key) {
    return [&c, key](const toml::node& e) {
      if (!e.is_boolean()) c.fail(e, key, "expected true or false, got " + type_name(e));
      return *e.value<bool>();
    };
  };
  // 0 is off (the reader's default); the other values, from 1 to the key table's bound.
  auto tokens_or_off = [&](const std::string& key, const std::string& what, const std::string& off) {
    const KeyRange r = c.key(key).range;
    return int_in(key, r.lo, r.hi, fmt::format("{} in tokens in [1, {}], or 0 ({})", what, r.hi, off));
  };
  ModifierAxes m;
  m.sliding_window = axis<int64_t>(c, t, "sliding_window", 0, tokens_or_off("sliding_window", "a window", "off"));
  m.sinks = axis<bool>(c, t, "sinks", false, boolean("sinks"));
  m.alibi = axis<bool>(c, t, "alibi", false, boolean("alibi"));
  const KeyRange cap = c.key("softcap").range;
  m.softcap = axis<double>(c, t, "softcap", 0.0, [&c, cap](const toml::node& e) {
    if (!e.is_number()) c.fail(e, "softcap", "expected a soft-cap > 0 (e.g. 30.0), or 0 (off), got " + type_name(e));
    const double v = *e.value<double>();
    if (!(v >= double(cap.lo) && v <= double(cap.hi)))
      c.fail(e, "softcap", fmt::format("expected a soft-cap in (0, 1e6], or 0 (off), got {}", v));
    return v;
  });
  m.tp_rank = axis<int64_t>(c, t, "tp_rank", 0,
                            int_in("tp_rank", 0, tp - 1, fmt::format("a rank in [0, {}] (tp = {})", tp - 1, tp)));
  m.partition_size =
      axis<int64_t>(c, t, "partition_size", 0, tokens_or_off("partition_size", "a partition", "the reader's default"));
  return m;
}

// Calls emit(k) for `base` under every combination of the modifier axes, outermost first.
template <class Emit>
void for_each_modifiers(const ModifierAxes& m, Emit&& emit, const Case& base) {
  for (int64_t w : m.sliding_window)
    for (bool sk : m.sinks)
      for (double cap : m.softcap)
        for (bool al : m.alibi)
          for (int64_t rank : m.tp_rank)
            for (int64_t ps : m.partition_size) {
              Case k = base;
              k.sliding_window = w, k.sinks = sk, k.softcap = cap, k.alibi = al;
              k.tp_rank = int(rank), k.partition_size = int32_t(ps);
              emit(k);
            }
}

// One entry of the query_lens axis (case.h): N, [min, max], or {mixed = [min, max]}.
struct QueryLens {
  int64_t min = 1, max = 1;
  bool mixed = false;
  bool ragged() const { return max > 1 || mixed; }
};

QueryLens query_lens_entry(const Ctx& c, const toml::node& e) {
  const KeyRange r = c.key("query_lens").range;
  const std::string expected = fmt::format(
      "expected a query length N, [min, max] or {{mixed = [min, max]}} with lengths in [{}, {}] and min <= max "
      "(two integers at the top level are one range: lengths 8 and 4 are [[8, 8], [4, 4]])", r.lo, r.hi);
  auto length = [&](const toml::node& n) {
    if (!n.is_integer() || *n.value<int64_t>() < r.lo || *n.value<int64_t>() > r.hi)
      c.fail(n, "query_lens", expected + ", got " + (n.is_integer() ? std::to_string(*n.value<int64_t>()) : type_name(n)));
    return *n.value<int64_t>();
  };
  auto pair = [&](const toml::node& n, QueryLens& q) {
    const toml::array* a = n.as_array();
    if (!a || a->size() != 2) c.fail(n, "query_lens", expected + ", got " + type_name(n));
    q.min = length(*a->get(0));
    q.max = length(*a->get(1));
    if (q.min > q.max) c.fail(n, "query_lens", expected + fmt::format(", got [{}, {}]", q.min, q.max));
  };
  QueryLens q;
  if (e.is_integer()) {
    q.min = q.max = length(e);
  } else if (const toml::table* m = e.as_table()) {
    const toml::node* range = m->get("mixed");
    if (!range || m->size() != 1) c.fail(e, "query_lens", expected + " (a table has the one key `mixed`)");
    pair(*range, q);
    q.mixed = true;
  } else {
    pair(e, q);
  }
  return q;
}

// query_lens_lists beside context_lens_lists: one list per batch, of its length, each at most
// its sequence's context length. Empty when absent.
std::vector<std::vector<int64_t>> query_lens_lists(const Ctx& c, const toml::table& t,
                                                   const std::vector<std::vector<int64_t>>& batches) {
  const toml::node* n = c.get(t, "query_lens_lists");
  if (!n) return {};
  if (!c.get(t, "context_lens_lists"))
    c.fail(*n, "query_lens_lists", "needs context_lens_lists beside it (list i gives batch i's query lengths)");
  if (c.get(t, "query_lens")) c.fail(*n, "query_lens_lists", "not allowed beside query_lens");
  const toml::array* a = n->as_array();
  if (!a || a->size() != batches.size())
    c.fail(*n, "query_lens_lists", fmt::format("expected {} lists, one per context_lens_lists list", batches.size()));
  std::vector<std::vector<int64_t>> out;
  for (size_t i = 0; i < a->size(); ++i) {
    const toml::array* l = a->get(i)->as_array();
    if (!l || l->size() != batches[i].size())
      c.fail(*a->get(i), "query_lens_lists",
             fmt::format("list {} must have {} query lengths, as context_lens_lists list {}", i, batches[i].size(), i));
    std::vector<int64_t> q;
    for (size_t j = 0; j < l->size(); ++j) {
      const toml::node& x = *l->get(j);
      const int64_t ctx = batches[i][j];
      if (!x.is_integer() || *x.value<int64_t>() < 1 || *x.value<int64_t>() > ctx)
        c.fail(x, "query_lens_lists",
               fmt::format("expected an integer query length in [1, {}] (sequence {}'s context length)", ctx, j));
      q.push_back(*x.value<int64_t>());
    }
    out.push_back(q);
  }
  return out;
}

// One row of an [[attention]] or [[pipeline]] table: which kernels run.
struct Variant {
  std::string name, writer, reader, router;
  const toml::table* table = nullptr;  // its [[*.variants]] table, for scoped expected failures
  RouteExpectation route;              // the variant's expect_routed_to (else the table's)
  std::string writer_at, reader_at;    // "file:line" of the writer's / reader's (router's) name (Case::writer_source)
};

// One [[attention.variants]] or [[pipeline.variants]] table (c.table: Variants).
Variant variant_of(const Ctx& c, const toml::table& v, CaseKind kind) {
  only_keys(c, v, std::string(to_string(kind)) + ".variants");
  Variant x{string_field(c, v, "name", ""), string_field(c, v, "writer", ""), string_field(c, v, "reader", ""),
            string_field(c, v, "router", ""), &v, route_expectation(c, v), key_source(c, v, "writer"),
            key_source(c, v, c.get(v, "router") ? "router" : "reader")};
  if (x.route.stated() && x.router.empty())
    c.fail(node_of(c, v, "expect_routed_to"), "expect_routed_to", "only a variant with a 'router' is routed");
  if (c.get(v, "expected_failure") && x.name.empty())
    c.fail(v, "expected_failure", "a variant with expected failures needs a 'name' (it scopes them)");
  if (x.reader.empty() == x.router.empty()) c.fail(v, "reader", "a variant names exactly one of 'reader' or 'router'");
  if (kind == CaseKind::Pipeline && x.writer.empty()) c.fail(v, "writer", "a pipeline variant needs a writer");
  if (kind == CaseKind::Attention && !x.writer.empty())
    c.fail(v, "writer", "attention variants use the reference writer; use [[pipeline]] to test a writer");
  return x;
}

std::vector<Variant> variants_of(const Ctx& c, const toml::table& t, CaseKind kind) {
  std::vector<Variant> out;
  const std::string table = to_string(kind);
  if (const toml::node* n = c.get(t, "variants")) {
    const toml::array* arr = n->as_array();
    if (!arr || !arr->is_array_of_tables() || arr->empty())
      c.fail(*n, "variants", "expected [[" + table + ".variants]] tables");
    for (const auto& e : *arr) out.push_back(variant_of(c.in(KeyTable::Variants), *e.as_table(), kind));
    return out;
  }
  const auto readers = strings(c, t, "readers", false);
  const std::vector<std::string> readers_at = element_sources(c, t, "readers");
  for (size_t i = 0; i < readers.size(); ++i) {
    out.push_back({"", "", readers[i], ""});
    out.back().reader_at = readers_at[i];
  }
  const auto routers = strings(c, t, "routers", false);
  const std::vector<std::string> routers_at = element_sources(c, t, "routers");
  for (size_t i = 0; i < routers.size(); ++i) {
    out.push_back({"", "", "", routers[i]});
    out.back().reader_at = routers_at[i];
  }
  if (kind == CaseKind::Pipeline) {
    const auto writers = strings(c, t, "writers", true);
    const std::vector<std::string> writers_at = element_sources(c, t, "writers");
    std::vector<Variant> crossed;
    for (size_t i = 0; i < writers.size(); ++i)
      for (auto v : out) {
        v.writer = writers[i], v.writer_at = writers_at[i];
        crossed.push_back(v);
      }
    out = crossed;
  }
  if (out.empty()) c.fail(t, "variants", "expected [[" + table + ".variants]], or 'readers' / 'routers'");
  return out;
}

// The batches of a decode table: batch_sizes with a [min, max] context_lens
// range (lists of zeros: lengths drawn), or explicit per-sequence lists.
struct Batches {
  std::vector<std::vector<int64_t>> lists;  // one per batch: its sequences' lengths, 0 = drawn
  std::vector<int64_t> batch_sizes, context_lens;
};

Batches batches_of(const Ctx& c, const toml::table& t) {
  Batches out;
  const toml::node* n = c.get(t, "context_lens_lists");
  if (!n) {
    out.batch_sizes = integers(c, t, "batch_sizes", true);
    out.context_lens = integers(c, t, "context_lens", true);
    if (out.context_lens.size() != 2 || out.context_lens[0] > out.context_lens[1])
      c.fail(node_of(c, t, "context_lens"), "context_lens", "expected [min, max] with min <= max");
    for (int64_t b : out.batch_sizes) out.lists.push_back(std::vector<int64_t>(size_t(b), 0));
    return out;
  }
  for (const char* k : {"batch_sizes", "context_lens"})
    if (c.get(t, k)) c.fail(node_of(c, t, k), k, "not allowed beside context_lens_lists (each list is one batch)");
  const toml::array* a = n->as_array();
  if (!a || a->empty()) c.fail(*n, "context_lens_lists", "expected a non-empty array of arrays of lengths");
  const int64_t max_batch = c.key("batch_sizes").range.hi;  // a list is a batch
  const KeyRange len = c.key("context_lens_lists").range;
  for (const auto& e : *a) {
    const toml::array* l = e.as_array();
    if (!l || l->empty() || int64_t(l->size()) > max_batch)
      c.fail(e, "context_lens_lists", fmt::format("expected an array of 1 to {} context lengths per batch", max_batch));
    std::vector<int64_t> lens;
    for (const auto& x : *l) {
      if (!x.is_integer() || *x.value<int64_t>() < len.lo || *x.value<int64_t>() > len.hi)
        c.fail(x, "context_lens_lists", fmt::format("expected integer context lengths in [{}, {}]", len.lo, len.hi));
      lens.push_back(*x.value<int64_t>());
    }
    out.lists.push_back(lens);
  }
  return out;
}

// `target` of a decode table: "" (absent: the device's), a named target, or cus=N with N
// within the key table's bounds; CaseFileError at the key's line otherwise, router or not.
std::string target_of(const Ctx& c, const toml::table& t) {
  const std::string target = string_field(c, t, "target", "");
  const CaseKey& k = c.key("target");
  if (target.empty() || std::find(k.values.begin(), k.values.end(), target) != k.values.end()) return target;
  const std::optional<int64_t> n = numbered_value(k.numbered, target);
  if (n && *n >= k.range.lo && *n <= k.range.hi) return target;
  const std::string cus = fmt::format("{} with N compute units in [{}, {}]", k.numbered, k.range.lo, k.range.hi);
  const bool numbered = target.rfind(k.numbered.substr(0, k.numbered.size() - 1), 0) == 0;  // "cus=..."
  c.fail(node_of(c, t, "target"), "target",
         numbered ? fmt::format("expected {}, got '{}'", cus, target)
                  : fmt::format("unknown target '{}'; expected one of {}, or {}", target, fmt::join(k.values, ", "),
                                cus));
}

// ---- issue 23 (B long contexts) ----
// `tolerance` of a decode table: "dtype" (absent) or "derived"; CaseFileError at the key otherwise.
bool tolerance_of(const Ctx& c, const toml::table& t) {
  const std::string v = string_field(c, t, "tolerance", "dtype");
  if (v != "dtype" && v != "derived")
    c.fail(node_of(c, t, "tolerance"), "tolerance", fmt::format("expected \"dtype\" or \"derived\", got '{}'", v));
  return v == "derived";
}

// The derived bound is sound for fp16 outputs of 16-bit caches only (harness/check/tolerance.h says why).
void check_derived_tolerance(const Ctx& c, const toml::table& t, const Case& k) {
  const char* why = k.dtype != DType::F16  ? "a bf16 output (one bf16 ulp is 2^-8: keep tolerance = \"dtype\")"
                    : k.quantized_cache() ? "an fp8 or int8 cache"
                    : k.mla()             ? "an MLA case"
                                          : nullptr;
  if (why)
    c.fail(node_of(c, t, "tolerance"), "tolerance",
           fmt::format("\"derived\" applies to fp16 outputs of 16-bit caches only, not MLA; this table makes {} ({})",
                       why, k.id()));
}
// ---- end issue 23 (B long contexts) ----

// `values = "low_logits"` (harness/case/value_dist.h) is sound only where it was measured: bf16
// outputs under the dtype tolerance, without a soft-cap (which lifts every logit above -cap, so a
// finite -5e4 sentinel no longer bites) or sinks (a sink lifts the row's max the same way). fp16
// outputs of logits near -6e4 carry float32 rounding of 2^-8 of a logit: correct readers miss
// fp16's atol (issue 23's attack: 24 of 60 fp16 cases of five correct readers).
void check_low_logits(const Ctx& c, const toml::table& t, const Case& k) {
  const char* why = k.dtype != DType::BF16 ? "an fp16 output (float32 logits near -6e4 round by 2^-8: use bf16)"
                    : k.derived_tolerance  ? "tolerance = \"derived\" (its bound assumes logits of moderate size)"
                    : k.softcap > 0.0      ? "a soft-cap (it lifts every logit above -softcap)"
                    : k.sinks              ? "sinks (a sink lifts the row's max above the low logits)"
                                           : nullptr;
  if (why)
    c.fail(node_of(c, t, "values"), "values",
           fmt::format("\"low_logits\" is for bf16 outputs without soft-cap or sinks; this table makes {} ({})", why,
                       k.id()));
}

void expand_decode(const Ctx& c, const toml::table& t, CaseKind kind, const std::map<std::string, ModelPreset>& models,
                   const std::vector<int64_t>& seeds, std::vector<Case>& out, std::vector<ExpectedFailure>& expected) {
  const std::string table = to_string(kind);
  only_keys(c, t, table);
  const std::string where = fmt::format("{}:{}", c.file, t.source().begin.line);
  const std::pair<std::string, std::string> table_scope{where, ""};
  for (auto& e : expectations_of(c, t, "expected_failure", &table_scope)) expected.push_back(std::move(e));
  const CommonAxes axes = common_axes(c, t, models);
  const ModifierAxes mods = modifier_axes(c, t, axes.tp);
  // The large layout sizes a cache by its write tokens; decode caches are sized by their sequences.
  if (std::find(axes.layouts.begin(), axes.layouts.end(), "large") != axes.layouts.end())
    c.fail(node_of(c, t, "layouts"), "layouts", "'large' is a [[write]] suite only (see cases/large.toml)");
  const Batches batches = batches_of(c, t);
  const std::vector<int64_t>& batch_sizes = batches.batch_sizes;
  const std::vector<int64_t>& ctx = batches.context_lens;
  const std::vector<std::vector<int64_t>>& lists = batches.lists;
  const std::string target = target_of(c, t);
  const std::vector<std::vector<int64_t>> qlists = query_lens_lists(c, t, lists);
  const std::vector<QueryLens> query_axis = axis<QueryLens>(
      c, t, "query_lens", QueryLens{}, [&c](const toml::node& e) { return query_lens_entry(c, e); },
      [](const toml::node& n) {  // two integers at the top level are one [min, max] range
        const toml::array* a = n.as_array();
        return !a || (a->size() == 2 && a->get(0)->is_integer() && a->get(1)->is_integer());
      });
  const std::vector<bool> causal_axis = axis<bool>(c, t, "causal", true, [&c](const toml::node& e) {
    if (!e.is_boolean()) c.fail(e, "causal", "expected true or false, got " + type_name(e));
    return *e.value<bool>();
  });
  const bool any_ragged =
      std::any_of(query_axis.begin(), query_axis.end(), [](const QueryLens& q) { return q.ragged(); }) ||
      std::any_of(qlists.begin(), qlists.end(),
                  [](const std::vector<int64_t>& l) { return *std::max_element(l.begin(), l.end()) > 1; });
  if (!any_ragged && std::find(causal_axis.begin(), causal_axis.end(), false) != causal_axis.end())
    c.fail(node_of(c, t, "causal"), "causal",
           "false applies to ragged queries only (query_lens above 1); this table's sequences have one query token");
  // A negative mode is refused as out of range, one above the key table's bound by name.
  const KeyRange hp_range = c.key("high_precision").range;
  const int hp = int(integer_in(c, t, "high_precision", 1, {hp_range.lo, int64_t(1) << 40}));
  if (hp > hp_range.hi) c.fail(node_of(c, t, "high_precision"), "high_precision", "expected 0, 1 or 2");
  std::vector<ValueDist> values;
  for (const auto& v : strings(c, t, "values", false)) values.push_back(*parse_value_dist(v));
  if (values.empty()) values = {ValueDist::Normal};
  std::vector<Stale> stales;
  for (const auto& v : strings(c, t, "stale", false)) stales.push_back(*parse_stale(v));
  if (stales.empty()) stales = {Stale::Random};
  int64_t padding = -1;
  if (const toml::node* n = c.get(t, "block_table_padding")) {
    const std::optional<std::string> text = n->value<std::string>();
    const std::optional<int64_t> parsed = text && n->is_string() ? parse_block_table_padding(*text) : std::nullopt;
    if (!parsed)
      c.fail(*n, "block_table_padding",
             fmt::format("expected \"-1\" or \"num_blocks+K\" with K an integer in [0, {}], got {}", kMaxPaddingK,
                         text && n->is_string() ? "'" + *text + "'" : type_name(*n)));
    padding = *parsed;
  }
  // Block ids are int32 in block_tables; the cache grows with the first id (see cases/large_readers.toml).
  const int64_t min_block_id = integer(c, t, "min_block_id", 1);
  const bool derived_tolerance = tolerance_of(c, t);  // issue 23 (B long contexts)
  const RouteExpectation table_route = route_expectation(c, t);
  bool boundaries = false;
  const toml::node* boundaries_node = c.get(t, "route_boundaries");
  if (boundaries_node) {
    if (!boundaries_node->is_boolean())
      c.fail(*boundaries_node, "route_boundaries", "expected true or false, got " + type_name(*boundaries_node));
    boundaries = *boundaries_node->value<bool>();
  }
  const auto variants = variants_of(c, t, kind);
  const bool routed = std::any_of(variants.begin(), variants.end(), [](const Variant& v) { return !v.router.empty(); });
  const std::vector<std::string> launch_configs = launch_configs_of(c, t, routed);  // issue 23 (D)
  const std::string launch_configs_at =
      launch_configs.empty() ? "" : fmt::format("{}:{}", c.file, node_of(c, t, "launch_configs").source().begin.line);
  // aiter's threshold is in the target's compute units; the vLLM unified launcher's is not.
  const bool needs_target = std::any_of(variants.begin(), variants.end(), [](const Variant& v) {
    return !v.router.empty() && !unified_rule_of(v.router);
  });
  if (boundaries && (c.get(t, "context_lens_lists") || (needs_target && !target_compute_units_of(target))))
    c.fail(*boundaries_node, "route_boundaries",
           needs_target ? "needs batch_sizes with a context_lens range and a named target (MI355X, cus=N)"
                        : "needs batch_sizes with a context_lens range");
  if (boundaries && !routed)
    c.fail(node_of(c, t, "route_boundaries"), "route_boundaries", "the table has no router variant");
  if (table_route.stated() && !routed)
    c.fail(node_of(c, t, "expect_routed_to"), "expect_routed_to", "the table has no router");
  for (const auto& v : variants) {
    if (!v.table) continue;
    const std::pair<std::string, std::string> scope{where, v.name};
    for (auto& e : expectations_of(c.in(KeyTable::Variants), *v.table, "expected_failure", &scope))
      expected.push_back(std::move(e));
  }
  for_each_base(c, t, kind, axes, models, [&](const Case& base) {
    for (const auto& v : variants) {
      // route_boundaries: router rows also get the batches around the threshold for these heads (route_boundaries.h):
      // aiter's in the target's compute units, or the vLLM unified launcher's 2d/3d one.
      std::vector<std::vector<int64_t>> rows = lists;
      if (boundaries && !v.router.empty()) {
        const std::optional<UnifiedRule> unified = unified_rule_of(v.router);
        const std::vector<int64_t> around =
            is_mla_policy(v.router) ? mla_route_boundary_batches()  // issue 22 (D): the Gluon fp8 batch limit
            : unified               ? unified_route_boundary_batches(*unified, base.num_heads, base.num_kv_heads)
                                    : route_boundary_batches(base.num_heads, *target_compute_units_of(target));
        for (int64_t b : around)
          if (std::find(batch_sizes.begin(), batch_sizes.end(), b) == batch_sizes.end())
            rows.push_back(std::vector<int64_t>(size_t(b), 0));
      }
      const RouteExpectation& route = v.route.stated() ? v.route : table_route;
      for (size_t row = 0; row < rows.size(); ++row)
        for (const QueryLens& ql : query_axis)
        for (bool causal : causal_axis) {
        const std::vector<int64_t>& lens = rows[row];
        const std::vector<int64_t>* qlist = row < qlists.size() ? &qlists[row] : nullptr;
        const bool ragged = ql.ragged() || (qlist && *std::max_element(qlist->begin(), qlist->end()) > 1);
        if (!causal && !ragged) continue;  // decode: one query token sees its whole sequence either way
        for (ValueDist vd : values)
          for_each_modifiers(mods, [&](const Case& modified) {
            for (Stale st : stales)
              for (int64_t seed : seeds) {
                Case k = modified;
                k.batch_size = int64_t(lens.size());
                if (lens.front() > 0) k.context_lens = lens;
                k.writer = v.writer;
                k.reader = v.reader;
                k.writer_source = v.writer_at, k.reader_source = v.reader_at;
                k.router_policy = v.router;
                // Router rows route with the target; MLA readers' planners split by its compute units (issue 22 C).
                k.target = v.router.empty() && !k.mla() ? "" : target;
                k.high_precision = hp;
                k.context_len_min = ctx.empty() ? *std::min_element(lens.begin(), lens.end()) : ctx[0];
                k.context_len_max = ctx.empty() ? *std::max_element(lens.begin(), lens.end()) : ctx[1];
                k.variant_name = v.name;
                k.values = vd;
                k.stale = st;
                k.block_table_padding = padding;
                k.min_block_id = min_block_id;
                k.derived_tolerance = derived_tolerance;
                if (derived_tolerance) check_derived_tolerance(c, t, k);
                if (vd == ValueDist::LowLogits) check_low_logits(c, t, k);
                k.seed = uint64_t(seed);
                k.query_len_min = ql.min, k.query_len_max = ql.max, k.query_mixed = ql.mixed;
                if (qlist && ragged) {
                  k.query_lens = *qlist;
                  k.query_len_min = *std::min_element(qlist->begin(), qlist->end());
                  k.query_len_max = *std::max_element(qlist->begin(), qlist->end());
                }
                k.causal = causal;
                if (!v.router.empty() && route.stated()) k.expect_routed_to = expected_route(c, t, route, k);
                k.launch_configs = launch_configs, k.launch_configs_source = launch_configs_at;  // issue 23 (D)
                add_case(c, t, out, std::move(k));
              }
          }, base);
        }
    }
  });
}

// Debian 12's toml++ 3.3.0 reaches __builtin_unreachable (undefined
// behaviour) in is_non_ascii_horizontal_whitespace() for the code points
// below: its bit mask of 1018-wide child ranges misses ranges 0, 11 and 63,
// and the parser asks that question between tokens and in multi-line
// strings. Found by fuzz/case_file_fuzz; the ranges are those the function
// (toml++/impl/unicode_autogenerated.h) sends to its unreachable default.
// Such files are rejected before toml++ sees them: CaseFileError naming the
// line and the code point. Code points outside valid 2- and 3-byte UTF-8
// sequences are left to toml++.
void reject_toml_unsafe_code_points(const std::string& text, const std::string& name) {
  static constexpr std::pair<char32_t, char32_t> unsafe[] = {
      {0x00A1, 0x0499}, {0x2C5E, 0x2FFF}, {0x3001, 0x3057}, {0xFB26, 0xFEFE}};
  size_t line = 1;
  for (size_t i = 0; i < text.size(); ++i) {
    const auto b = [&](size_t k) { return i + k < text.size() ? static_cast<unsigned char>(text[i + k]) : 0u; };
    const auto cont = [&](size_t k) { return (b(k) & 0xC0u) == 0x80u; };
    char32_t cp = 0;
    if (b(0) == '\n') ++line;
    if (b(0) >= 0xC2 && b(0) <= 0xDF && cont(1))
      cp = ((b(0) & 0x1Fu) << 6) | (b(1) & 0x3Fu);
    else if (b(0) >= 0xE0 && b(0) <= 0xEF && cont(1) && cont(2))
      cp = ((b(0) & 0x0Fu) << 12) | ((b(1) & 0x3Fu) << 6) | (b(2) & 0x3Fu);
    for (const auto& [lo, hi] : unsafe)
      if (cp >= lo && cp <= hi)
        throw CaseFileError(fmt::format("{}:{}: character U+{:04X} is not accepted in case files (toml++ 3.3 "
                                        "mishandles U+00A1..U+0499, U+2C5E..U+3057 and U+FB26..U+FEFE); "
                                        "use ASCII, or a \\u escape in a string",
                                        name, line, unsigned(cp)));
  }
}

// Line `n` (1-based) of `text`, without its line break; "" past the end.
std::string_view line_of(std::string_view text, size_t n) {
  for (size_t i = 1; i < n; ++i) {
    const size_t nl = text.find('\n');
    if (nl == std::string_view::npos) return {};
    text.remove_prefix(nl + 1);
  }
  return text.substr(0, text.find('\n'));
}

// Where a toml++ error is to be read. toml++ reports a missing ',' or ']' of an array where it
// noticed it: the first token of a later line, usually the next key, one line after the line
// that lacks it (issue 25). When the error sits at the first non-blank character of its line,
// the missing character belongs at the end of the last line above holding more than blanks and
// a comment: "LINE:COL" there, else "" (the error's own position is right).
std::string array_close_position(std::string_view text, const toml::parse_error& e) {
  const std::string_view what = e.description();
  if (what.find("expected comma or closing ']'") == std::string_view::npos) return "";
  const size_t line = e.source().begin.line, col = e.source().begin.column;
  const std::string_view here = line_of(text, line);
  const std::string_view before = here.substr(0, std::min<size_t>(col - 1, here.size()));
  if (line < 2 || before.find_first_not_of(" \t") != std::string_view::npos) return "";
  for (size_t up = line - 1; up >= 1; --up) {
    std::string_view l = line_of(text, up);
    const size_t end = l.find_last_not_of(" \t\r");
    const size_t begin = l.find_first_not_of(" \t");
    if (begin == std::string_view::npos || l[begin] == '#') continue;  // blank or a comment line
    return fmt::format("{}:{}", up, end + 2);
  }
  return "";
}

toml::table parse_toml(const std::string& text, const std::string& name) {
  reject_toml_unsafe_code_points(text, name);
  try {
    return toml::parse(text, name);
  } catch (const toml::parse_error& e) {
    std::string what(e.description());
    // toml++ quotes what it saw verbatim, a line break included ("saw 'tru\n'"): one line of message.
    for (size_t at = what.find('\n'); at != std::string::npos; at = what.find('\n', at)) what.replace(at, 1, "\\n");
    const std::string at = fmt::format("{}:{}", e.source().begin.line, e.source().begin.column);
    if (const std::string missing = array_close_position(text, e); !missing.empty())
      throw CaseFileError(fmt::format("{}:{}: an array is not closed: a ',' or ']' is missing at the end of this "
                                      "line (toml++ noticed at {}: {})",
                                      name, missing, at, what));
    throw CaseFileError(fmt::format("{}:{}: {}", name, at, what));
  }
}

std::string read_regular_file(const std::string& path, const char* what) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    throw CaseFileError(fmt::format("{}: not a {} (no such regular file)", path, what));
  std::ifstream in(path);
  if (!in) throw CaseFileError(fmt::format("{}: cannot open the {}", path, what));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::vector<Case> parse_case_text(const std::string& text, const std::string& name) {
  return parse_case_file_text(text, name).cases;
}

// One [[model]] table (c.table: Model); `known`: the presets and the earlier [[model]]s.
ModelPreset model_of(const Ctx& c, const toml::table& t, const std::map<std::string, ModelPreset>& known) {
  only_keys(c, t, "model");
  const toml::node* nm = c.get(t, "name");
  if (!nm || !nm->is_string()) c.fail(t, "name", "missing or not a string");
  ModelPreset m;
  m.name = *nm->value<std::string>();
  m.num_heads = int(integer(c, t, "num_heads", 0));
  m.num_kv_heads = int(integer(c, t, "num_kv_heads", 0));
  m.head_size = int(integer(c, t, "head_size", 0));
  m.kv_lora_rank = int(integer(c, t, "kv_lora_rank", 0));
  m.qk_rope_head_dim = int(integer(c, t, "qk_rope_head_dim", 0));
  m.qk_nope_head_dim = int(integer(c, t, "qk_nope_head_dim", 0));
  if (m.kv_lora_rank > 0) {  // MLA: one latent head of kv_lora_rank + qk_rope_head_dim
    if (!m.qk_rope_head_dim || !m.qk_nope_head_dim)
      c.fail(node_of(c, t, "kv_lora_rank"), "kv_lora_rank", "an MLA model needs qk_rope_head_dim and qk_nope_head_dim");
    if (m.num_kv_heads > 1)
      c.fail(node_of(c, t, "num_kv_heads"), "num_kv_heads", "an MLA model has one latent kv head (1, or leave it out)");
    const int latent = m.kv_lora_rank + m.qk_rope_head_dim;
    if (m.head_size && m.head_size != latent)
      c.fail(node_of(c, t, "head_size"), "head_size",
             fmt::format("an MLA model's head size is kv_lora_rank + qk_rope_head_dim = {} (or leave it out)", latent));
    m.num_kv_heads = 1, m.head_size = latent;
  } else if (m.qk_rope_head_dim || m.qk_nope_head_dim) {
    c.fail(node_of(c, t, m.qk_rope_head_dim ? "qk_rope_head_dim" : "qk_nope_head_dim"),
           m.qk_rope_head_dim ? "qk_rope_head_dim" : "qk_nope_head_dim", "applies to MLA models only (with kv_lora_rank)");
  }
  if (!m.num_heads || !m.num_kv_heads || !m.head_size)
    c.fail(t, "model", "needs num_heads, num_kv_heads and head_size");
  if (m.num_heads % m.num_kv_heads != 0)
    c.fail(node_of(c, t, "num_kv_heads"), "num_kv_heads",
           fmt::format("{} does not divide num_heads {}", m.num_kv_heads, m.num_heads));
  if (const toml::node* hy = c.get(t, "hybrid")) {
    if (!hy->is_boolean()) c.fail(*hy, "hybrid", "expected true or false, got " + type_name(*hy));
    m.hybrid = *hy->value<bool>();
  }
  if (known.count(m.name))
    c.fail(*nm, "name", fmt::format("model '{}' is already defined (a preset or an earlier [[model]])", m.name));
  m.source = c.file;
  return m;
}

// The array of tables under top-level key `key`, or null; CaseFileError when it is something else.
const toml::array* tables_of(const Ctx& c, const toml::table& root, const std::string& key) {
  const toml::node* n = c.get(root, key);
  if (!n) return nullptr;
  const toml::array* arr = n->as_array();
  if (!arr || !arr->is_array_of_tables()) c.fail(*n, key, fmt::format("expected [[{}]] tables", key));
  return arr;
}

CaseFile parse_case_file_text(const std::string& text, const std::string& name, KeysRead* read) {
  const Ctx c{name, KeyTable::TopLevel, read};
  const toml::table root = parse_toml(text, name);
  only_keys(c, root, "top level");
  std::vector<int64_t> seeds = integers(c, root, "seeds", false);
  if (seeds.empty()) seeds = {1};

  std::map<std::string, ModelPreset> models;
  for (const auto& m : model_presets()) models[m.name] = m;
  if (const toml::array* arr = tables_of(c, root, "model"))
    for (const auto& e : *arr) {
      ModelPreset m = model_of(c.in(KeyTable::Model), *e.as_table(), models);
      models[m.name] = m;
    }
  std::vector<Case> cases;
  std::vector<ExpectedFailure> expected;
  if (const toml::array* arr = tables_of(c, root, "write"))
    for (const auto& e : *arr) expand_write(c.in(KeyTable::Write), *e.as_table(), models, seeds, cases, expected);
  for (CaseKind kind : {CaseKind::Attention, CaseKind::Pipeline}) {
    const Ctx tc = c.in(kind == CaseKind::Attention ? KeyTable::Attention : KeyTable::Pipeline);
    if (const toml::array* arr = tables_of(c, root, to_string(kind)))
      for (const auto& e : *arr) expand_decode(tc, *e.as_table(), kind, models, seeds, cases, expected);
  }
  for (auto& e : expectations_of(c, root, "expected_failure")) {
    e.scope_file = name;  // never another file's cases
    expected.push_back(std::move(e));
  }
  return CaseFile{std::move(cases), std::move(expected)};
}

CaseFile load_case_file_full(const std::string& path) {
  return parse_case_file_text(read_regular_file(path, "case file"), path);
}

std::vector<Case> load_case_file(const std::string& path) { return load_case_file_full(path).cases; }

std::vector<ExpectedFailure> load_known_failures(const std::string& path) {
  return parse_known_failures_text(read_regular_file(path, "known-failures file"), path);
}

std::vector<ExpectedFailure> parse_known_failures_text(const std::string& text, const std::string& name,
                                                       KeysRead* read) {
  const Ctx c{name, KeyTable::KnownFailuresTopLevel, read};
  const toml::table root = parse_toml(text, name);
  only_keys(c, root, "top level");
  auto out = expectations_of(c, root, "known_failure");
  if (out.empty()) c.fail(root, "known_failure", "no [[known_failure]] table; expected at least one");
  return out;
}

}  // namespace kvh
