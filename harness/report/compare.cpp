#include "report/compare.h"

#include "filter.h"
#include "report/results_io.h"
#include "router/router.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kvh::compare {

namespace {

using json = nlohmann::json;

// The fields of an entry that compare reads (or that say what its verdict means), checked as
// results.json's reader checks them: a verdict, reason or component this version does not
// know is an input error, never a difference (a gate must not turn green on it).
const std::vector<const char*> kCheckedFields = {"verdict", "reason",    "component", "causes",   "expected_failure",
                                                 "fixture", "kernel_us", "detail",    "routed_to"};

// What every input error says was expected.
constexpr const char* kExpected =
    "expected a kvharness results.json (\"schema\": \"kvharness.results/1\" and a \"cases\" array)";

std::string str(const json& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A top-level scalar for the header: "-" when absent, null or empty.
std::string header_field(const json& doc, const char* key) {
  auto it = doc.find(key);
  if (it == doc.end() || it->is_null()) return "-";
  if (it->is_string()) return it->get<std::string>().empty() ? "-" : it->get<std::string>();
  return it->dump();
}

bool is_fixture(const json& e) {
  for (const char* k : {"writer", "reader", "routed_to"})
    if (str(e, k).rfind("fixture_", 0) == 0) return true;
  return routing::is_regression_fixture(str(e, "router_policy"));
}

// The outcome classes of `kvharness run` (report.h); compare reads them back from results.json.
using Class = Outcome;

// "expected_failure" when the file has it; files written before it have
// "fixture" (a FAIL of a fixture case was expected).
bool expected_failure(const json& e) {
  for (const char* k : {"expected_failure", "fixture"}) {
    auto it = e.find(k);
    if (it != e.end() && it->is_boolean()) return it->get<bool>();
  }
  return false;
}

Class class_of(const json& e) {
  const std::string v = str(e, "verdict");
  if (v == "CRASH") {  // expected only where a declaration named it (never by an old file's "fixture")
    auto it = e.find("expected_failure");
    return outcome_of(v, it != e.end() && it->is_boolean() && it->get<bool>());
  }
  return outcome_of(v, expected_failure(e));
}

bool good(Class c) { return c == Class::Pass || c == Class::Unsupported || c == Class::XFail; }
bool bad(Class c) { return !good(c) && c != Class::Interrupted; }

// "PASS", "FAIL mismatch", "XFAIL misroute", "CRASH crash", ...
std::string outcome(const json& e) {
  const Class c = class_of(e);
  std::string v = c == Class::XFail ? "XFAIL" : str(e, "verdict");
  const std::string r = str(e, "reason");
  return r.empty() || c == Class::Pass ? v : v + " " + r;
}

std::optional<double> kernel_us(const json& e) {
  auto it = e.find("kernel_us");
  if (it == e.end() || !it->is_number() || it->get<double>() <= 0) return std::nullopt;
  return it->get<double>();
}

// Throws InputError (without a file name: load() adds it) unless d is a results.json document.
void check_doc(const json& d) {
  if (!d.is_object())
    throw InputError(fmt::format("JSON, but its top level is {}, not an object; {}", d.type_name(), kExpected));
  auto s = d.find("schema");
  if (s == d.end() || !s->is_string())
    throw InputError(fmt::format("JSON, but without a \"schema\" string; {}", kExpected));
  if (*s != kSchema)
    throw InputError(fmt::format("\"schema\" is \"{}\", not one this kvharness reads; {}", s->get<std::string>(),
                                 kExpected));
  auto cases = d.find("cases");
  if (cases == d.end() || !cases->is_array()) throw InputError(fmt::format("no \"cases\" array; {}", kExpected));
  for (size_t i = 0; i < cases->size(); ++i) {
    const json& e = (*cases)[i];
    if (!e.is_object() || !e.contains("id") || !e["id"].is_string() || !e.contains("verdict") ||
        !e["verdict"].is_string())
      throw InputError(fmt::format(
          "cases[{}]: expected an object with string fields \"id\" and \"verdict\"; {}", i, kExpected));
    try {
      check_result_fields(e, kCheckedFields);
    } catch (const std::runtime_error& x) {
      throw InputError(fmt::format("cases[{}]: {}", i, x.what()));
    }
  }
}

RunInfo run_info(const json& doc) {
  RunInfo r;
  r.backend = header_field(doc, "backend");
  r.device = header_field(doc, "device");
  r.wave_size = header_field(doc, "wave_size");
  r.filter = header_field(doc, "filter");
  r.seed = header_field(doc, "seed");
  r.tool_version = header_field(doc, "tool_version");
  r.label = header_field(doc, "label");
  r.complete = doc.value("complete", false);
  if (doc.contains("error") && doc["error"].is_string()) r.error = doc["error"].get<std::string>();
  r.total = int(doc["cases"].size());
  return r;
}

// The cases of `doc` that `f` keeps, counted into `r`.
std::vector<const json*> select(const json& doc, const Filter& f, RunInfo& r) {
  std::vector<const json*> kept;
  for (const json& e : doc["cases"])
    if (f.matches(filter_fields(e))) {
      kept.push_back(&e);
      r.add(class_of(e));
    }
  return kept;
}

Change change(Change::Kind k, const std::string& id, const json* ea, const json* eb, const json& detail_of) {
  return {k,
          id,
          ea ? outcome(*ea) : "-",
          eb ? outcome(*eb) : "-",
          str(detail_of, "detail"),
          ea ? str(*ea, "routed_to") : "",
          eb ? str(*eb, "routed_to") : "",
          (ea && is_fixture(*ea)) || (eb && is_fixture(*eb)),
          0};
}

bool gates(Change::Kind k, FailOn f) {
  switch (f) {
    case FailOn::Regressions: return k == Change::Regressed || k == Change::Slower;
    case FailOn::Changes: return k <= Change::Changed;
    case FailOn::Any: return true;
  }
  return true;
}

}  // namespace

FailOn parse_fail_on(const std::string& s) {
  for (FailOn f : {FailOn::Regressions, FailOn::Changes, FailOn::Any})
    if (s == to_string(f)) return f;
  throw std::invalid_argument(fmt::format("--fail-on '{}': expected regressions, changes or any", s));
}

const char* to_string(FailOn f) {
  switch (f) {
    case FailOn::Regressions: return "regressions";
    case FailOn::Changes: return "changes";
    case FailOn::Any: return "any";
  }
  return "?";
}

std::map<std::string, std::string> filter_fields(const json& entry) {
  std::map<std::string, std::string> out;
  for (const std::string& k : Filter::keys()) {
    auto it = entry.find(k);
    if (it == entry.end() || it->is_null()) continue;
    if (it->is_string()) out[k] = it->get<std::string>();
    else if (it->is_boolean()) out[k] = it->get<bool>() ? "1" : "0";
    else out[k] = it->dump();
  }
  return out;
}

int Comparison::count(Change::Kind k) const {
  return int(std::count_if(changes.begin(), changes.end(), [k](const Change& c) { return c.kind == k; }));
}

int Comparison::gating(FailOn f) const {
  return int(std::count_if(changes.begin(), changes.end(), [f](const Change& c) { return gates(c.kind, f); })) +
         !a.error.empty() + !b.error.empty();
}

Comparison compare(const json& a, const json& b, const Options& o) {
  for (const auto& [name, doc] : {std::pair<const char*, const json*>{"A", &a}, {"B", &b}}) try {
      check_doc(*doc);
    } catch (const InputError& e) {
      throw InputError(fmt::format("{}: {}", name, e.what()));
    }
  const Filter f(o.filter);
  Comparison out;
  out.a = run_info(a);
  out.b = run_info(b);
  const std::vector<const json*> kept_a = select(a, f, out.a), kept_b = select(b, f, out.b);
  std::map<std::string, const json*> in_b;
  for (const json* e : kept_b) in_b.emplace(str(*e, "id"), e);
  std::map<std::string, bool> in_a;
  for (const json* ea : kept_a) {
    const std::string id = str(*ea, "id");
    if (!in_a.emplace(id, true).second) continue;  // a repeated id: the first entry speaks for it
    auto it = in_b.find(id);
    const json* eb = it == in_b.end() ? nullptr : it->second;
    const Class ca = class_of(*ea), cb = eb ? class_of(*eb) : Class::Other;
    if (ca == Class::Interrupted || (eb && cb == Class::Interrupted)) {
      out.changes.push_back(change(Change::Interrupted, id, ea, eb, ca == Class::Interrupted ? *ea : *eb));
      continue;
    }
    if (!eb) {
      out.changes.push_back(change(Change::OnlyInA, id, ea, nullptr, *ea));
      continue;
    }
    if (outcome(*ea) != outcome(*eb)) {
      Change::Kind k = Change::Changed;
      if (good(ca) && bad(cb)) k = Change::Regressed;
      else if (bad(ca) && cb == Class::Pass) k = Change::Fixed;
      out.changes.push_back(change(k, id, ea, eb, *eb));
      continue;
    }
    ++out.same;
    const auto ka = kernel_us(*ea), kb = kernel_us(*eb);
    if (ca != Class::Pass || !ka || !kb) continue;
    const double ratio = *kb / *ka;
    out.timing.ratios.emplace_back(id, ratio);
    if (o.kernel_us_threshold && ratio > *o.kernel_us_threshold) {
      Change c = change(Change::Slower, id, ea, eb, *eb);
      c.a = fmt::format("{:.2f} us", *ka);
      c.b = fmt::format("{:.2f} us", *kb);
      c.ratio = ratio;
      out.changes.push_back(std::move(c));
    }
  }
  for (const json* eb : kept_b) {
    const std::string id = str(*eb, "id");
    if (in_a.count(id) || in_b.at(id) != eb) continue;
    out.changes.push_back(change(class_of(*eb) == Class::Interrupted ? Change::Interrupted : Change::OnlyInB, id,
                                 nullptr, eb, *eb));
  }
  auto& r = out.timing.ratios;
  std::stable_sort(r.begin(), r.end(), [](const auto& x, const auto& y) { return x.second > y.second; });
  if (!r.empty()) {
    const size_t n = r.size();
    out.timing.median = n % 2 ? r[n / 2].second : (r[n / 2 - 1].second + r[n / 2].second) / 2;
  }
  return out;
}

std::string format(const Comparison& c, const std::string& name_a, const std::string& name_b, const Options& o) {
  auto header = [&](const char* which, const std::string& name, const RunInfo& r) {
    std::string s = fmt::format("{} {}\n  backend {} | device {} | wave size {} | seed {} | tool {} | label {}\n",
                                which, name, r.backend, r.device, r.wave_size, r.seed, r.tool_version, r.label);
    s += fmt::format("  run filter {} | complete {} | ", r.filter, r.complete ? "yes" : "NO (INCOMPLETE)");
    if (!o.filter.empty()) s += fmt::format("{} of {} cases kept: ", r.cases, r.total);
    else s += fmt::format("{} cases: ", r.cases);
    return s + counts_text(r) + "\n";
  };
  std::string out = header("A", name_a, c.a) + header("B", name_b, c.b);
  if (!o.filter.empty()) out += fmt::format("compare filter: {}\n", o.filter);
  out += fmt::format("same: {}; regressed: {}; ", c.same, c.count(Change::Regressed));
  if (o.kernel_us_threshold) out += fmt::format("slower: {}; ", c.count(Change::Slower));
  out += fmt::format("fixed: {}; changed: {}; interrupted: {}; only in A: {}; only in B: {}\n", c.count(Change::Fixed),
                     c.count(Change::Changed), c.count(Change::Interrupted), c.count(Change::OnlyInA),
                     c.count(Change::OnlyInB));
  const std::string slower_title =
      o.kernel_us_threshold ? fmt::format("SLOWER (kernel_us B/A > {})", *o.kernel_us_threshold) : "SLOWER";
  const std::pair<Change::Kind, std::string> sections[] = {
      {Change::Regressed, "REGRESSED (good in A, fails in B)"},
      {Change::Slower, slower_title},
      {Change::Fixed, "FIXED (fails in A, passes in B)"},
      {Change::Changed, "CHANGED"},
      {Change::Interrupted, "INTERRUPTED (no verdict in one run: counted as absent)"},
      {Change::OnlyInA, "ONLY IN A"},
      {Change::OnlyInB, "ONLY IN B"}};
  for (const auto& [kind, title] : sections) {
    const int n = c.count(kind);
    if (!n) continue;
    out += fmt::format("\n{} ({}):\n", title, n);
    const bool capped = kind == Change::Interrupted || kind == Change::OnlyInA || kind == Change::OnlyInB;
    int shown = 0;
    for (const Change& ch : c.changes) {
      if (ch.kind != kind) continue;
      if (capped && o.max_only > 0 && shown == o.max_only) {
        out += fmt::format("  ... and {} more\n", n - shown);
        break;
      }
      ++shown;
      out += fmt::format("  {}{}: {} -> {}", ch.id, ch.fixture ? " [fixture]" : "", ch.a, ch.b);
      if (kind == Change::Slower) out += fmt::format(" ({:.2f}x)", ch.ratio);
      if (!ch.routed_a.empty() && !ch.routed_b.empty() && ch.routed_a != ch.routed_b)
        out += fmt::format(" (routed {} -> {})", ch.routed_a, ch.routed_b);
      out += "\n";
      if (!capped && kind != Change::Slower && !ch.detail_b.empty()) out += fmt::format("      B: {}\n", ch.detail_b);
    }
  }
  const auto& t = c.timing;
  if (!t.ratios.empty()) {
    out += fmt::format("\nkernel_us B/A over {} cases passing in both: median {:.3f}x; largest:\n", t.ratios.size(),
                       t.median);
    for (size_t i = 0; i < t.ratios.size() && int(i) < o.max_ratios; ++i)
      out += fmt::format("  {:.3f}x {}\n", t.ratios[i].second, t.ratios[i].first);
  }
  for (const auto& [name, info] : {std::pair<const char*, const RunInfo*>{"A", &c.a}, {"B", &c.b}})
    if (!info->error.empty()) out += fmt::format("\n{} NEVER RAN its cases: {}\n", name, info->error);
  const int gating = c.gating(o.fail_on);
  const int ungated = int(c.changes.size()) - (gating - !c.a.error.empty() - !c.b.error.empty());
  out += fmt::format("\ngate (--fail-on {}): ", to_string(o.fail_on));
  out += gating ? fmt::format("{} gating difference{}, exit {}", gating, gating == 1 ? "" : "s", kExitGatingDifference)
                : fmt::format("no gating difference, exit {}", kExitNoGatingDifference);
  if (ungated) out += fmt::format(" ({} other difference{} not gating)", ungated, ungated == 1 ? "" : "s");
  return out + "\n";
}

int exit_code(const Comparison& c, const Options& o) {
  return c.gating(o.fail_on) ? kExitGatingDifference : kExitNoGatingDifference;
}

json load(const std::string& path) {
  namespace fs = std::filesystem;
  fs::path p(path);
  std::error_code ec;
  if (!fs::exists(p, ec)) throw InputError(fmt::format("{}: no such file or directory; {}", path, kExpected));
  if (fs::is_directory(p, ec)) {
    p /= "results.json";
    if (!fs::exists(p, ec))
      throw InputError(fmt::format("{}: a directory without results.json; {}, or a report directory holding one", path,
                                   kExpected));
  }
  std::ifstream f(p, std::ios::binary);
  std::stringstream text;
  text << f.rdbuf();
  if (!f) throw InputError(fmt::format("{}: cannot read; {}", p.string(), kExpected));
  const std::string s = text.str();
  json j;
  try {
    j = json::parse(s);
  } catch (const json::parse_error& e) {
    // parse_error::byte is 1-based: the character at which parsing failed.
    const size_t at = std::min(e.byte ? e.byte - 1 : 0, s.size());
    const size_t line = 1 + size_t(std::count(s.begin(), s.begin() + long(at), '\n'));
    const size_t nl = s.rfind('\n', at ? at - 1 : 0);
    const size_t column = at - (nl == std::string::npos || nl >= at ? size_t(0) : nl + 1) + 1;
    throw InputError(fmt::format("{}: not JSON (a syntax error at line {}, column {}); {}", p.string(), line, column,
                                 kExpected));
  }
  try {
    check_doc(j);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", p.string(), e.what()));
  }
  return j;
}

}  // namespace kvh::compare
