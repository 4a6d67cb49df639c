// Case filters: "head_size=256,layout=interleaved|padded,writer!=fixture_*".
// Terms are ANDed; `|` separates alternatives; `*` and `?` are globs.
#pragma once
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
  /// Throws FilterError for a term without '=' or an unknown key.
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
  struct Term {
    std::string key;
    bool negate;
    std::vector<std::string> alternatives;
  };
  bool matches_by(const std::function<std::string(const std::string&)>& field) const;
  std::vector<Term> terms_;
};

/// The value of filter key `key` for a case ("" if it does not apply).
std::string case_field(const Case& c, const std::string& key);

}  // namespace kvh
