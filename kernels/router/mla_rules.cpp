#include "router/mla_rules.h"

#include <stdexcept>
#include <string>

namespace kvh::routing::mla {
namespace {

enum class Version { pre_50578, v50578, v51011 };

RouteDecision to(const char* reader, const std::string& why) { return RouteDecision{reader, "", why + " -> " + reader}; }

std::string heads(const RouteInput& in) { return "num_heads = " + std::to_string(in.num_heads); }

RouteDecision rule(const RouteInput& in, Version v, const char* policy) {
  if (in.kv_lora_rank <= 0)
    throw std::invalid_argument(std::string("route: ") + policy +
                                " routes MLA steps only (kv_lora_rank > 0); this step has kv_lora_rank 0");
  if (in.num_heads >= kMinAsmHeads) return to(kMlaAsmReader, heads(in) + " >= 16 (_AITER_MIN_MLA_HEADS)");
  const std::string small = heads(in) + " < 16";
  const bool fp8 = in.cache_dtype == CacheDtype::fp8;
  if (v == Version::v51011 && fp8)
    return to(kMlaAsmReader, small + ", fp8 cache: never Gluon (vLLM PR 51011), ASM padded to 16 heads");
  if (v == Version::pre_50578) return to(kMlaGluonReader, small + " (any cache dtype)");
  if (in.max_query_len > 1)
    return to(kMlaGluonReader, small + ", max_query_len = " + std::to_string(in.max_query_len) + " (verify branch)");
  if (kMinAsmHeads % in.num_heads != 0)
    return to(kMlaAsmReader, small + " does not divide 16 (vLLM PR 50578): ASM padded to 16 heads");
  return to(kMlaGluonReader, small + " divides 16, max_query_len 1" + (fp8 ? ", fp8 cache" : ""));
}

}  // namespace

RouteDecision rule_pre_50578(const RouteInput& in) { return rule(in, Version::pre_50578, "vllm-rocm-mla-pre-50578"); }
RouteDecision rule_50578(const RouteInput& in) { return rule(in, Version::v50578, "vllm-rocm-mla-50578"); }
RouteDecision rule_51011(const RouteInput& in) { return rule(in, Version::v51011, "vllm-rocm-mla-51011"); }

}  // namespace kvh::routing::mla
