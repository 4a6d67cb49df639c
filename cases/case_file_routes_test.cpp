// The case-file keys of issue 10: `values`, `expect_routed_to` and
// `route_boundaries`, and the generator's routing boundaries.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "case_file.h"
#include "case_file_test_util.h"
#include "route_boundaries.h"

namespace kvh {
namespace {

// Qwen3-235B-A22B at tp=8: 8 heads per rank; MI355X: threshold 512 -> boundary batches 63, 64, 65.
const std::string kHead =
    "[[attention]]\nmodels = [\"Qwen3-235B-A22B\"]\ntp = 8\nlayouts = [\"kv_first\"]\nblock_sizes = [16]\n"
    "dtypes = [\"bf16\"]\ncontext_lens = [1, 30]\n";  // lines 1-7

using testing::expect_error;

TEST(CaseFileValues, AxisCrossesTheCasesAndOnlyNonDefaultValuesChangeIds) {
  const auto cases = parse_case_text(kHead + "batch_sizes = [4]\nreaders = [\"r\"]\nvalues = [\"normal\", \"sink\", \"large\"]\n",
                                     "v.toml");
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(cases[0].values, ValueDist::Normal);
  EXPECT_EQ(cases[1].values, ValueDist::Sink);
  EXPECT_EQ(cases[2].values, ValueDist::Large);
  const std::string normal = parse_case_text(kHead + "batch_sizes = [4]\nreaders = [\"r\"]\n", "v.toml")[0].id();
  EXPECT_EQ(cases[0].id(), normal) << "ids of existing cases must not change";
  EXPECT_EQ(cases[1].id(), "attention/Qwen3-235B-A22B/tp8/hd128/kv_first/bs16/bf16/n4/ctx1-30/reference+r/values=sink/s1");
  EXPECT_NE(cases[2].id().find("/values=large/"), std::string::npos);
}

TEST(CaseFileValues, BadValuesNameFileLineAndField) {
  expect_error(kHead + "batch_sizes = [4]\nreaders = [\"r\"]\nvalues = [\"huge\"]\n",
               "bad.toml:10: field 'values': unknown value 'huge'; expected one of normal, sink, large");
  expect_error(kHead + "batch_sizes = [4]\nreaders = [\"r\"]\nvalues = \"sink\"\n",
               "bad.toml:10: field 'values': expected a non-empty array of strings, got a string");
}

TEST(CaseFileRoutes, BoundariesAddBatchesAroundTheThresholdAndRoutesAreStated) {
  const std::string text = kHead +
                           "batch_sizes = [4, 64]\n"
                           "route_boundaries = true\n"
                           "target = \"MI355X\"\n"
                           "routers = [\"aiter-v0.1.12\"]\n"
                           "readers = [\"paged_attention_v1\"]\n"
                           "expect_routed_to = [\n"
                           "  { batch_range = [1, 64], reader = \"paged_attention_rocm\" },\n"
                           "  { routers = [\"aiter-v0.1.12\"], batch_sizes = [63, 65], reader = \"pa_fwd_asm\" },\n"
                           "]\n";
  const auto cases = parse_case_text(text, "r.toml");
  std::vector<int64_t> routed, read;
  for (const Case& c : cases) (c.router_policy.empty() ? read : routed).push_back(c.batch_size);
  EXPECT_EQ(routed, (std::vector<int64_t>{4, 64, 63, 65})) << "64 is already there; 63 and 65 are added";
  EXPECT_EQ(read, (std::vector<int64_t>{4, 64})) << "readers get no boundary batches";
  for (const Case& c : cases) {
    if (c.router_policy.empty()) {
      EXPECT_EQ(c.expect_routed_to, "");
      continue;
    }
    EXPECT_EQ(c.expect_routed_to, c.batch_size <= 64 ? "paged_attention_rocm" : "pa_fwd_asm") << c.batch_size;
    EXPECT_EQ(c.context_len_min, 1);
    EXPECT_EQ(c.context_len_max, 30);
  }
}

// vLLM's unified launcher: route_boundaries adds the batches around its 2d/3d threshold for the
// per-rank kv heads (Qwen3-235B-A22B at tp=8: 8 heads over 1 kv head, BLOCK_Q 2), with no target.
TEST(CaseFileRoutes, UnifiedBoundariesFollowTheKvHeadsAndNeedNoTarget) {
  const std::string text = kHead +
                           "batch_sizes = [4]\n"
                           "route_boundaries = true\n"
                           "routers = [\"vllm-v0.9.2\", \"vllm-unified-9c0ee99\"]\n"
                           "expect_routed_to = [\n"
                           "  { routers = [\"vllm-v0.9.2\"], batch_range = [1, 85], "
                           "reader = \"unified_attention_3d\" },\n"
                           "  { routers = [\"vllm-unified-9c0ee99\"], batch_range = [1, 128], "
                           "reader = \"unified_attention_3d\" },\n"
                           "  { reader = \"unified_attention_2d\" },\n"
                           "]\n";
  std::map<std::string, std::vector<int64_t>> batches;
  for (const Case& c : parse_case_text(text, "u.toml")) {
    batches[c.router_policy].push_back(c.batch_size);
    EXPECT_EQ(c.num_kv_heads, 1);
    const int64_t last_3d = c.router_policy == "vllm-v0.9.2" ? 85 : 128;
    EXPECT_EQ(c.expect_routed_to, c.batch_size <= last_3d ? "unified_attention_3d" : "unified_attention_2d")
        << c.router_policy << " " << c.batch_size;
  }
  // (85 // 2 + 85) * 1 = 127 <= 128 < 129 = 86 // 2 + 86; 128 // 1 = 128.
  EXPECT_EQ(batches["vllm-v0.9.2"], (std::vector<int64_t>{4, 84, 85, 86}));
  EXPECT_EQ(batches["vllm-unified-9c0ee99"], (std::vector<int64_t>{4, 127, 128, 129}));
  expect_error("[[attention]]\nmodels = [\"Qwen3-235B-A22B\"]\ntp = 8\nlayouts = [\"kv_first\"]\nblock_sizes = [16]\n"
               "dtypes = [\"bf16\"]\ncontext_lens_lists = [[3, 4]]\nrouters = [\"vllm-unified-9c0ee99\"]\n"
               "route_boundaries = true\n",
               "bad.toml:9: field 'route_boundaries': needs batch_sizes with a context_lens range");
}

TEST(CaseFileRoutes, AStringStatesOneRouteAndAVariantOverridesTheTable) {
  const std::string text = kHead +
                           "batch_sizes = [4]\ntarget = \"MI355X\"\nexpect_routed_to = \"paged_attention_rocm\"\n"
                           "[[attention.variants]]\nname = \"a\"\nrouter = \"aiter-v0.1.12\"\n"
                           "[[attention.variants]]\nname = \"b\"\nrouter = \"aiter-v0.1.10.post3\"\n"
                           "expect_routed_to = \"pa_fwd_asm\"\n";
  const auto cases = parse_case_text(text, "r.toml");
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].expect_routed_to, "paged_attention_rocm");
  EXPECT_EQ(cases[1].expect_routed_to, "pa_fwd_asm");
}

TEST(CaseFileRoutes, BadRouteKeysNameFileLineAndField) {
  const std::string routed = "batch_sizes = [4]\ntarget = \"MI355X\"\nrouters = [\"aiter-v0.1.12\"]\n";  // lines 8-10
  expect_error(kHead + routed + "expect_routed_to = 3\n",
               "bad.toml:11: field 'expect_routed_to': expected a reader name or an array of tables");
  expect_error(kHead + routed + "expect_routed_to = [{ head_sizes = [128] }]\n",
               "bad.toml:11: field 'expect_routed_to': an entry needs 'reader'");
  expect_error(kHead + routed + "expect_routed_to = [{ reader = \"x\", batch = [4] }]\n",
               "bad.toml:11: field 'batch': unknown field in [expect_routed_to]");
  expect_error(kHead + routed + "expect_routed_to = [{ reader = \"x\", batch_range = [9, 3] }]\n",
               "bad.toml:11: field 'batch_range': expected [min, max] with min <= max");
  expect_error(kHead + routed + "expect_routed_to = [{ reader = \"x\", head_sizes = [256] }]\n",
               "bad.toml:1: field 'expect_routed_to': no entry of the expected routes at bad.toml:11 matches router "
               "aiter-v0.1.12, head_size 128, dtype bf16, batch 4");
  expect_error(kHead + "batch_sizes = [4]\nreaders = [\"r\"]\nexpect_routed_to = \"x\"\n",
               "bad.toml:10: field 'expect_routed_to': the table has no router");
  expect_error(kHead + "batch_sizes = [4]\n[[attention.variants]]\nreader = \"r\"\nexpect_routed_to = \"x\"\n",
               "bad.toml:11: field 'expect_routed_to': only a variant with a 'router' is routed");
  expect_error(kHead + "batch_sizes = [4]\nrouters = [\"aiter-v0.1.12\"]\nroute_boundaries = true\n",
               "bad.toml:10: field 'route_boundaries': needs batch_sizes with a context_lens range and a named target");
  expect_error(kHead + "batch_sizes = [4]\nrouters = [\"aiter-v0.1.12\"]\ntarget = \"MI999\"\nroute_boundaries = true\n",
               "bad.toml:10: field 'target': unknown target 'MI999'");
  expect_error(kHead + "batch_sizes = [4]\nreaders = [\"r\"]\ntarget = \"MI355X\"\nroute_boundaries = 1\n",
               "bad.toml:11: field 'route_boundaries': expected true or false, got an integer");
  expect_error(kHead + "batch_sizes = [4]\nreaders = [\"r\"]\ntarget = \"MI355X\"\nroute_boundaries = true\n",
               "bad.toml:11: field 'route_boundaries': the table has no router variant");
}

// `target` is checked by the loader, at its own line, in every table that has it (router or
// not), cus=N within the key table's bounds.
TEST(CaseFileRoutes, BadTargetsNameTheKeysLineInEveryTable) {
  const std::string routers = "batch_sizes = [4]\nrouters = [\"aiter-v0.1.12\"]\n";  // lines 8-9
  const std::string readers = "batch_sizes = [4]\nreaders = [\"r\"]\n";
  expect_error(kHead + routers + "target = \"MI999\"\n",
               "bad.toml:10: field 'target': unknown target 'MI999'; expected one of MI210, MI250X, MI300X, MI325X, "
               "MI355X, or cus=N with N compute units in [1, 65536]");
  expect_error(kHead + readers + "target = \"MI999\"\n", "bad.toml:10: field 'target': unknown target 'MI999'");
  std::string pipeline = kHead + readers + "writers = [\"w\"]\ntarget = \"MI999\"\n";
  pipeline.replace(0, std::string("[[attention]]").size(), "[[pipeline]]");
  expect_error(pipeline, "bad.toml:11: field 'target': unknown target 'MI999'");
  for (const char* cus : {"cus=99999999999", "cus=65537", "cus=0", "cus=x", "cus=", "cus=-4"})
    expect_error(kHead + routers + "target = \"" + cus + "\"\n",
                 std::string("bad.toml:10: field 'target': expected cus=N with N compute units in [1, 65536], got '") +
                     cus + "'");
  expect_error(kHead + routers + "target = 304\n", "bad.toml:10: field 'target': expected a string, got an integer");
  for (const char* ok : {"MI300X", "cus=1", "cus=65536"}) {
    const auto cases = parse_case_text(kHead + routers + "target = \"" + ok + "\"\n", "t.toml");
    ASSERT_EQ(cases.size(), 1u);
    EXPECT_EQ(cases[0].target, ok);
  }
  EXPECT_EQ(parse_case_text(kHead + readers + "target = \"MI300X\"\n", "t.toml")[0].target, "")
      << "a reader row has no target";
}

TEST(RouteBoundaries, BelowAtAndAboveTheThreshold) {
  EXPECT_EQ(route_boundary_batches(8, 256), (std::vector<int64_t>{63, 64, 65}));   // 64 * 8 = 512: on it
  EXPECT_EQ(route_boundary_batches(3, 256), (std::vector<int64_t>{169, 170, 171}));  // 170 * 3 = 510 <= 512 < 513
  EXPECT_EQ(route_boundary_batches(1024, 256), (std::vector<int64_t>{1}));         // at = 0: only batch 1 (> 512)
  EXPECT_EQ(target_compute_units_of("MI355X"), 256);
  EXPECT_EQ(target_compute_units_of("cus=12"), 12);
  EXPECT_FALSE(target_compute_units_of("cus=0"));
  EXPECT_FALSE(target_compute_units_of("cus=x"));
  EXPECT_FALSE(target_compute_units_of(""));
  EXPECT_THROW(route_boundary_batches(0, 256), std::invalid_argument);
}

}  // namespace
}  // namespace kvh
