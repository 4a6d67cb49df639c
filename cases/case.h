// One concrete case: everything needed to run it again alone, and its id.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "layout.h"

namespace kvh {

enum class CaseKind { Write, Attention, Pipeline };
enum class DType { F16, BF16 };
/// How a decode case's Q, K and V values are distributed (harness/case/value_dist.h
/// states each one's contract): Normal, the generator's uniform [-2, 2);
/// Sink, attention-sink tokens whose logits exceed every other by more than 100;
/// Large, K and V near the dtype's largest finite value.
enum class ValueDist { Normal, Sink, Large, LowLogits, AwayFromZero };
/// The KV cache's element type: the K/V dtype itself (16-bit), or an fp8
/// format or int8 (symmetric, provider.h KVH_DT_I8) that writers quantize to
/// and readers dequantize from (provider.h).
enum class KvCacheDType { Same, Fp8E4m3fn, Fp8E4m3fnuz, Int8 };
/// Granularity of the fp8/int8 dequant scales (provider.h kvh_scale_granularity):
/// none, tensor [1], head [num_kv_heads], block [num_blocks, num_kv_heads],
/// token [num_blocks, num_kv_heads, block_size], slot [num_blocks, block_size].
enum class KvScales { None, Tensor, Head, Block, Token, Slot };
/// What a decode case's cache holds in every slot the case does not write
/// (issue 11): the unused tail slots of each sequence's last block, the null
/// block and the spare blocks nobody owns. Random: finite old tokens (counter
/// streams kOldKeys / kOldValues); Nan: the cache dtype's NaN; Inf: +Inf in
/// the K cache and -Inf in the V cache (a format without Inf, fp8: its NaN).
/// The bit patterns: harness/case/stale.h stale_bits.
enum class Stale { Random, Nan, Inf };

const char* to_string(CaseKind k);
const char* to_string(DType d);
const char* to_string(ValueDist v);
const char* to_string(Stale s);
/// "random" | "nan" | "inf" -> the pattern; nullopt for another name.
std::optional<Stale> parse_stale(const std::string& s);
/// "normal" | "sink" | "large" -> the distribution; nullopt for another name.
std::optional<ValueDist> parse_value_dist(const std::string& s);
/// "none" | "tensor" | "head" | "block" | "token" | "slot".
const char* to_string(KvScales s);
std::optional<KvScales> parse_kv_scales(const std::string& s);
/// "fp8_e4m3fn" | "fp8_e4m3fnuz" | "int8" (Same has no name of its own: see kv_cache_dtype_name).
const char* to_string(KvCacheDType d);

/// A case as the generator expands it. Head counts are per rank.
struct Case {
  CaseKind kind = CaseKind::Write;
  std::string model;
  int tp = 1;
  bool hybrid = false;
  int64_t num_heads = 0, num_kv_heads = 0, head_size = 0;
  Scheme layout = Scheme::KvFirst;
  int64_t block_size = 16;
  int64_t padded_page_bytes = 0;  // padded scheme only; 0 = derived
  int64_t kernel_block_size = 0;  // kernel_pages only: the kernel's page (tokens), dividing block_size,
                                  // which is then the cache manager's block
  int64_t degenerate_stride = 0;  // degenerate_strides only: the stride of every size-1 dim of the views
  DType dtype = DType::F16;
  int64_t batch_size = 0;         // write: num_tokens; attention/pipeline: num_seqs
  std::string writer;             // write, pipeline
  // attention and pipeline only:
  std::string reader;             // the reader, when no router picks it
  std::string router_policy;      // e.g. "aiter-v0.1.12": the router picks the reader
  std::string target;             // compute units for routing: a named target, or "" for the device's
  int high_precision = 1;         // router input, 0..2
  int64_t context_len_min = 0, context_len_max = 0;  // per-sequence lengths drawn from this range,
                                                     // both ends always among them when batch_size >= 2
  std::vector<int64_t> context_lens;                 // explicit per-sequence lengths [batch_size] (tokens);
                                                     // when set, min/max are its extremes and nothing is drawn
  // Ragged queries (attention/pipeline): new query tokens per sequence, the last ones of its
  // context_len tokens (kvharness/provider.h). Decode is min = max = 1 with no list.
  int64_t query_len_min = 1, query_len_max = 1;  // drawn from this range, both ends among them when the
                                                 // batch has room; each clamped to its sequence's length
  bool query_mixed = false;         // a mixed batch: decode (1), speculative [2, 8] and chunks [min, max]
  std::vector<int64_t> query_lens;  // explicit per-sequence query lengths [batch_size]; min/max its extremes
  bool causal = true;               // false: every query token sees its whole sequence
  ValueDist values = ValueDist::Normal;  // attention/pipeline: how Q, K, V are distributed
  KvCacheDType kv_cache_dtype = KvCacheDType::Same;  // the cache's element type
  KvScales kv_scales = KvScales::None;               // fp8 caches: the scales' granularity
  // Score modifiers and split control (attention/pipeline; kvharness/provider.h), each off by default:
  int64_t sliding_window = 0;     // left window in tokens, the query's own included; 0 = off
  bool sinks = false;             // per-head attention-sink logits (drawn from `seed`, per global head)
  double softcap = 0;             // logits soft-cap; 0 = off
  bool alibi = false;             // ALiBi with the standard slopes of the model's num_heads * tp heads
  int tp_rank = 0;                // which rank's heads (global heads tp_rank * num_heads ...); 0 <= tp_rank < tp
  int32_t partition_size = 0;     // split-K partition in tokens passed to the reader; 0 = the reader's default
  // ---- issue 23 (B long contexts) ----
  bool derived_tolerance = false;  // attention/pipeline: also judge `out` by the derived ulp bound
                                   // (harness/check/tolerance.h); fp16 outputs of 16-bit caches only
  // ---- end issue 23 (B long contexts) ----
  Stale stale = Stale::Random;           // attention/pipeline: what unwritten cache slots hold
  int64_t block_table_padding = -1;      // attention/pipeline: block_tables padding entries hold block id -1
                                         // (-1), or num_blocks + K (K >= 0); both out of range
  int64_t min_block_id = 1;              // attention/pipeline: sequences' blocks come from ids >= this
                                         // (the large reader suite: ids above 65,535); block 0 is the null block
  // MLA (kvharness/provider.h KVH_CACHE_MLA): kv_lora_rank > 0 makes the case's cache the latent
  // cache of one latent vector per token; then num_kv_heads is 1 and head_size is
  // kv_lora_rank + qk_rope_head_dim (the query's and the cache's last dim), out's head kv_lora_rank.
  int64_t kv_lora_rank = 0, qk_rope_head_dim = 0;
  int64_t qk_nope_head_dim = 0;  // MLA: the model's per-head nope dim, for the softmax scale
  double softmax_scale = 0;      // 0: 1/sqrt(head_size), MLA: 1/sqrt(qk_nope_head_dim + qk_rope_head_dim)
  std::string expect_routed_to;   // router cases: the reader the policy must pick ("" = not stated);
                                  // another route is FAIL misroute even when that reader could run the case
  std::string variant_name;       // display name of the row, e.g. "after fix (shuffle=1)"
  // ---- issue 23 (D): launch configurations (kvharness/provider.h kvh_launch_config) ----
  // The table's `launch_configs`: empty = the reader's default launch only; {"all"} = every
  // configuration it declares; else their names. The harness expands a case with a selection
  // into one case per configuration against the registry (harness/case/launch_configs.h).
  std::vector<std::string> launch_configs;
  std::string launch_configs_source;  // "file:line" of the launch_configs key (for its errors)
  std::string launch_config;          // the configuration this case runs; "" = the default launch
  // ---- end issue 23 (D) ----
  uint64_t seed = 1;
  std::string source;             // "file:line" of the table that made it
  // "file:line" of the name of the writer / reader (or router) in the table (an element of
  // `writers =` / `readers =` / `routers =`, or a variant's key): where an unknown name's error points.
  std::string writer_source, reader_source;

  /// The kernel's page in tokens: kernel_block_size for kernel_pages, else block_size.
  int64_t page_size() const { return layout == Scheme::KernelPages && kernel_block_size > 0 ? kernel_block_size : block_size; }
  /// Stable across runs, "/"-separated: kind/model/tp/head_size/layout/block_size/dtype/batch/
  /// [context range/]kernels/[values=V/]seed, where kernels is the writer, or writer+reader or
  /// writer+router, and "values=V/" appears only when V is not normal (ids of earlier cases stay);
  /// likewise "/stale=S" (S not random), "/pad=num_blocks+K" (padding not -1) and "/minblock=N" (N not 1).
  /// The layout part carries the layout's parameter: "padded-5000B", "kernel_pages-k16",
  /// "degenerate_strides-s0".
  /// The context part is "ctxMIN-MAX/" for a range, "ctx=L1+L2+.../" for an explicit list of up
  /// to 8 lengths, "ctx=N@HASH/" (N lengths, 64-bit FNV-1a of them in hex) for a longer one.
  /// An fp8 cache adds "kv=FMT/" and non-none scales "scales=G/" after the values part (ids of
  /// 16-bit cases stay).
  /// Modifiers and split control append, only when not default and in this order, before the
  /// seed: "/winN" (sliding_window), "/sinks", "/capX" (softcap), "/alibi", "/rankR" (tp_rank),
  /// "/psP" (partition_size), "/sc=X" (softmax_scale, MLA), "/tol=derived" (derived_tolerance). Ragged queries put, before them, "/qN" (every sequence N),
  /// "/qMIN-MAX", "/qmixMIN-MAX" (mixed) or "/q=..." (a list, spelled as the context list),
  /// and "/noncausal"; decode cases (one query token each) keep their ids.
  /// An MLA case (kv_lora_rank > 0) has "mlaR+P/" after "hdN/" (R kv_lora_rank, P qk_rope_head_dim;
  /// "mlaR+PnN/" when softmax_scale is 0 and qk_nope_head_dim N is not 128).
  /// A case that runs a declared launch configuration has "/cfg=NAME" after the modifiers (issue 23 (D)).
  std::string id() const;
  /// The case's logical inputs, what its data is drawn from (issue 24): the id without the
  /// layout and its parameters, block_size, the block ids (pad=, minblock=), the kernels, the
  /// router and its inputs (target, hp), and what only changes a launch (ps, tol, cfg);
  /// attention and pipeline cases are both "decode/". Cases of one logical id get the same
  /// K, V, queries, context and query lengths, so a matrix compares its layouts and kernels
  /// on one data set, and the decode reference is computed once for them all.
  std::string logical_id() const;
  /// Whether the case's cache is MLA's latent cache (kv_lora_rank > 0).
  bool mla() const { return kv_lora_rank > 0; }
  /// Whether any sequence may have more than one query token (a ragged call).
  bool ragged() const { return query_len_max > 1 || query_mixed; }
  /// The largest query length the case can draw (a mixed batch's speculative sequences reach 8).
  int64_t max_query_len() const { return query_mixed ? std::max<int64_t>(query_len_max, 8) : query_len_max; }
  /// The cache's element type as results.json names it: fp16, bf16, fp8_e4m3fn, fp8_e4m3fnuz, int8.
  std::string kv_cache_dtype_name() const;
  /// Whether the cache holds fp8 codes (one byte an element, x = 16).
  bool fp8_cache() const {
    return kv_cache_dtype == KvCacheDType::Fp8E4m3fn || kv_cache_dtype == KvCacheDType::Fp8E4m3fnuz;
  }
  /// Whether the cache holds int8 codes (provider.h KVH_DT_I8; one byte an element, x = 16).
  bool int8_cache() const { return kv_cache_dtype == KvCacheDType::Int8; }
  /// Whether the cache holds one-byte codes with dequant scales (fp8 or int8).
  bool quantized_cache() const { return kv_cache_dtype != KvCacheDType::Same; }
  /// Row name in the matrix: variant_name if given, else the kernels; then " (cfg NAME)" when the
  /// case runs a declared launch configuration (issue 23 (D)).
  std::string variant() const;
  /// 1 when the V cache is shuffled (the writer or reader is a shuffle one), else 0.
  int shuffle() const;
  /// kvh_modifier bits of the modifiers this case turns on.
  uint32_t modifiers() const;
};

/// `v` as results.json (nlohmann::json) prints a double: shortest round trip, ".0" when integral
/// ("30.0", "2.5"); the spelling of the softcap filter key.
std::string json_double(double v);

/// "-1" or "num_blocks+K": the case-file spelling of Case::block_table_padding.
std::string block_table_padding_name(int64_t padding);
/// Parses "-1" or "num_blocks+K" (K an integer in [0, kMaxPaddingK]); nullopt otherwise.
std::optional<int64_t> parse_block_table_padding(const std::string& s);
/// Largest K of "num_blocks+K": the pages of padding ids must lie inside the
/// cache arena's margins (harness/case/attention_case.cpp sizes them), where they hold NaN.
constexpr int64_t kMaxPaddingK = 16;

}  // namespace kvh
