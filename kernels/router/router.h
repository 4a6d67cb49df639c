// Decode-attention routing: which reader `paged_attention_common` sends a
// decode step to, under a named policy (a versioned copy of aiter's rule),
// named by the aiter commit that introduced the rule it models; the release
// tags that shipped it are aliases:
//   "aiter-pre-b4885d2"    (alias "aiter-v0.1.10.post3") the ASM kernel
//                          pa_fwd_asm is chosen when high_precision == 2, or
//                          the cache dtype is int8, or num_seqs * num_heads >
//                          2 * compute_units; otherwise paged_attention_rocm.
//                          No head-size test: head_size 256 at large batch
//                          goes to the 128-only kernel.
//   "aiter-b4885d2"        (alias "aiter-v0.1.12") the same, but head_size !=
//                          128 goes to paged_attention_rocm first.
// Source: aiter aiter/ops/attention.py, _should_use_asm_kernel() called by
// paged_attention_common. Pure host code; no kernel is launched. Tests add
// planted policies (add_policy) and run one policy's cases under another's
// rule (substitute_policy, `kvharness run --replace-router`).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace kvh::routing {

/// Reader names the router chooses between (kernels registered in builtin_provider.cpp).
inline constexpr const char* kAsmReader = "pa_fwd_asm";
inline constexpr const char* kRocmReader = "paged_attention_rocm";

/// KV-cache element type as the router sees it.
enum class CacheDtype { fp16, bf16, fp8, int8 };
const char* to_string(CacheDtype d);
/// "fp16" | "bf16" | "fp8" | "int8"; throws std::invalid_argument naming the known ones.
CacheDtype parse_cache_dtype(const std::string& s);

/// One decode step as paged_attention_common sees it. num_heads is per rank
/// (after tensor parallelism); compute_units is the device's CU count (or a
/// named target's, see compute_units_of).
struct RouteInput {
  int64_t num_seqs = 0, num_heads = 0, head_size = 0;
  CacheDtype cache_dtype = CacheDtype::bf16;
  int high_precision = 1;  // 0, 1 or 2 (2: highest, fp8 caches)
  int64_t compute_units = 0;
};

/// The decision: the reader, the policy that chose it, and why, naming the
/// rule and its numbers, e.g. "num_seqs*num_heads = 2048 > 2*CUs = 512 -> pa_fwd_asm".
struct RouteDecision {
  std::string reader;
  std::string policy;
  std::string reason;
};

/// Routes `in` under the policy named `policy`. Throws std::invalid_argument
/// for an unknown policy (listing the known ones), num_seqs < 0, num_heads,
/// head_size or compute_units < 1, or high_precision outside 0..2.
RouteDecision route(const std::string& policy, const RouteInput& in);

/// Every accepted policy name, oldest first, each canonical name followed by
/// its alias: {"aiter-pre-b4885d2", "aiter-v0.1.10.post3", "aiter-b4885d2", "aiter-v0.1.12"},
/// then any add_policy() names. add_policy() may invalidate the reference's iterators.
const std::vector<std::string>& policy_names();
/// The canonical name of a policy or alias ("aiter-v0.1.12" -> "aiter-b4885d2"); "" if unknown.
std::string canonical_policy(const std::string& policy);

/// True for a policy kept as a regression fixture: known to misroute (the
/// old aiter-v0.1.10.post3 rule sends head_size != 128 to the 128-only kernel).
/// Its FAILs are expected and do not change kvharness's exit code.
bool is_regression_fixture(const std::string& policy);

/// A routing rule: the reader for `in` and why (RouteDecision::policy is filled in by route()).
/// `in` has been validated by route(). Must not throw for valid input.
using RuleFn = RouteDecision (*)(const RouteInput& in);

/// A policy beside the built-in ones (a planted policy of the mutation test,
/// kernels/testing/planted_routers.cpp). `fixture`: known to misroute on
/// purpose (its misroutes are expected failures, like aiter-pre-b4885d2).
/// Throws std::invalid_argument when the name is empty or already taken.
/// Process-wide; not thread-safe against concurrent route() calls.
void add_policy(const std::string& name, RuleFn rule, bool fixture = false);

/// Runs policy `real` (a name or alias) with the rule of policy `with` from now
/// on, e.g. substitute_policy("aiter-b4885d2", "aiter-pre-b4885d2"): every case
/// that names `real` keeps its id, its expectations and its non-fixture status
/// (a misroute is then an unexpected failure), but is routed by `with`'s rule.
/// This is `kvharness run --replace-router REAL=WITH`. Throws
/// std::invalid_argument for an unknown name. Process-wide, like add_policy.
void substitute_policy(const std::string& real, const std::string& with);

/// Compute units of a named target, for routing what-ifs: MI210 104, MI250X
/// 110 (per device: one of its two dies), MI300X 304, MI325X 304, MI355X 256
/// (AMD specifications). Throws std::invalid_argument
/// for another name, listing the known ones.
int64_t compute_units_of(const std::string& target);
const std::vector<std::string>& target_names();

}  // namespace kvh::routing
