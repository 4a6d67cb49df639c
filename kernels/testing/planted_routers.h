// Planted-bug routing policies (tests only): see planted_routers.cpp.
#pragma once
#include <vector>

#include "router/router.h"

namespace kvh::testing {

/// One planted policy: its name, its rule, and the bug in words.
struct PlantedRouter {
  const char* name;
  routing::RuleFn rule;
  const char* bug;
};

/// Every planted policy: planted_router_ge_threshold, _one_cu, _dtype_first, _seqs_only,
/// planted_mla_router_small_heads.
const std::vector<PlantedRouter>& planted_routers();

/// Adds them to the routing policies (routing::add_policy), not as fixtures.
/// Throws std::invalid_argument when called twice.
void register_planted_routers();

}  // namespace kvh::testing
