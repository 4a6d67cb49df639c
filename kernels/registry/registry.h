// Kernel registry: every kernel the harness can run, by name, whether built in
// or loaded from a provider shared library (kvharness/provider.h, ABI 1 or 2).
// Whatever ABI a kernel came through, the harness sees one representation,
// Kernel, and calls it one way.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kvharness/provider.h"

namespace kvh {

/// A provider could not be loaded: the library does not open, has no entry
/// point, its entry point failed (a Python module that does not import), or
/// it offers a kernel that is malformed or already registered. The build under
/// test is unusable: `kvharness` exits 125 (a bisect skips such a commit).
struct ProviderLoadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A kernel declined a case at call time (KVH_UNSUPPORTED from its workspace_bytes or
/// workspaces function; kvharness.Unsupported in Python): what() is the provider's reason.
/// The case is UNSUPPORTED like one outside the declared capabilities (misroute when routed).
struct KernelRefused : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A reader's planner raised (KVH_RAISED) or built a malformed plan: what() says which; the
/// case is a CRASH of component "planner".
struct PlannerFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A kernel's declared capabilities, owned (kvh_capabilities with defaults applied).
struct Capabilities {
  std::vector<int32_t> head_sizes;   // empty: readers any multiple of 8 up to 256, writers any
  std::vector<int32_t> block_sizes;  // empty: any
  uint32_t dtypes = 0;               // bit (1u << kvh_dtype); 0 never after normalisation
  uint32_t cache_formats = 0;        // bit (1u << kvh_cache_format)
  int32_t max_gqa_ratio = 0;         // 0: any
  uint32_t cache_dtypes = 0;         // bit (1u << kvh_dtype) per cache element type; 0: the K/V dtype only
  uint32_t kv_scales = 0;            // bit (1u << kvh_scale_granularity); NONE is always accepted
  uint32_t modifiers = 0;            // kvh_modifier bits the reader applies; 0: none
  int32_t max_query_len = 1;         // largest query tokens per sequence; 1: decode only
};

// ---- issue 23 (D): launch configurations ----
/// One launch configuration a kernel declares (kvh_launch_config, kvharness 0.7), owned.
/// name: [A-Za-z0-9_.-]{1,64}; params: "KEY=VALUE" pairs joined by ',' ("" = none).
struct LaunchConfig {
  std::string name, params;
};
/// The pairs of `params` in order. Throws std::invalid_argument naming the bad pair when a pair
/// lacks '=', its key is not [A-Za-z_][A-Za-z0-9_]*, its value is empty or a key repeats.
std::vector<std::pair<std::string, std::string>> parse_launch_params(const std::string& params);
// ---- end issue 23 (D) ----

/// What a case asks of a kernel, checked against its Capabilities.
struct KernelUse {
  int64_t head_size = 0, block_size = 0, num_heads = 0, num_kv_heads = 0;
  kvh_dtype dtype = KVH_DT_F16;
  int32_t cache_format = KVH_CACHE_NHD;
  int32_t cache_dtype = 0;                            // kvh_dtype of the cache elements; 0: dtype (16-bit cache)
  kvh_scale_granularity kv_scales = KVH_SCALES_NONE;  // fp8 scale granularity
  uint32_t modifiers = 0;  // kvh_modifier bits the case turns on
  int64_t max_query_len = 1;  // the case's largest query tokens per sequence (1: decode)
};

namespace detail {
/// One entry point of a kernel with its context: callable like the ABI 1
/// function pointer it replaces (`fn(&args, stream)`), false when absent.
template <class Args> class Entry {
 public:
  using Fn = int (*)(void* context, const Args* args, void* stream);
  Entry() = default;
  Entry(Fn fn, void* context) : fn_(fn), context_(context) {}
  explicit operator bool() const { return fn_ != nullptr; }
  /// 0, KVH_RAISED (the provider failed: see Kernel::last_error), KVH_UNSUPPORTED (the kernel
  /// declined the case: last_error is the reason) or the kernel's HIP error code.
  int operator()(const Args* args, void* stream) const { return fn_(context_, args, stream); }

 private:
  Fn fn_ = nullptr;
  void* context_ = nullptr;
};

/// A reader's workspace size query, callable as `fn(&args)`.
class WorkspaceEntry {
 public:
  WorkspaceEntry() = default;
  WorkspaceEntry(kvh_workspace_fn fn, void* context, kvh_last_error_fn last_error)
      : fn_(fn), context_(context), last_error_(last_error) {}
  explicit operator bool() const { return fn_ != nullptr; }
  /// Bytes of workspace for `args`. Throws std::runtime_error with the
  /// provider's message when the provider raised, KernelRefused with its
  /// reason when it returned KVH_UNSUPPORTED.
  uint64_t operator()(const kvh_attention_args* args) const;

 private:
  kvh_workspace_fn fn_ = nullptr;
  void* context_ = nullptr;
  kvh_last_error_fn last_error_ = nullptr;
};

/// A reader's typed workspace query (kvh_workspaces_fn), callable as `fn(&args)`.
class WorkspacesEntry {
 public:
  WorkspacesEntry() = default;
  WorkspacesEntry(kvh_workspaces_fn fn, void* context, kvh_last_error_fn last_error)
      : fn_(fn), context_(context), last_error_(last_error) {}
  explicit operator bool() const { return fn_ != nullptr; }
  /// The workspaces `args` needs. Throws KernelRefused with the provider's reason
  /// when it returned KVH_UNSUPPORTED, std::runtime_error with its message when it raised, or naming the bad entry when a count, ndim,
  /// shape (negative) or dtype is out of range or a name is not NUL-terminated.
  std::vector<kvh_workspace_spec> operator()(const kvh_attention_args* args) const;

 private:
  kvh_workspaces_fn fn_ = nullptr;
  void* context_ = nullptr;
  kvh_last_error_fn last_error_ = nullptr;
};
/// A reader's planner (kvh_plan_fn, kvharness 0.6), callable as `fn(&args)`.
class PlanEntry {
 public:
  PlanEntry() = default;
  PlanEntry(kvh_plan_fn fn, void* context, kvh_last_error_fn last_error)
      : fn_(fn), context_(context), last_error_(last_error) {}
  explicit operator bool() const { return fn_ != nullptr; }
  /// The plan for `args`: its specs checked (count 0..KVH_MAX_PLAN_TENSORS, ndim 1..6, dtype
  /// f16..i32, shapes 0..2^40, NUL-terminated names, data set where a tensor has elements).
  /// Throws KernelRefused with the provider's reason on KVH_UNSUPPORTED, PlannerFailed with
  /// its message when it raised or naming the bad entry.
  kvh_plan operator()(const kvh_plan_args* args) const;

 private:
  kvh_plan_fn fn_ = nullptr;
  void* context_ = nullptr;
  kvh_last_error_fn last_error_ = nullptr;
};
/// A provider's own timing of a call (kvh_time_fn, kvharness 0.5), callable as
/// `fn(args, stream, warmup, reps, &timing)` with args a kvh_write_args* or
/// kvh_attention_args* by role. Returns what the provider returned.
class TimeEntry {
 public:
  TimeEntry() = default;
  TimeEntry(kvh_time_fn fn, void* context) : fn_(fn), context_(context) {}
  explicit operator bool() const { return fn_ != nullptr; }
  int operator()(const void* args, void* stream, int32_t warmup, int32_t reps, kvh_timing* out) const {
    return fn_(context_, args, stream, warmup, reps, out);
  }

 private:
  kvh_time_fn fn_ = nullptr;
  void* context_ = nullptr;
};
}  // namespace detail

/// One kernel as the harness calls it, whatever ABI it came through.
struct Kernel {
  std::string name, description;
  std::string origin;  // "builtin", a library path, or "python:MODULE"
  int32_t role = 0;    // kvh_role
  int32_t cache_format = KVH_CACHE_NHD;
  bool fixture = false;
  int32_t abi_version = KVH_ABI_VERSION;  // what the provider was built against
  Capabilities caps;
  detail::Entry<kvh_write_args> write;          // role == KVH_ROLE_WRITER
  detail::Entry<kvh_attention_args> attention;  // role == KVH_ROLE_READER
  detail::WorkspaceEntry workspace_bytes;       // may be empty (no workspace)
  detail::WorkspacesEntry workspaces;           // typed workspaces; when set, used instead of workspace_bytes
  detail::TimeEntry time;                       // the provider times its calls (kvharness 0.5); may be empty
  detail::PlanEntry plan;                       // the reader's planner (kvharness 0.6); may be empty
  void* context = nullptr;
  kvh_last_error_fn last_error_fn = nullptr;
  std::string substitute;  // --replace-kernel REAL=WITH: "WITH" (a provider's: "python:MOD:WITH"); empty otherwise
  std::vector<LaunchConfig> launch_configs;  // issue 23 (D): declared order; under --replace-kernel REAL's

  /// The provider's message for its last KVH_RAISED (reason of its last KVH_UNSUPPORTED), or a generic one.
  std::string last_error() const;
  /// The name verdicts and reports give the kernel: `name`, or under --replace-kernel
  /// "REAL (replaced by python:mod:WITH)", since the substitute's code and declaration apply.
  std::string label() const;
  /// Empty when `use` lies within the capabilities; else why not, e.g.
  /// "pa_fwd_asm declares head_size 128 only; this case has head_size 64", or
  /// "X declares no support for score modifier(s) sinks, alibi; this case uses them".
  std::string outside_capabilities(const KernelUse& use) const;
  /// The declared capabilities in one line, for `kvharness info` (issue 25), e.g. "fp16, bf16;
  /// head_size 64, 128; block_size any; cache fp8_e4m3fn; kv_scales tensor; gqa <= 8;
  /// query_len <= 16; modifiers sinks, alibi". Optional parts appear only when declared.
  std::string capability_summary() const;
  /// The declared launch configuration `name` (issue 23 (D)), or null.
  const LaunchConfig* launch_config(const std::string& name) const;
};

class Registry {
 public:
  /// The built-in kernels only.
  Registry();
  /// No kernel at all (tests that register stand-ins under built-in names).
  struct NoBuiltins {};
  explicit Registry(NoBuiltins);
  ~Registry();
  Registry(Registry&&) noexcept;
  Registry& operator=(Registry&&) noexcept;

  /// Adds a provider's kernels. `spec` is
  ///   python:MODULE      the Python bridge (find_python_bridge) opened with config MODULE
  ///                      (a module on PYTHONPATH or a path to a .py file);
  ///   PATH[?CONFIG]      a shared library exporting kvh_provider_open (ABI 2, given CONFIG)
  ///                      or kvh_provider_kernels (ABI 1).
  /// Throws ProviderLoadError naming the provider when it cannot be opened,
  /// lacks both symbols, its entry fails, or it offers a malformed kernel or a
  /// name that is already registered.
  void load_provider(const std::string& spec);
  /// Adds the kernels of an ABI 2 entry point in this process, opened with `config`.
  void add_provider(kvh_provider_open_fn open, const std::string& config, const std::string& origin);
  /// Adds an in-process list of ABI 2 descriptors (tests: planted kernels).
  void add_provider(const kvh_kernel_desc* (*list)(int32_t* count), const std::string& origin);
  /// Adds every kernel an ABI 1 provider lists (what load_provider does after dlopen).
  void add_provider_v1(kvh_provider_fn_v1 provider, const std::string& origin);
  /// Adds one ABI 2 descriptor, read within its struct_size. A KVH_ROLE_ROUTER descriptor
  /// (kvharness 0.5) becomes a routing policy named like it (routers()); ProviderLoadError
  /// when it has no route entry, or its name is a kernel's or another policy's.
  void add(const kvh_kernel_desc& desc, const std::string& origin);
  /// Runs kernel `with` under the name `real` from now on (`kvharness run
  /// --replace-kernel REAL=WITH`): cases that name `real`, and routers that pick
  /// it, launch `with`'s entry points with `with`'s capabilities, and `real` is a
  /// fixture only when both are (a substitute for a production kernel is judged
  /// like it, and a production substitute for a fixture too: their failures are
  /// unexpected; a fixture's expected failures never cover another kernel). Throws std::invalid_argument when
  /// either name is unknown, or their roles or cache formats differ.
  void replace(const std::string& real, const std::string& with);
  /// A router a provider supplied (KVH_ROLE_ROUTER): a routing policy under its name.
  struct Router {
    std::string name, description, origin;
    bool fixture = false;
  };
  /// The provider routers added so far, in load order. add() registers each as a routing
  /// policy (routing::add_policy); the Registry removes them again when it is destroyed.
  const std::vector<Router>& routers() const { return routers_.list; }

  /// nullptr when no kernel has that name.
  const Kernel* find(const std::string& name) const;
  std::vector<std::string> names() const;
  std::string origin(const std::string& name) const;

 private:
  struct Opened;  // a provider's close() hook and its ABI 1 adapters
  // The provider routers, removed from the routing policies when their Registry goes.
  struct RouterPolicies {
    std::vector<Router> list;
    RouterPolicies() = default;
    RouterPolicies(RouterPolicies&& o) noexcept : list(std::move(o.list)) { o.list.clear(); }
    RouterPolicies& operator=(RouterPolicies&& o) noexcept;
    ~RouterPolicies();
  };
  void add_router(const kvh_kernel_desc& d, const std::string& origin);
  std::map<std::string, Kernel> kernels_;
  std::vector<std::unique_ptr<Opened>> opened_;
  RouterPolicies routers_;  // after opened_: its policies go before their provider is closed
};

/// Adds an in-process list of ABI 2 descriptors to every Registry built
/// afterwards with Registry() (beside the built-ins). For test binaries only
/// (kvharness_planted registers the planted kernels this way); call before
/// any Registry is made.
void register_builtin_extension(const kvh_kernel_desc* (*list)(int32_t* count), const std::string& origin);

/// Where `--provider python:MODULE` finds the bridge library, first hit wins:
/// 1. $KVH_PYTHON_BRIDGE (a path to the library; when set, it must exist);
/// 2. libkvh_python.so next to the running executable;
/// 3. the build tree the harness was configured with (KVH_PYTHON_BRIDGE_BUILD_PATH).
/// Throws ProviderLoadError listing the places tried when none exists.
std::string find_python_bridge();

/// Name of a cache format as used in case files and reports: flash (NHD), pa_v1, shuffle, hnd.
const char* cache_format_name(int format);
/// Name of a dtype as in case files: fp16, bf16, i64, f32, i32, fp8_e4m3fn, fp8_e4m3fnuz, int8.
const char* dtype_name(int dtype);
/// Name of a kvh_scale_granularity as in case files: none, tensor, head, block, token.
const char* scales_name(int granularity);

}  // namespace kvh
