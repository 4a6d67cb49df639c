// libkvh_python: the provider ABI 2 (kvharness/provider.h) implemented by
// embedding CPython through pybind11. `--provider python:MODULE` opens this
// library with config = MODULE; the Python side (kvharness/_bridge.py) imports
// the module and lists the kernels its @writer/@reader decorators registered.
//
// Boundary rules: only the C ABI crosses between harness and bridge (they may
// come from different toolchains); every entry point catches everything and
// turns it into KVH_RAISED with a message. Tensors go to Python as DLPack
// capsules pointing at the harness's own storage (zero-copy): data is the
// view's element [0,...,0], byte_offset 0 (the convention PyTorch and CuPy
// follow), shape and strides exact, device CPU, CUDA or ROCm as the harness
// said at open. The GIL is held only while Python runs: the interpreter is
// started once and the GIL released right after.
#include <dlfcn.h>
#include <unistd.h>
#include <pybind11/embed.h>

#if __has_include(<dlpack/dlpack.h>)
#include <dlpack/dlpack.h>
#else
#include <ATen/dlpack.h>  // the header a torch installation ships
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kvharness/provider.h"

namespace py = pybind11;

#ifndef KVH_PYTHON_DIR
#define KVH_PYTHON_DIR ""
#endif
#ifndef KVH_PYTHON_EXECUTABLE
#define KVH_PYTHON_EXECUTABLE ""
#endif

namespace {

/// The `cmake --install` layout: PREFIX/lib/kvharness/libkvh_python.so beside
/// PREFIX/lib/kvharness/python/kvharness/ (the package) and the shipped
/// provider modules. Returns that python/ folder when this library sits in such
/// a layout, else "" (the build tree: KVH_PYTHON_DIR, the source folder, serves).
std::string installed_python_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&installed_python_dir), &info) == 0 || info.dli_fname == nullptr) return "";
  const std::string so = info.dli_fname;
  const size_t slash = so.find_last_of('/');
  const std::string dir = (slash == std::string::npos ? std::string(".") : so.substr(0, slash)) + "/python";
  return access((dir + "/kvharness/_bridge.py").c_str(), R_OK) == 0 ? dir : "";
}

struct Bridge;

/// One kernel's context: what comes back as `void* context` on every call.
struct KernelCtx {
  Bridge* bridge = nullptr;
  int index = 0;  // in _bridge's kernel list
  int32_t role = 0;
  std::string name, description, error;
  std::string pending;  // workspace_bytes raised: reported by the launch that follows
  int pending_rc = KVH_RAISED;  // or KVH_UNSUPPORTED: workspace_bytes declined the case (kvharness 0.5)
  std::vector<int32_t> head_sizes, block_sizes;
  kvh_capabilities caps{};
  bool modifier_kwargs = false;  // sliding_window, softcap, head_offset, sinks, alibi_slopes
  bool ragged_kwargs = false;    // query_start_loc, seq_lens, max_query_len, num_query_tokens, causal, *_scale_tensor
  bool typed_workspaces = false; // kvh_kernel_desc.workspaces: `workspaces` on every call
  // issue 23 (D): the declared launch configurations (kvh_kernel_desc.launch_configs point into these)
  std::vector<std::string> config_names, config_params;
  std::vector<kvh_launch_config> configs;
};

/// One opened module.
struct Bridge {
  py::object call, workspace, workspaces, time;  // _bridge's Handle.call / .workspace_bytes / .workspaces / .time
  py::object route;                              // Handle.route (kvharness 0.5 routers)
  int32_t device_type = KVH_DEVICE_CPU, device_id = 0;
  std::vector<std::unique_ptr<KernelCtx>> contexts;
  std::vector<kvh_kernel_desc> descs;
};

// ---- the interpreter ----

// Extension modules (torch._C, ...) resolve libpython's symbols globally; the
// harness dlopens this library RTLD_LOCAL, so promote libpython to global.
void promote_libpython() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&Py_IsInitialized), &info) && info.dli_fname)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
}

// Starts the interpreter as if $KVH_PYTHON_EXECUTABLE (default: the
// interpreter the bridge was built against) ran: Python derives sys.prefix
// and, through pyvenv.cfg beside that executable, a virtualenv's
// site-packages from it, so a serving image's venv works without PYTHONPATH.
// Throws std::runtime_error with Python's message when it cannot start.
void start_interpreter() {
  PyConfig config;
  PyConfig_InitPythonConfig(&config);
  config.install_signal_handlers = 0;  // the harness owns SIGINT and the fatal-signal report
  config.parse_argv = 0;
  const char* env = std::getenv("KVH_PYTHON_EXECUTABLE");
  const std::string exe = env && *env ? env : KVH_PYTHON_EXECUTABLE;
  PyStatus st = exe.empty() ? PyStatus_Ok() : PyConfig_SetBytesString(&config, &config.program_name, exe.c_str());
  if (!PyStatus_Exception(st)) st = Py_InitializeFromConfig(&config);
  PyConfig_Clear(&config);
  if (PyStatus_Exception(st))
    throw std::runtime_error(std::string("cannot start Python (as ") + exe + "): " +
                             (st.err_msg ? st.err_msg : "unknown error"));
}

void ensure_interpreter() {
  static std::once_flag once;
  std::call_once(once, [] {
    promote_libpython();
    if (Py_IsInitialized()) return;  // loaded into a Python process: use its interpreter
    start_interpreter();
    PyEval_SaveThread();  // release the GIL: held only during calls from now on
  });
}

// ---- DLPack ----

struct Managed {
  DLManagedTensor t{};
  int64_t shape[KVH_MAX_DIMS] = {}, strides[KVH_MAX_DIMS] = {};
};

void delete_managed(DLManagedTensor* self) { delete static_cast<Managed*>(self->manager_ctx); }

// A capsule nobody consumed still owns its tensor.
void capsule_destructor(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* t = static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (t && t->deleter) t->deleter(t);
  } else {
    PyErr_Clear();
  }
}

DLDataType dl_dtype(int32_t dt) {
  switch (dt) {
    case KVH_DT_F16: return {kDLFloat, 16, 1};
    case KVH_DT_BF16: return {kDLBfloat, 16, 1};
    case KVH_DT_I64: return {kDLInt, 64, 1};
    case KVH_DT_F32: return {kDLFloat, 32, 1};
    case KVH_DT_I32: return {kDLInt, 32, 1};
    // fp8 caches travel as bytes (DLPack before 1.0, and torch 1.13, have no fp8 codes); the
    // `kv_cache_dtype` keyword says which format, and _bridge.py views them as torch's float8
    // dtype where torch has it.
    case KVH_DT_FP8_E4M3FN:
    case KVH_DT_FP8_E4M3FNUZ: return {kDLUInt, 8, 1};
    case KVH_DT_I8: return {kDLInt, 8, 1};  // int8 caches (kvharness 0.6): torch.int8
  }
  throw std::invalid_argument("kvh_tensor with unknown dtype " + std::to_string(dt));
}

/// Case-file names of a cache dtype and a scale granularity (the `kv_cache_dtype`/`kv_scales` keywords).
const char* cache_dtype_name(int32_t dt) {
  switch (dt) {
    case KVH_DT_F16: return "fp16";
    case KVH_DT_BF16: return "bf16";
    case KVH_DT_FP8_E4M3FN: return "fp8_e4m3fn";
    case KVH_DT_FP8_E4M3FNUZ: return "fp8_e4m3fnuz";
    case KVH_DT_I8: return "int8";
  }
  return "unknown";
}
const char* scales_name(int32_t g) {
  static const char* const names[] = {"none", "tensor", "head", "block", "token", "slot"};
  return g >= 0 && g <= 5 ? names[g] : "unknown";
}

/// A "dltensor" capsule viewing `t` in place (None for an absent tensor), of
/// element type `dtype` (default: t.dtype's).
py::object capsule(const kvh_tensor& t, const Bridge& b, const DLDataType* dtype = nullptr) {
  if (!t.data && t.ndim == 0) return py::none();
  if (t.ndim < 0 || t.ndim > KVH_MAX_DIMS) throw std::invalid_argument("kvh_tensor with ndim " + std::to_string(t.ndim));
  auto m = std::make_unique<Managed>();
  m->t.dl_tensor.data = t.data;
  m->t.dl_tensor.device = DLDevice{static_cast<DLDeviceType>(b.device_type), b.device_id};
  m->t.dl_tensor.ndim = t.ndim;
  m->t.dl_tensor.dtype = dtype ? *dtype : dl_dtype(t.dtype);
  for (int i = 0; i < t.ndim; ++i) m->shape[i] = t.shape[i], m->strides[i] = t.stride[i];
  m->t.dl_tensor.shape = m->shape;
  m->t.dl_tensor.strides = m->strides;
  m->t.dl_tensor.byte_offset = 0;
  m->t.manager_ctx = m.get();
  m->t.deleter = delete_managed;
  PyObject* c = PyCapsule_New(&m->t, "dltensor", capsule_destructor);
  if (!c) throw py::error_already_set();
  m.release();
  return py::reinterpret_steal<py::object>(c);
}

/// A 1-D uint8 capsule of `bytes` bytes at `data` (a reader's workspace), or None.
py::object bytes_capsule(void* data, uint64_t bytes, const Bridge& b) {
  if (!data) return py::none();
  kvh_tensor t{};
  t.data = data;
  t.ndim = 1;
  t.shape[0] = int64_t(bytes);
  t.stride[0] = 1;
  const DLDataType u8{kDLUInt, 8, 1};
  return capsule(t, b, &u8);
}

// ---- keyword arguments, named as in provider.h ----

/// fp8 and int8 caches only (so that a 16-bit case calls a provider exactly as before,
/// **kwargs forwarding included): kv_cache_dtype, kv_scales, k_scales, v_scales.
/// `a` (null when the args predate the scale fields) has kv_scales/k_scales/v_scales.
template <class Args>
void add_fp8_kwargs(py::dict& kw, int32_t cache_dtype, const Args* a, const Bridge& b) {
  if (cache_dtype != KVH_DT_FP8_E4M3FN && cache_dtype != KVH_DT_FP8_E4M3FNUZ && cache_dtype != KVH_DT_I8) return;
  kw["kv_cache_dtype"] = cache_dtype_name(cache_dtype);
  kw["kv_scales"] = scales_name(a ? a->kv_scales : KVH_SCALES_NONE);
  kw["k_scales"] = a ? capsule(a->k_scales, b) : py::none();
  kw["v_scales"] = a ? capsule(a->v_scales, b) : py::none();
}

/// issue 23 (D): the name of the launch configuration the case runs, only when it runs one (so
/// that a default-launch call is made exactly as before); _bridge.py turns it into the
/// configuration's keyword arguments.
void add_launch_config(py::dict& kw, const kvh_launch_config* lc) {
  if (lc && lc->name) kw["launch_config"] = std::string(lc->name);
}

py::dict write_kwargs(const kvh_write_args& a, const Bridge& b) {
  py::dict kw;
  kw["key"] = capsule(a.key, b);
  kw["value"] = capsule(a.value, b);
  kw["key_cache"] = capsule(a.key_cache, b);
  kw["value_cache"] = capsule(a.value_cache, b);
  kw["slot_mapping"] = capsule(a.slot_mapping, b);
  kw["block_size"] = a.block_size;
  add_fp8_kwargs(kw, a.key_cache.dtype, KVH_HAS_FIELD(&a, kvh_write_args, v_scales) ? &a : nullptr, b);
  add_launch_config(kw, KVH_HAS_FIELD(&a, kvh_write_args, launch_config) ? a.launch_config : nullptr);
  return kw;
}

/// The reader's keyword arguments; the score-modifier ones (sliding_window, softcap, head_offset,
/// sinks, alibi_slopes) only for a reader that declares modifiers, so that a reader written before
/// them, which may forward **kwargs to a function that does not take them, never sees them (the
/// harness never runs such a reader on a case that turns one on). Likewise the ragged-query ones
/// (kvharness 0.4) only for a reader that declares ragged support or names one of them
/// (_bridge.py); they are read when struct_size covers them and the harness filled them
/// (query_start_loc set), else they describe a decode call: max_query_len 1, num_query_tokens the
/// query's rows, causal, and None for the tensors (which _bridge.py then makes).
py::dict attention_kwargs(const kvh_attention_args& a, const Bridge& b, bool with_outputs, const KernelCtx& k) {
  const bool modifiers = k.modifier_kwargs;
  py::dict kw;
  if (with_outputs) kw["out"] = capsule(a.out, b);
  kw["query"] = capsule(a.query, b);
  kw["key_cache"] = capsule(a.key_cache, b);
  kw["value_cache"] = capsule(a.value_cache, b);
  kw["block_tables"] = capsule(a.block_tables, b);
  kw["context_lens"] = capsule(a.context_lens, b);
  kw["block_size"] = a.block_size;
  kw["max_context_len"] = a.max_context_len;
  kw["scale"] = double(a.scale);
  kw["k_scale"] = double(a.k_scale);
  kw["v_scale"] = double(a.v_scale);
  kw["partition_size"] = a.partition_size;
  // Only when set (kernel_pages cases): a provider whose readers forward **kwargs to a function
  // with a fixed argument list (kvharness_torch's) keeps working on every other case.
  if (KVH_HAS_FIELD(&a, kvh_attention_args, cache_block_size) && a.cache_block_size != 0)
    kw["cache_block_size"] = a.cache_block_size;
  if (modifiers) {  // provider.h; a Python reader receives the ones its signature names
    const bool has = KVH_HAS_FIELD(&a, kvh_attention_args, alibi_slopes);
    kw["sliding_window"] = has ? a.sliding_window : 0;
    kw["softcap"] = has ? double(a.softcap) : 0.0;
    kw["head_offset"] = has ? a.head_offset : 0;
    kw["sinks"] = has && a.sinks.data ? capsule(a.sinks, b) : py::none();
    kw["alibi_slopes"] = has && a.alibi_slopes.data ? capsule(a.alibi_slopes, b) : py::none();
  }
  if (k.ragged_kwargs) {
    const bool ragged = KVH_HAS_FIELD(&a, kvh_attention_args, causal) && a.query_start_loc.data;
    kw["query_start_loc"] = ragged ? capsule(a.query_start_loc, b) : py::none();
    kw["seq_lens"] = ragged && a.seq_lens.data ? capsule(a.seq_lens, b) : py::none();
    kw["max_query_len"] = ragged ? a.max_query_len : 1;
    kw["num_query_tokens"] = ragged ? int64_t(a.num_query_tokens) : a.query.shape[0];
    kw["causal"] = ragged ? a.causal != 0 : true;
    const bool scales = KVH_HAS_FIELD(&a, kvh_attention_args, v_scale_tensor);
    kw["k_scale_tensor"] = scales && a.k_scale_tensor.data ? capsule(a.k_scale_tensor, b) : py::none();
    kw["v_scale_tensor"] = scales && a.v_scale_tensor.data ? capsule(a.v_scale_tensor, b) : py::none();
  }
  if (with_outputs) kw["workspace"] = bytes_capsule(a.workspace, a.workspace_bytes, b);
  if (with_outputs && k.typed_workspaces) {  // in declaration order; _bridge.py names them
    py::list ws;
    const bool has = KVH_HAS_FIELD(&a, kvh_attention_args, workspaces);
    const int32_t n = has ? a.num_workspaces : 0;
    if (n < 0 || n > KVH_MAX_WORKSPACES)
      throw std::invalid_argument("num_workspaces " + std::to_string(n) + " outside 0..8");
    for (int32_t i = 0; i < n; ++i) ws.append(capsule(a.workspaces[i], b));
    kw["workspaces"] = ws;
  }
  add_fp8_kwargs(kw, a.key_cache.dtype, KVH_HAS_FIELD(&a, kvh_attention_args, v_scales) ? &a : nullptr, b);
  add_launch_config(kw, KVH_HAS_FIELD(&a, kvh_attention_args, launch_config) ? a.launch_config : nullptr);
  return kw;
}

// Runs `body` (which returns a Python object: None on success, ("unsupported", reason) when the
// provider raised kvharness.Unsupported, else the provider's error text) under the GIL; a refusal
// becomes KVH_UNSUPPORTED (kvharness 0.5), every other failure KVH_RAISED.
template <class Body> int guarded(KernelCtx* k, Body&& body) {
  try {
    py::gil_scoped_acquire gil;
    try {
      py::object r = body();
      if (r.is_none()) return 0;
      if (py::isinstance<py::tuple>(r)) {
        k->error = py::str(py::tuple(r)[1]);
        return KVH_UNSUPPORTED;
      }
      k->error = py::str(r);
    } catch (py::error_already_set& e) {
      k->error = std::string("kvharness bridge: ") + e.what();
    } catch (const std::exception& e) {
      k->error = std::string("kvharness bridge: ") + e.what();
    }
  } catch (...) {
    k->error = "kvharness bridge: unknown C++ exception";
  }
  return KVH_RAISED;
}

int py_write(void* ctx, const kvh_write_args* a, void* stream) {
  auto* k = static_cast<KernelCtx*>(ctx);
  return guarded(k, [&] {
    return k->bridge->call(k->index, write_kwargs(*a, *k->bridge), reinterpret_cast<uintptr_t>(stream));
  });
}

int py_attention(void* ctx, const kvh_attention_args* a, void* stream) {
  auto* k = static_cast<KernelCtx*>(ctx);
  if (!k->pending.empty()) {  // sizing the workspace is part of the launch
    k->error = std::move(k->pending);
    k->pending.clear();
    return k->pending_rc;
  }
  return guarded(k, [&] {
    return k->bridge->call(k->index, attention_kwargs(*a, *k->bridge, true, *k),
                           reinterpret_cast<uintptr_t>(stream));
  });
}

// A Python workspace_bytes that raises reports 0 bytes and leaves its error
// pending: the launch that follows returns KVH_RAISED with it, so the case is
// CRASH launch_error with the provider's file:line like any raising kernel
// (kvharness.Unsupported: KVH_UNSUPPORTED with the reason).
int py_workspace(void* ctx, const kvh_attention_args* a, uint64_t* bytes) {
  auto* k = static_cast<KernelCtx*>(ctx);
  *bytes = 0;
  k->pending.clear();
  const int rc = guarded(k, [&]() -> py::object {
    py::object r = k->bridge->workspace(k->index, attention_kwargs(*a, *k->bridge, false, *k));
    if (py::isinstance<py::int_>(r)) {
      const long long n = r.cast<long long>();
      if (n < 0) return py::str("workspace_bytes returned a negative size " + std::to_string(n));
      *bytes = uint64_t(n);
      return py::none();
    }
    return r;  // the error text
  });
  if (rc != 0) k->pending = rc == KVH_UNSUPPORTED ? k->error : "workspace_bytes: " + k->error;
  k->pending_rc = rc;
  return 0;
}

// Typed workspaces: the declaration's entries, checked in Python (kvharness.workspace_specs:
// names, dims, dtypes, count), copied into specs. A declaration that raises or is malformed
// returns KVH_RAISED at once, its message naming the reader and the entry (last_error).
int py_workspaces(void* ctx, const kvh_attention_args* a, kvh_workspace_spec* specs, int32_t max_specs,
                  int32_t* count) {
  auto* k = static_cast<KernelCtx*>(ctx);
  *count = 0;
  k->pending.clear();
  const int rc = guarded(k, [&]() -> py::object {
    py::object r = k->bridge->workspaces(k->index, attention_kwargs(*a, *k->bridge, false, *k));
    if (!py::isinstance<py::list>(r)) return r;  // the error text
    const py::list l = r;
    if (py::ssize_t(l.size()) > py::ssize_t(max_specs))
      return py::str("reader '" + k->name + "': workspaces: " + std::to_string(l.size()) +
                     " entries, the harness takes " + std::to_string(max_specs));
    for (size_t i = 0; i < l.size(); ++i) {
      const py::tuple e = l[i];
      kvh_workspace_spec& w = specs[i];
      std::memset(static_cast<void*>(&w), 0, sizeof w);
      const std::string name = e[0].cast<std::string>();
      const py::list shape = e[2];
      if (name.size() >= sizeof w.name || shape.size() < 1 || shape.size() > KVH_MAX_DIMS)
        return py::str("reader '" + k->name + "': workspaces entry " + std::to_string(i) +
                       " does not fit kvh_workspace_spec");
      std::memcpy(w.name, name.data(), name.size());
      w.dtype = e[1].cast<int32_t>();
      w.ndim = int32_t(shape.size());
      for (size_t d = 0; d < shape.size(); ++d) w.shape[d] = shape[d].cast<int64_t>();
    }
    *count = int32_t(l.size());
    return py::none();
  });
  if (rc != 0) *count = 0;
  return rc;
}

// ---- routers (kvharness 0.5) ----

const char* cache_format_or_none(int32_t f) {
  static const char* const names[] = {"flash", "pa_v1", "shuffle", "hnd", "mla"};
  return f >= 0 && f <= 4 ? names[f] : nullptr;
}

/// The routing inputs as the Python router gets them (providers/python/README.md): names for
/// dtypes, formats and granularities, as case files spell them.
py::dict route_kwargs(const kvh_route_args& a) {
  py::dict kw;
  kw["num_seqs"] = a.num_seqs;
  kw["num_heads"] = a.num_heads;
  kw["num_kv_heads"] = a.num_kv_heads;
  kw["head_size"] = a.head_size;
  kw["block_size"] = a.block_size;
  kw["num_query_tokens"] = a.num_query_tokens;
  kw["max_query_len"] = a.max_query_len;
  kw["max_context_len"] = a.max_context_len;
  kw["compute_units"] = a.compute_units;
  kw["dtype"] = cache_dtype_name(a.dtype);
  kw["cache_dtype"] = cache_dtype_name(a.cache_dtype);
  kw["kv_scales"] = scales_name(a.kv_scales);
  const char* format = cache_format_or_none(a.cache_format);
  kw["cache_format"] = format ? py::object(py::str(format)) : py::object(py::none());
  kw["high_precision"] = a.high_precision;
  kw["causal"] = a.causal != 0;
  kw["target"] = a.target ? a.target : "";
  // kvharness 0.6: an MLA step's kv_lora_rank (0: paged attention); older harnesses do not send it.
  kw["kv_lora_rank"] = KVH_HAS_FIELD(&a, kvh_route_args, kv_lora_rank) ? a.kv_lora_rank : int64_t(0);
  return kw;
}

// Copies `s` into the fixed array `dst` of `n` bytes, truncated, NUL-terminated.
template <size_t N> void put(char (&dst)[N], const std::string& s) {
  const size_t m = std::min(s.size(), N - 1);
  std::memcpy(dst, s.data(), m);
  dst[m] = 0;
}

int py_route(void* ctx, const kvh_route_args* a, kvh_route_result* out) {
  auto* k = static_cast<KernelCtx*>(ctx);
  return guarded(k, [&]() -> py::object {
    py::object r = k->bridge->route(k->index, route_kwargs(*a));
    if (!py::isinstance<py::tuple>(r)) return r;  // the error text
    const py::tuple t = r;
    put(out->kernel, t[0].cast<std::string>());
    put(out->reason, t[1].cast<std::string>());
    return py::none();
  });
}

// kvh_time_fn (kvharness 0.5): Handle.time measures in Python (_timing.py); make_kwargs gives it
// fresh capsules of the same call for each eager call, so host_us includes the bridge's conversion.
int py_time(void* ctx, const void* args, void* stream, int32_t warmup, int32_t reps, kvh_timing* out) {
  auto* k = static_cast<KernelCtx*>(ctx);
  const Bridge& b = *k->bridge;
  return guarded(k, [&]() -> py::object {
    py::cpp_function make;
    if (k->role == KVH_ROLE_WRITER) {
      const auto* a = static_cast<const kvh_write_args*>(args);
      make = py::cpp_function([a, &b] { return write_kwargs(*a, b); });
    } else {
      const auto* a = static_cast<const kvh_attention_args*>(args);
      make = py::cpp_function([a, &b, k] { return attention_kwargs(*a, b, true, *k); });
    }
    py::object r = b.time(k->index, make, reinterpret_cast<uintptr_t>(stream), warmup, reps);
    if (!py::isinstance<py::tuple>(r) || py::len(r) != 3) return py::str(r);  // the error text
    const py::tuple t = r;
    if (KVH_HAS_FIELD(out, kvh_timing, method)) out->method = t[2].cast<int32_t>();
    if (KVH_HAS_FIELD(out, kvh_timing, kernel_us)) out->kernel_us = t[0].cast<double>();
    if (KVH_HAS_FIELD(out, kvh_timing, host_us)) out->host_us = t[1].cast<double>();
    return py::none();
  });
}

const char* py_last_error(void* ctx) { return static_cast<KernelCtx*>(ctx)->error.c_str(); }

void close_bridge(void* p) {
  auto* b = static_cast<Bridge*>(p);
  try {
    py::gil_scoped_acquire gil;
    b->call = py::object();
    b->workspace = py::object();
    b->workspaces = py::object();
    b->route = py::object();
    b->time = py::object();
  } catch (...) {
  }
  delete b;
}

void set_error(const kvh_open_args* args, const std::string& msg) {
  if (args->error && args->error_size) std::snprintf(args->error, args->error_size, "%s", msg.c_str());
}

std::vector<int32_t> int_list(const py::handle& h) {
  std::vector<int32_t> v;
  if (!h.is_none())
    for (auto x : h) v.push_back(x.cast<int32_t>());
  return v;
}

// Reads the kernel list _bridge.load returned into descriptors.
void describe(Bridge& b, const py::list& kernels) {
  for (size_t i = 0; i < kernels.size(); ++i) {
    py::dict d = kernels[i];
    auto k = std::make_unique<KernelCtx>();
    k->bridge = &b;
    k->index = int(i);
    k->name = d["name"].cast<std::string>();
    k->description = d["description"].cast<std::string>();
    k->head_sizes = int_list(d["head_sizes"]);
    k->block_sizes = int_list(d["block_sizes"]);
    k->caps.head_sizes = k->head_sizes.data();
    k->caps.num_head_sizes = int32_t(k->head_sizes.size());
    k->caps.block_sizes = k->block_sizes.data();
    k->caps.num_block_sizes = int32_t(k->block_sizes.size());
    k->caps.dtypes = d["dtypes_mask"].cast<uint32_t>();
    k->caps.max_gqa_ratio = d["max_gqa_ratio"].cast<int32_t>();
    k->caps.cache_dtypes = d["cache_dtypes_mask"].cast<uint32_t>();
    k->caps.kv_scales = d["kv_scales_mask"].cast<uint32_t>();
    k->caps.modifiers = d.contains("modifiers_mask") ? d["modifiers_mask"].cast<uint32_t>() : 0u;
    k->caps.max_query_len = d["max_query_len"].cast<int32_t>();
    k->modifier_kwargs = d["modifier_kwargs"].cast<bool>();
    k->ragged_kwargs = d["ragged_kwargs"].cast<bool>();
    k->typed_workspaces = d["has_workspaces"].cast<bool>();
    if (d.contains("launch_configs"))  // issue 23 (D)
      for (auto c : d["launch_configs"]) {
        py::tuple t = c.cast<py::tuple>();
        k->config_names.push_back(t[0].cast<std::string>());
        k->config_params.push_back(t[1].cast<std::string>());
      }
    for (size_t j = 0; j < k->config_names.size(); ++j)
      k->configs.push_back(kvh_launch_config{k->config_names[j].c_str(), k->config_params[j].c_str()});
    kvh_kernel_desc desc{};
    desc.abi_version = KVH_ABI_VERSION;
    desc.name = k->name.c_str();
    desc.description = k->description.c_str();
    desc.role = d["role"].cast<int32_t>();
    k->role = desc.role;
    desc.cache_format = d["cache_format"].cast<int32_t>();
    desc.fixture = d["fixture"].cast<bool>() ? 1 : 0;
    desc.context = k.get();
    if (desc.role == KVH_ROLE_WRITER) desc.write = py_write;
    if (desc.role == KVH_ROLE_READER) desc.attention = py_attention;
    if (desc.role == KVH_ROLE_ROUTER) desc.route = py_route;
    if (d["has_workspace"].cast<bool>()) desc.workspace_bytes = py_workspace;
    if (k->typed_workspaces) desc.workspaces = py_workspaces;
    if (desc.role != KVH_ROLE_ROUTER) desc.time = py_time;
    desc.last_error = py_last_error;
    desc.capabilities = &k->caps;
    desc.num_launch_configs = int32_t(k->configs.size());  // issue 23 (D)
    desc.launch_configs = k->configs.empty() ? nullptr : k->configs.data();
    b.descs.push_back(desc);
    b.contexts.push_back(std::move(k));
  }
}

}  // namespace

/// ABI 2 entry: args->config names the module (on PYTHONPATH, or a path to a
/// .py file). Fails (error filled: the module and the last traceback line)
/// when the interpreter cannot start or the module does not import.
extern "C" __attribute__((visibility("default"))) int kvh_provider_open(const kvh_open_args* args,
                                                                         kvh_provider* out) {
  const std::string spec = args && args->config ? args->config : "";
  try {
    ensure_interpreter();
    py::gil_scoped_acquire gil;
    try {
      py::module_ sys = py::module_::import("sys");
      py::list path = sys.attr("path");
      const std::string dir = KVH_PYTHON_DIR;
      if (!dir.empty() && !path.contains(py::str(dir))) path.insert(0, py::str(dir));
      // An installed bridge's own package comes first (a source tree may still be there).
      const std::string installed = installed_python_dir();
      if (!installed.empty() && !path.contains(py::str(installed))) path.insert(0, py::str(installed));
      py::module_ bridge_py = py::module_::import("kvharness._bridge");
      py::tuple loaded = bridge_py.attr("load")(spec, int(args->device_type), int(args->device_id));
      if (!loaded[1].is_none()) {
        set_error(args, loaded[1].cast<std::string>());  // the harness prefixes python:MODULE
        return 1;
      }
      auto b = std::make_unique<Bridge>();
      b->device_type = args->device_type;
      b->device_id = args->device_id;
      py::object handle = loaded[0];
      b->call = handle.attr("call");
      b->workspace = handle.attr("workspace_bytes");
      b->workspaces = handle.attr("workspaces");
      b->route = handle.attr("route");
      b->time = handle.attr("time");
      describe(*b, handle.attr("kernels"));
      out->num_kernels = int32_t(b->descs.size());
      out->kernels = b->descs.empty() ? nullptr : b->descs.data();
      out->provider_context = b.release();
      out->close = close_bridge;
      return 0;
    } catch (py::error_already_set& e) {
      set_error(args, std::string("the bridge failed: ") + e.what());
    } catch (const std::exception& e) {
      set_error(args, std::string("the bridge failed: ") + e.what());
    }
  } catch (...) {
    set_error(args, "the bridge failed (unknown C++ exception)");
  }
  return 1;
}
