// Issue 23 (B long contexts): output ulps, and the derived tolerance against a
// known-bad reader. The planted fp16 exp-sum reduce errs by a fraction of a
// percent on a long context: inside the dtype tolerance (it passes there, which
// is why the derived bound exists), beyond the derived one; the correct reader
// stays inside the derived bound on the same case.
#include "check/tolerance.h"

#include <gtest/gtest.h>

#include <cmath>

#include "case/attention_case.h"

extern "C" const kvh_kernel_desc* kvh_planted_long_context(int32_t* count);

namespace kvh {
namespace {

TEST(OutputUlp, Fp16AndBf16SpacingAtNormalsAndSubnormals) {
  EXPECT_EQ(output_ulp(DType::F16, 1.0), std::ldexp(1.0, -10));
  EXPECT_EQ(output_ulp(DType::F16, -1.99), std::ldexp(1.0, -10));
  EXPECT_EQ(output_ulp(DType::F16, 0.75), std::ldexp(1.0, -11));
  EXPECT_EQ(output_ulp(DType::F16, 1e-6), std::ldexp(1.0, -24));  // subnormal: fixed spacing
  EXPECT_EQ(output_ulp(DType::F16, 0.0), std::ldexp(1.0, -24));
  EXPECT_EQ(output_ulp(DType::BF16, 1.0), std::ldexp(1.0, -7));
  EXPECT_EQ(output_ulp(DType::BF16, 3.0), std::ldexp(1.0, -6));
}

// One sequence of 40,000 tokens (past int16), 4 query heads on one kv head, fp16,
// split-K at 64 tokens: 625 partitions for the reduce to add.
Case long_case(const std::string& reader, bool derived) {
  Case c;
  c.kind = CaseKind::Attention;
  c.model = "test";
  c.num_heads = 4;
  c.num_kv_heads = 1;
  c.head_size = 64;
  c.layout = Scheme::Separate;
  c.block_size = 16;
  c.batch_size = 1;
  c.context_lens = {40000};
  c.context_len_min = c.context_len_max = 40000;
  c.dtype = DType::F16;
  c.partition_size = 64;
  c.reader = reader;
  c.derived_tolerance = derived;
  c.seed = 3;
  return c;
}

TEST(DerivedTolerance, CatchesTheFp16ExpSumReduceThatTheDtypeToleranceLetsThrough) {
  Registry reg;
  reg.add_provider(kvh_planted_long_context, "planted");
  const CaseResult good = run_decode_case(long_case("paged_attention_rocm", true), reg, {});
  EXPECT_EQ(good.v.status, Status::Pass) << good.v.detail;
  ASSERT_TRUE(good.v.max_ulp_err.has_value());
  EXPECT_LE(*good.v.max_ulp_err, kDerivedUlps) << good.v.detail;
  const CaseResult loose = run_decode_case(long_case("planted_reduce_fp16_exp_sum", false), reg, {});
  EXPECT_EQ(loose.v.status, Status::Pass) << loose.v.detail;  // why the derived bound exists
  const CaseResult bad = run_decode_case(long_case("planted_reduce_fp16_exp_sum", true), reg, {});
  EXPECT_EQ(bad.v.status, Status::Fail) << bad.v.detail;
  EXPECT_EQ(bad.v.reason, "mismatch") << bad.v.detail;
  EXPECT_NE(bad.v.detail.find("output ulps"), std::string::npos) << bad.v.detail;
  ASSERT_TRUE(bad.v.max_ulp_err.has_value());
  EXPECT_GT(*bad.v.max_ulp_err, 2 * kDerivedUlps) << bad.v.detail;
}

// A length held in 16 bits: 40,000 wraps negative in int16 (the sequence reads as empty).
TEST(DerivedTolerance, Int16ContextLenFailsPast32767) {
  Registry reg;
  reg.add_provider(kvh_planted_long_context, "planted");
  const CaseResult r = run_decode_case(long_case("planted_context_len_int16", false), reg, {});
  EXPECT_EQ(r.v.status, Status::Fail) << r.v.detail;
  EXPECT_EQ(r.v.reason, "mismatch") << r.v.detail;
}

}  // namespace
}  // namespace kvh
