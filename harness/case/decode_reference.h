// The float64 reference of a decode case: attention computed straight from
// the logical Q, K and V (reference/attention.h), never from kernel code.
#pragma once
#include <atomic>
#include <cstdint>

#include "attention.h"
#include "case.h"
#include "case/decode_inputs.h"
#include "case/kv_scales.h"

namespace kvh {

/// Reference attention out [num_query_tokens, num_heads * head_size] from the
/// logical tensors: query [num_query_tokens, num_heads * head_size] (sequence
/// i's rows from s.query_start_loc[i]; decode: one a sequence) and K/V [total_tokens,
/// num_kv_heads * head_size] (tokens sequence by sequence), 16-bit bits; or,
/// with k and v null, K/V generated a sequence at a time from the case's
/// streams kKeys/kValues of data_seed (the same elements counter16 would give:
/// no whole-context copy on the host). One sequence at a time on each host
/// core: only that sequence's K and V are ever widened to float64. An fp8
/// cache (fp8 set): each K/V element is what the cache holds, dequantized:
/// the reference codec's fp8_decode(fp8_encode(float(x) / scale)) * scale,
/// with the scale of the token's slot (physical block, kv head, token-in-block).
/// Ragged cases use reference::ragged_attention (causal per c.causal), decode
/// cases reference::decode_attention. Stops early (rows left unset) once
/// `cancel` is set. Throws std::invalid_argument from the reference on bad shapes.
reference::RowMatrix reference_out(const Case& c, const Sequences& s, const uint16_t* q, const uint16_t* k,
                                   const uint16_t* v, uint64_t data_seed, double scale, const ModifierValues& mods,
                                   const std::atomic<bool>& cancel, const KvScaleTensors* fp8 = nullptr);

}  // namespace kvh
