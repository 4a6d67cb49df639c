// Each planted reader fails the same check that paged_attention_rocm passes,
// on the same case: proof that the checks can see that bug class.
#include <gtest/gtest.h>

#include <cstring>

#include "attention_check.h"
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
  ASSERT_EQ(n, 21);  // 14 for 16-bit caches, 4 fp8 scale-indexing bugs, 3 NHD/HND addressing bugs (page_readers_test.cpp)
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

}  // namespace
}  // namespace kvh::testing
