// Kernel registry: every kernel the harness can run, by name, whether built in
// or loaded from a provider shared library (kvharness/provider.h).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "kvharness/provider.h"

namespace kvh {

class Registry {
 public:
  /// The built-in kernels only.
  Registry();
  /// Adds a provider's kernels. Throws std::runtime_error naming the library
  /// when it cannot be opened, lacks KVH_PROVIDER_SYMBOL, has another ABI
  /// version, or offers a name that is already registered.
  void load_provider(const std::string& path);
  void add(const kvh_kernel_desc& desc, const std::string& origin);
  /// Adds every kernel `provider` lists (what load_provider does after dlopen).
  void add_provider(kvh_provider_fn provider, const std::string& origin);
  /// nullptr when no kernel has that name.
  const kvh_kernel_desc* find(const std::string& name) const;
  std::vector<std::string> names() const;
  std::string origin(const std::string& name) const;

 private:
  std::map<std::string, std::pair<kvh_kernel_desc, std::string>> kernels_;
};

/// Name of a cache format as used in case files and reports: flash, pa_v1, shuffle.
const char* cache_format_name(int format);

}  // namespace kvh
