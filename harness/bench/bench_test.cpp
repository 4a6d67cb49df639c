// kvharness bench: the byte counts (bench.h) and the quick sweep end to end.
#include "bench/bench.h"

#include <gtest/gtest.h>

namespace kvh::bench {
namespace {

TEST(Bench, WriterBytesAreInputsReadOncePlusCacheWrittenOnce) {
  // 4096 tokens, 8 kv heads, head_size 128, bf16: K+V read 16 MiB, K+V written 16 MiB, slots 32 KiB.
  EXPECT_EQ(writer_bytes(4096, 8, 128, 2), 2 * 8388608 + 2 * 8388608 + 32768);
}

TEST(Bench, AttentionBytesCountEveryContextTokenOnceAndNoPartials) {
  // 8 seqs x 1024 tokens, 32/8 heads, head_size 128, block 16, bf16.
  const int64_t query = 8 * 32 * 128 * 2, kv = 2 * 8 * 1024 * 8 * 128 * 2, tables = 8 * 64 * 4, lens = 8 * 4;
  EXPECT_EQ(attention_bytes(8, 1024, 32, 8, 128, 16, 2), query + kv + tables + lens + query);
  // A partial last block: only the block-table entries used count.
  EXPECT_EQ(attention_bytes(1, 17, 4, 1, 128, 16, 2) - attention_bytes(1, 16, 4, 1, 128, 16, 2), 2 * 128 * 2 + 4);
}

TEST(Bench, QuickSweepMeasuresEveryKernel) {
  Options o;
  o.quick = true;
  o.warmup = 0;
  o.reps = 2;
  o.copy_mib = 4;
  const Registry reg;
  const Result r = run(o, reg);
  EXPECT_TRUE(r.complete);
  EXPECT_TRUE(r.copy_error.empty()) << r.copy_error;
  EXPECT_GT(r.copy_gbps, 0);
  ASSERT_EQ(r.rows.size(), 6u);  // 3 writers + 3 readers (pa_fwd_asm: head_size 128)
  for (const Row& row : r.rows) {
    EXPECT_TRUE(row.error.empty()) << row.kernel << ": " << row.error;
    EXPECT_GT(row.gbps, 0) << row.kernel;
    EXPECT_EQ(row.reps, 2);
  }
  const std::string md = markdown(r);
  EXPECT_NE(md.find("| reshape_and_cache_shuffle | T=256 H=8 D=128 |"), std::string::npos) << md;
  EXPECT_NE(json(r).find("\"schema\": \"kvharness.bench/1\""), std::string::npos);
}

}  // namespace
}  // namespace kvh::bench
