// Planted-bug routing policies for the mutation test (never among the built-in
// policies): aiter's rule (kernels/router/router.cpp) with one realistic change each.
// A route that differs from the documented rule is caught by the cases that
// state their expected route (expect_routed_to), even where the kernel it
// picks could run the case.
#include "planted_routers.h"

#include <string>

#include "router/mla_rules.h"

namespace kvh::testing {
namespace {

using routing::CacheDtype;
using routing::RouteDecision;
using routing::RouteInput;

RouteDecision to(const char* reader, const std::string& why) { return RouteDecision{reader, "", why + " -> " + reader}; }

// The fixed rule (aiter b4885d2) with knobs for the planted changes.
struct Knobs {
  bool greater_equal = false;  // total >= threshold instead of >
  bool one_cu = false;         // threshold CUs instead of 2 * CUs
  bool dtype_first = false;    // high_precision / int8 tested before the head-size test
  bool seqs_only = false;      // num_seqs compared, num_heads forgotten
};

RouteDecision rule(const RouteInput& in, Knobs k) {
  const bool forced = in.high_precision == 2 || in.cache_dtype == CacheDtype::int8;
  if (k.dtype_first && forced) return to(routing::kAsmReader, "high_precision 2 or int8 (tested first)");
  if (in.head_size != 128) return to(routing::kRocmReader, "head_size != 128");
  if (forced) return to(routing::kAsmReader, "high_precision 2 or int8");
  const int64_t total = k.seqs_only ? in.num_seqs : in.num_seqs * in.num_heads;
  const int64_t threshold = (k.one_cu ? 1 : 2) * in.compute_units;
  const bool big = k.greater_equal ? total >= threshold : total > threshold;
  return to(big ? routing::kAsmReader : routing::kRocmReader,
            std::to_string(total) + (big ? " above " : " not above ") + std::to_string(threshold));
}

RouteDecision ge_threshold(const RouteInput& in) { return rule(in, Knobs{true, false, false, false}); }
RouteDecision one_cu(const RouteInput& in) { return rule(in, Knobs{false, true, false, false}); }
RouteDecision dtype_first(const RouteInput& in) { return rule(in, Knobs{false, false, true, false}); }
RouteDecision seqs_only(const RouteInput& in) { return rule(in, Knobs{false, false, false, true}); }

// ---- MLA (issue 22): vllm-rocm-mla-51011 with the bug of the issue put back: an fp8 cache at a
// head count dividing 16 goes to the Gluon kernel again, whose fp8 mode needs batch 1 (a
// batch > 1 is a misroute; cases/default.toml's routed MLA slice states the route). ----
RouteDecision mla_small_heads(const RouteInput& in) {
  if (in.kv_lora_rank > 0 && in.cache_dtype == CacheDtype::fp8 && in.num_heads < routing::mla::kMinAsmHeads &&
      routing::mla::kMinAsmHeads % in.num_heads == 0 && in.max_query_len == 1)
    return to(routing::kMlaGluonReader, "num_heads < 16 divides 16 (fp8 cache not tested)");
  return routing::mla::rule_51011(in);
}

}  // namespace

const std::vector<PlantedRouter>& planted_routers() {
  static const std::vector<PlantedRouter> r{
      {"planted_router_ge_threshold", ge_threshold,
       "ASM when num_seqs*num_heads >= 2*CUs (the threshold moved from > to >=)"},
      {"planted_router_one_cu", one_cu, "ASM when num_seqs*num_heads > CUs (the factor 2 lost)"},
      {"planted_router_dtype_first", dtype_first,
       "high_precision 2 / int8 tested before the head-size test (rules reordered): head_size 256 goes to ASM"},
      {"planted_router_seqs_only", seqs_only, "ASM when num_seqs > 2*CUs (num_heads forgotten)"},
      // MLA (issue 22)
      {"planted_mla_router_small_heads", mla_small_heads,
       "vllm-rocm-mla-51011 with fp8 caches of < 16 heads sent to the Gluon kernel again (batch 1 only)"},
  };
  return r;
}

void register_planted_routers() {
  for (const auto& p : planted_routers()) routing::add_policy(p.name, p.rule);
}

}  // namespace kvh::testing
