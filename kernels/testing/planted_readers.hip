// Planted-bug readers, for tests only (not in the builtin provider): the
// general shuffle-layout kernel of paged_attention.h with one rule replaced,
// each a bug class real decode kernels have shipped. A test must see each of
// them fail a check that paged_attention_rocm passes.
//   planted_drop_tail_partition   partitions = context_len / partition_size
//                                 (floor): the last, partial partition of a
//                                 sequence whose length is not a multiple of
//                                 256 is dropped (nothing written below 256)
//   planted_gqa_modulo            query head h reads kv head h % num_kv_heads
//                                 instead of h / (num_heads / num_kv_heads)
//   planted_reduce_last_max       the reduce rescales the partitions with the
//                                 last partition's max instead of the global
//                                 max: exact in real numbers, but exp overflows
//                                 once an earlier partition's max exceeds the
//                                 last one's by more than ~88 (attention sinks)
//   planted_missing_softmax_barrier P.V reads the softmax numerators with no
//                                 barrier after the warps that compute them:
//                                 right whenever the warps happen to keep pace
//   planted_reduce_tree_32        the softmax max/sum butterfly starts at mask
//                                 16 (a tree sized for 32 lanes): with 64 lanes
//                                 a head (wavefront 64, 1 or 2 heads a block)
//                                 each half keeps its own max and sum
//   planted_reduce_first_max      the reduce rescales with partition 0's max:
//                                 exp overflows once a later partition's max
//                                 exceeds it by ~88 (a sink in the last partition)
//   planted_reduce_no_exp_sum     the reduce weighs each partition by
//                                 exp(max_p - M) and forgets its exp-sum
//   planted_hnd_block_size_from_dim1  the HND reader takes block_size from
//                                 key_cache.shape[1] (num_kv_heads in HND; the
//                                 block size in NHD): right only when they agree
//   planted_hnd_dense_head_stride the HND reader assumes heads are dense inside
//                                 a block (head stride = block_size * token
//                                 stride): wrong on head_interleaved caches
//   planted_nhd_token_stride_from_heads  the NHD reader derives the token
//                                 stride as num_kv_heads * head stride: wrong
//                                 when the head dim is size 1 with a
//                                 degenerate stride (degenerate_strides), or
//                                 the heads are not packed inside a token (packed)
//   planted_softcap_after_mask    masks first and soft-caps after: a masked
//                                 token's -inf becomes -softcap, so the tokens
//                                 before the sliding window (in its first
//                                 partition) rejoin the softmax
//   planted_window_off_by_one     keeps sliding_window + 1 tokens (the window
//                                 taken as FlashAttention's window_size_left)
//   planted_partition_size_ignored splits at the default 256 tokens whatever
//                                 partition_size says, while sizing its
//                                 partition count from partition_size: with
//                                 partition_size 512 the tail of every sequence
//                                 longer than 512 is dropped (only for
//                                 partition_size >= 256: its shared memory is
//                                 sized for partition_size)
//   planted_empty_partition_reduce the reduce merges every partition from 0,
//                                 including those a sliding window left empty
//                                 (never run): it reads their unwritten workspace
//   planted_alibi_slope_by_kv_head ALiBi slope of query head h read at index
//                                 h / group (its kv head's): right for group 1
//   planted_v1_sink_every_partition the sink logit joins every partition's
//                                 exp-sum (pa_v1 reader; right for one partition)
//   planted_v1_*                  the same bugs in the pa_v1 reader
//                                 (paged_attention_v1): gqa_modulo,
//                                 reduce_tree_32, drop_tail_partition,
//                                 window_off_by_one
//   planted_scale_*               fp8 scale-indexing bugs, one per granularity:
//                                 head_by_query_head (head scale at kv * group),
//                                 block_by_logical (block scale at the logical
//                                 block), token_swapped (token scale with the
//                                 kv-head and slot extents swapped),
//                                 dropped_on_v (tensor scale not applied to V)
#include "registry/kernel_desc.h"
#include "readers/paged_attention.h"

namespace {

using kvh::kernels::CorrectVariant;

struct DropTailPartition : CorrectVariant {
  static KVH_HD int num_partitions(int context_len, int partition_size) { return context_len / partition_size; }
};
// Query head h reads kv head h % num_kv_heads, so kv head kv's j-th query head is j * num_kv_heads + kv.
struct GqaModulo : CorrectVariant {
  static KVH_HD int query_head(int kv, int j, int, int num_kv_heads) { return j * num_kv_heads + kv; }
};
struct ReduceLastMax : CorrectVariant {
  static KVH_HD float reduce_reference_max(float, const float* maxima, int np) { return maxima[np - 1]; }
};
struct ReduceFirstMax : CorrectVariant {
  static KVH_HD float reduce_reference_max(float, const float* maxima, int) { return maxima[0]; }
};
struct ReduceNoExpSum : CorrectVariant {
  static KVH_HD float partition_weight(float, float max_logit, float ref) { return expf(max_logit - ref); }
};
struct ReduceTree32 : CorrectVariant {
  static KVH_HD int reduce_width(int lanes) { return lanes < 32 ? lanes : 32; }
};

struct MissingSoftmaxBarrier : CorrectVariant {
  static constexpr bool kBarrierAfterSoftmax = false;
};
// cap * tanh(-inf / cap) = -cap: the mask applied before the cap no longer masks.
struct SoftcapAfterMask : CorrectVariant {
  static KVH_HD float masked_logit(const kvh::kernels::ScoreModifiers& m) {
    return m.softcap > 0.f ? -m.softcap : -INFINITY;
  }
};
struct WindowOffByOne : CorrectVariant {
  static KVH_HD int first_token(const kvh::kernels::ScoreModifiers& m, int ctx) {
    return m.sliding_window > 0 && ctx > m.sliding_window + 1 ? ctx - m.sliding_window - 1 : 0;
  }
};
struct PartitionSizeIgnored : CorrectVariant {
  static KVH_HD int split_size(int) { return kvh::kernels::kDefaultPartitionSize; }
};
struct EmptyPartitionReduce : CorrectVariant {
  static KVH_HD int reduce_first_partition(int) { return 0; }
};

// fp8 scale-indexing bugs (issue 11), each at one granularity (correct at the others).
using kvh::kernels::AttentionParams;
using kvh::kernels::kv_scale_of;
// HEAD: the scale of kv head kv read at the index of its group's first query head (kv * group).
struct ScaleHeadByQueryHead : CorrectVariant {
  static KVH_HD float kv_scale(const AttentionParams& a, bool is_value, int64_t block, int64_t, int kv, int64_t tok) {
    if (a.sc.granularity != KVH_SCALES_HEAD) return kv_scale_of(a, is_value, block, kv, tok);
    return kv_scale_of(a, is_value, block, int64_t(kv) * (a.num_heads / a.num_kv_heads), tok);
  }
};
// BLOCK: indexed by the sequence's logical block instead of the physical block id.
struct ScaleBlockByLogical : CorrectVariant {
  static KVH_HD float kv_scale(const AttentionParams& a, bool is_value, int64_t block, int64_t logical, int kv,
                               int64_t tok) {
    return kv_scale_of(a, is_value, a.sc.granularity == KVH_SCALES_BLOCK ? logical : block, kv, tok);
  }
};
// TOKEN: [num_blocks, num_kv_heads, block_size] indexed as if it were [num_blocks, block_size, num_kv_heads].
struct ScaleTokenSwapped : CorrectVariant {
  static KVH_HD float kv_scale(const AttentionParams& a, bool is_value, int64_t block, int64_t, int kv, int64_t tok) {
    if (a.sc.granularity != KVH_SCALES_TOKEN) return kv_scale_of(a, is_value, block, kv, tok);
    const kvh::kernels::ScaleView& v = is_value ? a.sc.v : a.sc.k;
    return v.data[block * v.s[0] + tok * a.num_kv_heads + kv];
  }
};
// TENSOR: the V path forgets its scale (the K path keeps it).
struct ScaleDroppedOnV : CorrectVariant {
  static KVH_HD float kv_scale(const AttentionParams& a, bool is_value, int64_t block, int64_t, int kv, int64_t tok) {
    if (is_value && a.sc.granularity == KVH_SCALES_TENSOR) return 1.f;
    return kv_scale_of(a, is_value, block, kv, tok);
  }
};

struct HndBlockSizeFromDim1 : CorrectVariant {
  static void adjust_params(AttentionParams& p, const kvh_attention_args& a) { p.block_size = a.key_cache.shape[1]; }
};
struct HndDenseHeadStride : CorrectVariant {
  static void adjust_params(AttentionParams& p, const kvh_attention_args& a) {
    p.k_s[1] = a.key_cache.shape[2] * a.key_cache.stride[2];
    p.v_s[1] = a.value_cache.shape[2] * a.value_cache.stride[2];
  }
};
struct NhdTokenStrideFromHeads : CorrectVariant {
  static void adjust_params(AttentionParams& p, const kvh_attention_args& a) {
    p.k_s[1] = a.key_cache.shape[2] * a.key_cache.stride[2];
    p.v_s[1] = a.value_cache.shape[2] * a.value_cache.stride[2];
  }
};

// ---- issue 23 (E): one more bug behind each score modifier ----
// ALiBi slopes indexed by the kv head (h / group) instead of the query head:
// right for a GQA group of 1, wrong wherever a group shares a kv head.
struct AlibiSlopeByKvHead : CorrectVariant {
  static KVH_HD float logit(const AttentionParams& a, float s, int h, int t, int ctx) {
    const kvh::kernels::ScoreModifiers& m = a.mods;
    s = m.capped(s);
    return m.alibi ? s + m.alibi_slope(h / (a.num_heads / a.num_kv_heads)) * float(t - (ctx - 1)) : s;
  }
};
// The sink logit folded into every partition's max and exp-sum: counted once
// per partition in the denominator (right for a sequence of one partition).
struct SinkEveryPartition : CorrectVariant {
  static KVH_HD bool sink_in_partition(int, int) { return true; }
};
// ---- end issue 23 (E) ----

// The readers below declare no fp8 or int8 capability (kCaps): built for 16-bit caches only.
template <class Variant, int kFormat = KVH_CACHE_SHUFFLE>
int planted(const kvh_attention_args* a, void* stream) {
  return kvh::kernels::launch_paged_attention<kFormat, kvh::kernels::Only16BitCaches<Variant>>(*a, stream);
}

// The fp8-scale readers (kFp8Caps): every cache element policy.
template <class Variant>
int planted_fp8(const kvh_attention_args* a, void* stream) {
  return kvh::kernels::launch_paged_attention<KVH_CACHE_SHUFFLE, Variant>(*a, stream);
}

uint64_t workspace(const kvh_attention_args* a) { return kvh::kernels::paged_attention_workspace_bytes(*a); }

// The capabilities of the readers they stand in for (`--replace-kernel` runs them with these): every score modifier.
kvh_capabilities modifier_caps() {
  kvh_capabilities c{};
  c.modifiers = KVH_MOD_SLIDING_WINDOW | KVH_MOD_SINKS | KVH_MOD_SOFTCAP | KVH_MOD_ALIBI;
  return c;
}
const kvh_capabilities kCaps = modifier_caps();

template <int (*F)(const kvh_attention_args*, void*), kvh_cache_format kFormat = KVH_CACHE_SHUFFLE>
kvh_kernel_desc reader(const char* name, const char* description) {
  return kvh::kernels::reader_desc<F>(name, description, kFormat, 1, kvh::kernels::workspace_entry<workspace>, &kCaps);
}

kvh_capabilities fp8_caps() {
  kvh_capabilities c{};
  c.cache_dtypes = (1u << KVH_DT_F16) | (1u << KVH_DT_BF16) | (1u << KVH_DT_FP8_E4M3FN) | (1u << KVH_DT_FP8_E4M3FNUZ);
  c.kv_scales = (1u << KVH_SCALES_NONE) | (1u << KVH_SCALES_TENSOR) | (1u << KVH_SCALES_HEAD) |
                (1u << KVH_SCALES_BLOCK) | (1u << KVH_SCALES_TOKEN);
  return c;
}
const kvh_capabilities kFp8Caps = fp8_caps();

template <int (*F)(const kvh_attention_args*, void*)>
kvh_kernel_desc fp8_reader(const char* name, const char* description) {
  return kvh::kernels::reader_desc<F>(name, description, KVH_CACHE_SHUFFLE, 1, kvh::kernels::workspace_entry<workspace>,
                                      &kFp8Caps);
}

const kvh_kernel_desc kPlanted[] = {
    fp8_reader<planted_fp8<ScaleHeadByQueryHead>>(
        "planted_scale_head_by_query_head",
        "PLANTED BUG (fp8, head scales): kv head kv's scale read at index kv * group (a query head's index)"),
    fp8_reader<planted_fp8<ScaleBlockByLogical>>(
        "planted_scale_block_by_logical",
        "PLANTED BUG (fp8, block scales): indexed by the sequence's logical block, not the physical block id"),
    fp8_reader<planted_fp8<ScaleTokenSwapped>>(
        "planted_scale_token_swapped",
        "PLANTED BUG (fp8, token scales): [blocks, kv heads, block_size] indexed as [blocks, block_size, kv heads]"),
    fp8_reader<planted_fp8<ScaleDroppedOnV>>("planted_scale_dropped_on_v",
                                         "PLANTED BUG (fp8, tensor scale): the V path does not apply its scale"),
    reader<planted<DropTailPartition>>(
        "planted_drop_tail_partition",
        "PLANTED BUG: drops the last partition of a sequence whose length is not a multiple of partition_size"),
    reader<planted<GqaModulo>>("planted_gqa_modulo",
                               "PLANTED BUG: GQA maps query head h to kv head h % num_kv_heads"),
    reader<planted<ReduceLastMax>>(
        "planted_reduce_last_max",
        "PLANTED BUG: split-K reduce rescales with the last partition's max instead of the global max"),
    reader<planted<MissingSoftmaxBarrier>>(
        "planted_missing_softmax_barrier", "PLANTED BUG: no __syncthreads between the softmax numerators and P.V"),
    reader<planted<ReduceTree32>>("planted_reduce_tree_32",
                                  "PLANTED BUG: softmax max/sum reduction tree sized for 32 lanes"),
    reader<planted<ReduceFirstMax>>(
        "planted_reduce_first_max",
        "PLANTED BUG: split-K reduce rescales with the first partition's max instead of the global max"),
    reader<planted<ReduceNoExpSum>>("planted_reduce_no_exp_sum",
                                    "PLANTED BUG: split-K reduce weighs partitions without their exp-sums"),
    reader<planted<HndBlockSizeFromDim1, KVH_CACHE_HND>, KVH_CACHE_HND>(
        "planted_hnd_block_size_from_dim1",
        "PLANTED BUG (HND reader): block_size read from key_cache.shape[1], which is num_kv_heads in HND"),
    reader<planted<HndDenseHeadStride, KVH_CACHE_HND>, KVH_CACHE_HND>(
        "planted_hnd_dense_head_stride",
        "PLANTED BUG (HND reader): head stride assumed dense (block_size * token stride), not the view's"),
    reader<planted<NhdTokenStrideFromHeads, KVH_CACHE_NHD>, KVH_CACHE_NHD>(
        "planted_nhd_token_stride_from_heads",
        "PLANTED BUG (NHD reader): token stride derived as num_kv_heads * head stride, not the view's"),
    reader<planted<SoftcapAfterMask>>("planted_softcap_after_mask",
                                      "PLANTED BUG: soft-cap applied after the sliding-window mask (-inf -> -cap)"),
    reader<planted<WindowOffByOne>>("planted_window_off_by_one",
                                    "PLANTED BUG: the sliding window keeps sliding_window + 1 tokens"),
    reader<planted<PartitionSizeIgnored>>(
        "planted_partition_size_ignored",
        "PLANTED BUG: splits at 256 tokens whatever partition_size says (partition count from partition_size)"),
    reader<planted<EmptyPartitionReduce>>(
        "planted_empty_partition_reduce",
        "PLANTED BUG: split-K reduce merges the partitions a sliding window left empty (unwritten workspace)"),
    reader<planted<GqaModulo, KVH_CACHE_PA_V1>, KVH_CACHE_PA_V1>(
        "planted_v1_gqa_modulo", "PLANTED BUG (pa_v1 reader): GQA maps query head h to kv head h % num_kv_heads"),
    reader<planted<ReduceTree32, KVH_CACHE_PA_V1>, KVH_CACHE_PA_V1>(
        "planted_v1_reduce_tree_32", "PLANTED BUG (pa_v1 reader): softmax reduction tree sized for 32 lanes"),
    reader<planted<DropTailPartition, KVH_CACHE_PA_V1>, KVH_CACHE_PA_V1>(
        "planted_v1_drop_tail_partition",
        "PLANTED BUG (pa_v1 reader): drops the last partition of a sequence whose length is not a multiple of 256"),
    // ---- issue 23 (E): modifier bugs killed by several independent tables ----
    reader<planted<AlibiSlopeByKvHead>>(
        "planted_alibi_slope_by_kv_head",
        "PLANTED BUG: ALiBi slope of query head h read at its kv head's index (h / group)"),
    reader<planted<WindowOffByOne, KVH_CACHE_PA_V1>, KVH_CACHE_PA_V1>(
        "planted_v1_window_off_by_one", "PLANTED BUG (pa_v1 reader): the sliding window keeps sliding_window + 1 tokens"),
    reader<planted<SinkEveryPartition, KVH_CACHE_PA_V1>, KVH_CACHE_PA_V1>(
        "planted_v1_sink_every_partition",
        "PLANTED BUG (pa_v1 reader): the sink logit joins every split-K partition's exp-sum, not only the first"),
    // ---- end issue 23 (E) ----
};

}  // namespace

/// The planted readers, provider-style (kvharness/provider.h); fixture = 1.
extern "C" const kvh_kernel_desc* kvh_planted_readers(int32_t* count) {
  *count = int32_t(sizeof(kPlanted) / sizeof(kPlanted[0]));
  return kPlanted;
}
