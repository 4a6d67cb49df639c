// pa_fwd_asm stand-in (included by pa_fwd_hd128.hip and testing/planted_asm.hip): a fixed-function decode-attention kernel specialised for
// head_size 128 and the shuffle layout, like aiter's ASM kernel `pa_fwd_asm`
// (declared capability: head_sizes = {128}).
//   K [num_blocks, num_kv_heads, 128/x, block_size, x]
//   V [num_blocks, num_kv_heads, block_size/x, 128, x]
// Like a fixed-function kernel it does not check head_size: every index uses
// the hard-coded 128. Launched on head_size 256 it reads the first 128 dims of
// q, K and V and writes only dims 0..127 of `out` (wrong logits, half of out
// never written); below 128 it reads past each head's data, possibly past the
// allocation. Routing must keep other head sizes away (aiter v0.1.12).
//
// Design: grid (num_kv_heads * head_chunks, num_seqs), 128 threads; a block
// serves up to 8 query heads of one kv head's GQA group (K and V loaded once
// for all of them) and thread d owns output dim d of each. The sequence is
// walked in chunks of 128 tokens with an online softmax, so any context
// length works without workspace. Per chunk: thread i computes token i's
// logits (x-vector loads, coalesced across threads); each head's group of
// lanes updates its running max and sum (shuffles over <= warpSize lanes) and
// turns the logits into weights; thread d rescales and accumulates sum_t w_t V[t][d].
// Score modifiers (ScoreModifiers): soft-cap and ALiBi turn each logit; the
// chunks start at the sliding window's first token; the sink logit joins the
// running max and sum once, after the last chunk.
//
// Multi-token mode (aiter's ASM kernels have multi-token / MTP variants): up to
// kMaxQueryTokens = 4 query tokens a sequence, causal only (kvh_attention_args
// 0.4: query_start_loc, seq_lens, max_query_len). The grid gains a third
// dimension, the query token j < max_query_len of the sequence; token j of q
// sits at p = L - q + j and sees tokens 0..p, which is exactly the decode
// problem over a context of p + 1 tokens (the window's first token, ALiBi's
// t - p and the sink all follow), so the block runs the decode algorithm with
// ctx = p + 1 on query/out row query_start_loc[s] + j. Decode calls (no
// query_start_loc, or q = 1) are unchanged: z = 0, ctx = L, row s.
#pragma once
#include <cmath>

#include "readers/attention_args.h"
#include "readers/warp_reduce.h"

namespace kvh::kernels {

constexpr int kHead = 128;      // the fixed function: also the thread count and the token chunk
constexpr int kGroupHeads = 8;  // query heads per block
constexpr int32_t kMaxQueryTokens = 4;  // multi-token mode: query tokens a sequence (causal)

/// The correct rules; kernels/testing/planted_asm.hip substitutes one of them.
struct AsmCorrectVariant {
  /// GQA (vLLM, aiter): the j-th query head of kv head kv's group is kv * group + j.
  static KVH_HD int query_head(int kv, int j, int num_heads, int num_kv_heads) {
    return kv * (num_heads / num_kv_heads) + j;
  }
  /// Lanes a softmax max/sum reduction combines: all L lanes of a head.
  static KVH_HD int reduce_width(int lanes) { return lanes; }
  /// Whether the accumulator is rescaled when the running max grows (it must be).
  static constexpr bool kRescaleAcc = true;
  /// Score modifiers (ScoreModifiers): soft-cap, then ALiBi, of the scaled score s.
  static KVH_HD float logit(const AttentionParams& a, float s, int h, int t, int ctx) { return a.mods.logit(s, h, t, ctx); }
};

template <class T, class C, class Variant>
__global__ void __launch_bounds__(kHead) pa_fwd_hd128_kernel(AttentionParams a, RaggedParams rp) {
  __shared__ float q_s[kGroupHeads][kHead], w_s[kGroupHeads][kHead];
  __shared__ float run_max[kGroupHeads], run_sum[kGroupHeads], rescale[kGroupHeads];
  const int s = int(blockIdx.y), qj = int(blockIdx.z), tid = int(threadIdx.x);
  const int group = a.num_heads / a.num_kv_heads, chunks = (group + kGroupHeads - 1) / kGroupHeads;
  const int kv = int(blockIdx.x) / chunks, j0 = (int(blockIdx.x) % chunks) * kGroupHeads;
  const int nh = group - j0 < kGroupHeads ? group - j0 : kGroupHeads;
  auto head = [&](int j) { return Variant::query_head(kv, j0 + j, a.num_heads, a.num_kv_heads); };
  // The sequence's query rows [row0, row0 + nq), clamped to the rows there are; token qj of them.
  int64_t row0 = s, row1 = int64_t(s) + 1;
  if (rp.qsl) row0 = rp.qsl[s * rp.qsl_s], row1 = rp.qsl[(s + 1) * rp.qsl_s];
  row0 = row0 < 0 ? 0 : (row0 > rp.num_query_tokens ? rp.num_query_tokens : row0);
  row1 = row1 < row0 ? row0 : (row1 > rp.num_query_tokens ? rp.num_query_tokens : row1);
  const int nq = int(row1 - row0 < rp.max_query_len ? row1 - row0 : rp.max_query_len);
  if (qj >= nq) return;  // uniform over the block
  const int64_t row = row0 + qj;
  const int32_t n_ctx = rp.lens[s * rp.lens_s];
  // Token qj sits at p = L - nq + qj: the decode problem over its first p + 1 tokens.
  const int ctx = (n_ctx < a.max_context_len ? n_ctx : a.max_context_len) - nq + 1 + qj;
  for (int j = 0; j < nh; ++j) {
    const T* q = static_cast<const T*>(a.query) + row * a.q_s[0] + head(j) * a.q_s[1];
    q_s[j][tid] = to_float(q[tid * a.q_s[2]]) * a.scale;
  }
  if (tid < kGroupHeads) run_max[tid] = -INFINITY, run_sum[tid] = 0.f;
  __syncthreads();

  // Cache elements through the policy C (cache_fp8.h): 16-bit as they are, fp8 decoded, times the scale.
  using E = typename C::Storage;
  constexpr int x = C::kX;
  const E* kc = static_cast<const E*>(a.key_cache);
  const E* vc = static_cast<const E*>(a.value_cache);
  const int32_t* bt = a.block_tables + s * a.bt_s[0];
  const ShuffleCacheAddr<x> cache = cache_addr_of<KVH_CACHE_SHUFFLE, x>(a);
  const int64_t k_chunk = cache.k.dim_offset(x), k_elem = cache.k.dim_stride();  // dim c*x + e: c * k_chunk + e * k_elem
  const int L = floor_pow2(kHead / nh < warpSize ? kHead / nh : warpSize);  // lanes per head
  float acc[kGroupHeads] = {};
  for (int c0 = a.mods.first_token(ctx); c0 < ctx; c0 += kHead) {
    const int n = ctx - c0 < kHead ? ctx - c0 : kHead;
    if (tid < n) {
      const int64_t t = c0 + tid, blk = bt[(t / a.block_size) * a.bt_s[1]];
      const E* k = kc + cache.k.token_offset(blk, kv, t % a.block_size);
      const float ksc = kv_scale_of(a, false, blk, kv, t % a.block_size);
      float dot[kGroupHeads] = {};
      for (int c = 0; c < kHead / x; ++c)
        for (int e = 0; e < x; ++e) {
          const float kval = C::load(k, c * k_chunk + e * k_elem) * ksc;
          for (int j = 0; j < kGroupHeads; ++j)
            if (j < nh) dot[j] += q_s[j][c * x + e] * kval;
        }
      for (int j = 0; j < kGroupHeads; ++j)  // constant bounds keep dot[] and acc[] in registers
        if (j < nh) w_s[j][tid] = Variant::logit(a, dot[j], head(j), int(t), ctx);
    }
    __syncthreads();
    {  // head j's lanes [j*L, (j+1)*L): new running max, weights, running sum
      const int j = tid / L, lane = tid % L, jj = j < nh ? j : 0;
      const float old_max = run_max[jj];  // read before any lane can update it
      float m = -INFINITY;
      if (j < nh)
        for (int i = lane; i < n; i += L) m = fmaxf(m, w_s[jj][i]);
      m = fmaxf(group_reduce(m, Variant::reduce_width(L), MaxOp{}), old_max);
      float sum = 0.f;
      if (j < nh)
        for (int i = lane; i < n; i += L) sum += (w_s[jj][i] = expf(w_s[jj][i] - m));
      sum = group_reduce(sum, Variant::reduce_width(L), SumOp{});
      if (j < nh && lane == 0) {
        rescale[j] = expf(old_max - m);  // 0 on the first chunk
        run_sum[j] = run_sum[j] * rescale[j] + sum;
        run_max[j] = m;
      }
    }
    __syncthreads();
    for (int j = 0; j < kGroupHeads; ++j)
      if (j < nh && Variant::kRescaleAcc) acc[j] *= rescale[j];
    for (int i = 0; i < n; ++i) {
      const int64_t t = c0 + i, blk = bt[(t / a.block_size) * a.bt_s[1]];
      const E* v = vc + cache.v.token_offset(blk, kv, t % a.block_size);
      const float vval = C::load(v, cache.v.dim_offset(tid)) * kv_scale_of(a, true, blk, kv, t % a.block_size);
      for (int j = 0; j < kGroupHeads; ++j)
        if (j < nh) acc[j] += w_s[j][i] * vval;
    }
    __syncthreads();  // w_s and rescale are rewritten by the next chunk
  }
  for (int j = 0; j < kGroupHeads; ++j) {
    if (j >= nh) continue;
    float num = acc[j], den = run_sum[j];
    if (a.mods.has_sinks() && ctx > 0) {  // the sink: one more term of the denominator, no value
      const float sink = a.mods.sink(head(j)), m2 = fmaxf(run_max[j], sink), r = expf(run_max[j] - m2);
      num *= r;
      den = den * r + expf(sink - m2);
    }
    T* out = static_cast<T*>(a.out) + row * a.out_s[0] + head(j) * a.out_s[1];
    out[tid * a.out_s[2]] = from_float<T>(ctx > 0 ? num / den : 0.f);
  }
}

/// Validates `a` (check_ragged_attention_args without the head-size test: decode, or up to
/// kMaxQueryTokens causal query tokens a sequence) and launches the kernel; returns 0 or a HIP
/// error code (nothing launched on hipErrorInvalidValue).
template <class Variant = AsmCorrectVariant>
int launch_pa_fwd_hd128(const kvh_attention_args* a, void* stream) {
  RaggedParams rp;
  if (hipError_t e = check_ragged_attention_args(*a, KVH_CACHE_SHUFFLE, /*check_head_size=*/false, kMaxQueryTokens,
                                                 /*non_causal=*/false, &rp);
      e != hipSuccess)
    return e;
  if (rp.num_seqs == 0 || rp.num_query_tokens == 0) return hipSuccess;
  const AttentionParams p = make_ragged_attention_params(*a, KVH_CACHE_SHUFFLE);
  const int group = p.num_heads / p.num_kv_heads;
  const dim3 grid(unsigned(p.num_kv_heads * ((group + kGroupHeads - 1) / kGroupHeads)), unsigned(rp.num_seqs),
                  unsigned(rp.max_query_len));
  return with_reader_types(*a, [&](auto t, auto c) {
    hipLaunchKernelGGL(HIP_KERNEL_NAME(pa_fwd_hd128_kernel<decltype(t), decltype(c), Variant>), grid, dim3(kHead), 0,
                       (hipStream_t)stream, p, rp);
    return int(hipGetLastError());
  });
}

}  // namespace kvh::kernels

