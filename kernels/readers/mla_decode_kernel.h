// The kernels and planner of mla_decode (layout and contract in mla_decode.h), one
// source templated on the element types and a Variant policy (the correct rules
// below; fixtures/mla_decode_fixtures.hip and testing/planted_mla_readers.hip
// substitute one). Written from provider.h's KVH_CACHE_MLA reader definition.
//
// Design
//   Split kernel, grid (num_work, max_query_len), kMlaThreads threads: work item w =
//   (sequence s, first head h0, split i) and query token j of s. The program serves
//   nh <= kMlaHeadTile heads of that token over the keys [b_i, b_{i+1}) it sees
//   (causal: t <= p = L - q + j), in tiles of kMlaKeyTile keys:
//     1. q of its heads -> shared (float);
//     2. logits: one (head, key) pair per thread, dot over all R + P dims of the latent row;
//     3. online softmax: thread hh < nh owns head hh's running max / sum and the tile's
//        rescale factor (shared memory only: correct for any wavefront size);
//     4. P.V: thread d owns value dims d, d + kMlaThreads, ... of every head; each latent
//        element it loads serves all nh heads.
//   It writes the split's max, exp-sum and unnormalised output (relative to that max) to
//   the workspaces; a split the token sees nothing of writes nothing.
//   Reduce, grid (max_query_len, num_heads, num_seqs): for query row r of s and head h,
//   merges splits i < num_splits[s] with b_i <= last visible key (exactly those written),
//   and writes out[r, h, 0:R].
// Robustness: device values (query_start_loc, seq_lens, the plan) are clamped, never
// trusted: a work item out of range does nothing, keys outside [0, L) are never loaded.
#pragma once
#include <math.h>
#include <stdint.h>

#include <vector>

#include "readers/attention_args.h"
#include "readers/mla_decode.h"

namespace kvh::kernels {

constexpr int kMlaThreads = 128;
constexpr int kMlaKeyTile = 32;
constexpr int64_t kMlaMaxHeadSize = 640;  // R + P: a head tile's q lives in shared memory (40 KiB)
constexpr int kMlaMaxValueDims = int((kMlaMaxHeadSize + kMlaThreads - 1) / kMlaThreads);
constexpr int32_t kMlaSplitAlign = 16;    // split boundaries are multiples of 16 tokens
constexpr int64_t kMlaDefaultComputeUnits = 304;  // MI300X, when the planner is told none

/// Everything both kernels need, by value (strides in elements).
struct MlaParams {
  void* out = nullptr;
  const void* query = nullptr;
  const void* cache = nullptr;
  const int32_t *bt = nullptr, *lens = nullptr, *qsl = nullptr;
  int64_t out_s[3] = {}, q_s[3] = {}, c_s[3] = {}, bt_s[2] = {}, lens_s = 0, qsl_s = 0;
  int64_t block_size = 1, num_blocks = 0, bt_width = 0;
  int32_t num_seqs = 0, num_heads = 0, R = 0, D = 0, num_query_tokens = 0, max_query_len = 1;
  int32_t max_context_len = 0, causal = 1;
  float scale = 1.f, k_scale = 1.f;
  const float* k_scale_ptr = nullptr;  // fp8: the per-tensor scale on the device (k_scales / k_scale_tensor)
  const int32_t *num_splits = nullptr, *bounds = nullptr, *work = nullptr;  // the plan
  int64_t ns_s = 0, b_s[2] = {}, w_s[2] = {};
  int32_t num_work = 0, max_splits = 0;
  float *wmax = nullptr, *wsum = nullptr, *wout = nullptr;  // the workspaces
  int64_t wmax_s[3] = {}, wsum_s[3] = {}, wout_s[4] = {};
};

/// The correct rules; fixtures and planted readers substitute one.
struct MlaCorrectVariant {
  /// Dims of the latent row the score sums over: all R + P.
  static KVH_HD int score_dims(int /*R*/, int D) { return D; }
  /// First latent dim of the value: 0 (value = cache[t, 0:R]).
  static KVH_HD int value_offset(int /*R*/, int /*D*/) { return 0; }
  /// Splits the reduce merges for a sequence the plan cut into n.
  static KVH_HD int reduce_splits(int n) { return n; }
  /// The physical block and slot of key t: block_tables[s][t / block_size], slot t % block_size.
  static KVH_HD int64_t page_of(int t, int64_t bs, int64_t /*bt_width*/) { return t / bs; }
  static KVH_HD int64_t slot_of(int t, int64_t bs) { return t % bs; }
  static KVH_HD int64_t block_of(int64_t b, int64_t /*num_blocks*/) { return b; }
  /// The last key query token j of a q-token chunk of an L-token sequence sees.
  static KVH_HD int last_key(int L, int q, int j, int causal) { return causal ? L - q + j : L - 1; }
};

/// Query rows [start, start + q) of sequence s, clamped to the call's rows and max_query_len.
struct MlaQueries {
  int64_t start;
  int q;
};
KVH_HD inline MlaQueries mla_queries(const MlaParams& a, int s) {
  int64_t q0 = s, q1 = int64_t(s) + 1;
  if (a.qsl) q0 = a.qsl[s * a.qsl_s], q1 = a.qsl[(s + 1) * a.qsl_s];
  q0 = q0 < 0 ? 0 : (q0 > a.num_query_tokens ? a.num_query_tokens : q0);
  q1 = q1 < q0 ? q0 : (q1 > a.num_query_tokens ? a.num_query_tokens : q1);
  if (q1 - q0 > a.max_query_len) q1 = q0 + a.max_query_len;
  return {q0, int(q1 - q0)};
}
KVH_HD inline int mla_seq_len(const MlaParams& a, int s) {
  const int32_t n = a.lens[s * a.lens_s];
  return n < a.max_context_len ? (n < 0 ? 0 : n) : a.max_context_len;
}
/// Split boundary i of sequence s, clamped to [0, L].
KVH_HD inline int mla_bound(const MlaParams& a, int s, int i, int L) {
  const int32_t b = a.bounds[s * a.b_s[0] + i * a.b_s[1]];
  return b < 0 ? 0 : (b > L ? L : b);
}

template <class T, class C, class V>
__global__ void __launch_bounds__(kMlaThreads) mla_split_kernel(MlaParams a) {
  const int tid = int(threadIdx.x), nt = int(blockDim.x), j = int(blockIdx.y);
  const int32_t* wk = a.work + int64_t(blockIdx.x) * a.w_s[0];
  const int s = wk[0], h0 = wk[a.w_s[1]], split = wk[2 * a.w_s[1]];
  if (s < 0 || s >= a.num_seqs || h0 < 0 || h0 >= a.num_heads || split < 0 || split >= a.max_splits) return;
  const MlaQueries qs = mla_queries(a, s);
  const int L = mla_seq_len(a, s);
  if (j >= qs.q || qs.q > L) return;
  const int last = V::last_key(L, qs.q, j, a.causal);
  const int b0 = mla_bound(a, s, split, L), b1 = mla_bound(a, s, split + 1, L);
  const int hi = b1 - 1 < last ? b1 - 1 : last;
  if (b0 > hi) return;  // nothing of this split is visible: the reduce never merges it
  const int nh = a.num_heads - h0 < kMlaHeadTile ? a.num_heads - h0 : kMlaHeadTile;
  const int D = a.D, R = a.R;
  const int64_t row = qs.start + j;

  KVH_DYNAMIC_SHARED(float, smem);  // q [tile, D] | S [tile, key tile] | max, sum, rescale [tile]
  float* q_sh = smem;
  float* S = q_sh + kMlaHeadTile * D;
  float* m_sh = S + kMlaHeadTile * kMlaKeyTile;
  float* l_sh = m_sh + kMlaHeadTile;
  float* r_sh = l_sh + kMlaHeadTile;
  const T* qp = static_cast<const T*>(a.query) + row * a.q_s[0];
  for (int i = tid; i < nh * D; i += nt) q_sh[i] = to_float(qp[int64_t(h0 + i / D) * a.q_s[1] + (i % D) * a.q_s[2]]);
  if (tid < nh) m_sh[tid] = -INFINITY, l_sh[tid] = 0.f;
  __syncthreads();

  using E = typename C::Storage;
  const E* cache = static_cast<const E*>(a.cache);
  const int32_t* bt = a.bt + int64_t(s) * a.bt_s[0];
  const float ksc = C::kQuantized ? (a.k_scale_ptr ? a.k_scale_ptr[0] : a.k_scale) : 1.f;
  auto latent_row = [&](int t) {
    const int64_t blk = V::block_of(bt[V::page_of(t, a.block_size, a.bt_width) * a.bt_s[1]], a.num_blocks);
    return cache + blk * a.c_s[0] + V::slot_of(t, a.block_size) * a.c_s[1];
  };
  const int sd = V::score_dims(R, D), vo = V::value_offset(R, D);
  float acc[kMlaMaxValueDims][kMlaHeadTile] = {};
  for (int t0 = b0; t0 <= hi; t0 += kMlaKeyTile) {
    const int n = hi - t0 + 1 < kMlaKeyTile ? hi - t0 + 1 : kMlaKeyTile;
    for (int i = tid; i < nh * n; i += nt) {  // 2. logits
      const int hh = i / n, k = i % n;
      const E* lr = latent_row(t0 + k);
      const float* qh = q_sh + hh * D;
      float dot = 0.f;
      for (int d = 0; d < sd; ++d) dot += qh[d] * C::load(lr, d * a.c_s[2]);
      S[hh * kMlaKeyTile + k] = a.scale * ksc * dot;
    }
    __syncthreads();
    if (tid < nh) {  // 3. online softmax of head tid
      float* Sr = S + tid * kMlaKeyTile;
      float mx = m_sh[tid];
      for (int k = 0; k < n; ++k) mx = fmaxf(mx, Sr[k]);
      const float resc = m_sh[tid] == -INFINITY ? 0.f : expf(m_sh[tid] - mx);
      float sum = 0.f;
      for (int k = 0; k < n; ++k) sum += (Sr[k] = expf(Sr[k] - mx));
      l_sh[tid] = l_sh[tid] * resc + sum, m_sh[tid] = mx, r_sh[tid] = resc;
    }
    __syncthreads();
    for (int di = 0; di < kMlaMaxValueDims; ++di) {  // 4. P.V
      const int d = tid + di * nt;
      if (d >= R) break;
      for (int hh = 0; hh < nh; ++hh) acc[di][hh] *= r_sh[hh];
      for (int k = 0; k < n; ++k) {
        const float v = C::load(latent_row(t0 + k), (vo + d) * a.c_s[2]) * ksc;
        for (int hh = 0; hh < nh; ++hh) acc[di][hh] += S[hh * kMlaKeyTile + k] * v;
      }
    }
    __syncthreads();  // S is rewritten by the next tile
  }
  for (int di = 0; di < kMlaMaxValueDims; ++di) {
    const int d = tid + di * nt;
    if (d >= R) break;
    for (int hh = 0; hh < nh; ++hh)
      a.wout[row * a.wout_s[0] + (h0 + hh) * a.wout_s[1] + split * a.wout_s[2] + d * a.wout_s[3]] = acc[di][hh];
  }
  if (tid < nh) {
    a.wmax[row * a.wmax_s[0] + (h0 + tid) * a.wmax_s[1] + split * a.wmax_s[2]] = m_sh[tid];
    a.wsum[row * a.wsum_s[0] + (h0 + tid) * a.wsum_s[1] + split * a.wsum_s[2]] = l_sh[tid];
  }
}

template <class T, class V>
__global__ void __launch_bounds__(kMlaThreads) mla_reduce_kernel(MlaParams a) {
  const int tid = int(threadIdx.x), nt = int(blockDim.x);
  const int j = int(blockIdx.x), h = int(blockIdx.y), s = int(blockIdx.z);
  const MlaQueries qs = mla_queries(a, s);
  const int L = mla_seq_len(a, s);
  if (j >= qs.q) return;
  const int64_t row = qs.start + j;
  T* out = static_cast<T*>(a.out) + row * a.out_s[0] + int64_t(h) * a.out_s[1];
  const int last = qs.q <= L ? V::last_key(L, qs.q, j, a.causal) : -1;
  int32_t n = a.num_splits[s * a.ns_s];
  n = n < 0 ? 0 : (n > a.max_splits ? a.max_splits : n);
  n = V::reduce_splits(n);
  const float* mx = a.wmax + row * a.wmax_s[0] + int64_t(h) * a.wmax_s[1];
  const float* sm = a.wsum + row * a.wsum_s[0] + int64_t(h) * a.wsum_s[1];
  const float* po = a.wout + row * a.wout_s[0] + int64_t(h) * a.wout_s[1];
  auto merged = [&](int i) { return i < n && mla_bound(a, s, i, L) <= last && mla_bound(a, s, i, L) < L; };
  float M = -INFINITY;
  for (int i = 0; i < n; ++i)
    if (merged(i)) M = fmaxf(M, mx[i * a.wmax_s[2]]);
  auto weight = [&](int i) { return merged(i) && mx[i * a.wmax_s[2]] != -INFINITY ? expf(mx[i * a.wmax_s[2]] - M) : 0.f; };
  float den = 0.f;
  for (int i = 0; i < n; ++i)
    if (merged(i)) den += weight(i) * sm[i * a.wsum_s[2]];
  for (int d = tid; d < a.R; d += nt) {
    float num = 0.f;
    for (int i = 0; i < n; ++i)
      if (merged(i)) num += weight(i) * po[i * a.wout_s[2] + d * a.wout_s[3]];
    out[d * a.out_s[2]] = from_float<T>(den != 0.f ? num / den : 0.f);
  }
}

/// Floats of the split kernel's dynamic shared memory for head size D.
KVH_HD inline int64_t mla_shared_floats(int D) { return int64_t(kMlaHeadTile) * (D + kMlaKeyTile + 3); }

/// Host storage of one plan (mla_build_plan), alive until the next plan on the thread.
struct MlaPlanStorage {
  std::vector<int32_t> num_splits, bounds, work;
};

/// Builds the plan of mla_decode.h for `a` with work items of `head_tile` heads: sequence s of
/// L tokens gets n_s = min(max(1, cu / (num_seqs * head tiles)), ceil(L / kMlaMinSplitTokens),
/// kMlaMaxSplits) splits of ceil(L / n_s) tokens rounded up to kMlaSplitAlign. KVH_UNSUPPORTED
/// (why in *why) when a count is out of range, a sequence has no token, or the work exceeds
/// INT32_MAX items.
inline int mla_build_plan(const kvh_plan_args& a, int head_tile, MlaPlanStorage& st, kvh_plan* out,
                          const char** why) {
  *out = kvh_plan{};
  if (a.num_seqs < 1 || a.num_seqs > 65535 || a.num_heads < 1 || head_tile < 1 || !a.seq_lens) {
    *why = "mla_decode plan: needs num_seqs in 1..65535, num_heads >= 1 and seq_lens";
    return KVH_UNSUPPORTED;
  }
  const int64_t S = a.num_seqs, tiles = (a.num_heads + head_tile - 1) / head_tile;
  const int64_t cu = a.compute_units > 0 ? a.compute_units : kMlaDefaultComputeUnits;
  const int64_t target = cu / (S * tiles) > 1 ? cu / (S * tiles) : 1;
  st.num_splits.assign(size_t(S), 0);
  std::vector<int64_t> len(static_cast<size_t>(S), 0);
  int64_t max_splits = 1;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t L = a.seq_lens[s];
    if (L < 1) {
      *why = "mla_decode plan: a sequence without tokens";
      return KVH_UNSUPPORTED;
    }
    int64_t n = target;
    n = n < (L + kMlaMinSplitTokens - 1) / kMlaMinSplitTokens ? n : (L + kMlaMinSplitTokens - 1) / kMlaMinSplitTokens;
    n = n < kMlaMaxSplits ? n : kMlaMaxSplits;
    int64_t l = (L + n - 1) / n;
    l = (l + kMlaSplitAlign - 1) / kMlaSplitAlign * kMlaSplitAlign;
    n = (L + l - 1) / l;
    st.num_splits[size_t(s)] = int32_t(n), len[size_t(s)] = l;
    max_splits = n > max_splits ? n : max_splits;
  }
  if (S * tiles * max_splits > INT32_MAX / 3) {
    *why = "mla_decode plan: too many work items";
    return KVH_UNSUPPORTED;
  }
  st.bounds.assign(size_t(S * (max_splits + 1)), 0);
  st.work.clear();
  for (int64_t s = 0; s < S; ++s) {
    const int64_t L = a.seq_lens[s], n = st.num_splits[size_t(s)];
    for (int64_t i = 0; i <= max_splits; ++i) {
      const int64_t b = i * len[size_t(s)];
      st.bounds[size_t(s * (max_splits + 1) + i)] = int32_t(b < L ? b : L);
    }
    for (int64_t t = 0; t < tiles; ++t)
      for (int64_t i = 0; i < n; ++i)
        st.work.insert(st.work.end(), {int32_t(s), int32_t(t * head_tile), int32_t(i)});
  }
  auto spec = [](kvh_workspace_spec& w, const char* name, int64_t d0, int64_t d1) {
    w = kvh_workspace_spec{};
    w.dtype = KVH_DT_I32;
    w.ndim = d1 > 0 ? 2 : 1;
    w.shape[0] = d0, w.shape[1] = d1 > 0 ? d1 : 0;
    for (int c = 0; name[c] && c < 31; ++c) w.name[c] = name[c];
  };
  spec(out->specs[0], "num_splits", S, 0);
  spec(out->specs[1], "split_bounds", S, max_splits + 1);
  spec(out->specs[2], "work", int64_t(st.work.size() / 3), 3);
  out->data[0] = st.num_splits.data(), out->data[1] = st.bounds.data(), out->data[2] = st.work.data();
  out->num_tensors = 3;
  return 0;
}

/// Fills MlaParams from `a` after checking it against mla_decode's contract (mla_decode.h):
/// hipErrorInvalidValue on any mismatch (shapes, dtypes, the plan's and workspaces' specs, a
/// score modifier set, max_query_len past kMlaMaxQueryLen).
hipError_t mla_check_args(const kvh_attention_args& a, MlaParams* p);

/// Validates and launches the split kernel and the reduce with Variant V.
template <class V = MlaCorrectVariant>
int launch_mla_decode(const kvh_attention_args& a, void* stream) {
  MlaParams p;
  if (hipError_t e = mla_check_args(a, &p); e != hipSuccess) return e;
  if (p.num_seqs == 0 || p.num_query_tokens == 0) return hipSuccess;
  const hipStream_t st = static_cast<hipStream_t>(stream);
  const size_t shared = sizeof(float) * size_t(mla_shared_floats(p.D));
  return with_reader_types(a, [&](auto t, auto c) {
    using T = decltype(t);
    if (p.num_work > 0) {
      hipLaunchKernelGGL(HIP_KERNEL_NAME(mla_split_kernel<T, decltype(c), V>),
                         dim3(unsigned(p.num_work), unsigned(p.max_query_len)), dim3(kMlaThreads), shared, st, p);
      if (hipError_t e = hipGetLastError(); e != hipSuccess) return int(e);
    }
    hipLaunchKernelGGL(HIP_KERNEL_NAME(mla_reduce_kernel<T, V>),
                       dim3(unsigned(p.max_query_len), unsigned(p.num_heads), unsigned(p.num_seqs)), dim3(kMlaThreads),
                       0, st, p);
    return int(hipGetLastError());
  });
}

}  // namespace kvh::kernels
