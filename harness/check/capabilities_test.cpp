// Declared capabilities in decode cases: a router that picks a reader outside
// any of them (block size, dtype, GQA ratio, cache format, head size) is
// `misroute`; a case that names such a reader itself is UNSUPPORTED. The
// readers are the built-in launchers registered under the router's reader
// names with narrower capabilities.
#include <gtest/gtest.h>

#include "case/attention_case.h"
#include "registry/kernel_desc.h"

extern "C" int kvh_paged_attention_rocm(const kvh_attention_args*, void*);
extern "C" int kvh_paged_attention_v1(const kvh_attention_args*, void*);
extern "C" uint64_t kvh_paged_attention_workspace_bytes(const kvh_attention_args*);
extern "C" int kvh_reshape_and_cache_shuffle(const kvh_write_args*, void*);

namespace kvh {
namespace {

using kernels::reader_desc;
using kernels::workspace_entry;
using kernels::writer_desc;

const int32_t kBlock32[] = {32};

// paged_attention_rocm declaring block_size 32, fp16 and GQA <= 2 only;
// pa_fwd_asm standing in as a pa_v1 reader (the wrong format for a shuffle cache).
Registry narrow_registry() {
  static kvh_capabilities caps = [] {
    kvh_capabilities c{};
    c.block_sizes = kBlock32;
    c.num_block_sizes = 1;
    c.dtypes = 1u << KVH_DT_F16;
    c.max_gqa_ratio = 2;
    return c;
  }();
  Registry reg{Registry::NoBuiltins{}};
  const kvh_workspace_fn ws = workspace_entry<kvh_paged_attention_workspace_bytes>;
  reg.add(reader_desc<kvh_paged_attention_rocm>("paged_attention_rocm", "narrow", KVH_CACHE_SHUFFLE, 0, ws, &caps),
          "test");
  reg.add(reader_desc<kvh_paged_attention_v1>("pa_fwd_asm", "pa_v1 stand-in", KVH_CACHE_PA_V1, 0, ws), "test");
  reg.add(
      writer_desc<kvh_reshape_and_cache_shuffle>("reshape_and_cache_shuffle", "shuffle writer", KVH_CACHE_SHUFFLE, 0),
      "test");
  return reg;
}

Case routed(int64_t block_size, DType dtype, int64_t num_heads, int64_t batch = 2) {
  Case c;
  c.kind = CaseKind::Attention;
  c.model = "test";
  c.num_heads = num_heads;
  c.num_kv_heads = 2;
  c.head_size = 128;
  c.layout = Scheme::KvFirst;
  c.block_size = block_size;
  c.batch_size = batch;
  c.context_len_min = 30;
  c.context_len_max = 90;
  c.dtype = dtype;
  c.router_policy = "aiter-v0.1.12";  // head_size 128, small batch: paged_attention_rocm
  c.target = "cus=8";
  c.seed = 3;
  return c;
}

TEST(DecodeCapabilities, InsideEveryDeclaredCapabilityTheRoutedReaderPasses) {
  const Registry reg = narrow_registry();
  const CaseResult r = run_decode_case(routed(32, DType::F16, 4), reg, {});
  EXPECT_EQ(r.routed_to, "paged_attention_rocm");
  EXPECT_EQ(r.v.status, Status::Pass) << r.v.detail;
}

TEST(DecodeCapabilities, ARouterOutsideADeclaredCapabilityIsAMisroute) {
  const Registry reg = narrow_registry();
  const struct {
    Case c;
    const char* why;
  } bad[] = {
      {routed(16, DType::F16, 4), "declares block_size 32 only; this case has block_size 16"},
      {routed(32, DType::BF16, 4), "declares dtype fp16 only; this case has bf16"},
      {routed(32, DType::F16, 8), "declares a GQA ratio of at most 2; this case has 4"},
  };
  for (const auto& b : bad) {
    const CaseResult r = run_decode_case(b.c, reg, {});
    EXPECT_EQ(r.v.status, Status::Fail) << b.why;
    EXPECT_EQ(r.v.reason, "misroute") << b.why;
    EXPECT_NE(r.v.detail.find(b.why), std::string::npos) << r.v.detail;
    EXPECT_NE(r.v.detail.find("router aiter-v0.1.12 sent the case to paged_attention_rocm"), std::string::npos)
        << r.v.detail;
    // The same reader named by the case itself: UNSUPPORTED, not the reader's fault.
    Case direct = b.c;
    direct.router_policy.clear();
    direct.reader = "paged_attention_rocm";
    const CaseResult d = run_decode_case(direct, reg, {});
    EXPECT_EQ(d.v.status, Status::Unsupported) << b.why;
    EXPECT_NE(d.v.detail.find(b.why), std::string::npos) << d.v.detail;
  }
}

TEST(DecodeCapabilities, ARouterThatPicksAReaderOfAnotherCacheFormatIsAMisroute) {
  const Registry reg = narrow_registry();
  Case c = routed(32, DType::F16, 4, 16);  // a large batch: the old policy takes the ASM path
  c.kind = CaseKind::Pipeline;
  c.head_size = 128;
  c.writer = "reshape_and_cache_shuffle";
  c.router_policy = "aiter-v0.1.10.post3";
  const CaseResult r = run_decode_case(c, reg, {});
  EXPECT_EQ(r.routed_to, "pa_fwd_asm");
  EXPECT_EQ(r.v.status, Status::Fail) << r.v.detail;
  EXPECT_EQ(r.v.reason, "misroute");
  EXPECT_NE(r.v.detail.find("writes the shuffle cache but reader pa_fwd_asm reads pa_v1"), std::string::npos)
      << r.v.detail;
  c.router_policy.clear();
  c.reader = "pa_fwd_asm";
  EXPECT_EQ(run_decode_case(c, reg, {}).v.status, Status::Unsupported);
}

// Score modifiers: the narrow stand-ins declare none, so a routed case with any of them is a misroute
// naming the modifiers, and the same reader named directly is UNSUPPORTED with that reason.
TEST(DecodeCapabilities, ScoreModifiersOutsideTheDeclaredOnesAreAMisroute) {
  const Registry reg = narrow_registry();
  Case c = routed(32, DType::F16, 4);
  c.sinks = true;
  c.sliding_window = 16;
  const CaseResult r = run_decode_case(c, reg, {});
  EXPECT_EQ(r.v.status, Status::Fail) << r.v.detail;
  EXPECT_EQ(r.v.reason, "misroute");
  EXPECT_NE(r.v.detail.find("declares no support for score modifier(s) sliding_window, sinks"), std::string::npos)
      << r.v.detail;
  c.router_policy.clear();
  c.reader = "paged_attention_rocm";
  const CaseResult d = run_decode_case(c, reg, {});
  EXPECT_EQ(d.v.status, Status::Unsupported) << d.v.detail;
  EXPECT_NE(d.v.detail.find("score modifier(s) sliding_window, sinks"), std::string::npos) << d.v.detail;
}

// The built-in readers declare all four, so the same cases run and PASS; the two modifier
// fixtures FAIL (mismatch) exactly where their bugs bite.
TEST(DecodeCapabilities, BuiltinReadersRunEveryModifierAndTheFixturesFailWhereTheyBite) {
  const Registry reg;
  Case c = routed(16, DType::BF16, 8, 3);
  c.model = "test";
  c.tp = 2, c.tp_rank = 1;
  c.context_lens = {1, 257, 1300};
  c.context_len_min = 1, c.context_len_max = 1300;
  c.sinks = c.alibi = true;
  c.softcap = 30;
  c.sliding_window = 300;
  c.partition_size = 433;
  const CaseResult routed_r = run_decode_case(c, reg, {});
  EXPECT_EQ(routed_r.v.status, Status::Pass) << routed_r.v.detail;
  c.router_policy.clear();
  for (const char* reader : {"paged_attention_v1", "paged_attention_rocm"}) {
    c.reader = reader;
    EXPECT_EQ(run_decode_case(c, reg, {}).v.status, Status::Pass) << reader;
  }
  c.reader = "fixture_sink_per_partition";  // 1000..1299 span partitions 2 and 3 of 433
  EXPECT_EQ(run_decode_case(c, reg, {}).v.reason, "mismatch");
  c.reader = "fixture_alibi_rank_slopes";  // tp 2: slopes of 8 heads, not of 16
  EXPECT_EQ(run_decode_case(c, reg, {}).v.reason, "mismatch");
  c.tp = 1, c.tp_rank = 0;
  EXPECT_EQ(run_decode_case(c, reg, {}).v.status, Status::Pass) << "tp 1: the per-rank count is the model's";
}

}  // namespace
}  // namespace kvh
