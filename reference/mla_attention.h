// Reference absorbed MLA attention (multi-head latent attention, DeepSeek-V2/V3,
// Kimi-K2: kvharness/provider.h, KVH_CACHE_MLA) from the LOGICAL tensors only:
// one latent vector of R + P elements per token, shared by every query head.
// float64; no cache layout, no block tables, no kernel code.
#pragma once
#include <cstdint>
#include <vector>

#include "attention.h"

namespace kvh::reference {

/// Inputs of absorbed MLA attention over num_seqs = latent.size() sequences, decode or ragged
/// (multi-token decode of MTP / speculative decode), R = kv_lora_rank, P = qk_rope_head_dim.
///   query            [num_query_tokens, num_heads * (R + P)], packed per query_start_loc
///   query_start_loc  [num_seqs + 1], as RaggedAttentionInput's (q_s = the difference, q_s <= L_s)
///   latent[s]        [L_s, R + P]: the cache rows of sequence s (its q_s new tokens last)
/// Query token j of s sits at p = L_s - q_s + j and, when causal, sees t <= p (else every t < L_s):
///   out[row, h] = sum_t softmax_t(scale * q[row, h, 0:R+P] . latent[s][t, 0:R+P]) * latent[s][t, 0:R]
/// No score modifier: DeepSeek-class models use no window, sink, soft-cap or ALiBi, and the
/// harness refuses MLA cases that set one.
struct MlaAttentionInput {
  int64_t num_heads = 0, kv_lora_rank = 0, rope_dim = 0;
  double scale = 1.0;  ///< the model's softmax scale (DeepSeek: 1/sqrt(qk_nope + qk_rope)), not 1/sqrt(R + P)
  RowMatrix query;
  std::vector<int64_t> query_start_loc;
  std::vector<RowMatrix> latent;
  bool causal = true;
};

/// Absorbed MLA attention (MlaAttentionInput's formula). Returns [num_query_tokens, num_heads * R]
/// (row r, head h: columns h * R .. h * R + R - 1).
/// Throws std::invalid_argument ("mla_attention: ...", naming the sequence where there is one)
/// when num_heads, kv_lora_rank or rope_dim is not positive (rope_dim may be 0), query does not
/// have num_heads * (R + P) columns, query_start_loc is not [num_seqs + 1] starting at 0,
/// nondecreasing and ending at query.rows(), latent[s] does not have R + P columns, or q_s > L_s.
RowMatrix mla_attention(const MlaAttentionInput& in);

}  // namespace kvh::reference
