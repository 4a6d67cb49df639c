#include "filter.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fnmatch.h>

#include <algorithm>
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
  if (key == "stale") return to_string(c.stale);
  if (key == "block_table_padding") return c.kind == CaseKind::Write ? "" : block_table_padding_name(c.block_table_padding);
  return "";
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
    Term t{key, negate, {}};
    std::stringstream alts(term.substr(eq + 1));
    std::string a;
    while (std::getline(alts, a, '|')) t.alternatives.push_back(a);
    if (t.alternatives.empty()) t.alternatives.push_back("");
    // Keys with a closed set of values: a typo is an error, not an empty selection.
    const std::vector<std::string> known = filter_key_values(key);
    for (const auto& alt : t.alternatives)
      if (!known.empty() && alt.find_first_of("*?[") == std::string::npos &&
          std::find(known.begin(), known.end(), alt) == known.end())
        throw FilterError(fmt::format("filter term '{}': unknown {} '{}'; known: {}", term, key, alt, fmt::join(known, ", ")));
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
                           [&](const std::string& p) { return fnmatch(p.c_str(), v.c_str(), 0) == 0; });
    if (any == t.negate) return false;
  }
  return true;
}

}  // namespace kvh
