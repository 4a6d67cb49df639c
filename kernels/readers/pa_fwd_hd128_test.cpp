// pa_fwd_asm (the fixed-function head_size-128 kernel): correct where its
// declared capability holds, garbage where it does not, which is what a
// misrouted Qwen3.5 (head_size 256) decode step gets.
#include <gtest/gtest.h>

#include "kvh_runtime.h"
#include "testing/attention_check.h"
#include "testing/ragged_check.h"

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

// Multi-token mode: up to 4 causal query tokens a sequence (speculative decode), decode and
// multi-token sequences mixed, with every modifier, fp8, both wavefront sizes.
TEST(PaFwdAsm, MultiTokenModeMatchesBruteForce) {
  const Kernel& k = builtin_reader("pa_fwd_asm");
  EXPECT_EQ(k.caps.max_query_len, 4);
  EXPECT_FALSE(k.caps.modifiers & KVH_MOD_NON_CAUSAL);
  int n = 0;
  for (int wave : {32, 64})
    for (int mods = 0; mods < 4; ++mods) {
      RaggedCase c;
      c.format = KVH_CACHE_SHUFFLE, c.head_size = 128, c.num_heads = 16, c.num_kv_heads = 2;
      c.wave_size = wave, c.seed = uint64_t(++n);
      c.seqs = {{4, 4}, {1, 1}, {3, 200}, {2, 129}, {4, 300}, {1, 77}};
      if (mods == 1) c.sliding_window = 3, c.softcap = 5.f;
      if (mods == 2) {
        c.sinks.assign(16, 0.f), c.alibi_slopes.assign(16, 0.f);
        for (int h = 0; h < 16; ++h) c.sinks[h] = float(h) * 0.4f - 1.f, c.alibi_slopes[h] = 0.5f / float(h + 1);
      }
      if (mods == 3) c.cache_dtype = KVH_DT_FP8_E4M3FNUZ, c.kv_scales = KVH_SCALES_BLOCK, c.dtype = KVH_DT_BF16;
      const RaggedResult r = run_ragged_case(k, c);
      EXPECT_TRUE(r.passed()) << c.str() << ": " << r.str();
    }
}

// Decode through the ragged fields (q = 1 everywhere) is the decode kernel unchanged.
TEST(PaFwdAsm, MultiTokenModeDecodeBatch) {
  RaggedCase c;
  c.format = KVH_CACHE_SHUFFLE, c.head_size = 128, c.num_heads = 8, c.num_kv_heads = 1;
  c.seqs = {{1, 1}, {1, 128}, {1, 129}, {1, 1000}};
  for (bool fields : {true, false}) {
    c.ragged_fields = fields;
    const RaggedResult r = run_ragged_case(builtin_reader("pa_fwd_asm"), c);
    EXPECT_TRUE(r.passed()) << c.str() << ": " << r.str();
  }
}

// More than 4 query tokens, or a non-causal ragged call, is refused.
TEST(PaFwdAsm, MultiTokenModeRefusesWhatItDoesNotDeclare) {
  RaggedCase c;
  c.format = KVH_CACHE_SHUFFLE, c.head_size = 128, c.num_heads = 8, c.num_kv_heads = 1;
  c.seqs = {{5, 20}, {1, 3}};
  const Kernel& k = builtin_reader("pa_fwd_asm");
  EXPECT_EQ(run_ragged_case(k, c).rc, hipErrorInvalidValue) << "q = 5";
  c.seqs = {{4, 20}, {1, 3}};
  EXPECT_EQ(run_ragged_case(k, c).rc, 0);
  c.causal = false;
  EXPECT_EQ(run_ragged_case(k, c).rc, hipErrorInvalidValue) << "non-causal";
}

}  // namespace
}  // namespace kvh::testing
