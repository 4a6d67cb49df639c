// Reference decode attention (one query token per sequence) from the LOGICAL
// tensors only: no cache layout, no block tables, no kernel code. float64
// throughout, so that it is the yardstick for float32-accumulating kernels.
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <vector>

namespace kvh::reference {

/// Row-major float64 matrix.
using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Inputs of decode attention over num_seqs sequences.
///   query       [num_seqs, num_heads * head_size]: row s is query[s] of shape [num_heads, head_size]
///   keys[s]     [context_len_s, num_kv_heads * head_size]: row t is K[s][t] of shape [num_kv_heads, head_size]
///   values[s]   same shape as keys[s]
/// GQA (vLLM, aiter): query head h attends with kv head h / (num_heads / num_kv_heads).
/// scale: softmax scale applied to q.k (usually 1/sqrt(head_size)).
struct DecodeAttentionInput {
  int64_t num_heads = 0, num_kv_heads = 0, head_size = 0;
  double scale = 1.0;
  RowMatrix query;
  std::vector<RowMatrix> keys, values;
};

/// out[s, h] = sum_t softmax_t(scale * q[s,h] . K[s][t][kvh]) * V[s][t][kvh]
/// with kvh = h / (num_heads / num_kv_heads), the softmax taken over the
/// context_len_s tokens of sequence s. Returns [num_seqs, num_heads * head_size]
/// (row s is out[s] of shape [num_heads, head_size]); a sequence with no
/// tokens gets zeros.
/// Throws std::invalid_argument when a count is not positive, num_heads is not
/// a multiple of num_kv_heads, keys/values do not have one entry per query row,
/// or a matrix has the wrong number of columns or keys[s]/values[s] differ in rows.
RowMatrix decode_attention(const DecodeAttentionInput& in);

}  // namespace kvh::reference
