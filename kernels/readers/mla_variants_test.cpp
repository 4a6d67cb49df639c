// The vllm-rocm-mla-* routing targets (readers/mla_variants.h): exact inside the modelled kernel's
// domain, refusing outside it with the library's reason, and, joined with the policies
// (router/mla_rules.h), every step the fixed policy routes runs while the old policies send
// fp8 batches to the Gluon kernel that refuses them.
#include <gtest/gtest.h>

#include <string>

#include "readers/mla_variants.h"
#include "registry/registry.h"
#include "router/router.h"
#include "testing/attention_check.h"
#include "testing/mla_check.h"

namespace kvh::testing {
namespace {

MlaCase mla(int heads, int32_t cache_dtype, std::vector<MlaSeq> seqs) {
  MlaCase c;
  c.num_heads = heads;
  c.cache_dtype = cache_dtype;
  c.seqs = std::move(seqs);
  c.seed = uint64_t(heads * 7 + int(c.seqs.size()));
  return c;
}

TEST(MlaVariants, GluonRunsBf16AnyBatchAndFp8AtBatchOneOnly) {
  const Kernel& g = builtin_reader(routing::kMlaGluonReader);
  for (int h : {4, 8, 16}) {
    EXPECT_TRUE(run_mla_case(g, mla(h, 0, {{1, 50}, {1, 90}})).passed()) << h;  // bf16 cache, batch 2
    EXPECT_TRUE(run_mla_case(g, mla(h, KVH_DT_FP8_E4M3FN, {{1, 120}})).passed()) << h;  // fp8, batch 1
    const MlaResult r = run_mla_case(g, mla(h, KVH_DT_FP8_E4M3FN, {{1, 50}, {1, 90}}));  // fp8, batch 2
    EXPECT_NE(r.refused.find("bh16bn128 asserts batch_size == 1"), std::string::npos) << h << ": " << r.str();
  }
  const MlaResult wide = run_mla_case(g, mla(32, 0, {{1, 40}}));
  EXPECT_NE(wide.refused.find("nhead <= 16"), std::string::npos) << wide.str();
  EXPECT_TRUE(run_mla_case(g, mla(8, 0, {{2, 40}, {3, 70}})).passed());  // the verify branch: MTP rows
}

TEST(MlaVariants, GluonFp8RefusesAnFp16Query) {
  MlaCase c = mla(8, KVH_DT_FP8_E4M3FN, {{1, 60}});
  c.dtype = KVH_DT_F16;
  const MlaResult r = run_mla_case(builtin_reader(routing::kMlaGluonReader), c);
  EXPECT_NE(r.refused.find("a bf16 query"), std::string::npos) << r.str();
}

TEST(MlaVariants, AsmRunsPaddedAndTiledHeadCountsAndRefusesTheRest) {
  const Kernel& a = builtin_reader(routing::kMlaAsmReader);
  for (int h : {8, 12, 16, 64, 128})
    for (int32_t cd : {0, int(KVH_DT_FP8_E4M3FN)}) {
      const MlaResult r = run_mla_case(a, mla(h, cd, {{1, 70}, {2, 150}, {1, 1}}));
      EXPECT_TRUE(r.passed()) << h << " heads, cache " << cd << ": " << r.str();
    }
  EXPECT_NE(run_mla_case(a, mla(24, 0, {{1, 30}})).refused.find("multiple of 16"), std::string::npos);
  EXPECT_NE(run_mla_case(a, mla(144, 0, {{1, 30}})).refused.find("more than 128 heads"), std::string::npos);
}

// The policies and their targets together: every step the fixed policy routes is in its reader's
// domain; the old policies route fp8 batches of a few heads to a Gluon reader that refuses them.
TEST(MlaVariants, FixedPolicyRoutesOnlyIntoDomainsOldPoliciesDoNot) {
  int refused_old = 0;
  for (int h : {4, 8, 12, 16, 64})
    for (int32_t cd : {0, int(KVH_DT_FP8_E4M3FN)})
      for (int batch : {1, 2}) {
        std::vector<MlaSeq> seqs(size_t(batch), MlaSeq{1, 33});
        routing::RouteInput in;
        in.num_seqs = batch, in.num_heads = h, in.num_kv_heads = 1, in.head_size = 576, in.kv_lora_rank = 512;
        in.cache_dtype = cd ? routing::CacheDtype::fp8 : routing::CacheDtype::bf16;
        in.compute_units = 256, in.dtype = KVH_DT_BF16;
        const MlaResult fixed = run_mla_case(builtin_reader(routing::route("vllm-rocm-mla-51011", in).reader), mla(h, cd, seqs));
        EXPECT_TRUE(fixed.passed()) << h << " heads, cache " << cd << ", batch " << batch << ": " << fixed.str();
        for (const char* old : {"vllm-rocm-mla-pre-50578", "vllm-rocm-mla-50578"})
          refused_old += !run_mla_case(builtin_reader(routing::route(old, in).reader), mla(h, cd, seqs)).refused.empty();
      }
  // fp8 at batch 2: 4, 8 and 12 heads under pre-50578; 4 and 8 under 50578 (12 goes to the padded ASM decode).
  EXPECT_EQ(refused_old, 3 + 2);
}

}  // namespace
}  // namespace kvh::testing
