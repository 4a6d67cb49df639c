// Paged decode attention with split-K partitions: one query token per
// sequence; one source, templated on the cache format and the element type:
// pa_v1 and shuffle (x-split K), NHD and HND (K and V alike). The format only
// chooses the addressing (cache/cache_addressing.h CacheAddr). Included by
// paged_attention.hip (the readers) and testing/planted_readers.hip (known-bad
// variants built from the same code through the Variant policy).
//
// Design
//   Kernel 1, grid (max_partitions, num_kv_heads * head_chunks, num_seqs),
//   kPaThreads threads (kPaMinThreads in some launch configurations, below):
//   block (p, kv*head_chunks + c, s) handles tokens
//   [p*partition_size, (p+1)*partition_size) of sequence s for up to
//   kMaxGroupHeads query heads of kv head kv's GQA group (chunk c), so each
//   K/V element is loaded once for all of them:
//     1. q of those heads -> shared (float), coalesced along head_size;
//     2. logits: one thread per token, looping over the head_size/x chunks;
//        adjacent threads read adjacent x-vectors of the x-split K (coalesced);
//     3. softmax numerators: each head gets a group of L lanes inside one warp
//        (L = power of two <= min(warpSize, threads / heads)); the lanes stride
//        the tokens, then max and exp-sum by shuffles over the group;
//     4. P.V: threads = groups x lanes; a lane owns dims lane, lane+lanes, ...
//        of every head, a group every groups-th token; groups add up in shared.
//   A sequence with one partition writes `out` directly (normalised); with
//   more, each (head, partition) writes max, exp-sum and its normalised
//   partial output to the workspace and kernel 2 combines them.
//   Kernel 2 (reduce), grid (num_heads, num_seqs), as many threads: global
//   max M over the partitions, weights w_p = exp_sum_p * exp(max_p - M) in
//   shared memory, out = sum_p w_p * partial_p / sum_p w_p, coalesced along
//   head_size (every thread scans the np maxima and weights: broadcast reads).
//
// Workspace (float32), three arrays back to back, index i = (s*num_heads + h)*max_partitions + p:
//   max_logits [num_seqs, num_heads, max_partitions]
//   exp_sums   [num_seqs, num_heads, max_partitions]
//   tmp_out    [num_seqs, num_heads, max_partitions, head_size]
// max_partitions = ceil(max_context_len / partition_size); none when it is 1.
//
// Launch configurations (issue 23 (D), kvharness/provider.h kvh_launch_config): params
// "threads=T" (64 or 128 threads a block: 1 or 2 wavefronts of 64, 2 or 4 warps of 32) and
// "partition_size=P" (the partition when the call passes partition_size 0); every loop strides
// by blockDim.x, so both kernels are right at either (the built-in provider declares them).
//
// Score modifiers (ScoreModifiers, attention_args.h): soft-cap and ALiBi turn
// each logit in step 2; tokens before the sliding window get logit -inf, and
// partitions wholly before it do not run (the reduce starts at the first
// non-empty one, so it never reads their unwritten workspace); the sink logit
// is folded into the max and exp-sum of the first non-empty partition only,
// rescaling its partial output, so it joins the denominator exactly once.
#pragma once
#include <stdint.h>

#include "readers/attention_args.h"
#include "readers/launch_params.h"
#include "readers/warp_reduce.h"

namespace kvh::kernels {

/// Threads per block of both kernels by default (2 wavefronts of 64, 4 warps of 32).
constexpr int kPaThreads = 128;
/// The fewest threads a launch configuration may give (1 wavefront of 64, 2 warps of 32).
constexpr int kPaMinThreads = 64;
/// Dims of the output one thread accumulates in P.V: ceil(256 / min(threads, head_size)).
constexpr int kPaMaxDimsPerThread = int((kMaxHeadSize + kPaMinThreads - 1) / kPaMinThreads);
/// Query heads of one GQA group one block handles (larger groups take several blocks).
constexpr int kMaxGroupHeads = 8;
constexpr int32_t kDefaultPartitionSize = 256;
/// Logits [kMaxGroupHeads, partition_size] live in shared memory: at most
/// 32.1 KiB in all at 512 tokens and head_size 256 (under CUDA's 48 KiB default).
constexpr int32_t kMaxPartitionSize = 512;
constexpr int64_t kMaxPartitions = 8192;     // weights of a sequence live in shared memory

/// The correct rules; the planted readers substitute one of them.
struct CorrectVariant {
  /// Partitions of a sequence of `context_len` tokens.
  static KVH_HD int num_partitions(int context_len, int partition_size) {
    return (context_len + partition_size - 1) / partition_size;
  }
  /// GQA (vLLM, aiter): query head h reads kv head h / (num_heads / num_kv_heads),
  /// so the j-th query head of kv head kv's group is kv * group + j.
  static KVH_HD int query_head(int kv, int j, int num_heads, int num_kv_heads) {
    return kv * (num_heads / num_kv_heads) + j;
  }
  /// The max the reduce rescales every partition against: the largest of the
  /// np partitions' maxima `maxima` (global_max).
  static KVH_HD float reduce_reference_max(float global_max, const float* /*maxima*/, int /*np*/) { return global_max; }
  /// Partition p's weight in the reduce: its exp-sum rescaled from its own max to `ref`.
  static KVH_HD float partition_weight(float exp_sum, float max_logit, float ref) { return exp_sum * expf(max_logit - ref); }
  /// The block_tables column of token t: t / block_size, the kernel's page
  /// (cache_block_size is the manager's block, a multiple of it; the tables
  /// are already in kernel pages). The token's slot in that page is t % block_size.
  static KVH_HD int64_t page_index(const AttentionParams& a, int64_t t) { return t / a.block_size; }
  /// What the launcher derives from the args beyond make_attention_params
  /// (host side, before launch): nothing; a planted reader replaces a stride
  /// or extent here the way a kernel that mis-reads its views would.
  static void adjust_params(AttentionParams&, const kvh_attention_args&) {}
  /// Lanes a softmax max/sum reduction combines: all L lanes of a head's group.
  static KVH_HD int reduce_width(int lanes) { return lanes; }
  /// Whether P.V waits for every head's softmax numerators (it must).
  static constexpr bool kBarrierAfterSoftmax = true;
  /// Dequant scale of K (is_value false) or V of token-in-block `tok` of physical block
  /// `block` (logical block `logical_block` of its sequence) for kv head `kv`.
  static KVH_HD float kv_scale(const AttentionParams& a, bool is_value, int64_t block, int64_t /*logical_block*/,
                               int kv, int64_t tok) {
    return kv_scale_of(a, is_value, block, kv, tok);
  }
  /// Whether an e4m3fnuz cache is decoded as e4m3fnuz (it must be; the fixture reads it as e4m3fn).
  static constexpr bool kFnuzAsFnuz = true;
  /// Whether only 16-bit caches are instantiated: a planted reader whose capabilities
  /// refuse fp8 and int8 caches sets it, so its build does not pay for six element
  /// policies it can never run (an fp8 or int8 cache then returns hipErrorInvalidValue).
  static constexpr bool k16BitCachesOnly = false;
  /// Score modifiers (ScoreModifiers): the logit of unmasked token t of local query head h,
  /// from the scaled score s (soft-cap, then ALiBi).
  static KVH_HD float logit(const AttentionParams& a, float s, int h, int t, int ctx) { return a.mods.logit(s, h, t, ctx); }
  /// The logit of a token the sliding window masks: -inf, which no soft-cap may touch.
  static KVH_HD float masked_logit(const ScoreModifiers&) { return -INFINITY; }
  /// The first token the sliding window keeps.
  static KVH_HD int first_token(const ScoreModifiers& m, int ctx) { return m.first_token(ctx); }
  /// Whether partition p folds the sink logit into its max and exp-sum: only the
  /// first partition the window leaves non-empty, so the sink joins the
  /// denominator once whatever the number of partitions.
  static KVH_HD bool sink_in_partition(int p, int first_live) { return p == first_live; }
  /// The first partition the reduce merges: the first non-empty one. Partitions
  /// before it never run and leave their workspace entries unwritten.
  static KVH_HD int reduce_first_partition(int first_live) { return first_live; }
  /// The tokens a partition covers: the partition_size the caller asked for.
  static KVH_HD int split_size(int partition_size) { return partition_size; }
  /// Sequence s's length as the kernel holds it: context_lens are int32 (vLLM,
  /// aiter) and lengths past 65,535 tokens are real (long-context serving).
  static KVH_HD int32_t context_len(int32_t stored) { return stored; }
  /// The reduce's running sum of the partitions' weights, in float32 like the
  /// weights: 16-bit accumulation loses ~2^-11 of the total per addition.
  static KVH_HD float add_exp_sum(float total, float weight) { return total + weight; }
  /// The stride of the reduce's loop over head_size: the block's threads (blockDim.x).
  static KVH_HD int reduce_dim_stride(int threads) { return threads; }
  /// The running max's starting value: -inf (issue 23: a finite sentinel such as -5e4 is
  /// wrong once every logit of a row is below it; `values = "low_logits"` cases have such rows).
  static KVH_HD float running_max_init() { return -INFINITY; }
};

/// Split-K state: partition size and the workspace arrays (see top of file).
struct SplitK {
  int32_t partition_size, max_partitions;
  float *max_logits, *exp_sums, *tmp_out;
};

template <class Variant>
__device__ inline int32_t clamp_context_len(const AttentionParams& a, int s) {
  const int32_t n = Variant::context_len(a.context_lens[s * a.cl_s]);
  return n < a.max_context_len ? n : a.max_context_len;  // never read past block_tables
}

/// Query heads in GQA-group chunk `chunk` (the last chunk of a group may be short).
KVH_HD inline int chunk_heads(int group, int chunk) {
  return group - chunk * kMaxGroupHeads < kMaxGroupHeads ? group - chunk * kMaxGroupHeads : kMaxGroupHeads;
}

/// Shared floats kernel 1 needs for `nh` heads at `threads` a block: the carve-up at the top of its body.
KVH_HD inline int64_t partition_shared_floats(int nh, int head_size, int partition_size, int threads) {
  const int lanes = threads < head_size ? threads : head_size;
  return int64_t(nh) * (head_size + partition_size + 3 + (threads / lanes) * head_size);
}

template <class T, class C, int kFormat, class Variant>
__global__ void __launch_bounds__(kPaThreads) paged_attention_partition_kernel(AttentionParams a, SplitK sk) {
  const int p = int(blockIdx.x), s = int(blockIdx.z);
  const int tid = int(threadIdx.x), nt = int(blockDim.x), hs = a.head_size, P = sk.partition_size;
  const int group = a.num_heads / a.num_kv_heads, chunks = (group + kMaxGroupHeads - 1) / kMaxGroupHeads;
  const int kv = int(blockIdx.y) / chunks, chunk = int(blockIdx.y) % chunks, nh = chunk_heads(group, chunk);
  auto head = [&](int j) { return Variant::query_head(kv, chunk * kMaxGroupHeads + j, a.num_heads, a.num_kv_heads); };
  auto out_row = [&](int j) { return static_cast<T*>(a.out) + s * a.out_s[0] + head(j) * a.out_s[1]; };
  const int ctx = clamp_context_len<Variant>(a, s);
  if (ctx <= 0) {  // outside the contract (context_lens >= 1); still write every element
    if (p == 0)
      for (int i = tid; i < nh * hs; i += nt) out_row(i / hs)[(i % hs) * a.out_s[2]] = from_float<T>(0.f);
    return;
  }
  const int split = Variant::split_size(P);
  int np = Variant::num_partitions(ctx, split);
  np = np < sk.max_partitions ? np : sk.max_partitions;
  // The sliding window keeps tokens [first, ctx): partitions before first_live are empty and never run.
  const int first = Variant::first_token(a.mods, ctx), first_live = first / split;
  if (p >= np || p < first_live) return;  // uniform over the block, before any barrier
  const int t0 = p * split;
  const int n = ctx - t0 < split ? ctx - t0 : split;

  // shared: q [nh, hs] | logits [nh, P] | max [nh] | sum [nh] | rescale [nh] | P.V partials [groups, nh, hs]
  KVH_DYNAMIC_SHARED(float, smem);
  float* q_s = smem;
  float* logits = q_s + nh * hs;
  float* head_max = logits + nh * P;
  float* head_sum = head_max + nh;
  float* head_rescale = head_sum + nh;
  float* acc_s = head_rescale + nh;

  for (int i = tid; i < nh * hs; i += nt) {
    const T* q = static_cast<const T*>(a.query) + s * a.q_s[0] + head(i / hs) * a.q_s[1];
    q_s[i] = to_float(q[(i % hs) * a.q_s[2]]);
  }
  __syncthreads();

  // Cache elements through the policy C (cache_fp8.h): 16-bit as they are, fp8 decoded, times the scale.
  using E = typename C::Storage;
  constexpr int x = C::kX;  // 16 bytes / cache element = key_cache.shape[4] of an x-split K, checked
  const CacheAddr<kFormat, x> cache = cache_addr_of<kFormat, x>(a);
  const E* kc = static_cast<const E*>(a.key_cache);
  const E* vc = static_cast<const E*>(a.value_cache);
  const int32_t* bt = a.block_tables + s * a.bt_s[0];
  const int64_t page = a.block_size;
  // Dim c*x + e of a token's key sits at c * k_chunk + e * k_elem from its dim 0 (any format).
  const int64_t k_chunk = cache.k.dim_offset(x), k_elem = cache.k.dim_stride();
  for (int i = tid; i < n; i += nt) {
    const int64_t t = t0 + i;
    if (t < first) {  // masked by the sliding window: no load
      for (int j = 0; j < kMaxGroupHeads; ++j)
        if (j < nh) logits[j * P + i] = Variant::masked_logit(a.mods);
      continue;
    }
    const int64_t pi = Variant::page_index(a, t), blk = bt[pi * a.bt_s[1]];
    const E* k = kc + cache.k.token_offset(blk, kv, t % page);
    const float ksc = Variant::kv_scale(a, false, blk, pi, kv, t % page);
    float dot[kMaxGroupHeads] = {};
    for (int c = 0; c < hs / x; ++c)
      for (int e = 0; e < x; ++e) {
        const float kval = C::load(k, c * k_chunk + e * k_elem) * ksc;
        for (int j = 0; j < kMaxGroupHeads; ++j)
          if (j < nh) dot[j] += q_s[j * hs + c * x + e] * kval;
      }
    for (int j = 0; j < kMaxGroupHeads; ++j)  // constant bounds keep dot[] in registers
      if (j < nh) logits[j * P + i] = Variant::logit(a, a.scale * dot[j], head(j), int(t), ctx);
  }
  __syncthreads();

  // Softmax numerators in place: head j gets lanes [j*L, (j+1)*L) of the block.
  {
    const int L = floor_pow2(nt / nh < warpSize ? nt / nh : warpSize);
    const int j = tid / L, lane_h = tid % L;
    float* l = logits + (j < nh ? j : 0) * P;
    float m = Variant::running_max_init();
    if (j < nh)
      for (int i = lane_h; i < n; i += L) m = fmaxf(m, l[i]);
    m = group_reduce(m, Variant::reduce_width(L), MaxOp{});  // every lane takes part in the shuffles
    float sum = 0.f;
    if (j < nh)
      for (int i = lane_h; i < n; i += L) {
        l[i] = expf(l[i] - m);
        sum += l[i];
      }
    sum = group_reduce(sum, Variant::reduce_width(L), SumOp{});
    if (j < nh && lane_h == 0) {
      float rescale = 1.f;  // the partial P.V's factor when the sink raises the max
      if (a.mods.has_sinks() && Variant::sink_in_partition(p, first_live)) {
        const float sink = a.mods.sink(head(j)), m2 = fmaxf(m, sink);
        rescale = expf(m - m2);
        sum = sum * rescale + expf(sink - m2);
        m = m2;
      }
      head_max[j] = m, head_sum[j] = sum, head_rescale[j] = rescale;
    }
  }
  if (Variant::kBarrierAfterSoftmax) __syncthreads();  // compile-time: uniform across the block

  const int lanes = nt < hs ? nt : hs, groups = nt / lanes, g = tid / lanes, lane = tid % lanes;
  if (g < groups) {
    float acc[kMaxGroupHeads][kPaMaxDimsPerThread] = {};
    const int64_t dim_stride = cache.v.dim_stride();
    const int i0 = first > t0 ? first - t0 : 0;  // masked tokens weigh 0: skip their V
    for (int i = i0 + g; i < n; i += groups) {
      const int64_t t = t0 + i, pi = Variant::page_index(a, t), blk = bt[pi * a.bt_s[1]];
      const E* v = vc + cache.v.token_offset(blk, kv, t % page);
      const float vsc = Variant::kv_scale(a, true, blk, pi, kv, t % page);
      for (int k = 0; k < kPaMaxDimsPerThread; ++k) {
        const int d = lane + k * lanes;
        if (d >= hs) break;
        const float vval = C::load(v, d * dim_stride) * vsc;
        for (int j = 0; j < kMaxGroupHeads; ++j)
          if (j < nh) acc[j][k] += logits[j * P + i] * vval;
      }
    }
    for (int k = 0; k < kPaMaxDimsPerThread; ++k)
      for (int j = 0; j < kMaxGroupHeads; ++j)
        if (j < nh && lane + k * lanes < hs) acc_s[(g * nh + j) * hs + lane + k * lanes] = acc[j][k];
  }
  __syncthreads();

  for (int i = tid; i < nh * hs; i += nt) {
    const int j = i / hs, d = i % hs;
    float r = 0.f;
    for (int gg = 0; gg < groups; ++gg) r += acc_s[(gg * nh + j) * hs + d];
    r = r * head_rescale[j] / head_sum[j];
    if (np == 1)
      out_row(j)[d * a.out_s[2]] = from_float<T>(r);
    else
      sk.tmp_out[((int64_t(s) * a.num_heads + head(j)) * sk.max_partitions + p) * hs + d] = r;
  }
  if (np > 1 && tid < nh) {
    const int64_t wi = (int64_t(s) * a.num_heads + head(tid)) * sk.max_partitions + p;
    sk.max_logits[wi] = head_max[tid];
    sk.exp_sums[wi] = head_sum[tid];
  }
}

template <class T, class Variant>
__global__ void __launch_bounds__(kPaThreads) paged_attention_reduce_kernel(AttentionParams a, SplitK sk) {
  const int h = int(blockIdx.x), s = int(blockIdx.y);
  const int tid = int(threadIdx.x), nt = int(blockDim.x), hs = a.head_size;
  const int ctx = clamp_context_len<Variant>(a, s);
  if (ctx <= 0) return;
  const int split = Variant::split_size(sk.partition_size);
  int np = Variant::num_partitions(ctx, split);
  np = np < sk.max_partitions ? np : sk.max_partitions;
  if (np <= 1) return;  // kernel 1 wrote out directly
  const int p0 = Variant::reduce_first_partition(Variant::first_token(a.mods, ctx) / split);

  // shared: weights [max_partitions]
  KVH_DYNAMIC_SHARED(float, smem);
  float* w_s = smem;
  const int64_t base = (int64_t(s) * a.num_heads + h) * sk.max_partitions;

  float global_max = -INFINITY;
  for (int p = p0; p < np; ++p) global_max = fmaxf(global_max, sk.max_logits[base + p]);
  const float ref = Variant::reduce_reference_max(global_max, sk.max_logits + base + p0, np - p0);
  for (int p = p0 + tid; p < np; p += nt)
    w_s[p] = Variant::partition_weight(sk.exp_sums[base + p], sk.max_logits[base + p], ref);
  __syncthreads();
  float total = 0.f;
  for (int p = p0; p < np; ++p) total = Variant::add_exp_sum(total, w_s[p]);
  const float inv_total = 1.f / total;

  T* out = static_cast<T*>(a.out) + s * a.out_s[0] + h * a.out_s[1];
  for (int d = tid; d < hs; d += Variant::reduce_dim_stride(nt)) {
    float r = 0.f;
    for (int p = p0; p < np; ++p) r += w_s[p] * sk.tmp_out[(base + p) * hs + d];
    out[d * a.out_s[2]] = from_float<T>(r * inv_total);
  }
}

/// Partition size in tokens that a launch with these args uses: a.partition_size, else the launch
/// configuration's partition_size, else 256 (-1: the configuration's value is malformed).
inline int32_t resolved_partition_size(const kvh_attention_args& a) {
  if (a.partition_size != 0) return a.partition_size;
  const kvh_launch_config* lc = KVH_HAS_FIELD(&a, kvh_attention_args, launch_config) ? a.launch_config : nullptr;
  return int32_t(launch_param(lc, "partition_size", kDefaultPartitionSize));
}

/// Threads a block that a launch with these args uses: the launch configuration's `threads`, else
/// kPaThreads; 0 when that is not 64 or 128 (the launcher refuses it).
inline int paged_attention_threads(const kvh_attention_args& a) {
  const kvh_launch_config* lc = KVH_HAS_FIELD(&a, kvh_attention_args, launch_config) ? a.launch_config : nullptr;
  const int64_t t = launch_param(lc, "threads", kPaThreads);
  return t == kPaMinThreads || t == kPaThreads ? int(t) : 0;
}

/// Workspace bytes the split-K launch needs for `a`: 0 when every sequence fits
/// one partition (max_context_len <= partition_size) or the args are invalid,
/// else 4 * num_seqs * num_heads * max_partitions * (2 + head_size).
inline uint64_t paged_attention_workspace_bytes(const kvh_attention_args& a) {
  const int64_t ps = resolved_partition_size(a);
  if (ps < 1 || a.query.ndim != 3 || a.max_context_len < 1) return 0;
  const int64_t np = (int64_t(a.max_context_len) + ps - 1) / ps;
  if (np <= 1) return 0;
  return uint64_t(4) * uint64_t(a.query.shape[0] * a.query.shape[1] * np * (2 + a.query.shape[2]));
}

template <class T, class C, int kFormat, class Variant>
hipError_t launch_paged_attention_typed(const AttentionParams& p, const SplitK& sk, int64_t num_seqs, int threads,
                                        hipStream_t stream) {
  const int group = p.num_heads / p.num_kv_heads, chunks = (group + kMaxGroupHeads - 1) / kMaxGroupHeads;
  const size_t shared1 =
      sizeof(float) * size_t(partition_shared_floats(chunk_heads(group, 0), p.head_size, sk.partition_size, threads));
  hipLaunchKernelGGL(HIP_KERNEL_NAME(paged_attention_partition_kernel<T, C, kFormat, Variant>),
                     dim3(unsigned(sk.max_partitions), unsigned(p.num_kv_heads * chunks), unsigned(num_seqs)),
                     dim3(unsigned(threads)), shared1, stream, p, sk);
  if (hipError_t e = hipGetLastError(); e != hipSuccess) return e;
  if (sk.max_partitions <= 1) return hipSuccess;
  const size_t shared2 = sizeof(float) * size_t(sk.max_partitions);
  hipLaunchKernelGGL(HIP_KERNEL_NAME(paged_attention_reduce_kernel<T, Variant>),
                     dim3(unsigned(p.num_heads), unsigned(num_seqs)), dim3(unsigned(threads)), shared2, stream, p, sk);
  return hipGetLastError();
}

/// Validates `a` (check_attention_args, plus: partition_size in [0, 512],
/// at most 8192 partitions, a workspace of paged_attention_workspace_bytes(a)
/// bytes when more than one partition, a launch configuration's threads 64 or 128) and launches kernel 1 and, when
/// max_context_len > partition_size, the reduce. Returns 0 or a HIP error code;
/// nothing is launched on hipErrorInvalidValue.
template <int kFormat, class Variant = CorrectVariant>
int launch_paged_attention(const kvh_attention_args& a, void* stream) {
  if (hipError_t e = check_attention_args(a, kFormat, /*check_head_size=*/true); e != hipSuccess) return e;
  const int64_t num_seqs = a.query.shape[0];
  if (num_seqs == 0) return hipSuccess;
  const int32_t ps = resolved_partition_size(a);
  if (ps < 1 || ps > kMaxPartitionSize) return hipErrorInvalidValue;
  const int threads = paged_attention_threads(a);
  if (threads == 0) return hipErrorInvalidValue;
  const int64_t max_partitions = (int64_t(a.max_context_len) + ps - 1) / ps;
  if (max_partitions > kMaxPartitions) return hipErrorInvalidValue;
  SplitK sk{ps, int32_t(max_partitions), nullptr, nullptr, nullptr};
  if (max_partitions > 1) {
    const uint64_t need = paged_attention_workspace_bytes(a);
    if (!a.workspace || a.workspace_bytes < need) return hipErrorInvalidValue;
    const int64_t n = num_seqs * a.query.shape[1] * max_partitions;
    sk.max_logits = static_cast<float*>(a.workspace);
    sk.exp_sums = sk.max_logits + n;
    sk.tmp_out = sk.exp_sums + n;
  }
  AttentionParams p = make_attention_params(a, kFormat);
  Variant::adjust_params(p, a);
  const hipStream_t st = static_cast<hipStream_t>(stream);
  return with_reader_types<Variant::kFnuzAsFnuz, Variant::k16BitCachesOnly>(a, [&](auto t, auto c) {
    return int(launch_paged_attention_typed<decltype(t), decltype(c), kFormat, Variant>(p, sk, num_seqs, threads, st));
  });
}

}  // namespace kvh::kernels
