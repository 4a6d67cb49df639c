#include "route_boundaries.h"

#include <stdexcept>

namespace kvh {

namespace {

constexpr std::pair<const char*, int64_t> kTargets[] = {
    {"MI210", 104}, {"MI250X", 110}, {"MI300X", 304}, {"MI325X", 304}, {"MI355X", 256}};

}  // namespace

const std::vector<std::string>& named_targets() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, cus] : kTargets) out.push_back(name);
    return out;
  }();
  return names;
}

std::optional<int64_t> target_compute_units_of(const std::string& target) {
  for (const auto& [name, cus] : kTargets)
    if (target == name) return cus;
  if (target.rfind("cus=", 0) == 0 && target.size() > 4 && target.size() < 12 &&
      target.find_first_not_of("0123456789", 4) == std::string::npos) {
    const int64_t n = std::stoll(target.substr(4));
    if (n >= 1) return n;
  }
  return std::nullopt;
}

std::vector<int64_t> route_boundary_batches(int64_t num_heads, int64_t compute_units) {
  if (num_heads < 1 || compute_units < 1) throw std::invalid_argument("route_boundary_batches: needs positive inputs");
  const int64_t at = 2 * compute_units / num_heads;
  std::vector<int64_t> out;
  for (int64_t b : {at - 1, at, at + 1})
    if (b >= 1) out.push_back(b);
  return out;
}

}  // namespace kvh
