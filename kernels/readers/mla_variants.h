// Routing targets of the vllm-rocm-mla-* policies (kernels/router/mla_rules.h): two readers that
// model the domains of aiter's two MLA decode kernel families and compute with the built-in
// mla_decode (its planner, workspaces and kernels, kernels/readers/mla_decode.h). They refuse at
// call time (KVH_UNSUPPORTED, with the library's reason) what the modelled kernel cannot run, so
// that a router sending a step outside the domain is a misroute, not a silent pass:
//   mla_asm         aiter's ASM decode behind mla_decode_fwd (qh16 tiles; vLLM zero-pads fewer
//                   than 16 heads to 16, AiterMLAHelper._AITER_MIN_MLA_HEADS): bf16 query, bf16
//                   or fp8 cache, any batch; refuses more than 128 heads and head counts above 16
//                   that are not a multiple of 16.
//   mla_gluon_bh16  aiter's Gluon mla_decode_gluon for nhead <= 16 (aiter PR 3311): regime
//                   bh16bn64 (bf16 query, bf16 cache, any batch) and bh16bn128 (bf16 query, fp8
//                   cache) whose batch_size == 1 assert aiter PR 4480 (fb82bf7) later dropped;
//                   refuses more than 16 heads, and an fp8 cache at batch > 1.
// Both take a bf16 query only (kvh_capabilities.dtypes). kvh_capabilities has no head-count field,
// so the head limits are call-time refusals.
#pragma once
#include "kvharness/provider.h"

namespace kvh::kernels {

/// The two descriptors (names above), cache format KVH_CACHE_MLA, head_size 576, not fixtures.
kvh_kernel_desc mla_asm_desc();
kvh_kernel_desc mla_gluon_desc();

/// Why `a` is outside the modelled kernel's domain ("" when inside). Shapes as mla_decode's.
const char* mla_asm_refusal(const kvh_attention_args* a);
const char* mla_gluon_refusal(const kvh_attention_args* a);

}  // namespace kvh::kernels
