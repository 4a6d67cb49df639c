#include "case_file.h"

#include <gtest/gtest.h>

namespace kvh {
namespace {

const char* kGood = R"(
seeds = [3, 4]
[[model]]
name = "tiny"
num_heads = 8
num_kv_heads = 2
head_size = 64

[[write]]
models = ["Qwen3.5-397B-A17B", "tiny"]
tp = 8
layouts = ["kv_first", "interleaved"]
num_tokens = [4]
block_sizes = [16, 544]
dtypes = ["fp16", "bf16"]
writers = ["reshape_and_cache_shuffle"]
)";

TEST(CaseFile, ExpandsTheCartesianProductWithPerRankHeads) {
  auto cases = parse_case_text(kGood, "good.toml");
  ASSERT_EQ(cases.size(), 2u * 2 * 2 * 2 * 2);  // models x layouts x block sizes x dtypes x seeds
  const Case& q = cases.front();
  EXPECT_EQ(q.model, "Qwen3.5-397B-A17B");
  EXPECT_EQ(q.num_heads, 4);
  EXPECT_EQ(q.num_kv_heads, 1);  // max(1, 2 / 8)
  EXPECT_EQ(q.head_size, 256);
  EXPECT_TRUE(q.hybrid);
  EXPECT_EQ(q.source, "good.toml:9");  // the [[write]] line
  EXPECT_EQ(q.id(), "write/Qwen3.5-397B-A17B/tp8/hd256/kv_first/bs16/fp16/n4/reshape_and_cache_shuffle/s3");
  EXPECT_EQ(cases.back().model, "tiny");
  EXPECT_EQ(cases.back().num_heads, 1);
}

void expect_error(const std::string& text, const std::string& needle) {
  try {
    parse_case_text(text, "bad.toml");
    ADD_FAILURE() << "no error for:\n" << text;
  } catch (const CaseFileError& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what() << "\nwanted: " << needle;
  }
}

TEST(CaseFile, BadFilesNameFileLineFieldAndWhatWasExpected) {
  expect_error("[[write]]\nmodels = [\"nope\"]\n", "bad.toml:2: field 'models': unknown value 'nope'; expected one of");
  expect_error("[[write]]\nmodels = [\"Qwen3-235B-A22B\"]\nlayouts = \"kv_first\"\n",
               "bad.toml:3: field 'layouts': expected a non-empty array of strings, got a string");
  expect_error("[[write]]\nmodels = [\"Qwen3-235B-A22B\"]\nlayouts = [\"kv_first\"]\nnum_tokens = [4, \"x\"]\n"
               "block_sizes = [16]\ndtypes = [\"fp16\"]\n",
               "bad.toml:4: field 'num_tokens': expected an integer element, got a string");
  expect_error("[[write]]\nmodels = [\"Qwen3-235B-A22B\"]\nlayout = [\"kv_first\"]\n",
               "field 'layout': unknown field in [write]");
  expect_error("[[write]]\nmodels = [\"Qwen3-235B-A22B\"]\ntp = 3\nlayouts = [\"kv_first\"]\nnum_tokens = [4]\n"
               "block_sizes = [16]\ndtypes = [\"fp16\"]\nwriters = [\"w\"]\n",
               "bad.toml:3: field 'tp': tp 3 does not divide num_heads 64");
  expect_error("seeds = [1\n", "bad.toml:");
  expect_error("[[write]]\nmodels = [\"Qwen3-235B-A22B\"]\nlayouts = [\"kv_first\"]\n", "field 'block_sizes': missing");
  expect_error("[[pipeline]]\nmodels = [\"Qwen3-235B-A22B\"]\nlayouts = [\"kv_first\"]\nblock_sizes = [16]\n"
               "dtypes = [\"fp16\"]\nbatch_sizes = [4]\ncontext_lens = [9, 3]\nreaders = [\"r\"]\nwriters = [\"w\"]\n",
               "bad.toml:7: field 'context_lens': expected [min, max] with min <= max");
  expect_error("[[attention]]\nmodels = [\"Qwen3-235B-A22B\"]\nlayouts = [\"kv_first\"]\nblock_sizes = [16]\n"
               "dtypes = [\"fp16\"]\nbatch_sizes = [4]\ncontext_lens = [1, 3]\n[[attention.variants]]\nname = \"x\"\n",
               "bad.toml:8: field 'reader': a variant names exactly one of 'reader' or 'router'");
}

TEST(CaseFile, OutOfRangeValuesDuplicateModelsAndPartialGqaGroupsAreErrors) {
  const std::string rest = "layouts = [\"kv_first\"]\nnum_tokens = [4]\nblock_sizes = [16]\ndtypes = [\"fp16\"]\nwriters = [\"w\"]\n";
  expect_error("[[write]]\nmodels = [\"Qwen3-235B-A22B\"]\ntp = 4294967297\n" + rest,
               "bad.toml:3: field 'tp': expected an integer in [1, 1024], got 4294967297");
  expect_error("[[model]]\nname = \"m\"\nnum_heads = 48\nnum_kv_heads = 16\nhead_size = 64\n[[write]]\nmodels = [\"m\"]\ntp = 3\n" + rest,
               "16 heads and 5 kv heads per rank: not a whole GQA group");
  expect_error("[[model]]\nname = \"Qwen3-235B-A22B\"\nnum_heads = 8\nnum_kv_heads = 1\nhead_size = 64\n",
               "bad.toml:2: field 'name': model 'Qwen3-235B-A22B' is already defined");
  expect_error("[[model]]\nname = \"m\"\nnum_heads = 8\nnum_kv_heads = 1\nhead_size = 64\nhybrid = \"yes\"\n",
               "bad.toml:6: field 'hybrid': expected true or false, got a string");
  expect_error("[[attention]]\nmodels = [\"Qwen3-235B-A22B\"]\nlayouts = [\"large\"]\nblock_sizes = [16]\n"
               "dtypes = [\"fp16\"]\nbatch_sizes = [4]\ncontext_lens = [1, 3]\nreaders = [\"r\"]\n",
               "bad.toml:3: field 'layouts': 'large' is a [[write]] suite only");
}

TEST(CaseFile, MissingFileIsAnError) { EXPECT_THROW(load_case_file("/nonexistent/x.toml"), CaseFileError); }

// Regressions found by fuzz/case_file_fuzz (inputs kept in fuzz/regressions/case_file/).
TEST(CaseFile, CodePointsThatHitUndefinedBehaviourInTomlppAreRejected) {
  // U+0106 and U+FEFD reach __builtin_unreachable in toml++ 3.3's whitespace test.
  for (const char* text : {"\xC4\x86", "\xEF\xBB\xBD", "a = 1\n# caf\xC3\xA9\n"}) {
    try {
      parse_case_text(text, "u.toml");
      ADD_FAILURE() << "accepted " << text;
    } catch (const CaseFileError& e) {
      EXPECT_NE(std::string(e.what()).find("u.toml:"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("U+"), std::string::npos) << e.what();
    }
  }
  try {
    parse_case_text("seeds = [1]\n\n# caf\xC3\xA9\n", "u.toml");
    ADD_FAILURE() << "accepted U+00E9";
  } catch (const CaseFileError& e) {
    EXPECT_NE(std::string(e.what()).find("u.toml:3: character U+00E9"), std::string::npos) << e.what();
  }
  // Outside the ranges, and as a \u escape, non-ASCII text is fine.
  EXPECT_NO_THROW(parse_case_text("# \xE2\x86\x92 (U+2192)\nseeds = [1]\n", "u.toml"));
  std::string escaped = kGood;
  escaped.replace(escaped.find("name = \"tiny\""), 13, "name = \"tiny\\u00e9\"");
  escaped.replace(escaped.find("\"tiny\"]"), 7, "\"tiny\\u00e9\"]");
  EXPECT_EQ(parse_case_text(escaped, "u.toml").back().model, "tiny\xC3\xA9");
}

TEST(CaseFile, AFewLinesCannotExpandIntoMillionsOfCases) {
  std::string axis = "[";
  for (int i = 1; i <= 50; ++i) axis += std::to_string(i) + (i < 50 ? ", " : "]");
  const std::string text = "seeds = " + axis + R"(
[[write]]
models = ["Llama-3.1-8B"]
layouts = ["separate"]
num_tokens = )" + axis + R"(
block_sizes = )" + axis + R"(
dtypes = ["fp16"]
writers = ["reshape_and_cache"]
)";  // 50^3 = 125,000 cases from under 600 bytes
  try {
    parse_case_text(text, "many.toml");
    ADD_FAILURE() << "125,000 cases accepted";
  } catch (const CaseFileError& e) {
    EXPECT_NE(std::string(e.what()).find("many.toml:2: field 'write': the file expands to more than 100000 cases"),
              std::string::npos) << e.what();
  }
}

TEST(CaseFile, ACaseNeedingMoreThan64GiBOfCacheIsRejected) {
  const std::string decode = R"(
[[attention]]
models = ["Llama-3.1-8B"]
layouts = ["separate"]
batch_sizes = [65536]
context_lens = [1, 1048576]
block_sizes = [16]
dtypes = ["fp16"]
readers = ["paged_attention"]
)";  // 2^36 tokens x 8 kv heads x 128 x 4 bytes = 256 TiB
  try {
    parse_case_text(decode, "big.toml");
    ADD_FAILURE() << "2^36 tokens accepted";
  } catch (const CaseFileError& e) {
    EXPECT_NE(std::string(e.what()).find("big.toml:2: field 'batch_sizes': 68719476736 tokens"), std::string::npos)
        << e.what();
  }
  // The largest write the axis bounds allow at 8 kv heads x 128: 2^22 tokens, 16 GiB: accepted.
  const std::string write = R"(
[[write]]
models = ["Llama-3.1-8B"]
layouts = ["separate"]
num_tokens = [4194304]
block_sizes = [16]
dtypes = ["fp16"]
writers = ["reshape_and_cache"]
)";
  EXPECT_EQ(parse_case_text(write, "w.toml").size(), 1u);
  std::string fat = write;
  fat.replace(fat.find("layouts"), 0, "head_sizes = [1024]\n");  // 64 GiB x 8 = 512 GiB
  EXPECT_THROW(parse_case_text(fat, "w.toml"), CaseFileError);
}

}  // namespace
}  // namespace kvh
