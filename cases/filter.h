// Case filters: "head_size=256,layout=interleaved|padded,writer!=fixture_*".
// Terms are ANDed; `|` separates alternatives; `*` and `?` are globs.
#pragma once
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
  static const std::vector<std::string>& keys();

 private:
  struct Term {
    std::string key;
    bool negate;
    std::vector<std::string> alternatives;
  };
  std::vector<Term> terms_;
};

/// The value of filter key `key` for a case ("" if it does not apply).
std::string case_field(const Case& c, const std::string& key);

}  // namespace kvh
