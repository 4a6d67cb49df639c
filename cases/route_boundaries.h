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

}  // namespace kvh
