#include "router/router.h"

#include "router/mla_rules.h"

#include <algorithm>
#include <stdexcept>

namespace kvh::routing {

namespace {

// One rule per policy. A policy is named by the aiter commit whose rule it
// models; the release tags that shipped each rule stay accepted as aliases.
RouteDecision aiter_rule(const RouteInput& in, bool asm_only_head_size_128);
RouteDecision rule_pre_b4885d2(const RouteInput& in) { return aiter_rule(in, false); }
RouteDecision rule_b4885d2(const RouteInput& in) { return aiter_rule(in, true); }
// vLLM's unified_attention launcher (router.h names the commits).
enum class BlockM { fixed16, pow2_above_16 };
RouteDecision vllm_grid_rule(const RouteInput& in, BlockM block_m, const char* policy);
RouteDecision vllm_seq_threshold_rule(const RouteInput& in);
RouteDecision rule_vllm_ccd7c05(const RouteInput& in) {
  return vllm_grid_rule(in, BlockM::fixed16, "vllm-unified-ccd7c05");
}
RouteDecision rule_vllm_6d80ae8(const RouteInput& in) {
  return vllm_grid_rule(in, BlockM::pow2_above_16, "vllm-unified-6d80ae8");
}
RouteDecision rule_vllm_9c0ee99(const RouteInput& in) { return vllm_seq_threshold_rule(in); }

struct Policy {
  std::string name;
  std::string alias;  // release tag, e.g. "aiter-v0.1.12"; empty when none was verified
  Rule rule;
  bool fixture;       // known to misroute on purpose
  std::string substitute;  // --replace-router: run this policy's rule instead ("" or name: its own)
  bool added = false;      // by add_policy (removable)
};

std::vector<Policy>& policies() {
  static std::vector<Policy> p{{"aiter-pre-b4885d2", "aiter-v0.1.10.post3", rule_pre_b4885d2, true},
                               {"aiter-b4885d2", "aiter-v0.1.12", rule_b4885d2, false},
                               {"vllm-unified-ccd7c05", "vllm-v0.9.2", rule_vllm_ccd7c05, false},
                               {"vllm-unified-6d80ae8", "", rule_vllm_6d80ae8, false},
                               {"vllm-unified-9c0ee99", "vllm-v0.14.0", rule_vllm_9c0ee99, false},
                               // vLLM's ROCm AITER MLA backend (router/mla_rules.h); no release tag verified.
                               {"vllm-rocm-mla-pre-50578", "", mla::rule_pre_50578, true},
                               {"vllm-rocm-mla-50578", "", mla::rule_50578, true},
                               {"vllm-rocm-mla-51011", "", mla::rule_51011, false}};
  return p;
}

Policy* find_policy(const std::string& name) {
  for (auto& p : policies())
    if (name == p.name || (!p.alias.empty() && name == p.alias)) return &p;
  return nullptr;
}

struct Target {
  const char* name;
  int64_t compute_units;
};
// Compute units as the runtime reports them per device (an MI250X is two
// devices of 110 CUs each). AMD Instinct specifications.
const Target kTargets[] = {{"MI210", 104}, {"MI250X", 110}, {"MI300X", 304}, {"MI325X", 304}, {"MI355X", 256}};

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& e : v) s += (s.empty() ? "" : ", ") + e;
  return s;
}

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("route: " + what);
}

}  // namespace

const char* to_string(CacheDtype d) {
  switch (d) {
    case CacheDtype::fp16: return "fp16";
    case CacheDtype::bf16: return "bf16";
    case CacheDtype::fp8: return "fp8";
    case CacheDtype::int8: return "int8";
  }
  return "?";
}

CacheDtype parse_cache_dtype(const std::string& s) {
  for (auto d : {CacheDtype::fp16, CacheDtype::bf16, CacheDtype::fp8, CacheDtype::int8})
    if (s == to_string(d)) return d;
  throw std::invalid_argument("unknown cache dtype '" + s + "'; known: fp16, bf16, fp8, int8");
}

namespace {
std::vector<std::string>& names_list() {
  static std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& p : policies()) {
      v.push_back(p.name);
      if (!p.alias.empty()) v.push_back(p.alias);
    }
    return v;
  }();
  return names;
}
}  // namespace

const std::vector<std::string>& policy_names() { return names_list(); }

void add_policy(const std::string& name, Rule rule, bool fixture) {
  if (name.empty() || !rule) throw std::invalid_argument("add_policy: a policy needs a name and a rule");
  if (find_policy(name)) throw std::invalid_argument("add_policy: policy '" + name + "' already exists");
  names_list();  // the built-ins first
  policies().push_back(Policy{name, "", std::move(rule), fixture, "", true});
  names_list().push_back(name);
}

void remove_policy(const std::string& name) {
  auto& ps = policies();
  auto it = std::find_if(ps.begin(), ps.end(), [&](const Policy& p) { return p.added && p.name == name; });
  if (it == ps.end()) return;
  ps.erase(it);
  auto& names = names_list();
  names.erase(std::remove(names.begin(), names.end(), name), names.end());
  for (auto& p : ps)
    if (p.substitute == name) p.substitute.clear();
}

void substitute_policy(const std::string& real, const std::string& with) {
  Policy* r = find_policy(real);
  const Policy* w = find_policy(with);
  if (!r || !w)
    throw std::invalid_argument("unknown routing policy '" + (r ? with : real) + "'; known: " + join(policy_names()));
  r->substitute = w->name == r->name ? "" : w->name;
}

std::string canonical_policy(const std::string& policy) {
  const Policy* p = find_policy(policy);
  return p ? p->name : "";
}

bool is_regression_fixture(const std::string& policy) {
  const Policy* p = find_policy(policy);
  if (!p) return false;
  // Under --replace-router the substitute's rule decides: its misroutes are expected only if both are fixtures.
  const Policy* by = p->substitute.empty() ? p : find_policy(p->substitute);
  return p->fixture && by && by->fixture;
}

const std::vector<std::string>& target_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& t : kTargets) v.push_back(t.name);
    return v;
  }();
  return names;
}

int64_t compute_units_of(const std::string& target) {
  for (const auto& t : kTargets)
    if (target == t.name) return t.compute_units;
  throw std::invalid_argument("unknown target '" + target + "'; known: " + join(target_names()));
}

RouteDecision route(const std::string& policy, const RouteInput& in) {
  const Policy* p = find_policy(policy);
  if (!p) throw std::invalid_argument("unknown routing policy '" + policy + "'; known: " + join(policy_names()));
  require(in.num_seqs >= 0, "num_seqs must be >= 0");
  require(in.num_heads >= 1 && in.head_size >= 1, "num_heads and head_size must be >= 1");
  require(in.compute_units >= 1, "compute_units must be >= 1");
  require(in.high_precision >= 0 && in.high_precision <= 2, "high_precision must be 0, 1 or 2");
  require(in.num_kv_heads >= 0 && (in.num_kv_heads == 0 || in.num_heads % in.num_kv_heads == 0),
          "num_kv_heads must divide num_heads (0: num_heads), got " + std::to_string(in.num_kv_heads) + " for " +
              std::to_string(in.num_heads));
  const int64_t tokens = in.num_query_tokens == 0 ? in.num_seqs : in.num_query_tokens;
  require(in.num_query_tokens >= 0 && in.max_query_len >= 1, "num_query_tokens must be >= 0, max_query_len >= 1");
  // Every sequence has 1 .. max_query_len query tokens.
  require(tokens >= in.num_seqs && (in.num_seqs == 0 ? tokens == 0 && in.max_query_len == 1
                                                      : in.max_query_len <= tokens - in.num_seqs + 1 &&
                                                            in.max_query_len * in.num_seqs >= tokens),
          "num_query_tokens = " + std::to_string(tokens) + " is not num_seqs = " + std::to_string(in.num_seqs) +
              " queries of 1 .. max_query_len = " + std::to_string(in.max_query_len) +
              " tokens, one of them the longest");
  const Policy* by = p->substitute.empty() ? p : find_policy(p->substitute);
  RouteDecision d = by->rule(in);
  d.policy = p->name;
  if (by != p) d.reason = by->name + ": " + d.reason;  // the substitute's rule decided
  return d;
}

namespace {

RouteDecision decide(const char* reader, const std::string& why) { return RouteDecision{reader, "", why + " -> " + reader}; }

// aiter's _should_use_asm_kernel (aiter/ops/attention.py), called by
// paged_attention_common; rule order as there, the first that fires names the reason.
// The paged-attention policies do not route the latent cache (MLA has its own policies).
void require_not_mla(const RouteInput& in, const char* policy) {
  if (in.kv_lora_rank > 0)
    throw std::invalid_argument(std::string("route: ") + policy +
                                " routes paged attention, not an MLA step (kv_lora_rank " +
                                std::to_string(in.kv_lora_rank) + "); use a vllm-rocm-mla-* policy");
}

RouteDecision aiter_rule(const RouteInput& in, bool asm_only_head_size_128) {
  require_not_mla(in, asm_only_head_size_128 ? "aiter-b4885d2" : "aiter-pre-b4885d2");
  if (asm_only_head_size_128 && in.head_size != 128)
    return decide(kRocmReader, "head_size = " + std::to_string(in.head_size) + " != 128 (ASM kernel supports only 128)");
  if (in.high_precision == 2) return decide(kAsmReader, "high_precision = 2");
  if (in.cache_dtype == CacheDtype::int8) return decide(kAsmReader, "cache dtype int8");
  const int64_t total_heads = in.num_seqs * in.num_heads, threshold = 2 * in.compute_units;
  const std::string numbers = "num_seqs*num_heads = " + std::to_string(total_heads);
  const std::string cus = "2*CUs = " + std::to_string(threshold);
  if (total_heads > threshold) return decide(kAsmReader, numbers + " > " + cus);
  return decide(kRocmReader, numbers + " <= " + cus);
}

int64_t kv_heads(const RouteInput& in) { return in.num_kv_heads == 0 ? in.num_heads : in.num_kv_heads; }
int64_t query_tokens(const RouteInput& in) { return in.num_query_tokens == 0 ? in.num_seqs : in.num_query_tokens; }
std::string prefill_reason(const RouteInput& in) {
  return "max_seqlen_q = " + std::to_string(in.max_query_len) + " > 1 (a prefill in the batch)";
}

int64_t next_power_of_2(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

// ccd7c05 / 6d80ae8: the 2d grid (total_num_q_blocks, num_kv_heads) against 128 programs.
RouteDecision vllm_grid_rule(const RouteInput& in, BlockM block_m_rule, const char* policy) {
  require_not_mla(in, policy);
  const int64_t kv = kv_heads(in), per_kv = in.num_heads / kv;
  const int64_t block_m = block_m_rule == BlockM::pow2_above_16 && per_kv > 16 ? next_power_of_2(per_kv) : 16;
  const int64_t block_q = block_m / per_kv;
  // The launcher computes total_num_q_blocks (q.shape[0] // BLOCK_Q) before it chooses.
  if (block_q == 0)
    throw std::invalid_argument(std::string("route: ") + policy + ": num_queries_per_kv = " + std::to_string(per_kv) +
                                " > 16 makes BLOCK_Q = 16 // " + std::to_string(per_kv) +
                                " = 0, and the launcher divides by it (ZeroDivisionError; fixed by 6d80ae8)");
  if (in.max_query_len > 1) return decide(kUnified2dReader, prefill_reason(in));
  const int64_t blocks = query_tokens(in) / block_q + in.num_seqs, programs = blocks * kv;
  const std::string numbers = "total_num_q_blocks*num_kv_heads = " + std::to_string(blocks) + "*" + std::to_string(kv) +
                              " = " + std::to_string(programs);
  const std::string bq = " (BLOCK_Q = " + std::to_string(block_q) + ")";
  if (programs > 128) return decide(kUnified2dReader, numbers + " > 128" + bq);
  return decide(kUnified3dReader, numbers + " <= 128" + bq);
}

// 9c0ee99: num_seqs against seq_threshold_3D = MIN_LAUNCH_GRID_SIZE_2D // num_kv_heads (triton_attn.py).
RouteDecision vllm_seq_threshold_rule(const RouteInput& in) {
  require_not_mla(in, "vllm-unified-9c0ee99");
  if (in.max_query_len > 1) return decide(kUnified2dReader, prefill_reason(in));
  const int64_t kv = kv_heads(in), threshold = 128 / kv;
  const std::string numbers = "num_seqs = " + std::to_string(in.num_seqs);
  const std::string t = "seq_threshold_3D = " + std::to_string(threshold) + " (128 // num_kv_heads " +
                        std::to_string(kv) + ")";
  if (in.num_seqs > threshold) return decide(kUnified2dReader, numbers + " > " + t);
  return decide(kUnified3dReader, numbers + " <= " + t);
}

}  // namespace

}  // namespace kvh::routing
