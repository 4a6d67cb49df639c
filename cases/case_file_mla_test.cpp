// Case-file keys of MLA (issue 22): the presets' per-rank latent shapes at several tp, the explicit
// kv_lora_rank/qk_rope_head_dim/qk_nope_head_dim/softmax_scale keys, the separate default layout,
// the ids and filters that tell MLA cases apart, and the errors that name the line.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "case_file.h"
#include "case_file_test_util.h"
#include "filter.h"
#include "model.h"

namespace kvh {
namespace {

using testing::expect_error;

const char* kWrite = R"(
[[write]]
num_tokens = [5]
block_sizes = [16]
dtypes = ["bf16"]
writers = ["concat_and_cache_mla"]
)";

TEST(CaseFileMla, PresetsAtSeveralTpGivePerRankLatentShapesAndSeparateByDefault) {
  const auto cases = parse_case_text(std::string(kWrite) + "models = [\"DeepSeek-V3\", \"Kimi-K2\"]\ntp = [1, 4, 8]\n",
                                     "m.toml");
  ASSERT_EQ(cases.size(), 6u);
  const int64_t heads[] = {128, 32, 16, 64, 16, 8};
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    EXPECT_TRUE(c.mla());
    EXPECT_EQ(c.num_heads, heads[i]) << c.id();
    EXPECT_EQ(c.num_kv_heads, 1);
    EXPECT_EQ(c.head_size, 576);
    EXPECT_EQ(c.kv_lora_rank, 512);
    EXPECT_EQ(c.qk_rope_head_dim, 64);
    EXPECT_EQ(c.qk_nope_head_dim, 128);
    EXPECT_EQ(c.softmax_scale, 0) << "0: the default, 1/sqrt(nope + rope)";
    EXPECT_EQ(c.layout, Scheme::Separate) << "an MLA table without layouts gets separate";
  }
  EXPECT_EQ(cases[1].id(), "write/DeepSeek-V3/tp4/hd576/mla512+64/separate/bs16/bf16/n5/concat_and_cache_mla/s1");
  EXPECT_EQ(cases[1].tp, 4);
}

TEST(CaseFileMla, ExplicitKeysMakeAnyModelMlaAndTheScaleIsAnAxisInTheId) {
  const auto cases = parse_case_text(std::string(kWrite) +
                                         "models = [\"Llama-3.1-8B\"]\nkv_lora_rank = 256\nqk_rope_head_dim = 32\n"
                                         "qk_nope_head_dim = 96\nsoftmax_scale = [0.125, 0.0625]\nlayouts = [\"offset\"]\n",
                                     "m.toml");
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].num_heads, 32);
  EXPECT_EQ(cases[0].num_kv_heads, 1);
  EXPECT_EQ(cases[0].head_size, 288);
  EXPECT_EQ(cases[0].softmax_scale, 0.125);
  EXPECT_EQ(cases[0].id(), "write/Llama-3.1-8B/tp1/hd288/mla256+32/offset/bs16/bf16/n5/concat_and_cache_mla/sc=0.125/s1");
  EXPECT_NE(cases[1].id().find("/sc=0.0625/"), std::string::npos) << cases[1].id();
  // Without softmax_scale the default scale's nope dim tells the ids apart when it is not 128.
  const auto dflt = parse_case_text(std::string(kWrite) +
                                        "models = [\"Llama-3.1-8B\"]\nkv_lora_rank = 256\nqk_rope_head_dim = 32\n"
                                        "qk_nope_head_dim = 96\n",
                                    "m.toml");
  ASSERT_EQ(dflt.size(), 1u);
  EXPECT_NE(dflt[0].id().find("/hd288/mla256+32n96/separate/"), std::string::npos) << dflt[0].id();
}

TEST(CaseFileMla, AModelTableMayBeMla) {
  const auto cases = parse_case_text(
      "[[model]]\nname = \"tiny-mla\"\nnum_heads = 8\nkv_lora_rank = 128\nqk_rope_head_dim = 32\nqk_nope_head_dim = 64\n" +
          std::string(kWrite) + "models = [\"tiny-mla\"]\ntp = 2\n",
      "m.toml");
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].num_heads, 4);
  EXPECT_EQ(cases[0].head_size, 160);
  EXPECT_NE(cases[0].id().find("/mla128+32n64/"), std::string::npos) << cases[0].id();
}

TEST(CaseFileMla, IdsOfOtherCasesStayAndFiltersSelectMla) {
  const auto cases = parse_case_text(std::string(kWrite) +
                                         "models = [\"DeepSeek-V2-Lite\"]\n"
                                         "[[write]]\nmodels = [\"Llama-3.1-8B\"]\nlayouts = [\"kv_first\"]\n"
                                         "num_tokens = [5]\nblock_sizes = [16]\ndtypes = [\"bf16\"]\n"
                                         "writers = [\"reshape_and_cache_flash\"]\n",
                                     "m.toml");
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[1].id(), "write/Llama-3.1-8B/tp1/hd128/kv_first/bs16/bf16/n5/reshape_and_cache_flash/s1");
  EXPECT_TRUE(Filter("mla=1").matches(cases[0]));
  EXPECT_FALSE(Filter("mla=1").matches(cases[1]));
  EXPECT_TRUE(Filter("mla=0").matches(cases[1]));
  EXPECT_TRUE(Filter("kv_lora_rank=512").matches(cases[0]));
  EXPECT_FALSE(Filter("kv_lora_rank=512").matches(cases[1]));
  EXPECT_TRUE(Filter("kv_lora_rank=0").matches(cases[1]));
  EXPECT_EQ(cases[0].num_heads, 16);
}

TEST(CaseFileMla, BadMlaTablesNameTheLineFieldAndWhatApplies) {
  expect_error(std::string(kWrite) + "models = [\"DeepSeek-V3\"]\nlayouts = [\"kv_first\"]\n",
               "bad.toml:8: field 'layouts': layout 'kv_first' does not apply to the MLA latent cache of DeepSeek-V3 "
               "(one latent tensor); expected one of separate, offset, padded, degenerate_strides");
  expect_error(std::string(kWrite) + "models = [\"Llama-3.1-8B\"]\n", "field 'layouts': missing");
  expect_error(std::string(kWrite) + "models = [\"DeepSeek-V3\"]\nhead_sizes = [128]\n",
               "field 'head_sizes': model DeepSeek-V3 is MLA: its head size is kv_lora_rank + qk_rope_head_dim (576)");
  expect_error(std::string(kWrite) + "models = [\"Llama-3.1-8B\"]\nlayouts = [\"kv_first\"]\nsoftmax_scale = 0.1\n",
               "bad.toml:9: field 'softmax_scale': applies to MLA tables only; model Llama-3.1-8B is not MLA");
  expect_error(std::string(kWrite) + "models = [\"Llama-3.1-8B\"]\nkv_lora_rank = 256\n",
               "field 'qk_rope_head_dim': model Llama-3.1-8B is not MLA: kv_lora_rank needs qk_rope_head_dim");
  expect_error(std::string(kWrite) + "models = [\"Llama-3.1-8B\"]\nkv_lora_rank = 256\nqk_rope_head_dim = 64\n",
               "field 'qk_nope_head_dim': model Llama-3.1-8B is not MLA: the default softmax scale");
  expect_error(std::string(kWrite) + "models = [\"DeepSeek-V3\"]\nsoftmax_scale = 0.0\n",
               "field 'softmax_scale': expected a scale in (0, 1000], got 0");
  expect_error(std::string(kWrite) + "models = [\"DeepSeek-V3\"]\ntp = [1, 3]\n",
               "field 'tp': tp 3 does not divide num_heads 128 of DeepSeek-V3");
  expect_error(std::string(kWrite) + "models = [\"DeepSeek-V3\"]\ntp = [0]\n", "field 'tp': expected an integer in [1, 1024], got 0");
  expect_error("[[model]]\nname = \"m\"\nnum_heads = 8\nnum_kv_heads = 2\nkv_lora_rank = 128\nqk_rope_head_dim = 32\n"
               "qk_nope_head_dim = 64\n",
               "field 'num_kv_heads': an MLA model has one latent kv head");
  expect_error("[[model]]\nname = \"m\"\nnum_heads = 8\nkv_lora_rank = 128\n",
               "field 'kv_lora_rank': an MLA model needs qk_rope_head_dim and qk_nope_head_dim");
}

// Attention and pipeline tables take the same keys (the reader tables of cases/mla.toml).
TEST(CaseFileMla, AttentionAndPipelineTablesTakeTheMlaKeys) {
  const auto cases = parse_case_text(R"(
[[attention]]
models = ["DeepSeek-V3"]
tp = [1, 8]
batch_sizes = [4]
context_lens = [1, 300]
query_lens = [1, 4]
block_sizes = [1, 64]
dtypes = ["bf16"]
softmax_scale = [0.0723]
readers = ["mla_decode"]

[[pipeline]]
models = ["Kimi-K2"]
tp = 4
batch_sizes = [3]
context_lens = [10, 20]
block_sizes = [16]
dtypes = ["bf16"]
kv_cache_dtype = ["fp8_e4m3fnuz"]
kv_scales = ["tensor"]
writers = ["concat_and_cache_mla"]
readers = ["mla_decode"]
)",
                                     "r.toml");
  ASSERT_EQ(cases.size(), 5u);
  EXPECT_EQ(cases[0].id(), "attention/DeepSeek-V3/tp1/hd576/mla512+64/separate/bs1/bf16/n4/ctx1-300/"
                           "reference+mla_decode/q1-4/sc=0.0723/s1");
  EXPECT_EQ(cases[0].num_heads, 128);
  EXPECT_EQ(cases[2].num_heads, 16);
  EXPECT_EQ(cases[1].max_query_len(), 4);
  EXPECT_EQ(cases[3].block_size, 64);
  const Case& p = cases[4];
  EXPECT_EQ(p.kind, CaseKind::Pipeline);
  EXPECT_EQ(p.num_heads, 16);
  EXPECT_EQ(p.id(),
            "pipeline/Kimi-K2/tp4/hd576/mla512+64/separate/bs16/bf16/n3/ctx10-20/concat_and_cache_mla+mla_decode/"
            "kv=fp8_e4m3fnuz/scales=tensor/s1");
  EXPECT_TRUE(Filter("softmax_scale=0.0723").matches(cases[0]));
  EXPECT_TRUE(Filter("softmax_scale=0").matches(p));
}

// The presets' numbers are those of the public config.json files (ModelPreset::source).
TEST(CaseFileMla, PresetsCarryTheirLatentSizesAndSources) {
  for (const char* name : {"DeepSeek-V3", "DeepSeek-V2-Lite", "Kimi-K2"}) {
    const auto m = find_preset(name);
    ASSERT_TRUE(m) << name;
    EXPECT_TRUE(m->mla());
    EXPECT_EQ(m->kv_lora_rank, 512);
    EXPECT_EQ(m->qk_rope_head_dim, 64);
    EXPECT_EQ(m->qk_nope_head_dim, 128);
    EXPECT_EQ(m->head_size, 576);
    EXPECT_NE(m->source.find("config.json"), std::string::npos);
  }
  EXPECT_EQ(find_preset("DeepSeek-V3")->num_heads, 128);
  EXPECT_EQ(find_preset("DeepSeek-V2-Lite")->num_heads, 16);
  EXPECT_EQ(find_preset("Kimi-K2")->num_heads, 64);
}

// The per-case size bound counts one latent row a token (no separate V): 48M tokens of 576 bf16
// elements (51 GiB) pass, 64M (68 GiB) are refused naming the latent cache.
TEST(CaseFileMla, TheCacheBoundCountsOneLatentRowAToken) {
  auto table = [](int n) {
    return "[[attention]]\nmodels = [\"DeepSeek-V3\"]\nbatch_sizes = [" + std::to_string(n) +
           "]\ncontext_lens = [1000000, 1000000]\nblock_sizes = [64]\ndtypes = [\"bf16\"]\nreaders = [\"mla_decode\"]\n";
  };
  EXPECT_EQ(parse_case_text(table(48), "m.toml").size(), 1u);
  expect_error(table(64), "field 'batch_sizes': 64000000 tokens x 1 kv heads x head size 576 need 68 GiB of latent cache");
}

}  // namespace
}  // namespace kvh
