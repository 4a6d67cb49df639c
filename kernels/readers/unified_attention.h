// Unified (varlen) paged attention: ragged batches of query tokens (chunked
// prefill, speculative decode, plain decode) over a paged KV cache, one source
// templated on the cache format (NHD or HND: K and V alike, through CacheAddr),
// the element types and a Variant policy (the correct rules below; fixtures and
// planted readers replace one). Included by unified_attention.hip (the
// readers), fixtures/unified_attention_fixtures.hip and
// testing/planted_unified_readers.hip. Written from the definition in
// kvharness/provider.h (kvh_attention_args, kvharness 0.4):
//   sequence s has q_s query tokens at rows query_start_loc[s] .. and L_s =
//   seq_lens[s] tokens; token j sits at p = L_s - q_s + j and sees keys t with
//   t <= p (causal) or t < L_s (causal = 0); the sliding window masks
//   t <= p - window; ALiBi adds slope[h] * (t - p); a sink joins the
//   denominator once.
//
// Design
//   Rows. A program serves one kv head's GQA group (or a chunk of it:
//   chunk_heads query heads) for block_q consecutive query tokens of one
//   sequence: R = (query tokens) x (query heads) rows, at most 32 (16 when
//   head_size > 128), so every K and V element it loads serves all of them. Any
//   group size works (6, 12, ...): the group is cut into chunks of at most 32
//   heads and the rest of the row budget goes to query tokens (block_q =
//   budget / chunk_heads). Row r is token r / nh, head r % nh of the program.
//   Each row knows its position p, its query head, and its visible keys
//   [first, last] (first: the window's, last: p when causal, else L - 1).
//   Keys. The program walks the union of its rows' visible keys, [lo, hi],
//   always inside [0, L), in tiles of 128 keys, with an online softmax:
//     1. logits: thread i takes key t0 + i, loads its K row once (x-vector
//        chunks through the format's addressing), dots it with every row's q
//        (shared, float) and writes the modified logit, or -inf where the row
//        does not see the key, to S[r][i] (shared);
//     2. softmax: row r owns a group of Lw lanes inside one warp (Lw = power
//        of two <= min(warpSize, 128 / R)): tile max by shuffles, new running
//        max, S := exp(S - max), tile sum; the running sum and the factor the
//        accumulators are rescaled by; an all-masked row stays at -inf/0 with
//        factor 1 (never exp(-inf - -inf));
//     3. P.V: threads = groups x lanes (lanes = min(128, head_size)); a thread
//        owns dims lane, lane + lanes of rows g, g + groups, ...; each V element
//        it loads serves all of its rows.
//   2d ("one pass"), grid (query blocks, kv heads x head chunks, sequences):
//   the program walks all of [lo, hi] and writes `out` (normalised, the sink
//   folded into the denominator once).
//   3d ("split-K"), grid (query blocks x segments, kv heads x head chunks,
//   sequences): segment g covers keys [g*ST, (g+1)*ST); a program walks
//   [lo, hi] within its segment, and returns at once where that is empty; else
//   it writes, for each of its rows, the running max, exp-sum and unnormalised
//   output (relative to that max) to the typed workspaces. A row the segment
//   shows nothing gets -inf / 0 / 0 there. The reduce, grid (max_query_len,
//   num_heads, sequences), merges for each row only the segments its own
//   visible keys [first, last] span (first/ST .. last/ST): every one of them
//   was written by a program that ran (the row's range lies inside its
//   program's union), so the NaN the workspaces arrive with is never read; it
//   adds the sink once and writes `out`.
//
// Typed workspaces of the 3d path (kvh_kernel_desc.workspaces), f32, addressed
// through their strides:
//   segm_max     [num_query_tokens, num_heads, num_segments]
//   segm_expsum  [num_query_tokens, num_heads, num_segments]
//   segm_output  [num_query_tokens, num_heads, num_segments, head_size]
// Segments: partition_size tokens when non-zero; else 16 segments over
// max_context_len (vLLM's NUM_SEGMENTS_PER_SEQ), each rounded up to the page.
//
// Robustness. Values in device arrays are clamped, never trusted:
// query_start_loc to [0, num_query_tokens], q_s to max_query_len, L to
// max_context_len (the block tables' promise). Keys outside [0, L) are never
// loaded (their pages may be padding). A NaN in the data reaches `out` (only
// a zero denominator, a row with no visible key, writes 0). fp8 caches: the element policy C
// decodes, the scale of the granularity (or k_scale_tensor / v_scale_tensor,
// make_ragged_attention_params) multiplies.
#pragma once
#include <stdint.h>

#include "readers/attention_args.h"
#include "readers/launch_params.h"
#include "readers/warp_reduce.h"

namespace kvh::kernels {

constexpr int kUaThreads = 128;       // threads of every program
constexpr int kUaTile = 128;          // keys a tile (one per thread in the logits step)
constexpr int kUaMaxRows = 32;        // (query token, query head) rows of a program
constexpr int kUaMaxDims = 2;         // dims of a row one thread owns in P.V: ceil(256 / 128)
constexpr int32_t kUaSegmentsPerSeq = 16;
constexpr int64_t kUaMaxSegments = 4096;
constexpr int32_t kUaMaxQueryLen = 65536;  // declared capability

/// Rows of a program for head_size hs: 32, or 16 where a thread owns two dims of a row.
KVH_HD inline int ua_row_budget(int hs) { return hs > kUaThreads ? kUaMaxRows / 2 : kUaMaxRows; }

/// How a launch cuts a kv head's rows into programs.
struct UaTiling {
  int32_t group;        // query heads per kv head
  int32_t chunk_heads;  // query heads of one program (the last chunk of a group may have fewer)
  int32_t head_chunks;  // programs across one group
  int32_t block_q;      // query tokens of one program
};
inline UaTiling ua_tiling(int num_heads, int num_kv_heads, int hs) {
  UaTiling t;
  t.group = num_heads / num_kv_heads;
  const int budget = ua_row_budget(hs);
  t.chunk_heads = t.group < budget ? t.group : budget;
  t.head_chunks = (t.group + t.chunk_heads - 1) / t.chunk_heads;
  t.block_q = budget / t.chunk_heads;
  return t;
}

/// The 3d path's workspaces (data + strides, elements) and segmentation; 2d: segment_tokens 0.
struct UaSegments {
  float *max = nullptr, *expsum = nullptr, *out = nullptr;
  int64_t max_s[3] = {}, sum_s[3] = {}, out_s[4] = {};
  int32_t num_segments = 1, segment_tokens = 0;
};

/// Segmentation of the 3d path for args `a`: false when partition_size is negative, there is
/// no context, or more than kUaMaxSegments segments would be needed. A call passing
/// partition_size 0 takes the launch configuration's partition_size (issue 23 (D)), else 16
/// segments.
struct UaSegmentPlan {
  int32_t segment_tokens = 0, num_segments = 0;
};
inline bool ua_segment_plan(const kvh_attention_args& a, UaSegmentPlan* sp) {
  if (a.partition_size < 0 || a.max_context_len < 1 || a.block_size < 1) return false;
  int64_t st = a.partition_size;
  if (st == 0 && KVH_HAS_FIELD(&a, kvh_attention_args, launch_config))  // issue 23 (D)
    st = launch_param(a.launch_config, "partition_size", 0);
  if (st < 0) return false;  // a malformed configuration value
  if (st == 0) {
    st = (int64_t(a.max_context_len) + kUaSegmentsPerSeq - 1) / kUaSegmentsPerSeq;
    st = (st + a.block_size - 1) / a.block_size * a.block_size;
  }
  const int64_t ns = (int64_t(a.max_context_len) + st - 1) / st;
  if (st > INT32_MAX || ns > kUaMaxSegments) return false;
  sp->segment_tokens = int32_t(st), sp->num_segments = int32_t(ns);
  return true;
}

/// The correct rules; fixtures/unified_attention_fixtures.hip and
/// testing/planted_unified_readers.hip substitute one of them.
struct UnifiedCorrectVariant {
  /// Every cache element policy (16-bit, fp8, int8); Only16BitCaches sets it.
  static constexpr bool k16BitCachesOnly = false;
  /// GQA (vLLM, aiter): the j-th query head of kv head kv's group of `group` heads.
  static KVH_HD int query_head(int kv, int j, int group) { return kv * group + j; }
  /// Sequence programs the launcher starts (grid z): one per sequence.
  static int seq_programs(int num_seqs) { return num_seqs; }
  /// Whether query_start_loc values are clamped to [0, num_query_tokens] and q_s to max_query_len.
  static constexpr bool kClampQueryStart = true;
  /// Index of block_tables and seq_lens for sequence s, whose program (or reduce) starts at query row `row`.
  static KVH_HD int64_t meta_index(int s, int64_t /*row*/) { return s; }
  /// Row of query/out for token j of sequence s, whose tokens start at row q_start (packed).
  static KVH_HD int64_t query_row(int64_t q_start, int /*s*/, int j, int /*max_query_len*/) { return q_start + j; }
  /// Query tokens of a sequence the kernels serve, of its q.
  static KVH_HD int query_tokens(int q) { return q; }
  /// Position of token j of a sequence of L tokens, q of them new.
  static KVH_HD int position(int L, int q, int j) { return L - q + j; }
  /// The first key the sliding window keeps for the query at p (0 when off).
  static KVH_HD int first_key(const ScoreModifiers& m, int p, int /*L*/) {
    return m.sliding_window > 0 && p - m.sliding_window + 1 > 0 ? p - m.sliding_window + 1 : 0;
  }
  /// The last key the query at p sees: p when causal, else the sequence's last (never past L - 1).
  static KVH_HD int last_key(int p, int L, int causal, int64_t /*page*/) { return causal && p < L - 1 ? p : L - 1; }
  /// The logit of visible key t for query head h at p: soft-cap, then ALiBi relative to p.
  static KVH_HD float logit(const ScoreModifiers& m, float s, int h, int t, int p, int /*L*/) {
    s = m.capped(s);
    return m.alibi ? s + m.alibi_slope(h) * float(t - p) : s;
  }
  /// Query blocks of the grid (host): every block of the longest sequence's tokens.
  static int query_blocks(int max_query_len, int block_q) { return (max_query_len + block_q - 1) / block_q; }
  /// One past the last segment the reduce merges, of the row's last segment.
  static KVH_HD int reduce_end(int last_segment) { return last_segment + 1; }
  /// Rows of segm_expsum a query row's entries sit past its own row: 0.
  static constexpr int kExpSumRowShift = 0;
};

/// Query rows of sequence s: the first row and the count (clamped per the Variant).
struct UaQueries {
  int64_t start;
  int q;
};
template <class Variant>
__device__ inline UaQueries ua_queries(const RaggedParams& rp, int s) {
  int64_t q0 = s, q1 = int64_t(s) + 1;
  if (rp.qsl) q0 = rp.qsl[s * rp.qsl_s], q1 = rp.qsl[(s + 1) * rp.qsl_s];
  if (Variant::kClampQueryStart) {
    q0 = q0 < 0 ? 0 : (q0 > rp.num_query_tokens ? rp.num_query_tokens : q0);
    q1 = q1 < q0 ? q0 : (q1 > rp.num_query_tokens ? rp.num_query_tokens : q1);
    if (q1 - q0 > rp.max_query_len) q1 = q0 + rp.max_query_len;
  }
  const int q = q1 > q0 ? int(q1 - q0) : 0;
  return {q0, Variant::query_tokens(q)};
}

/// Tokens of the sequence whose metadata sits at index `mi`, clamped to max_context_len.
__device__ inline int ua_seq_len(const AttentionParams& a, const RaggedParams& rp, int64_t mi) {
  const int32_t n = rp.lens[mi * rp.lens_s];
  return n < a.max_context_len ? n : a.max_context_len;
}

/// Shared floats of a program with `rows` rows: q [rows, hs] | S [rows, tile] | 7 per-row values.
KVH_HD inline int64_t ua_shared_floats(int rows, int hs) { return int64_t(rows) * (hs + kUaTile + 7); }

template <class T, class C, int kFormat, class Variant, bool kSplit>
__global__ void __launch_bounds__(kUaThreads)
    unified_attention_kernel(AttentionParams a, RaggedParams rp, UaTiling tl, UaSegments sg) {
  const int tid = int(threadIdx.x), nt = int(blockDim.x), hs = a.head_size;
  const int ns = kSplit ? sg.num_segments : 1;
  const int qb = int(blockIdx.x) / ns, seg = int(blockIdx.x) % ns;
  const int kv = int(blockIdx.y) / tl.head_chunks, chunk = int(blockIdx.y) % tl.head_chunks;
  const int s = int(blockIdx.z);
  const int nh = tl.group - chunk * tl.chunk_heads < tl.chunk_heads ? tl.group - chunk * tl.chunk_heads : tl.chunk_heads;
  const UaQueries qs = ua_queries<Variant>(rp, s);
  const int j0 = qb * tl.block_q;
  if (j0 >= qs.q) return;  // uniform over the block
  const int nq = qs.q - j0 < tl.block_q ? qs.q - j0 : tl.block_q, R = nq * nh;
  const int64_t mi = Variant::meta_index(s, qs.start + j0);
  const int L = ua_seq_len(a, rp, mi);
  const int64_t page = a.block_size;
  auto row_of = [&](int r) { return Variant::query_row(qs.start, s, j0 + r / nh, rp.max_query_len); };

  // shared: q [B, hs] | S [B, tile] | max, sum, rescale [B] | first, last, pos, head [B] (int)
  const int B = tl.block_q * tl.chunk_heads;
  KVH_DYNAMIC_SHARED(float, smem);
  float* q_sh = smem;
  float* S = q_sh + B * hs;
  float* row_max = S + B * kUaTile;
  float* row_sum = row_max + B;
  float* row_rescale = row_sum + B;
  int* row_first = reinterpret_cast<int*>(row_rescale + B);
  int* row_last = row_first + B;
  int* row_pos = row_last + B;
  int* row_head = row_pos + B;

  for (int r = tid; r < R; r += nt) {
    const int p = Variant::position(L, qs.q, j0 + r / nh);
    row_head[r] = Variant::query_head(kv, chunk * tl.chunk_heads + r % nh, tl.group);
    row_pos[r] = p;
    row_first[r] = Variant::first_key(a.mods, p, L);
    row_last[r] = Variant::last_key(p, L, rp.causal, page);
    row_max[r] = -INFINITY, row_sum[r] = 0.f, row_rescale[r] = 1.f;
  }
  for (int i = tid; i < R * hs; i += nt) {
    const int r = i / hs, d = i % hs;
    const int h = Variant::query_head(kv, chunk * tl.chunk_heads + r % nh, tl.group);
    const T* q = static_cast<const T*>(a.query) + row_of(r) * a.q_s[0] + int64_t(h) * a.q_s[1];
    q_sh[i] = to_float(q[d * a.q_s[2]]);
  }
  __syncthreads();

  // The keys of this program: the union of its rows' visible keys (within its segment).
  int lo = INT32_MAX, hi = -1;
  for (int r = 0; r < R; ++r) {
    lo = row_first[r] < lo ? row_first[r] : lo;
    hi = row_last[r] > hi ? row_last[r] : hi;
  }
  if (kSplit) {
    const int64_t s0 = int64_t(seg) * sg.segment_tokens, s1 = s0 + sg.segment_tokens - 1;
    if (s0 > lo) lo = int(s0);
    if (s1 < hi) hi = int(s1);
    if (lo > hi) return;  // nothing of this segment is visible to any row: never merged by the reduce
  }

  using E = typename C::Storage;
  constexpr int x = C::kX;
  const CacheAddr<kFormat, x> cache = cache_addr_of<kFormat, x>(a);
  const E* kc = static_cast<const E*>(a.key_cache);
  const E* vc = static_cast<const E*>(a.value_cache);
  const int32_t* bt = a.block_tables + mi * a.bt_s[0];
  const int64_t k_chunk = cache.k.dim_offset(x), k_elem = cache.k.dim_stride(), v_dim = cache.v.dim_stride();
  const int lanes = nt < hs ? nt : hs, groups = nt / lanes, g = tid / lanes, lane = tid % lanes;
  const int dpt = (hs + lanes - 1) / lanes, rps = (R + groups - 1) / groups;
  const int Lw = floor_pow2(nt / R < warpSize ? nt / R : warpSize);
  float acc[kUaMaxDims][kUaMaxRows] = {};

  for (int t0 = lo; t0 <= hi; t0 += kUaTile) {
    const int n = hi - t0 + 1 < kUaTile ? hi - t0 + 1 : kUaTile;
    if (tid < n) {  // 1. logits of key t for every row
      const int t = t0 + tid;
      bool seen = false;
      for (int r = 0; r < R; ++r) seen |= row_first[r] <= t && t <= row_last[r];
      float dot[kUaMaxRows] = {};
      if (seen) {
        const int64_t blk = bt[(t / page) * a.bt_s[1]];
        const E* k = kc + cache.k.token_offset(blk, kv, t % page);
        const float ksc = kv_scale_of(a, false, blk, kv, t % page);
        for (int c = 0; c < hs / x; ++c)
          for (int e = 0; e < x; ++e) {
            const float kval = C::load(k, c * k_chunk + e * k_elem) * ksc;
            for (int r = 0; r < kUaMaxRows; ++r)
              if (r < R) dot[r] += q_sh[r * hs + c * x + e] * kval;
          }
      }
      for (int r = 0; r < kUaMaxRows; ++r)
        if (r < R)
          S[r * kUaTile + tid] = row_first[r] <= t && t <= row_last[r]
                                     ? Variant::logit(a.mods, a.scale * dot[r], row_head[r], t, row_pos[r], L)
                                     : -INFINITY;
    }
    __syncthreads();
    {  // 2. online softmax: row r on lanes [r*Lw, (r+1)*Lw)
      const int r = tid / Lw, l = tid % Lw;
      const bool live = r < R;
      float* srow = S + (live ? r : 0) * kUaTile;
      const float old = live ? row_max[r] : -INFINITY;  // read before lane 0 updates it
      float m = -INFINITY;
      if (live)
        for (int i = l; i < n; i += Lw) m = fmaxf(m, srow[i]);
      m = fmaxf(group_reduce(m, Lw, MaxOp{}), old);
      float sum = 0.f;
      if (live)
        for (int i = l; i < n; i += Lw) {
          const float e = m == -INFINITY ? 0.f : expf(srow[i] - m);
          srow[i] = e;
          sum += e;
        }
      sum = group_reduce(sum, Lw, SumOp{});
      if (live && l == 0) {
        const float f = m == -INFINITY ? 1.f : expf(old - m);
        row_rescale[r] = f;
        row_sum[r] = row_sum[r] * f + sum;
        row_max[r] = m;
      }
    }
    __syncthreads();
    if (g < groups) {  // 3. P.V: every V element loaded once for this thread's rows
      for (int k = 0; k < kUaMaxDims; ++k)
        for (int rr = 0; rr < kUaMaxRows; ++rr)
          if (k < dpt && rr < rps && g + rr * groups < R) acc[k][rr] *= row_rescale[g + rr * groups];
      for (int i = 0; i < n; ++i) {
        const int t = t0 + i;
        const int64_t blk = bt[(t / page) * a.bt_s[1]];
        const E* v = vc + cache.v.token_offset(blk, kv, t % page);
        const float vsc = kv_scale_of(a, true, blk, kv, t % page);
        for (int k = 0; k < kUaMaxDims; ++k) {
          const int d = lane + k * lanes;
          if (k >= dpt || d >= hs) break;
          const float vval = C::load(v, d * v_dim) * vsc;
          for (int rr = 0; rr < kUaMaxRows; ++rr)
            if (rr < rps && g + rr * groups < R) acc[k][rr] += S[(g + rr * groups) * kUaTile + i] * vval;
        }
      }
    }
    __syncthreads();  // S and the rescale factors are rewritten by the next tile
  }

  if (g < groups)
    for (int k = 0; k < kUaMaxDims; ++k)
      for (int rr = 0; rr < kUaMaxRows; ++rr) {
        const int r = g + rr * groups, d = lane + k * lanes;
        if (k >= dpt || rr >= rps || r >= R || d >= hs) continue;
        const int h = row_head[r];
        const int64_t row = row_of(r);
        if (kSplit) {
          sg.out[row * sg.out_s[0] + h * sg.out_s[1] + seg * sg.out_s[2] + d * sg.out_s[3]] = acc[k][rr];
          continue;
        }
        float num = acc[k][rr], den = row_sum[r];
        if (a.mods.has_sinks()) {  // one more term of the denominator, no value
          const float m = row_max[r], sink = a.mods.sink(h), m2 = fmaxf(m, sink);
          const float f = m == -INFINITY ? 0.f : expf(m - m2);
          num *= f;
          den = den * f + expf(sink - m2);
        }
        T* out = static_cast<T*>(a.out) + row * a.out_s[0] + int64_t(h) * a.out_s[1];
        out[d * a.out_s[2]] = from_float<T>(den != 0.f ? num / den : 0.f);
      }
  if (kSplit)
    for (int r = tid; r < R; r += nt) {
      const int64_t row = row_of(r), h = row_head[r];
      sg.max[row * sg.max_s[0] + h * sg.max_s[1] + seg * sg.max_s[2]] = row_max[r];
      sg.expsum[(row + Variant::kExpSumRowShift) * sg.sum_s[0] + h * sg.sum_s[1] + seg * sg.sum_s[2]] = row_sum[r];
    }
}

template <class T, class Variant>
__global__ void __launch_bounds__(kUaThreads)
    unified_attention_reduce_kernel(AttentionParams a, RaggedParams rp, UaSegments sg) {
  const int j = int(blockIdx.x), h = int(blockIdx.y), s = int(blockIdx.z);
  const int tid = int(threadIdx.x), nt = int(blockDim.x), hs = a.head_size;
  const UaQueries qs = ua_queries<Variant>(rp, s);
  if (j >= qs.q) return;
  const int L = ua_seq_len(a, rp, Variant::meta_index(s, qs.start + j));
  const int p = Variant::position(L, qs.q, j);
  const int first = Variant::first_key(a.mods, p, L), last = Variant::last_key(p, L, rp.causal, a.block_size);
  const int64_t row = Variant::query_row(qs.start, s, j, rp.max_query_len);
  T* out = static_cast<T*>(a.out) + row * a.out_s[0] + int64_t(h) * a.out_s[1];
  const int ST = sg.segment_tokens;
  const int g0 = first <= last ? first / ST : 0, g1 = first <= last ? Variant::reduce_end(last / ST) : 0;
  const float* mx = sg.max + row * sg.max_s[0] + int64_t(h) * sg.max_s[1];
  const float* sm = sg.expsum + (row + Variant::kExpSumRowShift) * sg.sum_s[0] + int64_t(h) * sg.sum_s[1];
  const float* po = sg.out + row * sg.out_s[0] + int64_t(h) * sg.out_s[1];
  float M = -INFINITY;
  for (int g = g0; g < g1; ++g) M = fmaxf(M, mx[g * sg.max_s[2]]);
  const bool sink = a.mods.has_sinks();
  if (sink) M = fmaxf(M, a.mods.sink(h));
  auto weight = [&](int g) {
    const float m = mx[g * sg.max_s[2]];
    return m == -INFINITY ? 0.f : expf(m - M);
  };
  float den = sink ? expf(a.mods.sink(h) - M) : 0.f;
  for (int g = g0; g < g1; ++g) den += weight(g) * sm[g * sg.sum_s[2]];
  for (int d = tid; d < hs; d += nt) {
    float num = 0.f;
    for (int g = g0; g < g1; ++g) num += weight(g) * po[g * sg.out_s[2] + d * sg.out_s[3]];
    out[d * a.out_s[2]] = from_float<T>(den != 0.f ? num / den : 0.f);
  }
}

/// The typed workspaces the 3d path needs for `a` (kvh_workspaces_fn without the context):
/// segm_max, segm_expsum [num_query_tokens, num_heads, num_segments] and segm_output
/// [num_query_tokens, num_heads, num_segments, head_size], f32. None (count 0) when the
/// args cannot be segmented (the launch then refuses them).
inline int unified_attention_workspaces(const kvh_attention_args* a, kvh_workspace_spec* specs, int32_t max_specs,
                                        int32_t* count) {
  *count = 0;
  UaSegmentPlan sp;
  if (a->query.ndim != 3 || max_specs < 3 || !ua_segment_plan(*a, &sp)) return 0;
  const int64_t rows = a->query.shape[0], heads = a->query.shape[1], hs = a->query.shape[2];
  const char* names[3] = {"segm_max", "segm_expsum", "segm_output"};
  for (int i = 0; i < 3; ++i) {
    kvh_workspace_spec& w = specs[i];
    w = kvh_workspace_spec{};
    w.dtype = KVH_DT_F32;
    w.ndim = i < 2 ? 3 : 4;
    w.shape[0] = rows, w.shape[1] = heads, w.shape[2] = sp.num_segments, w.shape[3] = i < 2 ? 0 : hs;
    for (int c = 0; names[i][c]; ++c) w.name[c] = names[i][c];
  }
  *count = 3;
  return 0;
}

/// Validates `a` (check_ragged_attention_args: max_query_len up to 65536, causal or not; for
/// the 3d path also the workspaces: three f32 tensors of the declared shapes) and launches the
/// 2d kernel, or the 3d kernel and its reduce. Returns 0 or a HIP error code; nothing is
/// launched on hipErrorInvalidValue.
template <int kFormat, bool kSplit, class Variant = UnifiedCorrectVariant>
int launch_unified_attention(const kvh_attention_args& a, void* stream) {
  RaggedParams rp;
  if (hipError_t e = check_ragged_attention_args(a, kFormat, /*check_head_size=*/true, kUaMaxQueryLen,
                                                 /*non_causal=*/true, &rp);
      e != hipSuccess)
    return e;
  if (rp.num_seqs == 0 || rp.num_query_tokens == 0) return hipSuccess;
  const AttentionParams p = make_ragged_attention_params(a, kFormat);
  const UaTiling tl = ua_tiling(p.num_heads, p.num_kv_heads, p.head_size);
  if (int64_t(p.num_kv_heads) * tl.head_chunks > 65535) return hipErrorInvalidValue;
  const int64_t qblocks = Variant::query_blocks(rp.max_query_len, tl.block_q);
  UaSegments sg;
  if (kSplit) {
    UaSegmentPlan sp;
    if (!KVH_HAS_FIELD(&a, kvh_attention_args, workspaces) || !ua_segment_plan(a, &sp) || a.num_workspaces < 3)
      return hipErrorInvalidValue;
    const int64_t rows = rp.num_query_tokens, heads = p.num_heads;
    for (int i = 0; i < 3; ++i) {
      const kvh_tensor& w = a.workspaces[i];
      const int64_t want[4] = {rows, heads, sp.num_segments, p.head_size};
      if (!w.data || w.dtype != KVH_DT_F32 || w.ndim != (i < 2 ? 3 : 4)) return hipErrorInvalidValue;
      for (int d = 0; d < w.ndim; ++d)
        if (w.shape[d] != want[d]) return hipErrorInvalidValue;
    }
    sg.max = static_cast<float*>(a.workspaces[0].data);
    sg.expsum = static_cast<float*>(a.workspaces[1].data);
    sg.out = static_cast<float*>(a.workspaces[2].data);
    for (int d = 0; d < 3; ++d) sg.max_s[d] = a.workspaces[0].stride[d], sg.sum_s[d] = a.workspaces[1].stride[d];
    for (int d = 0; d < 4; ++d) sg.out_s[d] = a.workspaces[2].stride[d];
    sg.num_segments = sp.num_segments, sg.segment_tokens = sp.segment_tokens;
  }
  if (qblocks * sg.num_segments > INT32_MAX) return hipErrorInvalidValue;
  const dim3 grid(unsigned(qblocks * sg.num_segments), unsigned(p.num_kv_heads * tl.head_chunks),
                  unsigned(Variant::seq_programs(rp.num_seqs)));
  const size_t shared = sizeof(float) * size_t(ua_shared_floats(tl.block_q * tl.chunk_heads, p.head_size));
  const hipStream_t st = static_cast<hipStream_t>(stream);
  return with_reader_types<true, Variant::k16BitCachesOnly>(a, [&](auto t, auto c) {
    using T = decltype(t);
    hipLaunchKernelGGL(HIP_KERNEL_NAME(unified_attention_kernel<T, decltype(c), kFormat, Variant, kSplit>), grid,
                       dim3(kUaThreads), shared, st, p, rp, tl, sg);
    if (hipError_t e = hipGetLastError(); e != hipSuccess || !kSplit) return int(e);
    hipLaunchKernelGGL(HIP_KERNEL_NAME(unified_attention_reduce_kernel<T, Variant>),
                       dim3(unsigned(rp.max_query_len), unsigned(p.num_heads), unsigned(Variant::seq_programs(rp.num_seqs))),
                       dim3(kUaThreads), 0, st, p, rp, sg);
    return int(hipGetLastError());
  });
}

}  // namespace kvh::kernels
