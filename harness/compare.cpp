#include "compare.h"

#include "router.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

namespace kvh::compare {

namespace {

std::string str(const nlohmann::json& e, const char* key) {
  auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
}

bool is_fixture(const nlohmann::json& e) {
  for (const char* k : {"writer", "reader", "routed_to"})
    if (str(e, k).rfind("fixture_", 0) == 0) return true;
  return routing::is_regression_fixture(str(e, "router_policy"));
}

std::string outcome(const nlohmann::json& e) {
  const std::string v = str(e, "verdict"), r = str(e, "reason");
  return r.empty() || v == "PASS" ? v : v + " " + r;
}

bool bad(const std::string& verdict) { return verdict == "FAIL" || verdict == "CRASH"; }

Totals totals(const nlohmann::json& doc) {
  Totals t;
  t.complete = doc.value("complete", false);
  t.backend = str(doc, "backend");
  t.device = str(doc, "device");
  for (const auto& e : doc["cases"]) {
    ++t.cases;
    const std::string v = str(e, "verdict");
    t.pass += v == "PASS";
    t.fail += v == "FAIL";
    t.crash += v == "CRASH";
    t.unsupported += v == "UNSUPPORTED";
  }
  return t;
}

void check_doc(const nlohmann::json& d) {
  if (!d.is_object() || !d.contains("cases") || !d["cases"].is_array() ||
      str(d, "schema").rfind("kvharness.results/", 0) != 0)
    throw std::runtime_error("not a kvharness results.json (schema kvharness.results/N with a cases array)");
}

}  // namespace

int Comparison::count(Change::Kind k) const {
  int n = 0;
  for (const auto& c : changes) n += c.kind == k;
  return n;
}

Comparison compare(const nlohmann::json& a, const nlohmann::json& b) {
  check_doc(a);
  check_doc(b);
  Comparison out;
  out.a = totals(a);
  out.b = totals(b);
  std::map<std::string, const nlohmann::json*> in_b;
  for (const auto& e : b["cases"]) in_b[str(e, "id")] = &e;
  std::map<std::string, bool> seen;
  for (const auto& ea : a["cases"]) {
    const std::string id = str(ea, "id");
    seen[id] = true;
    auto it = in_b.find(id);
    if (it == in_b.end()) {
      out.changes.push_back({Change::OnlyInA, id, outcome(ea), "-", str(ea, "detail"), str(ea, "routed_to"), "",
                             is_fixture(ea)});
      continue;
    }
    const nlohmann::json& eb = *it->second;
    const std::string oa = outcome(ea), ob = outcome(eb);
    if (oa == ob) {
      ++out.same;
      continue;
    }
    const std::string va = str(ea, "verdict"), vb = str(eb, "verdict");
    Change::Kind k = Change::Changed;
    if (!bad(va) && bad(vb)) k = Change::Regressed;
    else if (bad(va) && vb == "PASS") k = Change::Fixed;
    out.changes.push_back({k, id, oa, ob, str(eb, "detail"), str(ea, "routed_to"), str(eb, "routed_to"),
                           is_fixture(ea) || is_fixture(eb)});
  }
  for (const auto& eb : b["cases"]) {
    const std::string id = str(eb, "id");
    if (!seen.count(id))
      out.changes.push_back({Change::OnlyInB, id, "-", outcome(eb), str(eb, "detail"), "", str(eb, "routed_to"),
                             is_fixture(eb)});
  }
  return out;
}

std::string format(const Comparison& c, const std::string& name_a, const std::string& name_b, int max_only) {
  auto total_line = [](const std::string& name, const Totals& t) {
    return fmt::format("{}: {} cases: {} PASS, {} FAIL, {} CRASH, {} UNSUPPORTED{} [{}{}]\n", name, t.cases, t.pass,
                       t.fail, t.crash, t.unsupported, t.complete ? "" : " (INCOMPLETE)", t.backend,
                       t.device.empty() ? "" : ", " + t.device);
  };
  std::string out = "A " + total_line(name_a, c.a) + "B " + total_line(name_b, c.b);
  out += fmt::format("same verdict: {}; regressed: {}; fixed: {}; changed: {}; only in A: {}; only in B: {}\n",
                     c.same, c.count(Change::Regressed), c.count(Change::Fixed), c.count(Change::Changed),
                     c.count(Change::OnlyInA), c.count(Change::OnlyInB));
  const std::pair<Change::Kind, const char*> sections[] = {{Change::Regressed, "REGRESSED (A ok, B fails)"},
                                                           {Change::Fixed, "FIXED (A fails, B passes)"},
                                                           {Change::Changed, "CHANGED"},
                                                           {Change::OnlyInA, "ONLY IN A"},
                                                           {Change::OnlyInB, "ONLY IN B"}};
  for (const auto& [kind, title] : sections) {
    const int n = c.count(kind);
    if (!n) continue;
    out += fmt::format("\n{} ({}):\n", title, n);
    const bool only = kind == Change::OnlyInA || kind == Change::OnlyInB;
    int shown = 0;
    for (const Change& ch : c.changes) {
      if (ch.kind != kind) continue;
      if (only && max_only > 0 && shown == max_only) {
        out += fmt::format("  ... and {} more\n", n - shown);
        break;
      }
      ++shown;
      out += fmt::format("  {}{}: {} -> {}", ch.id, ch.fixture ? " [fixture]" : "", ch.a, ch.b);
      if (!ch.routed_a.empty() && !ch.routed_b.empty() && ch.routed_a != ch.routed_b)
        out += fmt::format(" (routed {} -> {})", ch.routed_a, ch.routed_b);
      out += "\n";
      if (!only && !ch.detail_b.empty()) out += fmt::format("      B: {}\n", ch.detail_b);
    }
  }
  return out;
}

nlohmann::json load(const std::string& path) {
  std::filesystem::path p(path);
  if (std::filesystem::is_directory(p)) p /= "results.json";
  std::ifstream f(p);
  if (!f) throw std::runtime_error(fmt::format("cannot read {}", p.string()));
  try {
    nlohmann::json j = nlohmann::json::parse(f);
    check_doc(j);
    return j;
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(fmt::format("{}: {}", p.string(), e.what()));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("{}: {}", p.string(), e.what()));
  }
}

}  // namespace kvh::compare
