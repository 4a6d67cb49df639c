// `kvharness compare A B`: what regressed, what got fixed, between two runs
// (DESIGN.md), and an exit code a CI gate or `git bisect run` can rely on.
// A and B are results.json files (schema kvharness.results/1) or report
// directories holding one; cases are matched by id.
//
// Every case gets an outcome class from its verdict and its
// "expected_failure" flag (older files: the "fixture" flag on a FAIL):
//   good  PASS, UNSUPPORTED, XFAIL (a FAIL declared expected)
//   bad   FAIL (unexpected), CRASH (never expected), XPASS (an expected FAIL
//         that passed: the fixture no longer shows its bug)
//   A verdict, reason or component this version does not know is an input
//   error (exit 2), as results.json's reader refuses it: a gate must not
//   turn green on it.
//   INTERRUPTED: the run was stopped during the case; no verdict on the
//         kernel, so the case counts as absent from that run.
// Among the cases both runs have:
//   regressed  good in A, bad in B
//   slower     PASS in both, kernel_us B/A above --kernel-us-threshold
//   fixed      bad in A, PASS in B
//   changed    any other difference of class or reason (FAIL mismatch ->
//              FAIL out_of_view_write, PASS -> UNSUPPORTED, XFAIL -> PASS, ...)
// and besides: interrupted (in A or B), only in A, only in B.
// A case whose writer, reader or routed_to is a fixture_* kernel, or whose
// router policy is a regression fixture, is marked [fixture] in the listing.
#pragma once
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/report.h"

namespace kvh::compare {

/// The results.json schema this version reads.
inline constexpr const char* kSchema = "kvharness.results/1";

/// Exit codes of `kvharness compare`.
inline constexpr int kExitNoGatingDifference = 0;
inline constexpr int kExitGatingDifference = 1;
inline constexpr int kExitInputError = 2;  // unreadable or non-results file, bad --filter

/// A file or document that is not a kvharness results.json; what() names the
/// file (when known), what is wrong and what was expected.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Which differences make `compare` exit 1. Each level includes the ones before it.
enum class FailOn {
  Regressions,  // regressed, and slower when a kernel_us threshold is set (the default)
  Changes,      // also fixed and changed: any verdict or reason change among common cases
  Any,          // also cases in one run only, or interrupted in either
};
/// "regressions" | "changes" | "any". Throws std::invalid_argument naming the known values.
FailOn parse_fail_on(const std::string& s);
const char* to_string(FailOn f);

struct Options {
  std::string filter;                          // cases/filter.h language, applied to both runs
  FailOn fail_on = FailOn::Regressions;
  std::optional<double> kernel_us_threshold;   // B/A ratio above which a PASS case is "slower"
  int max_only = 20;                           // cases listed per one-run/interrupted section (0: all)
  int max_ratios = 5;                          // slowest kernel_us ratios listed
};

struct Change {
  enum Kind { Regressed, Slower, Fixed, Changed, Interrupted, OnlyInA, OnlyInB } kind;
  std::string id;
  std::string a, b;        // outcome: "PASS", "FAIL mismatch", "XFAIL misroute", "-" when absent
  std::string detail_b;    // B's detail (A's for only-in-A, the interrupted one's for interrupted)
  std::string routed_a, routed_b;
  bool fixture = false;
  double ratio = 0;        // Slower only: kernel_us B / A
};

/// What a run's header shows. Strings are "-" where the file lacks the field. The counts (of the
/// cases the compare filter keeps) are report.h's Counts, the classes `kvharness run` counts by.
struct RunInfo : Counts {
  std::string backend, device, wave_size, filter, seed, tool_version, label;
  bool complete = false;
  std::string error;  // the run stopped on an input or harness error before its cases ("" if none)
  int total = 0;  // cases in the file, before the compare filter
};

/// kernel_us B/A for the cases that PASS in both runs with a positive kernel_us in both.
struct Timing {
  std::vector<std::pair<std::string, double>> ratios;  // (id, B/A), largest first
  double median = 0;                                   // 0 when ratios is empty
};

struct Comparison {
  RunInfo a, b;
  int same = 0;  // cases in both with the same outcome and reason
  std::vector<Change> changes;
  Timing timing;
  int count(Change::Kind k) const;
  /// The changes that make the exit code 1 under `f`, plus one for each run
  /// that stopped on an error before its cases (nothing to compare is never green).
  int gating(FailOn f) const;
};

/// Compares two parsed results.json documents, keeping the cases that
/// `o.filter` matches. Throws InputError for a document that is not a
/// results file or has an entry whose verdict, reason, component, causes or
/// other field compare reads results.json's reader refuses (naming the entry
/// and the field), kvh::FilterError for a bad filter.
Comparison compare(const nlohmann::json& a, const nlohmann::json& b, const Options& o = {});
/// Human-readable report: both runs' headers, the tally, every regression,
/// slower case, fix and change, interrupted cases and cases of one run only
/// (at most o.max_only of each), kernel_us ratios, and the gate's verdict.
std::string format(const Comparison& c, const std::string& name_a, const std::string& name_b, const Options& o = {});
/// kExitGatingDifference when c has a difference that gates under o.fail_on, else kExitNoGatingDifference.
int exit_code(const Comparison& c, const Options& o);
/// Loads a results.json file, or DIR/results.json, and checks that it is
/// one (schema, a cases array of objects with string id and verdict, the
/// fields compare reads as check_result_fields checks them).
/// Throws InputError naming the file and what was expected.
nlohmann::json load(const std::string& path);
/// A results.json case entry as filter fields (cases/filter.h keys), each
/// spelled as kvh::case_field spells it: numbers in decimal, booleans 0/1, null "".
std::map<std::string, std::string> filter_fields(const nlohmann::json& entry);

}  // namespace kvh::compare
