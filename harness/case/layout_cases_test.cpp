// The issue-12 layouts end to end on the cpu backend: what a reader is handed
// under kernel_pages and degenerate_strides (a recording reader), correct
// writers and readers passing random cases over the new layouts and formats,
// and the kernel-page fixture failing only where a manager block holds
// several kernel pages.
#include <gtest/gtest.h>

#include <random>

#include "case/attention_case.h"
#include "case/write_case.h"
#include "device/device.h"

namespace kvh {
namespace {

// What the recording reader saw on its last call.
struct Seen {
  kvh_attention_args args{};
  std::vector<int32_t> tables;
  std::vector<int32_t> context_lens;  // copied during the call: the buffer is freed when the case ends
  int calls = 0;
};
Seen g_seen;

int recording_reader(void*, const kvh_attention_args* a, void*) {
  g_seen.args = *a;
  g_seen.calls++;
  const auto* bt = static_cast<const int32_t*>(a->block_tables.data);
  g_seen.tables.assign(bt, bt + a->block_tables.shape[0] * a->block_tables.shape[1]);  // cpu: host memory
  const auto* cl = static_cast<const int32_t*>(a->context_lens.data);
  g_seen.context_lens.assign(cl, cl + a->context_lens.shape[0]);
  return 1;  // refuse: the case is FAIL launch_error, and the args are recorded
}

Registry with_recorder() {
  Registry reg;
  kvh_kernel_desc d{};
  d.abi_version = KVH_ABI_VERSION;
  d.name = "recording_nhd_reader";
  d.role = KVH_ROLE_READER;
  d.cache_format = KVH_CACHE_NHD;
  d.attention = recording_reader;
  reg.add(d, "test");
  return reg;
}

Case attention(Scheme layout, const std::string& reader) {
  Case c;
  c.kind = CaseKind::Attention;
  c.model = "test";
  c.num_heads = 4, c.num_kv_heads = 1, c.head_size = 64;
  c.layout = layout;
  c.block_size = 16;
  c.batch_size = 3;
  c.context_len_min = 1, c.context_len_max = 300;
  c.dtype = DType::F16;
  c.reader = reader;
  c.seed = 3;
  return c;
}

TEST(LayoutCases, KernelPagesHandTheReaderPageTablesAndTheManagerBlock) {
  if (device::info().backend != "cpu") GTEST_SKIP() << "the recording reader reads device memory from the host";
  Registry reg = with_recorder();
  Case c = attention(Scheme::KernelPages, "recording_nhd_reader");
  c.block_size = 64, c.kernel_block_size = 16;
  g_seen = {};
  const CaseResult r = run_decode_case(c, reg, {});
  ASSERT_EQ(g_seen.calls, 1) << r.v.detail;
  const kvh_attention_args& a = g_seen.args;
  EXPECT_EQ(a.block_size, 16);
  EXPECT_EQ(a.cache_block_size, 64);
  EXPECT_EQ(a.key_cache.shape[1], 16) << "the cache view is in kernel pages";
  // 300 tokens: 5 manager blocks and a padding block (every row has one), 24 kernel pages a row; each
  // block's 4 pages are consecutive. Padding entries stay out of range in kernel pages: -1, or
  // num_pages + K (num_pages = key_cache.shape[0]) with block_table_padding num_blocks+K.
  for (int64_t padding : {int64_t(-1), int64_t(3)}) {
    c.block_table_padding = padding;
    g_seen = {};
    run_decode_case(c, reg, {});
    ASSERT_EQ(g_seen.calls, 1);
    ASSERT_EQ(g_seen.args.block_tables.shape[1], 24);
    const int64_t num_pages = g_seen.args.key_cache.shape[0];
    const int32_t padding_id = padding < 0 ? -1 : int32_t(num_pages + padding);
    const std::vector<int32_t>& lens = g_seen.context_lens;
    for (int64_t s = 0; s < 3; ++s) {
      const int64_t real = (lens[s] + 63) / 64 * 4;
      for (int64_t j = 0; j < 24; ++j) {
        const int32_t page = g_seen.tables[size_t(s * 24 + j)];
        if (j >= real) {
          EXPECT_EQ(page, padding_id) << "seq " << s << " page " << j << " padding " << padding;
          continue;
        }
        EXPECT_TRUE(page >= 0 && page < num_pages) << "seq " << s << " page " << j;
        EXPECT_EQ(page % 4, j % 4) << "seq " << s << " page " << j;
        if (j % 4) EXPECT_EQ(page, g_seen.tables[size_t(s * 24 + j - 1)] + 1);
      }
    }
  }
  c.block_table_padding = -1;
  c.layout = Scheme::KvFirst;  // no kernel pages: cache_block_size stays 0
  run_decode_case(c, reg, {});
  EXPECT_EQ(g_seen.args.cache_block_size, 0);
  EXPECT_EQ(g_seen.args.block_size, 64);
}

TEST(LayoutCases, DegenerateStridesReachTheQueryAndCacheViews) {
  if (device::info().backend != "cpu") GTEST_SKIP() << "the recording reader reads device memory from the host";
  Registry reg = with_recorder();
  Case c = attention(Scheme::DegenerateStrides, "recording_nhd_reader");
  c.batch_size = 1;  // the query's dim 0 is size 1 too
  for (int64_t s : {int64_t(0), int64_t(1), kDegenerateLargeStride}) {
    c.degenerate_stride = s;
    g_seen = {};
    run_decode_case(c, reg, {});
    ASSERT_EQ(g_seen.calls, 1);
    EXPECT_EQ(g_seen.args.key_cache.stride[2], s) << "kv head dim of the NHD cache";
    EXPECT_EQ(g_seen.args.value_cache.stride[2], s);
    EXPECT_EQ(g_seen.args.query.stride[0], s) << "num_seqs 1";
    EXPECT_EQ(g_seen.args.query.stride[1], 64) << "not a size-1 dim";
  }
}

// No false alarm over the new layouts and formats, writers and readers alike.
TEST(LayoutCases, RandomCasesOfTheCorrectKernelsAllPass) {
  Registry reg;
  std::mt19937_64 rng(1212);
  auto pick = [&](auto&& v) { return v[rng() % v.size()]; };
  struct Pair {
    const char *writer, *reader;
  };
  const std::vector<Pair> pairs{{"reshape_and_cache_flash", "paged_attention_nhd"},
                                {"reshape_and_cache_flash_hnd", "paged_attention_hnd"},
                                {"reshape_and_cache", "paged_attention_v1"},
                                {"reshape_and_cache_shuffle", "paged_attention_rocm"}};
  int failures = 0, ran = 0;
  for (int i = 0; i < 200; ++i) {
    const Pair p = pick(pairs);
    Case c;
    c.kind = pick(std::vector<CaseKind>{CaseKind::Attention, CaseKind::Pipeline, CaseKind::Write});
    c.model = "random";
    c.num_kv_heads = pick(std::vector<int64_t>{1, 1, 2, 4});
    c.num_heads = c.num_kv_heads * pick(std::vector<int64_t>{1, 4, 16});
    c.head_size = pick(std::vector<int64_t>{64, 128, 256});
    c.layout = pick(std::vector<Scheme>{Scheme::HeadInterleaved, Scheme::DegenerateStrides, Scheme::KernelPages});
    c.block_size = pick(std::vector<int64_t>{16, 32, 64});
    if (c.layout == Scheme::DegenerateStrides) {
      c.degenerate_stride = pick(std::vector<int64_t>{0, 1, kDegenerateLargeStride});
      if (rng() % 3 == 0) c.num_kv_heads = 1, c.num_heads = pick(std::vector<int64_t>{1, 4});
      // The size-1 dim: one kv head, or block_size 1 (not for the shuffled V, which needs block_size % 8 == 0).
      if (c.num_kv_heads != 1 && std::string(p.reader) == "paged_attention_rocm") c.num_kv_heads = 1, c.num_heads = 4;
      if (c.num_kv_heads != 1) c.block_size = 1;
    }
    if (c.layout == Scheme::KernelPages) c.kernel_block_size = c.block_size, c.block_size *= pick(std::vector<int64_t>{2, 34});
    c.batch_size = int64_t(1 + rng() % 5);
    c.context_len_min = int64_t(1 + rng() % 400);
    c.context_len_max = c.context_len_min + int64_t(rng() % 700);
    c.dtype = rng() % 2 ? DType::F16 : DType::BF16;
    c.writer = c.kind == CaseKind::Attention ? "" : p.writer;
    c.reader = c.kind == CaseKind::Write ? "" : p.reader;
    c.seed = rng();
    const CaseResult r = c.kind == CaseKind::Write ? run_write_case(c, reg) : run_decode_case(c, reg, {});
    if (r.v.status == Status::Unsupported) continue;  // e.g. head_interleaved of the flash cache
    ++ran;
    if (r.v.status != Status::Pass && ++failures <= 5) ADD_FAILURE() << c.id() << ": " << r.v.reason << " " << r.v.detail;
  }
  EXPECT_EQ(failures, 0);
  EXPECT_GT(ran, 150);
}

TEST(LayoutCases, KernelPageFixtureFailsOnlyWhenABlockHoldsSeveralPages) {
  Registry reg;
  Case c = attention(Scheme::KvFirst, "fixture_paged_attention_nhd_manager_pages");
  EXPECT_EQ(run_decode_case(c, reg, {}).v.status, Status::Pass);
  c.layout = Scheme::KernelPages, c.block_size = 64, c.kernel_block_size = 16;
  const CaseResult r = run_decode_case(c, reg, {});
  EXPECT_EQ(r.v.status, Status::Fail);
  EXPECT_EQ(r.v.component, "reader") << r.v.detail;
  c.kernel_block_size = 64;  // one page a block: the bug cannot bite
  EXPECT_EQ(run_decode_case(c, reg, {}).v.status, Status::Pass);
}

}  // namespace
}  // namespace kvh
