#include "attention.h"

#include <cmath>
#include <algorithm>
#include <stdexcept>
#include <string>

namespace kvh::reference {

namespace {
void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("decode_attention: " + what);
}
}  // namespace

std::vector<double> alibi_slopes(int64_t total_num_heads) {
  require(total_num_heads >= 1, "alibi_slopes: total_num_heads must be positive");
  int64_t n = 1;
  while (n * 2 <= total_num_heads) n *= 2;
  std::vector<double> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(std::exp2(-8.0 * double(i + 1) / double(n)));
  for (int64_t k = 0; n + k < total_num_heads; ++k) out.push_back(std::exp2(-4.0 * double(2 * k + 1) / double(n)));
  return out;
}

RowMatrix decode_attention(const DecodeAttentionInput& in) {
  const int64_t H = in.num_heads, KVH = in.num_kv_heads, D = in.head_size;
  require(H > 0 && KVH > 0 && D > 0, "num_heads, num_kv_heads and head_size must be positive");
  require(H % KVH == 0, "num_heads " + std::to_string(H) + " is not a multiple of num_kv_heads " + std::to_string(KVH));
  const int64_t num_seqs = in.query.rows();
  require(in.query.cols() == H * D, "query must have num_heads * head_size columns");
  require(int64_t(in.keys.size()) == num_seqs && int64_t(in.values.size()) == num_seqs,
          "keys and values need one matrix per sequence (query row)");
  require(in.sliding_window >= 0, "sliding_window must be >= 0 (0 = off)");
  require(in.softcap >= 0, "softcap must be >= 0 (0 = off)");
  require(in.sinks.empty() || int64_t(in.sinks.size()) == H, "sinks must be empty or have num_heads entries");
  require(in.alibi_slopes.empty() || int64_t(in.alibi_slopes.size()) == H,
          "alibi_slopes must be empty or have num_heads entries");
  const int64_t group = H / KVH;
  RowMatrix out = RowMatrix::Zero(num_seqs, H * D);
  for (int64_t s = 0; s < num_seqs; ++s) {
    const RowMatrix &K = in.keys[size_t(s)], &V = in.values[size_t(s)];
    require(K.cols() == KVH * D && V.cols() == KVH * D, "keys/values must have num_kv_heads * head_size columns");
    require(K.rows() == V.rows(), "keys and values of a sequence must have the same context_len");
    if (K.rows() == 0) continue;
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kvh = h / group;
      const Eigen::VectorXd q = in.query.row(s).segment(h * D, D).transpose();
      const int64_t L = K.rows();
      Eigen::VectorXd logits = in.scale * (K.middleCols(kvh * D, D) * q);
      if (in.softcap > 0) logits = in.softcap * (logits / in.softcap).array().tanh();
      if (!in.alibi_slopes.empty())
        for (int64_t t = 0; t < L; ++t) logits(t) += in.alibi_slopes[size_t(h)] * double(t - (L - 1));
      // The window keeps tokens [first, L): the last sliding_window ones.
      const int64_t first = in.sliding_window > 0 && L > in.sliding_window ? L - in.sliding_window : 0;
      const Eigen::VectorXd kept = logits.segment(first, L - first);
      double m = kept.maxCoeff();
      if (!in.sinks.empty()) m = std::max(m, in.sinks[size_t(h)]);
      const Eigen::VectorXd p = (kept.array() - m).exp().matrix();
      const double denom = p.sum() + (in.sinks.empty() ? 0.0 : std::exp(in.sinks[size_t(h)] - m));
      out.row(s).segment(h * D, D) = (p.transpose() * V.middleRows(first, L - first).middleCols(kvh * D, D)) / denom;
    }
  }
  return out;
}

}  // namespace kvh::reference
