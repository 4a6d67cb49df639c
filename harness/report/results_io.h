// One case of results.json both ways: what the report writes, what --isolate's
// worker sends its parent, what --resume and `kvharness merge` read back.
#pragma once
#include <nlohmann/json.hpp>

#include <vector>

#include "check/verdict.h"

namespace kvh {

/// A case's entry of results.json's "cases" array (schema kvharness.results/1,
/// DESIGN.md contract): every field of results_fields() (results_fields.h),
/// the case's, its verdict and causes, errors, timings, phases and repro line.
nlohmann::json case_result_json(const CaseResult& cr);

/// Reads an entry written by case_result_json back, through the same field
/// table (the case fields, then the result fields). With `c`, the case is
/// that one (the caller matched it by id): the entry must have that id, and
/// each of its case fields must be c's. Without, the case is rebuilt from the
/// entry's own fields and must give the entry's id back. Throws
/// std::runtime_error naming the field (and the id) when the entry lacks a
/// field, has one of the wrong type or value, differs from `c` (naming both
/// values), or rebuilds to another id.
CaseResult case_result_from_json(const nlohmann::json& entry, const Case* c = nullptr);

/// Checks the result fields `names` (verdict, reason, ...) that `entry` has,
/// each as case_result_from_json reads it: for a reader that uses entries
/// only in part (`kvharness compare`), so that it refuses what
/// case_result_from_json refuses there. Throws std::runtime_error naming the
/// entry's id and the field; std::logic_error for a name that is not a
/// result field of results_fields().
void check_result_fields(const nlohmann::json& entry, const std::vector<const char*>& names);

/// Status from its results.json spelling ("PASS", "CRASH", ...); throws
/// std::runtime_error naming the unknown verdict.
Status parse_status(const std::string& s);

}  // namespace kvh
