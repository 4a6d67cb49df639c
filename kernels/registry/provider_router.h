// A provider's router (kvh_kernel_desc.route, kvharness 0.5) as a routing
// policy: the harness routes a case through it exactly as through a built-in
// policy (kernels/router/router.h), so case files, expect_routed_to, route
// boundary cases and --replace-router work with the stack's own dispatcher.
#pragma once
#include <string>

#include "kvharness/provider.h"
#include "router/router.h"

namespace kvh {

/// kvh_route_args of one step (RouteInput's fields under provider.h's names; num_kv_heads 0
/// becomes num_heads, num_query_tokens 0 becomes num_seqs, cache_dtype 0 becomes dtype).
kvh_route_args to_route_args(const routing::RouteInput& in);

/// The rule that calls `route(context, ...)` of router `name`. The rule throws
/// routing::RouterError "router NAME raised: MESSAGE" (last_error's) when the router
/// returns non-zero, and "router NAME returned no kernel name" for an empty kernel;
/// its reason is the router's own, ending in " -> KERNEL" as the built-in rules' do.
routing::Rule provider_rule(const std::string& name, kvh_route_fn route, void* context,
                            kvh_last_error_fn last_error);

}  // namespace kvh
