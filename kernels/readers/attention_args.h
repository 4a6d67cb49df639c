// Decode-attention readers: the argument check every launcher runs, and the
// by-value view of the paged caches that kernels index through. Shapes are in
// elements, outermost first, as in kvharness/provider.h; every cache address
// comes from a view's strides (64-bit) and data pointer through the format's
// addressing type (cache/cache_addressing.h: CacheAddr<format, x>, built in the
// kernel from k_s and v_s), so blocks-first interleaved, padded and offset
// caches need no special case.
#pragma once
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "cache/cache_addressing.h"
#include "cache/cache_fp8.h"
#include "kvh_runtime.h"
#include "kvharness/provider.h"

namespace kvh::kernels {

/// Largest head_size the general readers accept (aiter/vLLM decode kernels).
constexpr int64_t kMaxHeadSize = 256;
/// x of the 16-bit caches: 16 bytes / sizeof(element).
constexpr int64_t kX16 = 8;

/// The tensor dim that holds the kv heads of a cache in `format` (2 for NHD, else 1).
KVH_HD inline int kv_head_dim(int format) { return format == KVH_CACHE_NHD ? 2 : 1; }

/// The score modifiers of kvh_attention_args (semantics in kvharness/provider.h),
/// by value. Readers apply them through these members only, so every reader
/// (whatever its cache layout) shares one definition of each rule:
///   logit(s, h, t, ctx): soft-cap, then ALiBi, of the scaled score s of local
///                        query head h and token t of a ctx-token sequence;
///   first_token(ctx):    the first token the sliding window keeps (0 when off);
///   has_sinks / sink(h): the sink logit of local query head h.
struct ScoreModifiers {
  int32_t sliding_window = 0;      // tokens, 0 = off
  float softcap = 0.f;             // 0 = off
  const float* sinks = nullptr;    // [num_heads], stride sinks_s; null = off
  const float* alibi = nullptr;    // [num_heads], stride alibi_s; null = off
  int64_t sinks_s = 0, alibi_s = 0;
  int32_t head_offset = 0;         // global index of local head 0 (informational: slopes are per local head)

  KVH_HD float alibi_slope(int h) const { return alibi[h * alibi_s]; }
  KVH_HD bool has_sinks() const { return sinks != nullptr; }
  KVH_HD float sink(int h) const { return sinks[h * sinks_s]; }
  /// softcap * tanh(s / softcap) when on; ALiBi after the cap (never capped).
  KVH_HD float capped(float s) const { return softcap > 0.f ? softcap * tanhf(s / softcap) : s; }
  KVH_HD float logit(float s, int h, int t, int ctx) const {
    s = capped(s);
    return alibi ? s + alibi_slope(h) * float(t - (ctx - 1)) : s;
  }
  KVH_HD int first_token(int ctx) const {
    return sliding_window > 0 && ctx > sliding_window ? ctx - sliding_window : 0;
  }
};

/// The modifiers of `a`, read within its struct_size (an older caller's args have none).
inline ScoreModifiers make_score_modifiers(const kvh_attention_args& a) {
  ScoreModifiers m;
  if (KVH_HAS_FIELD(&a, kvh_attention_args, sliding_window)) m.sliding_window = a.sliding_window;
  if (KVH_HAS_FIELD(&a, kvh_attention_args, softcap)) m.softcap = a.softcap;
  if (KVH_HAS_FIELD(&a, kvh_attention_args, head_offset)) m.head_offset = a.head_offset;
  if (KVH_HAS_FIELD(&a, kvh_attention_args, sinks) && a.sinks.data)
    m.sinks = static_cast<const float*>(a.sinks.data), m.sinks_s = a.sinks.stride[0];
  if (KVH_HAS_FIELD(&a, kvh_attention_args, alibi_slopes) && a.alibi_slopes.data)
    m.alibi = static_cast<const float*>(a.alibi_slopes.data), m.alibi_s = a.alibi_slopes.stride[0];
  return m;
}

/// hipErrorInvalidValue when a modifier of `a` breaks provider.h: sliding_window
/// or softcap negative (or softcap not finite), head_offset negative, or a set
/// sinks / alibi_slopes tensor that is not f32 [num_heads].
inline hipError_t check_score_modifiers(const kvh_attention_args& a) {
  const ScoreModifiers m = make_score_modifiers(a);
  if (m.sliding_window < 0 || !(m.softcap >= 0.f) || m.softcap > 3.0e38f || m.head_offset < 0)
    return hipErrorInvalidValue;
  for (const kvh_tensor* t : {&a.sinks, &a.alibi_slopes}) {
    if (!KVH_HAS_FIELD(&a, kvh_attention_args, alibi_slopes) || !t->data) continue;
    if (t->dtype != KVH_DT_F32 || t->ndim != 1 || t->shape[0] != a.query.shape[1]) return hipErrorInvalidValue;
  }
  return hipSuccess;
}

/// Everything a reader kernel needs from kvh_attention_args, passed by value.
/// Pointers are untyped; the kernel casts them to its element type.
struct AttentionParams {
  void* out;                   // [num_seqs, num_heads, head_size]
  const void* query;           // [num_seqs, num_heads, head_size]
  const void* key_cache;       // addressed by CacheAddr<format, x>(k_s, v_s).k
  const void* value_cache;     // addressed by CacheAddr<format, x>(k_s, v_s).v
  const int32_t* block_tables; // [num_seqs, max_blocks_per_seq]
  const int32_t* context_lens; // [num_seqs]
  int64_t out_s[3], q_s[3], k_s[5], v_s[5], bt_s[2], cl_s;  // the views' strides, elements (k_s, v_s: the caches')
  int64_t block_size;
  int64_t cache_block_size;    // the cache manager's block (tokens); block_size when not set
  int32_t num_heads, num_kv_heads, head_size, max_context_len;
  float scale;
  // Dequant scales (fp8 caches; cache_fp8.h scale_at): the granularity's tensors, or
  // k_scale/v_scale under KVH_SCALES_NONE. 16-bit caches: NONE and 1.0, so that
  // their values pass through unchanged.
  KvScales sc;
  float k_scale, v_scale;
  ScoreModifiers mods;
};

/// The addressing of a's caches in format kFormat with x = kX (cache/cache_addressing.h),
/// from the strides in k_s and v_s: what every reader kernel indexes K and V through.
template <int kFormat, int kX> KVH_HD CacheAddr<kFormat, kX> cache_addr_of(const AttentionParams& a) {
  return CacheAddr<kFormat, kX>(a.k_s, a.v_s);
}

/// Dequant scale of K (is_value false) or V at (physical block, kv head, token-in-block).
KVH_HD inline float kv_scale_of(const AttentionParams& a, bool is_value, int64_t block, int64_t kv_head, int64_t tok) {
  return scale_at(a.sc.granularity, is_value ? a.sc.v : a.sc.k, is_value ? a.v_scale : a.k_scale, block, kv_head, tok);
}

/// kvh_attention_args.cache_block_size, read within the args' struct_size; 0 when absent.
inline int64_t cache_block_size_of(const kvh_attention_args& a) {
  return KVH_HAS_FIELD(&a, kvh_attention_args, cache_block_size) ? a.cache_block_size : 0;
}

/// The params of `a` for a reader of cache format `format` (kvh_cache_format).
inline AttentionParams make_attention_params(const kvh_attention_args& a, int format) {
  AttentionParams p{};
  p.out = a.out.data;
  p.query = a.query.data;
  p.key_cache = a.key_cache.data;
  p.value_cache = a.value_cache.data;
  p.block_tables = static_cast<const int32_t*>(a.block_tables.data);
  p.context_lens = static_cast<const int32_t*>(a.context_lens.data);
  for (int i = 0; i < 3; ++i) p.out_s[i] = a.out.stride[i], p.q_s[i] = a.query.stride[i];
  for (int i = 0; i < a.key_cache.ndim && i < 5; ++i) p.k_s[i] = a.key_cache.stride[i];
  for (int i = 0; i < a.value_cache.ndim && i < 5; ++i) p.v_s[i] = a.value_cache.stride[i];
  p.bt_s[0] = a.block_tables.stride[0];
  p.bt_s[1] = a.block_tables.stride[1];
  p.cl_s = a.context_lens.stride[0];
  p.block_size = a.block_size;
  p.cache_block_size = cache_block_size_of(a) > 0 ? cache_block_size_of(a) : a.block_size;
  p.num_heads = int32_t(a.query.shape[1]);
  p.num_kv_heads = int32_t(a.key_cache.shape[kv_head_dim(format)]);
  p.head_size = int32_t(a.query.shape[2]);
  p.max_context_len = a.max_context_len;
  p.scale = a.scale;
  const bool fp8 = is_quantized(a.key_cache.dtype);  // fp8 or int8
  p.sc = kv_scales_of(a);
  if (!fp8) p.sc.granularity = KVH_SCALES_NONE;
  p.k_scale = fp8 ? a.k_scale : 1.f;
  p.v_scale = fp8 ? a.v_scale : 1.f;
  p.mods = make_score_modifiers(a);
  return p;
}

/// Checks a reader's arguments against the kvh_attention_args contract for
/// cache format `format` (KVH_CACHE_PA_V1, KVH_CACHE_SHUFFLE, KVH_CACHE_NHD or
/// KVH_CACHE_HND; the K cache is x-split for the first two, as V for the others).
/// Returns hipErrorInvalidValue (the launcher then launches nothing) when:
/// a rank differs from provider.h; query/out are not both fp16 or both bf16;
/// the caches are not both query's dtype or both one fp8 dtype; kv_scales is
/// not NONE for a 16-bit cache, or a scale tensor's shape or dtype disagrees
/// with it (cache_fp8.h scale_tensor_ok); block_tables/context_lens are not int32;
/// out's shape differs from query's; x != 16 bytes / cache element (x-split K);
/// head_size is not a multiple of 16 bytes / cache element; a cache extent
/// disagrees with num_kv_heads, head_size or block_size; num_heads is not a
/// multiple of num_kv_heads; block_tables cannot hold max_context_len tokens;
/// cache_block_size is set and not a multiple of block_size; num_seqs or
/// num_heads exceed 65535 (grid); a data pointer is null; a score modifier
/// is malformed (check_score_modifiers). With
/// `check_head_size` it also requires head_size <= 256; the fixed-function
/// kernel skips that test, as a fixed-function kernel does.
inline hipError_t check_attention_args(const kvh_attention_args& a, int format, bool check_head_size) {
  const kvh_tensor &q = a.query, &o = a.out, &kc = a.key_cache, &vc = a.value_cache;
  const kvh_tensor &bt = a.block_tables, &cl = a.context_lens;
  const bool x_split = format == KVH_CACHE_PA_V1 || format == KVH_CACHE_SHUFFLE;
  if (!x_split && format != KVH_CACHE_NHD && format != KVH_CACHE_HND) return hipErrorInvalidValue;
  if (q.ndim != 3 || o.ndim != 3 || kc.ndim != (x_split ? 5 : 4) || bt.ndim != 2 || cl.ndim != 1)
    return hipErrorInvalidValue;
  if (q.dtype != KVH_DT_F16 && q.dtype != KVH_DT_BF16) return hipErrorInvalidValue;
  const bool fp8 = is_quantized(kc.dtype);  // fp8 or int8: one byte, scales apply
  if (o.dtype != q.dtype || vc.dtype != kc.dtype || (!fp8 && kc.dtype != q.dtype)) return hipErrorInvalidValue;
  if (bt.dtype != KVH_DT_I32 || cl.dtype != KVH_DT_I32) return hipErrorInvalidValue;
  for (int i = 0; i < 3; ++i)
    if (o.shape[i] != q.shape[i]) return hipErrorInvalidValue;
  const int64_t num_seqs = q.shape[0], num_heads = q.shape[1], head_size = q.shape[2], bs = a.block_size;
  const int64_t num_blocks = kc.shape[0], num_kv_heads = kc.shape[kv_head_dim(format)];
  const int64_t x_elems = fp8 ? 16 : kX16;  // 16 bytes of cache elements: the K loop's chunk
  const KvScales sc = kv_scales_of(a);
  if (!fp8 && sc.granularity != KVH_SCALES_NONE) return hipErrorInvalidValue;
  if (!scale_tensor_ok(sc.granularity, a.k_scales, num_blocks, num_kv_heads, bs) ||
      !scale_tensor_ok(sc.granularity, a.v_scales, num_blocks, num_kv_heads, bs))
    return hipErrorInvalidValue;
  if (bs < 1 || head_size < 1 || head_size % x_elems != 0) return hipErrorInvalidValue;
  if (num_kv_heads < 1 || num_heads < 1 || num_heads % num_kv_heads != 0) return hipErrorInvalidValue;
  if (x_split) {
    const int64_t x = kc.shape[4];
    if (x != x_elems || kc.shape[2] * x != head_size || kc.shape[3] != bs) return hipErrorInvalidValue;
    if (format == KVH_CACHE_PA_V1) {
      if (vc.ndim != 4 || vc.shape[2] != head_size || vc.shape[3] != bs) return hipErrorInvalidValue;
    } else if (vc.ndim != 5 || bs % x != 0 || vc.shape[2] != bs / x || vc.shape[3] != head_size || vc.shape[4] != x) {
      return hipErrorInvalidValue;
    }
    if (vc.shape[1] != num_kv_heads) return hipErrorInvalidValue;
  } else {  // NHD [nb, bs, nkv, hd] or HND [nb, nkv, bs, hd], K and V alike
    const int tok_dim = format == KVH_CACHE_NHD ? 1 : 2;
    if (vc.ndim != 4 || kc.shape[tok_dim] != bs || kc.shape[3] != head_size) return hipErrorInvalidValue;
    for (int i = 1; i < 4; ++i)
      if (vc.shape[i] != kc.shape[i]) return hipErrorInvalidValue;
  }
  if (vc.shape[0] != num_blocks) return hipErrorInvalidValue;
  const int64_t cbs = cache_block_size_of(a);
  if (cbs < 0 || (cbs > 0 && cbs % bs != 0)) return hipErrorInvalidValue;
  if (bt.shape[0] != num_seqs || cl.shape[0] != num_seqs) return hipErrorInvalidValue;
  if (check_head_size && head_size > kMaxHeadSize) return hipErrorInvalidValue;
  if (num_seqs > 65535 || num_heads > 65535) return hipErrorInvalidValue;
  if (num_seqs == 0) return hipSuccess;
  if (a.max_context_len < 1 || bt.shape[1] * bs < a.max_context_len) return hipErrorInvalidValue;
  if (!o.data || !q.data || !kc.data || !vc.data || !bt.data || !cl.data) return hipErrorInvalidValue;
  return check_score_modifiers(a);
}

/// The ragged-query view of kvh_attention_args (kvharness 0.4, provider.h), by value: sequence s
/// has q_s = qsl[s+1] - qsl[s] query tokens at rows qsl[s] .., and lens[s] tokens in all. A decode
/// call (no query_start_loc) has qsl null: row s is sequence s's one token.
struct RaggedParams {
  const int32_t* qsl = nullptr;   // [num_seqs + 1] query_start_loc, stride qsl_s; null: decode
  const int32_t* lens = nullptr;  // [num_seqs] seq_lens (context_lens when absent), stride lens_s
  int64_t qsl_s = 0, lens_s = 0;
  int32_t num_seqs = 0, num_query_tokens = 0, max_query_len = 1;
  int32_t causal = 1;             // 0: every query token sees the whole sequence
};

/// Validates `a` for a reader that takes ragged queries up to `max_query_len_cap` tokens a
/// sequence (1: decode only) and fills *r. Everything check_attention_args checks, with the
/// sequence count taken from block_tables (query/out have num_query_tokens rows), plus:
/// query and out have the same rows; with query_start_loc set: int32 [num_seqs + 1],
/// num_query_tokens = those rows, 1 <= max_query_len <= max_query_len_cap (when num_seqs > 0);
/// without it (a decode call, or an older caller): max_query_len <= 1, num_query_tokens 0 or
/// the rows, rows = num_seqs; seq_lens, when set, int32 [num_seqs]; causal 0 or 1, and 1 when
/// `non_causal` is false and max_query_len > 1; k_scale_tensor / v_scale_tensor both set or
/// both null, each f32 [1]. Values inside the arrays (device memory) are not read here:
/// kernels clamp them. Fields past the caller's struct_size take their defaults (a decode call).
inline hipError_t check_ragged_attention_args(const kvh_attention_args& a, int format, bool check_head_size,
                                              int32_t max_query_len_cap, bool non_causal, RaggedParams* r) {
  if (a.query.ndim != 3 || a.out.ndim != 3 || a.block_tables.ndim != 2) return hipErrorInvalidValue;
  const int64_t rows = a.query.shape[0], num_seqs = a.block_tables.shape[0];
  if (a.out.shape[0] != rows || rows < 0 || rows > INT32_MAX) return hipErrorInvalidValue;
  RaggedParams p;
  p.lens = static_cast<const int32_t*>(a.context_lens.data);
  p.lens_s = a.context_lens.ndim == 1 ? a.context_lens.stride[0] : 0;
  p.num_seqs = int32_t(num_seqs < 65536 ? num_seqs : 65536);
  p.num_query_tokens = int32_t(rows);
  if (KVH_HAS_FIELD(&a, kvh_attention_args, workspaces)) {
    const kvh_tensor& qsl = a.query_start_loc;
    if (qsl.data) {
      if (qsl.dtype != KVH_DT_I32 || qsl.ndim != 1 || qsl.shape[0] != num_seqs + 1) return hipErrorInvalidValue;
      if (a.num_query_tokens != rows) return hipErrorInvalidValue;
      if (num_seqs > 0 && (a.max_query_len < 1 || a.max_query_len > max_query_len_cap)) return hipErrorInvalidValue;
      p.qsl = static_cast<const int32_t*>(qsl.data), p.qsl_s = qsl.stride[0];
      p.max_query_len = a.max_query_len < 1 ? 1 : a.max_query_len;
    } else {
      if (a.max_query_len > 1) return hipErrorInvalidValue;  // ragged without query_start_loc
      if (a.num_query_tokens != 0 && a.num_query_tokens != rows) return hipErrorInvalidValue;
      if (rows != num_seqs) return hipErrorInvalidValue;
    }
    if (a.seq_lens.data) {
      if (a.seq_lens.dtype != KVH_DT_I32 || a.seq_lens.ndim != 1 || a.seq_lens.shape[0] != num_seqs)
        return hipErrorInvalidValue;
      p.lens = static_cast<const int32_t*>(a.seq_lens.data), p.lens_s = a.seq_lens.stride[0];
    }
    if (a.causal != 0 && a.causal != 1) return hipErrorInvalidValue;
    if (p.max_query_len > 1 && a.causal == 0 && !non_causal) return hipErrorInvalidValue;
    p.causal = p.max_query_len > 1 ? a.causal : 1;  // one query token at L - 1 sees the whole sequence either way
    const kvh_tensor &ks = a.k_scale_tensor, &vs = a.v_scale_tensor;
    if (!ks.data != !vs.data) return hipErrorInvalidValue;
    for (const kvh_tensor* t : {&ks, &vs})
      if (t->data && (t->dtype != KVH_DT_F32 || t->ndim != 1 || t->shape[0] != 1)) return hipErrorInvalidValue;
  } else if (rows != num_seqs) {
    return hipErrorInvalidValue;
  }
  // The decode checks on the args as a decode call of num_seqs sequences would pass them
  // (only the fields within the caller's struct_size are copied).
  kvh_attention_args d{};
  const size_t n = a.struct_size < sizeof(d) ? a.struct_size : sizeof(d);
  memcpy(static_cast<void*>(&d), &a, n);
  d.query.shape[0] = d.out.shape[0] = num_seqs;
  if (hipError_t e = check_attention_args(d, format, check_head_size); e != hipSuccess) return e;
  if (num_seqs > 0 && rows > 0 && !a.query.data) return hipErrorInvalidValue;
  *r = p;
  return hipSuccess;
}

/// make_attention_params for a ragged call: as for decode, and on an fp8 cache whose scales are
/// NONE the k_scale_tensor / v_scale_tensor (f32 [1], when set) are read on the device (as the
/// TENSOR granularity) instead of the floats: the tensors are what serving stacks pass.
inline AttentionParams make_ragged_attention_params(const kvh_attention_args& a, int format) {
  AttentionParams p = make_attention_params(a, format);
  if (KVH_HAS_FIELD(&a, kvh_attention_args, v_scale_tensor) && is_fp8(a.key_cache.dtype) &&
      p.sc.granularity == KVH_SCALES_NONE && a.k_scale_tensor.data && a.v_scale_tensor.data) {
    p.sc.granularity = KVH_SCALES_TENSOR;
    p.sc.k = scale_view_of(a.k_scale_tensor);
    p.sc.v = scale_view_of(a.v_scale_tensor);
  }
  return p;
}

/// Calls fn(T{}, C{}) with the query's element type T (fp16_t / bf16_t) and
/// the cache-element policy C of a's caches (cache_fp8.h: Cache16<T>, CacheFp8<fnuz>, CacheInt8).
/// kFnuzAsFnuz false decodes an e4m3fnuz cache as e4m3fn (the fixture's bug).
/// k16BitOnly instantiates the 16-bit policies only and returns hipErrorInvalidValue
/// for an fp8 or int8 cache (planted readers that declare no fp8/int8 capability).
/// Call after check_attention_args.
template <bool kFnuzAsFnuz = true, bool k16BitOnly = false, class Fn>
int with_reader_types(const kvh_attention_args& a, Fn&& fn) {
  const bool f16 = a.query.dtype == KVH_DT_F16;
  if constexpr (k16BitOnly) {
    if (a.key_cache.dtype != KVH_DT_F16 && a.key_cache.dtype != KVH_DT_BF16) return hipErrorInvalidValue;
    return f16 ? fn(fp16_t{}, Cache16<fp16_t>{}) : fn(bf16_t{}, Cache16<bf16_t>{});
  } else {  // a discarded branch is not instantiated: the policies below cost nothing above
    switch (a.key_cache.dtype) {
      case KVH_DT_FP8_E4M3FN: return f16 ? fn(fp16_t{}, CacheFp8<false>{}) : fn(bf16_t{}, CacheFp8<false>{});
      case KVH_DT_FP8_E4M3FNUZ:
        return f16 ? fn(fp16_t{}, CacheFp8<kFnuzAsFnuz>{}) : fn(bf16_t{}, CacheFp8<kFnuzAsFnuz>{});
      case KVH_DT_I8: return f16 ? fn(fp16_t{}, CacheInt8{}) : fn(bf16_t{}, CacheInt8{});
      default: return f16 ? fn(fp16_t{}, Cache16<fp16_t>{}) : fn(bf16_t{}, Cache16<bf16_t>{});
    }
  }
}

/// Variant built for 16-bit caches only (k16BitCachesOnly, passed to with_reader_types by
/// the paged and unified readers): for a planted reader whose capabilities refuse fp8 and
/// int8 caches, a quarter of the kernel instances to compile.
template <class Variant>
struct Only16BitCaches : Variant {
  static constexpr bool k16BitCachesOnly = true;
};

}  // namespace kvh::kernels
