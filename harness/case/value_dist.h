// Value distributions of decode cases (the case axis `values`): how the
// logical Q, K and V of an attention or pipeline case are shaped after the
// generator drew them uniform in [-2, 2) (harness/case/values.h). Deterministic
// from the case alone (case_data_seed(c) and element indices), never
// from a shared random stream, so the order in which the case code draws its
// other tensors cannot change it.
//
// Contracts, for partition_size 256 (the readers' default) and any GQA group:
//   normal  unchanged.
//   sink    per sequence of n tokens, an attention-sink token e in partition 0
//           (e < min(n, 256)) and, when n > 256, one more l in the last
//           partition. Each query head's logit (scale 1/sqrt(head_size)) of
//           the dominant sink exceeds every other token's, the other sink's
//           included, by more than 100; the other sink exceeds every non-sink
//           token by more than 100. The early sink dominates in even
//           sequences, the last one in odd sequences, so that a split-K
//           reduce that rescales with the first or with the last partition's
//           max overflows float32's exp (margin > 88) in one or the other.
//           Construction: per (sequence, kv head) a sign pattern s in {-1,+1}^D;
//           each query head of the group gets q = 4 s + r (r its drawn value);
//           sink keys are K s with K a power of two (sink_key_magnitudes), so
//           that with |r| <= 2 and |k| <= 2 the margins hold for every head,
//           in exact arithmetic on the 16-bit values (the float64 reference
//           sees exactly these values). Largest logit: 6 sqrt(D) K_dominant
//           (6144 at head_size 256): finite in float32, exp(l - max) exact enough.
//   large   K near the dtype's largest finite value and Q scaled down by the
//           same power of two (logits unchanged up to rounding, so a kernel
//           that forms q*k in 16-bit overflows), and V near the largest finite
//           value that keeps a float32 accumulation of 2^15 tokens finite:
//           fp16 K * 2^14 (|k| < 2^15), Q * 2^-14, V * 2^15 clamped to
//           +-65504 (the fp16 maximum); bf16 K * 2^100, Q * 2^-100, V * 2^111
//           (|v| <= 2^112; 2^15 tokens stay below FLT_MAX ~ 2^128). Scaling by
//           powers of two is exact, so the reference is exact about it.
//   low_logits  (issue 23) every logit of every row below -6e4 after the softmax
//           scale (the case's softmax_scale, else 1/sqrt(head_size)), finite:
//           the last dim of every K row is 1024 and that of every query row
//           -M, M the smallest 16-bit value >= (6.06e4 / scale + 4 (D - 1)) / 1024
//           (|q_d k_d| <= 4 elsewhere), so that a running max that starts at a
//           finite sentinel above -6e4 (-5e4, "minus infinity" in fp16 habits)
//           never moves and exp underflows to 0 for every token. The other
//           dims keep their values, so logits still differ from token to token;
//           the float64 reference is exact (softmax is shift-invariant; the
//           logits are about -6e4 to -6.5e4 at scale 1/sqrt(D), where float32's
//           ulp is 2^-8). Meant without soft-cap and sinks (a cap bounds the
//           logits; a sink logit lifts the max).
//   away_from_zero  (issue 23) K and V kept away from zero, for quantizers
//           whose range must not include it: x -> sign(x) (0.5 + 0.75 |x|), so
//           |x| in [0.5, 2] with the drawn sign (+ for 0). Q unchanged.
#pragma once
#include <cstdint>
#include <vector>

#include "case.h"

namespace kvh {

/// Shapes the logical decode tensors of case `c` in place by c.values (see
/// above). query [num_query_tokens, num_heads * head_size] (sequence i's rows
/// query_start_loc[i] .. query_start_loc[i+1]; empty: one row per sequence,
/// decode); key and value [total_tokens, num_kv_heads * head_size], tokens
/// sequence by sequence in the order of context_lens [num_seqs]. Every query
/// token of a sequence gets its sequence's sink pattern. Throws
/// std::invalid_argument when a size disagrees with c and context_lens.
void shape_values(const Case& c, const std::vector<int32_t>& context_lens, std::vector<uint16_t>& query,
                  std::vector<uint16_t>& key, std::vector<uint16_t>& value,
                  const std::vector<int32_t>& query_start_loc = {});

/// The factor by which shape_values multiplies V under c.values (2^15 for
/// large fp16, 2^111 for large bf16, else 1). Attention outputs are convex
/// combinations of V rows, so a check's absolute tolerance scales with it:
/// atol * value_scale(c) asks of a large case what atol asks of a normal one.
double value_scale(const Case& c);

/// The sink tokens of a sequence of `n` tokens (index `seq` in the batch) of
/// case `c`: early (in partition 0), last (in the last partition; -1 when
/// n <= 256), and which one dominates.
struct SinkTokens {
  int64_t early = 0, last = -1;
  bool early_dominates = true;
};
SinkTokens sink_tokens(const Case& c, int64_t seq, int64_t n);

/// Key magnitudes of the sinks for head size `head_size`: the smallest powers
/// of two with 2 sqrt(D) weak - 12 sqrt(D) > 100 and 2 sqrt(D) dominant -
/// 6 sqrt(D) weak > 100 (worst-case logit bounds for |r|, |k| <= 2, q = 4 s + r).
struct SinkMagnitudes {
  double weak = 0, dominant = 0;
};
SinkMagnitudes sink_key_magnitudes(int64_t head_size);

}  // namespace kvh
