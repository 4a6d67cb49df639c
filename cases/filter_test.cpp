#include "filter.h"

#include <gtest/gtest.h>

namespace kvh {
namespace {

Case sample() {
  Case c;
  c.model = "Qwen3.5-397B-A17B";
  c.head_size = 256;
  c.layout = Scheme::Interleaved;
  c.writer = "reshape_and_cache_shuffle";
  c.batch_size = 512;
  return c;
}

// Issue 11: expected failures of the masking fixtures are scoped by stale pattern and padding.
TEST(Filter, StaleAndBlockTablePaddingAreKeys) {
  Case c = sample();
  c.kind = CaseKind::Attention;
  EXPECT_TRUE(Filter("stale=random,block_table_padding=-1").matches(c));
  c.stale = Stale::Inf;
  c.block_table_padding = 4;
  EXPECT_TRUE(Filter("stale=nan|inf,block_table_padding=num_blocks+*").matches(c));
  EXPECT_FALSE(Filter("stale=nan").matches(c));
  EXPECT_THROW(Filter("stale=zero"), FilterError);
}

TEST(Filter, TermsAreAndedWithAlternativesGlobsAndNegation) {
  Case c = sample();
  EXPECT_TRUE(Filter("").matches(c));
  EXPECT_TRUE(Filter("head_size=256,layout=interleaved").matches(c));
  EXPECT_FALSE(Filter("head_size=256,layout=padded").matches(c));
  EXPECT_TRUE(Filter("layout=padded|interleaved").matches(c));
  EXPECT_TRUE(Filter("writer=*shuffle,shuffle=1").matches(c));
  EXPECT_FALSE(Filter("writer!=reshape_and_cache_*").matches(c));
  EXPECT_TRUE(Filter("id=" + c.id()).matches(c));
  Case other = c;
  other.seed = 2;
  EXPECT_FALSE(Filter("id=" + c.id()).matches(other));
}

TEST(Filter, MatchesAFieldMapAsItMatchesTheCase) {
  const Case c = sample();
  std::map<std::string, std::string> fields;
  for (const auto& k : Filter::keys()) fields[k] = case_field(c, k);
  for (const char* expr : {"", "head_size=256,layout=interleaved", "head_size=256,layout=padded",
                           "writer=*shuffle,shuffle=1", "writer!=reshape_and_cache_*", "reader=?*", "reader="})
    EXPECT_EQ(Filter(expr).matches(fields), Filter(expr).matches(c)) << expr;
  EXPECT_TRUE(Filter("layout=interleaved").matches(fields));
  EXPECT_FALSE(Filter("layout=padded").matches(fields)) << "a term that does not hold";
  // A key the map lacks is "": it matches an empty value or a negated one, never a glob of one character.
  fields.erase("target");
  EXPECT_TRUE(Filter("target=").matches(fields));
  EXPECT_FALSE(Filter("target=?*").matches(fields));
  EXPECT_TRUE(Filter("target!=gfx*").matches(fields));
}

TEST(Filter, BadTermsNameTheTermAndTheKnownKeys) {
  EXPECT_THROW(Filter("head_size"), FilterError);
  EXPECT_THROW(Filter("layout=interleavd"), FilterError) << "a typo in a closed set of values";
  EXPECT_THROW(Filter("kind=writes"), FilterError);
  EXPECT_NO_THROW(Filter("layout=inter*"));
  try {
    Filter("colour=red");
    FAIL();
  } catch (const FilterError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key 'colour'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("head_size"), std::string::npos);
  }
}

// A value that is not of its key's type (cases/keys.h) is a bad filter, not an empty
// selection: under --bisect, an empty selection reads as "skip".
TEST(Filter, AValueNotOfItsKeysTypeNamesTheTermTheKeyItsTypeAndRange) {
  for (const char* expr : {"tp=abc", "head_size=abc", "seed=x", "softcap=abc", "tp=8.5", "batch_size=1e3",
                           "block_table_padding=zzz", "tp=8|abc", "num_heads=four", "sliding_window=1k"})
    EXPECT_THROW(Filter{expr}, FilterError) << expr;
  auto message = [](const std::string& expr) {
    try {
      Filter f(expr);
    } catch (const FilterError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("tp=abc"), "filter term 'tp=abc': tp takes an integer in 1..1024; 'abc' is not one");
  EXPECT_EQ(message("softcap!=30|abc"),
            "filter term 'softcap!=30|abc': softcap takes a number in 0..1000000; 'abc' is not one");
  EXPECT_EQ(message("tp_rank=x"), "filter term 'tp_rank=x': tp_rank takes an integer; 'x' is not one");
  EXPECT_EQ(message("block_table_padding=zzz"),
            "filter term 'block_table_padding=zzz': unknown block_table_padding 'zzz'; known: -1, or num_blocks+K "
            "(K in 0..16)");
  EXPECT_NO_THROW(Filter("block_table_padding=-1|num_blocks+3"));
}

TEST(Filter, IntegerAndNumberKeysCompareAsNumbers) {
  Case c = sample();
  c.kind = CaseKind::Attention;
  c.tp = 8;
  c.softcap = 30;
  c.block_table_padding = 4;
  std::map<std::string, std::string> fields;
  for (const auto& k : Filter::keys()) fields[k] = case_field(c, k);
  ASSERT_EQ(fields["softcap"], "30.0");
  for (const char* expr : {"tp=08", "tp=8", "tp=1|8", "softcap=30", "softcap=30.0", "softcap=3e1", "head_size=0256",
                           "block_table_padding=num_blocks+04", "tp!=4", "softcap!=30.5"}) {
    EXPECT_TRUE(Filter(expr).matches(c)) << expr;
    EXPECT_TRUE(Filter(expr).matches(fields)) << expr;
  }
  for (const char* expr : {"tp=80", "tp!=08", "softcap=30.5", "softcap!=30", "block_table_padding=num_blocks+5"}) {
    EXPECT_FALSE(Filter(expr).matches(c)) << expr;
    EXPECT_FALSE(Filter(expr).matches(fields)) << expr;
  }
}

// Globs are matched against the value as case_field spells it, unchecked; the empty
// value selects the cases a key does not apply to.
TEST(Filter, GlobsAndTheEmptyValueAreMatchedAsText) {
  Case c = sample();
  c.tp = 8;
  c.softcap = 30;
  EXPECT_TRUE(Filter("head_size=2*,tp=[0-9],softcap=30*,seed=?").matches(c));
  EXPECT_FALSE(Filter("head_size=1*").matches(c));
  EXPECT_FALSE(Filter("softcap=30").matches(Case{})) << "softcap 0.0";
  EXPECT_NO_THROW(Filter("tp=a*")) << "a glob is not checked";
  EXPECT_FALSE(Filter("tp=").matches(c));
  EXPECT_TRUE(Filter("tp=").matches(std::map<std::string, std::string>{})) << "a key the entry lacks";
  EXPECT_TRUE(Filter("block_table_padding=").matches(c)) << "a write case has no padding";
}

// Ragged queries: max_query_len (a mixed batch's speculative sequences reach 8) and causal, 0 or 1.
TEST(Filter, MaxQueryLenAndCausalAreKeys) {
  Case c = sample();
  c.kind = CaseKind::Attention;
  c.reader = "paged_attention_rocm";
  EXPECT_EQ(case_field(c, "max_query_len"), "1") << "decode";
  EXPECT_EQ(case_field(c, "causal"), "1");
  EXPECT_TRUE(Filter("max_query_len=1,causal=1").matches(c));
  EXPECT_FALSE(Filter("max_query_len!=1").matches(c));
  c.query_len_min = 2;
  c.query_len_max = 64;
  EXPECT_EQ(case_field(c, "max_query_len"), "64");
  EXPECT_TRUE(Filter("max_query_len=064").matches(c)) << "compared as an integer";
  EXPECT_TRUE(Filter("max_query_len=8|64").matches(c));
  EXPECT_FALSE(Filter("max_query_len=1").matches(c));
  c.query_mixed = true;
  c.query_len_max = 4;
  EXPECT_EQ(case_field(c, "max_query_len"), "8") << "mixed: speculative [2, 8] beside chunks of at most 4";
  c.query_len_max = 100;
  EXPECT_EQ(case_field(c, "max_query_len"), "100");
  c.query_mixed = false;
  c.query_lens = {1, 7, 3};  // an explicit list: min and max are its extremes
  c.query_len_min = 1;
  c.query_len_max = 7;
  EXPECT_TRUE(Filter("max_query_len=7").matches(c));
  c.causal = false;
  EXPECT_EQ(case_field(c, "causal"), "0");
  EXPECT_TRUE(Filter("causal=0,max_query_len=7").matches(c));
  EXPECT_FALSE(Filter("causal=1").matches(c));
  EXPECT_TRUE(Filter("causal!=1").matches(c));
  // Booleans are 0 and 1, as sinks; an integer key takes integers.
  EXPECT_THROW(Filter("causal=false"), FilterError);
  EXPECT_THROW(Filter("causal=2"), FilterError);
  EXPECT_THROW(Filter("max_query_len=many"), FilterError);
  EXPECT_THROW(Filter("max_query_len=1.5"), FilterError);
  EXPECT_NO_THROW(Filter("max_query_len=1*")) << "a glob is not checked";
}

}  // namespace
}  // namespace kvh
