// Case-file keys of the issue-12 layouts: kernel_pages with kernel_block_size,
// the degenerate_strides axis, and the ids that tell their cases apart.
#include <gtest/gtest.h>

#include <set>

#include "case_file.h"
#include "case_file_test_util.h"

namespace kvh {
namespace {

using testing::expect_error;

const char* kHead = R"(
[[attention]]
models = ["Qwen3.5-397B-A17B"]
tp = 8
head_sizes = [128]
batch_sizes = [2]
context_lens = [1, 300]
dtypes = ["bf16"]
readers = ["paged_attention_nhd"]
)";

TEST(CaseFileLayouts, KernelPagesTakeTheKernelBlockSizeAndNameItInTheId) {
  const auto cases = parse_case_text(std::string(kHead) + "layouts = [\"kv_first\", \"kernel_pages\"]\n"
                                                          "kernel_block_size = 16\nblock_sizes = [64, 544]\n",
                                     "k.toml");
  ASSERT_EQ(cases.size(), 4u);
  EXPECT_EQ(cases[0].layout, Scheme::KvFirst);
  EXPECT_EQ(cases[0].kernel_block_size, 0);  // only kernel_pages cases carry it
  EXPECT_EQ(cases[0].page_size(), 64);
  const Case& k = cases[2];
  EXPECT_EQ(k.layout, Scheme::KernelPages);
  EXPECT_EQ(k.block_size, 64);
  EXPECT_EQ(k.kernel_block_size, 16);
  EXPECT_EQ(k.page_size(), 16);
  EXPECT_NE(k.id().find("/kernel_pages-k16/bs64/"), std::string::npos) << k.id();
}

TEST(CaseFileLayouts, DegenerateStridesExpandToOneCasePerStride) {
  const auto all = parse_case_text(std::string(kHead) + "layouts = [\"degenerate_strides\"]\nblock_sizes = [16]\n", "d.toml");
  ASSERT_EQ(all.size(), 3u);  // default: 0, 1 and the large stride
  std::set<int64_t> strides;
  std::set<std::string> ids;
  for (const Case& c : all) strides.insert(c.degenerate_stride), ids.insert(c.id());
  EXPECT_EQ(strides, (std::set<int64_t>{0, 1, kDegenerateLargeStride}));
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_NE(all[0].id().find("/degenerate_strides-s0/"), std::string::npos) << all[0].id();
  const auto one = parse_case_text(std::string(kHead) + "layouts = [\"degenerate_strides\", \"kv_first\"]\n"
                                                        "degenerate_strides = [7]\nblock_sizes = [16]\n",
                                   "d.toml");
  ASSERT_EQ(one.size(), 2u);
  EXPECT_EQ(one[0].degenerate_stride, 7);
  EXPECT_EQ(one[1].degenerate_stride, 0);
}

TEST(CaseFileLayouts, BadLayoutParametersAreErrors) {
  expect_error(std::string(kHead) + "layouts = [\"kernel_pages\"]\nblock_sizes = [64]\n",
               "field 'kernel_block_size': the kernel_pages layout needs kernel_block_size");
  expect_error(std::string(kHead) + "layouts = [\"kv_first\"]\nkernel_block_size = 16\nblock_sizes = [64]\n",
               "field 'kernel_block_size': kernel_block_size applies to the kernel_pages layout only");
  expect_error(std::string(kHead) + "layouts = [\"kernel_pages\"]\nkernel_block_size = 16\nblock_sizes = [64, 40]\n",
               "field 'block_sizes': block_size 40 is not a multiple of kernel_block_size 16");
  expect_error(std::string(kHead) + "layouts = [\"kv_first\"]\ndegenerate_strides = [0]\nblock_sizes = [16]\n",
               "field 'degenerate_strides': applies to the degenerate_strides layout only");
  expect_error(std::string(kHead) + "layouts = [\"degenerate_strides\"]\ndegenerate_strides = [-1]\nblock_sizes = [16]\n",
               "field 'degenerate_strides': expected an integer in [0,");
  expect_error(std::string(kHead) + "layouts = [\"head_interleaved\"]\nblock_sizes = [16]\nkernel_block_size = 0\n",
               "field 'kernel_block_size': expected an integer in [1, 65536], got 0");
}

}  // namespace
}  // namespace kvh
