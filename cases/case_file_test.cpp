#include "case_file.h"
#include "dtype_names.h"
#include "filter.h"
#include "case_file_test_util.h"

#include <gtest/gtest.h>

#include <fstream>

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

using testing::expect_error;

// Issue 25: a TOML syntax error names the line to fix. toml++ notices an array's missing ',' or ']'
// at the next line's first token (the next key): the error points at the line that lacks it.
TEST(CaseFile, SyntaxErrorsNameTheLineToFix) {
  const std::string head = "seeds = [1]\n\n[[write]]\nmodels = [\"Qwen3-235B-A22B\"]\n";  // lines 1-4
  // Line 5 lacks its ']'; toml++ sees line 6's key.
  expect_error(head + "writers = [\"reshape_and_cache_flash\"\ndtypes = [\"fp16\"]\n",
               "bad.toml:5:37: an array is not closed: a ',' or ']' is missing at the end of this line (toml++ "
               "noticed at 6:1: Error while parsing array: expected comma or closing ']', saw 'd')");
  // A multi-line array missing a comma at the end of line 6, a comment line and a blank line before the next element.
  expect_error(head + "writers = [\"reshape_and_cache_flash\",\n  \"reshape_and_cache\"\n  # the shuffle one\n\n"
                      "  \"reshape_and_cache_shuffle\"]\n",
               "bad.toml:6:22: an array is not closed");
  // Errors toml++ places on the right line keep their position.
  expect_error(head + "writers = [\"a\" \"b\"]\n", "bad.toml:5:16: Error while parsing array");
  expect_error(head + "name = \"unterminated\ndtypes = [\"fp16\"]\n", "bad.toml:5:");
  expect_error(head + "tp = 8 8\n", "bad.toml:5:8: Error while parsing key-value pair");
  // What toml++ quotes stays on one line of message.
  try {
    parse_case_text(head + "causal = tru\nx = 1\n", "bad.toml");
    ADD_FAILURE() << "no error";
  } catch (const CaseFileError& e) {
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad.toml:5:"), std::string::npos) << e.what();
  }
}

// Issue 11: the stale axis is crossed in; padding and min_block_id are per table; ids change only off the defaults.
TEST(CaseFile, StaleAxisPaddingAndMinBlockId) {
  const std::string head = "[[attention]]\nmodels = [\"Qwen3-235B-A22B\"]\ntp = 8\nlayouts = [\"kv_first\"]\n"
                           "batch_sizes = [4]\ncontext_lens = [1, 300]\nblock_sizes = [16]\ndtypes = [\"bf16\"]\n"
                           "readers = [\"paged_attention_rocm\"]\n";
  const auto plain = parse_case_text(head, "t.toml");
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0].stale, Stale::Random);
  EXPECT_EQ(plain[0].block_table_padding, -1);
  EXPECT_EQ(plain[0].min_block_id, 1);
  EXPECT_EQ(plain[0].id().find("stale"), std::string::npos) << "default ids keep their old form";
  EXPECT_EQ(plain[0].id().find("pad="), std::string::npos);
  const auto crossed = parse_case_text(head + "stale = [\"random\", \"nan\", \"inf\"]\nblock_table_padding = \"num_blocks+7\"\n"
                                              "min_block_id = 70000\n", "t.toml");
  ASSERT_EQ(crossed.size(), 3u);
  EXPECT_EQ(crossed[1].stale, Stale::Nan);
  EXPECT_EQ(crossed[2].stale, Stale::Inf);
  EXPECT_EQ(crossed[2].block_table_padding, 7);
  EXPECT_EQ(crossed[2].min_block_id, 70000);
  EXPECT_NE(crossed[2].id().find("/stale=inf/pad=num_blocks+7/minblock=70000/s1"), std::string::npos) << crossed[2].id();
  EXPECT_EQ(crossed[0].id().find("stale"), std::string::npos) << crossed[0].id();
  EXPECT_EQ(parse_case_text(head + "block_table_padding = \"-1\"\n", "t.toml")[0].id(), plain[0].id());
}

TEST(CaseFile, BadStaleOrPaddingNamesTheFieldAndTheChoices) {
  const std::string head = "[[attention]]\nmodels = [\"Qwen3-235B-A22B\"]\ntp = 8\nlayouts = [\"kv_first\"]\n"
                           "batch_sizes = [4]\ncontext_lens = [1, 300]\nblock_sizes = [16]\ndtypes = [\"bf16\"]\n"
                           "readers = [\"paged_attention_rocm\"]\n";
  expect_error(head + "stale = [\"zero\"]\n", "bad.toml:10: field 'stale': unknown value 'zero'; expected one of random, nan, inf");
  expect_error(head + "block_table_padding = \"num_blocks+17\"\n",
               "bad.toml:10: field 'block_table_padding': expected \"-1\" or \"num_blocks+K\" with K an integer in [0, 16], got 'num_blocks+17'");
  expect_error(head + "block_table_padding = \"0\"\n", "field 'block_table_padding': expected \"-1\" or \"num_blocks+K\"");
  expect_error(head + "block_table_padding = \"num_blocks+\"\n", "got 'num_blocks+'");
  expect_error(head + "block_table_padding = -1\n", "got an integer");
  expect_error(head + "min_block_id = 0\n", "field 'min_block_id': expected an integer in [1, 1073741824], got 0");
  // The unused blocks below min_block_id are cache too: the per-case cache cap counts them.
  // ... and the error names min_block_id at its own line when it makes most of them.
  expect_error(head + "min_block_id = 1073741824\n", "bad.toml:10: field 'min_block_id': ");
  expect_error(head + "min_block_id = 1073741824\n", "GiB of K/V cache; at most 64 GiB per case");
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
  // At the key's own line, not the table's.
  expect_error("\n[[model]]\nname = \"m\"\nnum_heads = 8\nnum_kv_heads = 3\nhead_size = 64\n",
               "bad.toml:5: field 'num_kv_heads': 3 does not divide num_heads 8");
  expect_error("[[model]]\nname = \"m\"\nnum_heads = 8\nnum_kv_heads = 1\nhead_size = 64\nhybrid = \"yes\"\n",
               "bad.toml:6: field 'hybrid': expected true or false, got a string");
  expect_error("[[attention]]\nmodels = [\"Qwen3-235B-A22B\"]\nlayouts = [\"large\"]\nblock_sizes = [16]\n"
               "dtypes = [\"fp16\"]\nbatch_sizes = [4]\ncontext_lens = [1, 3]\nreaders = [\"r\"]\n",
               "bad.toml:3: field 'layouts': 'large' is a [[write]] suite only");
}

TEST(CaseFile, MissingFileIsAnError) { EXPECT_THROW(load_case_file("/nonexistent/x.toml"), CaseFileError); }

const char* kPipelineWithExpectations = R"(
[[pipeline]]
models = ["Qwen3.5-397B-A17B"]
tp = 8
layouts = ["kv_first", "interleaved"]
batch_sizes = [4]
context_lens = [1, 100]
block_sizes = [16]
dtypes = ["bf16"]
[[pipeline.variants]]
name = "before fix"
writer = "fixture_shuffle_contiguous"
reader = "paged_attention_rocm"
[[pipeline.variants.expected_failure]]
filter = "layout=interleaved"
component = "writer"
reasons = ["mismatch"]
why = "contiguous block base"
[[pipeline.variants]]
name = "after fix"
writer = "reshape_and_cache_shuffle"
reader = "paged_attention_rocm"

[[expected_failure]]
ids = ["some/id"]
why = "a known bug"
)";

// Issue 7, defect 2: case files say where a fixture must fail, per variant, with layout conditions.
TEST(CaseFile, ExpectedFailuresAreScopedToTheirVariantAndNarrowedByTheirFilter) {
  const CaseFile f = parse_case_file_text(kPipelineWithExpectations, "x.toml");
  ASSERT_EQ(f.cases.size(), 4u);
  ASSERT_EQ(f.expected_failures.size(), 2u);
  const ExpectedFailure& scoped = f.expected_failures[0];
  EXPECT_EQ(scoped.source, "x.toml:14");
  EXPECT_EQ(scoped.scope_source, "x.toml:2");
  EXPECT_EQ(scoped.scope_variant, "before fix");
  std::vector<std::string> covered;
  for (const Case& c : f.cases)
    if (scoped.covers(c)) covered.push_back(c.variant() + "@" + to_string(c.layout));
  EXPECT_EQ(covered, (std::vector<std::string>{"before fix@interleaved"}));
  // Flipping the row's writer keeps the declaration on the row: the fixed kernel would then be XPASS.
  Case flipped = f.cases[2];  // interleaved, "before fix"
  flipped.writer = "reshape_and_cache_shuffle";
  EXPECT_TRUE(scoped.covers(flipped));
  EXPECT_TRUE(scoped.allows("writer", "mismatch", false));
  EXPECT_FALSE(scoped.allows("writer", "out_of_view_write", false));
  EXPECT_FALSE(scoped.allows("reader", "mismatch", false));
  EXPECT_FALSE(scoped.allows("harness", "harness_error", true));
  const ExpectedFailure& by_id = f.expected_failures[1];
  EXPECT_TRUE(by_id.allows("router", "misroute", false));
  EXPECT_FALSE(by_id.allows("writer", "crash", true)) << "a CRASH is expected only where a declaration names it";
}

TEST(CaseFile, BadExpectedFailuresAreErrors) {
  const std::string head = "[[expected_failure]]\n";
  expect_error(head + "why = \"x\"\n", "bad.toml:1: field 'filter': a declaration needs a 'filter' or 'ids'");
  expect_error(head + "filter = \"layout=nope\"\nwhy = \"x\"\n", "bad.toml:2: field 'filter':");
  // A value not of its key's type is a bad filter here too, not a declaration that covers no case.
  expect_error(head + "why = \"x\"\nfilter = \"tp=abc\"\n",
               "bad.toml:3: field 'filter': filter term 'tp=abc': tp takes an integer in 1..1024");
  expect_error(head + "filter = \"kind=write\"\ncomponent = \"harness\"\nwhy = \"x\"\n",
               "field 'component': unknown component 'harness'");
  expect_error(head + "filter = \"kind=write\"\nreasons = [\"wrong\"]\nwhy = \"x\"\n",
               "field 'reasons': unknown value 'wrong'");
  expect_error(head + "filter = \"kind=write\"\n", "field 'why': missing");
  std::string unnamed = kPipelineWithExpectations;
  unnamed.replace(unnamed.find("name = \"before fix\"\n"), std::string("name = \"before fix\"\n").size(), "");
  expect_error(unnamed, "a variant with expected failures needs a 'name'");
}

// Issue 7, defect 9: explicit per-sequence context lengths.
TEST(CaseFile, ExplicitContextLengthListsAreBatches) {
  const std::string text = R"(
[[attention]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["kv_first"]
context_lens_lists = [[1, 512, 513], [4096]]
block_sizes = [16]
dtypes = ["fp16"]
readers = ["paged_attention_v1"]
)";
  const auto cases = parse_case_text(text, "x.toml");
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].batch_size, 3);
  EXPECT_EQ(cases[0].context_lens, (std::vector<int64_t>{1, 512, 513}));
  EXPECT_EQ(cases[0].context_len_min, 1);
  EXPECT_EQ(cases[0].context_len_max, 513);
  EXPECT_NE(cases[0].id().find("/ctx=1+512+513/"), std::string::npos) << cases[0].id();
  EXPECT_EQ(cases[1].batch_size, 1);
  std::string both = text;
  both.insert(both.find("block_sizes"), "batch_sizes = [3]\n");
  expect_error(both, "field 'batch_sizes': not allowed beside context_lens_lists");
  std::string zero = text;
  zero.replace(zero.find("[4096]"), 6, "[0]");
  expect_error(zero, "field 'context_lens_lists': expected integer context lengths in [1, 1048576]");
}

// Issue 12: score modifiers and split control, each off by default; ids gain suffixes only when not.
TEST(CaseFile, ModifierAndSplitAxesExpandAndSuffixTheIds) {
  const std::string base = R"(
[[attention]]
models = ["Llama-3.1-8B"]
tp = 2
layouts = ["kv_first"]
context_lens_lists = [[1, 300]]
block_sizes = [16]
dtypes = ["fp16"]
readers = ["paged_attention_rocm"]
)";
  const auto plain = parse_case_text(base, "x.toml");
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0].sliding_window, 0);
  EXPECT_FALSE(plain[0].sinks || plain[0].alibi);
  EXPECT_EQ(plain[0].softcap, 0);
  EXPECT_EQ(plain[0].tp_rank, 0);
  EXPECT_EQ(plain[0].partition_size, 0);
  EXPECT_EQ(plain[0].id(),
            "attention/Llama-3.1-8B/tp2/hd128/kv_first/bs16/fp16/n2/ctx=1+300/reference+paged_attention_rocm/s1");
  std::string with = base;
  with += "sliding_window = [0, 128]\nsinks = true\nsoftcap = [30.0, 2.5]\nalibi = [false, true]\ntp_rank = [0, 1]\n"
          "partition_size = 433\n";
  const auto cases = parse_case_text(with, "x.toml");
  ASSERT_EQ(cases.size(), 2u * 2 * 2 * 2);
  const Case& last = cases.back();
  EXPECT_EQ(last.sliding_window, 128);
  EXPECT_TRUE(last.sinks && last.alibi);
  EXPECT_EQ(last.softcap, 2.5);
  EXPECT_EQ(last.tp_rank, 1);
  EXPECT_EQ(last.partition_size, 433);
  EXPECT_EQ(last.id(), "attention/Llama-3.1-8B/tp2/hd128/kv_first/bs16/fp16/n2/ctx=1+300/reference+paged_attention_rocm/"
                       "win128/sinks/cap2.5/alibi/rank1/ps433/s1");
  EXPECT_EQ(cases.front().id(), "attention/Llama-3.1-8B/tp2/hd128/kv_first/bs16/fp16/n2/ctx=1+300/"
                                "reference+paged_attention_rocm/sinks/cap30/ps433/s1");
  EXPECT_EQ(last.modifiers(), 15u);
  EXPECT_EQ(case_field(last, "softcap"), "2.5");
  EXPECT_EQ(case_field(cases.front(), "softcap"), "30.0");  // as results.json prints it
  EXPECT_TRUE(Filter("sinks=1,alibi=1,tp_rank=1,sliding_window=128,partition_size=433").matches(last));
  EXPECT_FALSE(Filter("alibi=0").matches(last));
  EXPECT_THROW(Filter("sinks=true"), FilterError);  // booleans are 0 and 1, as shuffle

  expect_error(base + "tp_rank = 2\n", "field 'tp_rank': expected a rank in [0, 1] (tp = 2), got 2");
  expect_error(base + "sliding_window = -1\n", "field 'sliding_window': expected a window in tokens");
  expect_error(base + "sinks = 1\n", "field 'sinks': expected true or false, got an integer");
  expect_error(base + "softcap = \"50\"\n",
               "field 'softcap': expected a soft-cap > 0 (e.g. 30.0), or 0 (off), got a string");
  expect_error(base + "softcap = -1.0\n", "field 'softcap': expected a soft-cap in (0, 1e6], or 0 (off), got -1");
  expect_error(base + "partition_size = []\n", "field 'partition_size': expected a value or a non-empty array");
  expect_error(base + "alibi = [true, \"no\"]\n", "field 'alibi': expected true or false, got a string");
  try {
    parse_case_text(base + "tp_rank = 5\n", "x.toml");
    ADD_FAILURE();
  } catch (const CaseFileError& e) {
    EXPECT_NE(std::string(e.what()).find("x.toml:10:"), std::string::npos) << e.what();  // file and line
  }
}

TEST(KnownFailures, LoadsItsTablesAndNamesBadOnes) {
  const std::string path = ::testing::TempDir() + "known.toml";
  {
    std::ofstream(path) << "[[known_failure]]\nfilter = \"writer=my_writer,layout=padded\"\ncomponent = \"writer\"\n"
                           "reasons = [\"out_of_view_write\"]\nwhy = \"ticket 123\"\n";
  }
  const auto k = load_known_failures(path);
  ASSERT_EQ(k.size(), 1u);
  EXPECT_EQ(k[0].source, path + ":1");
  EXPECT_EQ(k[0].why, "ticket 123");
  { std::ofstream(path) << "[[expected_failure]]\nfilter = \"kind=write\"\nwhy = \"x\"\n"; }
  try {
    load_known_failures(path);
    ADD_FAILURE() << "no error";
  } catch (const CaseFileError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown field in [top level]"), std::string::npos) << e.what();
  }
}

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
    EXPECT_NE(std::string(e.what()).find("big.toml:5: field 'batch_sizes': 68719476736 tokens"), std::string::npos)
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

namespace kvh {
namespace {

const char* kFp8 = R"(
seeds = [1]
[[write]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["kv_first"]
num_tokens = [4]
block_sizes = [16]
dtypes = ["fp16", "bf16"]
kv_cache_dtype = ["fp16", "fp8_e4m3fn", "fp8_e4m3fnuz"]
kv_scales = ["none", "token"]
writers = ["reshape_and_cache"]
)";

// kv_cache_dtype x kv_scales: a 16-bit entry applies to its own dtype and takes no scales; ids of
// 16-bit cases are unchanged, fp8 ones get /kv=FMT and non-none scales /scales=G.
TEST(CaseFile, Fp8CacheAxesExpandAndSuffixIdsOnlyWhenNotDefault) {
  const auto cases = parse_case_text(kFp8, "fp8.toml");
  // fp16: 1 (16-bit, none) + 2 formats x 2 scales; bf16: the 2 x 2 fp8 ones only.
  ASSERT_EQ(cases.size(), 5u + 4u);
  EXPECT_EQ(cases[0].kv_cache_dtype, KvCacheDType::Same);
  EXPECT_EQ(cases[0].kv_cache_dtype_name(), "fp16");
  EXPECT_EQ(cases[0].id(), "write/Qwen3-235B-A22B/tp8/hd128/kv_first/bs16/fp16/n4/reshape_and_cache/s1");
  EXPECT_EQ(cases[1].kv_cache_dtype, KvCacheDType::Fp8E4m3fn);
  EXPECT_EQ(cases[1].kv_scales, KvScales::None);
  EXPECT_EQ(cases[1].id(), "write/Qwen3-235B-A22B/tp8/hd128/kv_first/bs16/fp16/n4/reshape_and_cache/kv=fp8_e4m3fn/s1");
  EXPECT_EQ(cases[4].id(),
            "write/Qwen3-235B-A22B/tp8/hd128/kv_first/bs16/fp16/n4/reshape_and_cache/kv=fp8_e4m3fnuz/scales=token/s1");
  EXPECT_EQ(cases[5].dtype, DType::BF16);
  EXPECT_TRUE(cases[5].fp8_cache());
  // Without the axes: 16-bit caches, no scales.
  const auto plain = parse_case_text(kGood, "good.toml");
  for (const Case& c : plain) {
    EXPECT_FALSE(c.fp8_cache());
    EXPECT_EQ(c.kv_scales, KvScales::None);
  }
}

// int8 caches (issue 22): ids gain kv=int8/ and scales=G/, slot scales included.
TEST(CaseFile, Int8CachesTakeEveryGranularityAndNameTheirIds) {
  const std::string text = "[[write]]\nmodels = [\"Qwen3-235B-A22B\"]\ntp = 8\nlayouts = [\"kv_first\"]\n"
                           "num_tokens = [4]\nblock_sizes = [16]\ndtypes = [\"fp16\"]\nwriters = [\"reshape_and_cache\"]\n"
                           "kv_cache_dtype = [\"int8\"]\nkv_scales = [\"token\", \"slot\"]\n";
  const auto cases = parse_case_text(text, "int8.toml");
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].kv_cache_dtype, KvCacheDType::Int8);
  EXPECT_EQ(cases[0].kv_cache_dtype_name(), "int8");
  EXPECT_TRUE(cases[0].int8_cache() && cases[0].quantized_cache() && !cases[0].fp8_cache());
  EXPECT_EQ(cases[1].kv_scales, KvScales::Slot);
  EXPECT_EQ(cases[1].id(), "write/Qwen3-235B-A22B/tp8/hd128/kv_first/bs16/fp16/n4/reshape_and_cache/kv=int8/scales=slot/s1");
}

TEST(CaseFile, BadFp8AxesNameFileLineFieldAndWhatWasExpected) {
  const std::string head = "[[write]]\nmodels = [\"Qwen3-235B-A22B\"]\ntp = 8\nlayouts = [\"kv_first\"]\n"
                           "num_tokens = [4]\nblock_sizes = [16]\ndtypes = [\"bf16\"]\nwriters = [\"w\"]\n";
  testing::expect_error(head + "kv_cache_dtype = [\"fp8_e5m2\"]\n",
                        "bad.toml:9: field 'kv_cache_dtype': unknown value 'fp8_e5m2'; expected one of fp16, bf16, "
                        "fp8_e4m3fn, fp8_e4m3fnuz, int8. 'fp8_e5m2' is vLLM's E5M2 kv_cache_dtype: no kvharness cache dtype");
  // A stack's name says which kvharness name it is (vLLM's "fp8" is fnuz on MI300, fn on CUDA and MI350).
  testing::expect_error(head + "kv_cache_dtype = [\"fp8\"]\n",
                        "bad.toml:9: field 'kv_cache_dtype': unknown value 'fp8'; expected one of fp16, bf16, "
                        "fp8_e4m3fn, fp8_e4m3fnuz, int8. 'fp8' is vLLM's kv_cache_dtype for fp8 E4M3: kvharness "
                        "fp8_e4m3fnuz on MI300X/MI325X (gfx942");
  testing::expect_error(head + "kv_cache_dtype = [\"fp8_e4m3fn\", \"fp8_e4m3\"]\n",
                        "bad.toml:9: field 'kv_cache_dtype': unknown value 'fp8_e4m3'; expected one of fp16, bf16, "
                        "fp8_e4m3fn, fp8_e4m3fnuz, int8. 'fp8_e4m3' is vLLM's kv_cache_dtype, the same as 'fp8'");
  testing::expect_error(head + "kv_cache_dtype = [\"float8_e4m3fnuz\"]\n",
                        "unknown value 'float8_e4m3fnuz'; expected one of fp16, bf16, fp8_e4m3fn, fp8_e4m3fnuz, int8. "
                        "'float8_e4m3fnuz' is torch's name: kvharness fp8_e4m3fnuz");
  EXPECT_EQ(stack_dtype_hint("fp9"), "");  // no hint for a name no stack uses
  testing::expect_error(head.substr(0, head.find("dtypes")) + "dtypes = [\"bfloat16\"]\nwriters = [\"w\"]\n",
                        "field 'dtypes': unknown value 'bfloat16'; expected one of fp16, bf16. 'bfloat16' is torch's "
                        "name: kvharness bf16");
  testing::expect_error(head + "kv_cache_dtype = [\"fp8_e4m3fn\"]\nkv_scales = [\"channel\"]\n",
                        "bad.toml:10: field 'kv_scales': unknown value 'channel'; expected one of none, tensor, head, "
                        "block, token, slot");
  testing::expect_error(head + "kv_scales = [\"head\"]\n", "bad.toml:9: field 'kv_scales': scales (tensor, head, "
                                                           "block, token, slot) need an fp8 or int8 cache");
  testing::expect_error(head + "kv_cache_dtype = [\"fp16\"]\n",
                        "bad.toml:9: field 'kv_cache_dtype': a 16-bit cache holds the K/V dtype; 'fp16' is not among dtypes");
  // int8 (issue 22): its codes need scales; none, named or by default, is refused at the table's line.
  testing::expect_error(head + "kv_cache_dtype = [\"int8\"]\n",
                        "bad.toml:9: field 'kv_cache_dtype': an int8 cache needs dequant scales: give kv_scales "
                        "without \"none\"");
  testing::expect_error(head + "kv_cache_dtype = [\"int8\"]\nkv_scales = [\"slot\", \"none\"]\n",
                        "bad.toml:9: field 'kv_cache_dtype': an int8 cache needs dequant scales");
  testing::expect_error(head + "kv_cache_dtype = \"fp8_e4m3fn\"\n",
                        "bad.toml:9: field 'kv_cache_dtype': expected a non-empty array of strings, got a string");
}

}  // namespace
}  // namespace kvh

// ---- issue 23 (B long contexts) ----
namespace kvh {
namespace {
// tolerance = "derived": fp16 outputs of 16-bit caches only; ids gain /tol=derived; bad values name the field.
TEST(CaseFile, DerivedToleranceKey) {
  const std::string head = "[[attention]]\nmodels = [\"Qwen3-235B-A22B\"]\ntp = 8\nlayouts = [\"separate\"]\n"
                           "batch_sizes = [1]\ncontext_lens = [40000, 40000]\nblock_sizes = [16]\n"
                           "readers = [\"paged_attention_rocm\"]\n";
  const auto plain = parse_case_text(head + "dtypes = [\"fp16\"]\n", "t.toml");
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_FALSE(plain[0].derived_tolerance);
  EXPECT_EQ(plain[0].id().find("tol="), std::string::npos) << "default ids keep their old form";
  const auto derived = parse_case_text(head + "dtypes = [\"fp16\"]\ntolerance = \"derived\"\n", "t.toml");
  ASSERT_EQ(derived.size(), 1u);
  EXPECT_TRUE(derived[0].derived_tolerance);
  EXPECT_NE(derived[0].id().find("/tol=derived/s1"), std::string::npos) << derived[0].id();
  EXPECT_EQ(parse_case_text(head + "dtypes = [\"fp16\"]\ntolerance = \"dtype\"\n", "t.toml")[0].id(), plain[0].id());
  testing::expect_error(head + "dtypes = [\"fp16\"]\ntolerance = \"ulp\"\n",
                        "bad.toml:10: field 'tolerance': expected \"dtype\" or \"derived\", got 'ulp'");
  testing::expect_error(head + "dtypes = [\"bf16\"]\ntolerance = \"derived\"\n",
                        "field 'tolerance': \"derived\" applies to fp16 outputs of 16-bit caches only, not MLA; this "
                        "table makes a bf16 output");
  testing::expect_error(head + "dtypes = [\"fp16\"]\nkv_cache_dtype = [\"fp8_e4m3fn\"]\ntolerance = \"derived\"\n",
                        "this table makes an fp8 or int8 cache");
}

// low_logits where it was measured sound (bf16, no soft-cap, no sinks); refused elsewhere at `values`.
TEST(CaseFile, LowLogitsOnlyWhereSound) {
  const std::string head = "[[attention]]\nmodels = [\"gemma-2-9b\"]\ntp = 2\nlayouts = [\"kv_first\"]\n"
                           "batch_sizes = [2]\ncontext_lens = [1, 300]\nblock_sizes = [16]\n"
                           "readers = [\"paged_attention_rocm\"]\nvalues = [\"low_logits\"]\n";
  EXPECT_EQ(parse_case_text(head + "dtypes = [\"bf16\"]\n", "t.toml").size(), 1u);
  testing::expect_error(head + "dtypes = [\"fp16\"]\n",
                        "bad.toml:9: field 'values': \"low_logits\" is for bf16 outputs without soft-cap or sinks; "
                        "this table makes an fp16 output");
  testing::expect_error(head + "dtypes = [\"bf16\"]\nsoftcap = 30.0\n", "this table makes a soft-cap");
  testing::expect_error(head + "dtypes = [\"bf16\"]\nsinks = true\n", "this table makes sinks");
  testing::expect_error(head + "dtypes = [\"fp16\"]\ntolerance = \"derived\"\n", "field 'values'");
}
}  // namespace
}  // namespace kvh
// ---- end issue 23 (B long contexts) ----
