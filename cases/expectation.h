// Declared expected failures: where a regression fixture (or a user's own
// known-bad kernel) must fail, and how. Declared in a case file as
// [[expected_failure]] tables, or in a known-failures file (--known-failures)
// as [[known_failure]] tables; both take the same keys:
//   filter    = "writer=fixture_shuffle_contiguous,layout=interleaved|padded"  # cases it covers
//   ids       = ["pipeline/...", ...]   # or exact case ids (filter and ids may be combined: either matches)
//   component = "writer"                # writer | reader | router; omitted: any kernel component
//   reasons   = ["mismatch", "out_of_view_write"]   # omitted: any FAIL reason (never a CRASH unless listed)
//   why       = "contiguous block base: the bug of the vLLM PR thread"   # required
// Scoped declarations sit inside a [[write]]/[[attention]]/[[pipeline]] table
// or one of its named [[*.variants]] as `expected_failure = [{...}]` (or
// [[pipeline.variants.expected_failure]]): they cover that table's (variant's)
// cases, narrowed by an optional `filter`, so that a fixture flipped to the
// fixed kernel in that row shows up as XPASS.
// Strict: every case the declaration covers must show a failure it allows,
// else that case is XPASS and fails the run; failures it does not allow stay
// unexpected. A harness failure (component "harness") is never expected.
#pragma once
#include <string>
#include <vector>

#include "case.h"
#include "filter.h"
#include "keys.h"

namespace kvh {

struct ExpectedFailure {
  std::string filter;                // filter expression (cases/filter.h); "" = by ids only
  std::vector<std::string> ids;      // exact case ids
  std::string component;             // "writer" | "reader" | "router" | "" (any kernel component)
  std::vector<std::string> reasons;  // reason classes allowed; empty: any FAIL reason
  std::string why;                   // the bug, in words
  std::string source;                // "file:line" of the declaration
  std::string scope_file;            // a case file's top-level declaration: covers that file's cases only
  std::string scope_source;          // scoped: the "file:line" of the table whose cases it covers
  std::string scope_variant;         // scoped to a variant: its name; "" = every variant of the table

  /// True when the declaration covers case c: scoped, a case of its table (and
  /// variant) that its filter (if any) matches; else by filter or by id.
  bool covers(const Case& c) const;
  /// True when a failure of `component` with `reason` (crash: a CRASH) is one it allows.
  bool allows(const std::string& component, const std::string& reason, bool crash) const;

 private:
  mutable std::vector<Filter> compiled_;  // filter, parsed once
};

/// Reason classes a declaration may name, and components.
const std::vector<std::string>& expectable_reasons();
const std::vector<std::string>& expectable_components();

/// Loads a known-failures file ([[known_failure]] tables). Throws
/// CaseFileError naming the file, line and field for anything malformed.
std::vector<ExpectedFailure> load_known_failures(const std::string& path);
/// The same, from TOML text; `name` stands for the file name in errors, `read` as in parse_case_file_text.
std::vector<ExpectedFailure> parse_known_failures_text(const std::string& text, const std::string& name,
                                                       KeysRead* read = nullptr);

}  // namespace kvh
