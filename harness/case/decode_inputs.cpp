#include "case/decode_inputs.h"

#include <algorithm>
#include <numeric>

#include "attention.h"
#include "case/value_dist.h"
#include "case/values.h"
#include "device/counter_rng.h"

namespace kvh {

namespace {

// Per-sequence context lengths: the case's explicit list, or draws from
// [min, max] whose first two are the ends themselves (when the batch has
// room), so that a range meant to reach a partition edge always reaches it.
std::vector<int64_t> draw_context_lens(const Case& c, std::mt19937_64& rng) {
  if (!c.context_lens.empty()) return c.context_lens;
  std::uniform_int_distribution<int64_t> len(c.context_len_min, c.context_len_max);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < c.batch_size; ++i)
    out.push_back(i == 0 ? c.context_len_max : i == 1 ? c.context_len_min : len(rng));
  std::shuffle(out.begin(), out.end(), rng);  // the ends sit at random batch positions
  return out;
}

std::vector<uint16_t> host_stream(DType dtype, uint64_t data_seed, uint64_t stream, int64_t n) {
  const U16Buffer b = counter16(dtype, rng::kInput, rng::stream_key(data_seed, stream), size_t(n));
  return {b.begin(), b.end()};
}

}  // namespace

std::vector<int64_t> draw_query_lens(const Case& c, std::mt19937_64& rng, const std::vector<int32_t>& context_lens) {
  if (!c.ragged()) return std::vector<int64_t>(size_t(c.batch_size), 1);
  if (!c.query_lens.empty()) return c.query_lens;
  std::uniform_int_distribution<int64_t> chunk(c.query_len_min, c.query_len_max), spec(2, 8), kind(0, 2);
  // The lengths every batch must reach, the chunk's ends first (a small batch keeps those).
  std::vector<int64_t> ends = c.query_mixed ? std::vector<int64_t>{c.query_len_max, c.query_len_min, 1, 8, 2}
                                            : std::vector<int64_t>{c.query_len_max, c.query_len_min};
  ends.resize(std::min(ends.size(), size_t(c.batch_size)));
  std::sort(ends.rbegin(), ends.rend());
  std::vector<int64_t> rest;
  for (size_t i = ends.size(); i < size_t(c.batch_size); ++i) {
    const int64_t k = c.query_mixed ? kind(rng) : 2;
    rest.push_back(k == 0 ? 1 : k == 1 ? spec(rng) : chunk(rng));
  }
  // The ends go to the longest sequences, longest first, so that clamping to a sequence's
  // length keeps them where it can; the drawn rest to the others in random order. The batch
  // order stays random: the context lengths are shuffled.
  std::vector<size_t> by_len(size_t(c.batch_size));
  std::iota(by_len.begin(), by_len.end(), size_t(0));
  std::stable_sort(by_len.begin(), by_len.end(),
                   [&](size_t a, size_t b) { return context_lens[a] > context_lens[b]; });
  std::shuffle(rest.begin(), rest.end(), rng);
  std::vector<int64_t> out(size_t(c.batch_size));
  for (size_t i = 0; i < by_len.size(); ++i) out[by_len[i]] = i < ends.size() ? ends[i] : rest[i - ends.size()];
  return out;
}

Sequences make_sequences(const Case& c, std::mt19937_64& rng) {
  Sequences s;
  int64_t used = 0;
  for (int64_t n : draw_context_lens(c, rng)) {
    s.context_lens.push_back(int32_t(n));
    const int64_t blocks = (n + c.block_size - 1) / c.block_size;
    s.max_blocks = std::max(s.max_blocks, blocks);
    used += blocks;
    s.total_tokens += n;
  }
  // Every row gets at least one padding entry: a reader that looks one page past a
  // sequence's last page finds the padding id there, never another sequence's page.
  ++s.max_blocks;
  // The query lengths before the block ids: both are logical inputs, drawn the same for
  // every block size and layout (issue 24); the shuffle of the ids comes last.
  const std::vector<int64_t> q = draw_query_lens(c, rng, s.context_lens);
  // Block 0 is the null block, blocks below min_block_id are unused; a few spare blocks
  // hold stale tokens nobody owns. The sequences' pages are a shuffle of the ids above.
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
  s.query_start_loc.push_back(0);
  for (int64_t i = 0; i < c.batch_size; ++i) {
    s.query_lens.push_back(int32_t(std::min<int64_t>(q[size_t(i)], s.context_lens[size_t(i)])));
    s.query_start_loc.push_back(s.query_start_loc.back() + s.query_lens.back());
    s.max_query_len = std::max<int64_t>(s.max_query_len, s.query_lens.back());
  }
  s.num_query_tokens = s.query_start_loc.back();
  return s;
}

PageTables make_page_tables(const Case& c, const Sequences& s) {
  PageTables p;
  p.page = c.page_size();
  p.pages_per_block = c.block_size / p.page;
  p.max_pages = s.max_blocks * p.pages_per_block;
  p.num_pages = s.num_blocks * p.pages_per_block;
  p.padding_id = c.block_table_padding < 0 ? -1 : int32_t(p.num_pages + c.block_table_padding);
  p.tables = s.block_tables;
  if (p.pages_per_block == 1) return p;
  p.tables.assign(size_t(c.batch_size * p.max_pages), p.padding_id);
  for (int64_t i = 0; i < c.batch_size; ++i)
    for (int64_t j = 0; j < p.max_pages; ++j) {
      const int32_t m = s.block_tables[size_t(i * s.max_blocks + j / p.pages_per_block)];
      if (m != s.padding_id) p.tables[size_t(i * p.max_pages + j)] = int32_t(m * p.pages_per_block + j % p.pages_per_block);
    }
  return p;
}

// Sinks: uniform in [0, 6) per GLOBAL head from the case's seed alone (not its id), so the ranks of one
// model see slices of one vector; e^6 ~ 400 is of the order of the exp-sum of a few hundred unit-scale
// logits, so a sink counted twice moves the output well beyond tolerance. Slopes: reference::alibi_slopes
// of the model's global head count, the rank's slice.
ModifierValues modifier_values(const Case& c) {
  ModifierValues m;
  const int64_t total = c.num_heads * c.tp, first = int64_t(c.tp_rank) * c.num_heads;
  if (c.sinks) {
    std::mt19937_64 rng(rng::stream_key(c.seed, 0x51c5u));
    std::uniform_real_distribution<double> u(0.0, 6.0);
    std::vector<float> all;
    for (int64_t h = 0; h < total; ++h) all.push_back(float(u(rng)));
    m.sinks.assign(all.begin() + first, all.begin() + first + c.num_heads);
  }
  if (c.alibi) {
    const std::vector<double> all = reference::alibi_slopes(total);
    for (int64_t h = 0; h < c.num_heads; ++h) m.alibi_slopes.push_back(float(all[size_t(first + h)]));
  }
  return m;
}

ShapedInputs make_shaped_inputs(const Case& c, const Sequences& s, uint64_t data_seed) {
  const int64_t T = s.total_tokens, kw = c.num_kv_heads * c.head_size;
  ShapedInputs in;
  in.key = host_stream(c.dtype, data_seed, rng::kKeys, T * kw);
  in.value = host_stream(c.dtype, data_seed, rng::kValues, T * kw);
  in.query = host_stream(c.dtype, data_seed, rng::kQueries, s.num_query_tokens * c.num_heads * c.head_size);
  shape_values(c, s.context_lens, in.query, in.key, in.value, s.query_start_loc);
  return in;
}

}  // namespace kvh
