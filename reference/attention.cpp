#include "attention.h"

#include <stdexcept>
#include <string>

namespace kvh::reference {

namespace {
void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("decode_attention: " + what);
}
}  // namespace

RowMatrix decode_attention(const DecodeAttentionInput& in) {
  const int64_t H = in.num_heads, KVH = in.num_kv_heads, D = in.head_size;
  require(H > 0 && KVH > 0 && D > 0, "num_heads, num_kv_heads and head_size must be positive");
  require(H % KVH == 0, "num_heads " + std::to_string(H) + " is not a multiple of num_kv_heads " + std::to_string(KVH));
  const int64_t num_seqs = in.query.rows();
  require(in.query.cols() == H * D, "query must have num_heads * head_size columns");
  require(int64_t(in.keys.size()) == num_seqs && int64_t(in.values.size()) == num_seqs,
          "keys and values need one matrix per sequence (query row)");
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
      const Eigen::VectorXd logits = in.scale * (K.middleCols(kvh * D, D) * q);
      const Eigen::VectorXd p = (logits.array() - logits.maxCoeff()).exp().matrix();
      out.row(s).segment(h * D, D) = (p.transpose() * V.middleCols(kvh * D, D)) / p.sum();
    }
  }
  return out;
}

}  // namespace kvh::reference
