// The Python bridge's kvharness 0.4 side, through the C ABI as the harness calls it, without the
// harness: dlopens libkvh_python.so, opens testing/kvharness_abi_probe.py and checks
//  - capabilities: max_query_len and KVH_MOD_NON_CAUSAL; desc.workspaces set for typed readers only;
//  - a ragged call forwards query_start_loc, seq_lens, max_query_len, num_query_tokens, causal and the
//    scale tensors (the probe asserts them in Python; a failure is KVH_RAISED with its message);
//  - a struct_size that ends before the 0.4 fields (an older harness), and a full struct left
//    zero-filled, reach Python as a decode call;
//  - a reader forwarding **kwargs to a fixed argument list never gets the new keywords;
//  - typed workspaces: the declaration becomes kvh_workspace_spec entries; the buffers reach the
//    reader by name, in place; a bad declaration (a dtype, 9 entries) is KVH_RAISED naming the entry;
//  - kvharness 0.5: kvharness.Unsupported from a reader, its workspace_bytes (at the launch that
//    follows) or its workspaces function is KVH_UNSUPPORTED with the reason as last_error.
// Usage: kvh_bridge_abi_test LIBKVH_PYTHON PROBE.py. Exit 0 when every check holds.
#include <dlfcn.h>

#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kvharness/provider.h"

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what.c_str());
  if (!ok) ++failures;
}

kvh_tensor tensor(void* data, kvh_dtype dt, std::vector<int64_t> shape) {
  kvh_tensor t{};
  t.data = data;
  t.dtype = dt;
  t.ndim = int32_t(shape.size());
  int64_t stride = 1;
  for (int i = t.ndim - 1; i >= 0; --i) {
    t.shape[i] = shape[size_t(i)];
    t.stride[i] = stride;
    stride *= shape[size_t(i)];
  }
  return t;
}

uint16_t f16(float x) {  // exact for the small values used here
  if (x == 0) return 0;
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return uint16_t(((b >> 16) & 0x8000) | ((((b >> 23) & 0xff) - 127 + 15) << 10) | ((b >> 13) & 0x3ff));
}
float from_f16(uint16_t h) {
  if ((h & 0x7fff) == 0) return 0;
  const uint32_t b =
      (uint32_t(h & 0x8000) << 16) | ((((h >> 10) & 0x1f) - 15 + 127) << 23) | (uint32_t(h & 0x3ff) << 13);
  float x;
  std::memcpy(&x, &b, 4);
  return x;
}

struct Call {
  static constexpr int S = 3, T = 7, H = 4, KV = 1, D = 8, BS = 16, NB = 2;
  std::vector<uint16_t> out = std::vector<uint16_t>(T * H * D, 0), query = std::vector<uint16_t>(T * H * D, 0);
  std::vector<uint16_t> kc = std::vector<uint16_t>(NB * BS * KV * D, 0), vc = kc;
  std::vector<int32_t> tables = {0, 1, 0}, lens = {5, 1, 9}, qsl = {0, 2, 3, 7};
  std::vector<float> sinks = std::vector<float>(H, 0.5f), ks = {0.25f}, vs = {2.0f};
  kvh_attention_args a{};
  int rows = 0;

  // rows: T query tokens (ragged) or S (decode).
  explicit Call(bool ragged) {
    rows = ragged ? T : S;
    a.out = tensor(out.data(), KVH_DT_F16, {rows, H, D});
    a.query = tensor(query.data(), KVH_DT_F16, {rows, H, D});
    a.key_cache = tensor(kc.data(), KVH_DT_F16, {NB, BS, KV, D});
    a.value_cache = tensor(vc.data(), KVH_DT_F16, {NB, BS, KV, D});
    a.block_tables = tensor(tables.data(), KVH_DT_I32, {S, 1});
    a.context_lens = tensor(lens.data(), KVH_DT_I32, {S});
    a.block_size = BS;
    a.max_context_len = 9;
    a.scale = 0.5f;
    a.k_scale = 0.25f;
    a.v_scale = 2.0f;
    a.sinks = tensor(sinks.data(), KVH_DT_F32, {H});
    out[0] = f16(ragged ? 1.0f : 0.0f);  // tells the probe which call this is
    if (ragged) {
      a.query_start_loc = tensor(qsl.data(), KVH_DT_I32, {S + 1});
      a.seq_lens = tensor(lens.data(), KVH_DT_I32, {S});
      a.max_query_len = 4;
      a.num_query_tokens = T;
      a.causal = 0;
      a.k_scale_tensor = tensor(ks.data(), KVH_DT_F32, {1});
      a.v_scale_tensor = tensor(vs.data(), KVH_DT_F32, {1});
    }
  }
  float last_out() const { return from_f16(out[size_t(rows * H * D - 1)]); }  // out[-1, -1, -1]
};

const kvh_kernel_desc* find(const kvh_provider& p, const char* name) {
  const size_t stride = p.num_kernels ? p.kernels[0].struct_size : 0;
  for (int i = 0; i < p.num_kernels; ++i) {
    auto* d = reinterpret_cast<const kvh_kernel_desc*>(reinterpret_cast<const char*>(p.kernels) + i * stride);
    if (std::strcmp(d->name, name) == 0) return d;
  }
  std::printf("FAIL no kernel %s\n", name);
  ++failures;
  return nullptr;
}

std::string error(const kvh_kernel_desc* d) { return d->last_error ? d->last_error(d->context) : ""; }

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s LIBKVH_PYTHON PROBE.py\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    std::fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
    return 2;
  }
  auto open = reinterpret_cast<kvh_provider_open_fn>(dlsym(lib, KVH_PROVIDER_OPEN_SYMBOL));
  char err[2048] = {};
  kvh_open_args oa{};
  oa.device_type = KVH_DEVICE_CPU;
  oa.config = argv[2];
  oa.error = err;
  oa.error_size = sizeof err;
  kvh_provider p{};
  if (!open || open(&oa, &p) != 0) {
    std::fprintf(stderr, "kvh_provider_open: %s\n", err);
    return 2;
  }
  const kvh_kernel_desc* rag = find(p, "probe_ragged");
  const kvh_kernel_desc* old = find(p, "probe_old_forwarder");
  const kvh_kernel_desc* typed = find(p, "probe_typed_workspaces");
  const kvh_kernel_desc* bad = find(p, "probe_bad_workspaces");
  const kvh_kernel_desc* many = find(p, "probe_many_workspaces");
  if (failures) return 1;

  // Capabilities and descriptors.
  check(rag->capabilities->max_query_len == 64, "probe_ragged: max_query_len 64");
  check(rag->capabilities->modifiers == (KVH_MOD_NON_CAUSAL | KVH_MOD_SINKS),
        "probe_ragged: modifiers NON_CAUSAL | SINKS");
  check(old->capabilities->max_query_len == 1, "a decode reader: max_query_len 1");
  check(rag->workspaces == nullptr && rag->workspace_bytes == nullptr, "probe_ragged: no workspace entry points");
  check(typed->workspaces != nullptr && typed->workspace_bytes == nullptr, "typed workspaces: desc.workspaces only");

  // A ragged call: every 0.4 field reaches Python (the probe asserts them).
  {
    Call c(true);
    const int rc = rag->attention(rag->context, &c.a, nullptr);
    check(rc == 0 && c.last_out() == 107.0f, "ragged call forwarded (rc " + std::to_string(rc) + ") " + error(rag));
  }
  // An older harness's struct (it ends before the 0.4 fields), and a full struct left unfilled: decode.
  {
    Call c(false);
    c.a.struct_size = uint32_t(offsetof(kvh_attention_args, query_start_loc));
    int rc = rag->attention(rag->context, &c.a, nullptr);
    check(rc == 0 && c.last_out() == 103.0f, "struct_size before the 0.4 fields: a decode call (rc " +
                                                 std::to_string(rc) + ") " + error(rag));
    Call z(false);
    rc = rag->attention(rag->context, &z.a, nullptr);
    check(rc == 0 && z.last_out() == 103.0f, "0.4 fields zero-filled: a decode call (rc " + std::to_string(rc) + ") " +
                                                 error(rag));
  }
  // A reader forwarding **kwargs to a fixed argument list keeps working on a ragged call.
  {
    Call c(true);
    const int rc = old->attention(old->context, &c.a, nullptr);
    check(rc == 0 && c.last_out() == 42.0f, "an old **kwargs forwarder gets no new keyword (rc " + std::to_string(rc) +
                                                ") " + error(old));
  }
  // Typed workspaces.
  {
    Call c(true);
    kvh_workspace_spec specs[KVH_MAX_WORKSPACES];
    std::memset(static_cast<void*>(specs), 0x5a, sizeof specs);
    int32_t count = -1;
    int rc = typed->workspaces(typed->context, &c.a, specs, KVH_MAX_WORKSPACES, &count);
    check(rc == 0 && count == 3, "workspaces: 3 specs (rc " + std::to_string(rc) + ", count " + std::to_string(count) +
                                     ") " + error(typed));
    if (rc == 0 && count == 3) {
      const kvh_workspace_spec& m = specs[0];
      const kvh_workspace_spec& o = specs[1];
      const kvh_workspace_spec& q = specs[2];
      check(std::string(m.name) == "segm_max" && m.dtype == KVH_DT_F32 && m.ndim == 3 && m.shape[0] == Call::T &&
                m.shape[1] == Call::H && m.shape[2] == 3 && m.shape[3] == 0,
            "segm_max f32 [7, 4, 3], unused dims zero");
      check(std::string(o.name) == "segm_output" && o.dtype == KVH_DT_F16 && o.ndim == 4 && o.shape[3] == Call::D,
            "segm_output f16 [7, 4, 3, 8]");
      check(std::string(q.name) == "seq_idx" && q.dtype == KVH_DT_I32 && q.ndim == 1 && q.shape[0] == 4,
            "seq_idx i32 [max_query_len = 4]");
      std::vector<float> segm_max(size_t(Call::T * Call::H * 3), NAN);
      std::vector<uint16_t> segm_out(size_t(Call::T * Call::H * 3 * Call::D), 0x7e00);
      std::vector<int32_t> seq_idx(4, 0x7FC0DEAD);
      c.a.workspaces[0] = tensor(segm_max.data(), KVH_DT_F32, {Call::T, Call::H, 3});
      c.a.workspaces[1] = tensor(segm_out.data(), KVH_DT_F16, {Call::T, Call::H, 3, Call::D});
      c.a.workspaces[2] = tensor(seq_idx.data(), KVH_DT_I32, {4});
      c.a.num_workspaces = 3;
      rc = typed->attention(typed->context, &c.a, nullptr);
      check(rc == 0, "the typed reader gets its workspaces by name (rc " + std::to_string(rc) + ") " + error(typed));
      check(segm_max.front() == -1.0f && segm_max.back() == -1.0f && seq_idx[0] == 0 && seq_idx[3] == 3,
            "it wrote into the caller's workspace buffers in place");
      c.a.num_workspaces = 0;  // the declaration asks for 3
      rc = typed->attention(typed->context, &c.a, nullptr);
      check(rc == KVH_RAISED && error(typed).find("declares typed workspaces") != std::string::npos,
            "workspaces missing: KVH_RAISED naming them: " + error(typed));
    }
    count = -1;
    rc = bad->workspaces(bad->context, &c.a, specs, KVH_MAX_WORKSPACES, &count);
    const std::string e = error(bad);
    check(rc == KVH_RAISED && count == 0 &&
              e.find("reader 'probe_bad_workspaces': workspaces entry 1 ('b'): dtype 'float8_e4m3fn'") !=
                  std::string::npos &&
              e.find("kvharness_abi_probe.py:") != std::string::npos,
          "a bad dtype: KVH_RAISED naming the reader, the entry and the declaration's line: " + e);
    rc = many->workspaces(many->context, &c.a, specs, KVH_MAX_WORKSPACES, &count);
    check(rc == KVH_RAISED && error(many).find("9 entries, at most 8") != std::string::npos,
          "9 workspaces: KVH_RAISED: " + error(many));
  }
  {  // kvharness 0.5: call-time refusals
    const kvh_kernel_desc* refuses = find(p, "probe_refuses");
    const kvh_kernel_desc* ws = find(p, "probe_workspace_refuses");
    const kvh_kernel_desc* typed_ws = find(p, "probe_workspaces_refuse");
    check(refuses && ws && typed_ws, "the refusing probes are registered");
    if (refuses && ws && typed_ws) {
      Call c(false);
      int rc = refuses->attention(refuses->context, &c.a, nullptr);
      check(rc == KVH_UNSUPPORTED && error(refuses) == "head_size 8: planted refusal",
            "kvharness.Unsupported: KVH_UNSUPPORTED, the reason as last_error (rc " + std::to_string(rc) + ") " +
                error(refuses));
      uint64_t bytes = 1;
      rc = ws->workspace_bytes(ws->context, &c.a, &bytes);
      check(rc == 0 && bytes == 0, "a refusing workspace_bytes reports 0 bytes, pending");
      rc = ws->attention(ws->context, &c.a, nullptr);
      check(rc == KVH_UNSUPPORTED && error(ws) == "no split-K plan for this batch",
            "...and the launch that follows is KVH_UNSUPPORTED with its reason: " + error(ws));
      kvh_workspace_spec specs[KVH_MAX_WORKSPACES];
      int32_t count = -1;
      rc = typed_ws->workspaces(typed_ws->context, &c.a, specs, KVH_MAX_WORKSPACES, &count);
      check(rc == KVH_UNSUPPORTED && count == 0 && error(typed_ws) == "no split-K plan for this batch",
            "a refusing workspaces function: KVH_UNSUPPORTED at once: " + error(typed_ws));
    }
  }
  if (p.close) p.close(p.provider_context);
  std::printf(failures ? "%d check(s) failed\n" : "all checks passed\n", failures);
  return failures ? 1 : 0;
}
