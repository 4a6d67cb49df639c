#include "filter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fnmatch.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <sstream>

#include "keys.h"

namespace kvh {

const std::vector<std::string>& Filter::keys() { return filter_keys(); }

std::string case_field(const Case& c, const std::string& key) {
  if (key == "id") return c.id();
  if (key == "kind") return to_string(c.kind);
  if (key == "model") return c.model;
  if (key == "tp") return std::to_string(c.tp);
  if (key == "head_size") return std::to_string(c.head_size);
  if (key == "num_heads") return std::to_string(c.num_heads);
  if (key == "num_kv_heads") return std::to_string(c.num_kv_heads);
  if (key == "layout") return to_string(c.layout);
  if (key == "block_size") return std::to_string(c.block_size);
  if (key == "dtype") return to_string(c.dtype);
  if (key == "batch_size") return std::to_string(c.batch_size);
  if (key == "writer") return c.writer;
  if (key == "variant") return c.variant();
  if (key == "seed") return std::to_string(c.seed);
  if (key == "shuffle") return std::to_string(c.shuffle());
  if (key == "max_query_len") return std::to_string(c.max_query_len());
  if (key == "causal") return c.causal ? "1" : "0";  // as compare reads a results.json boolean
  if (key == "reader") return c.reader;
  if (key == "router_policy") return c.router_policy;
  if (key == "target") return c.target;
  if (key == "values") return to_string(c.values);
  if (key == "kv_cache_dtype") return c.kv_cache_dtype_name();
  if (key == "kv_scales") return to_string(c.kv_scales);
  if (key == "sliding_window") return std::to_string(c.sliding_window);
  if (key == "sinks") return c.sinks ? "1" : "0";  // as compare reads a results.json boolean
  if (key == "softcap") return json_double(c.softcap);
  if (key == "alibi") return c.alibi ? "1" : "0";
  if (key == "tp_rank") return std::to_string(c.tp_rank);
  if (key == "partition_size") return std::to_string(c.partition_size);
  if (key == "launch_config") return c.launch_config;  // issue 23 (D)
  if (key == "stale") return to_string(c.stale);
  if (key == "mla") return c.mla() ? "1" : "0";  // as compare reads a results.json boolean
  if (key == "kv_lora_rank") return std::to_string(c.kv_lora_rank);
  if (key == "softmax_scale") return json_double(c.softmax_scale);
  if (key == "block_table_padding") return c.kind == CaseKind::Write ? "" : block_table_padding_name(c.block_table_padding);
  return "";
}

namespace {

// A whole decimal integer (an optional '-', then digits), else nullopt.
std::optional<int64_t> parse_integer(const std::string& s) {
  int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc() || p != end) return std::nullopt;
  return v;
}

// A whole finite decimal number ("30", "30.0", "2.5e1"), else nullopt.
std::optional<double> parse_number(const std::string& s) {
  if (s.empty() || s.find_first_not_of("0123456789+-.eE") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// What a value of the key must be, for errors: "an integer in 1..1024"; a closed set's "-1, or
// num_blocks+K (K in 0..16)".
std::string expected_of(const FilterKeySpec& spec) {
  const std::string range = spec.range.set() ? fmt::format("{}..{}", spec.range.lo, spec.range.hi) : "";
  if (spec.type != FilterType::Text)
    return fmt::format("{}{}", to_string(spec.type), range.empty() ? "" : " in " + range);
  std::vector<std::string> known = spec.values;
  if (!spec.numbered.empty())
    known.push_back(fmt::format("{}{}{}", known.empty() ? "" : "or ", spec.numbered,
                                range.empty() ? "" : fmt::format(" ({} in {})", spec.numbered.back(), range)));
  return fmt::format("{}", fmt::join(known, ", "));
}

// Value `text` of `term` is not of its key's type: "tp takes an integer in 1..1024",
// "unknown layout 'x'; known: ...".
FilterError not_of_type(const std::string& term, const std::string& key, const FilterKeySpec& spec,
                        const std::string& text) {
  if (spec.type == FilterType::Text)
    return FilterError(fmt::format("filter term '{}': unknown {} '{}'; known: {}", term, key, text, expected_of(spec)));
  return FilterError(fmt::format("filter term '{}': {} takes {}; '{}' is not one", term, key, expected_of(spec), text));
}

}  // namespace

bool Filter::Alternative::matches(const std::string& value, const std::string& numbered) const {
  using K = Kind;
  switch (kind) {
    case K::Glob: return fnmatch(text.c_str(), value.c_str(), 0) == 0;
    case K::Integer: return parse_integer(value) == integer;
    case K::Number: return parse_number(value) == number;
    case K::Numbered: return numbered_value(numbered, value) == integer;
    case K::Text: return value == text;
  }
  return false;
}

Filter::Filter(const std::string& expr) {
  std::stringstream ss(expr);
  std::string term;
  while (std::getline(ss, term, ',')) {
    if (term.empty()) continue;
    auto eq = term.find('=');
    if (eq == std::string::npos || eq == 0)
      throw FilterError(fmt::format("filter term '{}': expected key=value or key!=value", term));
    bool negate = term[eq - 1] == '!';
    std::string key = term.substr(0, negate ? eq - 1 : eq);
    if (std::find(keys().begin(), keys().end(), key) == keys().end())
      throw FilterError(fmt::format("filter term '{}': unknown key '{}'; known keys: {}", term, key, fmt::join(keys(), ", ")));
    // The key's type (cases/keys.h): a value that is not of it is an error, not an empty selection.
    const FilterKeySpec spec = filter_key_spec(key);
    Term t{key, negate, {}, spec.numbered};
    std::vector<std::string> alts;
    std::stringstream in(term.substr(eq + 1));
    for (std::string a; std::getline(in, a, '|');) alts.push_back(a);
    if (alts.empty()) alts.push_back("");
    for (const auto& text : alts) {
      using K = Alternative::Kind;
      Alternative a{K::Text, text};
      const bool closed = !spec.values.empty() || !spec.numbered.empty();
      if (text.find_first_of("*?[") != std::string::npos) {
        a.kind = K::Glob;  // matched against the value's spelling, unchecked
      } else if (text.empty()) {
        // the cases the key does not apply to
      } else if (spec.type == FilterType::Integer) {
        const auto v = parse_integer(text);
        if (!v) throw not_of_type(term, key, spec, text);
        a.kind = K::Integer, a.integer = *v;
      } else if (spec.type == FilterType::Number) {
        const auto v = parse_number(text);
        if (!v) throw not_of_type(term, key, spec, text);
        a.kind = K::Number, a.number = *v;
      } else if (closed && std::find(spec.values.begin(), spec.values.end(), text) == spec.values.end()) {
        const auto n = numbered_value(spec.numbered, text);
        if (!n) throw not_of_type(term, key, spec, text);
        a.kind = K::Numbered, a.integer = *n;
      }
      t.alternatives.push_back(std::move(a));
    }
    terms_.push_back(std::move(t));
  }
}

bool Filter::matches(const Case& c) const {
  return matches_by([&](const std::string& key) { return case_field(c, key); });
}

bool Filter::matches(const std::map<std::string, std::string>& fields) const {
  return matches_by([&](const std::string& key) {
    auto it = fields.find(key);
    return it == fields.end() ? std::string() : it->second;
  });
}

bool Filter::matches_by(const std::function<std::string(const std::string&)>& field) const {
  for (const auto& t : terms_) {
    const std::string v = field(t.key);
    bool any = std::any_of(t.alternatives.begin(), t.alternatives.end(),
                           [&](const Alternative& a) { return a.matches(v, t.numbered); });
    if (any == t.negate) return false;
  }
  return true;
}

}  // namespace kvh
