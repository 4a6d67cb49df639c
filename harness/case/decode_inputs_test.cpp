// The sequences of a decode case (decode_inputs.h): drawn query lengths of
// ragged cases (both ends of a range, the kinds of a mixed batch, shuffled,
// clamped to the context length, query_start_loc, the same for every paging),
// and decode cases drawing exactly what they drew before ragged queries: the
// same context lengths, block tables and slots, and the rng left where it was.
#include "case/decode_inputs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <set>

namespace kvh {
namespace {

Case decode_case(int64_t batch, int64_t ctx_min, int64_t ctx_max) {
  Case c;
  c.kind = CaseKind::Attention;
  c.model = "m";
  c.num_heads = 8, c.num_kv_heads = 2, c.head_size = 64;
  c.block_size = 16;
  c.batch_size = batch;
  c.context_len_min = ctx_min, c.context_len_max = ctx_max;
  c.reader = "paged_attention_rocm";
  return c;
}

Case ragged(Case c, int64_t qmin, int64_t qmax, bool mixed = false) {
  c.query_len_min = qmin, c.query_len_max = qmax, c.query_mixed = mixed;
  return c;
}

// make_sequences as it was before ragged queries (60d9783^), verbatim: the steps a decode
// case's draws must still be.
Sequences old_make_sequences(const Case& c, std::mt19937_64& rng) {
  std::vector<int64_t> lens = c.context_lens;
  if (lens.empty()) {
    std::uniform_int_distribution<int64_t> len(c.context_len_min, c.context_len_max);
    for (int64_t i = 0; i < c.batch_size; ++i)
      lens.push_back(i == 0 ? c.context_len_max : i == 1 ? c.context_len_min : len(rng));
    std::shuffle(lens.begin(), lens.end(), rng);
  }
  Sequences s;
  int64_t used = 0;
  for (int64_t n : lens) {
    s.context_lens.push_back(int32_t(n));
    const int64_t blocks = (n + c.block_size - 1) / c.block_size;
    s.max_blocks = std::max(s.max_blocks, blocks);
    used += blocks;
    s.total_tokens += n;
  }
  ++s.max_blocks;
  s.num_blocks = c.min_block_id + used + used / 8 + 1;
  std::vector<int32_t> ids(size_t(s.num_blocks - c.min_block_id));
  std::iota(ids.begin(), ids.end(), int32_t(c.min_block_id));
  std::shuffle(ids.begin(), ids.end(), rng);
  s.padding_id = c.block_table_padding < 0 ? -1 : int32_t(s.num_blocks + c.block_table_padding);
  s.block_tables.assign(size_t(c.batch_size * s.max_blocks), s.padding_id);
  size_t next = 0;
  for (int64_t i = 0; i < c.batch_size; ++i) {
    const int64_t n = s.context_lens[size_t(i)];
    const int64_t blocks = (n + c.block_size - 1) / c.block_size;
    for (int64_t b = 0; b < blocks; ++b) s.block_tables[size_t(i * s.max_blocks + b)] = ids[next++];
    for (int64_t t = 0; t < n; ++t)
      s.slots.push_back(int64_t(s.block_tables[size_t(i * s.max_blocks + t / c.block_size)]) * c.block_size +
                        t % c.block_size);
  }
  return s;
}

void expect_same_pages(const Sequences& a, const Sequences& b, const std::string& what) {
  EXPECT_EQ(a.context_lens, b.context_lens) << what;
  EXPECT_EQ(a.block_tables, b.block_tables) << what;
  EXPECT_EQ(a.slots, b.slots) << what;
  EXPECT_EQ(a.max_blocks, b.max_blocks) << what;
  EXPECT_EQ(a.num_blocks, b.num_blocks) << what;
  EXPECT_EQ(a.total_tokens, b.total_tokens) << what;
  EXPECT_EQ(a.padding_id, b.padding_id) << what;
}

// The decode cases of the default suites' shapes: a drawn range, an explicit list, padding, min_block_id.
std::vector<Case> decode_cases() {
  std::vector<Case> out;
  out.push_back(decode_case(4, 1, 300));
  out.push_back(decode_case(1, 1, 4096));
  out.push_back(decode_case(33, 200, 700));
  Case listed = decode_case(3, 1, 513);
  listed.context_lens = {1, 512, 513};
  out.push_back(listed);
  Case padded = decode_case(5, 17, 90);
  padded.block_table_padding = 3;
  padded.min_block_id = 7;
  padded.block_size = 544;
  out.push_back(padded);
  return out;
}

TEST(DecodeInputs, DecodeCasesDrawExactlyWhatTheyDrewBefore) {
  for (const Case& c : decode_cases())
    for (uint64_t seed : {1ull, 2ull, 0x9e3779b97f4a7c15ull}) {
      const std::string what = c.id() + " seed " + std::to_string(seed);
      std::mt19937_64 now(seed), before(seed);
      const Sequences s = make_sequences(c, now);
      expect_same_pages(s, old_make_sequences(c, before), what);
      EXPECT_TRUE(now == before) << what << ": the rng is not where the old steps left it";
      // One query token a sequence, at row i.
      EXPECT_EQ(s.query_lens, std::vector<int32_t>(size_t(c.batch_size), 1)) << what;
      std::vector<int32_t> loc(size_t(c.batch_size + 1));
      std::iota(loc.begin(), loc.end(), 0);
      EXPECT_EQ(s.query_start_loc, loc) << what;
      EXPECT_EQ(s.num_query_tokens, c.batch_size) << what;
      EXPECT_EQ(s.max_query_len, 1) << what;
      // draw_query_lens draws nothing for decode.
      std::mt19937_64 r(seed), untouched(seed);
      EXPECT_EQ(draw_query_lens(c, r, s.context_lens), std::vector<int64_t>(size_t(c.batch_size), 1));
      EXPECT_TRUE(r == untouched) << what;
    }
  // A list of ones is decode too (not ragged): nothing drawn.
  Case ones = decode_cases()[0];
  ones.query_lens = {1, 1, 1, 1};
  std::mt19937_64 r(5), untouched(5);
  EXPECT_EQ(draw_query_lens(ones, r, {5, 6, 7, 8}), std::vector<int64_t>(4, 1));
  EXPECT_TRUE(r == untouched);
}

// A ragged case draws its query lengths right after its context lengths, before the block ids
// (issue 24: both are logical inputs): its context lengths are its decode twin's, and another block
// size, first block id or padding (the pages alone) leaves both lists as they are.
TEST(DecodeInputs, RaggedCasesDrawTheirQueryLengthsBeforeTheBlockIds) {
  for (const Case& c : decode_cases())
    for (const Case& r : {ragged(c, 3, 40), ragged(c, 16, 128, true), ragged(c, 5, 5)})
      for (uint64_t seed : {1ull, 77ull}) {
        const std::string what = r.id() + " seed " + std::to_string(seed);
        std::mt19937_64 d_rng(seed), r_rng(seed);
        const Sequences d = make_sequences(c, d_rng);
        const Sequences s = make_sequences(r, r_rng);
        EXPECT_EQ(s.context_lens, d.context_lens) << what;
        Case paged = r;
        paged.block_size = r.block_size * 2;
        paged.min_block_id = r.min_block_id + 5;  // other ids: the block tables must differ
        paged.block_table_padding = r.block_table_padding < 0 ? 3 : -1;
        std::mt19937_64 p_rng(seed);
        const Sequences p = make_sequences(paged, p_rng);
        EXPECT_EQ(p.context_lens, s.context_lens) << what;
        EXPECT_EQ(p.query_lens, s.query_lens) << what << ": the pages moved the query lengths";
        EXPECT_NE(p.block_tables, s.block_tables) << what;
        ASSERT_EQ(s.query_lens.size(), size_t(r.batch_size)) << what;
        ASSERT_EQ(s.query_start_loc.size(), size_t(r.batch_size + 1)) << what;
        EXPECT_EQ(s.query_start_loc[0], 0) << what;
        int32_t most = 0;
        for (size_t i = 0; i < s.query_lens.size(); ++i) {
          // Clamped to the sequence's length: the new tokens are its last ones.
          EXPECT_LE(s.query_lens[i], s.context_lens[i]) << what << " sequence " << i;
          EXPECT_GE(s.query_lens[i], 1) << what;
          EXPECT_EQ(s.query_start_loc[i + 1], s.query_start_loc[i] + s.query_lens[i]) << what;
          most = std::max(most, s.query_lens[i]);
        }
        EXPECT_EQ(s.num_query_tokens, s.query_start_loc.back()) << what;
        EXPECT_EQ(s.num_query_tokens, std::accumulate(s.query_lens.begin(), s.query_lens.end(), int64_t(0))) << what;
        EXPECT_EQ(s.max_query_len, most) << what;
        EXPECT_LE(s.max_query_len, r.max_query_len()) << what;
      }
}

// Distinct context lengths 300 - n + 1 .. 300 in an order of `seed`'s (the batch order of a case).
std::vector<int32_t> shuffled_contexts(int64_t n, uint64_t seed) {
  std::vector<int32_t> out(static_cast<size_t>(n), 0);
  std::iota(out.begin(), out.end(), int32_t(300 - n + 1));
  std::mt19937_64 rng(seed + 1000);
  std::shuffle(out.begin(), out.end(), rng);
  return out;
}

TEST(DecodeInputs, ARangeDrawsBothEndsWithinItAtShuffledPositions) {
  const Case r = ragged(decode_case(16, 1, 300), 3, 40);
  std::set<size_t> where_max, where_min;
  std::set<int64_t> seen;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    const std::vector<int32_t> ctx = shuffled_contexts(16, seed);
    const std::vector<int64_t> q = draw_query_lens(r, rng, ctx);
    ASSERT_EQ(q.size(), 16u);
    for (int64_t n : q) {
      EXPECT_GE(n, 3);
      EXPECT_LE(n, 40);
      seen.insert(n);
    }
    const auto max = std::find(q.begin(), q.end(), 40), min = std::find(q.begin(), q.end(), 3);
    ASSERT_NE(max, q.end()) << "seed " << seed << ": the range's max not drawn";
    ASSERT_NE(min, q.end()) << "seed " << seed << ": the range's min not drawn";
    where_max.insert(size_t(max - q.begin()));
    where_min.insert(size_t(min - q.begin()));
    // The ends sit on the longest sequences: the max on the longest, the min on the next.
    const auto on = [&](int32_t len) { return q[size_t(std::find(ctx.begin(), ctx.end(), len) - ctx.begin())]; };
    EXPECT_EQ(on(300), 40) << "seed " << seed;
    EXPECT_EQ(on(299), 3) << "seed " << seed;
  }
  EXPECT_GT(where_max.size(), 4u) << "the ends sit at random batch positions";
  EXPECT_GT(where_min.size(), 4u);
  EXPECT_GT(seen.size(), 20u) << "the rest drawn from the whole range";
  // A batch of one has room for one end: the max.
  std::mt19937_64 rng(3);
  EXPECT_EQ(draw_query_lens(ragged(decode_case(1, 1, 300), 3, 40), rng, {7}), std::vector<int64_t>{40});
  // N: every sequence N.
  EXPECT_EQ(draw_query_lens(ragged(decode_case(6, 1, 300), 9, 9), rng, shuffled_contexts(6, 1)),
            std::vector<int64_t>(6, 9));
}

TEST(DecodeInputs, AMixedBatchHasDecodeSpeculativeAndChunksShuffled) {
  const Case r = ragged(decode_case(24, 1, 4096), 16, 128, true);
  std::set<size_t> where_decode;
  int decode = 0, speculative = 0, chunks = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    std::mt19937_64 rng(seed);
    const std::vector<int64_t> q = draw_query_lens(r, rng, shuffled_contexts(24, seed));
    ASSERT_EQ(q.size(), 24u);
    for (int64_t must : {1, 2, 8, 16, 128})
      EXPECT_NE(std::find(q.begin(), q.end(), must), q.end()) << "seed " << seed << ": no " << must;
    for (int64_t n : q) {
      EXPECT_TRUE(n == 1 || (n >= 2 && n <= 8) || (n >= 16 && n <= 128)) << n;
      (n == 1 ? decode : n <= 8 ? speculative : chunks) += 1;
    }
    where_decode.insert(size_t(std::find(q.begin(), q.end(), 1) - q.begin()));
  }
  EXPECT_GT(where_decode.size(), 4u) << "shuffled: the decode sequence is not always first";
  // Beyond the five ends, each kind about a third of the rest (19 x 40 draws).
  for (int n : {decode - 40, speculative - 80, chunks - 80}) {
    EXPECT_GT(n, 19 * 40 / 3 - 80);
    EXPECT_LT(n, 19 * 40 / 3 + 80);
  }
  // A batch smaller than five gets the first of max, min, 1, 8, 2: the chunk's ends first.
  std::mt19937_64 rng(1);
  std::vector<int64_t> three = draw_query_lens(ragged(decode_case(3, 1, 4096), 16, 128, true), rng, {50, 300, 90});
  EXPECT_EQ(three, (std::vector<int64_t>{1, 128, 16})) << "the largest on the longest sequence";
  // max_query_len covers the speculative 8 when the chunks are shorter.
  EXPECT_EQ(ragged(decode_case(3, 1, 4096), 2, 4, true).max_query_len(), 8);
}

TEST(DecodeInputs, QueryLengthsAreClampedToTheContextAndListsAreKept) {
  // Short sequences: a query never exceeds its sequence, and every sequence has at least one.
  Case c = ragged(decode_case(6, 1, 300), 50, 500);
  c.context_lens = {1, 2, 49, 50, 51, 300};
  for (uint64_t seed : {1ull, 2ull, 3ull}) {
    std::mt19937_64 rng(seed);
    const Sequences s = make_sequences(c, rng);
    for (size_t i = 0; i < 6; ++i) {
      EXPECT_LE(s.query_lens[i], s.context_lens[i]);
      EXPECT_GE(s.query_lens[i], std::min<int32_t>(50, s.context_lens[i]));
    }
    EXPECT_EQ(s.query_lens[0], 1);
    EXPECT_EQ(s.query_lens[1], 2);
    EXPECT_EQ(s.query_lens[2], 49);
    EXPECT_EQ(s.query_lens[3], 50);
  }
  // An explicit list is taken as it is, and draws nothing.
  Case listed = decode_case(4, 1, 300);
  listed.context_lens = {10, 20, 30, 40};
  listed.query_lens = {10, 1, 7, 40};
  listed.query_len_min = 1, listed.query_len_max = 40;
  std::mt19937_64 a(9), b(9);
  EXPECT_EQ(draw_query_lens(listed, a, {10, 20, 30, 40}), listed.query_lens);
  EXPECT_TRUE(a == b);
  const Sequences s = make_sequences(listed, a);
  EXPECT_EQ(s.query_lens, (std::vector<int32_t>{10, 1, 7, 40}));
  EXPECT_EQ(s.query_start_loc, (std::vector<int32_t>{0, 10, 11, 18, 58}));
  EXPECT_EQ(s.num_query_tokens, 58);
  EXPECT_EQ(s.max_query_len, 40);
  expect_same_pages(s, old_make_sequences(listed, b), "listed");
  EXPECT_TRUE(a == b);
}

}  // namespace
}  // namespace kvh
