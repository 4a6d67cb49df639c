// The fields of a results.json case entry (schema kvharness.results/1): one
// table that the writer (case_result_json) and the reader
// (case_result_from_json) both walk, so that a field cannot be written and
// not read back, or read and never written. The table also makes
// docs/results-json.md (results_fields_markdown).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "check/verdict.h"

namespace kvh {

/// One field of an entry as its reader sees it: the entry and the field's
/// key, with typed getters. Every error is a std::runtime_error naming the
/// entry's id (when it has one) and the key.
class FieldIn {
 public:
  /// Field `key` of case entry `entry`.
  FieldIn(const nlohmann::json& entry, const char* key) : e_(entry), key_(key), entry_(&entry) {}

  /// Field `key` of `object`, an object inside this field's value: element
  /// `index` of its array, or the value itself when index < 0. Errors name
  /// this entry's id and the place: field "causes[1].reason".
  FieldIn inner(const nlohmann::json& object, const char* key, long index = -1) const;

  /// Whether the entry has the key (null counts as present).
  bool present() const { return e_.contains(key_); }
  /// The value; refuses a missing key.
  const nlohmann::json& value() const;
  /// A string, or "" for null.
  std::string str() const;
  /// true or false.
  bool boolean() const;
  /// A number or null; nullopt when null or missing.
  std::optional<double> opt_num() const;
  /// A count: an integer from 0 to INT64_MAX.
  int64_t count() const;
  /// A string that is one of `names`, which `what` names ("reason"); null
  /// reads as "" where `nullable`. Refuses another string naming all of them.
  std::string name_in(const std::vector<const char*>& names, const char* what, bool nullable) const;

  /// A number, converted to T.
  template <class T>
  T num() const {
    const nlohmann::json& v = value();
    if (!v.is_number()) wrong_type("a number");
    return v.get<T>();
  }

  /// An array of T, or {} when null or missing.
  template <class T>
  std::vector<T> list() const {
    if (!present() || e_.at(key_).is_null()) return {};
    const nlohmann::json& v = e_.at(key_);
    if (!v.is_array()) wrong_type("an array or null");
    try {
      return v.get<std::vector<T>>();
    } catch (const nlohmann::json::exception& x) {
      bad(x.what());
    }
  }

  /// Refuses the entry: "case ID: field "KEY": what" (KEY with its place for an inner field).
  [[noreturn]] void bad(const std::string& what) const;

 private:
  [[noreturn]] void wrong_type(const char* expected) const;
  const nlohmann::json& e_;  // the object holding key_
  const char* key_;
  const nlohmann::json* entry_;  // the case entry, for its id
  std::string place_;            // "" or, for an inner field, where its object is: "causes[1]."
};

/// How a field is read back.
enum class FieldRole {
  Key,      ///< the id: follows from the case, and the case read back (matched or rebuilt) must have it
  Case,     ///< a field of the case: always read; it rebuilds the case, or must be the case's matched by id
  Result,   ///< a field of the case's outcome: always read
  Derived,  ///< follows from the case (shuffle, variant): written, never read
};

/// One row of a field table: the key, how to write it from a record R and
/// how to read it back into one, and what it means.
template <class R>
struct JsonField {
  const char* name;
  FieldRole role;
  bool nullable;  ///< may be null (a field that does not apply, or not measured)
  bool optional;  ///< may be absent (entries of older kvharness versions): the reader is not called, R keeps its default
  nlohmann::json (*write)(const R&);
  void (*read)(const FieldIn&, R&);  ///< nullptr exactly for Key and Derived; runs in table order, so it may use rows above it
  const char* meaning;
};

/// The fields of a case entry, in the order they are read.
using ResultsField = JsonField<CaseResult>;
/// The fields of one object of an entry's "causes" array.
using CauseField = JsonField<Cause>;

/// Every field of a results.json case entry.
const std::vector<ResultsField>& results_fields();
/// Every field of a cause object (the "causes" field's elements).
const std::vector<CauseField>& cause_fields();

/// docs/results-json.md: the tables above as Markdown, one row a field.
std::string results_fields_markdown();

}  // namespace kvh
