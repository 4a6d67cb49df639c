#include "case/decode_reference.h"

#include <vector>

#include "../reference/int8.h"
#include "case/values.h"
#include "mla_attention.h"
#include "device/counter_rng.h"
#include "run/parallel.h"

namespace kvh {

namespace {

// Sequence i's K and V [n, num_kv_heads * head_size] as 16-bit bits: the
// caller's tensors, or generated from the case's streams into this thread's buffers.
struct SequenceBits {
  const uint16_t *k = nullptr, *v = nullptr;
};
SequenceBits sequence_bits(const Case& c, const uint16_t* k, const uint16_t* v, uint64_t data_seed, int64_t tok0,
                           int64_t n) {
  const int64_t kw = c.num_kv_heads * c.head_size;
  if (k) return {k + tok0 * kw, v + tok0 * kw};
  thread_local std::vector<uint16_t> kgen, vgen;
  kgen.resize(size_t(n * kw));
  vgen.resize(size_t(n * kw));
  const bool bf16 = c.dtype == DType::BF16;
  rng::fill_run16(rng::kInput, bf16, kgen.data(), 1, n * kw, rng::stream_key(data_seed, rng::kKeys), uint64_t(tok0 * kw));
  rng::fill_run16(rng::kInput, bf16, vgen.data(), 1, n * kw, rng::stream_key(data_seed, rng::kValues), uint64_t(tok0 * kw));
  return {kgen.data(), vgen.data()};
}

// K and V of one sequence widened to float64: what the cache holds (a 16-bit
// cache holds the inputs as they are; an fp8 cache their dequantized codes).
void widen_sequence(const Case& c, const Sequences& s, const SequenceBits& b, int64_t tok0, int64_t n,
                    const KvScaleTensors* fp8, reference::RowMatrix& K, reference::RowMatrix& V) {
  const int64_t kw = c.num_kv_heads * c.head_size;
  K.resize(n, kw);
  V.resize(n, kw);
  const std::optional<reference::Fp8Format> f8 = fp8_format(c);
  if (c.int8_cache() && fp8) {  // int8: code * scale in float64, the code from reference/int8.h
    auto cached = [&](uint16_t bits, bool is_value, int64_t token, int64_t j) {
      const int64_t slot = s.slots[size_t(token)], blk = slot / c.block_size, tok = slot % c.block_size;
      const int64_t head = j / c.head_size;
      const float sc = is_value ? fp8->v_at(blk, head, tok) : fp8->k_at(blk, head, tok);
      return reference::int8_decode(reference::int8_encode(float(decode16(c.dtype, bits)), sc), sc);
    };
    for (int64_t t = 0; t < n; ++t)
      for (int64_t j = 0; j < kw; ++j) {
        K(t, j) = cached(b.k[size_t(t * kw + j)], false, tok0 + t, j);
        V(t, j) = cached(b.v[size_t(t * kw + j)], true, tok0 + t, j);
      }
    return;
  }
  if (f8 && fp8) {
    auto cached = [&](uint16_t bits, bool is_value, int64_t token, int64_t j) {  // an fp8 cache's element
      const double x = decode16(c.dtype, bits);
      const int64_t slot = s.slots[size_t(token)], blk = slot / c.block_size, tok = slot % c.block_size;
      const int64_t head = j / c.head_size;
      const float sc = is_value ? fp8->v_at(blk, head, tok) : fp8->k_at(blk, head, tok);
      return reference::fp8_decode(reference::fp8_encode(double(float(x) / sc), *f8), *f8) * double(sc);
    };
    for (int64_t t = 0; t < n; ++t)
      for (int64_t j = 0; j < kw; ++j) {
        K(t, j) = cached(b.k[size_t(t * kw + j)], false, tok0 + t, j);
        V(t, j) = cached(b.v[size_t(t * kw + j)], true, tok0 + t, j);
      }
    return;
  }
  const double* value_of = decode16_table(c.dtype);
  for (int64_t e = 0; e < n * kw; ++e) {
    K.data()[e] = value_of[b.k[size_t(e)]];
    V.data()[e] = value_of[b.v[size_t(e)]];
  }
}

// The reference's input for one sequence, its K and V left empty.
reference::DecodeAttentionInput sequence_input(const Case& c, const uint16_t* q_row, double scale,
                                               const ModifierValues& mods) {
  const int64_t qw = c.num_heads * c.head_size;
  reference::DecodeAttentionInput in;
  in.num_heads = c.num_heads;
  in.num_kv_heads = c.num_kv_heads;
  in.head_size = c.head_size;
  in.scale = scale;
  in.sliding_window = c.sliding_window;
  in.softcap = double(float(c.softcap));  // the reader gets a float
  in.sinks.assign(mods.sinks.begin(), mods.sinks.end());
  in.alibi_slopes.assign(mods.alibi_slopes.begin(), mods.alibi_slopes.end());
  in.query.resize(1, qw);
  for (int64_t j = 0; j < qw; ++j) in.query(0, j) = decode16(c.dtype, q_row[j]);
  return in;
}

// Query rows [rows, num_heads * head_size] of 16-bit bits, widened to float64.
reference::RowMatrix widen_query(const Case& c, const uint16_t* q, int64_t rows) {
  const int64_t qw = c.num_heads * c.head_size;
  reference::RowMatrix out(rows, qw);
  for (int64_t e = 0; e < rows * qw; ++e) out.data()[e] = decode16(c.dtype, q[e]);
  return out;
}

}  // namespace

reference::RowMatrix reference_out(const Case& c, const Sequences& s, const uint16_t* q, const uint16_t* k,
                                   const uint16_t* v, uint64_t data_seed, double scale, const ModifierValues& mods,
                                   const std::atomic<bool>& cancel, const KvScaleTensors* fp8) {
  const int64_t qw = c.num_heads * c.head_size;
  std::vector<int64_t> first_token(size_t(c.batch_size) + 1, 0);
  for (int64_t i = 0; i < c.batch_size; ++i) first_token[size_t(i) + 1] = first_token[size_t(i)] + s.context_lens[size_t(i)];
  reference::RowMatrix out(s.num_query_tokens, qw);
  parallel_for(c.batch_size, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end && !cancel.load(std::memory_order_relaxed); ++i) {
      const int64_t row0 = s.query_start_loc[size_t(i)], rows = s.query_lens[size_t(i)];
      reference::DecodeAttentionInput in = sequence_input(c, q + row0 * qw, scale, mods);
      const int64_t n = s.context_lens[size_t(i)], tok0 = first_token[size_t(i)];
      reference::RowMatrix K, V;
      widen_sequence(c, s, sequence_bits(c, k, v, data_seed, tok0, n), tok0, n, fp8, K, V);
      if (c.ragged()) {  // decode cases keep decode_attention's arithmetic, bit for bit
        out.middleRows(row0, rows) =
            reference::ragged_sequence_attention(in, widen_query(c, q + row0 * qw, rows), K, V, c.causal);
        continue;
      }
      in.keys.push_back(std::move(K));
      in.values.push_back(std::move(V));
      out.row(i) = reference::decode_attention(in).row(0);
    }
  });
  return out;
}

reference::RowMatrix mla_reference_out(const Case& c, const Sequences& s, const uint16_t* q, uint64_t data_seed,
                                       double scale, const std::atomic<bool>& cancel, const KvScaleTensors* fp8) {
  const int64_t H = c.num_heads, R = c.kv_lora_rank, P = c.qk_rope_head_dim, D = R + P, qw = H * D;
  std::vector<int64_t> first_token(size_t(c.batch_size) + 1, 0);
  for (int64_t i = 0; i < c.batch_size; ++i) first_token[size_t(i) + 1] = first_token[size_t(i)] + s.context_lens[size_t(i)];
  const std::optional<reference::Fp8Format> f8 = fp8 ? fp8_format(c) : std::nullopt;
  const bool bf16 = c.dtype == DType::BF16;
  reference::RowMatrix out(s.num_query_tokens, H * R);
  parallel_for(c.batch_size, 1, [&](int64_t begin, int64_t end) {
    thread_local std::vector<uint16_t> kc, kpe;
    for (int64_t i = begin; i < end && !cancel.load(std::memory_order_relaxed); ++i) {
      const int64_t row0 = s.query_start_loc[size_t(i)], rows = s.query_lens[size_t(i)];
      const int64_t n = s.context_lens[size_t(i)], tok0 = first_token[size_t(i)];
      kc.resize(size_t(n * R));
      kpe.resize(size_t(n * P));
      rng::fill_run16(rng::kInput, bf16, kc.data(), 1, n * R, rng::stream_key(data_seed, rng::kKeys), uint64_t(tok0 * R));
      if (P > 0)
        rng::fill_run16(rng::kInput, bf16, kpe.data(), 1, n * P, rng::stream_key(data_seed, rng::kValues),
                        uint64_t(tok0 * P));
      reference::MlaAttentionInput in;
      in.num_heads = H, in.kv_lora_rank = R, in.rope_dim = P, in.scale = scale, in.causal = c.causal;
      in.query = widen_query(c, q + row0 * qw, rows);  // [rows, H * D]: head_size is R + P
      in.query_start_loc = {0, rows};
      reference::RowMatrix lat(n, D);
      for (int64_t t = 0; t < n; ++t)
        for (int64_t d = 0; d < D; ++d) {
          const double x = decode16(c.dtype, d < R ? kc[size_t(t * R + d)] : kpe[size_t(t * P + d - R)]);
          if (!f8) {
            lat(t, d) = x;
            continue;
          }
          const int64_t slot = s.slots[size_t(tok0 + t)];
          const float sc = fp8->k_at(slot / c.block_size, 0, slot % c.block_size);  // per-tensor: one scale
          lat(t, d) = reference::fp8_decode(reference::fp8_encode(double(float(x) / sc), *f8), *f8) * double(sc);
        }
      in.latent.push_back(std::move(lat));
      out.middleRows(row0, rows) = reference::mla_attention(in);
    }
  });
  return out;
}

}  // namespace kvh
