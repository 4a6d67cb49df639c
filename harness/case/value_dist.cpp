#include <algorithm>
#include "case/value_dist.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "case/values.h"

namespace kvh {

namespace {

constexpr int64_t kPartition = 256;  // the readers' default partition_size
constexpr double kQueryBias = 4.0;   // q = 4 s + r, |r| <= 2

// splitmix64 of (a, b): per-index randomness without a stream.
uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t z = a ^ (b + 0x9E3779B97F4A7C15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

double pow2_at_least(double v) { return std::exp2(std::ceil(std::log2(v))); }

void scale_all(DType dt, std::vector<uint16_t>& v, double factor, double limit) {
  for (auto& e : v) {
    double x = decode16(dt, e) * factor;
    if (x > limit) x = limit;
    if (x < -limit) x = -limit;
    e = encode16(dt, float(x));
  }
}

// low_logits (value_dist.h): K[.., D-1] = 1024 and Q[.., D-1] = -M for every row.
void shape_low_logits(const Case& c, std::vector<uint16_t>& query, std::vector<uint16_t>& key) {
  const DType dt = c.dtype;
  const int64_t D = c.head_size;
  const double scale = c.softmax_scale > 0 ? c.softmax_scale : 1.0 / std::sqrt(double(D));
  const double key_last = 1024.0, need = (6.06e4 / scale + 4.0 * double(D - 1)) / key_last;
  uint16_t m = encode16(dt, float(need));
  while (decode16(dt, m) < need) ++m;  // positive: the next bit pattern is the next larger value
  const uint16_t q_last = encode16(dt, -float(decode16(dt, m))), k_last = encode16(dt, float(key_last));
  for (size_t i = size_t(D - 1); i < query.size(); i += size_t(D)) query[i] = q_last;
  for (size_t i = size_t(D - 1); i < key.size(); i += size_t(D)) key[i] = k_last;
}

// away_from_zero (value_dist.h): |x| -> 0.5 + 0.75 |x|, the sign kept (+ for 0).
void keep_away_from_zero(DType dt, std::vector<uint16_t>& v) {
  for (auto& e : v) {
    const double x = decode16(dt, e);
    e = encode16(dt, float((x < 0 ? -1.0 : 1.0) * (0.5 + 0.75 * std::fabs(x))));
  }
}

}  // namespace

SinkMagnitudes sink_key_magnitudes(int64_t head_size) {
  // Worst cases with the 16-bit rounding of q (|q s| in [2 - 2^-6, 6 + 2^-6]):
  // weak sink logit >= 1.9 sqrt(D) weak, <= 6.1 sqrt(D) weak; any other token |logit| <= 12.2 sqrt(D).
  const double g = std::sqrt(double(head_size));
  SinkMagnitudes m;
  m.weak = pow2_at_least((100.0 + 12.2 * g) / (1.9 * g) + 1e-9);
  m.dominant = pow2_at_least((100.0 + 6.1 * g * m.weak) / (1.9 * g) + 1e-9);
  return m;
}

double value_scale(const Case& c) {
  if (c.values != ValueDist::Large) return 1.0;
  return std::exp2(c.dtype == DType::F16 ? 15 : 111);
}

SinkTokens sink_tokens(const Case& c, int64_t seq, int64_t n) {
  const uint64_t h = mix(case_data_seed(c), uint64_t(seq));
  SinkTokens t;
  const int64_t first = n < kPartition ? n : kPartition;
  t.early = int64_t(h % uint64_t(first));
  if (n > kPartition) {
    const int64_t start = (n - 1) / kPartition * kPartition;
    t.last = start + int64_t(mix(h, 1) % uint64_t(n - start));
  }
  t.early_dominates = seq % 2 == 0 || t.last < 0;
  return t;
}

void shape_values(const Case& c, const std::vector<int32_t>& context_lens, std::vector<uint16_t>& query,
                  std::vector<uint16_t>& key, std::vector<uint16_t>& value, const std::vector<int32_t>& query_start_loc) {
  const int64_t S = int64_t(context_lens.size()), HD = c.head_size, NKV = c.num_kv_heads, NH = c.num_heads;
  int64_t T = 0;
  for (int32_t n : context_lens) T += n;
  std::vector<int32_t> rows = query_start_loc;  // decode: one query row per sequence
  if (rows.empty())
    for (int32_t i = 0; i <= int32_t(S); ++i) rows.push_back(i);
  const bool increasing = rows.front() == 0 && std::is_sorted(rows.begin(), rows.end());
  if (S != c.batch_size || int64_t(rows.size()) != S + 1 || !increasing || int64_t(query.size()) != rows.back() * NH * HD ||
      int64_t(key.size()) != T * NKV * HD ||
      key.size() != value.size() || NKV < 1 || NH % NKV != 0)
    throw std::invalid_argument("shape_values: tensor sizes disagree with case " + c.id());
  const DType dt = c.dtype;
  switch (c.values) {
    case ValueDist::Normal: return;
    case ValueDist::Large: {
      const bool f16 = dt == DType::F16;
      scale_all(dt, key, std::exp2(f16 ? 14 : 100), 1e300);
      scale_all(dt, query, std::exp2(f16 ? -14 : -100), 1e300);
      scale_all(dt, value, value_scale(c), f16 ? 65504.0 : 1e300);
      return;
    }
    case ValueDist::LowLogits: return shape_low_logits(c, query, key);
    case ValueDist::AwayFromZero:
      keep_away_from_zero(dt, key);
      keep_away_from_zero(dt, value);
      return;
    case ValueDist::Sink: break;
  }
  const SinkMagnitudes mag = sink_key_magnitudes(HD);
  const int64_t group = NH / NKV;
  const uint64_t seed = case_data_seed(c);
  int64_t tok0 = 0;
  for (int64_t i = 0; i < S; ++i) {
    const int64_t n = context_lens[size_t(i)];
    const SinkTokens st = sink_tokens(c, i, n);
    for (int64_t kv = 0; kv < NKV; ++kv) {
      auto sign = [&](int64_t d) { return (mix(mix(seed, uint64_t(i * NKV + kv)), uint64_t(d)) & 1) ? 1.0 : -1.0; };
      for (int64_t row = rows[size_t(i)]; row < rows[size_t(i) + 1]; ++row)  // every query token of the sequence
        for (int64_t j = 0; j < group; ++j) {  // every query head of kv head kv's group (h / group == kv)
          uint16_t* q = query.data() + row * NH * HD + (kv * group + j) * HD;
          for (int64_t d = 0; d < HD; ++d) q[d] = encode16(dt, float(kQueryBias * sign(d) + decode16(dt, q[d])));
        }
      for (int64_t which = 0; which < 2; ++which) {
        const int64_t t = which == 0 ? st.early : st.last;
        if (t < 0) continue;
        const bool dominant = (which == 0) == st.early_dominates;
        uint16_t* k = key.data() + (tok0 + t) * NKV * HD + kv * HD;
        for (int64_t d = 0; d < HD; ++d) k[d] = encode16(dt, float((dominant ? mag.dominant : mag.weak) * sign(d)));
      }
    }
    tok0 += n;
  }
}

}  // namespace kvh
