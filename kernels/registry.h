// Kernel registry: every kernel the harness can run, by name, whether built in
// or loaded from a provider shared library (kvharness/provider.h).
#pragma once
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kvharness/provider.h"

namespace kvh {

/// A provider could not be loaded: the library or its symbol is missing, its
/// ABI version is unknown, it offers a name already registered, or (Python
/// providers) its module does not import. The commit under test cannot be
/// tested: kvharness exits 125, which `git bisect run` skips.
struct ProviderLoadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Registry {
 public:
  /// The built-in kernels only.
  Registry();
  /// Adds a provider's kernels. Throws ProviderLoadError naming the library
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
