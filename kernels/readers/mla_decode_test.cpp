// mla_decode (readers/mla_decode.h) against reference/mla_attention on the shapes of the MLA
// presets (R 512, P 64; 16, 64, 128 heads and fewer), pages of 1, 16 and 64 tokens, decode and
// multi-token decode (MTP, up to 8 tokens), fp16/bf16 and fp8 e4m3fn/fnuz caches, wavefronts of
// 32 and 64, plans of one and of many splits; its planner; the planted MLA readers and the MLA
// fixtures caught where they are wrong and exact where they are not (kernels/testing/mla_check.h).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "readers/mla_decode.h"
#include "registry/registry.h"
#include "testing/attention_check.h"
#include "testing/mla_check.h"

namespace kvh::testing {
namespace {

MlaResult run(const std::string& reader, const MlaCase& c) {
  const Kernel& k = reader.rfind("planted_", 0) == 0 ? planted_mla_reader(reader) : builtin_reader(reader);
  return run_mla_case(k, c);
}

TEST(MlaDecode, DecodeAcrossPagesAndWaves) {
  for (int bs : {1, 16, 64})
    for (int wave : {32, 64}) {
      MlaCase c;
      c.block_size = bs, c.wave_size = wave, c.seed = uint64_t(bs * 100 + wave);
      const MlaResult r = run("mla_decode", c);
      EXPECT_TRUE(r.passed()) << c.str() << ": " << r.str();
      EXPECT_GT(r.max_splits, 1) << c.str();  // a 300-token sequence is split
    }
}

TEST(MlaDecode, MultiTokenDecodeRaggedAndMixed) {
  MlaCase c;
  c.seqs = {{2, 2}, {8, 45}, {1, 130}, {3, 260}, {8, 8}};
  for (auto dt : {KVH_DT_F16, KVH_DT_BF16}) {
    c.dtype = dt;
    const MlaResult r = run("mla_decode", c);
    EXPECT_TRUE(r.passed()) << c.str() << ": " << r.str();
  }
  c.causal = false;
  const MlaResult r = run("mla_decode", c);
  EXPECT_TRUE(r.passed()) << c.str() << ": " << r.str();
}

TEST(MlaDecode, HeadCountsOfThePresetsAndFewer) {
  for (int h : {1, 5, 16, 64, 128}) {
    MlaCase c;
    c.num_heads = h;
    c.seqs = {{1, 40}, {2, 97}};
    const MlaResult r = run("mla_decode", c);
    EXPECT_TRUE(r.passed()) << c.str() << ": " << r.str();
  }
}

TEST(MlaDecode, Fp8CachesPerTensorScale) {
  for (int32_t cd : {KVH_DT_FP8_E4M3FN, KVH_DT_FP8_E4M3FNUZ})
    for (bool as_tensor : {true, false}) {
      MlaCase c;
      c.cache_dtype = cd, c.scale_as_tensor = as_tensor, c.block_size = 64;
      c.seqs = {{1, 70}, {4, 200}};
      const MlaResult r = run("mla_decode", c);
      EXPECT_TRUE(r.passed()) << c.str() << ": " << r.str();
    }
}

// One compute unit: one split a sequence (the reduce of a single split); many: up to kMlaMaxSplits.
TEST(MlaDecode, PlansOfOneAndManySplits) {
  for (int64_t cu : {1, 304, 100000}) {
    MlaCase c;
    c.compute_units = cu;
    c.seqs = {{1, 33}, {3, 1000}};
    const MlaResult r = run("mla_decode", c);
    EXPECT_TRUE(r.passed()) << c.str() << ": " << r.str();
    if (cu == 1) EXPECT_EQ(r.max_splits, 1);
    if (cu == 100000) EXPECT_GT(r.max_splits, 20);
  }
}

TEST(MlaDecodePlan, SplitsFollowSeqLensAndComputeUnits) {
  const int32_t lens[] = {1, 31, 64, 1000};
  const int32_t qsl[] = {0, 1, 2, 3, 4};
  kvh_plan_args a{};
  a.num_seqs = 4, a.num_heads = 16, a.num_kv_heads = 1, a.head_size = 576, a.block_size = 16;
  a.compute_units = 304, a.max_query_len = 1, a.num_query_tokens = 4, a.seq_lens = lens, a.query_start_loc = qsl;
  kvh_plan p;
  ASSERT_EQ(kernels::mla_decode_plan(nullptr, &a, &p), 0);
  ASSERT_EQ(p.num_tensors, 3);
  EXPECT_STREQ(p.specs[0].name, "num_splits");
  const auto* ns = static_cast<const int32_t*>(p.data[0]);
  EXPECT_EQ(ns[0], 1);  // shorter than kMlaMinSplitTokens: one split
  EXPECT_EQ(ns[1], 1);
  EXPECT_EQ(ns[2], 2);  // 64 tokens, 32 a split
  EXPECT_EQ(ns[3], 32);  // 304 / 4 = 76 wanted; ceil(1000 / kMlaMinSplitTokens) = 32 caps it
  const int64_t ms = p.specs[1].shape[1] - 1;
  const auto* b = static_cast<const int32_t*>(p.data[1]);
  for (int s = 0; s < 4; ++s) {  // bounds: 0, increasing, the sequence's end from num_splits on
    EXPECT_EQ(b[s * (ms + 1)], 0);
    for (int i = 0; i < ns[s]; ++i) EXPECT_LT(b[s * (ms + 1) + i], b[s * (ms + 1) + i + 1]) << s << " " << i;
    for (int64_t i = ns[s]; i <= ms; ++i) EXPECT_EQ(b[s * (ms + 1) + i], lens[s]);
  }
  EXPECT_EQ(p.specs[2].shape[0], ns[0] + ns[1] + ns[2] + ns[3]);  // 16 heads: one tile
  const int32_t empty[] = {5, 0};
  a.num_seqs = 2, a.seq_lens = empty;
  EXPECT_EQ(kernels::mla_decode_plan(nullptr, &a, &p), KVH_UNSUPPORTED);
  EXPECT_NE(std::string(kernels::mla_decode_last_error(nullptr)).find("without tokens"), std::string::npos);
}

// Each planted reader: caught on the case that shows its bug, exact where the bug cannot show.
struct Mutant {
  const char* name;
  MlaCase shows, hides;
};

std::vector<Mutant> mutants() {
  MlaCase split;  // several splits, pages of 16
  split.seqs = {{1, 300}, {2, 200}};
  MlaCase one_split = split;
  one_split.compute_units = 1;
  MlaCase page1 = split;
  page1.block_size = 1;
  MlaCase no_rope = split;  // P = 0: no rope part to drop, and the last R dims are the first R
  no_rope.kv_lora_rank = 64, no_rope.rope_dim = 0;
  return {{"planted_mla_rope_ignored", split, no_rope},
          {"planted_mla_value_last512", split, no_rope},
          {"planted_mla_splits_ignored", split, one_split},
          {"planted_mla_block_size_one", split, page1}};
}

TEST(MlaDecodePlanted, EachCaughtWhereItsBugShowsAndExactElsewhere) {
  for (const Mutant& m : mutants()) {
    const MlaResult bad = run(m.name, m.shows);
    EXPECT_FALSE(bad.passed()) << m.name << " not caught on " << m.shows.str() << ": " << bad.str();
    EXPECT_TRUE(run("mla_decode", m.shows).passed()) << m.shows.str();
    const MlaResult ok = run(m.name, m.hides);
    EXPECT_TRUE(ok.passed()) << m.name << " on " << m.hides.str() << ": " << ok.str();
  }
}

TEST(MlaDecodeFixtures, MetadataNotExpandedFailsMultiTokenDecodeOnly) {
  MlaCase decode;
  decode.seqs = {{1, 50}, {1, 120}};
  EXPECT_TRUE(run("fixture_mla_metadata_not_expanded", decode).passed());
  MlaCase mtp;
  mtp.seqs = {{4, 50}, {2, 120}};
  const MlaResult r = run("fixture_mla_metadata_not_expanded", mtp);
  EXPECT_GT(r.out_of_tolerance, 0) << r.str();
}

TEST(MlaDecodeFixtures, PlanOtherVariantFailsAt128HeadsOnly) {
  for (int h : {16, 64, 128}) {
    MlaCase c;
    c.num_heads = h;
    c.seqs = {{1, 40}, {2, 70}};
    const MlaResult r = run("fixture_mla_plan_other_variant", c);
    if (h == 128) {
      EXPECT_GT(r.nonfinite + r.unwritten, 0) << r.str();
    } else {
      EXPECT_TRUE(r.passed()) << h << ": " << r.str();
    }
  }
}

// The contract's refusals: a call without a plan, a plan of the wrong shape.
TEST(MlaDecode, RefusesCallsWithoutItsPlan) {
  kvh_attention_args a{};
  EXPECT_EQ(kernels::mla_decode_attention(nullptr, &a, nullptr), 1 /* hipErrorInvalidValue */);
  kvh_workspace_spec specs[KVH_MAX_WORKSPACES];
  int32_t n = -1;
  EXPECT_EQ(kernels::mla_decode_workspaces(nullptr, &a, specs, KVH_MAX_WORKSPACES, &n), KVH_UNSUPPORTED);
  EXPECT_EQ(n, 0);
}

}  // namespace
}  // namespace kvh::testing
