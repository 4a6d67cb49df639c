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

/// Reference absorbed MLA attention out [num_query_tokens, num_heads * kv_lora_rank] of an MLA
/// case (c.mla(); reference/mla_attention.h): query [num_query_tokens, num_heads * (R + P)]
/// 16-bit bits, the latent rows of each sequence generated from the case's streams as
/// make_device_mla_kv fills the projection (kv_c: kKeys, element t * R + d; k_pe: kValues,
/// t * P + d), one sequence at a time on each host core. An fp8 cache (fp8 set): each element
/// is what the cache holds, fp8_decode(fp8_encode(x / scale)) * scale with the per-tensor
/// scale. Causal per c.causal. Stops early once `cancel` is set.
reference::RowMatrix mla_reference_out(const Case& c, const Sequences& s, const uint16_t* q, uint64_t data_seed,
                                       double scale, const std::atomic<bool>& cancel,
                                       const KvScaleTensors* fp8 = nullptr);

}  // namespace kvh
