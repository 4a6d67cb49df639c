// Write cases end to end on the cpu backend: the correct writers pass every
// layout, the contiguous-assumption fixture fails exactly where the block
// stride differs from the contiguous one, and each planted bug is caught.
#include "case/write_case.h"

#include <gtest/gtest.h>

#include "case/padding.h"
#include "case/values.h"

#include "device/device.h"

extern "C" const kvh_kernel_desc* kvh_planted_writers(int32_t* count);
extern "C" const kvh_kernel_desc* kvh_planted_int8(int32_t* count);

namespace kvh {
namespace {

Registry registry_with_planted() {
  Registry r;
  r.add_provider(kvh_planted_writers, "planted");
  r.add_provider(kvh_planted_int8, "planted");
  return r;
}

Case write_case(const std::string& writer, Scheme layout, int64_t head_size = 128, int64_t tokens = 64,
                int64_t block_size = 16) {
  Case c;
  c.model = "test";
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_size = head_size;
  c.layout = layout;
  c.block_size = block_size;
  c.batch_size = tokens;
  c.writer = writer;
  c.seed = 7;
  return c;
}

const Scheme kLayouts[] = {Scheme::Separate, Scheme::KvFirst, Scheme::Interleaved,
                           Scheme::Padded,   Scheme::Packed,  Scheme::Offset};

TEST(WriteCase, StrideAwareWritersPassEveryLayoutTheirFormatHas) {
  Registry reg;
  for (const char* w : {"reshape_and_cache_flash", "reshape_and_cache", "reshape_and_cache_shuffle"})
    for (Scheme s : kLayouts)
      for (DType dt : {DType::F16, DType::BF16}) {
        Case c = write_case(w, s);
        c.dtype = dt;
        CaseResult r = run_write_case(c, reg);
        const bool packed_only_flash = s == Scheme::Packed && std::string(w) != "reshape_and_cache_flash";
        EXPECT_EQ(r.v.status, packed_only_flash ? Status::Unsupported : Status::Pass)
            << c.id() << ": " << r.v.reason << " " << r.v.detail;
      }
}

// fp8 caches (issue 11): every stride-aware writer quantizes byte for byte like the reference
// codec, in both formats, at every scale granularity, on every layout its format has.
TEST(WriteCase, Fp8WritersMatchTheReferenceCodecOnEveryLayoutAndGranularity) {
  Registry reg;
  for (const char* w : {"reshape_and_cache_flash", "reshape_and_cache", "reshape_and_cache_shuffle"})
    for (Scheme s : kLayouts)
      for (KvCacheDType kv : {KvCacheDType::Fp8E4m3fn, KvCacheDType::Fp8E4m3fnuz})
        for (KvScales g : {KvScales::None, KvScales::Tensor, KvScales::Head, KvScales::Block, KvScales::Token}) {
          Case c = write_case(w, s, 128, 40, 32);
          c.dtype = g == KvScales::Head ? DType::F16 : DType::BF16;
          c.kv_cache_dtype = kv;
          c.kv_scales = g;
          CaseResult r = run_write_case(c, reg);
          const bool packed_only_flash = s == Scheme::Packed && std::string(w) != "reshape_and_cache_flash";
          EXPECT_EQ(r.v.status, packed_only_flash ? Status::Unsupported : Status::Pass)
              << c.id() << ": " << r.v.reason << " " << r.v.detail;
        }
}

// int8 caches (issue 22): every stride-aware writer stores the reference codec's codes
// (RNE, +-127) byte for byte at every granularity, SLOT included, on every layout its format has.
TEST(WriteCase, Int8WritersMatchTheReferenceCodecOnEveryLayoutAndGranularity) {
  Registry reg;
  for (const char* w : {"reshape_and_cache_flash", "reshape_and_cache", "reshape_and_cache_shuffle"})
    for (Scheme s : kLayouts)
      for (KvScales g : {KvScales::Tensor, KvScales::Head, KvScales::Block, KvScales::Token, KvScales::Slot}) {
        Case c = write_case(w, s, 128, 40, 32);
        c.dtype = g == KvScales::Head || g == KvScales::Slot ? DType::F16 : DType::BF16;
        c.kv_cache_dtype = KvCacheDType::Int8;
        c.kv_scales = g;
        CaseResult r = run_write_case(c, reg);
        const bool packed_only_flash = s == Scheme::Packed && std::string(w) != "reshape_and_cache_flash";
        EXPECT_EQ(r.v.status, packed_only_flash ? Status::Unsupported : Status::Pass)
            << c.id() << ": " << r.v.reason << " " << r.v.detail;
      }
}

// planted_int8_scales_heads_swapped: a code mismatch at the per-kv-head granularities with
// two kv heads; right at TENSOR and SLOT (one scale for every head) and with one kv head.
TEST(WriteCase, PlantedInt8HeadsSwappedIsCaughtWherePerHeadScalesDiffer) {
  Registry reg = registry_with_planted();
  for (KvScales g : {KvScales::Tensor, KvScales::Head, KvScales::Block, KvScales::Token, KvScales::Slot}) {
    Case c = write_case("planted_int8_scales_heads_swapped", Scheme::Interleaved);
    c.dtype = DType::BF16;
    c.kv_cache_dtype = KvCacheDType::Int8;
    c.kv_scales = g;
    CaseResult r = run_write_case(c, reg);
    const bool per_head = g == KvScales::Head || g == KvScales::Block || g == KvScales::Token;
    EXPECT_EQ(r.v.status, per_head ? Status::Fail : Status::Pass) << c.id() << ": " << r.v.detail;
    if (per_head) EXPECT_EQ(r.v.reason, "mismatch") << c.id() << ": " << r.v.detail;
    c.num_kv_heads = 1;
    c.num_heads = 2;
    EXPECT_EQ(run_write_case(c, reg).v.status, Status::Pass) << c.id();
  }
}

// Each planted fp8 writer bug is a byte mismatch the writer check names; the planted writer is
// right where its bug does not apply (token_scale_swapped at head scales).
TEST(WriteCase, PlantedFp8WriterBugsAreCaught) {
  Registry reg = registry_with_planted();
  for (KvCacheDType kv : {KvCacheDType::Fp8E4m3fn, KvCacheDType::Fp8E4m3fnuz})
    for (const auto& [w, g] : {std::pair{"planted_fp8_truncates", KvScales::Head},
                               {"planted_fp8_multiplies_scale", KvScales::Block},
                               {"planted_fp8_token_scale_swapped", KvScales::Token}}) {
      Case c = write_case(w, Scheme::Interleaved);
      c.dtype = DType::F16;
      c.kv_cache_dtype = kv;
      c.kv_scales = g;
      CaseResult r = run_write_case(c, reg);
      EXPECT_EQ(r.v.status, Status::Fail) << c.id();
      EXPECT_EQ(r.v.reason, "mismatch") << c.id() << ": " << r.v.detail;
      EXPECT_NE(r.v.detail.find("worst element at storage element"), std::string::npos) << r.v.detail;
    }
  Case c = write_case("planted_fp8_token_scale_swapped", Scheme::Interleaved);
  c.dtype = DType::F16;
  c.kv_cache_dtype = KvCacheDType::Fp8E4m3fn;
  c.kv_scales = KvScales::Head;
  EXPECT_EQ(run_write_case(c, reg).v.status, Status::Pass);
  // A 16-bit-only writer named for an fp8 case: UNSUPPORTED with the reason.
  c.writer = "fixture_shuffle_contiguous";
  const CaseResult u = run_write_case(c, reg);
  EXPECT_EQ(u.v.status, Status::Unsupported);
  EXPECT_NE(u.v.detail.find("cache dtype"), std::string::npos) << u.v.detail;
}

TEST(WriteCase, FlashWriterTakesTheElementPathForHeadSizesNotAMultipleOf8) {
  Registry reg;
  for (Scheme s : kLayouts) {
    CaseResult r = run_write_case(write_case("reshape_and_cache_flash", s, 68), reg);
    EXPECT_EQ(r.v.status, Status::Pass) << to_string(s) << ": " << r.v.detail;
  }
}

TEST(WriteCase, ContiguousFixtureFailsExactlyWhereTheBlockStrideDiffers) {
  Registry reg;
  for (Scheme s : {Scheme::Separate, Scheme::KvFirst, Scheme::Offset})
    EXPECT_EQ(run_write_case(write_case("fixture_shuffle_contiguous", s), reg).v.status, Status::Pass) << to_string(s);
  for (Scheme s : {Scheme::Interleaved, Scheme::Padded}) {
    CaseResult r = run_write_case(write_case("fixture_shuffle_contiguous", s), reg);
    EXPECT_EQ(r.v.status, Status::Fail) << to_string(s);
    EXPECT_GT(r.v.bad_elements, 0);
  }
  // Even with four tokens the fixture cannot hide in block 0 (the null block is never used).
  EXPECT_EQ(run_write_case(write_case("fixture_shuffle_contiguous", Scheme::Interleaved, 128, 4, 544), reg).v.status,
            Status::Fail);
}

TEST(WriteCase, PlantedWriterThatIgnoresNegativeSlotsIsCaught) {
  Registry reg = registry_with_planted();
  // Padding is drawn per case (padding.h): every seed whose case has padding catches it; one in four has none.
  int with_padding = 0;
  for (uint64_t seed = 7; seed < 15; ++seed)
    for (Scheme s : {Scheme::KvFirst, Scheme::Interleaved}) {
      Case c = write_case("planted_ignores_negative_slot", s);
      c.seed = seed;
      const CaseResult r = run_write_case(c, reg);
      if (r.padding_tokens.empty()) {
        EXPECT_EQ(r.v.status, Status::Pass) << c.id() << ": no padding, nothing to get wrong";
        continue;
      }
      ++with_padding;
      EXPECT_EQ(r.v.status, Status::Fail) << c.id();
      if (s == Scheme::KvFirst)  // slot -1: token -1 of block 0, before the K view
        EXPECT_EQ(r.v.reason, "out_of_view_write") << r.v.detail;
    }
  EXPECT_GT(with_padding, 4);
}

TEST(WriteCase, PlantedWriterThatWritesOnePastItsSlotIsCaught) {
  Registry reg = registry_with_planted();
  for (Scheme s : kLayouts) {
    CaseResult r = run_write_case(write_case("planted_writes_one_past", s), reg);
    EXPECT_EQ(r.v.status, Status::Fail) << to_string(s);
    EXPECT_TRUE(r.v.reason == "mismatch" || r.v.reason == "out_of_view_write") << r.v.reason;
  }
}

TEST(WriteCase, PlantedWriterThatSwapsKAndVIsAMismatch) {
  Registry reg = registry_with_planted();
  CaseResult r = run_write_case(write_case("planted_swaps_kv", Scheme::Separate), reg);
  EXPECT_EQ(r.v.status, Status::Fail);
  EXPECT_EQ(r.v.reason, "mismatch");
  EXPECT_NE(r.v.detail.find("page of block"), std::string::npos) << r.v.detail;
}

TEST(WriteCase, PlantedWriterThatSkipsATokenLeavesUnwrittenOutput) {
  Registry reg = registry_with_planted();
  // A seed whose last token is real and the only padding-free stretch's end (padding.h): skipping
  // it leaves exactly one token unwritten.
  Case c = write_case("planted_skips_last_token", Scheme::KvFirst);
  while (!padding_tokens(c.batch_size, case_data_seed(c)).empty()) ++c.seed;
  CaseResult r = run_write_case(c, reg);
  EXPECT_EQ(r.v.status, Status::Fail);
  EXPECT_EQ(r.v.reason, "unwritten_output") << r.v.detail;
  EXPECT_EQ(r.v.bad_elements, 2 * 2 * 128);  // one token: K and V, 2 kv heads x 128
}

TEST(WriteCase, ImpossibleShapesAreUnsupportedWithTheirReason) {
  Registry reg;
  CaseResult r = run_write_case(write_case("reshape_and_cache_shuffle", Scheme::KvFirst, 128, 8, 20), reg);
  EXPECT_EQ(r.v.status, Status::Unsupported);
  EXPECT_NE(r.v.detail.find("block_size 20 is not a multiple of x = 8"), std::string::npos) << r.v.detail;
  r = run_write_case(write_case("no_such_writer", Scheme::KvFirst), reg);
  EXPECT_EQ(r.v.status, Status::Unsupported);
}

TEST(WriteCase, WavefrontSizeDoesNotChangeAnyVerdict) {
  if (device::info().backend != "cpu") GTEST_SKIP() << "the wave size is the hardware's on GPU backends";
  Registry reg;
  for (int wave : {32, 64}) {
    device::configure_host(wave, true, 3);
    for (Scheme s : {Scheme::Interleaved, Scheme::Padded})
      EXPECT_EQ(run_write_case(write_case("reshape_and_cache_shuffle", s, 256, 33, 32), reg).v.status, Status::Pass);
  }
  device::configure_host(64, false, 1);
}

}  // namespace
}  // namespace kvh
