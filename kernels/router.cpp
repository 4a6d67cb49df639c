#include "router.h"

#include <stdexcept>

namespace kvh::routing {

namespace {

// A policy is named by the aiter commit whose rule it models; the release
// tags that shipped each rule stay accepted as aliases.
struct Policy {
  const char* name;
  const char* alias;            // release tag, e.g. "aiter-v0.1.12"
  bool asm_only_head_size_128;  // aiter b4885d2, first released in v0.1.12
};
const Policy kPolicies[] = {{"aiter-pre-b4885d2", "aiter-v0.1.10.post3", false},
                            {"aiter-b4885d2", "aiter-v0.1.12", true}};

const Policy* find_policy(const std::string& name) {
  for (const auto& p : kPolicies)
    if (name == p.name || name == p.alias) return &p;
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

const std::vector<std::string>& policy_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& p : kPolicies) v.push_back(p.name), v.push_back(p.alias);
    return v;
  }();
  return names;
}

std::string canonical_policy(const std::string& policy) {
  const Policy* p = find_policy(policy);
  return p ? p->name : "";
}

bool is_regression_fixture(const std::string& policy) {
  const Policy* p = find_policy(policy);
  return p && !p->asm_only_head_size_128;
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

  auto decide = [&](const char* reader, std::string why) {
    return RouteDecision{reader, p->name, why + " -> " + reader};
  };
  // Rule order as in aiter's _should_use_asm_kernel; the first that fires names the reason.
  if (p->asm_only_head_size_128 && in.head_size != 128)
    return decide(kRocmReader, "head_size = " + std::to_string(in.head_size) + " != 128 (ASM kernel supports only 128)");
  if (in.high_precision == 2) return decide(kAsmReader, "high_precision = 2");
  if (in.cache_dtype == CacheDtype::int8) return decide(kAsmReader, "cache dtype int8");
  const int64_t total_heads = in.num_seqs * in.num_heads, threshold = 2 * in.compute_units;
  const std::string numbers = "num_seqs*num_heads = " + std::to_string(total_heads);
  const std::string cus = "2*CUs = " + std::to_string(threshold);
  if (total_heads > threshold) return decide(kAsmReader, numbers + " > " + cus);
  return decide(kRocmReader, numbers + " <= " + cus);
}

}  // namespace kvh::routing
