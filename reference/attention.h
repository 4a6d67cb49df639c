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
/// Score modifiers (kvharness/provider.h, kvh_attention_args), all off by default.
/// For query head h and token t of a sequence of L tokens (the query is token L - 1):
///   s = scale * q.k;  s = softcap * tanh(s / softcap)          when softcap > 0;
///   s += alibi_slopes[h] * (t - (L - 1))                       when alibi_slopes is set;
///   t is masked when sliding_window > 0 and t < L - sliding_window;
///   softmax over the unmasked tokens and, when sinks is set, one more logit
///   sinks[h] (not scaled, not capped) that joins the denominator once and has no value.
struct DecodeAttentionInput {
  int64_t num_heads = 0, num_kv_heads = 0, head_size = 0;
  double scale = 1.0;
  RowMatrix query;
  std::vector<RowMatrix> keys, values;
  int64_t sliding_window = 0;         ///< left window in tokens, the query's own included; 0 = off
  double softcap = 0;                 ///< logits soft-cap; 0 = off
  std::vector<double> sinks;          ///< [num_heads] sink logits, or empty = off
  std::vector<double> alibi_slopes;   ///< [num_heads] slopes of these (local) heads, or empty = off
};

/// The standard ALiBi slopes (Press et al., 2022, as vLLM's and HF's
/// get_alibi_slopes build them) for a model with `total_num_heads` heads,
/// indexed by GLOBAL head: with n = the largest power of two <= total_num_heads,
/// slope[i] = 2^(-8 (i + 1) / n) for i < n, and the remaining heads take the
/// odd-indexed slopes of 2n heads: slope[n + k] = 2^(-4 (2k + 1) / n).
/// A rank of a tensor-parallel model uses slopes[tp_rank * num_heads + h].
/// Throws std::invalid_argument when total_num_heads < 1.
std::vector<double> alibi_slopes(int64_t total_num_heads);

/// out[s, h] = sum_t softmax_t(scale * q[s,h] . K[s][t][kvh]) * V[s][t][kvh]
/// with kvh = h / (num_heads / num_kv_heads), the softmax taken over the
/// context_len_s tokens of sequence s, as changed by the score modifiers
/// (DecodeAttentionInput). Returns [num_seqs, num_heads * head_size]
/// (row s is out[s] of shape [num_heads, head_size]); a sequence with no
/// tokens gets zeros.
/// Throws std::invalid_argument when a count is not positive, num_heads is not
/// a multiple of num_kv_heads, keys/values do not have one entry per query row,
/// or a matrix has the wrong number of columns or keys[s]/values[s] differ in rows,
/// sliding_window or softcap is negative, or sinks/alibi_slopes is set with a
/// size other than num_heads.
RowMatrix decode_attention(const DecodeAttentionInput& in);

}  // namespace kvh::reference
