// Case filters: "head_size=256,layout=interleaved|padded,writer!=fixture_*".
// Terms are ANDed; `|` separates alternatives; `*`, `?` and `[...]` are globs.
// Each value is checked against its key's type in the key table (cases/keys.h
// filter_key_spec): an integer key (tp, head_size, seed, ...) takes an integer
// and a number key (softcap) a number, each compared as a number (`tp=08`
// selects tp 8, `softcap=30` selects 30.0); a key with a closed set of values
// takes one of them (target and block_table_padding also their numbered
// spelling, `cus=N`, `num_blocks+K`). Anything else is a FilterError, so that
// a typo is an error, never an empty selection. Two exceptions are matched as
// text, unchecked: a glob, against the value as case_field() spells it
// (`head_size=1*` selects 128 and 192, `softcap=30*` selects 30.0), and the
// empty value, which selects the cases the key does not apply to (`target=`:
// the cases without a router).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "case.h"

namespace kvh {

/// Bad filter text; what() names the term and the known keys.
struct FilterError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

class Filter {
 public:
  /// Throws FilterError for a term without '=', an unknown key, or a value that is
  /// not of the key's type (the error names the term, the key, its type and range).
  explicit Filter(const std::string& expr = "");
  bool matches(const Case& c) const;
  /// The same match on a case given as key -> value strings, e.g. an entry
  /// of results.json (`kvharness compare --filter`). Values must be spelled as
  /// case_field() spells them; a key the map lacks reads as "" (a key that
  /// does not apply to the case).
  bool matches(const std::map<std::string, std::string>& fields) const;
  /// The keys a term may name, in the order errors list them: the filter
  /// column of the key table (cases/keys.h filter_keys()).
  static const std::vector<std::string>& keys();

 private:
  // One alternative of a term, and how it compares with a field's value.
  struct Alternative {
    enum class Kind { Text, Glob, Integer, Number, Numbered } kind = Kind::Text;
    std::string text;     // as written
    int64_t integer = 0;  // Integer, Numbered: the value's integer
    double number = 0;    // Number
    bool matches(const std::string& value, const std::string& numbered) const;
  };
  struct Term {
    std::string key;
    bool negate;
    std::vector<Alternative> alternatives;
    std::string numbered;  // the key's numbered spelling (keys.h), for Numbered alternatives
  };
  bool matches_by(const std::function<std::string(const std::string&)>& field) const;
  std::vector<Term> terms_;
};

/// The value of filter key `key` for a case ("" if it does not apply).
std::string case_field(const Case& c, const std::string& key);

}  // namespace kvh
