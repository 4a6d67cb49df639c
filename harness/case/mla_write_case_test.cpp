// MLA write cases end to end on the cpu backend (issue 22): concat_and_cache_mla passes every
// layout of the latent cache, pages of 1, 16 and 64 tokens, one token and many, 16-bit and fp8
// caches; each bad writer fails naming what it did; the no-clamp fixture fails exactly on fp8 caches;
// a kernel of another format is UNSUPPORTED with the reason.
#include <gtest/gtest.h>

#include "case/kv_scales.h"
#include "case/write_case.h"

extern "C" const kvh_kernel_desc* kvh_planted_mla_writers(int32_t* count);

namespace kvh {
namespace {

Registry registry_with_planted() {
  Registry r;
  r.add_provider(kvh_planted_mla_writers, "planted");
  return r;
}

Case mla_case(const std::string& writer, Scheme layout, int64_t block_size = 16, int64_t tokens = 37) {
  Case c;
  c.model = "DeepSeek-V3";
  c.num_heads = 16;
  c.num_kv_heads = 1;
  c.head_size = 576;
  c.kv_lora_rank = 512, c.qk_rope_head_dim = 64, c.qk_nope_head_dim = 128;
  c.layout = layout;
  c.block_size = block_size;
  c.batch_size = tokens;
  c.writer = writer;
  c.dtype = DType::BF16;
  c.seed = 5;
  return c;
}

Case fp8(Case c, KvCacheDType kv, KvScales g = KvScales::Tensor) {
  c.kv_cache_dtype = kv;
  c.kv_scales = g;
  return c;
}

std::string why(const CaseResult& r) { return r.c.id() + ": " + r.v.reason + " " + r.v.detail; }

TEST(MlaWriteCase, ConcatAndCacheMlaPassesEveryLatentLayoutPageAndDtype) {
  Registry reg;
  for (Scheme s : {Scheme::Separate, Scheme::Offset, Scheme::Padded})
    for (int64_t bs : {1, 16, 64})
      for (int64_t tokens : {1, 37}) {
        Case c = mla_case("concat_and_cache_mla", s, bs, tokens);
        c.dtype = bs == 16 ? DType::F16 : DType::BF16;
        const CaseResult r = run_write_case(c, reg);
        EXPECT_EQ(r.v.status, Status::Pass) << why(r);
        EXPECT_NE(r.key_layout, "") << "the latent part's view is reported";
      }
  // Pages of one token: the size-1 dims of the cache (and of the writer's 2-D views with one token).
  for (int64_t stride : {int64_t(0), int64_t(1), kDegenerateLargeStride})
    for (int64_t tokens : {1, 9}) {
      Case c = mla_case("concat_and_cache_mla", Scheme::DegenerateStrides, 1, tokens);
      c.degenerate_stride = stride;
      const CaseResult r = run_write_case(c, reg);
      EXPECT_EQ(r.v.status, Status::Pass) << why(r);
    }
}

TEST(MlaWriteCase, Fp8MlaWriterMatchesTheReferenceCodecAndSaturates) {
  Registry reg;
  for (KvCacheDType kv : {KvCacheDType::Fp8E4m3fn, KvCacheDType::Fp8E4m3fnuz})
    for (KvScales g : {KvScales::None, KvScales::Tensor})
      for (Scheme s : {Scheme::Separate, Scheme::Padded}) {
        const Case c = fp8(mla_case("concat_and_cache_mla", s, 16), kv, g);
        const CaseResult r = run_write_case(c, reg);
        EXPECT_EQ(r.v.status, Status::Pass) << why(r);
      }
  // The inputs reach 2: the per-tensor scale puts about 15% of them past the format's max.
  for (KvCacheDType kv : {KvCacheDType::Fp8E4m3fn, KvCacheDType::Fp8E4m3fnuz}) {
    const Case c = fp8(mla_case("concat_and_cache_mla", Scheme::Separate), kv);
    const float max = kv == KvCacheDType::Fp8E4m3fn ? 448.f : 240.f;
    EXPECT_LT(mla_fp8_scale(c) * max, 1.9f);
    EXPECT_GT(mla_fp8_scale(c) * max, 1.5f);
  }
}

// The public bug class: an fp8 MLA writer without a clamp. Fails on fp8 caches with a per-tensor
// scale (values past max * scale become NaN), passes where nothing needs saturating.
TEST(MlaWriteCase, NoClampFixtureFailsExactlyWhereValuesPassTheFormatsMax) {
  Registry reg;
  for (KvCacheDType kv : {KvCacheDType::Fp8E4m3fn, KvCacheDType::Fp8E4m3fnuz}) {
    const CaseResult r = run_write_case(fp8(mla_case("fixture_mla_fp8_writer_no_clamp", Scheme::Separate), kv), reg);
    EXPECT_EQ(r.v.status, Status::Fail) << why(r);
    EXPECT_EQ(r.v.reason, "mismatch") << why(r);
    EXPECT_GT(r.v.bad_elements, 0);
    // Scale 1: |x| < 2 never reaches the max, so the fixture is right there.
    const CaseResult ok =
        run_write_case(fp8(mla_case("fixture_mla_fp8_writer_no_clamp", Scheme::Separate), kv, KvScales::None), reg);
    EXPECT_EQ(ok.v.status, Status::Pass) << why(ok);
  }
  const CaseResult bf16 = run_write_case(mla_case("fixture_mla_fp8_writer_no_clamp", Scheme::Padded, 64), reg);
  EXPECT_EQ(bf16.v.status, Status::Pass) << why(bf16);
}

// The other two halves of the public fp8 MLA writer bug, and the layout bugs: each fails, naming it.
TEST(MlaWriteCase, BadMlaWritersFailNamingWhatTheyDid) {
  Registry reg = registry_with_planted();
  for (KvCacheDType kv : {KvCacheDType::Fp8E4m3fn, KvCacheDType::Fp8E4m3fnuz})
    for (const char* w : {"planted_mla_fp8_scale_multiply", "planted_mla_fp8_value_convert"}) {
      const CaseResult r = run_write_case(fp8(mla_case(w, Scheme::Offset), kv), reg);
      EXPECT_EQ(r.v.status, Status::Fail) << why(r);
      EXPECT_EQ(r.v.reason, "mismatch") << why(r);
      EXPECT_NE(r.v.detail.find("worst element at storage element"), std::string::npos) << why(r);
    }
  const CaseResult swapped = run_write_case(mla_case("planted_mla_swaps_halves", Scheme::Separate), reg);
  EXPECT_EQ(swapped.v.status, Status::Fail) << why(swapped);
  EXPECT_EQ(swapped.v.reason, "mismatch") << why(swapped);
  const CaseResult pad = run_write_case(mla_case("planted_mla_writes_pad_columns", Scheme::Separate), reg);
  EXPECT_EQ(pad.v.status, Status::Fail) << why(pad);
  EXPECT_EQ(pad.v.reason, "out_of_view_write") << why(pad);
  EXPECT_NE(pad.v.detail.find("the writer modified its key/value input (kv_c/k_pe: the latent projection buffer"),
            std::string::npos)
      << why(pad);
  const CaseResult padding = run_write_case(mla_case("planted_mla_ignores_padding", Scheme::Offset), reg);
  EXPECT_EQ(padding.v.status, Status::Fail) << why(padding);
  EXPECT_EQ(padding.v.reason, "out_of_view_write") << why(padding);
  EXPECT_NE(padding.v.detail.find("write outside the views"), std::string::npos) << why(padding);
  // Right where its bug cannot show: a case whose drawn padding (harness/case/padding.h) is none.
  const CaseResult few = run_write_case(mla_case("planted_mla_ignores_padding", Scheme::Offset, 16, 3), reg);
  EXPECT_EQ(few.v.status, few.padding_tokens.empty() ? Status::Pass : Status::Fail) << why(few);
}

TEST(MlaWriteCase, AKernelOfAnotherFormatIsUnsupportedWithTheReason) {
  Registry reg;
  const CaseResult flash = run_write_case(mla_case("reshape_and_cache_flash", Scheme::Separate), reg);
  EXPECT_EQ(flash.v.status, Status::Unsupported);
  EXPECT_NE(flash.v.detail.find("this case is MLA's latent cache (format mla, kv_lora_rank 512)"), std::string::npos)
      << flash.v.detail;
  Case plain = mla_case("concat_and_cache_mla", Scheme::Separate);
  plain.kv_lora_rank = plain.qk_rope_head_dim = plain.qk_nope_head_dim = 0;
  plain.head_size = 128;
  const CaseResult mla = run_write_case(plain, reg);
  EXPECT_EQ(mla.v.status, Status::Unsupported);
  EXPECT_NE(mla.v.detail.find("declares cache format mla"), std::string::npos) << mla.v.detail;
  // A scale granularity the MLA writer does not take: per head.
  const CaseResult head =
      run_write_case(fp8(mla_case("concat_and_cache_mla", Scheme::Separate), KvCacheDType::Fp8E4m3fn, KvScales::Head), reg);
  EXPECT_EQ(head.v.status, Status::Unsupported) << why(head);
  // A cache dtype the latent cache does not have: int8 (the writer declares 16-bit and fp8 only).
  const CaseResult int8 = run_write_case(fp8(mla_case("concat_and_cache_mla", Scheme::Separate), KvCacheDType::Int8), reg);
  EXPECT_EQ(int8.v.status, Status::Unsupported) << why(int8);
  EXPECT_NE(int8.v.detail.find("int8"), std::string::npos) << why(int8);
}

}  // namespace
}  // namespace kvh
