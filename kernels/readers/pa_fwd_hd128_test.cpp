// pa_fwd_asm (the fixed-function head_size-128 kernel): correct where its
// declared capability holds, garbage where it does not, which is what a
// misrouted Qwen3.5 (head_size 256) decode step gets.
#include <gtest/gtest.h>

#include "kvh_runtime.h"
#include "testing/attention_check.h"

namespace kvh::testing {
namespace {

TEST(PaFwdAsm, DeclaresHeadSize128Only) {
  const Kernel& d = builtin_reader("pa_fwd_asm");
  EXPECT_EQ(d.cache_format, KVH_CACHE_SHUFFLE);
  EXPECT_EQ(d.caps.head_sizes, std::vector<int32_t>{128});
  EXPECT_FALSE(d.workspace_bytes);
}

TEST(PaFwdAsm, MatchesReferenceAtHeadSize128) {
  for (kvh_dtype dt : {KVH_DT_F16, KVH_DT_BF16})
    for (int wave : {32, 64}) {
      AttentionCase c;
      c.dtype = dt, c.wave_size = wave, c.scheme = Scheme::Interleaved;
      c.num_heads = 16, c.num_kv_heads = 2;
      c.context_lens = {1, 127, 128, 129, 1000, 2500};
      const AttentionResult r = run_attention_case(builtin_reader("pa_fwd_asm"), c);
      EXPECT_TRUE(r.passed()) << c.str() << ": " << r.str();
    }
}

TEST(PaFwdAsm, MatchesReferenceWithAttentionSinkAndBlockSize544) {
  AttentionCase c;
  c.block_size = 544, c.sink_token = 200, c.scheme = Scheme::Padded, c.context_lens = {300, 1100};
  const AttentionResult r = run_attention_case(builtin_reader("pa_fwd_asm"), c);
  EXPECT_TRUE(r.passed()) << c.str() << ": " << r.str();
}

// Launched on head_size 256 it neither refuses nor works: it attends over the
// first 128 dims only (wrong weights) and never writes dims 128..255.
TEST(PaFwdAsm, LargeErrorAtHeadSize256WhereTheGeneralKernelPasses) {
  AttentionCase c;
  c.head_size = 256, c.num_heads = 4, c.context_lens = {255, 257, 1000};
  const AttentionResult general = run_attention_case(builtin_reader("paged_attention_rocm"), c);
  EXPECT_TRUE(general.passed()) << general.str();

  const AttentionResult r = run_attention_case(builtin_reader("pa_fwd_asm"), c);
  EXPECT_EQ(r.rc, 0);  // a fixed-function kernel does not check head_size
  EXPECT_FALSE(r.passed());
  EXPECT_EQ(r.unwritten, 3 * 4 * 128) << r.str();  // dims 128..255 of every (seq, head)
  EXPECT_GT(r.max_abs_err, 50 * tolerance_for(c.dtype).atol) << r.str();  // and dims 0..127 are wrong
  EXPECT_GT(r.out_of_tolerance, 3 * 4 * 128 / 2) << r.str();
}

TEST(PaFwdAsm, StillRejectsBadRanksAndDtypes) {
  AttentionArgsFixture fx = make_attention_args(AttentionCase{});
  const Kernel& d = builtin_reader("pa_fwd_asm");
  kvh_attention_args a = fx.args;
  a.query.ndim = 4;
  EXPECT_EQ(d.attention(&a, nullptr), hipErrorInvalidValue);
  a = fx.args;
  a.key_cache.dtype = KVH_DT_BF16;
  EXPECT_EQ(d.attention(&a, nullptr), hipErrorInvalidValue);
  a = fx.args;
  a.value_cache.ndim = 4;  // pa_v1 V: not the layout it reads
  EXPECT_EQ(d.attention(&a, nullptr), hipErrorInvalidValue);
}

}  // namespace
}  // namespace kvh::testing
