// Attention and pipeline cases end to end on the cpu backend: the PR's
// experiment in miniature, misroutes, planted readers, and no false alarms.
#include "case/attention_case.h"

#include <algorithm>
#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "device/device.h"

extern "C" const kvh_kernel_desc* kvh_planted_readers(int32_t* count);

namespace kvh {
namespace {

Case decode_case(CaseKind kind, int64_t head_size, int64_t batch, Scheme layout = Scheme::Interleaved) {
  Case c;
  c.kind = kind;
  c.model = "test";
  c.num_heads = 4;
  c.num_kv_heads = 1;
  c.head_size = head_size;
  c.layout = layout;
  c.block_size = 16;
  c.batch_size = batch;
  c.context_len_min = 200;
  c.context_len_max = 700;
  c.dtype = DType::BF16;
  c.target = "cus=8";  // the router's threshold: num_seqs * num_heads > 16
  c.seed = 5;
  return c;
}

Case variant(Case c, const std::string& writer, const std::string& reader, const std::string& router) {
  c.writer = writer;
  c.reader = reader;
  c.router_policy = router;
  return c;
}

// The seed PR thread's table at small scale: hybrid model (interleaved cache),
// head_size 256, a batch small (2 * 4 heads <= 16) and large (8 * 4 > 16).
TEST(DecodeCase, ThePullRequestExperimentInMiniature) {
  Registry reg;
  const DecodeOptions opt;
  for (int64_t batch : {2, 8}) {
    const Case base = decode_case(CaseKind::Pipeline, 256, batch);
    const bool large = batch == 8;
    CaseResult before = run_decode_case(variant(base, "fixture_shuffle_contiguous", "", "aiter-v0.1.10.post3"), reg, opt);
    EXPECT_EQ(before.v.status, Status::Fail) << before.v.detail;
    // Issue 7, defect 10: the writer is judged first, and a misroute does not hide its corruption.
    EXPECT_EQ(before.v.component, "writer") << before.v.detail;
    EXPECT_EQ(before.v.reason, "mismatch") << before.v.detail;  // interleaved: its K lands in other blocks' V pages
    ASSERT_EQ(before.v.causes.size(), large ? 2u : 1u) << before.v.detail;
    if (large) EXPECT_EQ(before.v.causes[1].component, "router");
    if (large) EXPECT_EQ(before.v.causes[1].reason, "misroute");
    CaseResult after = run_decode_case(variant(base, "reshape_and_cache_shuffle", "", "aiter-v0.1.10.post3"), reg, opt);
    EXPECT_EQ(after.v.status, large ? Status::Fail : Status::Pass) << after.v.detail;
    EXPECT_EQ(after.routed_to, large ? "pa_fwd_asm" : "paged_attention_rocm");
    CaseResult fixed = run_decode_case(variant(base, "reshape_and_cache_shuffle", "", "aiter-v0.1.12"), reg, opt);
    EXPECT_EQ(fixed.v.status, Status::Pass) << fixed.v.detail;
    EXPECT_EQ(fixed.routed_to, "paged_attention_rocm");
    EXPECT_NE(fixed.route_reason.find("head_size"), std::string::npos) << fixed.route_reason;
    CaseResult pa_v1 = run_decode_case(variant(base, "reshape_and_cache", "paged_attention_v1", ""), reg, opt);
    EXPECT_EQ(pa_v1.v.status, Status::Pass) << pa_v1.v.detail;
  }
  // Attention-only model, head_size 128: the ASM path is legitimate.
  const Case qwen3 = decode_case(CaseKind::Pipeline, 128, 8, Scheme::KvFirst);
  CaseResult asm128 = run_decode_case(variant(qwen3, "reshape_and_cache_shuffle", "", "aiter-v0.1.10.post3"), reg, {});
  EXPECT_EQ(asm128.routed_to, "pa_fwd_asm");
  EXPECT_EQ(asm128.v.status, Status::Pass) << asm128.v.detail;
}

// Issue 7, defect 9: both ends of a [min, max] range are always drawn, and the drawn lengths are recorded.
TEST(DecodeCase, ContextLengthRangeEndsAreAlwaysDrawnAndRecorded) {
  Registry reg;
  Case c = variant(decode_case(CaseKind::Attention, 128, 5, Scheme::KvFirst), "", "paged_attention_rocm", "");
  c.context_len_min = 511;
  c.context_len_max = 513;
  for (uint64_t seed : {1, 2, 3}) {
    c.seed = seed;
    const CaseResult r = run_decode_case(c, reg, {});
    EXPECT_EQ(r.v.status, Status::Pass) << r.v.detail;
    ASSERT_EQ(r.context_lens.size(), 5u);
    EXPECT_EQ(*std::min_element(r.context_lens.begin(), r.context_lens.end()), 511);
    EXPECT_EQ(*std::max_element(r.context_lens.begin(), r.context_lens.end()), 513);
  }
  c.context_lens = {1, 512, 513};
  c.batch_size = 3;
  EXPECT_EQ(run_decode_case(c, reg, {}).context_lens, (std::vector<int32_t>{1, 512, 513}));
}

TEST(DecodeCase, LaunchMisroutedReportsTheNumericDamageToo) {
  Registry reg;
  const Case c = variant(decode_case(CaseKind::Attention, 256, 8), "", "", "aiter-v0.1.10.post3");
  CaseResult held = run_decode_case(c, reg, DecodeOptions{false});
  EXPECT_EQ(held.v.reason, "misroute");
  EXPECT_FALSE(held.v.max_abs_err) << "not launched, so no error figure";
  CaseResult launched = run_decode_case(c, reg, DecodeOptions{true});
  EXPECT_EQ(launched.v.status, Status::Fail);
  EXPECT_EQ(launched.v.reason, "misroute");
  ASSERT_TRUE(launched.v.max_abs_err);
  EXPECT_NE(launched.v.detail.find("Launched anyway"), std::string::npos) << launched.v.detail;
  EXPECT_GT(launched.v.bad_elements, 0);
}

TEST(DecodeCase, AReaderOutsideItsCapabilitiesChosenByHandIsUnsupported) {
  Registry reg;
  CaseResult r = run_decode_case(variant(decode_case(CaseKind::Attention, 256, 2), "", "pa_fwd_asm", ""), reg, {});
  EXPECT_EQ(r.v.status, Status::Unsupported);
  EXPECT_NE(r.v.detail.find("head_size 128 only"), std::string::npos) << r.v.detail;
  Case bad = variant(decode_case(CaseKind::Pipeline, 128, 2), "reshape_and_cache", "paged_attention_rocm", "");
  EXPECT_EQ(run_decode_case(bad, reg, {}).v.status, Status::Unsupported) << "pa_v1 writer with a shuffle reader";
}

// Ragged queries (issue 20): a decode-only reader named by hand is UNSUPPORTED, picked by a
// router misroute (the aiter policies route decode steps); the unified readers and pa_fwd_asm's
// multi-token mode (q <= 4) pass, the sequences' query lengths recorded.
TEST(DecodeCase, DecodeOnlyReadersOnRaggedCasesAreUnsupportedOrMisrouted) {
  Registry reg;
  Case ragged = decode_case(CaseKind::Attention, 128, 4);
  ragged.query_len_min = 2, ragged.query_len_max = 4;
  const CaseResult named = run_decode_case(variant(ragged, "", "paged_attention_rocm", ""), reg, {});
  EXPECT_EQ(named.v.status, Status::Unsupported);
  EXPECT_NE(named.v.detail.find("decode-only reader (max_query_len 1); this case has up to 4 query tokens"),
            std::string::npos) << named.v.detail;
  const CaseResult routed = run_decode_case(variant(ragged, "", "", "aiter-v0.1.12"), reg, {});
  EXPECT_EQ(routed.v.status, Status::Fail);
  EXPECT_EQ(routed.v.reason, "misroute") << routed.v.detail;
  EXPECT_NE(routed.v.detail.find("decode-only reader"), std::string::npos) << routed.v.detail;
  for (const char* reader : {"pa_fwd_asm", "unified_attention_2d", "unified_attention_3d"}) {
    Case c = variant(ragged, "", reader, "");
    if (std::string(reader) != "pa_fwd_asm") c.layout = Scheme::KvFirst;
    const CaseResult r = run_decode_case(c, reg, {});
    EXPECT_EQ(r.v.status, Status::Pass) << reader << ": " << r.v.detail;
    ASSERT_EQ(r.query_lens.size(), 4u) << reader;
    EXPECT_NE(std::find(r.query_lens.begin(), r.query_lens.end(), 2), r.query_lens.end());
    EXPECT_NE(std::find(r.query_lens.begin(), r.query_lens.end(), 4), r.query_lens.end());
  }
  ragged.query_len_max = 5;  // pa_fwd_asm's limit is 4
  EXPECT_EQ(run_decode_case(variant(ragged, "", "pa_fwd_asm", ""), reg, {}).v.status, Status::Unsupported);
}

Registry with_planted_readers() {
  Registry reg;
  reg.add_provider(kvh_planted_readers, "planted");
  return reg;
}

// fp8 caches (issue 11): the correct readers pass in both formats at every
// granularity, and each planted scale-indexing bug fails at its granularity
// (and only there: the bug is what the check sees, not the format).
TEST(DecodeCase, PlantedFp8ScaleBugsAreCaughtAtTheirGranularity) {
  Registry reg = with_planted_readers();
  Case c = decode_case(CaseKind::Attention, 128, 3, Scheme::Interleaved);
  c.num_heads = 8;
  c.num_kv_heads = 2;  // group 4: kv * group differs from kv; 2 kv heads x 16 slots swap visibly
  c.context_len_min = 40;
  c.context_len_max = 300;
  const std::pair<const char*, KvScales> planted[] = {{"planted_scale_head_by_query_head", KvScales::Head},
                                                      {"planted_scale_block_by_logical", KvScales::Block},
                                                      {"planted_scale_token_swapped", KvScales::Token},
                                                      {"planted_scale_dropped_on_v", KvScales::Tensor}};
  for (KvCacheDType kv : {KvCacheDType::Fp8E4m3fn, KvCacheDType::Fp8E4m3fnuz}) {
    c.kv_cache_dtype = kv;
    for (const auto& [name, gran] : planted) {
      c.kv_scales = gran;
      for (const char* good : {"paged_attention_rocm", "paged_attention_v1"}) {
        const CaseResult r = run_decode_case(variant(c, "", good, ""), reg, {});
        EXPECT_EQ(r.v.status, Status::Pass) << good << " " << to_string(gran) << ": " << r.v.detail;
      }
      const CaseResult bad = run_decode_case(variant(c, "", name, ""), reg, {});
      EXPECT_EQ(bad.v.status, Status::Fail) << name << ": " << bad.v.detail;
      EXPECT_EQ(bad.v.component, "reader") << name;
      EXPECT_TRUE(bad.v.reason == "mismatch" || bad.v.reason == "nan_or_inf") << name << ": " << bad.v.reason;
      // At another granularity the same reader is correct.
      c.kv_scales = gran == KvScales::Token ? KvScales::Head : KvScales::Token;
      const CaseResult other = run_decode_case(variant(c, "", name, ""), reg, {});
      EXPECT_EQ(other.v.status, Status::Pass) << name << " at " << to_string(c.kv_scales) << ": " << other.v.detail;
    }
  }
}

// The fixture that decodes e4m3fnuz as e4m3fn fails on fnuz caches, passes on fn ones.
TEST(DecodeCase, Fp8FnuzReadAsFnFixtureFailsOnFnuzOnly) {
  Registry reg;
  Case c = decode_case(CaseKind::Attention, 128, 3, Scheme::KvFirst);
  c.kv_scales = KvScales::Tensor;
  c.kv_cache_dtype = KvCacheDType::Fp8E4m3fnuz;
  const CaseResult bad = run_decode_case(variant(c, "", "fixture_fp8_fnuz_read_as_fn", ""), reg, {});
  EXPECT_EQ(bad.v.status, Status::Fail) << bad.v.detail;
  EXPECT_NE(bad.v.detail.find("seq "), std::string::npos) << bad.v.detail;  // names the first bad element
  c.kv_cache_dtype = KvCacheDType::Fp8E4m3fn;
  const CaseResult ok = run_decode_case(variant(c, "", "fixture_fp8_fnuz_read_as_fn", ""), reg, {});
  EXPECT_EQ(ok.v.status, Status::Pass) << ok.v.detail;
}

// Pipelines over fp8 caches: the quantizing writers agree with the reference codec byte for
// byte, and a reader that lacks the cache dtype is UNSUPPORTED when named, misrouted when routed.
TEST(DecodeCase, Fp8PipelinesPassAndCapabilitiesGate) {
  Registry reg;
  Case c = decode_case(CaseKind::Pipeline, 128, 3, Scheme::Padded);
  c.num_kv_heads = 2;
  c.num_heads = 8;
  c.kv_cache_dtype = KvCacheDType::Fp8E4m3fnuz;
  c.kv_scales = KvScales::Token;
  for (const auto& [w, rd] : {std::pair{"reshape_and_cache", "paged_attention_v1"},
                              {"reshape_and_cache_shuffle", "paged_attention_rocm"}}) {
    const CaseResult r = run_decode_case(variant(c, w, rd, ""), reg, {});
    EXPECT_EQ(r.v.status, Status::Pass) << w << ": " << r.v.detail;
  }
  // The fixture writer declares 16-bit caches only.
  const CaseResult u = run_decode_case(variant(c, "fixture_shuffle_contiguous", "paged_attention_rocm", ""), reg, {});
  EXPECT_EQ(u.v.status, Status::Unsupported) << u.v.detail;
  EXPECT_NE(u.v.detail.find("fp8_e4m3fnuz"), std::string::npos) << u.v.detail;
}

// int8 caches (issue 22): every built-in reader that declares int8 matches the reference's
// exact dequantization (code * scale in float64) at every granularity; the fixture that looks
// per-token scales up by sequence fails at TOKEN and SLOT only; the router's int8 rule sends
// head size 128 to pa_fwd_asm, which computes the right answer there.
TEST(DecodeCase, Int8ReadersMatchTheReferenceAndTheScalesPerSequenceFixtureFailsWhereDeclared) {
  Registry reg;
  Case c = decode_case(CaseKind::Attention, 128, 3, Scheme::Interleaved);
  c.num_heads = 8;
  c.num_kv_heads = 2;
  c.context_len_min = 40;
  c.context_len_max = 300;
  c.kv_cache_dtype = KvCacheDType::Int8;
  for (KvScales g : {KvScales::Tensor, KvScales::Head, KvScales::Block, KvScales::Token, KvScales::Slot}) {
    c.kv_scales = g;
    for (const char* good : {"paged_attention_rocm", "paged_attention_v1", "pa_fwd_asm"}) {
      const CaseResult r = run_decode_case(variant(c, "", good, ""), reg, {});
      EXPECT_EQ(r.v.status, Status::Pass) << good << " " << to_string(g) << ": " << r.v.detail;
    }
    const CaseResult f = run_decode_case(variant(c, "", "fixture_int8_scales_per_sequence", ""), reg, {});
    const bool per_token = g == KvScales::Token || g == KvScales::Slot;
    EXPECT_EQ(f.v.status, per_token ? Status::Fail : Status::Pass) << to_string(g) << ": " << f.v.detail;
    if (per_token) EXPECT_EQ(f.v.reason, "mismatch") << f.v.detail;
  }
  c.kv_scales = KvScales::Slot;
  const CaseResult routed = run_decode_case(variant(c, "", "", "aiter-v0.1.12"), reg, {});
  EXPECT_EQ(routed.v.status, Status::Pass) << routed.v.detail;
  EXPECT_EQ(routed.routed_to, "pa_fwd_asm") << routed.route_reason;
}

TEST(DecodeCase, PlantedReadersFailTheChecksTheCorrectReaderPasses) {
  Registry reg = with_planted_readers();
  Case c = decode_case(CaseKind::Attention, 128, 4, Scheme::Padded);
  c.num_heads = 8;
  c.num_kv_heads = 2;  // GQA ratio 4: h % 2 differs from h / 4
  c.context_len_min = 300;  // more than one partition, lengths not multiples of 256
  c.context_len_max = 700;
  EXPECT_EQ(run_decode_case(variant(c, "", "paged_attention_rocm", ""), reg, {}).v.status, Status::Pass);
  for (const char* planted : {"planted_drop_tail_partition", "planted_gqa_modulo"}) {
    CaseResult r = run_decode_case(variant(c, "", planted, ""), reg, {});
    EXPECT_EQ(r.v.status, Status::Fail) << planted;
    EXPECT_EQ(r.v.reason, "mismatch") << planted << ": " << r.v.detail;
  }
}

// No false alarm: random shapes, layouts, lengths and seeds; every case of
// the correct readers passes.
TEST(DecodeCase, ThousandRandomCasesOfTheCorrectReadersAllPass) {
  Registry reg;
  std::mt19937_64 rng(20261130);
  auto pick = [&](auto&& v) { return v[rng() % v.size()]; };
  const std::vector<Scheme> layouts{Scheme::Separate, Scheme::KvFirst, Scheme::Interleaved, Scheme::Padded,
                                    Scheme::Offset};
  const auto t0 = std::chrono::steady_clock::now();
  const bool cpu = device::info().backend == "cpu";  // a GPU has one wave size
  int failures = 0;
  for (int i = 0; i < 1000; ++i) {
    Case c;
    c.kind = CaseKind::Attention;
    c.model = "random";
    c.num_kv_heads = int64_t(pick(std::vector<int>{1, 1, 2, 4}));
    c.num_heads = c.num_kv_heads * int64_t(pick(std::vector<int>{1, 2, 4, 8}));
    c.head_size = 8 * int64_t(1 + rng() % 32);
    c.layout = pick(layouts);
    c.block_size = pick(std::vector<int64_t>{8, 16, 32, 48, 64, 544});
    c.batch_size = int64_t(1 + rng() % 6);
    c.context_len_min = int64_t(1 + rng() % 600);
    c.context_len_max = c.context_len_min + int64_t(rng() % 900);
    c.dtype = rng() % 2 ? DType::F16 : DType::BF16;
    c.reader = rng() % 2 ? "paged_attention_v1" : "paged_attention_rocm";
    c.stale = Stale(rng() % 3);                          // issue 11: NaN / Inf in the slots no sequence owns,
    c.block_table_padding = int64_t(rng() % 18) - 1;     // and every padding id: the correct readers never look
    c.seed = rng();
    if (cpu && i % 100 == 0) device::configure_host(i % 200 == 0 ? 32 : 64, true, c.seed);  // both wave sizes
    CaseResult r = run_decode_case(c, reg, {});
    if (r.v.status != Status::Pass && ++failures <= 5) ADD_FAILURE() << c.id() << ": " << r.v.reason << " " << r.v.detail;
  }
  if (cpu) device::configure_host(64, false, 1);
  EXPECT_EQ(failures, 0);
  std::printf("1000 random attention cases: %.1f s\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace
}  // namespace kvh
