// Ragged queries in case files: the query_lens axis (N, [min, max], {mixed = [min, max]}),
// query_lens_lists beside context_lens_lists, the causal axis, the ids they give, and the
// errors of each, naming file:line, the field and what was expected.
#include "case_file.h"
#include "case_file_test_util.h"
#include "filter.h"

#include <gtest/gtest.h>

#include <set>

namespace kvh {
namespace {

using testing::expect_error;

// Nine lines: a key appended is on line 10.
const std::string kDecode = "[[attention]]\nmodels = [\"Llama-3.1-8B\"]\ntp = 2\nlayouts = [\"kv_first\"]\n"
                            "batch_sizes = [4]\ncontext_lens = [1, 300]\nblock_sizes = [16]\ndtypes = [\"fp16\"]\n"
                            "readers = [\"paged_attention_rocm\"]\n";
const std::string kDecodeId = "attention/Llama-3.1-8B/tp2/hd128/kv_first/bs16/fp16/n4/ctx1-300/reference+paged_attention_rocm/s1";

// The id of the case kDecode gives, with `part` ("/q8", ...) before the seed.
std::string id_with(const std::string& part) {
  return "attention/Llama-3.1-8B/tp2/hd128/kv_first/bs16/fp16/n4/ctx1-300/reference+paged_attention_rocm" + part + "/s1";
}

std::vector<std::string> ids(const std::vector<Case>& cases) {
  std::vector<std::string> out;
  for (const Case& c : cases) out.push_back(c.id());
  return out;
}

TEST(CaseFileRagged, WithoutTheKeysCasesAreDecodeAndKeepTheirIds) {
  const auto plain = parse_case_text(kDecode, "t.toml");
  ASSERT_EQ(plain.size(), 1u);
  const Case& c = plain[0];
  EXPECT_EQ(c.query_len_min, 1);
  EXPECT_EQ(c.query_len_max, 1);
  EXPECT_FALSE(c.query_mixed);
  EXPECT_TRUE(c.query_lens.empty());
  EXPECT_TRUE(c.causal);
  EXPECT_FALSE(c.ragged());
  EXPECT_EQ(c.max_query_len(), 1);
  EXPECT_EQ(c.modifiers(), 0u);
  EXPECT_EQ(c.id(), kDecodeId);
  // query_lens = 1 (or the range [1, 1], or causal = true) is decode: the same case, the same id.
  for (const char* same : {"query_lens = 1\n", "query_lens = [1]\n", "query_lens = [1, 1]\n", "query_lens = [[1, 1]]\n",
                           "causal = true\n"}) {
    const auto cases = parse_case_text(kDecode + same, "t.toml");
    ASSERT_EQ(cases.size(), 1u) << same;
    EXPECT_EQ(cases[0].id(), kDecodeId) << same;
    EXPECT_FALSE(cases[0].ragged()) << same;
    EXPECT_TRUE(cases[0].causal) << same;
  }
}

TEST(CaseFileRagged, EachQueryLensFormParsesAndSuffixesTheId) {
  auto one = [](const std::string& line) {
    const auto cases = parse_case_text(kDecode + line, "t.toml");
    EXPECT_EQ(cases.size(), 1u) << line;
    return cases.empty() ? Case{} : cases[0];
  };
  const Case n = one("query_lens = 8\n");
  EXPECT_EQ(n.query_len_min, 8);
  EXPECT_EQ(n.query_len_max, 8);
  EXPECT_FALSE(n.query_mixed);
  EXPECT_TRUE(n.query_lens.empty());
  EXPECT_TRUE(n.ragged());
  EXPECT_EQ(n.max_query_len(), 8);
  EXPECT_EQ(n.id(), id_with("/q8"));
  // A top-level array of two integers is ONE range, drawn with both ends.
  const Case range = one("query_lens = [2, 64]\n");
  EXPECT_EQ(range.query_len_min, 2);
  EXPECT_EQ(range.query_len_max, 64);
  EXPECT_FALSE(range.query_mixed);
  EXPECT_EQ(range.max_query_len(), 64);
  EXPECT_EQ(range.id(), id_with("/q2-64"));
  EXPECT_EQ(one("query_lens = [[2, 64]]\n").id(), range.id()) << "an array of one range";
  EXPECT_EQ(one("query_lens = [4]\n").id(), id_with("/q4")) << "an array of one N";
  const Case mixed = one("query_lens = {mixed = [16, 128]}\n");
  EXPECT_EQ(mixed.query_len_min, 16);
  EXPECT_EQ(mixed.query_len_max, 128);
  EXPECT_TRUE(mixed.query_mixed);
  EXPECT_TRUE(mixed.ragged());
  EXPECT_EQ(mixed.max_query_len(), 128);
  EXPECT_EQ(mixed.id(), id_with("/qmix16-128"));
  // A mixed batch's speculative sequences reach 8 whatever the chunk range, and it is ragged even at [1, 1].
  const Case small = one("query_lens = {mixed = [1, 1]}\n");
  EXPECT_TRUE(small.ragged());
  EXPECT_EQ(small.max_query_len(), 8);
  EXPECT_EQ(small.id(), id_with("/qmix1-1"));
  EXPECT_EQ(one("query_lens = [{mixed = [2, 4]}]\n").id(), id_with("/qmix2-4"));
  // The ragged part comes before the score modifiers; /noncausal after the query part.
  const Case both = one("query_lens = 8\ncausal = false\nsliding_window = 128\nsinks = true\n");
  EXPECT_FALSE(both.causal);
  EXPECT_EQ(both.id(), id_with("/q8/noncausal/win128/sinks"));
  EXPECT_EQ(both.modifiers(), 1u | 2u | 16u) << "KVH_MOD_NONCAUSAL beside the window and the sinks";
  EXPECT_EQ(one("query_lens = 8\n").modifiers(), 0u) << "causal ragged: no modifier bit";
}

TEST(CaseFileRagged, AnAxisOfEntriesCrossesWithCausalAndDecodeEntriesSkipNonCausal) {
  const auto cases =
      parse_case_text(kDecode + "query_lens = [1, 8, [2, 64], {mixed = [16, 128]}]\ncausal = [true, false]\n", "t.toml");
  // Decode (1) once: one query token sees its whole sequence either way; each ragged entry twice.
  EXPECT_EQ(ids(cases), (std::vector<std::string>{kDecodeId, id_with("/q8"), id_with("/q8/noncausal"), id_with("/q2-64"),
                                                  id_with("/q2-64/noncausal"), id_with("/qmix16-128"),
                                                  id_with("/qmix16-128/noncausal")}));
  EXPECT_TRUE(cases[0].causal);
  EXPECT_FALSE(cases[2].causal);
  EXPECT_EQ(cases[6].max_query_len(), 128);
  // The axes cross with the others (here the seeds), every id distinct.
  const auto seeded = parse_case_text("seeds = [1, 2]\n" + kDecode + "query_lens = [1, 3, 5]\ncausal = [false, true]\n",
                                      "t.toml");
  EXPECT_EQ(seeded.size(), 2u * (1 + 2 + 2));
  std::set<std::string> distinct;
  for (const Case& c : seeded) distinct.insert(c.id());
  EXPECT_EQ(distinct.size(), seeded.size());
}

// Issue: a causal axis of false alone, on a table of decode entries, is every entry skipped.
TEST(CaseFileRagged, CausalFalseNeedsARaggedEntry) {
  const std::string why = "field 'causal': false applies to ragged queries only";
  expect_error(kDecode + "causal = false\n", why);
  expect_error(kDecode + "causal = false\nquery_lens = 1\n", why);
  expect_error(kDecode + "query_lens = 1\ncausal = [true, false]\n", why);
  // Beside a ragged entry, a decode entry skips causal = false (one query token sees its whole sequence).
  const auto ragged = parse_case_text(kDecode + "causal = false\nquery_lens = 2\n", "t.toml");
  ASSERT_EQ(ragged.size(), 1u);
  EXPECT_EQ(ragged[0].id(), id_with("/q2/noncausal"));
  EXPECT_EQ(parse_case_text(kDecode + "causal = false\nquery_lens = [[1, 1], 2]\n", "t.toml").size(), 1u);
  // [1, [2, 8]]: an axis of two entries (only two integers at the top level are one range).
  EXPECT_EQ(parse_case_text(kDecode + "query_lens = [1, [2, 8]]\n", "t.toml").size(), 2u);
}

const std::string kLists = "[[attention]]\nmodels = [\"Llama-3.1-8B\"]\ntp = 2\nlayouts = [\"kv_first\"]\n"
                           "context_lens_lists = [[1, 512, 513], [4096]]\nblock_sizes = [16]\ndtypes = [\"fp16\"]\n"
                           "readers = [\"paged_attention_rocm\"]\n";  // eight lines

TEST(CaseFileRagged, QueryLensListsPairWithContextLensLists) {
  const std::string head = "attention/Llama-3.1-8B/tp2/hd128/kv_first/bs16/fp16/";
  const auto decode = parse_case_text(kLists, "t.toml");
  ASSERT_EQ(decode.size(), 2u);
  const auto cases = parse_case_text(kLists + "query_lens_lists = [[1, 100, 513], [1]]\ncausal = [true, false]\n", "t.toml");
  // List 0 is ragged (both causal values); list 1 is all ones: decode, its id unchanged, causal only.
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(cases[0].query_lens, (std::vector<int64_t>{1, 100, 513}));
  EXPECT_EQ(cases[0].context_lens, (std::vector<int64_t>{1, 512, 513}));
  EXPECT_EQ(cases[0].query_len_min, 1);
  EXPECT_EQ(cases[0].query_len_max, 513);
  EXPECT_FALSE(cases[0].query_mixed);
  EXPECT_EQ(cases[0].max_query_len(), 513);
  EXPECT_EQ(cases[0].id(), head + "n3/ctx=1+512+513/reference+paged_attention_rocm/q=1+100+513/s1");
  EXPECT_EQ(cases[1].id(), head + "n3/ctx=1+512+513/reference+paged_attention_rocm/q=1+100+513/noncausal/s1");
  EXPECT_TRUE(cases[2].query_lens.empty());
  EXPECT_FALSE(cases[2].ragged());
  EXPECT_EQ(cases[2].id(), decode[1].id());
  EXPECT_EQ(cases[2].id(), head + "n1/ctx=4096/reference+paged_attention_rocm/s1");
  // Past eight sequences a list is its count and hash, spelled as the context list of the same lengths.
  const std::string nine = "[1, 2, 3, 4, 5, 6, 7, 8, 9]";
  std::string long_lists = kLists;
  long_lists.replace(long_lists.find("[[1, 512, 513], [4096]]"), 23, "[" + nine + "]");
  const auto hashed = parse_case_text(long_lists + "query_lens_lists = [" + nine + "]\n", "t.toml");
  ASSERT_EQ(hashed.size(), 1u);
  const std::string id = hashed[0].id();
  const size_t ctx = id.find("/ctx=9@"), q = id.find("/q=9@");
  ASSERT_NE(ctx, std::string::npos) << id;
  ASSERT_NE(q, std::string::npos) << id;
  EXPECT_EQ(id.substr(ctx + 5, 2 + 16), id.substr(q + 3, 2 + 16)) << id;
  EXPECT_EQ(id.substr(q + 3 + 2 + 16), "/s1") << id;
}

TEST(CaseFileRagged, QueryLensFiltersAsMaxQueryLenAndCausal) {
  const auto cases =
      parse_case_text(kDecode + "query_lens = [1, 8, {mixed = [2, 4]}]\ncausal = [true, false]\n", "t.toml");
  ASSERT_EQ(cases.size(), 5u);
  std::vector<std::string> kept;
  for (const Case& c : cases)
    if (Filter("max_query_len=8,causal=0").matches(c)) kept.push_back(c.id());
  EXPECT_EQ(kept, (std::vector<std::string>{id_with("/q8/noncausal"), id_with("/qmix2-4/noncausal")}));
  kept.clear();
  for (const Case& c : cases)
    if (Filter("max_query_len=1").matches(c)) kept.push_back(c.id());
  EXPECT_EQ(kept, (std::vector<std::string>{kDecodeId}));
}

TEST(CaseFileRagged, BadQueryLensNameFileLineFieldAndWhatWasExpected) {
  const std::string expected =
      "bad.toml:10: field 'query_lens': expected a query length N, [min, max] or {mixed = [min, max]} with lengths "
      "in [1, 1048576] and min <= max (two integers at the top level are one range: lengths 8 and 4 are "
      "[[8, 8], [4, 4]]), got ";
  expect_error(kDecode + "query_lens = \"8\"\n", expected + "a string");
  expect_error(kDecode + "query_lens = 2.5\n", expected + "a float");
  expect_error(kDecode + "query_lens = true\n", expected + "a boolean");
  expect_error(kDecode + "query_lens = 0\n", expected + "0");
  expect_error(kDecode + "query_lens = -3\n", expected + "-3");
  expect_error(kDecode + "query_lens = 1048577\n", expected + "1048577");
  EXPECT_EQ(parse_case_text(kDecode + "query_lens = 1048576\n", "t.toml")[0].query_len_max, 1048576) << "2^20 itself";
  expect_error(kDecode + "query_lens = [64, 2]\n", expected + "[64, 2]");
  expect_error(kDecode + "query_lens = [[64, 2]]\n", expected + "[64, 2]");
  expect_error(kDecode + "query_lens = {mixed = [64, 2]}\n", expected + "[64, 2]");
  expect_error(kDecode + "query_lens = [0, 8]\n", expected + "0");
  expect_error(kDecode + "query_lens = [2, 1048577]\n", expected + "1048577");
  expect_error(kDecode + "query_lens = [2, \"8\"]\n", expected + "a string");
  expect_error(kDecode + "query_lens = [4, 0, 8]\n", expected + "0");
  expect_error(kDecode + "query_lens = [[2, 8, 16]]\n", expected + "an array");
  expect_error(kDecode + "query_lens = [[2]]\n", expected + "an array");
  expect_error(kDecode + "query_lens = []\n", "bad.toml:10: field 'query_lens': expected a value or a non-empty array of values");
  // A table has the one key `mixed`, a pair.
  expect_error(kDecode + "query_lens = {mixed = [2, 8], causal = true}\n",
               expected.substr(0, expected.size() - std::string(", got ").size()) + " (a table has the one key `mixed`)");
  expect_error(kDecode + "query_lens = {mix = [2, 8]}\n", "(a table has the one key `mixed`)");
  expect_error(kDecode + "query_lens = {}\n", "(a table has the one key `mixed`)");
  expect_error(kDecode + "query_lens = {mixed = 8}\n", expected + "an integer");
  expect_error(kDecode + "query_lens = {mixed = [2, 8, 16]}\n", expected + "an array");
  // At the element's own line.
  expect_error(kDecode + "query_lens = [\n  4,\n  {mixed = [9, 3]},\n]\n", "bad.toml:12: field 'query_lens'");
  // causal: a boolean or an array of them.
  expect_error(kDecode + "causal = \"no\"\n", "bad.toml:10: field 'causal': expected true or false, got a string");
  expect_error(kDecode + "query_lens = 8\ncausal = [true, 0]\n", "bad.toml:11: field 'causal': expected true or false, got an integer");
  expect_error(kDecode + "causal = []\n", "bad.toml:10: field 'causal': expected a value or a non-empty array of values");
  // Decode keys: not in [[write]].
  expect_error("[[write]]\nmodels = [\"Llama-3.1-8B\"]\nlayouts = [\"kv_first\"]\nnum_tokens = [4]\nblock_sizes = [16]\n"
               "dtypes = [\"fp16\"]\nwriters = [\"reshape_and_cache\"]\nquery_lens = 8\n",
               "bad.toml:8: field 'query_lens': unknown field in [write]");
}

TEST(CaseFileRagged, BadQueryLensListsNameFileLineFieldAndWhatWasExpected) {
  expect_error(kDecode + "query_lens_lists = [[1, 2, 3, 4]]\n",
               "bad.toml:10: field 'query_lens_lists': needs context_lens_lists beside it (list i gives batch i's query "
               "lengths)");
  expect_error(kLists + "query_lens = 4\nquery_lens_lists = [[1, 2, 3], [4]]\n",
               "bad.toml:10: field 'query_lens_lists': not allowed beside query_lens");
  expect_error(kLists + "query_lens_lists = [[1, 2, 3]]\n",
               "bad.toml:9: field 'query_lens_lists': expected 2 lists, one per context_lens_lists list");
  expect_error(kLists + "query_lens_lists = [[1, 2, 3], [4], [5]]\n", "expected 2 lists, one per context_lens_lists list");
  expect_error(kLists + "query_lens_lists = 3\n", "bad.toml:9: field 'query_lens_lists': expected 2 lists");
  expect_error(kLists + "query_lens_lists = [[1, 2], [4]]\n",
               "bad.toml:9: field 'query_lens_lists': list 0 must have 3 query lengths, as context_lens_lists list 0");
  expect_error(kLists + "query_lens_lists = [[1, 2, 3], 4]\n",
               "field 'query_lens_lists': list 1 must have 1 query lengths, as context_lens_lists list 1");
  // Each at most its sequence's context length (and at least 1).
  expect_error(kLists + "query_lens_lists = [[1, 513, 513], [4]]\n",
               "bad.toml:9: field 'query_lens_lists': expected an integer query length in [1, 512] (sequence 1's "
               "context length)");
  expect_error(kLists + "query_lens_lists = [[2, 2, 3], [4]]\n", "expected an integer query length in [1, 1] (sequence 0's");
  expect_error(kLists + "query_lens_lists = [[1, 2, 3], [0]]\n",
               "expected an integer query length in [1, 4096] (sequence 0's context length)");
  expect_error(kLists + "query_lens_lists = [[1, 2, 3], [\"4\"]]\n", "expected an integer query length in [1, 4096]");
  // At the line of the bad element.
  expect_error(kLists + "query_lens_lists = [\n  [1, 2, 3],\n  [4097],\n]\n", "bad.toml:11: field 'query_lens_lists'");
  EXPECT_EQ(parse_case_text(kLists + "query_lens_lists = [[1, 512, 513], [4096]]\n", "t.toml")[1].query_lens,
            (std::vector<int64_t>{4096}))
      << "a whole sequence is a query";
}

}  // namespace
}  // namespace kvh
