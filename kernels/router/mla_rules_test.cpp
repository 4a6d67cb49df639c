// The vllm-rocm-mla-* policies (router/mla_rules.h): every rule and both sides of every threshold
// (16 heads, divisors of 16, max_query_len 1, the cache dtype), and the fixed rule "the Gluon kernel,
// whose fp8 mode needs batch 1 and a bf16 query, is never chosen outside it" holding under
// vllm-rocm-mla-51011 and broken under the two older policies.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "kvharness/provider.h"
#include "router/mla_rules.h"
#include "router/router.h"

namespace kvh::routing {
namespace {

const char* kPre = "vllm-rocm-mla-pre-50578";
const char* k50578 = "vllm-rocm-mla-50578";
const char* kFixed = "vllm-rocm-mla-51011";

// One MLA step of DeepSeek-class geometry (kv_lora_rank 512, rope 64), bf16 query.
RouteInput mla_step(int64_t num_seqs, int64_t num_heads, CacheDtype cache, int64_t max_query_len = 1) {
  RouteInput in;
  in.num_seqs = num_seqs;
  in.num_heads = num_heads;
  in.num_kv_heads = 1;
  in.head_size = 576;
  in.cache_dtype = cache;
  in.compute_units = 256;  // MI355X
  in.max_query_len = max_query_len;
  in.num_query_tokens = num_seqs * max_query_len;
  in.dtype = KVH_DT_BF16;
  in.kv_lora_rank = 512;
  return in;
}

// The Gluon kernel's fp8 domain (aiter PR 3311's bh16bn128: batch 1, bf16 query), the rule the fix keeps.
bool gluon_outside_its_domain(const RouteInput& in, const std::string& reader) {
  return reader == kMlaGluonReader &&
         (in.num_heads > 16 || (in.cache_dtype == CacheDtype::fp8 && (in.num_seqs != 1 || in.dtype != KVH_DT_BF16)));
}

TEST(MlaRouter, SixteenHeadsOrMoreTakeTheAsmDecodeUnderEveryPolicy) {
  for (const char* p : {kPre, k50578, kFixed})
    for (int64_t heads : {16, 32, 64, 128})
      for (auto dt : {CacheDtype::bf16, CacheDtype::fp8})
        for (int64_t qlen : {1, 2}) {
          const RouteDecision d = route(p, mla_step(4, heads, dt, qlen));
          EXPECT_EQ(d.reader, kMlaAsmReader) << p << " heads " << heads << ": " << d.reason;
        }
  // 15 heads is the other side of the threshold: never the ASM decode's own tile under the old policy.
  EXPECT_EQ(route(kPre, mla_step(4, 15, CacheDtype::bf16)).reader, kMlaGluonReader);
  EXPECT_EQ(route(kPre, mla_step(4, 16, CacheDtype::bf16)).reader, kMlaAsmReader);
}

TEST(MlaRouter, Pre50578SendsEverySmallHeadCountToGluon) {
  for (int64_t heads : {1, 4, 8, 12, 15})
    for (auto dt : {CacheDtype::bf16, CacheDtype::fp8})
      for (int64_t qlen : {1, 3})
        EXPECT_EQ(route(kPre, mla_step(2, heads, dt, qlen)).reader, kMlaGluonReader) << heads;
}

TEST(MlaRouter, Pr50578PadsNonDivisorsOfSixteenAtQlenOne) {
  for (const char* p : {k50578, kFixed}) {
    // bf16: divisors of 16 stay on Gluon, the others (12: Kimi-K3 at TP8, 6, 15) go to the padded ASM decode.
    for (int64_t heads : {1, 2, 4, 8})
      EXPECT_EQ(route(p, mla_step(4, heads, CacheDtype::bf16)).reader, kMlaGluonReader) << p << " " << heads;
    for (int64_t heads : {3, 6, 12, 15})
      EXPECT_EQ(route(p, mla_step(4, heads, CacheDtype::bf16)).reader, kMlaAsmReader) << p << " " << heads;
    // The verify branch (max_query_len > 1) keeps Gluon for a 16-bit cache.
    EXPECT_EQ(route(p, mla_step(4, 12, CacheDtype::bf16, 2)).reader, kMlaGluonReader) << p;
  }
  // fp8 at a divisor of 16: Gluon before the fix, ASM after it.
  EXPECT_EQ(route(k50578, mla_step(4, 8, CacheDtype::fp8)).reader, kMlaGluonReader);
  EXPECT_EQ(route(kFixed, mla_step(4, 8, CacheDtype::fp8)).reader, kMlaAsmReader);
  EXPECT_EQ(route(k50578, mla_step(4, 12, CacheDtype::fp8)).reader, kMlaAsmReader);
}

TEST(MlaRouter, Pr51011NeverSendsAnFp8CacheToGluon) {
  for (int64_t heads = 1; heads <= 16; ++heads)
    for (int64_t qlen : {1, 2, 4})
      for (int64_t seqs : {1, 2, 64}) {
        const RouteDecision d = route(kFixed, mla_step(seqs, heads, CacheDtype::fp8, qlen));
        EXPECT_EQ(d.reader, kMlaAsmReader) << heads << " heads, qlen " << qlen << ": " << d.reason;
      }
  EXPECT_EQ(route(kFixed, mla_step(1, 8, CacheDtype::bf16)).reader, kMlaGluonReader);  // 16-bit: unchanged
}

// The bug of the issue: a router that sent fewer than 16 heads to a kernel whose fp8 mode needs
// batch 1 and a bf16 query. Holds under the fix at every input; each old policy breaks it.
TEST(MlaRouter, GluonIsNeverChosenOutsideItsFp8DomainUnderTheFix) {
  int broken[2] = {0, 0};
  for (int64_t heads : {1, 2, 4, 6, 8, 12, 15, 16, 32, 64, 128})
    for (int64_t seqs : {1, 2, 8, 128})
      for (int64_t qlen : {1, 2})
        for (auto dt : {CacheDtype::bf16, CacheDtype::fp8})
          for (int32_t q : {KVH_DT_BF16, KVH_DT_F16}) {
            RouteInput in = mla_step(seqs, heads, dt, qlen);
            in.dtype = q;
            EXPECT_FALSE(gluon_outside_its_domain(in, route(kFixed, in).reader)) << heads << " " << seqs;
            broken[0] += gluon_outside_its_domain(in, route(kPre, in).reader);
            broken[1] += gluon_outside_its_domain(in, route(k50578, in).reader);
          }
  EXPECT_GT(broken[0], 0);
  EXPECT_GT(broken[1], 0);
  // The smallest witnesses: 8 heads, fp8, batch 1 passes everywhere; batch 2 is the misroute.
  EXPECT_FALSE(gluon_outside_its_domain(mla_step(1, 8, CacheDtype::fp8), route(kPre, mla_step(1, 8, CacheDtype::fp8)).reader));
  EXPECT_TRUE(gluon_outside_its_domain(mla_step(2, 8, CacheDtype::fp8), route(kPre, mla_step(2, 8, CacheDtype::fp8)).reader));
  EXPECT_TRUE(is_regression_fixture(kPre));
  EXPECT_TRUE(is_regression_fixture(k50578));
  EXPECT_FALSE(is_regression_fixture(kFixed));
}

TEST(MlaRouter, ReasonNamesTheRuleAndTheNumbers) {
  EXPECT_EQ(route(kFixed, mla_step(4, 128, CacheDtype::fp8)).reason,
            "num_heads = 128 >= 16 (_AITER_MIN_MLA_HEADS) -> mla_asm");
  EXPECT_EQ(route(kFixed, mla_step(4, 8, CacheDtype::fp8)).reason,
            "num_heads = 8 < 16, fp8 cache: never Gluon (vLLM PR 51011), ASM padded to 16 heads -> mla_asm");
  EXPECT_EQ(route(k50578, mla_step(4, 12, CacheDtype::bf16)).reason,
            "num_heads = 12 < 16 does not divide 16 (vLLM PR 50578): ASM padded to 16 heads -> mla_asm");
  EXPECT_EQ(route(k50578, mla_step(4, 8, CacheDtype::fp8)).reason,
            "num_heads = 8 < 16 divides 16, max_query_len 1, fp8 cache -> mla_gluon_bh16");
  EXPECT_EQ(route(kPre, mla_step(4, 8, CacheDtype::fp8)).reason, "num_heads = 8 < 16 (any cache dtype) -> mla_gluon_bh16");
  EXPECT_EQ(route(kFixed, mla_step(4, 4, CacheDtype::bf16, 2)).reason,
            "num_heads = 4 < 16, max_query_len = 2 (verify branch) -> mla_gluon_bh16");
}

TEST(MlaRouter, MlaAndPagedPoliciesRefuseEachOthersSteps) {
  RouteInput paged = mla_step(4, 8, CacheDtype::bf16);
  paged.kv_lora_rank = 0;
  paged.head_size = 128;
  for (const char* p : {kPre, k50578, kFixed}) {
    try {
      route(p, paged);
      FAIL() << p << " routed a non-MLA step";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("routes MLA steps only"), std::string::npos) << e.what();
    }
  }
  for (const char* p : {"aiter-v0.1.12", "aiter-pre-b4885d2", "vllm-unified-ccd7c05", "vllm-unified-6d80ae8",
                        "vllm-unified-9c0ee99"}) {
    try {
      route(p, mla_step(4, 8, CacheDtype::bf16));
      FAIL() << p << " routed an MLA step";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("not an MLA step"), std::string::npos) << e.what();
    }
    EXPECT_NO_THROW(route(p, paged)) << p;  // their own steps route as before
  }
}

}  // namespace
}  // namespace kvh::routing
