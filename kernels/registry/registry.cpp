#include "registry/registry.h"

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <sstream>

#include "device/device.h"
#include "registry/provider_router.h"
#include "router/router.h"

extern "C" int kvh_builtin_open(const kvh_open_args* args, kvh_provider* out);

#ifndef KVH_PYTHON_BRIDGE_BUILD_PATH
#define KVH_PYTHON_BRIDGE_BUILD_PATH ""
#endif

namespace kvh {

namespace {

// A copy of the growable struct at `p` holding only the fields within its
// struct_size; the rest keep their zero defaults (provider.h's rule).
template <class T> T read_growable(const T* p) {
  T out;
  std::memset(static_cast<void*>(&out), 0, sizeof(T));
  const size_t n = std::min<size_t>(p->struct_size, sizeof(T));
  std::memcpy(static_cast<void*>(&out), p, n);
  out.struct_size = uint32_t(n);
  return out;
}

std::string join(const std::vector<int32_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s;
}

std::string dtype_list(uint32_t mask) {
  std::string s;
  for (int d = 1; d < 32; ++d)
    if (mask & (1u << d)) s += std::string(s.empty() ? "" : ", ") + dtype_name(d);
  return s;
}

// ABI 1 adapters: the context is the provider's own kvh_kernel_desc_v1.
kvh_write_args_v1 to_v1(const kvh_write_args& a) {
  return kvh_write_args_v1{a.key, a.value, a.key_cache, a.value_cache, a.slot_mapping, a.block_size};
}
kvh_attention_args_v1 to_v1(const kvh_attention_args& a) {
  return kvh_attention_args_v1{a.out,        a.query,           a.key_cache, a.value_cache,
                               a.block_tables, a.context_lens,  a.block_size, a.max_context_len,
                               a.scale,      a.k_scale,         a.v_scale,   a.partition_size,
                               a.workspace,  a.workspace_bytes};
}
int v1_write(void* ctx, const kvh_write_args* a, void* stream) {
  const kvh_write_args_v1 b = to_v1(*a);
  return static_cast<const kvh_kernel_desc_v1*>(ctx)->write(&b, stream);
}
int v1_attention(void* ctx, const kvh_attention_args* a, void* stream) {
  const kvh_attention_args_v1 b = to_v1(*a);
  return static_cast<const kvh_kernel_desc_v1*>(ctx)->attention(&b, stream);
}
int v1_workspace(void* ctx, const kvh_attention_args* a, uint64_t* bytes) {
  const kvh_attention_args_v1 b = to_v1(*a);
  *bytes = static_cast<const kvh_kernel_desc_v1*>(ctx)->workspace_bytes(&b);
  return 0;
}

kvh_device_type this_device() {
  const std::string b = device::info().backend;
  return b == "cuda" ? KVH_DEVICE_CUDA : b == "rocm" ? KVH_DEVICE_ROCM : KVH_DEVICE_CPU;
}

std::string executable_dir() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return "";
  std::string p(buf, size_t(n));
  return p.substr(0, p.find_last_of('/'));
}

bool exists(const std::string& p) { return !p.empty() && access(p.c_str(), R_OK) == 0; }

}  // namespace

namespace detail {
uint64_t WorkspaceEntry::operator()(const kvh_attention_args* args) const {
  uint64_t bytes = 0;
  const int rc = fn_(context_, args, &bytes);
  if (rc != 0) {
    const char* m = last_error_ ? last_error_(context_) : nullptr;
    if (rc == KVH_UNSUPPORTED) throw KernelRefused(m && *m ? m : "(no reason given)");
    throw std::runtime_error(std::string("workspace_bytes raised: ") + (m && *m ? m : "(no message)"));
  }
  return bytes;
}

std::vector<kvh_workspace_spec> WorkspacesEntry::operator()(const kvh_attention_args* args) const {
  std::vector<kvh_workspace_spec> specs(KVH_MAX_WORKSPACES);
  std::memset(static_cast<void*>(specs.data()), 0, specs.size() * sizeof(kvh_workspace_spec));
  int32_t count = 0;
  if (const int rc = fn_(context_, args, specs.data(), KVH_MAX_WORKSPACES, &count); rc != 0) {
    const char* m = last_error_ ? last_error_(context_) : nullptr;
    if (rc == KVH_UNSUPPORTED) throw KernelRefused(m && *m ? m : "(no reason given)");
    throw std::runtime_error(std::string("workspaces raised: ") + (m && *m ? m : "(no message)"));
  }
  if (count < 0 || count > KVH_MAX_WORKSPACES)
    throw std::runtime_error("workspaces: count " + std::to_string(count) + " outside 0.." +
                             std::to_string(KVH_MAX_WORKSPACES));
  specs.resize(size_t(count));
  for (int32_t i = 0; i < count; ++i) {
    const kvh_workspace_spec& w = specs[size_t(i)];
    const std::string at = "workspaces: entry " + std::to_string(i);
    if (std::memchr(w.name, 0, sizeof(w.name)) == nullptr) throw std::runtime_error(at + ": name not NUL-terminated");
    if (w.ndim < 1 || w.ndim > KVH_MAX_DIMS)
      throw std::runtime_error(at + " ('" + w.name + "'): ndim " + std::to_string(w.ndim) + " outside 1..6");
    if (w.dtype < KVH_DT_F16 || w.dtype > KVH_DT_I32)
      throw std::runtime_error(at + " ('" + w.name + "'): dtype " + std::to_string(w.dtype) +
                               " is not f16, bf16, i64, f32 or i32");
    for (int d = 0; d < w.ndim; ++d)
      if (w.shape[d] < 0 || w.shape[d] > (int64_t(1) << 40))
        throw std::runtime_error(at + " ('" + w.name + "'): shape[" + std::to_string(d) + "] = " +
                                 std::to_string(w.shape[d]) + " outside 0..2^40");
  }
  return specs;
}
kvh_plan PlanEntry::operator()(const kvh_plan_args* args) const {
  kvh_plan plan;
  std::memset(static_cast<void*>(&plan), 0, sizeof(plan));
  if (const int rc = fn_(context_, args, &plan); rc != 0) {
    const char* m = last_error_ ? last_error_(context_) : nullptr;
    if (rc == KVH_UNSUPPORTED) throw KernelRefused(m && *m ? m : "(no reason given)");
    throw PlannerFailed(std::string("planner raised: ") + (m && *m ? m : "(no message)"));
  }
  if (plan.num_tensors < 0 || plan.num_tensors > KVH_MAX_PLAN_TENSORS)
    throw PlannerFailed("planner: num_tensors " + std::to_string(plan.num_tensors) + " outside 0.." +
                        std::to_string(KVH_MAX_PLAN_TENSORS));
  for (int32_t i = 0; i < plan.num_tensors; ++i) {
    const kvh_workspace_spec& w = plan.specs[i];
    const std::string at = "planner: tensor " + std::to_string(i);
    if (std::memchr(w.name, 0, sizeof(w.name)) == nullptr) throw PlannerFailed(at + ": name not NUL-terminated");
    if (w.ndim < 1 || w.ndim > KVH_MAX_DIMS)
      throw PlannerFailed(at + " ('" + w.name + "'): ndim " + std::to_string(w.ndim) + " outside 1..6");
    if (w.dtype < KVH_DT_F16 || w.dtype > KVH_DT_I32)
      throw PlannerFailed(at + " ('" + w.name + "'): dtype " + std::to_string(w.dtype) +
                          " is not f16, bf16, i64, f32 or i32");
    int64_t n = 1;
    for (int d = 0; d < w.ndim; ++d) {
      if (w.shape[d] < 0 || w.shape[d] > (int64_t(1) << 40))
        throw PlannerFailed(at + " ('" + w.name + "'): shape[" + std::to_string(d) + "] = " +
                            std::to_string(w.shape[d]) + " outside 0..2^40");
      n = w.shape[d] == 0 ? 0 : (n > (int64_t(1) << 40) / w.shape[d] ? (int64_t(1) << 40) : n * w.shape[d]);
    }
    if (n > 0 && !plan.data[i]) throw PlannerFailed(at + " ('" + w.name + "'): data is null");
  }
  return plan;
}
}  // namespace detail

std::string Kernel::last_error() const {
  const char* m = last_error_fn ? last_error_fn(context) : nullptr;
  return m && *m ? m : "the provider failed without a message";
}

std::string Kernel::label() const { return substitute.empty() ? name : name + " (replaced by " + substitute + ")"; }

std::string Kernel::outside_capabilities(const KernelUse& u) const {
  const Capabilities& c = caps;
  const std::string name = label();  // the declaration that applies is the substitute's
  if (!(c.cache_formats & (1u << u.cache_format)))
    return name + " declares cache format " + cache_format_name(cache_format) + "; this case needs " +
           cache_format_name(u.cache_format);
  if (!(c.dtypes & (1u << u.dtype)))
    return name + " declares dtype " + dtype_list(c.dtypes) + " only; this case has " + dtype_name(u.dtype);
  if (c.head_sizes.empty() ? role == KVH_ROLE_READER && (u.head_size % 8 != 0 || u.head_size > 256)
                           : std::find(c.head_sizes.begin(), c.head_sizes.end(), u.head_size) == c.head_sizes.end())
    return name + " declares head_size " + (c.head_sizes.empty() ? "multiples of 8 up to 256" : join(c.head_sizes)) +
           " only; this case has head_size " + std::to_string(u.head_size);
  if (!c.block_sizes.empty() &&
      std::find(c.block_sizes.begin(), c.block_sizes.end(), u.block_size) == c.block_sizes.end())
    return name + " declares block_size " + join(c.block_sizes) + " only; this case has block_size " +
           std::to_string(u.block_size);
  if (u.cache_dtype != 0 && u.cache_dtype != u.dtype && !(c.cache_dtypes & (1u << u.cache_dtype)))
    return name + " declares cache dtype " + (c.cache_dtypes ? dtype_list(c.cache_dtypes) : dtype_name(u.dtype)) +
           " only; this case has a " + dtype_name(u.cache_dtype) + " cache";
  if (u.kv_scales != KVH_SCALES_NONE && !(c.kv_scales & (1u << u.kv_scales)))
    return name + " does not declare kv_scales " + scales_name(u.kv_scales) + "; this case has them";
  if (c.max_gqa_ratio > 0 && u.num_kv_heads > 0 && u.num_heads / u.num_kv_heads > c.max_gqa_ratio)
    return name + " declares a GQA ratio of at most " + std::to_string(c.max_gqa_ratio) + "; this case has " +
           std::to_string(u.num_heads / u.num_kv_heads);
  if (u.max_query_len > c.max_query_len)
    return name + (c.max_query_len == 1 ? std::string(" is a decode-only reader (max_query_len 1)")
                                        : " declares max_query_len " + std::to_string(c.max_query_len)) +
           "; this case has up to " + std::to_string(u.max_query_len) + " query tokens per sequence";
  if (const uint32_t missing = u.modifiers & ~c.modifiers) {
    std::string names;
    for (const auto& [bit, n] : {std::pair{KVH_MOD_SLIDING_WINDOW, "sliding_window"}, std::pair{KVH_MOD_SINKS, "sinks"},
                                 std::pair{KVH_MOD_SOFTCAP, "softcap"}, std::pair{KVH_MOD_ALIBI, "alibi"},
                                 std::pair{KVH_MOD_NON_CAUSAL, "causal = false"}})
      if (missing & uint32_t(bit)) names += (names.empty() ? "" : ", ") + std::string(n);
    return name + " declares no support for score modifier(s) " + names + "; this case uses them";
  }
  return "";
}

// "8..640 by 8" for an arithmetic run of four or more values (MLA readers declare 80 head sizes),
// else the values joined.
std::string compact_list(const std::vector<int32_t>& v) {
  bool run = v.size() >= 4 && v[1] > v[0];
  for (size_t i = 2; run && i < v.size(); ++i) run = v[i] - v[i - 1] == v[1] - v[0];
  if (!run) return join(v);
  return std::to_string(v.front()) + ".." + std::to_string(v.back()) + " by " + std::to_string(v[1] - v[0]);
}

std::string Kernel::capability_summary() const {
  const Capabilities& c = caps;
  std::string s = dtype_list(c.dtypes);
  s += "; head_size " + (!c.head_sizes.empty()       ? compact_list(c.head_sizes)
                         : role == KVH_ROLE_READER ? std::string("multiples of 8 up to 256")
                                                   : std::string("any"));
  s += "; block_size " + (c.block_sizes.empty() ? std::string("any") : join(c.block_sizes));
  if (const uint32_t other = c.cache_formats & ~(1u << cache_format)) {
    std::string names;
    for (int f = 0; f < 32; ++f)
      if (other & (1u << f)) names += std::string(names.empty() ? "" : ", ") + cache_format_name(f);
    s += "; also cache format " + names;
  }
  if (c.cache_dtypes & ~c.dtypes) s += "; cache " + dtype_list(c.cache_dtypes & ~c.dtypes);
  if (const uint32_t g = c.kv_scales & ~(1u << KVH_SCALES_NONE)) {
    std::string names;
    for (int i = 1; i < 32; ++i)
      if (g & (1u << i)) names += std::string(names.empty() ? "" : ", ") + scales_name(i);
    s += "; kv_scales " + names;
  }
  if (c.max_gqa_ratio > 0) s += "; gqa <= " + std::to_string(c.max_gqa_ratio);
  if (role == KVH_ROLE_READER && c.max_query_len > 1)
    s += c.max_query_len == INT32_MAX ? "; query_len any" : "; query_len <= " + std::to_string(c.max_query_len);
  if (c.modifiers) {
    std::string names;
    for (const auto& [bit, n] : {std::pair{KVH_MOD_SLIDING_WINDOW, "sliding_window"}, std::pair{KVH_MOD_SINKS, "sinks"},
                                 std::pair{KVH_MOD_SOFTCAP, "softcap"}, std::pair{KVH_MOD_ALIBI, "alibi"},
                                 std::pair{KVH_MOD_NON_CAUSAL, "non_causal"}})
      if (c.modifiers & uint32_t(bit)) names += (names.empty() ? "" : ", ") + std::string(n);
    s += "; modifiers " + names;
  }
  return s;
}

struct Registry::Opened {
  void (*close)(void*) = nullptr;
  void* context = nullptr;
  ~Opened() {
    if (close) close(context);
  }
};

namespace {
std::vector<std::pair<const kvh_kernel_desc* (*)(int32_t*), std::string>>& builtin_extensions() {
  static std::vector<std::pair<const kvh_kernel_desc* (*)(int32_t*), std::string>> v;
  return v;
}
}  // namespace

void register_builtin_extension(const kvh_kernel_desc* (*list)(int32_t* count), const std::string& origin) {
  builtin_extensions().emplace_back(list, origin);
}

Registry::Registry() {
  add_provider(kvh_builtin_open, "", "builtin");
  for (const auto& [list, origin] : builtin_extensions()) add_provider(list, origin);
}
Registry::Registry(NoBuiltins) {}
Registry::~Registry() = default;
Registry::Registry(Registry&&) noexcept = default;
Registry& Registry::operator=(Registry&&) noexcept = default;

void Registry::add_provider(kvh_provider_open_fn open, const std::string& config, const std::string& origin) {
  char error[4096] = {0};
  kvh_open_args args{};
  args.device_type = this_device();
  args.config = config.c_str();
  args.error = error;
  args.error_size = sizeof(error);
  kvh_provider p{};
  int rc = 0;
  try {
    rc = open(&args, &p);
  } catch (...) {  // in-process entry points only; a library must not throw
    throw ProviderLoadError(origin + ": kvh_provider_open threw");
  }
  if (rc != 0)
    throw ProviderLoadError(origin + ": " + (error[0] ? std::string(error, strnlen(error, sizeof(error)))
                                                      : "open failed (code " + std::to_string(rc) + ")"));
  if (p.close) {
    opened_.push_back(std::make_unique<Opened>());
    opened_.back()->close = p.close;
    opened_.back()->context = p.provider_context;
  }
  if (p.num_kernels > 0 && !p.kernels) throw ProviderLoadError(origin + ": num_kernels > 0 but no kernels");
  const size_t stride = p.num_kernels > 0 ? p.kernels[0].struct_size : 0;
  if (p.num_kernels > 0 && stride < offsetof(kvh_kernel_desc, name) + sizeof(const char*))
    throw ProviderLoadError(origin + ": kernel descriptors with struct_size " + std::to_string(stride));
  for (int32_t i = 0; i < p.num_kernels; ++i)
    add(*reinterpret_cast<const kvh_kernel_desc*>(reinterpret_cast<const char*>(p.kernels) + i * stride), origin);
}

void Registry::add_provider(const kvh_kernel_desc* (*list)(int32_t* count), const std::string& origin) {
  int32_t n = 0;
  const kvh_kernel_desc* d = list(&n);
  for (int32_t i = 0; i < n; ++i) add(d[i], origin);
}

void Registry::add_provider_v1(kvh_provider_fn_v1 provider, const std::string& origin) {
  int32_t n = 0;
  const kvh_kernel_desc_v1* d = provider(&n);
  for (int32_t i = 0; i < n; ++i) {
    const kvh_kernel_desc_v1& v = d[i];
    if (v.abi_version != 1)
      throw ProviderLoadError(origin + ": kernel '" + (v.name ? v.name : "?") + "' has ABI version " +
                              std::to_string(v.abi_version) + " in an ABI 1 list (" KVH_PROVIDER_SYMBOL_V1 ")");
    kvh_capabilities caps{};
    caps.head_sizes = v.head_sizes;
    caps.num_head_sizes = v.num_head_sizes;
    kvh_kernel_desc k{};
    k.abi_version = 1;
    k.name = v.name;
    k.description = v.description;
    k.role = v.role;
    k.cache_format = v.cache_format;
    k.fixture = v.fixture;
    k.context = const_cast<kvh_kernel_desc_v1*>(&v);
    k.write = v.write ? v1_write : nullptr;
    k.attention = v.attention ? v1_attention : nullptr;
    k.workspace_bytes = v.workspace_bytes ? v1_workspace : nullptr;
    k.capabilities = &caps;
    add(k, origin);
  }
}

Registry::RouterPolicies& Registry::RouterPolicies::operator=(RouterPolicies&& o) noexcept {
  if (this != &o) {
    for (const auto& r : list) routing::remove_policy(r.name);
    list = std::move(o.list);
    o.list.clear();
  }
  return *this;
}

Registry::RouterPolicies::~RouterPolicies() {
  for (const auto& r : list) routing::remove_policy(r.name);
}

void Registry::add_router(const kvh_kernel_desc& d, const std::string& origin) {
  const std::string name = d.name;
  if (!KVH_HAS_FIELD(&d, kvh_kernel_desc, route) || !d.route)
    throw ProviderLoadError(origin + ": router '" + name + "' has no route entry (kvh_kernel_desc.route, kvharness 0.5)");
  if (kernels_.count(name))
    throw ProviderLoadError(origin + ": router '" + name + "': a kernel of that name is registered by " +
                            kernels_.at(name).origin);
  if (d.fixture && name.find("fixture") == std::string::npos && name.rfind("planted_", 0) != 0)
    throw ProviderLoadError(origin + ": router '" + name + "' is flagged fixture (known-bad on purpose), so its " +
                            "name must contain 'fixture' (test routers: 'planted_')");
  try {
    routing::add_policy(name, provider_rule(name, d.route, d.context, d.last_error), d.fixture != 0);
  } catch (const std::invalid_argument&) {
    throw ProviderLoadError(origin + ": router '" + name + "': a routing policy of that name exists already " +
                            "(`kvharness info` lists them)");
  }
  routers_.list.push_back(Router{name, d.description ? d.description : "", origin, d.fixture != 0});
}

// ---- issue 23 (D): launch configurations ----
std::vector<std::pair<std::string, std::string>> parse_launch_params(const std::string& params) {
  std::vector<std::pair<std::string, std::string>> out;
  if (params.empty()) return out;
  size_t start = 0;
  while (true) {
    const size_t comma = params.find(',', start);
    const std::string pair = params.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t eq = pair.find('=');
    const std::string key = pair.substr(0, eq), value = eq == std::string::npos ? "" : pair.substr(eq + 1);
    const bool key_ok = !key.empty() && !std::isdigit(static_cast<unsigned char>(key[0])) &&
                        std::all_of(key.begin(), key.end(), [](char ch) {
                          return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_';
                        });
    if (eq == std::string::npos || !key_ok || value.empty())
      throw std::invalid_argument("launch parameter '" + pair + "': expected KEY=VALUE with KEY [A-Za-z_][A-Za-z0-9_]* "
                                  "and a non-empty VALUE (pairs joined by ',')");
    for (const auto& [k, _] : out)
      if (k == key) throw std::invalid_argument("launch parameter '" + key + "' given twice");
    out.emplace_back(key, value);
    if (comma == std::string::npos) return out;
    start = comma + 1;
  }
}

namespace {
// The descriptor's launch configurations, checked: names [A-Za-z0-9_.-]{1,64} and unique, params
// well-formed. Throws ProviderLoadError naming the kernel and the entry.
std::vector<LaunchConfig> read_launch_configs(const kvh_kernel_desc& d, const std::string& origin) {
  std::vector<LaunchConfig> out;
  const std::string at = origin + ": kernel '" + d.name + "': ";
  if (d.num_launch_configs < 0 || (d.num_launch_configs > 0 && !d.launch_configs))
    throw ProviderLoadError(at + "num_launch_configs " + std::to_string(d.num_launch_configs) +
                            " without a launch_configs array");
  for (int32_t i = 0; i < d.num_launch_configs; ++i) {
    const kvh_launch_config& c = d.launch_configs[i];
    const std::string name = c.name ? c.name : "";
    const bool name_ok = !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' || ch == '-';
    });
    if (!name_ok)
      throw ProviderLoadError(at + "launch_configs[" + std::to_string(i) + "] name '" + name +
                              "': expected 1..64 characters of [A-Za-z0-9_.-]");
    for (const auto& o : out)
      if (o.name == name) throw ProviderLoadError(at + "launch configuration '" + name + "' declared twice");
    LaunchConfig lc{name, c.params ? c.params : ""};
    try {
      parse_launch_params(lc.params);
    } catch (const std::invalid_argument& e) {
      throw ProviderLoadError(at + "launch configuration '" + name + "': " + e.what());
    }
    out.push_back(std::move(lc));
  }
  return out;
}
}  // namespace

const LaunchConfig* Kernel::launch_config(const std::string& config) const {
  for (const auto& c : launch_configs)
    if (c.name == config) return &c;
  return nullptr;
}
// ---- end issue 23 (D) ----

void Registry::add(const kvh_kernel_desc& raw, const std::string& origin) {
  const kvh_kernel_desc d = read_growable(&raw);
  if (d.abi_version != 1 && d.abi_version != KVH_ABI_VERSION)
    throw ProviderLoadError(origin + ": kernel '" + (d.name ? d.name : "?") + "' has ABI version " +
                            std::to_string(d.abi_version) + ", expected 1 or " + std::to_string(KVH_ABI_VERSION));
  if (!d.name || !*d.name) throw ProviderLoadError(origin + ": a kernel has no name");
  if (kernels_.count(d.name))
    throw ProviderLoadError(origin + ": kernel '" + d.name + "' is already registered by " +
                            kernels_.at(d.name).origin);
  for (const auto& r : routers_.list)
    if (r.name == d.name) throw ProviderLoadError(origin + ": '" + r.name + "' is already a router of " + r.origin);
  if (d.role != KVH_ROLE_WRITER && d.role != KVH_ROLE_READER && d.role != KVH_ROLE_ROUTER)
    throw ProviderLoadError(origin + ": kernel '" + d.name + "' has role " + std::to_string(d.role));
  if (d.role == KVH_ROLE_ROUTER) return add_router(d, origin);
  if (d.cache_format < KVH_CACHE_NHD || d.cache_format > KVH_CACHE_MLA)
    throw ProviderLoadError(origin + ": kernel '" + d.name + "' has cache format " + std::to_string(d.cache_format));
  if ((d.role == KVH_ROLE_WRITER && !d.write) || (d.role == KVH_ROLE_READER && !d.attention))
    throw ProviderLoadError(origin + ": kernel '" + d.name + "' has no entry point for its role");
  // A fixture's own wrong output is expected (harness/check/expectations.h): a production kernel flagged by
  // mistake would exempt itself. The name must show it in every report and filter.
  const std::string name = d.name;
  if (d.fixture && name.find("fixture") == std::string::npos && name.rfind("planted_", 0) != 0)
    throw ProviderLoadError(origin + ": kernel '" + name + "' is flagged fixture (known-bad on purpose), so its " +
                            "name must contain 'fixture' (e.g. 'fixture_" + name + "'; test kernels: 'planted_')");
  Kernel k;
  k.name = d.name;
  k.description = d.description ? d.description : "";
  k.origin = origin;
  k.role = d.role;
  k.cache_format = d.cache_format;
  k.fixture = d.fixture != 0;
  k.abi_version = int32_t(d.abi_version);
  k.context = d.context;
  k.last_error_fn = d.last_error;
  if (d.write) k.write = detail::Entry<kvh_write_args>(d.write, d.context);
  if (d.attention) k.attention = detail::Entry<kvh_attention_args>(d.attention, d.context);
  if (d.workspace_bytes) k.workspace_bytes = detail::WorkspaceEntry(d.workspace_bytes, d.context, d.last_error);
  if (KVH_HAS_FIELD(&d, kvh_kernel_desc, workspaces) && d.workspaces)
    k.workspaces = detail::WorkspacesEntry(d.workspaces, d.context, d.last_error);
  if (KVH_HAS_FIELD(&d, kvh_kernel_desc, time) && d.time) k.time = detail::TimeEntry(d.time, d.context);
  if (KVH_HAS_FIELD(&d, kvh_kernel_desc, plan) && d.plan && d.role == KVH_ROLE_READER)
    k.plan = detail::PlanEntry(d.plan, d.context, d.last_error);
  if (d.capabilities) {
    const kvh_capabilities c = read_growable(d.capabilities);
    if (c.num_head_sizes > 0 && c.head_sizes) k.caps.head_sizes.assign(c.head_sizes, c.head_sizes + c.num_head_sizes);
    if (c.num_block_sizes > 0 && c.block_sizes)
      k.caps.block_sizes.assign(c.block_sizes, c.block_sizes + c.num_block_sizes);
    k.caps.dtypes = c.dtypes;
    k.caps.cache_formats = c.cache_formats;
    k.caps.max_gqa_ratio = c.max_gqa_ratio;
    if (KVH_HAS_FIELD(&c, kvh_capabilities, kv_scales)) {
      k.caps.cache_dtypes = c.cache_dtypes;
      k.caps.kv_scales = c.kv_scales;
    }
    k.caps.modifiers = c.modifiers;
    if (KVH_HAS_FIELD(&c, kvh_capabilities, max_query_len)) k.caps.max_query_len = std::max(c.max_query_len, 1);
  }
  if (!k.caps.dtypes) k.caps.dtypes = (1u << KVH_DT_F16) | (1u << KVH_DT_BF16);
  k.caps.cache_formats |= 1u << d.cache_format;
  if (KVH_HAS_FIELD(&d, kvh_kernel_desc, launch_configs)) k.launch_configs = read_launch_configs(d, origin);
  kernels_.emplace(k.name, std::move(k));
}

void Registry::load_provider(const std::string& spec) {
  std::string path = spec, config, origin = spec;
  if (spec.rfind("python:", 0) == 0) {
    config = spec.substr(7);
    if (config.empty()) throw ProviderLoadError("--provider python:MODULE: no module named");
    path = find_python_bridge();
  } else if (const size_t q = spec.find('?'); q != std::string::npos) {
    path = spec.substr(0, q);
    config = spec.substr(q + 1);
  }
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) throw ProviderLoadError("provider " + path + ": cannot open: " + dlerror());
  if (auto open = reinterpret_cast<kvh_provider_open_fn>(dlsym(h, KVH_PROVIDER_OPEN_SYMBOL)))
    return add_provider(open, config, origin);
  if (auto v1 = reinterpret_cast<kvh_provider_fn_v1>(dlsym(h, KVH_PROVIDER_SYMBOL_V1))) {
    if (!config.empty())
      throw ProviderLoadError("provider " + path + ": an ABI 1 provider takes no configuration ('" + config + "')");
    return add_provider_v1(v1, origin);
  }
  throw ProviderLoadError("provider " + path + ": exports neither " KVH_PROVIDER_OPEN_SYMBOL
                          " (ABI 2) nor " KVH_PROVIDER_SYMBOL_V1 " (ABI 1)");
}

void Registry::replace(const std::string& real, const std::string& with) {
  auto r = kernels_.find(real);
  auto w = kernels_.find(with);
  if (r == kernels_.end() || w == kernels_.end())
    throw std::invalid_argument("--replace-kernel " + real + "=" + with + ": no kernel named '" +
                                (r == kernels_.end() ? real : with) + "' is registered (kvharness info lists them)");
  if (r->second.role != w->second.role || r->second.cache_format != w->second.cache_format)
    throw std::invalid_argument("--replace-kernel " + real + "=" + with + ": " + with + " is a " +
                                cache_format_name(w->second.cache_format) +
                                (w->second.role == KVH_ROLE_WRITER ? " writer" : " reader") + ", " + real + " a " +
                                cache_format_name(r->second.cache_format) +
                                (r->second.role == KVH_ROLE_WRITER ? " writer" : " reader"));
  Kernel k = w->second;
  k.name = real;
  k.fixture = r->second.fixture && w->second.fixture;  // a failure is expected only if both are kept to fail
  k.description = with + " in place of " + real + ": " + w->second.description;
  k.origin = w->second.origin + " (replacing " + r->second.origin + ")";
  k.substitute = w->second.origin == "builtin" ? with : w->second.origin + ":" + with;
  k.launch_configs = r->second.launch_configs;  // issue 23 (D): REAL's cases, ids and configurations stay
  r->second = std::move(k);
}

const Kernel* Registry::find(const std::string& name) const {
  auto it = kernels_.find(name);
  return it == kernels_.end() ? nullptr : &it->second;
}

std::vector<std::string> Registry::names() const {
  std::vector<std::string> out;
  for (auto& [n, _] : kernels_) out.push_back(n);
  return out;
}

std::string Registry::origin(const std::string& name) const {
  auto it = kernels_.find(name);
  return it == kernels_.end() ? "" : it->second.origin;
}

std::string find_python_bridge() {
  std::vector<std::string> tried;
  if (const char* env = std::getenv("KVH_PYTHON_BRIDGE"); env && *env) {
    if (exists(env)) return env;
    throw ProviderLoadError(std::string("$KVH_PYTHON_BRIDGE=") + env + ": no such readable file");
  }
  const std::string next = executable_dir() + "/libkvh_python.so";
  if (exists(next)) return next;
  tried.push_back(next);
  // `cmake --install` layout: PREFIX/bin/kvharness, PREFIX/lib/kvharness/libkvh_python.so.
  const std::string installed = executable_dir() + "/../lib/kvharness/libkvh_python.so";
  if (exists(installed)) return installed;
  tried.push_back(installed);
  const std::string built = KVH_PYTHON_BRIDGE_BUILD_PATH;
  if (exists(built)) return built;
  if (!built.empty()) tried.push_back(built);
  std::string msg = "the Python bridge libkvh_python.so was not found (tried: ";
  for (size_t i = 0; i < tried.size(); ++i) msg += (i ? ", " : "") + tried[i];
  throw ProviderLoadError(msg + "); build it (providers/python/README.md) or set KVH_PYTHON_BRIDGE");
}

const char* cache_format_name(int format) {
  switch (format) {
    case KVH_CACHE_NHD: return "flash";
    case KVH_CACHE_PA_V1: return "pa_v1";
    case KVH_CACHE_SHUFFLE: return "shuffle";
    case KVH_CACHE_HND: return "hnd";
    case KVH_CACHE_MLA: return "mla";
  }
  return "?";
}

const char* dtype_name(int dtype) {
  switch (dtype) {
    case KVH_DT_F16: return "fp16";
    case KVH_DT_BF16: return "bf16";
    case KVH_DT_I64: return "i64";
    case KVH_DT_F32: return "f32";
    case KVH_DT_I32: return "i32";
    case KVH_DT_FP8_E4M3FN: return "fp8_e4m3fn";
    case KVH_DT_FP8_E4M3FNUZ: return "fp8_e4m3fnuz";
    case KVH_DT_I8: return "int8";
  }
  return "?";
}

const char* scales_name(int granularity) {
  switch (granularity) {
    case KVH_SCALES_NONE: return "none";
    case KVH_SCALES_TENSOR: return "tensor";
    case KVH_SCALES_HEAD: return "head";
    case KVH_SCALES_BLOCK: return "block";
    case KVH_SCALES_TOKEN: return "token";
    case KVH_SCALES_SLOT: return "slot";
  }
  return "?";
}

}  // namespace kvh
