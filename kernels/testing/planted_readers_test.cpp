// Each planted reader fails the same check that paged_attention_rocm passes,
// on the same case: proof that the checks can see that bug class.
#include <gtest/gtest.h>

#include <cstring>

#include "attention_check.h"
#include "ragged_check.h"
#include "registry/registry.h"

namespace kvh::testing {
namespace {

void expect_correct_passes_planted_fails(const char* planted, const AttentionCase& c) {
  const AttentionResult good = run_attention_case(builtin_reader("paged_attention_rocm"), c);
  EXPECT_TRUE(good.passed()) << "paged_attention_rocm " << c.str() << ": " << good.str();
  const AttentionResult bad = run_attention_case(planted_reader(planted), c);
  EXPECT_EQ(bad.rc, 0) << planted;
  EXPECT_FALSE(bad.passed()) << planted << " " << c.str() << ": " << bad.str();
}

TEST(PlantedReaders, AreFixturesAndNotBuiltIn) {
  int32_t n = 0;
  const kvh_kernel_desc* d = kvh_planted_readers(&n);
  ASSERT_EQ(n, 24);  // 14 for 16-bit caches, 4 fp8 scale-indexing bugs, 3 NHD/HND addressing bugs (page_readers_test.cpp),
                    // 3 score-modifier bugs (issue 23: kill_breadth_test.sh)
  const Registry builtin;
  for (int32_t i = 0; i < n; ++i) {
    EXPECT_EQ(d[i].fixture, 1) << d[i].name;
    EXPECT_EQ(d[i].role, KVH_ROLE_READER);
    EXPECT_EQ(builtin.find(d[i].name), nullptr) << d[i].name;
  }
}

// Lengths 255 (nothing written), 257 (one token dropped) and 1000 (232 dropped).
TEST(PlantedReaders, DropTailPartitionFailsOnLengthsNotMultipleOf256) {
  AttentionCase c;  // ctx {1, 255, 256, 257, 1000}
  expect_correct_passes_planted_fails("planted_drop_tail_partition", c);
  const AttentionResult bad = run_attention_case(planted_reader("planted_drop_tail_partition"), c);
  EXPECT_GT(bad.unwritten, 0);  // lengths 1 and 255 have no partition at all
  AttentionCase aligned = c;
  aligned.context_lens = {256, 512};
  EXPECT_TRUE(run_attention_case(planted_reader("planted_drop_tail_partition"), aligned).passed())
      << "multiples of 256 lose nothing: the case lengths are what exposes it";
}

TEST(PlantedReaders, GqaModuloFailsWithGroupSize8) {
  AttentionCase c;
  c.num_heads = 16, c.num_kv_heads = 2, c.wave_size = 32;  // group 8: h / 8 != h % 2
  expect_correct_passes_planted_fails("planted_gqa_modulo", c);
  AttentionCase mha = c;
  mha.num_heads = mha.num_kv_heads = 4;  // group 1: h % 4 == h / 1
  EXPECT_TRUE(run_attention_case(planted_reader("planted_gqa_modulo"), mha).passed());
}

// Rescaling by any common max is exact in real numbers, so the bug shows only
// when an earlier partition's max exceeds the last one's by more than ~88
// (float exp overflow): an attention-sink token in partition 0.
TEST(PlantedReaders, ReduceWithLastPartitionMaxFailsWithAttentionSink) {
  AttentionCase c;
  c.context_lens = {1000, 600, 300, 1};
  c.sink_token = 10;
  expect_correct_passes_planted_fails("planted_reduce_last_max", c);
  AttentionCase flat = c;
  flat.sink_token = -1;
  EXPECT_TRUE(run_attention_case(planted_reader("planted_reduce_last_max"), flat).passed());
}

// A missing barrier between warps: fine-grained random fiber order lets the
// warps keep pace and hides it; the runtime's warp run-ahead order (one warp
// runs until it blocks) exposes it. Round-robin order hides it too.
TEST(PlantedReaders, MissingSoftmaxBarrierFailsUnderRandomOrder) {
  AttentionCase c;
  c.num_heads = 16, c.num_kv_heads = 2;  // 8 heads a block: the softmax spans several warps
  c.wave_size = 32;
  int failed = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    c.seed = seed;
    failed += !run_attention_case(planted_reader("planted_missing_softmax_barrier"), c).passed();
    EXPECT_TRUE(run_attention_case(builtin_reader("paged_attention_rocm"), c).passed());
  }
  EXPECT_GT(failed, 0);
  AttentionCase in_order = c;
  in_order.random_order = false;
  EXPECT_TRUE(run_attention_case(planted_reader("planted_missing_softmax_barrier"), in_order).passed())
      << "in round-robin order the warps keep pace: only an adversarial order shows the race";
}

// ---- planted unified (varlen) readers: each fails a ragged case that the real reader passes ----

const char* const kPlantedUnified[] = {
    "planted_unified_gqa_pow2",        "planted_unified_drops_last_query_token",
    "planted_unified_window_from_seq_end", "planted_unified_alibi_from_seq_end",
    "planted_unified_first_query_block_only", "planted_unified_reads_past_query_start_loc",
    "planted_unified_reduce_skips_last_segment", "planted_unified_writes_past_workspace"};

/// `real` (unified_attention_2d or _3d) passes `bites`, `planted` fails it; it passes `spared` where given.
RaggedResult expect_unified_caught(const char* real, const char* planted, const RaggedCase& bites,
                                   const RaggedCase* spared = nullptr) {
  const RaggedResult good = run_ragged_case(builtin_reader(real), bites);
  EXPECT_TRUE(good.passed()) << real << " " << bites.str() << ": " << good.str();
  const RaggedResult bad = run_ragged_case(planted_unified_reader(planted), bites);
  EXPECT_EQ(bad.rc, 0) << planted;
  EXPECT_FALSE(bad.passed()) << planted << " " << bites.str() << ": " << bad.str();
  if (spared) {
    const RaggedResult r = run_ragged_case(planted_unified_reader(planted), *spared);
    EXPECT_TRUE(r.passed()) << planted << " should not be visible in " << spared->str() << ": " << r.str();
  }
  return bad;
}

RaggedCase ragged_case() {
  RaggedCase c;  // 12:2 heads (ratio 6), a chunk first, decode-like tokens, a first chunk (L = q)
  c.seqs = {{47, 120}, {1, 33}, {5, 300}, {64, 64}, {2, 17}};
  return c;
}
RaggedCase decode_case() {
  RaggedCase c;
  c.seqs = {{1, 1}, {1, 33}, {1, 300}, {1, 120}};
  return c;
}

TEST(PlantedUnifiedReaders, AreFixturesAndNotBuiltIn) {
  int32_t n = 0;
  const kvh_kernel_desc* d = kvh_planted_unified_readers(&n);
  ASSERT_EQ(n, 8);
  const Registry builtin;
  for (int32_t i = 0; i < n; ++i) {
    EXPECT_STREQ(d[i].name, kPlantedUnified[i]);
    EXPECT_EQ(d[i].fixture, 1) << d[i].name;
    EXPECT_EQ(d[i].role, KVH_ROLE_READER);
    EXPECT_EQ(d[i].cache_format, KVH_CACHE_NHD);
    EXPECT_EQ(d[i].capabilities->max_query_len, 65536) << d[i].name;
    EXPECT_EQ(builtin.find(d[i].name), nullptr) << d[i].name;
  }
}

TEST(PlantedUnifiedReaders, GqaPow2FailsWithRatio6And12) {
  for (int heads : {12, 24}) {  // ratios 6 and 12 with 2 kv heads
    RaggedCase c = ragged_case();
    c.num_heads = heads;
    RaggedCase pow2 = c;
    pow2.num_heads = 8;  // ratio 4
    const RaggedResult bad = expect_unified_caught("unified_attention_2d", "planted_unified_gqa_pow2", c, &pow2);
    EXPECT_GT(bad.unwritten, 0) << "the last heads of the second group are never written";
  }
  RaggedCase one_kv = ragged_case();
  one_kv.num_heads = 6, one_kv.num_kv_heads = 1;  // kv head 0: kv * anything = 0
  EXPECT_TRUE(run_ragged_case(planted_unified_reader("planted_unified_gqa_pow2"), one_kv).passed());
}

TEST(PlantedUnifiedReaders, DroppedLastQueryTokenFailsOnChunks) {
  const RaggedCase spared = decode_case();
  const RaggedResult bad = expect_unified_caught("unified_attention_2d", "planted_unified_drops_last_query_token",
                                                 ragged_case(), &spared);
  EXPECT_EQ(bad.unwritten, 4 * 12 * 64) << "one row (12 heads x 64 dims) of each of the 4 multi-token sequences";
}

TEST(PlantedUnifiedReaders, WindowFromSeqEndFailsOnChunks) {
  RaggedCase c = ragged_case();
  c.sliding_window = 8;
  RaggedCase spared = decode_case();
  spared.sliding_window = 8;
  expect_unified_caught("unified_attention_2d", "planted_unified_window_from_seq_end", c, &spared);
}

TEST(PlantedUnifiedReaders, AlibiFromSeqEndFailsWithSinks) {
  RaggedCase c = ragged_case();
  c.alibi_slopes.assign(12, 0.f), c.sinks.assign(12, 0.f);
  for (int h = 0; h < 12; ++h) c.alibi_slopes[h] = 0.5f / float(h + 1), c.sinks[h] = float(h) * 0.5f - 1.f;
  RaggedCase no_sinks = c;
  no_sinks.sinks.clear();  // a constant shift per query token: the softmax cancels it
  expect_unified_caught("unified_attention_2d", "planted_unified_alibi_from_seq_end", c, &no_sinks);
}

TEST(PlantedUnifiedReaders, FirstQueryBlockOnlyFailsOnLongChunks) {
  const RaggedCase spared = decode_case();
  const RaggedResult bad = expect_unified_caught("unified_attention_2d", "planted_unified_first_query_block_only",
                                                 ragged_case(), &spared);
  EXPECT_GT(bad.unwritten, 0);
}

TEST(PlantedUnifiedReaders, PhantomSequenceWritesPastOut) {
  for (const RaggedCase& c : {ragged_case(), decode_case()}) {
    const RaggedResult bad =
        expect_unified_caught("unified_attention_2d", "planted_unified_reads_past_query_start_loc", c);
    EXPECT_GT(bad.out_of_view_writes, 0) << "the phantom sequence's row num_query_tokens: " << bad.str();
    EXPECT_EQ(bad.out_of_tolerance + bad.unwritten + bad.nonfinite, 0) << "the real rows are right: " << bad.str();
  }
}

TEST(PlantedUnifiedReaders, ReduceSkippingTheLastSegmentFails) {
  for (int32_t ps : {0, 16, 100}) {
    RaggedCase c = ragged_case();
    c.partition_size = ps;
    expect_unified_caught("unified_attention_3d", "planted_unified_reduce_skips_last_segment", c);
  }
}

TEST(PlantedUnifiedReaders, WorkspaceOverrunIsCaughtByItsMargin) {
  const RaggedResult bad =
      expect_unified_caught("unified_attention_3d", "planted_unified_writes_past_workspace", ragged_case());
  EXPECT_GT(bad.workspace_margin_writes, 0) << bad.str();
  EXPECT_EQ(bad.out_of_tolerance + bad.unwritten + bad.nonfinite, 0) << "out itself is right: " << bad.str();
}

}  // namespace
}  // namespace kvh::testing
