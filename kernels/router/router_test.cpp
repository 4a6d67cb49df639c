// Routing policies: the aiter rules at their boundaries, the PR's two models,
// and the misroute the old policy makes (checked against the readers'
// declared capabilities in the registry).
#include "router/router.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "registry/registry.h"

namespace kvh::routing {
namespace {

const char* kOld = "aiter-v0.1.10.post3";
const char* kNew = "aiter-v0.1.12";

RouteInput step(int64_t num_seqs, int64_t num_heads, int64_t head_size, int64_t cus,
                CacheDtype dt = CacheDtype::bf16, int high_precision = 1) {
  return RouteInput{num_seqs, num_heads, head_size, dt, high_precision, cus};
}

// Planted bug (d): the large-workload test written with >=. Test-local: it
// exists to show that the boundary test below can tell the two apart.
std::string planted_route_ge(const RouteInput& in) {
  if (in.head_size != 128) return kRocmReader;
  if (in.high_precision == 2 || in.cache_dtype == CacheDtype::int8) return kAsmReader;
  return in.num_seqs * in.num_heads >= 2 * in.compute_units ? kAsmReader : kRocmReader;
}

TEST(Router, ThresholdIsStrictlyGreaterThanTwiceTheComputeUnits) {
  const int64_t cus = compute_units_of("MI355X");  // 256: threshold 512
  for (const char* policy : {kOld, kNew}) {
    EXPECT_EQ(route(policy, step(64, 8, 128, cus)).reader, kRocmReader) << policy;  // 512 == 2*CUs
    EXPECT_EQ(route(policy, step(513, 1, 128, cus)).reader, kAsmReader) << policy;  // 513 > 512
    EXPECT_EQ(route(policy, step(511, 1, 128, cus)).reader, kRocmReader) << policy;
  }
}

TEST(Router, PlantedGreaterOrEqualDiffersExactlyAtTheThreshold) {
  const int64_t cus = 256;
  const RouteInput at = step(64, 8, 128, cus);  // num_seqs*num_heads = 512 = 2*CUs
  EXPECT_EQ(route(kNew, at).reader, kRocmReader);
  EXPECT_EQ(planted_route_ge(at), kAsmReader);
  for (int64_t n : {63, 65})  // one step either side, both agree
    EXPECT_EQ(route(kNew, step(n, 8, 128, cus)).reader, planted_route_ge(step(n, 8, 128, cus))) << n;
}

TEST(Router, ReasonNamesTheRuleAndTheNumbers) {
  const RouteDecision d = route(kNew, step(256, 8, 128, 256));
  EXPECT_EQ(d.reader, kAsmReader);
  EXPECT_EQ(d.policy, "aiter-b4885d2");  // the canonical name of the alias asked for
  EXPECT_EQ(d.reason, "num_seqs*num_heads = 2048 > 2*CUs = 512 -> pa_fwd_asm");
  EXPECT_EQ(route(kNew, step(4, 8, 128, 256)).reason, "num_seqs*num_heads = 32 <= 2*CUs = 512 -> paged_attention_rocm");
  EXPECT_EQ(route(kNew, step(512, 4, 256, 256)).reason,
            "head_size = 256 != 128 (ASM kernel supports only 128) -> paged_attention_rocm");
  EXPECT_EQ(route(kOld, step(1, 1, 128, 256, CacheDtype::int8)).reason, "cache dtype int8 -> pa_fwd_asm");
  EXPECT_EQ(route(kOld, step(1, 1, 128, 256, CacheDtype::fp8, 2)).reason, "high_precision = 2 -> pa_fwd_asm");
}

TEST(Router, Int8AndHighPrecision2ForceAsmOnlyAt128UnderNewPolicy) {
  for (auto in : {step(1, 1, 256, 304, CacheDtype::int8), step(1, 1, 256, 304, CacheDtype::fp8, 2)}) {
    EXPECT_EQ(route(kOld, in).reader, kAsmReader);
    EXPECT_EQ(route(kNew, in).reader, kRocmReader);
    in.head_size = 128;
    EXPECT_EQ(route(kNew, in).reader, kAsmReader);
  }
  EXPECT_EQ(route(kNew, step(1, 1, 128, 304, CacheDtype::fp8, 0)).reader, kRocmReader);
}

// vLLM PR (shared/seed-pr-discussion.txt), MI355X, TP 8: Qwen3.5-397B has 32/8 = 4
// heads per rank and head_size 256; Qwen3-235B 64/8 = 8 heads and head_size 128.
TEST(Router, PrModelsAtBatch4And512) {
  const int64_t cus = compute_units_of("MI355X");
  const RouteInput qwen35_b4 = step(4, 4, 256, cus), qwen35_b512 = step(512, 4, 256, cus);
  EXPECT_EQ(route(kOld, qwen35_b4).reader, kRocmReader);
  EXPECT_EQ(route(kOld, qwen35_b512).reader, kAsmReader);  // the bug: 2048 > 512, head_size ignored
  EXPECT_EQ(route(kNew, qwen35_b512).reader, kRocmReader);
  EXPECT_EQ(route(kNew, step(512, 8, 128, cus)).reader, kAsmReader);  // Qwen3-235B still uses ASM
  EXPECT_EQ(route(kNew, step(4, 8, 128, cus)).reader, kRocmReader);
}

// The registered readers' declared capabilities: the new policy never sends a
// head size to a reader that does not declare it; the old one does.
TEST(Router, NewPolicyNeverMisroutesOldPolicyDoes) {
  Registry registry;
  auto supports = [&](const std::string& reader, int64_t head_size) {
    const Kernel* d = registry.find(reader);
    if (!d) return false;
    KernelUse use;
    use.head_size = head_size;
    use.cache_format = d->cache_format;
    return d->outside_capabilities(use).empty();
  };
  int old_misroutes = 0;
  for (int64_t hs : {64, 80, 96, 128, 192, 256})
    for (int64_t seqs : {1, 4, 64, 512})
      for (CacheDtype dt : {CacheDtype::bf16, CacheDtype::int8})
        for (int hp : {0, 1, 2}) {
          const RouteInput in = step(seqs, 8, hs, 304, dt, hp);
          EXPECT_TRUE(supports(route(kNew, in).reader, hs)) << route(kNew, in).reason;
          old_misroutes += !supports(route(kOld, in).reader, hs);
        }
  EXPECT_GT(old_misroutes, 0);
}

TEST(Router, UnknownPolicyListsTheKnownOnes) {
  try {
    route("aiter-v0.2", step(1, 1, 128, 304));
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("aiter-pre-b4885d2, aiter-v0.1.10.post3, aiter-b4885d2, aiter-v0.1.12, "
                                         "vllm-unified-ccd7c05, vllm-v0.9.2, vllm-unified-6d80ae8, "
                                         "vllm-unified-9c0ee99, vllm-v0.14.0"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(policy_names(), (std::vector<std::string>{"aiter-pre-b4885d2", kOld, "aiter-b4885d2", kNew,
                                                      "vllm-unified-ccd7c05", "vllm-v0.9.2", "vllm-unified-6d80ae8",
                                                      "vllm-unified-9c0ee99", "vllm-v0.14.0", "vllm-rocm-mla-pre-50578",
                                                      "vllm-rocm-mla-50578", "vllm-rocm-mla-51011"}));
}

// Policies are named by the aiter commit of their rule; release tags are aliases that route alike.
TEST(Router, CommitNamesAndTagAliasesRouteAlike) {
  EXPECT_EQ(canonical_policy(kNew), "aiter-b4885d2");
  EXPECT_EQ(canonical_policy(kOld), "aiter-pre-b4885d2");
  EXPECT_EQ(canonical_policy("aiter-v0.2"), "");
  EXPECT_TRUE(is_regression_fixture("aiter-pre-b4885d2"));
  EXPECT_TRUE(is_regression_fixture(kOld));
  EXPECT_FALSE(is_regression_fixture("aiter-b4885d2"));
  const RouteInput big = step(512, 4, 256, 256);
  EXPECT_EQ(route("aiter-b4885d2", big).reader, route(kNew, big).reader);
  EXPECT_EQ(route("aiter-pre-b4885d2", big).reader, kAsmReader);
  EXPECT_EQ(route(kNew, big).policy, "aiter-b4885d2");
}

TEST(Router, RejectsImpossibleInputs) {
  EXPECT_THROW(route(kNew, step(1, 0, 128, 304)), std::invalid_argument);
  EXPECT_THROW(route(kNew, step(1, 1, 128, 0)), std::invalid_argument);
  EXPECT_THROW(route(kNew, step(-1, 1, 128, 304)), std::invalid_argument);
  EXPECT_THROW(route(kNew, step(1, 1, 128, 304, CacheDtype::bf16, 3)), std::invalid_argument);
}

TEST(Router, NamedTargets) {
  EXPECT_EQ(compute_units_of("MI300X"), 304);
  EXPECT_EQ(compute_units_of("MI325X"), 304);
  EXPECT_EQ(compute_units_of("MI355X"), 256);
  EXPECT_EQ(compute_units_of("MI250X"), 110);
  EXPECT_EQ(compute_units_of("MI210"), 104);
  try {
    compute_units_of("MI100");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("MI210, MI250X, MI300X, MI325X, MI355X"), std::string::npos) << e.what();
  }
}

TEST(Router, CacheDtypeNames) {
  EXPECT_EQ(parse_cache_dtype("int8"), CacheDtype::int8);
  EXPECT_EQ(parse_cache_dtype("fp8"), CacheDtype::fp8);
  EXPECT_STREQ(to_string(CacheDtype::bf16), "bf16");
  EXPECT_THROW(parse_cache_dtype("e4m3"), std::invalid_argument);
}

// ---- vLLM's unified Triton attention launcher: unified_attention_2d or _3d ----

const char* kGrid = "vllm-unified-ccd7c05";      // total_num_q_blocks*num_kv_heads > 128, BLOCK_M 16
const char* kGridPow2 = "vllm-unified-6d80ae8";  // the same, BLOCK_M next_power_of_2 above 16 queries per kv head
const char* kSeq = "vllm-unified-9c0ee99";       // num_seqs > 128 // num_kv_heads
const char* k2d = kUnified2dReader;
const char* k3d = kUnified3dReader;

// A step of `num_heads` query heads over `kv` kv heads per rank; `tokens` 0 and `max_len` 1: decode.
RouteInput uni(int64_t num_seqs, int64_t num_heads, int64_t kv, int64_t tokens = 0, int64_t max_len = 1) {
  RouteInput in = step(num_seqs, num_heads, 128, 304);
  in.num_kv_heads = kv;
  in.num_query_tokens = tokens;
  in.max_query_len = max_len;
  return in;
}

std::string reader(const char* policy, const RouteInput& in) { return route(policy, in).reader; }

// Per-rank heads (query, kv) and the largest decode batch each rule keeps on the split-K kernel
// (worked by hand from router.h's rules; the batch after it is the first on the one-pass kernel).
struct Boundary {
  int64_t heads, kv, grid, seq;  // grid: ccd7c05 and 6d80ae8 (-1: ccd7c05 fails); seq: 9c0ee99
};
const Boundary kBoundaries[] = {
    {32, 8, 13, 16},    // Llama-3.1-8B: BLOCK_Q 4, (13//4 + 13)*8 = 128, (14//4 + 14)*8 = 136; 128//8 = 16
    {64, 8, 11, 16},    // Llama-3.1-70B, gpt-oss-120b: BLOCK_Q 2, (5 + 11)*8 = 128, (6 + 12)*8 = 144
    {32, 2, 32, 64},    // Qwen3.5-397B: 16 per kv head, BLOCK_Q 1, 64*2 = 128, 66*2 = 132; 128//2 = 64
    {16, 2, 43, 64},    // Qwen3-Next-80B: BLOCK_Q 2, (21 + 43)*2 = 128, (22 + 44)*2 = 132
    {64, 4, 16, 32},    // Qwen3-235B: BLOCK_Q 1, 32*4 = 128, 34*4 = 136
    {32, 32, 4, 4},     // phi-2 (MHA): BLOCK_Q 16, 4*32 = 128, 5*32 = 160; 128//32 = 4
    {8, 1, 85, 128},    // 8 per kv head, BLOCK_Q 2: 85 + 42 = 127, 86 + 43 = 129
    {256, 256, 0, 0},   // 256 kv heads: batch 1 is already 2d (1*256 > 128; 128//256 = 0)
};

TEST(RouterUnified, ReaderNamesAndPolicyNames) {
  EXPECT_STREQ(kUnified2dReader, "unified_attention_2d");
  EXPECT_STREQ(kUnified3dReader, "unified_attention_3d");
  EXPECT_EQ(canonical_policy("vllm-v0.9.2"), kGrid);
  EXPECT_EQ(canonical_policy("vllm-v0.14.0"), kSeq);
  EXPECT_EQ(canonical_policy(kGridPow2), kGridPow2);  // no alias: no release tag verified as its first
  for (const char* p : {kGrid, kGridPow2, kSeq}) EXPECT_FALSE(is_regression_fixture(p)) << p;
  EXPECT_EQ(route("vllm-v0.9.2", uni(14, 32, 8)).policy, kGrid);
  EXPECT_EQ(route("vllm-v0.14.0", uni(14, 32, 8)).policy, kSeq);
}

// Decode batches (num_query_tokens = num_seqs) at, below and above every boundary of every rule.
TEST(RouterUnified, DecodeBatchesAtAndAroundEveryBoundary) {
  for (const Boundary& b : kBoundaries) {
    const auto check = [&](const char* policy, int64_t last_3d) {
      for (int64_t n : {last_3d - 1, last_3d})
        if (n >= 1)
          EXPECT_EQ(reader(policy, uni(n, b.heads, b.kv)), k3d)
              << policy << " " << b.heads << "/" << b.kv << " n=" << n;
      EXPECT_EQ(reader(policy, uni(last_3d + 1, b.heads, b.kv)), k2d)
          << policy << " " << b.heads << "/" << b.kv << " n=" << last_3d + 1;
    };
    for (const char* p : {kGrid, "vllm-v0.9.2", kGridPow2}) check(p, b.grid);
    for (const char* p : {kSeq, "vllm-v0.14.0"}) check(p, b.seq);
  }
  // num_kv_heads 0 is num_heads (multi-head attention), as the aiter callers leave it.
  for (const char* p : {kGrid, kGridPow2, kSeq}) {
    EXPECT_EQ(reader(p, uni(4, 32, 0)), k3d) << p;
    EXPECT_EQ(reader(p, uni(5, 32, 0)), k2d) << p;
  }
}

// A batch with a query longer than one token (a prefill or a chunk) is 2d under every rule,
// however small, and a decode batch at the same size is not.
TEST(RouterUnified, RaggedBatchesTakeTheOnePassKernel) {
  for (const char* p : {kGrid, kGridPow2, kSeq}) {
    EXPECT_EQ(reader(p, uni(1, 32, 8, 2, 2)), k2d) << p;        // one sequence of 2 query tokens
    EXPECT_EQ(reader(p, uni(1, 32, 8, 0, 1)), k3d) << p;        // its decode step
    EXPECT_EQ(reader(p, uni(13, 32, 8, 14, 2)), k2d) << p;      // the grid boundary batch, one query of 2
    EXPECT_EQ(reader(p, uni(13, 32, 8, 13, 1)), k3d) << p;      // all decode: 3d
    EXPECT_EQ(reader(p, uni(4, 32, 8, 4000, 3994)), k2d) << p;  // a long prefill beside 3 decodes
    EXPECT_EQ(route(p, uni(3, 32, 8, 7, 4)).reason,
              "max_seqlen_q = 4 > 1 (a prefill in the batch) -> unified_attention_2d")
        << p;
  }
}

// Each version against the one before it: an input they route differently.
TEST(RouterUnified, EachVersionDiffersFromThePreviousOne) {
  // ccd7c05 -> 6d80ae8: 32 queries per kv head. BLOCK_Q = 16 // 32 = 0 and the launcher divides
  // by it; 6d80ae8's BLOCK_M 32 gives BLOCK_Q 1: 32*2 = 64 q blocks, 64*2 = 128, not above.
  const RouteInput wide = uni(32, 64, 2);
  try {
    route(kGrid, wide);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()),
              "route: vllm-unified-ccd7c05: num_queries_per_kv = 32 > 16 makes BLOCK_Q = 16 // 32 = 0, and the "
              "launcher divides by it (ZeroDivisionError; fixed by 6d80ae8)");
  }
  EXPECT_THROW(route(kGrid, uni(1, 64, 2, 5, 5)), std::invalid_argument);  // before it looks at max_seqlen_q
  EXPECT_EQ(reader(kGridPow2, wide), k3d);
  EXPECT_EQ(reader(kGridPow2, uni(33, 64, 2)), k2d);
  EXPECT_EQ(reader(kGridPow2, uni(64, 128, 1)), k3d);  // 128 per kv head: BLOCK_M 128, BLOCK_Q 1, 128*1
  EXPECT_EQ(reader(kGridPow2, uni(65, 128, 1)), k2d);
  // Up to 16 queries per kv head the two agree everywhere.
  for (const Boundary& b : kBoundaries)
    for (int64_t n = 1; n <= 160; ++n)
      ASSERT_EQ(reader(kGrid, uni(n, b.heads, b.kv)), reader(kGridPow2, uni(n, b.heads, b.kv)))
          << b.heads << "/" << b.kv << " " << n;
  // 6d80ae8 -> 9c0ee99: Llama-3.1-8B decode at 14..16 sequences: 2d by the grid, 3d by num_seqs <= 16.
  for (int64_t n : {14, 15, 16}) {
    EXPECT_EQ(reader(kGridPow2, uni(n, 32, 8)), k2d) << n;
    EXPECT_EQ(reader(kGrid, uni(n, 32, 8)), k2d) << n;
    EXPECT_EQ(reader(kSeq, uni(n, 32, 8)), k3d) << n;
  }
  EXPECT_EQ(reader(kSeq, uni(40, 64, 2)), k3d);  // 40 <= 128 // 2 = 64; the grid: 80*2 = 160 > 128
  EXPECT_EQ(reader(kGridPow2, uni(40, 64, 2)), k2d);
  // The aliases route as their commits.
  EXPECT_EQ(reader("vllm-v0.9.2", uni(15, 32, 8)), k2d);
  EXPECT_EQ(reader("vllm-v0.14.0", uni(15, 32, 8)), k3d);
}

TEST(RouterUnified, ReasonNamesTheRuleAndTheNumbers) {
  EXPECT_EQ(route(kGrid, uni(14, 32, 8)).reason,
            "total_num_q_blocks*num_kv_heads = 17*8 = 136 > 128 (BLOCK_Q = 4) -> unified_attention_2d");
  EXPECT_EQ(route(kGridPow2, uni(13, 32, 8)).reason,
            "total_num_q_blocks*num_kv_heads = 16*8 = 128 <= 128 (BLOCK_Q = 4) -> unified_attention_3d");
  EXPECT_EQ(route(kGridPow2, uni(33, 64, 2)).reason,
            "total_num_q_blocks*num_kv_heads = 66*2 = 132 > 128 (BLOCK_Q = 1) -> unified_attention_2d");
  EXPECT_EQ(route(kSeq, uni(16, 32, 8)).reason,
            "num_seqs = 16 <= seq_threshold_3D = 16 (128 // num_kv_heads 8) -> unified_attention_3d");
  EXPECT_EQ(route(kSeq, uni(17, 32, 8)).reason,
            "num_seqs = 17 > seq_threshold_3D = 16 (128 // num_kv_heads 8) -> unified_attention_2d");
  EXPECT_EQ(route(kSeq, uni(2, 32, 8, 3, 2)).reason,
            "max_seqlen_q = 2 > 1 (a prefill in the batch) -> unified_attention_2d");
}

TEST(RouterUnified, UnknownPolicyNamesTheUnifiedOnes) {
  try {
    route("vllm-unified-0000000", uni(1, 32, 8));
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown routing policy 'vllm-unified-0000000'; known: "), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("vllm-unified-ccd7c05, vllm-v0.9.2, vllm-unified-6d80ae8, "
                                         "vllm-unified-9c0ee99, vllm-v0.14.0"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(canonical_policy("vllm-v0.13.0"), "");  // not verified: not an alias
}

// The new fields: checked for every policy, read by none of aiter's.
TEST(RouterUnified, RejectsImpossibleBatchesAndLeavesAiterAlone) {
  EXPECT_THROW(route(kSeq, uni(4, 32, 3)), std::invalid_argument);      // 3 does not divide 32
  EXPECT_THROW(route(kSeq, uni(4, 32, -1)), std::invalid_argument);
  EXPECT_THROW(route(kSeq, uni(4, 32, 8, 3, 1)), std::invalid_argument);  // fewer tokens than sequences
  EXPECT_THROW(route(kSeq, uni(4, 32, 8, 5, 1)), std::invalid_argument);  // 5 tokens, all queries of 1
  EXPECT_THROW(route(kSeq, uni(4, 32, 8, 8, 6)), std::invalid_argument);  // a query of 6 leaves 2 for 3 sequences
  EXPECT_THROW(route(kSeq, uni(4, 32, 8, 0, 0)), std::invalid_argument);
  EXPECT_THROW(route(kSeq, uni(0, 32, 8, 2, 1)), std::invalid_argument);  // tokens without sequences
  EXPECT_EQ(reader(kSeq, uni(4, 32, 8, 8, 5)), k2d);  // 5 + 1 + 1 + 1
  EXPECT_EQ(reader(kSeq, uni(0, 32, 8)), k3d);
  RouteInput aiter = step(256, 8, 128, 256);
  aiter.num_kv_heads = 2;
  aiter.num_query_tokens = 300;
  aiter.max_query_len = 45;
  EXPECT_EQ(route(kNew, aiter).reason, route(kNew, step(256, 8, 128, 256)).reason);
}

// A planted unified rule with its threshold one off (3d while num_seqs <= 128 // num_kv_heads + 1,
// i.e. 2d only when num_seqs > threshold + 1). Test-local: it exists to show that the boundary
// batch just above each threshold tells it from the real rule and the batches elsewhere do not.
std::string planted_seq_threshold_off_by_one(const RouteInput& in) {
  if (in.max_query_len > 1) return k2d;
  const int64_t kv = in.num_kv_heads == 0 ? in.num_heads : in.num_kv_heads;
  return in.num_seqs > 128 / kv + 1 ? k2d : k3d;
}

TEST(RouterUnified, PlantedOffByOneThresholdIsCaughtOnlyAtTheBoundary) {
  for (const Boundary& b : kBoundaries) {
    const int64_t above = b.seq + 1;
    EXPECT_EQ(reader(kSeq, uni(above, b.heads, b.kv)), k2d);
    EXPECT_EQ(planted_seq_threshold_off_by_one(uni(above, b.heads, b.kv)), k3d) << b.heads << "/" << b.kv;
    for (int64_t n : {b.seq - 1, b.seq, b.seq + 3})
      if (n >= 1)
        EXPECT_EQ(reader(kSeq, uni(n, b.heads, b.kv)), planted_seq_threshold_off_by_one(uni(n, b.heads, b.kv)))
            << b.heads << "/" << b.kv << " " << n;
  }
}

// The grid rule planted with >= 128: it differs only where a decode batch fills exactly 128
// programs (the boundary batch of Llama-3.1-8B, 13 sequences: 16 q blocks * 8), not where the
// grid jumps over 128 (8 per kv head over 1 kv head: 127 at 85 sequences, 129 at 86).
std::string planted_grid_greater_or_equal(const RouteInput& in) {
  if (in.max_query_len > 1) return k2d;
  const int64_t kv = in.num_kv_heads == 0 ? in.num_heads : in.num_kv_heads, block_q = 16 / (in.num_heads / kv);
  return (in.num_seqs / block_q + in.num_seqs) * kv >= 128 ? k2d : k3d;
}

TEST(RouterUnified, PlantedGreaterOrEqualGridIsCaughtWhereTheGridIsExactly128) {
  EXPECT_EQ(reader(kGrid, uni(13, 32, 8)), k3d);
  EXPECT_EQ(planted_grid_greater_or_equal(uni(13, 32, 8)), k2d);
  for (int64_t n : {12, 14}) EXPECT_EQ(reader(kGrid, uni(n, 32, 8)), planted_grid_greater_or_equal(uni(n, 32, 8))) << n;
  for (int64_t n : {84, 85, 86})
    EXPECT_EQ(reader(kGrid, uni(n, 8, 1)), planted_grid_greater_or_equal(uni(n, 8, 1))) << n;
}

}  // namespace
}  // namespace kvh::routing
