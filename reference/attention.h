// Reference decode attention (one query token per sequence) and ragged causal
// attention (q_s new tokens per sequence) from the LOGICAL tensors only: no cache layout, no block tables, no kernel code. float64
// throughout, so that it is the yardstick for float32-accumulating kernels.
#pragma once
#include <Eigen/Dense>
#include <cstdint>
#include <vector>

namespace kvh::reference {

/// Row-major float64 matrix.
using RowMatrix = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// What decode and ragged attention share: the head counts, the softmax scale
/// and the score modifiers (kvharness/provider.h, kvh_attention_args), all off
/// by default.
/// GQA (vLLM, aiter): query head h attends with kv head h / (num_heads / num_kv_heads).
/// scale: softmax scale applied to q.k (usually 1/sqrt(head_size)).
/// For query head h, a query token at position p (0-based, in tokens) and key token t:
///   s = scale * q.k;  s = softcap * tanh(s / softcap)          when softcap > 0;
///   s += alibi_slopes[h] * (t - p)                             when alibi_slopes is set;
///   t is masked when sliding_window > 0 and t <= p - sliding_window
///     (the window keeps t in (p - sliding_window, p]);
///   softmax over the unmasked tokens and, when sinks is set, one more logit
///   sinks[h] (not scaled, not capped) that joins the denominator once and has no value.
struct AttentionParams {
  int64_t num_heads = 0, num_kv_heads = 0, head_size = 0;
  double scale = 1.0;
  int64_t sliding_window = 0;         ///< left window in tokens, the query's own included; 0 = off
  double softcap = 0;                 ///< logits soft-cap; 0 = off
  std::vector<double> sinks;          ///< [num_heads] sink logits, or empty = off
  std::vector<double> alibi_slopes;   ///< [num_heads] slopes of these (local) heads, or empty = off
};

/// Inputs of decode attention over num_seqs sequences (one query token each).
///   query       [num_seqs, num_heads * head_size]: row s is query[s] of shape [num_heads, head_size]
///   keys[s]     [context_len_s, num_kv_heads * head_size]: row t is K[s][t] of shape [num_kv_heads, head_size]
///   values[s]   same shape as keys[s]
/// The query of a sequence of L tokens is token L - 1: p = L - 1 in AttentionParams'
/// modifiers (ALiBi adds slope * (t - (L - 1)); the window keeps t >= L - sliding_window).
struct DecodeAttentionInput : AttentionParams {
  RowMatrix query;
  std::vector<RowMatrix> keys, values;
};

/// Inputs of ragged (prefill / chunked-prefill / decode mixed) causal attention
/// over num_seqs = keys.size() sequences.
///   query            [num_query_tokens, num_heads * head_size]: the new tokens of every
///                    sequence, packed sequence after sequence
///   query_start_loc  [num_seqs + 1]: sequence s owns query rows
///                    query_start_loc[s] .. query_start_loc[s + 1] - 1; starts at 0,
///                    nondecreasing, ends at num_query_tokens; q_s = the difference
///   keys[s]          [L_s, num_kv_heads * head_size]: the whole context of s, its q_s
///                    new tokens included (they are its last q_s tokens); q_s <= L_s
///   values[s]        same shape as keys[s]
/// Query token j (0-based) of sequence s sits at position p = L_s - q_s + j and, when
/// causal, sees key tokens t <= p (causal aligned to the end of the context); when not
/// causal it sees all L_s tokens (p still places it for ALiBi and the window, whose
/// left edge alone then applies). The modifiers are AttentionParams' with that p:
///   out[row, h] = sum_{t visible} w_t V[s][t][kvh] / (sum_{t visible} w_t + [sinks] e^{sinks[h]})
///   w_t = exp(cap(scale * q[row,h] . K[s][t][kvh]) + alibi_slopes[h] (t - p)),
///   cap(x) = softcap tanh(x / softcap) (x when softcap = 0), [sinks]/alibi terms only when set,
///   visible: (t <= p or !causal) and (sliding_window == 0 or t > p - sliding_window),
///   kvh = h / (num_heads / num_kv_heads), row = query_start_loc[s] + j.
/// With q_s = 1 for every s this is decode_attention.
struct RaggedAttentionInput : AttentionParams {
  RowMatrix query;
  std::vector<int64_t> query_start_loc;
  std::vector<RowMatrix> keys, values;
  bool causal = true;
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
/// (AttentionParams, p = L - 1). Returns [num_seqs, num_heads * head_size]
/// (row s is out[s] of shape [num_heads, head_size]); a sequence with no
/// tokens gets zeros.
/// Throws std::invalid_argument when a count is not positive, num_heads is not
/// a multiple of num_kv_heads, keys/values do not have one entry per query row,
/// or a matrix has the wrong number of columns or keys[s]/values[s] differ in rows,
/// sliding_window or softcap is negative, or sinks/alibi_slopes is set with a
/// size other than num_heads.
RowMatrix decode_attention(const DecodeAttentionInput& in);

/// Ragged attention (RaggedAttentionInput's formula) over every sequence.
/// Returns [num_query_tokens, num_heads * head_size], rows as in.query's; a
/// sequence with q_s = 0 has no rows.
/// Throws std::invalid_argument ("ragged_attention: ...", naming the sequence where
/// there is one) when a count is not positive, num_heads is not a multiple of
/// num_kv_heads, query does not have num_heads * head_size columns,
/// query_start_loc does not have keys.size() + 1 entries, does not start at 0,
/// decreases or does not end at query.rows(), values.size() != keys.size(),
/// keys[s]/values[s] do not have num_kv_heads * head_size columns or differ in
/// rows, q_s > L_s, sliding_window or softcap is negative, or sinks/alibi_slopes
/// is set with a size other than num_heads.
RowMatrix ragged_attention(const RaggedAttentionInput& in);

/// One sequence of ragged_attention, for callers that build K and V one sequence at a
/// time (on several threads: it touches nothing shared).
///   q_rows  [q, num_heads * head_size]: the sequence's q new tokens, its last q
///   K, V    [L, num_kv_heads * head_size]: the whole context, q <= L
/// Returns [q, num_heads * head_size] (row j: the token at position L - q + j).
/// Cost O(q * L * head_size * num_heads) time, the logits of a kv head's query
/// group computed as one matrix product per tile of query tokens; memory
/// O(min(q * L, 2^21) * num_heads / num_kv_heads) doubles (about 16 MiB a tile).
/// Throws std::invalid_argument ("ragged_sequence_attention: ...") on the
/// checks of ragged_attention that concern one sequence.
RowMatrix ragged_sequence_attention(const AttentionParams& params, const Eigen::Ref<const RowMatrix>& q_rows,
                                    const RowMatrix& K, const RowMatrix& V, bool causal = true);

}  // namespace kvh::reference
