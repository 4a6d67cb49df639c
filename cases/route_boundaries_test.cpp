// cases/route_boundaries states the routing threshold and the targets' compute
// units independently of kernels/router (cases/ includes nothing of kernels/);
// this test holds the two statements together.
#include "route_boundaries.h"

#include <gtest/gtest.h>

#include <map>

#include "case_file.h"
#include "planted_routers.h"
#include "router/router.h"

namespace kvh {
namespace {

TEST(RouteBoundaries, TargetsAgreeWithTheRouter) {
  for (const auto& t : routing::target_names()) EXPECT_EQ(target_compute_units_of(t), routing::compute_units_of(t)) << t;
  // The loader and the filter take a target's names from the key table (cases/ includes nothing of kernels/).
  EXPECT_EQ(named_targets(), routing::target_names());
  EXPECT_EQ(case_key(KeyTable::Attention, "target").values, routing::target_names());
  EXPECT_EQ(case_key(KeyTable::Pipeline, "target").values, routing::target_names());
}

// For every policy, every head count and target: the decision is the same on
// both sides of each gap except across the threshold, where it flips once
// (head_size 128, so that the fixed policy's head-size test does not decide).
TEST(RouteBoundaries, TheDecisionFlipsExactlyBetweenAtAndAbove) {
  for (const auto& policy : routing::policy_names()) {
    if (policy.rfind("aiter-", 0) != 0) continue;  // aiter's threshold; the unified launcher's is below
    for (int64_t heads : {1, 3, 4, 8, 16, 64})
      for (const auto& target : routing::target_names()) {
        const int64_t cus = routing::compute_units_of(target);
        const auto b = route_boundary_batches(heads, cus);
        auto reader = [&](int64_t n) {
          return routing::route(policy, routing::RouteInput{n, heads, 128, routing::CacheDtype::bf16, 1, cus}).reader;
        };
        ASSERT_EQ(b.size(), 3u);
        EXPECT_EQ(reader(b[0]), routing::kRocmReader);
        EXPECT_EQ(reader(b[1]), routing::kRocmReader) << policy << " " << heads << " " << target;
        EXPECT_EQ(reader(b[2]), routing::kAsmReader) << policy << " " << heads << " " << target;
      }
  }
}

// The unified launcher's policies as cases/ names them are kernels/router's, alias for alias.
TEST(UnifiedRouteBoundaries, PolicyNamesAgreeWithTheRouter) {
  std::vector<std::string> router_names;
  for (const auto& p : routing::policy_names())
    if (p.rfind("vllm-", 0) == 0 && !is_mla_policy(p)) router_names.push_back(p);  // MLA: no batch threshold
  EXPECT_EQ(unified_policy_names(), router_names);
  for (const auto& a : unified_policy_names())
    for (const auto& b : unified_policy_names())
      EXPECT_EQ(unified_rule_of(a) == unified_rule_of(b), routing::canonical_policy(a) == routing::canonical_policy(b))
          << a << " " << b;
  for (const auto& p : routing::policy_names())
    if (p.rfind("aiter-", 0) == 0) EXPECT_FALSE(unified_rule_of(p)) << p;
}

// The MLA policies as cases/ names them are kernels/router's; their batch boundary {1, 2} is where the
// Gluon fp8 domain ends: under the old policies an fp8 step of 8 heads is inside it at 1, outside at 2.
TEST(MlaRouteBoundaries, PolicyNamesAndTheGluonFp8BatchLimit) {
  std::vector<std::string> router_names;
  for (const auto& p : routing::policy_names())
    if (p.rfind("vllm-rocm-mla-", 0) == 0) router_names.push_back(p);
  EXPECT_EQ(router_names.size(), 3u);
  for (const auto& p : router_names) EXPECT_TRUE(is_mla_policy(p)) << p;
  EXPECT_FALSE(is_mla_policy("vllm-unified-9c0ee99"));
  EXPECT_EQ(mla_route_boundary_batches(), (std::vector<int64_t>{1, 2}));
  for (int64_t n : mla_route_boundary_batches()) {
    routing::RouteInput in{n, 8, 576, routing::CacheDtype::fp8, 1, 256, 1};
    in.kv_lora_rank = 512;
    EXPECT_EQ(routing::route("vllm-rocm-mla-pre-50578", in).reader, routing::kMlaGluonReader) << n;
    EXPECT_EQ(routing::route("vllm-rocm-mla-51011", in).reader, routing::kMlaAsmReader) << n;
  }
}

// Per-rank heads of the model presets at tp 1, 2, 8 and a few more: under every unified policy
// the batches below the last are on the split-K kernel and the last on the one-pass kernel.
TEST(UnifiedRouteBoundaries, TheDecisionFlipsExactlyBeforeTheLastBatch) {
  const std::pair<int64_t, int64_t> shapes[] = {{32, 8},  {16, 4}, {4, 1},  {32, 2},  {16, 1}, {16, 2}, {2, 1},
                                                {64, 4},  {8, 1},  {64, 8}, {32, 32}, {4, 4},  {1, 1},  {64, 2},
                                                {128, 1}, {48, 3}, {256, 256}};
  for (const auto& policy : unified_policy_names())
    for (const auto& [heads, kv] : shapes) {
      auto reader = [&](int64_t n) {
        routing::RouteInput in{n, heads, 128, routing::CacheDtype::bf16, 1, 304};
        in.num_kv_heads = kv;
        return routing::route(policy, in).reader;
      };
      const auto b = unified_route_boundary_batches(*unified_rule_of(policy), heads, kv);
      if (b.empty()) {  // vllm-unified-ccd7c05 beyond 16 queries per kv head: its launcher fails
        EXPECT_GT(heads / kv, 16) << policy;
        EXPECT_THROW(reader(1), std::invalid_argument) << policy << " " << heads << "/" << kv;
        continue;
      }
      for (size_t i = 0; i + 1 < b.size(); ++i)
        EXPECT_EQ(reader(b[i]), routing::kUnified3dReader) << policy << " " << heads << "/" << kv << " n=" << b[i];
      EXPECT_EQ(reader(b.back()), routing::kUnified2dReader)
          << policy << " " << heads << "/" << kv << " n=" << b.back();
      EXPECT_EQ(b.size(), b.back() >= 3 ? 3u : size_t(b.back())) << "at - 1, at, at + 1 from batch 1 up";
    }
  EXPECT_EQ(unified_route_boundary_batches(UnifiedRule::grid_block_m_16, 32, 8), (std::vector<int64_t>{12, 13, 14}));
  EXPECT_EQ(unified_route_boundary_batches(UnifiedRule::seq_threshold, 32, 8), (std::vector<int64_t>{15, 16, 17}));
  EXPECT_EQ(unified_route_boundary_batches(UnifiedRule::grid_block_m_pow2, 64, 2), (std::vector<int64_t>{31, 32, 33}));
  EXPECT_TRUE(unified_route_boundary_batches(UnifiedRule::grid_block_m_16, 64, 2).empty());
  EXPECT_EQ(unified_route_boundary_batches(UnifiedRule::seq_threshold, 256, 256), (std::vector<int64_t>{1}));
  EXPECT_THROW(unified_route_boundary_batches(UnifiedRule::seq_threshold, 32, 3), std::invalid_argument);
}

}  // namespace
}  // namespace kvh

namespace kvh {
namespace {

// The committed suites state the route of every router case, and each stated
// route is what the policy's rule gives (the hand derivation in the case files
// agrees with kernels/router).
// What the router sees of case c: a ragged case's largest query (any query longer than 1 sends
// every unified rule to its one-pass kernel); a table without a target routes only vllm-unified
// policies, which do not read compute units.
routing::RouteInput route_input(const Case& c, routing::CacheDtype dtype) {
  const std::optional<int64_t> cus = target_compute_units_of(c.target);
  routing::RouteInput in{c.batch_size, c.num_heads, c.head_size, dtype, c.high_precision, cus ? *cus : 1,
                         c.num_kv_heads};
  if (c.ragged()) {
    in.max_query_len = c.max_query_len();
    in.num_query_tokens = c.batch_size * c.max_query_len();
  }
  // The cache dtype as the attention case gives it (fp8, int8: the router's quantized-cache rules);
  // MLA steps (issue 22): the vllm-rocm-mla-* policies read kv_lora_rank too.
  if (c.fp8_cache()) in.cache_dtype = routing::CacheDtype::fp8;
  if (c.int8_cache()) in.cache_dtype = routing::CacheDtype::int8;
  in.kv_lora_rank = c.mla() ? c.kv_lora_rank : 0;
  return in;
}

TEST(StatedRoutes, EveryRouterCaseOfTheCommittedSuitesStatesTheRouteItsPolicyGives) {
  for (const char* file : {"default.toml", "seed-pr.toml", "ragged.toml", "mla_routes.toml"}) {
    const auto cases = load_case_file(std::string(KVH_CASES_DIR) + "/" + file);
    int routed = 0;
    for (const Case& c : cases) {
      if (c.router_policy.empty()) continue;
      ++routed;
      ASSERT_FALSE(c.expect_routed_to.empty()) << file << ": " << c.id() << " states no route";
      const routing::RouteInput in =
          route_input(c, c.dtype == DType::F16 ? routing::CacheDtype::fp16 : routing::CacheDtype::bf16);
      EXPECT_EQ(c.expect_routed_to, routing::route(c.router_policy, in).reader) << file << ": " << c.id();
    }
    EXPECT_GT(routed, 0) << file;
  }
}

// The check above can fail: under a planted rule whose threshold moved from > to >=, the
// default suite's boundary cases state routes the rule does not give.
TEST(StatedRoutes, APlantedThresholdDisagreesWithTheDefaultSuitesStatedRoutes) {
  testing::register_planted_routers();
  routing::substitute_policy("aiter-b4885d2", "planted_router_ge_threshold");
  int disagree = 0;
  for (const Case& c : load_case_file(std::string(KVH_CASES_DIR) + "/default.toml")) {
    if (c.router_policy.empty()) continue;
    disagree += c.expect_routed_to != routing::route(c.router_policy, route_input(c, routing::CacheDtype::bf16)).reader;
  }
  routing::substitute_policy("aiter-b4885d2", "aiter-b4885d2");
  EXPECT_GT(disagree, 0);
}


// The case table for vLLM's unified launcher (offered for cases/ragged.toml; decode batches:
// the case format has no per-sequence query lengths yet). Its stated routes are the rules'
// (router.h), worked by hand: Llama-3.1-8B, 32 heads over 8 kv heads (BLOCK_Q 4): the grid rules
// keep 3d while (n // 4 + n) * 8 <= 128, n <= 13; 9c0ee99 while n <= 128 // 8 = 16.
// Qwen3.5-397B-A17B at tp 1, 32 heads over 2 kv heads (BLOCK_Q 1): 2n * 2 <= 128, n <= 32; n <= 64.
const char* const kUnifiedTable = R"(
[[attention]]
models = ["Llama-3.1-8B"]
tp = 1
layouts = ["interleaved"]
batch_sizes = [1, 64]
route_boundaries = true
context_lens = [1, 2000]
block_sizes = [16]
dtypes = ["bf16"]
routers = ["vllm-unified-ccd7c05", "vllm-unified-6d80ae8", "vllm-unified-9c0ee99"]
expect_routed_to = [
  { routers = ["vllm-unified-9c0ee99"], batch_range = [1, 16], reader = "unified_attention_3d" },
  { batch_range = [1, 13], reader = "unified_attention_3d" },
  { reader = "unified_attention_2d" },
]

[[attention]]
models = ["Qwen3.5-397B-A17B"]
tp = 1
layouts = ["interleaved"]
batch_sizes = [1, 128]
route_boundaries = true
context_lens = [1, 2000]
block_sizes = [16]
dtypes = ["bf16"]
routers = ["vllm-unified-ccd7c05", "vllm-unified-6d80ae8", "vllm-unified-9c0ee99"]
expect_routed_to = [
  { routers = ["vllm-unified-9c0ee99"], batch_range = [1, 64], reader = "unified_attention_3d" },
  { batch_range = [1, 32], reader = "unified_attention_3d" },
  { reader = "unified_attention_2d" },
]
)";

routing::RouteInput decode_step(const Case& c) {
  routing::RouteInput in{c.batch_size, c.num_heads, c.head_size, routing::CacheDtype::bf16, c.high_precision, 304};
  in.num_kv_heads = c.num_kv_heads;
  return in;
}

// route_boundaries adds each policy's own batches (no target needed), and every stated route is the router's.
TEST(UnifiedStatedRoutes, TheUnifiedTableStatesTheRoutesOfItsPolicies) {
  const auto cases = parse_case_text(kUnifiedTable, "unified.toml");
  std::map<std::string, std::vector<int64_t>> batches;  // "model policy" -> batch sizes
  for (const Case& c : cases) {
    ASSERT_FALSE(c.expect_routed_to.empty()) << c.id();
    EXPECT_EQ(c.target, "");
    EXPECT_EQ(c.expect_routed_to, routing::route(c.router_policy, decode_step(c)).reader) << c.id();
    batches[c.model + " " + c.router_policy].push_back(c.batch_size);
  }
  EXPECT_EQ(batches["Llama-3.1-8B vllm-unified-ccd7c05"], (std::vector<int64_t>{1, 64, 12, 13, 14}));
  EXPECT_EQ(batches["Llama-3.1-8B vllm-unified-6d80ae8"], (std::vector<int64_t>{1, 64, 12, 13, 14}));
  EXPECT_EQ(batches["Llama-3.1-8B vllm-unified-9c0ee99"], (std::vector<int64_t>{1, 64, 15, 16, 17}));
  EXPECT_EQ(batches["Qwen3.5-397B-A17B vllm-unified-ccd7c05"], (std::vector<int64_t>{1, 128, 31, 32, 33}));
  EXPECT_EQ(batches["Qwen3.5-397B-A17B vllm-unified-9c0ee99"], (std::vector<int64_t>{1, 128, 63, 64, 65}));
  // A table of aiter routers still needs the target whose compute units set its threshold.
  const std::string table =
      "[[attention]]\nmodels = [\"Llama-3.1-8B\"]\nlayouts = [\"interleaved\"]\nbatch_sizes = [1]\n"
      "route_boundaries = true\ncontext_lens = [1, 20]\nblock_sizes = [16]\ndtypes = [\"bf16\"]\n";
  EXPECT_EQ(parse_case_text(table + "routers = [\"vllm-v0.14.0\"]\n", "t.toml").size(), 4u);  // 1, 15, 16, 17
  EXPECT_THROW(parse_case_text(table + "routers = [\"vllm-v0.14.0\", \"aiter-v0.1.12\"]\n", "t.toml"), CaseFileError);
}

// Off-by-one thresholds planted in each rule: the table's boundary batches state routes they do not give.
routing::RouteDecision planted_seq_threshold_plus_one(const routing::RouteInput& in) {
  const int64_t kv = in.num_kv_heads == 0 ? in.num_heads : in.num_kv_heads;
  const bool two_d = in.max_query_len > 1 || in.num_seqs > 128 / kv + 1;
  return {two_d ? routing::kUnified2dReader : routing::kUnified3dReader, "", "num_seqs > 128 // kv + 1"};
}
routing::RouteDecision planted_grid_greater_or_equal(const routing::RouteInput& in) {
  const int64_t kv = in.num_kv_heads == 0 ? in.num_heads : in.num_kv_heads, block_q = 16 / (in.num_heads / kv);
  const bool two_d = in.max_query_len > 1 || (in.num_seqs / block_q + in.num_seqs) * kv >= 128;
  return {two_d ? routing::kUnified2dReader : routing::kUnified3dReader, "", "grid >= 128"};
}

TEST(UnifiedStatedRoutes, PlantedOffByOneThresholdsDisagreeWithTheTablesStatedRoutes) {
  routing::add_policy("planted_unified_seq_threshold_plus_one", planted_seq_threshold_plus_one);
  routing::add_policy("planted_unified_grid_ge", planted_grid_greater_or_equal);
  const auto cases = parse_case_text(kUnifiedTable, "unified.toml");
  for (const auto& [real, planted] : {std::pair<const char*, const char*>{"vllm-unified-9c0ee99",
                                                                          "planted_unified_seq_threshold_plus_one"},
                                      {"vllm-unified-ccd7c05", "planted_unified_grid_ge"}}) {
    routing::substitute_policy(real, planted);
    std::vector<int64_t> caught;
    for (const Case& c : cases)
      if (c.router_policy == real && c.expect_routed_to != routing::route(real, decode_step(c)).reader)
        caught.push_back(c.batch_size);
    routing::substitute_policy(real, real);
    // Only the boundary batches catch it: just above 9c0ee99's threshold, exactly on the grid's 128.
    EXPECT_EQ(caught, real == std::string("vllm-unified-9c0ee99") ? (std::vector<int64_t>{17, 65})
                                                                    : (std::vector<int64_t>{13, 32}))
        << real;
  }
}

}  // namespace
}  // namespace kvh
