// Issue 11 on the cpu backend: stale cache slots (the `stale` axis), the pages
// of out-of-range block-table padding ids, block_tables and context_lens in
// guarded arenas, the masking fixtures, and the large suite's memory estimate.
#include "case/stale.h"

#include <gtest/gtest.h>

#include <cmath>

#include "case/attention_case.h"
#include "device/device.h"
#include "case/device_cache.h"
#include "fp8.h"
#include "registry/kernel_desc.h"
#include "case/values.h"
#include "case/views.h"

extern "C" int kvh_paged_attention_rocm(const kvh_attention_args*, void*);
extern "C" uint64_t kvh_paged_attention_workspace_bytes(const kvh_attention_args*);
extern "C" const kvh_kernel_desc* kvh_planted_wide_readers(int32_t* count);

namespace kvh {
namespace {

TEST(Stale, PatternsAreTheDtypesNanAndInfAndNotTheOutputPoison) {
  for (DType d : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(to_string(d));
    EXPECT_FALSE(stale_bits(Stale::Random, d, false));
    for (bool v : {false, true}) {
      const uint16_t nan = *stale_bits(Stale::Nan, d, v);
      EXPECT_TRUE(std::isnan(decode16(d, nan)));
      EXPECT_NE(nan, d == DType::F16 ? 0x7E5A : 0x7FDA) << "the output poison of attention_case.cpp";
    }
    EXPECT_EQ(decode16(d, *stale_bits(Stale::Inf, d, false)), INFINITY);
    EXPECT_EQ(decode16(d, *stale_bits(Stale::Inf, d, true)), -INFINITY);
    EXPECT_TRUE(std::isnan(decode16(d, padding_page_bits(d))));
  }
}

// fill_cache with a stale pattern: every element the views own holds it, the rest the sentinel, as on the host.
TEST(Stale, FillCachePutsThePatternInEveryOwnedElementAndTheHostAgrees) {
  for (Scheme scheme : {Scheme::Padded, Scheme::KvFirst}) {
    SCOPED_TRACE(to_string(scheme));
    const CacheLayout L = *make_cache_layout(CacheFormat::Shuffle, scheme, {4, 16, 2, 64, 8, 2}).layout;
    DeviceArena dev(L.storage_elems, 512);
    dev.fill_cache(L, DType::F16, 42, Stale::Inf);
    const GuardedArena got = dev.download();
    ASSERT_TRUE(host_fill_cache(L, DType::F16, 42, 512, Stale::Inf).bytes() == got.bytes());
    ASSERT_FALSE(host_fill_cache(L, DType::F16, 42, 512, Stale::Nan).bytes() == got.bytes());
    ASSERT_FALSE(host_fill_cache(L, DType::F16, 42, 512).bytes() == got.bytes());
    for_each_offset(L.key, [&](int64_t off) { ASSERT_EQ(got.storage_as<uint16_t>()[off], 0x7C00); });
    for_each_offset(L.value, [&](int64_t off) { ASSERT_EQ(got.storage_as<uint16_t>()[off], 0xFC00); });
    EXPECT_EQ(got.bytes()[0], GuardedArena::sentinel(0)) << "margins keep the sentinel";
  }
}

// The pages of block -1 and num_blocks.. lie in the margins and get the bits; a page inside the storage
// (kv_first: V's block -1 is K's last block) is left alone; one past the arena is refused.
TEST(Stale, FillPagesWritesOnlyMarginPages) {
  const CacheLayout L = *make_cache_layout(CacheFormat::Shuffle, Scheme::KvFirst, {4, 16, 2, 64, 8, 2}).layout;
  const int64_t margin = 2 * 3 * L.block_stride;  // 3 blocks of elements on each side
  DeviceArena dev(L.storage_elems, margin);
  dev.fill_cache(L, DType::BF16, 1);
  const GuardedArena before = dev.download();
  dev.fill_pages(L, -1, 1, 0x7FE1);
  dev.fill_pages(L, 4, 2, 0x7FE1);
  const GuardedArena after = dev.download();
  int64_t changed_storage = 0, changed_margin = 0;
  for (int64_t e = -margin / 2; e < L.storage_elems + margin / 2; ++e)
    if (after.elem16(e) != before.elem16(e)) {
      ASSERT_EQ(after.elem16(e), 0x7FE1);
      ++(e >= 0 && e < L.storage_elems ? changed_storage : changed_margin);
    }
  EXPECT_EQ(changed_storage, 0) << "another view's pages are data";
  // K's page -1 (front margin), V's pages 4 and 5 (back margin); K's pages 4, 5 and V's -1 are in the storage.
  EXPECT_EQ(changed_margin, 3 * 16 * 2 * 64);
  EXPECT_THROW(dev.fill_pages(L, 4, 4, 0x7FE1), std::invalid_argument);
}

Case decode(const std::string& reader, Stale stale, int64_t padding, Scheme layout = Scheme::Interleaved) {
  Case c;
  c.kind = CaseKind::Attention;
  c.model = "test";
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_size = 64;
  c.layout = layout;
  c.block_size = 16;
  c.batch_size = 3;
  c.context_lens = {1, 37, 300};  // partial last pages
  c.context_len_min = 1;
  c.context_len_max = 300;
  c.dtype = DType::F16;
  c.reader = reader;
  c.stale = stale;
  c.block_table_padding = padding;
  c.seed = 3;
  return c;
}

// The real readers read only their sequences' tokens: PASS whatever the unwritten slots and the padding hold.
TEST(Stale, CorrectReadersPassOnNanAndInfCachesAndOutOfRangePadding) {
  const Registry reg;
  for (const char* reader : {"paged_attention_v1", "paged_attention_rocm"})
    for (Scheme layout : {Scheme::KvFirst, Scheme::Interleaved, Scheme::Padded})
      for (Stale st : {Stale::Nan, Stale::Inf})
        for (int64_t pad : {int64_t(-1), int64_t(0), kMaxPaddingK}) {
          const Case c = decode(reader, st, pad, layout);
          const CaseResult r = run_decode_case(c, reg, {});
          EXPECT_EQ(r.v.status, Status::Pass) << c.id() << ": " << r.v.detail;
        }
  // Block ids above 65,535 (small heads keep the 70,000 unused blocks at 36 MB).
  Case high = decode("paged_attention_rocm", Stale::Nan, 0);
  high.num_heads = high.num_kv_heads = 1;
  high.head_size = 8;
  high.min_block_id = 70000;
  const CaseResult hr = run_decode_case(high, reg, {});
  EXPECT_EQ(hr.v.status, Status::Pass) << hr.v.detail;
  Case pipe = decode("paged_attention_rocm", Stale::Nan, 3);
  pipe.kind = CaseKind::Pipeline;
  pipe.writer = "reshape_and_cache_shuffle";
  const CaseResult r = run_decode_case(pipe, reg, {});
  EXPECT_EQ(r.v.status, Status::Pass) << r.v.detail;
}

// fp8 caches (issue 11 item 4: "for fp8, the format's NaN code"): the stale byte is each format's NaN
// (neither has Inf), the device fill and the host remake put it in every owned byte, and the
// correct readers PASS on NaN-stale fp8 caches whose padding pages hold NaN codes too.
TEST(Stale, Fp8CachesHoldTheirFormatsNanAndCorrectReadersPass) {
  for (bool fnuz : {false, true}) {
    SCOPED_TRACE(fnuz ? "e4m3fnuz" : "e4m3fn");
    const auto fmt = fnuz ? reference::Fp8Format::E4M3FNUZ : reference::Fp8Format::E4M3FN;
    EXPECT_FALSE(stale_code8(Stale::Random, fnuz, false));
    for (Stale st : {Stale::Nan, Stale::Inf})
      for (bool v : {false, true}) EXPECT_TRUE(std::isnan(reference::fp8_decode(*stale_code8(st, fnuz, v), fmt)));
    EXPECT_TRUE(std::isnan(reference::fp8_decode(padding_page_code8(fnuz), fmt)));
    const KvCacheDType kv = fnuz ? KvCacheDType::Fp8E4m3fnuz : KvCacheDType::Fp8E4m3fn;
    const CacheLayout L = *make_cache_layout(CacheFormat::Shuffle, Scheme::Padded, {4, 16, 2, 64, 16, 1}).layout;
    DeviceArena dev(L.storage_elems, 512, 1);
    dev.fill_cache(L, DType::BF16, 42, Stale::Nan, kv);
    const GuardedArena got = dev.download();
    ASSERT_TRUE(host_fill_cache(L, DType::BF16, 42, 512, Stale::Nan, kv).bytes() == got.bytes());
    ASSERT_FALSE(host_fill_cache(L, DType::BF16, 42, 512, Stale::Random, kv).bytes() == got.bytes());
    for_each_offset(L.key, [&](int64_t off) { ASSERT_EQ(got.storage()[off], *stale_code8(Stale::Nan, fnuz, false)); });
    for_each_offset(L.value, [&](int64_t off) { ASSERT_EQ(got.storage()[off], *stale_code8(Stale::Nan, fnuz, true)); });
    const Registry reg;
    for (const char* reader : {"paged_attention_v1", "paged_attention_rocm"})
      for (int64_t pad : {int64_t(-1), int64_t(3)}) {
        Case c = decode(reader, Stale::Nan, pad);
        c.kv_cache_dtype = kv;
        c.kv_scales = KvScales::Block;
        const CaseResult r = run_decode_case(c, reg, {});
        EXPECT_EQ(r.v.status, Status::Pass) << c.id() << ": " << r.v.detail;
      }
  }
}

// int8 caches (issue 22): no NaN or Inf, so every stale pattern is -128, the code no writer
// writes; the random old codes never are -128; device and host fills agree; the correct readers pass.
TEST(Stale, Int8CachesHoldMinus128AndCorrectReadersPass) {
  const KvCacheDType kv = KvCacheDType::Int8;
  EXPECT_FALSE(stale_code8(Stale::Random, kv, false));
  for (Stale st : {Stale::Nan, Stale::Inf})
    for (bool v : {false, true}) EXPECT_EQ(*stale_code8(st, kv, v), 0x80);
  EXPECT_EQ(padding_page_code8(kv), 0x80);
  const CacheLayout L = *make_cache_layout(CacheFormat::Shuffle, Scheme::Padded, {4, 16, 2, 64, 16, 1}).layout;
  DeviceArena dev(L.storage_elems, 512, 1);
  dev.fill_cache(L, DType::BF16, 42, Stale::Nan, kv);
  const GuardedArena got = dev.download();
  ASSERT_TRUE(host_fill_cache(L, DType::BF16, 42, 512, Stale::Nan, kv).bytes() == got.bytes());
  for_each_offset(L.key, [&](int64_t off) { ASSERT_EQ(got.storage()[off], 0x80); });
  dev.fill_cache(L, DType::BF16, 42, Stale::Random, kv);
  const GuardedArena old = dev.download();
  ASSERT_TRUE(host_fill_cache(L, DType::BF16, 42, 512, Stale::Random, kv).bytes() == old.bytes());
  int64_t distinct = 0;
  for_each_offset(L.value, [&](int64_t off) {
    ASSERT_NE(old.storage()[off], 0x80);
    distinct += old.storage()[off] != old.storage()[L.value.offset];
  });
  EXPECT_GT(distinct, 0);
  const Registry reg;
  for (const char* reader : {"paged_attention_v1", "paged_attention_rocm"})
    for (int64_t pad : {int64_t(-1), int64_t(3)}) {
      Case c = decode(reader, Stale::Nan, pad);
      c.kv_cache_dtype = kv;
      c.kv_scales = KvScales::Slot;
      const CaseResult r = run_decode_case(c, reg, {});
      EXPECT_EQ(r.v.status, Status::Pass) << c.id() << ": " << r.v.detail;
    }
}

// fixture_mask_by_zero: right on finite stale slots, nan_or_inf once they hold NaN or Inf (NaN * 0, Inf * 0).
TEST(Stale, MaskingByZeroLetsNanAndInfThrough) {
  const Registry reg;
  EXPECT_EQ(run_decode_case(decode("fixture_mask_by_zero", Stale::Random, -1), reg, {}).v.status, Status::Pass);
  for (Stale st : {Stale::Nan, Stale::Inf}) {
    const CaseResult r = run_decode_case(decode("fixture_mask_by_zero", st, -1), reg, {});
    EXPECT_EQ(r.v.status, Status::Fail);
    EXPECT_EQ(r.v.reason, "nan_or_inf") << r.v.detail;
    EXPECT_NE(r.v.detail.find("first NaN/Inf at seq 0"), std::string::npos) << "the 1-token sequence: " << r.v.detail;
  }
  // Sequences that fill their last page leave no stale slot for it to read: PASS even on NaN.
  Case full = decode("fixture_mask_by_zero", Stale::Nan, -1);
  full.context_lens = {16, 64, 320};
  EXPECT_EQ(run_decode_case(full, reg, {}).v.status, Status::Pass);
}

// fixture_prefetch_past_last_page reads the padding entry and its page: FAIL on any stale pattern, either padding.
TEST(Stale, ReadingThePaddingPageFails) {
  const Registry reg;
  for (int64_t pad : {int64_t(-1), int64_t(5)})
    for (Scheme layout : {Scheme::KvFirst, Scheme::Interleaved}) {
      Case c = decode("fixture_prefetch_past_last_page", Stale::Random, pad, layout);
      c.context_lens = {16, 64, 320};  // full last pages: only the padding page can hurt
      const CaseResult r = run_decode_case(c, reg, {});
      EXPECT_EQ(r.v.status, Status::Fail) << c.id();
      EXPECT_EQ(r.v.reason, "nan_or_inf") << c.id() << ": " << r.v.detail;
    }
}

// A reader that writes into block_tables' or context_lens's guard margins (or their storage) is out_of_view.
int writes_block_tables(const kvh_attention_args* a, void* stream) {
  const int rc = kvh_paged_attention_rocm(a, stream);
  static_cast<int32_t*>(a->block_tables.data)[a->block_tables.shape[0] * a->block_tables.shape[1]] = 0;
  return rc;
}
int writes_context_lens(const kvh_attention_args* a, void* stream) {
  const int rc = kvh_paged_attention_rocm(a, stream);
  static_cast<int32_t*>(a->context_lens.data)[-1] = 1;
  return rc;
}
const kvh_kernel_desc kScribblers[] = {
    kernels::reader_desc<writes_block_tables>("planted_writes_block_tables", "writes past block_tables", KVH_CACHE_SHUFFLE, 1,
                                              kernels::workspace_entry<kvh_paged_attention_workspace_bytes>),
    kernels::reader_desc<writes_context_lens>("planted_writes_context_lens", "writes before context_lens", KVH_CACHE_SHUFFLE,
                                              1, kernels::workspace_entry<kvh_paged_attention_workspace_bytes>),
};
const kvh_kernel_desc* scribblers(int32_t* n) {
  *n = 2;
  return kScribblers;
}

TEST(Stale, WritesIntoBlockTablesOrContextLensAreOutOfView) {
  if (device::info().backend != "cpu") GTEST_SKIP() << "the scribblers write device memory from the host";
  Registry reg;
  reg.add_provider(scribblers, "test");
  for (const auto& [reader, what] : {std::pair{"planted_writes_block_tables", "wrote past block_tables (byte 1 after"},
                                     {"planted_writes_context_lens", "wrote before context_lens (byte 4 before"}}) {
    const CaseResult r = run_decode_case(decode(reader, Stale::Random, -1), reg, {});
    EXPECT_EQ(r.v.status, Status::Fail) << reader;
    EXPECT_EQ(r.v.reason, "out_of_view_write") << r.v.detail;
    EXPECT_NE(r.v.detail.find(what), std::string::npos) << r.v.detail;
  }
}

// The planted 32-bit-offset reader is otherwise correct: below 2^31 elements it passes (the large suite is where it fails).
TEST(Stale, PlantedInt32OffsetReaderPassesBelowTwoToThe31) {
  Registry reg;
  reg.add_provider(kvh_planted_wide_readers, "planted");
  const CaseResult r = run_decode_case(decode("planted_int32_offset", Stale::Nan, 2), reg, {});
  EXPECT_EQ(r.v.status, Status::Pass) << r.v.detail;
}

TEST(Stale, MemoryEstimateOfTheLargeReaderSuiteAndTheRefusal) {
  Case c = decode("paged_attention_rocm", Stale::Nan, -1, Scheme::KvFirst);
  c.num_heads = 8;
  c.num_kv_heads = 1;
  c.head_size = 128;
  c.batch_size = 4;
  c.context_lens.clear();
  c.context_len_max = 700;
  c.min_block_id = 1100000;
  const MemoryEstimate e = estimate_decode_memory(c, KVH_CACHE_SHUFFLE);
  // Cache and snapshot are sparse arenas (issue 23, 2 x 2 views x 1,100,199 blocks x 2,048 elements x
  // 2 bytes = 18 GB of addresses): each backs its 176 used pages of 2,048 elements in each view
  // (at most a block stride each, plus 16 MiB of granules) and its margins.
  const int64_t pages = int64_t(2) * 2 * 176 * 2048 * 2;
  EXPECT_GE(e.device_bytes, pages);
  EXPECT_LT(e.device_bytes, int64_t(64) << 20);
  EXPECT_LT(e.host_bytes, int64_t(1) << 30);
  const uint64_t mib = uint64_t(1) << 20, gib = uint64_t(1) << 30;
  EXPECT_EQ(memory_refusal(e, true, 0, 8 * gib), "");
  const std::string cpu = memory_refusal(e, true, 0, 4 * mib);
  EXPECT_NE(cpu.find(" MiB of host memory"), std::string::npos) << cpu;
  EXPECT_NE(cpu.find("4.0 MiB available"), std::string::npos) << cpu;
  EXPECT_EQ(memory_refusal(e, false, 141 * gib, 1 * gib), "");
  const std::string gpu = memory_refusal(e, false, 16 * mib, 1 * gib);
  EXPECT_NE(gpu.find(" MiB of device memory; the device has 16.0 MiB"), std::string::npos) << gpu;
  // Above a GiB the message counts GiB.
  EXPECT_NE(memory_refusal({int64_t(17) << 30, 0}, false, 16 * gib, gib).find("needs 17.0 GiB of device memory; "
                                                                            "the device has 16.0 GiB"),
            std::string::npos);
  // A small case's estimate covers what it allocates: the device bytes live while it runs stay below it.
  const Case small = decode("paged_attention_rocm", Stale::Nan, 3);
  const MemoryEstimate s = estimate_decode_memory(small, KVH_CACHE_SHUFFLE);
  EXPECT_GT(s.device_bytes, 0);
  EXPECT_GT(s.host_bytes, 0);
}

}  // namespace
}  // namespace kvh
