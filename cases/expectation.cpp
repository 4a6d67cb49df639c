#include "expectation.h"

#include <algorithm>

namespace kvh {

const std::vector<std::string>& expectable_reasons() {
  static const std::vector<std::string> r = {"mismatch",  "out_of_view_write", "unwritten_output", "nan_or_inf",
                                             "misroute",  "launch_error",      "crash",            "timeout"};
  return r;
}

const std::vector<std::string>& expectable_components() {
  static const std::vector<std::string> c = {"writer", "reader", "router"};
  return c;
}

bool ExpectedFailure::covers(const Case& c) const {
  auto filter_matches = [&] {
    if (compiled_.empty()) compiled_.emplace_back(filter);
    return compiled_.front().matches(c);
  };
  if (!scope_file.empty() && c.source.rfind(scope_file + ":", 0) != 0) return false;
  if (!scope_source.empty())
    return c.source == scope_source && (scope_variant.empty() || c.variant_name == scope_variant) &&
           (filter.empty() || filter_matches());
  if (std::find(ids.begin(), ids.end(), c.id()) != ids.end()) return true;
  return !filter.empty() && filter_matches();
}

bool ExpectedFailure::allows(const std::string& comp, const std::string& reason, bool crash) const {
  const auto& kernel_components = expectable_components();
  if (std::find(kernel_components.begin(), kernel_components.end(), comp) == kernel_components.end()) return false;
  if (!component.empty() && comp != component) return false;
  if (reasons.empty()) return !crash;  // a CRASH is expected only where a declaration names it
  return std::find(reasons.begin(), reasons.end(), reason) != reasons.end();
}

}  // namespace kvh
