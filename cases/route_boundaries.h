// Routing boundaries for the case generator: the batch sizes at which the
// documented routing rules change their decision, so that a case file can ask
// for cases just below, at and just above each threshold (`route_boundaries =
// true`). An independent statement of the rules of kernels/router/router.h (cases/
// includes nothing of kernels/); route_boundaries_test checks the two agree.
//
// Rules (aiter aiter/ops/attention.py, _should_use_asm_kernel, called by
// paged_attention_common): both policies, aiter-pre-b4885d2 (v0.1.10.post3)
// and aiter-b4885d2 (v0.1.12), send a decode step to the ASM kernel when
// num_seqs * num_heads > 2 * compute_units (once head size, high precision
// and the cache dtype have not decided). That is the only threshold in num_seqs.
//
// vLLM's unified Triton attention launcher (the vllm-unified-* policies and
// their aliases, kernels/router/router.h) sends a decode batch (one query
// token a sequence, num_queries_per_kv = num_heads / num_kv_heads per rank)
// to the split-K 3d kernel below its threshold and to the one-pass 2d kernel
// above it:
//   grid rules (vllm-unified-ccd7c05, -6d80ae8): 2d when total_num_q_blocks *
//     num_kv_heads > 128, total_num_q_blocks = num_seqs // BLOCK_Q + num_seqs,
//     BLOCK_Q = BLOCK_M // num_queries_per_kv, BLOCK_M = 16 (ccd7c05; BLOCK_Q
//     is 0 above 16 queries per kv head and the launcher fails) or, above 16,
//     next_power_of_2(num_queries_per_kv) (6d80ae8);
//   seq_threshold (vllm-unified-9c0ee99): 2d when num_seqs > 128 // num_kv_heads.
// A batch with a longer query is 2d under every rule: no threshold in num_seqs.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvh {

/// Compute units of a routing target as case files name it: "MI210" 104,
/// "MI250X" 110, "MI300X" 304, "MI325X" 304, "MI355X" 256 (AMD
/// specifications, as kernels/router/router.cpp), or "cus=N". nullopt for anything
/// else, the empty target (the device's own) included.
std::optional<int64_t> target_compute_units_of(const std::string& target);
/// The named targets above, in that order: the key table's values of `target`
/// (cases/keys.cpp); route_boundaries_test holds them to kernels/router's.
const std::vector<std::string>& named_targets();

/// The batch sizes (num_seqs, >= 1, ascending, no duplicates) just below, at
/// and just above the threshold num_seqs * num_heads > 2 * compute_units:
/// at = floor(2 * compute_units / num_heads) is the largest batch that stays
/// below it (exactly on it when num_heads divides 2 * compute_units), so
/// {at - 1, at, at + 1}. Requires num_heads, compute_units >= 1.
std::vector<int64_t> route_boundary_batches(int64_t num_heads, int64_t compute_units);

/// The vLLM unified launcher's rules, as above.
enum class UnifiedRule { grid_block_m_16, grid_block_m_pow2, seq_threshold };
/// The rule of a vllm-unified policy or its alias ("vllm-v0.9.2"); nullopt for
/// another name (an aiter policy: route_boundary_batches).
std::optional<UnifiedRule> unified_rule_of(const std::string& router);
/// Every name unified_rule_of knows, canonical names and aliases, as
/// kernels/router lists them (route_boundaries_test holds the two together).
const std::vector<std::string>& unified_policy_names();

/// The decode batch sizes (num_seqs, >= 1, ascending, no duplicates) just below,
/// at and just above the unified launcher's threshold for these per-rank heads:
/// at is the largest batch that still takes the 3d kernel (grid rules: the
/// largest num_seqs with (num_seqs // BLOCK_Q + num_seqs) * num_kv_heads <= 128;
/// seq_threshold: 128 // num_kv_heads), so at + 1 is the smallest that takes 2d,
/// and {at - 1, at, at + 1}. Empty for grid_block_m_16 with num_heads /
/// num_kv_heads > 16 (its launcher divides by BLOCK_Q = 0 at every batch).
/// Requires num_heads, num_kv_heads >= 1, num_kv_heads dividing num_heads.
std::vector<int64_t> unified_route_boundary_batches(UnifiedRule rule, int64_t num_heads, int64_t num_kv_heads);

/// vLLM's ROCm MLA policies (issue 22; kernels/router/mla_rules.h: "vllm-rocm-mla-pre-50578",
/// "vllm-rocm-mla-50578", "vllm-rocm-mla-51011"): their thresholds are in the head count per rank
/// (16, and the divisors of 16), which the presets' tp axes reach, not in num_seqs; the one batch
/// limit the routes meet is the Gluon kernel's fp8 regime (aiter bh16bn128: batch_size == 1).
bool is_mla_policy(const std::string& router);
/// The batches around that limit: {1, 2} (the last batch inside it and the first outside).
std::vector<int64_t> mla_route_boundary_batches();

}  // namespace kvh
