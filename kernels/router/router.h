// Attention routing: which reader a launcher sends a step to, under a named
// policy (a versioned copy of the launcher's rule), named by the upstream
// commit that introduced the rule it models; the release tags that shipped it
// are aliases.
//
// aiter's paged_attention_common (decode only):
//   "aiter-pre-b4885d2"    (alias "aiter-v0.1.10.post3") the ASM kernel
//                          pa_fwd_asm is chosen when high_precision == 2, or
//                          the cache dtype is int8, or num_seqs * num_heads >
//                          2 * compute_units; otherwise paged_attention_rocm.
//                          No head-size test: head_size 256 at large batch
//                          goes to the 128-only kernel.
//   "aiter-b4885d2"        (alias "aiter-v0.1.12") the same, but head_size !=
//                          128 goes to paged_attention_rocm first.
// Source: aiter aiter/ops/attention.py, _should_use_asm_kernel() called by
// paged_attention_common.
//
// vLLM's unified Triton attention launcher, unified_attention() in
// vllm/attention/ops/triton_unified_attention.py (moved to
// vllm/v1/attention/ops/triton_unified_attention.py by 2612ba928), choosing
// between the one-pass kernel_unified_attention_2d (unified_attention_2d) and
// the split-K kernel_unified_attention_3d + reduce_segments
// (unified_attention_3d). Its inputs: num_seqs, num_query_heads (num_heads),
// num_kv_heads (both per rank), num_query_tokens (q.shape[0]) and
// max_seqlen_q (max_query_len); num_queries_per_kv = num_heads // num_kv_heads.
//   "vllm-unified-ccd7c05" (alias "vllm-v0.9.2") ccd7c0508 "[Kernel] Add
//                          Split-KV Support to Unified Triton Attention Kernel
//                          (#19152)": BLOCK_M = 16, BLOCK_Q = BLOCK_M //
//                          num_queries_per_kv, total_num_q_blocks =
//                          num_query_tokens // BLOCK_Q + num_seqs; 2d when
//                          max_seqlen_q > 1 or total_num_q_blocks *
//                          num_kv_heads > 128, else 3d. num_queries_per_kv >
//                          16 makes BLOCK_Q 0 and the launcher raises
//                          ZeroDivisionError before it chooses: route() throws.
//   "vllm-unified-6d80ae8" (no alias) 6d80ae83e "[Bugfix] Fixing division by
//                          zero in triton_attn if query_heads/kv_heads > 16
//                          (#23424)": the same rule with BLOCK_M = 16 if
//                          num_queries_per_kv <= 16 else
//                          next_power_of_2(num_queries_per_kv).
//   "vllm-unified-9c0ee99" (alias "vllm-v0.14.0") 9c0ee995a "[Kernel] Support
//                          CUDA Graphs in 3D Triton Attention Kernel
//                          (#28306)", with vllm/v1/attention/backends/
//                          triton_attn.py: 3d only when max_seqlen_q == 1 and
//                          num_seqs <= seq_threshold_3D = MIN_LAUNCH_GRID_SIZE_2D
//                          (128) // num_kv_heads; else 2d. The grid test of
//                          ccd7c05 is gone (total_num_q_blocks only sizes the grid).
// Not modelled (the faithful subset is the one above):
//   - 9c0ee99: with full CUDA graphs for decode (cudagraph_mode FULL,
//     FULL_DECODE_ONLY, FULL_AND_PIECEWISE) the backend replaces
//     seq_threshold_3D by the capture size nearest to 128 // num_kv_heads;
//     the policy is the eager / piecewise threshold (the two agree whenever
//     128 // num_kv_heads is itself a capture size). A launcher called
//     without the backend's softmax buffers (seq_threshold_3D None) always
//     takes 2d.
//   - 45f8fd6f9 "[Feature] Enable TRITON_ATTN for Batch Invariance (#33688)"
//     adds "or is_batch_invariant" (VLLM_BATCH_INVARIANT=1) to 2d's test;
//     the policy is the default, batch invariance off, so no new policy.
//   - Later commits up to 8e958902e (2026-08-12) leave the choice as
//     9c0ee99 has it (914d0464c merged the two kernels into one with IS_3D;
//     eb28452b1 retunes BLOCK_M for head_size 256 prefill only, a 2d case).
// Release tags: ccd7c0508 is in v0.9.2rc1, v0.9.2rc2 and v0.9.2 and not in
// v0.9.1 (git tag --contains, on a mirror with vLLM's tags up to v0.9.2).
// 9c0ee99 ships in v0.14.0 (its API page lists MIN_LAUNCH_GRID_SIZE_2D =
// 128; v0.12.0's does not); whether v0.13.0 already has it, and which tag
// first has 6d80ae8, were not verified: hence no alias for 6d80ae8.
//
// vLLM's ROCm AITER MLA backend (MLA steps only: RouteInput::kv_lora_rank > 0), choosing
// between the ASM decode (mla_asm) and the Gluon kernel for <= 16 heads (mla_gluon_bh16):
//   "vllm-rocm-mla-pre-50578" (fixture) fewer than 16 heads per rank -> Gluon, any cache dtype;
//   "vllm-rocm-mla-50578"     (fixture) qlen 1 with a head count not dividing 16 -> ASM padded
//                             to 16; other small-head steps -> Gluon, fp8 included;
//   "vllm-rocm-mla-51011"     an fp8 cache never goes to Gluon; else as 50578.
// 16 heads or more -> ASM under all three. Sources and what is not modelled: router/mla_rules.h.
// The non-MLA policies above refuse an MLA step (std::invalid_argument).
//
// Pure host code; no kernel is launched. Tests add planted policies
// (add_policy) and run one policy's cases under another's rule
// (substitute_policy, `kvharness run --replace-router`).
#pragma once
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvh::routing {

/// Reader names the router chooses between (kernels registered in builtin_provider.cpp).
inline constexpr const char* kAsmReader = "pa_fwd_asm";
inline constexpr const char* kRocmReader = "paged_attention_rocm";
/// vLLM's unified Triton attention: the one-pass kernel and the split-K one (with reduce_segments).
inline constexpr const char* kUnified2dReader = "unified_attention_2d";
inline constexpr const char* kUnified3dReader = "unified_attention_3d";
/// The MLA readers the vllm-rocm-mla-* policies choose between (kernels/readers/mla_variants.cpp):
/// aiter's ASM MLA decode (mla_decode_fwd; >= 16 heads, fewer padded to 16) and its Gluon kernel
/// for <= 16 heads (mla_decode_gluon; fp8 cache only at batch 1 with a bf16 query).
inline constexpr const char* kMlaAsmReader = "mla_asm";
inline constexpr const char* kMlaGluonReader = "mla_gluon_bh16";

/// KV-cache element type as the router sees it.
enum class CacheDtype { fp16, bf16, fp8, int8 };
const char* to_string(CacheDtype d);
/// "fp16" | "bf16" | "fp8" | "int8"; throws std::invalid_argument naming the known ones.
CacheDtype parse_cache_dtype(const std::string& s);

/// One step as the launcher sees it. num_heads (query heads) and num_kv_heads
/// are per rank (after tensor parallelism); compute_units is the device's CU
/// count (or a named target's, see compute_units_of). The last three fields are
/// for the vLLM policies (aiter's decode rule reads none of them); their
/// defaults describe a decode step of multi-head attention: num_kv_heads 0
/// means num_heads, num_query_tokens 0 means num_seqs (one query token a
/// sequence), max_query_len 1.
struct RouteInput {
  int64_t num_seqs = 0, num_heads = 0, head_size = 0;
  CacheDtype cache_dtype = CacheDtype::bf16;
  int high_precision = 1;  // 0, 1 or 2 (2: highest, fp8 caches)
  int64_t compute_units = 0;
  int64_t num_kv_heads = 0;      // 0: num_heads; else must divide num_heads
  int64_t num_query_tokens = 0;  // all sequences' query tokens (q.shape[0]); 0: num_seqs
  int64_t max_query_len = 1;     // the longest query (max_seqlen_q); > 1: a prefill or chunk in the batch
  // What a stack's own dispatcher may read besides (provider routers, kvh_route_args; the built-in
  // rules read none of them). Codes are provider.h's; 0 / -1 / "" when the caller does not know.
  int64_t block_size = 0, max_context_len = 0;
  int32_t dtype = 0;             // kvh_dtype of query and out
  int32_t cache_dtype_code = 0;  // kvh_dtype of the cache elements (fp8 codes); 0: dtype
  int32_t kv_scales = 0;         // kvh_scale_granularity
  int32_t cache_format = -1;     // kvh_cache_format of the case's cache; -1: the router picks it
  bool causal = true;
  std::string target;            // the case's named target, "" for the device or cus=N
  // Appended for MLA (issue 22): kv_lora_rank > 0 makes the step an MLA decode over the latent
  // cache (num_kv_heads 1, head_size = kv_lora_rank + qk_rope_head_dim); 0: paged attention.
  // The query dtype is `dtype` above (the MLA readers take bf16 only).
  int64_t kv_lora_rank = 0;
};

/// The decision: the reader, the policy that chose it, and why, naming the
/// rule and its numbers, e.g. "num_seqs*num_heads = 2048 > 2*CUs = 512 -> pa_fwd_asm",
/// "total_num_q_blocks*num_kv_heads = 17*8 = 136 > 128 (BLOCK_Q = 4) -> unified_attention_2d",
/// "num_seqs = 16 <= seq_threshold_3D = 16 (128 // num_kv_heads 8) -> unified_attention_3d".
struct RouteDecision {
  std::string reader;
  std::string policy;
  std::string reason;
};

/// Routes `in` under the policy named `policy`. Throws std::invalid_argument
/// for an unknown policy (listing the known ones), num_seqs < 0, num_heads,
/// head_size or compute_units < 1, high_precision outside 0..2, num_kv_heads
/// < 0 or not dividing num_heads, query tokens that sequences of 1 ..
/// max_query_len tokens cannot add up to (num_query_tokens < num_seqs,
/// > num_seqs * max_query_len, or max_query_len > num_query_tokens - num_seqs
/// + 1; max_query_len < 1), or an input the policy's launcher rejects
/// (vllm-unified-ccd7c05 with num_heads / num_kv_heads > 16), an MLA step (kv_lora_rank > 0)
/// under a non-MLA policy or a non-MLA step under a vllm-rocm-mla-* policy.
RouteDecision route(const std::string& policy, const RouteInput& in);

/// Every accepted policy name, oldest first, each canonical name followed by
/// its alias if it has one: {"aiter-pre-b4885d2", "aiter-v0.1.10.post3", "aiter-b4885d2", "aiter-v0.1.12",
/// "vllm-unified-ccd7c05", "vllm-v0.9.2", "vllm-unified-6d80ae8", "vllm-unified-9c0ee99", "vllm-v0.14.0",
/// "vllm-rocm-mla-pre-50578", "vllm-rocm-mla-50578", "vllm-rocm-mla-51011"},
/// then any add_policy() names. add_policy() may invalidate the reference's iterators.
const std::vector<std::string>& policy_names();
/// The canonical name of a policy or alias ("aiter-v0.1.12" -> "aiter-b4885d2"); "" if unknown.
std::string canonical_policy(const std::string& policy);

/// True for a policy kept as a regression fixture: known to misroute (the
/// old aiter-v0.1.10.post3 rule sends head_size != 128 to the 128-only kernel).
/// Its FAILs are expected and do not change kvharness's exit code. Under
/// --replace-router (substitute_policy) only when the substitute is a fixture too.
bool is_regression_fixture(const std::string& policy);

/// A routing rule: the reader for `in` and why (RouteDecision::policy is filled in by route()).
/// `in` has been validated by route(). Must not throw for valid input, except
/// std::invalid_argument for an input the modelled launcher itself rejects.
using RuleFn = RouteDecision (*)(const RouteInput& in);
/// A rule with state: a provider's router (kvh_kernel_desc.route with its context).
using Rule = std::function<RouteDecision(const RouteInput& in)>;

/// A router that failed while deciding (a provider router that raised): the case is a
/// CRASH of the router with this message, not UNSUPPORTED (which std::invalid_argument means).
struct RouterError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A policy beside the built-in ones (a planted policy of the mutation test,
/// kernels/testing/planted_routers.cpp). `fixture`: known to misroute on
/// purpose (its misroutes are expected failures, like aiter-pre-b4885d2).
/// Throws std::invalid_argument when the name is empty or already taken.
/// Process-wide; not thread-safe against concurrent route() calls.
void add_policy(const std::string& name, Rule rule, bool fixture = false);

/// Removes a policy add_policy added (a provider router whose provider is closed); cases
/// substituted by it (--replace-router) go back to their own rule. Built-in policies and
/// unknown names are left alone.
void remove_policy(const std::string& name);

/// Runs policy `real` (a name or alias) with the rule of policy `with` from now
/// on, e.g. substitute_policy("aiter-b4885d2", "aiter-pre-b4885d2"): every case
/// that names `real` keeps its id, its expectations and its non-fixture status
/// (a misroute is then an unexpected failure), but is routed by `with`'s rule.
/// This is `kvharness run --replace-router REAL=WITH`; WITH may be a provider's router.
/// RouteDecision::reason then starts with "WITH: " (the rule that decided). Throws
/// std::invalid_argument for an unknown name. Process-wide, like add_policy.
void substitute_policy(const std::string& real, const std::string& with);

/// Compute units of a named target, for routing what-ifs: MI210 104, MI250X
/// 110 (per device: one of its two dies), MI300X 304, MI325X 304, MI355X 256
/// (AMD specifications). Throws std::invalid_argument
/// for another name, listing the known ones.
int64_t compute_units_of(const std::string& target);
const std::vector<std::string>& target_names();

}  // namespace kvh::routing
