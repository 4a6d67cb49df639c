#include "registry.h"

#include <dlfcn.h>

#include <stdexcept>

extern "C" const kvh_kernel_desc* kvh_builtin_kernels(int32_t* count);

namespace kvh {

void Registry::add_provider(kvh_provider_fn provider, const std::string& origin) {
  int32_t n = 0;
  const kvh_kernel_desc* d = provider(&n);
  for (int32_t i = 0; i < n; ++i) add(d[i], origin);
}

Registry::Registry() { add_provider(kvh_builtin_kernels, "builtin"); }

void Registry::load_provider(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw ProviderLoadError("provider " + path + ": cannot open: " + dlerror());
  auto fn = reinterpret_cast<kvh_provider_fn>(dlsym(h, KVH_PROVIDER_SYMBOL));
  if (!fn) throw ProviderLoadError("provider " + path + ": no symbol " KVH_PROVIDER_SYMBOL);
  try {
    add_provider(fn, path);
  } catch (const std::runtime_error& e) {
    throw ProviderLoadError(e.what());
  }
}

void Registry::add(const kvh_kernel_desc& desc, const std::string& origin) {
  if (desc.abi_version != KVH_ABI_VERSION)
    throw std::runtime_error(origin + ": kernel '" + (desc.name ? desc.name : "?") + "' has ABI version " +
                             std::to_string(desc.abi_version) + ", expected " + std::to_string(KVH_ABI_VERSION));
  if (!desc.name) throw std::runtime_error(origin + ": a kernel has no name");
  if (kernels_.count(desc.name))
    throw std::runtime_error(origin + ": kernel '" + desc.name + "' is already registered by " +
                             kernels_.at(desc.name).second);
  kernels_.emplace(desc.name, std::make_pair(desc, origin));
}

const kvh_kernel_desc* Registry::find(const std::string& name) const {
  auto it = kernels_.find(name);
  return it == kernels_.end() ? nullptr : &it->second.first;
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  for (auto& [n, _] : kernels_) out.push_back(n);
  return out;
}

std::string Registry::origin(const std::string& name) const {
  auto it = kernels_.find(name);
  return it == kernels_.end() ? "" : it->second.second;
}

const char* cache_format_name(int format) {
  switch (format) {
    case KVH_CACHE_NHD: return "flash";
    case KVH_CACHE_PA_V1: return "pa_v1";
    case KVH_CACHE_SHUFFLE: return "shuffle";
  }
  return "?";
}

}  // namespace kvh
