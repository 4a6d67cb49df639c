#include "run/shard.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>

#include "report/compare.h"
#include "report/results_io.h"

namespace kvh {

namespace {

using json = nlohmann::json;

std::string str(const json& d, const char* key) {
  auto it = d.find(key);
  return it != d.end() && it->is_string() ? it->get<std::string>() : std::string();
}

json load_results(const std::string& path) {
  try {
    return compare::load(path);
  } catch (const std::exception& e) {
    throw PartialRunError(e.what());
  }
}

}  // namespace

Shard parse_shard(const std::string& s) {
  const size_t slash = s.find('/');
  Shard sh;
  try {
    if (slash == std::string::npos) throw std::invalid_argument("");
    size_t u1 = 0, u2 = 0;
    sh.index = std::stoi(s.substr(0, slash), &u1);
    sh.count = std::stoi(s.substr(slash + 1), &u2);
    if (u1 != slash || slash + 1 + u2 != s.size()) throw std::invalid_argument("");
  } catch (const std::logic_error&) {
    throw std::invalid_argument(fmt::format("--shard '{}': expected I/N, e.g. 2/3", s));
  }
  if (sh.count < 1 || sh.index < 1 || sh.index > sh.count)
    throw std::invalid_argument(fmt::format("--shard '{}': expected 1 <= I <= N", s));
  return sh;
}

bool in_shard(const std::string& id, const Shard& s) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a, 64-bit
  for (unsigned char ch : id) h = (h ^ ch) * 0x100000001b3ull;
  return h % uint64_t(s.count) == uint64_t(s.index - 1);
}

std::string run_identity(const RunOptions& o, const std::string& tool_version, const std::string& backend,
                         const std::string& device, int wave_size) {
  std::string id = fmt::format("kvharness {}; {} {} wave {}; cases {}; filter '{}'; seed {}", tool_version, backend,
                               device, wave_size, fmt::join(o.case_files, " "), o.filter,
                               o.seed ? std::to_string(*o.seed) : "from the case files");
  for (const auto& p : o.providers) id += "; --provider " + p;
  for (const auto& r : o.replace_kernels) id += "; --replace-kernel " + r;
  for (const auto& r : o.replace_routers) id += "; --replace-router " + r;
  for (const auto& k : o.known_failures) id += "; --known-failures " + k;
  if (o.launch_misrouted) id += "; --launch-misrouted";
  if (o.random_order) id += "; --random-order";
  return id;
}

std::vector<CaseResult> load_resumed(const std::string& dir, const std::vector<Case>& cases,
                                     const std::string& identity, const std::string& shard) {
  const json d = load_results(dir);
  const std::string where = fmt::format("--resume {}", dir);
  if (!str(d, "error").empty())
    throw PartialRunError(fmt::format("{}: that run stopped before its cases ({}); nothing to resume", where,
                                      str(d, "error")));
  if (str(d, "identity") != identity)
    throw PartialRunError(fmt::format(
        "{}: that run is not this one; its verdicts cannot stand in this report.\n  it:   {}\n  this: {}", where,
        str(d, "identity").empty() ? "(no identity: written by an older kvharness)" : str(d, "identity"), identity));
  if (str(d, "shard") != shard)
    throw PartialRunError(fmt::format("{}: that run is shard '{}', this one '{}'", where, str(d, "shard"), shard));
  std::map<std::string, const Case*> by_id;
  for (const auto& c : cases) by_id[c.id()] = &c;
  std::vector<CaseResult> out;
  for (const json& e : d.at("cases")) {
    if (str(e, "verdict") == to_string(Status::Interrupted)) continue;  // no verdict: run it again
    const auto it = by_id.find(str(e, "id"));
    if (it == by_id.end())
      throw PartialRunError(fmt::format("{}: it decided case {}, which this run does not select", where, str(e, "id")));
    try {
      out.push_back(case_result_from_json(e, it->second));
    } catch (const std::runtime_error& x) {
      throw PartialRunError(fmt::format("{}: {}", where, x.what()));
    }
  }
  return out;
}

RunReport merge_runs(const std::vector<std::string>& inputs) {
  if (inputs.empty()) throw PartialRunError("merge: no input");
  RunReport m;
  std::map<std::string, std::string> owner;  // case id -> input
  std::set<int> shards;
  int shard_count = 0;
  std::vector<std::string> unsharded;
  bool all_complete = true;
  std::vector<std::string> stops;
  std::set<std::string> hosts, sources;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const std::string& in = inputs[k];
    const json d = load_results(in);
    if (!str(d, "error").empty())
      throw PartialRunError(fmt::format("merge: {}: that run stopped before its cases: {}", in, str(d, "error")));
    const std::string identity = str(d, "identity");
    if (identity.empty())
      throw PartialRunError(fmt::format("merge: {}: no \"identity\" (written by an older kvharness): cannot tell "
                                        "whether it is the same run as the others", in));
    if (k == 0) {
      m.identity = identity;
      m.backend = str(d, "backend"), m.device = str(d, "device"), m.arch = str(d, "arch");
      m.wave_size = d.value("wave_size", 0), m.compute_units = d.value("compute_units", 0);
      m.tool_version = str(d, "tool_version"), m.runtime_version = str(d, "runtime_version");
      m.label = str(d, "label"), m.filter = str(d, "filter");
      m.case_files = d.value("case_files", std::vector<std::string>{});
      m.providers = d.value("providers", std::vector<std::string>{});
      if (d.contains("seed") && d["seed"].is_number()) m.seed = d["seed"].get<uint64_t>();
      m.started_at = str(d, "started_at"), m.finished_at = str(d, "finished_at");
    } else if (identity != m.identity) {
      throw PartialRunError(fmt::format("merge: {} is another run than {}; their verdicts cannot stand in one "
                                        "report.\n  {}: {}\n  {}: {}",
                                        in, inputs[0], inputs[0], m.identity, in, identity));
    }
    m.started_at = std::min(m.started_at, str(d, "started_at"));
    m.finished_at = std::max(m.finished_at, str(d, "finished_at"));
    const std::string sh = str(d, "shard");
    if (!sh.empty()) {
      const Shard s = parse_shard(sh);
      if (shard_count && s.count != shard_count)
        throw PartialRunError(fmt::format("merge: {} is shard {}, the others are of {}", in, sh, shard_count));
      if (!shards.insert(s.index).second)
        throw PartialRunError(fmt::format("merge: shard {} is given twice (again in {})", sh, in));
      shard_count = s.count;
    } else {
      unsharded.push_back(in);
    }
    if (!d.value("complete", false)) {
      all_complete = false;
      stops.push_back(fmt::format("{}: {}", in, str(d, "stopped_because").empty() ? "incomplete"
                                                                                  : str(d, "stopped_because")));
    }
    hosts.insert(str(d, "host"));
    for (const auto& s : d.value("expectation_sources", std::vector<std::string>{})) sources.insert(s);
    if (d.contains("replaced_kernels") && d["replaced_kernels"].is_object())
      for (const auto& [real, label] : d["replaced_kernels"].items())
        if (label.is_string()) m.replaced_kernels[real] = label.get<std::string>();
    m.merged_from.push_back(in);
    for (const json& e : d.at("cases")) {
      const std::string id = str(e, "id");
      if (auto [it, fresh] = owner.emplace(id, in); !fresh)
        throw PartialRunError(fmt::format("merge: case {} is in both {} and {} (overlapping inputs)", id, it->second, in));
      try {
        m.results.push_back(case_result_from_json(e));
      } catch (const std::runtime_error& x) {
        throw PartialRunError(fmt::format("merge: {}: {}", in, x.what()));
      }
    }
  }
  if (shard_count && !unsharded.empty())
    throw PartialRunError(fmt::format("merge: {} is not a --shard run, the other inputs are shards", unsharded.front()));
  if (shard_count && int(shards.size()) != shard_count) {
    std::vector<int> missing;
    for (int i = 1; i <= shard_count; ++i)
      if (!shards.count(i)) missing.push_back(i);
    stops.push_back(fmt::format("shard(s) {} of {} missing", fmt::join(missing, ", "), shard_count));
  }
  m.complete = all_complete && stops.empty();
  m.stopped_because = fmt::format("{}", fmt::join(stops, "; "));
  m.host = fmt::format("{}", fmt::join(hosts, " "));
  m.expectation_sources.assign(sources.begin(), sources.end());
  m.command_line = fmt::format("kvharness merge {}", fmt::join(inputs, " "));
  m.exit_code = exit_code_for(m);
  return m;
}

}  // namespace kvh
