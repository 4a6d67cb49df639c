#include "registry/provider_router.h"

#include <cstring>

namespace kvh {

kvh_route_args to_route_args(const routing::RouteInput& in) {
  kvh_route_args a;
  std::memset(static_cast<void*>(&a), 0, sizeof a);
  a.struct_size = sizeof a;
  a.num_seqs = in.num_seqs;
  a.num_heads = in.num_heads;
  a.num_kv_heads = in.num_kv_heads ? in.num_kv_heads : in.num_heads;
  a.head_size = in.head_size;
  a.block_size = in.block_size;
  a.num_query_tokens = in.num_query_tokens ? in.num_query_tokens : in.num_seqs;
  a.max_query_len = in.max_query_len;
  a.max_context_len = in.max_context_len;
  a.compute_units = in.compute_units;
  a.dtype = in.dtype ? in.dtype : (in.cache_dtype == routing::CacheDtype::fp16 ? KVH_DT_F16 : KVH_DT_BF16);
  a.cache_dtype = in.cache_dtype_code ? in.cache_dtype_code : a.dtype;
  a.kv_scales = in.kv_scales;
  a.cache_format = in.cache_format;
  a.high_precision = in.high_precision;
  a.causal = in.causal ? 1 : 0;
  a.target = in.target.c_str();  // lives as long as `in`, i.e. during the call
  a.kv_lora_rank = in.kv_lora_rank;
  return a;
}

routing::Rule provider_rule(const std::string& name, kvh_route_fn route, void* context,
                            kvh_last_error_fn last_error) {
  return [=](const routing::RouteInput& in) {
    const kvh_route_args a = to_route_args(in);
    kvh_route_result r;
    std::memset(static_cast<void*>(&r), 0, sizeof r);
    if (route(context, &a, &r) != 0) {
      const char* m = last_error ? last_error(context) : nullptr;
      throw routing::RouterError("router " + name + " raised: " + (m && *m ? m : "(no message)"));
    }
    const std::string kernel(r.kernel, strnlen(r.kernel, sizeof r.kernel));
    const std::string reason(r.reason, strnlen(r.reason, sizeof r.reason));
    if (kernel.empty()) throw routing::RouterError("router " + name + " returned no kernel name");
    return routing::RouteDecision{kernel, "", (reason.empty() ? "chosen by " + name : reason) + " -> " + kernel};
  };
}

}  // namespace kvh
