#include "route_boundaries.h"

#include <stdexcept>

namespace kvh {

namespace {

constexpr std::pair<const char*, int64_t> kTargets[] = {
    {"MI210", 104}, {"MI250X", 110}, {"MI300X", 304}, {"MI325X", 304}, {"MI355X", 256}};

}  // namespace

const std::vector<std::string>& named_targets() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, cus] : kTargets) out.push_back(name);
    return out;
  }();
  return names;
}

std::optional<int64_t> target_compute_units_of(const std::string& target) {
  for (const auto& [name, cus] : kTargets)
    if (target == name) return cus;
  if (target.rfind("cus=", 0) == 0 && target.size() > 4 && target.size() < 12 &&
      target.find_first_not_of("0123456789", 4) == std::string::npos) {
    const int64_t n = std::stoll(target.substr(4));
    if (n >= 1) return n;
  }
  return std::nullopt;
}

std::vector<int64_t> route_boundary_batches(int64_t num_heads, int64_t compute_units) {
  if (num_heads < 1 || compute_units < 1) throw std::invalid_argument("route_boundary_batches: needs positive inputs");
  const int64_t at = 2 * compute_units / num_heads;
  std::vector<int64_t> out;
  for (int64_t b : {at - 1, at, at + 1})
    if (b >= 1) out.push_back(b);
  return out;
}

namespace {

constexpr std::pair<const char*, UnifiedRule> kUnifiedPolicies[] = {
    {"vllm-unified-ccd7c05", UnifiedRule::grid_block_m_16}, {"vllm-v0.9.2", UnifiedRule::grid_block_m_16},
    {"vllm-unified-6d80ae8", UnifiedRule::grid_block_m_pow2}, {"vllm-unified-9c0ee99", UnifiedRule::seq_threshold},
    {"vllm-v0.14.0", UnifiedRule::seq_threshold}};

}  // namespace

std::optional<UnifiedRule> unified_rule_of(const std::string& router) {
  for (const auto& [name, rule] : kUnifiedPolicies)
    if (router == name) return rule;
  return std::nullopt;
}

const std::vector<std::string>& unified_policy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& [name, rule] : kUnifiedPolicies) out.push_back(name);
    return out;
  }();
  return names;
}

std::vector<int64_t> unified_route_boundary_batches(UnifiedRule rule, int64_t num_heads, int64_t num_kv_heads) {
  if (num_heads < 1 || num_kv_heads < 1 || num_heads % num_kv_heads != 0)
    throw std::invalid_argument(
        "unified_route_boundary_batches: needs positive heads, num_kv_heads dividing num_heads");
  const int64_t per_kv = num_heads / num_kv_heads, programs = 128 / num_kv_heads;
  int64_t at = programs;  // seq_threshold: num_seqs <= 128 // num_kv_heads takes 3d
  if (rule != UnifiedRule::seq_threshold) {
    int64_t block_m = 16;
    if (rule == UnifiedRule::grid_block_m_pow2)
      while (block_m < per_kv) block_m *= 2;
    const int64_t block_q = block_m / per_kv;
    if (block_q == 0) return {};
    // 3d while num_seqs // BLOCK_Q + num_seqs <= 128 // num_kv_heads (the q blocks of a decode batch).
    at = 0;
    while ((at + 1) / block_q + at + 1 <= programs) ++at;
  }
  std::vector<int64_t> out;
  for (int64_t b : {at - 1, at, at + 1})
    if (b >= 1) out.push_back(b);
  return out;
}

bool is_mla_policy(const std::string& router) {
  for (const char* p : {"vllm-rocm-mla-pre-50578", "vllm-rocm-mla-50578", "vllm-rocm-mla-51011"})
    if (router == p) return true;
  return false;
}

std::vector<int64_t> mla_route_boundary_batches() { return {1, 2}; }

}  // namespace kvh
