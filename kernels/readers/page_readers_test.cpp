// paged_attention_nhd and paged_attention_hnd (the split-K kernel of
// paged_attention.h with the NHD/HND addressing policies) against
// reference/attention on every layout their caches have, the kernel-page
// fixture, and the planted layout bugs (testing/planted_readers.hip), each
// shown to fail where its bug bites and to pass where it cannot.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kvh_runtime.h"
#include "testing/attention_check.h"

namespace kvh::testing {
namespace {

struct LayoutCase {
  std::string name;
  AttentionCase c;
};
void PrintTo(const LayoutCase& n, std::ostream* os) { *os << n.name; }

// Layouts of one format: every scheme the format has, with shapes that make
// each one differ from the dense cache (GQA 4, block 16, a partition edge).
std::vector<LayoutCase> layout_cases(kvh_cache_format format) {
  std::vector<LayoutCase> v;
  auto base = [&] {
    AttentionCase c;
    c.format = format;
    c.num_heads = 8, c.num_kv_heads = 2, c.head_size = 64, c.block_size = 16;
    c.context_lens = {1, 17, 255, 257, 600};
    c.wave_size = 32;
    return c;
  };
  for (Scheme s : {Scheme::Separate, Scheme::KvFirst, Scheme::Interleaved, Scheme::Padded, Scheme::Offset}) {
    AttentionCase c = base();
    c.scheme = s;
    v.push_back({to_string(s), c});
  }
  if (format == KVH_CACHE_NHD) {
    AttentionCase c = base();
    c.scheme = Scheme::Packed;
    v.push_back({"packed", c});
  } else {
    AttentionCase c = base();
    c.scheme = Scheme::HeadInterleaved;
    v.push_back({"head_interleaved", c});
  }
  for (int64_t stride : {int64_t(0), int64_t(1), kDegenerateLargeStride}) {
    AttentionCase c = base();
    c.scheme = Scheme::DegenerateStrides, c.degenerate_stride = stride;
    c.num_heads = 4, c.num_kv_heads = 1;  // one kv head per rank (tp=8): the size-1 dim
    v.push_back({"degenerate_strides_" + std::to_string(stride), c});
    c.context_lens = {300};  // one sequence: the query's dim 0 is size 1 too
    v.push_back({"degenerate_strides_one_seq_" + std::to_string(stride), c});
  }
  {
    AttentionCase c = base();
    c.scheme = Scheme::KernelPages, c.block_size = 64, c.kernel_block_size = 16;
    v.push_back({"kernel_pages_64_16", c});
    c.dtype = KVH_DT_BF16, c.block_size = 544, c.kernel_block_size = 16;  // a hybrid model's manager block
    v.push_back({"kernel_pages_544_16_bf16", c});
  }
  return v;
}

class NhdLayouts : public ::testing::TestWithParam<LayoutCase> {};
class HndLayouts : public ::testing::TestWithParam<LayoutCase> {};

TEST_P(NhdLayouts, MatchesReference) {
  const AttentionResult r = run_attention_case(builtin_reader("paged_attention_nhd"), GetParam().c);
  EXPECT_TRUE(r.passed()) << GetParam().c.str() << ": " << r.str();
}
TEST_P(HndLayouts, MatchesReference) {
  const AttentionResult r = run_attention_case(builtin_reader("paged_attention_hnd"), GetParam().c);
  EXPECT_TRUE(r.passed()) << GetParam().c.str() << ": " << r.str();
}
auto case_name = [](const auto& info) { return info.param.name; };
INSTANTIATE_TEST_SUITE_P(Layouts, NhdLayouts, ::testing::ValuesIn(layout_cases(KVH_CACHE_NHD)), case_name);
INSTANTIATE_TEST_SUITE_P(Layouts, HndLayouts, ::testing::ValuesIn(layout_cases(KVH_CACHE_HND)), case_name);

TEST(PageReaders, GqaDtypesHeadSizesAndPartitions) {
  for (const char* reader : {"paged_attention_nhd", "paged_attention_hnd"})
    for (int d : {8, 80, 128, 256}) {
      AttentionCase c;
      c.format = builtin_reader(reader).cache_format == KVH_CACHE_NHD ? KVH_CACHE_NHD : KVH_CACHE_HND;
      c.dtype = d == 80 ? KVH_DT_BF16 : KVH_DT_F16;
      c.head_size = d, c.num_heads = 16, c.num_kv_heads = d == 256 ? 16 : 1;  // MHA and GQA 16
      c.context_lens = {1, 300, 513};
      c.partition_size = d == 128 ? 64 : 0;
      c.scheme = Scheme::KvFirst;
      const AttentionResult r = run_attention_case(builtin_reader(reader), c);
      EXPECT_TRUE(r.passed()) << reader << " " << c.str() << ": " << r.str();
    }
}

TEST(PageReaders, DeclareBlockSizesDtypesAndGqa) {
  for (const char* name : {"paged_attention_nhd", "paged_attention_hnd", "fixture_paged_attention_nhd_manager_pages"}) {
    const Kernel& k = builtin_reader(name);
    KernelUse u;
    u.head_size = 128, u.block_size = 16, u.num_heads = 16, u.num_kv_heads = 1, u.cache_format = k.cache_format;
    EXPECT_EQ(k.outside_capabilities(u), "") << name;
    u.block_size = 544;  // a hybrid manager block: only as kernel pages
    EXPECT_NE(k.outside_capabilities(u).find("declares block_size 1, 8, 16, 32, 64, 128, 256 only"), std::string::npos)
        << k.outside_capabilities(u);
    u.block_size = 16, u.num_heads = 32;
    EXPECT_NE(k.outside_capabilities(u).find("GQA ratio of at most 16"), std::string::npos) << name;
    u.num_heads = 16, u.dtype = KVH_DT_F32;
    EXPECT_NE(k.outside_capabilities(u).find("declares dtype fp16, bf16 only"), std::string::npos) << name;
  }
}

// Each mutation must be refused with hipErrorInvalidValue before any launch.
TEST(PageReaders, RejectBadArgumentsWithoutLaunching) {
  struct Mutation {
    const char* what;
    void (*apply)(kvh_attention_args&);
  };
  const Mutation mutations[] = {
      {"key_cache rank 5", [](kvh_attention_args& a) { a.key_cache.ndim = 5; }},
      {"block_size read from the head dim", [](kvh_attention_args& a) { a.block_size = a.key_cache.shape[1]; }},
      {"V head_size differs", [](kvh_attention_args& a) { a.value_cache.shape[3] = 32; }},
      {"V block_size differs", [](kvh_attention_args& a) { a.value_cache.shape[2] = 8; }},
      {"head_size 60 not a multiple of 8",
       [](kvh_attention_args& a) { a.query.shape[2] = a.out.shape[2] = a.key_cache.shape[3] = a.value_cache.shape[3] = 60; }},
      {"cache_block_size not a multiple of block_size", [](kvh_attention_args& a) { a.cache_block_size = 24; }},
      {"cache_block_size negative", [](kvh_attention_args& a) { a.cache_block_size = -16; }},
  };
  const Kernel& reader = builtin_reader("paged_attention_hnd");
  AttentionCase c;
  c.format = KVH_CACHE_HND, c.num_heads = 8, c.num_kv_heads = 2, c.head_size = 64, c.context_lens = {1, 100};
  AttentionArgsFixture fx = make_attention_args(c);
  const std::vector<uint16_t> poisoned = fx.out;
  for (const auto& m : mutations) {
    kvh_attention_args a = fx.args;
    m.apply(a);
    EXPECT_EQ(reader.attention(&a, nullptr), hipErrorInvalidValue) << m.what;
    EXPECT_EQ(fx.out, poisoned) << m.what << ": out changed";
  }
  kvh_attention_args a = fx.args;
  a.cache_block_size = 64;  // a manager block of 4 pages: valid
  EXPECT_EQ(reader.attention(&a, nullptr), hipSuccess);
  EXPECT_EQ(reader.attention(&fx.args, nullptr), hipSuccess) << "the unmutated arguments are valid";
}

// The registered kernel-page fixture: wrong exactly when a manager block holds
// several kernel pages and a sequence outgrows one page.
TEST(KernelPageFixture, FailsOnKernelPagesOnly) {
  const Kernel& fixture = builtin_reader("fixture_paged_attention_nhd_manager_pages");
  EXPECT_TRUE(fixture.fixture);
  AttentionCase c;
  c.format = KVH_CACHE_NHD, c.num_heads = 8, c.num_kv_heads = 2, c.head_size = 64;
  c.context_lens = {1, 40, 300};
  c.scheme = Scheme::KvFirst;
  EXPECT_TRUE(run_attention_case(fixture, c).passed()) << "no manager block: the bug cannot bite";
  c.scheme = Scheme::KernelPages, c.block_size = 64, c.kernel_block_size = 16;
  const AttentionResult bad = run_attention_case(fixture, c);
  EXPECT_EQ(bad.rc, 0);
  EXPECT_FALSE(bad.passed()) << c.str() << ": " << bad.str();
  EXPECT_TRUE(run_attention_case(builtin_reader("paged_attention_nhd"), c).passed());
  c.context_lens = {1, 9, 16};  // every sequence within its first kernel page
  EXPECT_TRUE(run_attention_case(fixture, c).passed()) << c.str();
}

void expect_planted_fails(const char* planted, const char* correct, const AttentionCase& c) {
  const AttentionResult good = run_attention_case(builtin_reader(correct), c);
  EXPECT_TRUE(good.passed()) << correct << " " << c.str() << ": " << good.str();
  const AttentionResult bad = run_attention_case(planted_reader(planted), c);
  EXPECT_EQ(bad.rc, 0) << planted;
  EXPECT_FALSE(bad.passed()) << planted << " " << c.str() << ": " << bad.str();
}

TEST(PlantedLayoutReaders, HndBlockSizeFromDim1FailsUnlessHeadsEqualBlockSize) {
  AttentionCase c;
  c.format = KVH_CACHE_HND, c.num_heads = 8, c.num_kv_heads = 8, c.head_size = 64, c.block_size = 4;
  c.context_lens = {1, 30, 70};
  expect_planted_fails("planted_hnd_block_size_from_dim1", "paged_attention_hnd", c);
  c.block_size = 8;  // num_kv_heads == block_size: shape[1] happens to be right
  EXPECT_TRUE(run_attention_case(planted_reader("planted_hnd_block_size_from_dim1"), c).passed()) << c.str();
}

TEST(PlantedLayoutReaders, HndDenseHeadStrideFailsOnHeadInterleavedOnly) {
  AttentionCase c;
  c.format = KVH_CACHE_HND, c.num_heads = 8, c.num_kv_heads = 2, c.head_size = 64, c.context_lens = {1, 40, 300};
  c.scheme = Scheme::HeadInterleaved;
  expect_planted_fails("planted_hnd_dense_head_stride", "paged_attention_hnd", c);
  for (Scheme s : {Scheme::KvFirst, Scheme::Interleaved, Scheme::Padded}) {
    c.scheme = s;
    EXPECT_TRUE(run_attention_case(planted_reader("planted_hnd_dense_head_stride"), c).passed()) << c.str();
  }
}

// Strides 0 and 1 here; the large one makes the planted kernel read 2^31
// elements away (the harness suites show that one as a CRASH).
TEST(PlantedLayoutReaders, NhdTokenStrideFromHeadsFailsOnDegenerateStrides) {
  AttentionCase c;
  c.format = KVH_CACHE_NHD, c.num_heads = 4, c.num_kv_heads = 1, c.head_size = 64, c.context_lens = {1, 40, 300};
  for (int64_t stride : {0, 1}) {
    c.scheme = Scheme::DegenerateStrides, c.degenerate_stride = stride;
    expect_planted_fails("planted_nhd_token_stride_from_heads", "paged_attention_nhd", c);
  }
  for (Scheme s : {Scheme::KvFirst, Scheme::Interleaved, Scheme::Offset}) {  // canonical strides
    c.scheme = s;
    EXPECT_TRUE(run_attention_case(planted_reader("planted_nhd_token_stride_from_heads"), c).passed()) << c.str();
  }
}

}  // namespace
}  // namespace kvh::testing
