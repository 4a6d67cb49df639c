// The logical inputs of a decode case (attention, pipeline), from the case
// and its data seed alone: the sequences and their pages, the block tables in
// kernel pages, the score modifiers' values, and the inputs a `values` axis
// shapes on the host. Shapes outermost first, in elements.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "case.h"

namespace kvh {

/// Bytes of the guarded margins around `out`, block_tables and context_lens.
constexpr int64_t kSmallMargin = 4096;

/// The sequences of one case, in the cache manager's blocks.
struct Sequences {
  std::vector<int32_t> context_lens;  // [num_seqs], tokens
  std::vector<int32_t> block_tables;  // [num_seqs, max_blocks]; entries past a sequence's pages hold padding_id
  int64_t max_blocks = 0, num_blocks = 0, total_tokens = 0;
  int32_t padding_id = -1;            // -1 or num_blocks + K (Case::block_table_padding): out of range
  std::vector<int64_t> slots;         // [total_tokens], sequence by sequence
  // The query: sequence i's q_i new tokens are its last q_i, at query rows query_start_loc[i] ..
  std::vector<int32_t> query_lens;       // [num_seqs], each in [1, context_lens[i]]; all 1 for decode
  std::vector<int32_t> query_start_loc;  // [num_seqs + 1], cumulative query_lens from 0
  int64_t num_query_tokens = 0, max_query_len = 1;
};

/// Draws the context lengths (the case's list, or [min, max] with both ends
/// drawn when the batch has two or more), then gives the sequences a shuffle
/// of the block ids from Case::min_block_id up; block 0 is the null block,
/// and every row of block_tables has at least one padding entry. Then the
/// query lengths (Case::query_len_min .. query_mixed; ragged cases only, so
/// decode cases draw exactly what they drew before), each clamped to its
/// sequence's length.
Sequences make_sequences(const Case& c, std::mt19937_64& rng);

/// Per-sequence query lengths before clamping: the case's list, or draws
/// from [query_len_min, query_len_max] that include its ends; a mixed batch
/// includes max, min, 1, 8 and 2 (in that order of priority when the batch is
/// smaller), the rest each decode, speculative [2, 8] or a chunk [min, max]
/// at random. The ends go to the longest sequences of context_lens [num_seqs]
/// (the largest to the longest), the rest to the others in random order. All
/// 1 for decode (nothing drawn).
std::vector<int64_t> draw_query_lens(const Case& c, std::mt19937_64& rng, const std::vector<int32_t>& context_lens);

/// The block tables the reader gets, in kernel pages (Case::page_size()):
/// manager block m = pages m*r .. m*r+r-1, r = pages_per_block. Padding stays
/// out of range in pages: -1, or num_pages + K (Case::block_table_padding).
struct PageTables {
  std::vector<int32_t> tables;  // [num_seqs, max_pages]
  int64_t page = 0, pages_per_block = 1, max_pages = 0, num_pages = 0;
  int32_t padding_id = -1;
};
PageTables make_page_tables(const Case& c, const Sequences& s);

/// The values behind a case's score modifiers, as float32 (what the reader
/// gets) for the local heads [tp_rank * num_heads, (tp_rank + 1) * num_heads)
/// of the model's num_heads * tp.
struct ModifierValues {
  std::vector<float> sinks, alibi_slopes;  // [num_heads] each, or empty (off)
};
ModifierValues modifier_values(const Case& c);

/// The host's logical inputs of a case whose `values` axis reshapes them
/// (value_dist.h): query [num_seqs, num_heads * head_size], key and value
/// [total_tokens, num_kv_heads * head_size], 16-bit bits.
struct ShapedInputs {
  std::vector<uint16_t> query, key, value;
};
ShapedInputs make_shaped_inputs(const Case& c, const Sequences& s, uint64_t data_seed);

}  // namespace kvh
