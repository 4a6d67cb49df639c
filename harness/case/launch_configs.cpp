#include "case/launch_configs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "case_file.h"

namespace kvh {

namespace {
// The names `k` declares, for error messages: "a, b" or "none".
std::string declared(const Kernel& k) {
  std::vector<std::string> names;
  for (const auto& lc : k.launch_configs) names.push_back(lc.name);
  return names.empty() ? "none" : fmt::format("{}", fmt::join(names, ", "));
}
}  // namespace

std::vector<Case> expand_launch_configs(const Case& c, const Registry& reg) {
  if (c.launch_configs.empty()) return {c};
  const bool write = c.kind == CaseKind::Write;
  const std::string role = write ? "writer" : "reader";
  const Kernel* k = reg.find(write ? c.writer : c.reader);
  if (!k) return {c};
  const auto fail = [&](const std::string& why) {
    throw CaseFileError(fmt::format("{}: field 'launch_configs': {}", c.launch_configs_source, why));
  };
  if (k->launch_configs.empty())
    fail(fmt::format("{} '{}' declares no launch configuration (it runs its default launch only)", role, k->name));
  std::vector<std::string> names;
  if (c.launch_configs == std::vector<std::string>{"all"})
    for (const auto& lc : k->launch_configs) names.push_back(lc.name);
  else
    names = c.launch_configs;
  std::vector<Case> out;
  for (const auto& name : names) {
    if (!k->launch_config(name))
      fail(fmt::format("{} '{}' declares no launch configuration '{}'; it declares: {}", role, k->name, name,
                       declared(*k)));
    // A table's partition_size is what the reader gets; a configuration that sets its own would
    // run under the table's value with the configuration's name (two names, one launch).
    for (const auto& [key, value] : parse_launch_params(k->launch_config(name)->params))
      if (key == "partition_size" && c.partition_size > 0)
        fail(fmt::format("configuration '{}' of {} '{}' sets partition_size={}, and the table sets "
                         "partition_size = {}: the table's would win; drop one",
                         name, role, k->name, value, c.partition_size));
    Case e = c;
    e.launch_configs.clear();
    e.launch_config = name;
    out.push_back(std::move(e));
  }
  return out;
}

kvh_launch_config launch_config_of(const Case& c, const Kernel& k) {
  if (c.launch_config.empty()) return {nullptr, nullptr};
  const LaunchConfig* lc = k.launch_config(c.launch_config);
  if (!lc) return {nullptr, nullptr};
  return {lc->name.c_str(), lc->params.c_str()};
}

}  // namespace kvh
