// mla_decode: the built-in reader of the MLA latent cache (KVH_CACHE_MLA,
// kvharness/provider.h), absorbed form, with a split-K path driven by a plan.
//   query [num_query_tokens, num_heads, R + P], out [num_query_tokens, num_heads, R],
//   key_cache = value_cache = cache [num_blocks, block_size, R + P] (any strides);
//   score(h, t) = scale * q[h, :] . cache[t, :] (all R + P dims), value = cache[t, 0:R];
//   decode and ragged (multi-token decode of MTP / speculative decode, causal, up to
//   kMlaMaxQueryLen tokens a sequence), fp16/bf16 query, fp16/bf16 or fp8 (e4m3fn/fnuz,
//   per-tensor k_scale) cache, any page size (1, 16, 64, ...), any head count.
//
// The plan (mla_decode_plan, kvh_plan_fn; the idea of aiter's get_mla_metadata, our own
// rules): from seq_lens, num_heads and compute units it cuts each sequence's keys into
// splits so that (work items) ~ compute units, and lists the work:
//   plan[0] num_splits   int32 [num_seqs]                   splits of sequence s (>= 1)
//   plan[1] split_bounds int32 [num_seqs, max_splits + 1]   split i of s covers keys
//                        [b[s][i], b[s][i+1]); entries past num_splits[s] repeat L_s
//   plan[2] work         int32 [num_work, 3]                (sequence, first head, split):
//                        one program per work item and query token, heads
//                        [first head, first head + kMlaHeadTile) of the sequence's query rows
// Workspaces (mla_decode_workspaces, f32, typed):
//   split_max, split_sum [num_query_tokens, num_heads, max_splits]
//   split_out            [num_query_tokens, num_heads, max_splits, R]
// The reduce merges, for query row r of sequence s, splits 0 .. num_splits[s] that hold a
// key the row sees (causal).
#pragma once
#include <stdint.h>

#include "kvharness/provider.h"

namespace kvh::kernels {

/// Query heads of one work item (the plan's head tile; aiter's MLA kernels tile 16 heads).
constexpr int kMlaHeadTile = 16;
/// Longest multi-token decode query a sequence (MTP / speculative decode).
constexpr int32_t kMlaMaxQueryLen = 8;
/// Smallest split in keys the planner makes (shorter sequences get one split).
constexpr int32_t kMlaMinSplitTokens = 32;
/// Most splits of one sequence.
constexpr int32_t kMlaMaxSplits = 64;

/// The reader (kvh_attention_fn): validates `a` (MLA shapes, dtypes, the plan's tensors and
/// workspaces as mla_decode_plan/mla_decode_workspaces build them) and launches the split
/// kernel and the reduce. 0, or hipErrorInvalidValue (nothing launched), or a launch error.
int mla_decode_attention(void* ctx, const kvh_attention_args* a, void* stream);

/// The typed workspaces (kvh_workspaces_fn) for `a`, whose plan is set (the harness plans
/// first): split_max, split_sum [rows, heads, max_splits], split_out [rows, heads,
/// max_splits, R], f32. 0 with *count = 3; KVH_UNSUPPORTED when `a` has no plan.
int mla_decode_workspaces(void* ctx, const kvh_attention_args* a, kvh_workspace_spec* specs, int32_t max_specs,
                          int32_t* count);

/// The planner (kvh_plan_fn): num_splits, split_bounds, work (above) from a->seq_lens,
/// num_heads and compute_units. KVH_UNSUPPORTED when a sequence has no token or the plan
/// would exceed its limits. The bytes live in thread-local storage until the next call.
int mla_decode_plan(void* ctx, const kvh_plan_args* a, kvh_plan* out);

/// The reason of the last KVH_UNSUPPORTED of mla_decode_plan / mla_decode_workspaces (kvh_last_error_fn).
const char* mla_decode_last_error(void* ctx);

/// What mla_decode takes: fp16/bf16 query; fp16/bf16/fp8 e4m3fn/fnuz cache; kv_scales NONE
/// or TENSOR; head_size (R + P) any multiple of 8 up to 640, R <= R + P; max_query_len
/// kMlaMaxQueryLen, causal or not; no other score modifier (DeepSeek-class models use none).
kvh_capabilities mla_decode_capabilities();

/// Fixtures (kernels/fixtures/mla_decode_fixtures.hip): the reader with per-sequence metadata
/// not expanded per query row, and the planner of another variant (head tile 32 at 128 heads).
int fixture_mla_metadata_not_expanded(void* ctx, const kvh_attention_args* a, void* stream);
int fixture_mla_plan_other_variant_plan(void* ctx, const kvh_plan_args* a, kvh_plan* out);

}  // namespace kvh::kernels
