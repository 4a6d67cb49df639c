// vLLM's ROCm AITER MLA backend (vllm/v1/attention/backends/mla/rocm_aiter_mla.py) choosing the
// decode kernel of an MLA step, as three versioned policies (router.h lists them). What the record
// says (vLLM and aiter pull requests; no merge commit hash was found for them, so the policies are
// named by PR number):
//   - aiter's MLA decode has two kernel families on gfx950 (MI355X): the ASM decode behind
//     mla_decode_fwd (qh16 / qh64 / qh128 tiles, bf16 "a16w16" and true fp8 "a8w8" kernels,
//     mla_a8w8_qh16_qseqlen*_gqaratio16*.co; needs >= 16 heads, AiterMLAHelper._AITER_MIN_MLA_HEADS,
//     smaller counts are zero-padded to 16 by vLLM) and the Gluon (Triton) kernel mla_decode_gluon
//     for nhead <= 16 (aiter PR 3311): regime bh16bn64 (bf16 query, bf16 KV, any batch) and
//     bh16bn128 (bf16 query, fp8 KV), which asserted batch_size == 1 (aiter mla_gluon.py) until
//     aiter PR 4480 (fb82bf7) dropped the assert.
//   - "vllm-rocm-mla-pre-50578": fewer than 16 heads per rank go to Gluon at both decode entry
//     points (qlen 1 and the multi-token verify branch) whatever the cache dtype (vLLM PRs 50563,
//     51088, 51011 describe it). With an fp8 cache Gluon's bh16bn128 gets batches > 1 (its
//     batch_size == 1 assert) and vLLM's pre-quantized fp8 query (MLACommonImpl
//     supports_quant_query_input; "q_nope/q_pe must be bf16", PR 50563).
//   - "vllm-rocm-mla-50578" (vLLM PR 50578 "[ROCm][MLA] Use asm decode for non-divisor small head
//     counts", VLLM_ROCM_AITER_MLA_ASM_PADDING=auto): a qlen-1 step whose head count does not
//     divide 16 (12: Kimi-K3 at TP8, 6) goes to the ASM decode padded to 16; divisors of 16 and
//     the verify branch still go to Gluon, fp8 included.
//   - "vllm-rocm-mla-51011" (vLLM PR 51011 "[ROCm][MLA] [K3] Fix fp8 KV cache decode on the AITER
//     MLA backend", which closed PR 50563 as superseded): an fp8 cache never goes to Gluon, at
//     either entry point, for any head count: the ASM decode's true fp8 kernels take it. 16-bit
//     caches route as under 50578.
// Modelled: gfx950 in the default `auto` mode. Not modelled: the gfx942 arch gate of 50578 (no
// Gluon there), the persistent-metadata gate that 51011 also fixed (a padded rank got no
// persistent schedule: silently wrong output, not a routing choice), PR 51403 (open).
#pragma once
#include "router/router.h"

namespace kvh::routing::mla {

/// The three policies' rules. Each throws std::invalid_argument for a step that is not MLA
/// (RouteInput::kv_lora_rank 0): they route the latent cache's decode only.
RouteDecision rule_pre_50578(const RouteInput& in);
RouteDecision rule_50578(const RouteInput& in);
RouteDecision rule_51011(const RouteInput& in);

/// AiterMLAHelper._AITER_MIN_MLA_HEADS: the ASM decode's smallest head tile.
inline constexpr int64_t kMinAsmHeads = 16;

}  // namespace kvh::routing::mla
