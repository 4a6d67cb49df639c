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

}  // namespace
}  // namespace kvh
