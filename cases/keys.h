// The case-file keys, one table (issue 19): for each key, the tables that
// accept it, its TOML type, default, allowed values or range, meaning, and the
// filter key it feeds. The loader (case_file.cpp) takes from it the keys each
// table accepts, the closed sets of values and the integer bounds it checks;
// the filter language (filter.cpp) its keys and their known values;
// `kvharness info --keys` prints it, and docs/case-file-keys.md is that output.
// A new key goes here first: the loader refuses to read a key this table does
// not list (std::logic_error), and keys_test.cpp fails on a key listed here
// that the loader never reads.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kvh {

/// A table a key may sit in.
enum class KeyTable {
  TopLevel,               ///< a case file's top level
  Model,                  ///< [[model]]
  Write,                  ///< [[write]]
  Attention,              ///< [[attention]]
  Pipeline,               ///< [[pipeline]]
  Variants,               ///< [[attention.variants]], [[pipeline.variants]]
  RouteRule,              ///< an entry of `expect_routed_to = [{...}]`
  ExpectedFailure,        ///< a case file's top-level [[expected_failure]]
  ScopedExpectedFailure,  ///< `expected_failure` inside a [[write]], [[attention]], [[pipeline]] or variant
  KnownFailuresTopLevel,  ///< a --known-failures file's top level
  KnownFailure,           ///< [[known_failure]] of a --known-failures file
};
/// Every KeyTable, in declaration order.
const std::vector<KeyTable>& all_key_tables();
/// How the documentation names table `t`: "top level", "[[write]]", "[[*.variants]]", ...
const char* to_string(KeyTable t);
/// The set {t} as a CaseKey::tables mask.
constexpr uint32_t key_table_bit(KeyTable t) { return 1u << unsigned(t); }

/// The TOML type of a key's value. The *Axis types take one value or a
/// non-empty array of them; Derived: a field of the case that no file sets.
enum class KeyType {
  String, Strings, Integer, Integers, IntegerPair, IntegerLists, Boolean,
  IntegerAxis, BooleanAxis, FloatAxis, QueryLensAxis, Tables, StringOrTables, Derived,
};
/// "string", "array of strings", "integer or array of integers", ...
const char* to_string(KeyType t);

/// Inclusive bounds of a numeric key (of each element of an array); unset when lo > hi.
struct KeyRange {
  int64_t lo = 0, hi = -1;
  bool set() const { return lo <= hi; }
};

/// One row of the table: one key with one meaning in a set of tables.
/// A name may have several rows (`head_sizes` of a table and of a route
/// rule), never two in the same table.
struct CaseKey {
  std::string name;                 ///< as a file spells it (a filter-only row: the filter key)
  uint32_t tables = 0;              ///< key_table_bit of each table that accepts it; 0: a filter key only
  KeyType type = KeyType::String;
  std::string default_value;        ///< in words: "1", "[\"normal\"]", "required", "the model's"
  std::vector<std::string> values;  ///< the closed set of values (string keys); empty: open
  KeyRange range;                   ///< the bounds the loader checks (numeric keys); unset: none
  std::string numbered;             ///< a spelling beside `values`: its text but the last character, then an
                                    ///< integer within `range` ("num_blocks+K": "num_blocks+3"); "": none
  std::string values_note;          ///< allowed values in words, where values and range do not say it all
  std::string filter;               ///< the filter key it feeds (cases/filter.h); "": none
  std::string meaning;              ///< one line, in the field's standard terms
  bool ignored = false;             ///< accepted and never read by the loader (the meaning says why)
  KeyType field_type = KeyType::String;  ///< a Derived row: the type of the case field it names (Integer: numbers)

  bool in(KeyTable t) const { return (tables & key_table_bit(t)) != 0; }
  bool filter_only() const { return tables == 0; }
};

/// The table, in documentation order.
const std::vector<CaseKey>& case_keys();
/// The row of key `name` in table `t`. Throws std::logic_error when the table
/// lacks it: the loader reads a key that is not listed here, a bug.
const CaseKey& case_key(KeyTable t, const std::string& name);
/// The keys table `t` accepts, in table order.
std::vector<std::string> keys_of(KeyTable t);
/// The same, sorted: the list an unknown-key error gives.
std::set<std::string> accepted_keys(KeyTable t);

/// The keys a parse looked up, per table, present in the text or not
/// (parse_case_file_text's `read`): how keys_test.cpp holds the loader to the table.
using KeysRead = std::map<KeyTable, std::set<std::string>>;

/// The filter keys, in table order, each once (Filter::keys()).
const std::vector<std::string>& filter_keys();
/// The values filter key `key` can take where they are a closed set (the
/// first row feeding it that has `values`; a boolean's "0" and "1", as
/// results.json booleans read), else empty.
std::vector<std::string> filter_key_values(const std::string& key);

/// How a filter reads the values of a key (FilterKeySpec::type).
enum class FilterType {
  Text,     ///< compared as text: a closed set, a numbered spelling, or open
  Integer,  ///< an integer, compared as a number (`tp=08` selects tp 8)
  Number,   ///< a number, compared as one (`softcap=30` selects 30.0)
};
/// "text", "an integer", "a number".
const char* to_string(FilterType t);

/// What a filter value of a filter key must be, from the rows that feed it.
struct FilterKeySpec {
  FilterType type = FilterType::Text;  ///< from the first row's KeyType (a Derived row's field_type)
  std::vector<std::string> values;     ///< Text: the closed set (filter_key_values); empty: open
  std::string numbered;                ///< Text: a spelling beside values (CaseKey::numbered); "": none
  KeyRange range;                      ///< Integer, Number, numbered: the hull of the rows' ranges; unset: none
};
/// The spec of filter key `key` (one of filter_keys()). Throws std::logic_error for another key.
FilterKeySpec filter_key_spec(const std::string& key);
/// The filter type of row `k` (the type its values have in a case): Integer for the integer
/// KeyTypes, Number for FloatAxis, a Derived row's field_type's, else Text.
FilterType filter_type_of(const CaseKey& k);
/// The integer of `v` spelled in numbered form `numbered` ("cus=N": "cus=12" is 12): the form's
/// prefix, then 1 to 18 decimal digits; else nullopt. The range is the caller's to check.
std::optional<int64_t> numbered_value(const std::string& numbered, const std::string& v);

/// `kvharness info --keys`: the table as a Markdown document, byte for byte
/// docs/case-file-keys.md.
std::string case_keys_markdown();

}  // namespace kvh
