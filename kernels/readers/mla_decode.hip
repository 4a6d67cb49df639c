// mla_decode: the built-in absorbed-MLA reader (design in mla_decode_kernel.h, contract in
// mla_decode.h): split-K over the latent cache, the splits from its planner.
#include "readers/mla_decode_kernel.h"

namespace kvh::kernels {

namespace {
bool shape_is(const kvh_tensor& t, int32_t dtype, std::initializer_list<int64_t> shape) {
  if (!t.data || t.dtype != dtype || t.ndim != int32_t(shape.size())) return false;
  int i = 0;
  for (int64_t d : shape)
    if (t.shape[i++] != d) return false;
  return true;
}
bool modifiers_off(const kvh_attention_args& a) {
  const ScoreModifiers m = make_score_modifiers(a);
  return m.sliding_window == 0 && m.softcap == 0.f && !m.sinks && !m.alibi;
}
}  // namespace

hipError_t mla_check_args(const kvh_attention_args& a, MlaParams* out) {
  if (!KVH_HAS_FIELD(&a, kvh_attention_args, plan)) return hipErrorInvalidValue;  // a 0.6 caller only
  const kvh_tensor &q = a.query, &o = a.out, &kc = a.key_cache, &bt = a.block_tables;
  if (q.ndim != 3 || o.ndim != 3 || kc.ndim != 3 || bt.ndim != 2 || bt.dtype != KVH_DT_I32) return hipErrorInvalidValue;
  if (a.value_cache.data != kc.data || a.value_cache.dtype != kc.dtype) return hipErrorInvalidValue;
  if (q.dtype != KVH_DT_F16 && q.dtype != KVH_DT_BF16) return hipErrorInvalidValue;
  const bool fp8 = is_fp8(kc.dtype);
  if (o.dtype != q.dtype || (!fp8 && kc.dtype != q.dtype)) return hipErrorInvalidValue;
  const int64_t rows = q.shape[0], H = q.shape[1], D = q.shape[2], R = o.shape[2], S = bt.shape[0];
  if (o.shape[0] != rows || o.shape[1] != H || R < 1 || R > D || D > kMlaMaxHeadSize || D % 8 != 0)
    return hipErrorInvalidValue;
  if (kc.shape[2] != D || kc.shape[1] != a.block_size || a.block_size < 1 || H < 1 || H > 65535 || S > 65535)
    return hipErrorInvalidValue;
  if (rows > INT32_MAX || !modifiers_off(a) || (a.causal != 0 && a.causal != 1)) return hipErrorInvalidValue;
  MlaParams p;
  p.num_seqs = int32_t(S), p.num_heads = int32_t(H), p.R = int32_t(R), p.D = int32_t(D);
  p.num_query_tokens = int32_t(rows);
  p.block_size = a.block_size, p.num_blocks = kc.shape[0], p.bt_width = bt.shape[1];
  p.max_context_len = a.max_context_len, p.scale = a.scale, p.causal = a.causal;
  if (a.query_start_loc.data) {
    if (!shape_is(a.query_start_loc, KVH_DT_I32, {S + 1}) || a.num_query_tokens != rows) return hipErrorInvalidValue;
    if (S > 0 && (a.max_query_len < 1 || a.max_query_len > kMlaMaxQueryLen)) return hipErrorInvalidValue;
    p.qsl = static_cast<const int32_t*>(a.query_start_loc.data), p.qsl_s = a.query_start_loc.stride[0];
    p.max_query_len = a.max_query_len < 1 ? 1 : a.max_query_len;
  } else if (a.max_query_len > 1 || rows != S) {
    return hipErrorInvalidValue;
  }
  const kvh_tensor& lens = a.seq_lens.data ? a.seq_lens : a.context_lens;
  if (!shape_is(lens, KVH_DT_I32, {S})) return hipErrorInvalidValue;
  p.lens = static_cast<const int32_t*>(lens.data), p.lens_s = lens.stride[0];
  if (S == 0 || rows == 0) {
    *out = p;
    return hipSuccess;
  }
  if (a.max_context_len < 1 || bt.shape[1] * a.block_size < a.max_context_len) return hipErrorInvalidValue;
  if (!q.data || !o.data || !kc.data || !bt.data) return hipErrorInvalidValue;
  // fp8: one per-tensor scale (kv_scales TENSOR, or NONE with k_scale_tensor or the float k_scale).
  const KvScales sc = kv_scales_of(a);
  if (sc.granularity != KVH_SCALES_NONE && (!fp8 || sc.granularity != KVH_SCALES_TENSOR)) return hipErrorInvalidValue;
  if (sc.granularity == KVH_SCALES_TENSOR) {
    if (!shape_is(a.k_scales, KVH_DT_F32, {1})) return hipErrorInvalidValue;
    p.k_scale_ptr = static_cast<const float*>(a.k_scales.data);
  } else if (fp8 && a.k_scale_tensor.data) {
    if (!shape_is(a.k_scale_tensor, KVH_DT_F32, {1})) return hipErrorInvalidValue;
    p.k_scale_ptr = static_cast<const float*>(a.k_scale_tensor.data);
  }
  p.k_scale = fp8 ? a.k_scale : 1.f;
  for (int i = 0; i < 3; ++i) p.out_s[i] = o.stride[i], p.q_s[i] = q.stride[i], p.c_s[i] = kc.stride[i];
  p.bt_s[0] = bt.stride[0], p.bt_s[1] = bt.stride[1];
  p.query = q.data, p.out = o.data, p.cache = kc.data, p.bt = static_cast<const int32_t*>(bt.data);
  // The plan (mla_decode.h): num_splits [S], split_bounds [S, max_splits + 1], work [num_work, 3].
  if (a.num_plan_tensors != 3) return hipErrorInvalidValue;
  const kvh_tensor &ns = a.plan[0], &bd = a.plan[1], &wk = a.plan[2];
  if (bd.ndim != 2 || wk.ndim != 2) return hipErrorInvalidValue;
  const int64_t ms = bd.shape[1] - 1, nw = wk.shape[0];
  if (ms < 1 || ms > kMlaMaxSplits || nw < 0 || nw > INT32_MAX || !shape_is(ns, KVH_DT_I32, {S}) ||
      !shape_is(bd, KVH_DT_I32, {S, ms + 1}) || (nw > 0 && !shape_is(wk, KVH_DT_I32, {nw, 3})))
    return hipErrorInvalidValue;
  p.num_splits = static_cast<const int32_t*>(ns.data), p.ns_s = ns.stride[0];
  p.bounds = static_cast<const int32_t*>(bd.data), p.b_s[0] = bd.stride[0], p.b_s[1] = bd.stride[1];
  p.work = static_cast<const int32_t*>(wk.data), p.w_s[0] = wk.stride[0], p.w_s[1] = wk.stride[1];
  p.num_work = int32_t(nw), p.max_splits = int32_t(ms);
  // The workspaces (mla_decode_workspaces).
  if (a.num_workspaces != 3 || !shape_is(a.workspaces[0], KVH_DT_F32, {rows, H, ms}) ||
      !shape_is(a.workspaces[1], KVH_DT_F32, {rows, H, ms}) || !shape_is(a.workspaces[2], KVH_DT_F32, {rows, H, ms, R}))
    return hipErrorInvalidValue;
  p.wmax = static_cast<float*>(a.workspaces[0].data), p.wsum = static_cast<float*>(a.workspaces[1].data);
  p.wout = static_cast<float*>(a.workspaces[2].data);
  for (int i = 0; i < 3; ++i) p.wmax_s[i] = a.workspaces[0].stride[i], p.wsum_s[i] = a.workspaces[1].stride[i];
  for (int i = 0; i < 4; ++i) p.wout_s[i] = a.workspaces[2].stride[i];
  *out = p;
  return hipSuccess;
}

namespace {
thread_local const char* g_why = "";
}  // namespace

int mla_decode_attention(void*, const kvh_attention_args* a, void* stream) { return launch_mla_decode<>(*a, stream); }

int mla_decode_workspaces(void*, const kvh_attention_args* a, kvh_workspace_spec* specs, int32_t max_specs,
                          int32_t* count) {
  *count = 0;
  if (!KVH_HAS_FIELD(a, kvh_attention_args, plan) || a->num_plan_tensors < 2 || a->plan[1].ndim != 2 ||
      a->query.ndim != 3 || a->out.ndim != 3 || max_specs < 3) {
    g_why = "mla_decode workspaces: no plan (the harness plans before it asks for workspaces)";
    return KVH_UNSUPPORTED;
  }
  const int64_t rows = a->query.shape[0], H = a->query.shape[1], R = a->out.shape[2], ms = a->plan[1].shape[1] - 1;
  const char* names[3] = {"split_max", "split_sum", "split_out"};
  for (int i = 0; i < 3; ++i) {
    kvh_workspace_spec& w = specs[i];
    w = kvh_workspace_spec{};
    w.dtype = KVH_DT_F32;
    w.ndim = i < 2 ? 3 : 4;
    w.shape[0] = rows, w.shape[1] = H, w.shape[2] = ms, w.shape[3] = i < 2 ? 0 : R;
    for (int c = 0; names[i][c]; ++c) w.name[c] = names[i][c];
  }
  *count = 3;
  return 0;
}

int mla_decode_plan(void*, const kvh_plan_args* a, kvh_plan* out) {
  thread_local MlaPlanStorage st;
  return mla_build_plan(*a, kMlaHeadTile, st, out, &g_why);
}

/// The reason of the last KVH_UNSUPPORTED of the planner or the workspaces entry on this thread.
const char* mla_decode_last_error(void*) { return g_why; }

kvh_capabilities mla_decode_capabilities() {
  kvh_capabilities c{};
  c.cache_formats = 1u << KVH_CACHE_MLA;
  c.cache_dtypes = (1u << KVH_DT_F16) | (1u << KVH_DT_BF16) | (1u << KVH_DT_FP8_E4M3FN) | (1u << KVH_DT_FP8_E4M3FNUZ);
  c.kv_scales = (1u << KVH_SCALES_NONE) | (1u << KVH_SCALES_TENSOR);
  c.modifiers = KVH_MOD_NON_CAUSAL;
  c.max_query_len = kMlaMaxQueryLen;
  return c;
}

}  // namespace kvh::kernels
