// `kvharness compare A B`: what regressed, what got fixed, between two runs
// (DESIGN.md). A and B are results.json files (or report directories holding
// one); cases are matched by id.
//   regressed  PASS or UNSUPPORTED in A, FAIL or CRASH in B
//   fixed      FAIL or CRASH in A, PASS in B
//   changed    any other difference of verdict or reason (FAIL mismatch ->
//              FAIL out_of_view_write, PASS -> UNSUPPORTED, ...)
//   only in A / only in B: the case sets differ (a run cut short, other filters)
// A case whose writer, reader or routed_to is a fixture_* kernel is marked:
// such kernels are known-bad, and a fixture that starts to PASS where it used
// to FAIL means the harness stopped seeing its bug.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace kvh::compare {

struct Change {
  enum Kind { Regressed, Fixed, Changed, OnlyInA, OnlyInB } kind;
  std::string id;
  std::string a, b;        // "PASS", "FAIL mismatch", "-" when absent
  std::string detail_b;    // B's detail (A's for only-in-A)
  std::string routed_a, routed_b;
  bool fixture = false;
};

struct Totals {
  int cases = 0, pass = 0, fail = 0, crash = 0, unsupported = 0;
  bool complete = false;
  std::string backend, device;
};

struct Comparison {
  Totals a, b;
  int same = 0;  // cases in both with the same verdict and reason
  std::vector<Change> changes;
  int count(Change::Kind k) const;
};

/// Compares two parsed results.json documents (schema kvharness.results/1).
/// Throws std::runtime_error for a document that is not one.
Comparison compare(const nlohmann::json& a, const nlohmann::json& b);
/// Human-readable report: totals, then every regression, fix and change,
/// then the cases only in one run (at most `max_only` of each, 0: all).
std::string format(const Comparison& c, const std::string& name_a, const std::string& name_b, int max_only = 20);
/// Loads a results.json file, or DIR/results.json. Throws std::runtime_error naming the file.
nlohmann::json load(const std::string& path);

}  // namespace kvh::compare
