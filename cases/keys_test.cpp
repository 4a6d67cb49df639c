// The key table (keys.h) against the places that use it: the loader reads
// exactly the keys it lists (a key the table lacks is a std::logic_error at
// the read, so every load fails), the filter's keys are its filter column, and
// the documentation is its Markdown (the CTest CaseFileKeysDoc diffs
// docs/case-file-keys.md with `kvharness info --keys`).
#include "keys.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "case_file.h"
#include "case_file_test_util.h"
#include "expectation.h"
#include "filter.h"
#include "layout.h"

namespace kvh {
namespace {

// Every path of the loader that reads keys: [[model]]; [[write]] with a scoped
// declaration; [[attention]] without variants (readers, routers) and with route
// rules; [[pipeline]] with variants (and a variant's declaration) and without
// (writers); a top-level declaration.
const char* kEveryTable = R"(
seeds = [1]
[[model]]
name = "tiny"
num_heads = 8
num_kv_heads = 2
head_size = 64

[[write]]
models = ["tiny"]
layouts = ["kv_first"]
num_tokens = [4]
block_sizes = [16]
dtypes = ["fp16"]
writers = ["reshape_and_cache"]
[[write.expected_failure]]
why = "w"

[[attention]]
models = ["tiny"]
layouts = ["kv_first"]
block_sizes = [16]
dtypes = ["fp16"]
batch_sizes = [2]
context_lens = [1, 40]
readers = ["paged_attention_v1"]
routers = ["aiter-v0.1.12"]
target = "MI355X"
[[attention.expect_routed_to]]
reader = "pa_fwd_asm"

[[pipeline]]
models = ["tiny"]
layouts = ["kv_first"]
block_sizes = [16]
dtypes = ["fp16"]
context_lens_lists = [[1, 17]]
[[pipeline.variants]]
name = "v"
writer = "reshape_and_cache_shuffle"
reader = "paged_attention_v1"
[[pipeline.variants.expected_failure]]
why = "v"

[[pipeline]]
models = ["tiny"]
layouts = ["kv_first"]
block_sizes = [16]
dtypes = ["fp16"]
batch_sizes = [1]
context_lens = [1, 1]
writers = ["reshape_and_cache_shuffle"]
readers = ["paged_attention_v1"]

[[expected_failure]]
filter = "kind=write"
why = "top"
)";

const char* kKnownFailures = "[[known_failure]]\nfilter = \"writer=w\"\nwhy = \"k\"\n";

// The keys of table t that the loader must read: all it accepts but the ignored ones.
std::set<std::string> read_keys_of(KeyTable t) {
  std::set<std::string> out;
  for (const CaseKey& k : case_keys())
    if (k.in(t) && !k.ignored) out.insert(k.name);
  return out;
}

TEST(CaseFileKeys, TheLoaderReadsEveryKeyTheTableListsAndNoOther) {
  KeysRead read;
  ASSERT_NO_THROW(parse_case_file_text(kEveryTable, "every.toml", &read));
  ASSERT_NO_THROW(parse_known_failures_text(kKnownFailures, "known.toml", &read));
  for (KeyTable t : all_key_tables()) {
    SCOPED_TRACE(to_string(t));
    EXPECT_FALSE(read[t].empty()) << "kEveryTable does not reach this table";
    EXPECT_EQ(read[t], read_keys_of(t)) << "left: keys the loader read; right: keys the table lists (cases/keys.cpp)";
  }
}

TEST(CaseFileKeys, UnknownKeysNameFileLineKeyAndTheKeysOfTheirTable) {
  using kvh::testing::expect_error;
  auto expected = [](const std::string& where, KeyTable t) {
    std::string keys;
    for (const auto& k : accepted_keys(t)) keys += (keys.empty() ? "" : ", ") + k;
    return "field 'bogus': unknown field in [" + where + "]; expected one of " + keys;
  };
  const std::string write = "[[write]]\nmodels = [\"Qwen3-235B-A22B\"]\n";
  expect_error("bogus = 1\n" + write, "bad.toml:1: " + expected("top level", KeyTable::TopLevel));
  expect_error(write + "bogus = 1\n", "bad.toml:3: " + expected("write", KeyTable::Write));
  expect_error("[[attention]]\nbogus = 1\n", "bad.toml:2: " + expected("attention", KeyTable::Attention));
  expect_error("[[pipeline]]\nbogus = 1\n", "bad.toml:2: " + expected("pipeline", KeyTable::Pipeline));
  expect_error("[[model]]\nbogus = 1\n", "bad.toml:2: " + expected("model", KeyTable::Model));
  expect_error("[[expected_failure]]\nbogus = 1\n", expected("expected_failure", KeyTable::ExpectedFailure));
  expect_error(write + "[[write.expected_failure]]\nbogus = 1\n",
               expected("expected_failure", KeyTable::ScopedExpectedFailure));
  const std::string pipeline = "[[pipeline]]\nmodels = [\"Qwen3-235B-A22B\"]\nlayouts = [\"kv_first\"]\n"
                               "block_sizes = [16]\ndtypes = [\"fp16\"]\nbatch_sizes = [1]\ncontext_lens = [1, 1]\n";
  expect_error(pipeline + "[[pipeline.variants]]\nbogus = 1\n", expected("pipeline.variants", KeyTable::Variants));
  expect_error(pipeline + "routers = [\"aiter-v0.1.12\"]\n[[pipeline.expect_routed_to]]\nbogus = 1\n",
               expected("expect_routed_to", KeyTable::RouteRule));
  try {
    parse_known_failures_text("[[known_failure]]\nbogus = 1\n", "known.toml");
    ADD_FAILURE() << "no error";
  } catch (const CaseFileError& e) {
    EXPECT_NE(std::string(e.what()).find(expected("known_failure", KeyTable::KnownFailure)), std::string::npos)
        << e.what();
  }
}

// A pipeline case with every kernel field set: every filter key has a value.
Case every_field() {
  Case c;
  c.kind = CaseKind::Pipeline;
  c.model = "Qwen3-235B-A22B";
  c.num_heads = 16, c.num_kv_heads = 1, c.head_size = 128;
  c.writer = "reshape_and_cache_shuffle";
  c.reader = "paged_attention_v1";
  c.router_policy = "aiter-v0.1.12";
  c.target = "MI355X";
  c.batch_size = 4;
  c.launch_config = "t64";  // issue 23 (D)
  return c;
}

TEST(CaseFileKeys, TheFiltersKeysAreTheTablesFilterColumnAndCaseFields) {
  EXPECT_EQ(Filter::keys(), filter_keys());
  const Case c = every_field();
  for (const auto& key : filter_keys()) {
    SCOPED_TRACE(key);
    EXPECT_NE(case_field(c, key), "") << "a filter key of the table that case_field (filter.cpp) does not know";
    EXPECT_NO_THROW(Filter(key + "=*"));
    for (const auto& v : filter_key_values(key)) EXPECT_NO_THROW(Filter(key + "=" + v));
    const FilterKeySpec spec = filter_key_spec(key);
    if (!spec.values.empty() || spec.type != FilterType::Text)
      EXPECT_THROW(Filter(key + "=no_such_value"), FilterError);
    // A case's own value, as case_field spells it, is a filter value of its type that selects it.
    EXPECT_TRUE(Filter(key + "=" + case_field(c, key)).matches(c)) << case_field(c, key);
  }
  EXPECT_TRUE(Filter("kind=pipeline,shuffle=1,sinks=0,layout=kv_first,dtype=fp16").matches(c));
}

TEST(CaseFileKeys, ClosedSetsOfValuesAreTheNamesTheirParsersTake) {
  for (const auto& v : case_key(KeyTable::Write, "layouts").values) EXPECT_TRUE(parse_scheme(v)) << v;
  EXPECT_EQ(case_key(KeyTable::Write, "layouts").values.size(), all_schemes().size());
  for (const auto& v : case_key(KeyTable::Attention, "values").values) EXPECT_TRUE(parse_value_dist(v)) << v;
  for (const auto& v : case_key(KeyTable::Attention, "stale").values) EXPECT_TRUE(parse_stale(v)) << v;
  for (const auto& v : case_key(KeyTable::Attention, "kv_scales").values) EXPECT_TRUE(parse_kv_scales(v)) << v;
  EXPECT_EQ(case_key(KeyTable::ExpectedFailure, "reasons").values, expectable_reasons());
  EXPECT_EQ(case_key(KeyTable::KnownFailure, "component").values, expectable_components());
  EXPECT_EQ(case_key(KeyTable::RouteRule, "dtypes").values, case_key(KeyTable::Write, "dtypes").values);
}

bool numeric(KeyType t) {
  return t == KeyType::Integer || t == KeyType::Integers || t == KeyType::IntegerPair ||
         t == KeyType::IntegerLists || t == KeyType::IntegerAxis || t == KeyType::FloatAxis;
}

TEST(CaseFileKeys, EveryRowIsWellFormed) {
  for (const CaseKey& k : case_keys()) {
    SCOPED_TRACE(k.name);
    EXPECT_FALSE(k.meaning.empty());
    EXPECT_EQ(k.filter_only(), k.type == KeyType::Derived);
    if (k.filter_only()) EXPECT_EQ(k.filter, k.name);
    if (numeric(k.type)) EXPECT_TRUE(k.range.set() || !k.values_note.empty()) << "bounds, or bounds in words";
    for (const CaseKey& other : case_keys())
      if (&other != &k && other.name == k.name) EXPECT_EQ(other.tables & k.tables, 0u) << "two rows in one table";
  }
}

// The filter reads a key's values as the first row feeding it says (filter_key_spec): the others agree.
TEST(CaseFileKeys, TheRowsFeedingAFilterKeyAgreeOnItsType) {
  for (const auto& key : filter_keys()) {
    const FilterKeySpec spec = filter_key_spec(key);
    for (const CaseKey& k : case_keys())
      if (k.filter == key) EXPECT_EQ(filter_type_of(k), spec.type) << key << " fed by " << k.name;
    if (spec.type != FilterType::Text) EXPECT_TRUE(spec.values.empty() && spec.numbered.empty()) << key;
  }
  EXPECT_EQ(filter_key_spec("num_heads").type, FilterType::Integer);
  EXPECT_EQ(filter_key_spec("softcap").type, FilterType::Number);
  EXPECT_EQ(filter_key_spec("batch_size").range.hi, int64_t(1) << 22) << "the hull of num_tokens and batch_sizes";
  EXPECT_EQ(numbered_value("num_blocks+K", "num_blocks+07"), 7);
  EXPECT_FALSE(numbered_value("num_blocks+K", "num_blocks+"));
  EXPECT_FALSE(numbered_value("num_blocks+K", "num_blocks+-1"));
  EXPECT_FALSE(numbered_value("cus=N", "cus=1234567890123456789")) << "more than 18 digits";
  EXPECT_THROW(filter_key_spec("colour"), std::logic_error);
}

TEST(CaseFileKeys, TheMarkdownHasARowPerKeyAndEveryFilterKey) {
  const std::string md = case_keys_markdown();
  size_t rows = 0;
  for (size_t at = md.find("\n| `"); at != std::string::npos; at = md.find("\n| `", at + 1)) ++rows;
  EXPECT_EQ(rows, case_keys().size());
  for (const CaseKey& k : case_keys()) EXPECT_NE(md.find("| `" + k.name + "` | "), std::string::npos) << k.name;
  for (const auto& f : filter_keys()) EXPECT_NE(md.find("`" + f + "`"), std::string::npos) << f;
}

}  // namespace
}  // namespace kvh
