#include "readers/mla_variants.h"

#include <cstdio>
#include <cstring>

#include "readers/mla_decode.h"
#include "registry/kernel_desc.h"

namespace kvh::kernels {
namespace {

thread_local char g_why[256];  // the last refusal of a variant ("" when mla_decode's own applies)

bool fp8(int32_t dtype) { return dtype == KVH_DT_FP8_E4M3FN || dtype == KVH_DT_FP8_E4M3FNUZ; }

using RefusalFn = const char* (*)(const kvh_attention_args*);

// Runs `call` unless `refusal` declines `a` (then KVH_UNSUPPORTED with its reason).
template <typename Call>
int guarded(RefusalFn refusal, const kvh_attention_args* a, Call call) {
  g_why[0] = 0;
  const char* why = refusal(a);
  if (*why) {
    std::snprintf(g_why, sizeof g_why, "%s", why);
    return KVH_UNSUPPORTED;
  }
  return call();
}

template <RefusalFn R>
int attention(void* ctx, const kvh_attention_args* a, void* stream) {
  return guarded(R, a, [&] { return mla_decode_attention(ctx, a, stream); });
}

template <RefusalFn R>
int workspaces(void* ctx, const kvh_attention_args* a, kvh_workspace_spec* specs, int32_t max_specs, int32_t* count) {
  return guarded(R, a, [&] { return mla_decode_workspaces(ctx, a, specs, max_specs, count); });
}

const char* last_error(void* ctx) { return g_why[0] ? g_why : mla_decode_last_error(ctx); }

const int32_t kHeadSizes[] = {576};  // kv_lora_rank 512 + qk_rope_head_dim 64 (aiter's MLA kernels)

kvh_capabilities caps() {
  kvh_capabilities c = mla_decode_capabilities();
  c.head_sizes = kHeadSizes;
  c.num_head_sizes = 1;
  c.dtypes = 1u << KVH_DT_BF16;  // aiter's MLA decode: bf16 query and out
  c.cache_dtypes = (1u << KVH_DT_BF16) | (1u << KVH_DT_FP8_E4M3FN) | (1u << KVH_DT_FP8_E4M3FNUZ);
  return c;
}
const kvh_capabilities kCaps = caps();

kvh_kernel_desc desc(const char* name, const char* description, kvh_attention_fn attn, kvh_workspaces_fn ws) {
  kvh_kernel_desc d = base_desc(name, description, KVH_ROLE_READER, KVH_CACHE_MLA, 0, &kCaps);
  d.attention = attn;
  d.workspaces = ws;
  d.plan = mla_decode_plan;
  d.last_error = last_error;
  return d;
}

}  // namespace

const char* mla_asm_refusal(const kvh_attention_args* a) {
  const int64_t heads = a->query.shape[1];
  if (heads > 128) return "mla_asm: aiter's ASM MLA decode has no tile for more than 128 heads";
  if (heads > 16 && heads % 16 != 0)
    return "mla_asm: aiter's ASM MLA decode folds heads into qh16 tiles: a head count above 16 must be a multiple "
           "of 16";
  return "";
}

const char* mla_gluon_refusal(const kvh_attention_args* a) {
  const int64_t heads = a->query.shape[1], batch = a->context_lens.shape[0];
  if (heads > 16) return "mla_gluon_bh16: mla_decode_gluon's bh16 regimes take nhead <= 16";
  if (fp8(a->key_cache.dtype) && (batch != 1 || a->query.dtype != KVH_DT_BF16))
    return "mla_gluon_bh16: the fp8-KV regime bh16bn128 asserts batch_size == 1 and a bf16 query (aiter PR 3311; "
           "the batch assert was dropped by aiter PR 4480)";
  return "";
}

kvh_kernel_desc mla_asm_desc() {
  return desc("mla_asm",
              "aiter's ASM MLA decode (mla_decode_fwd) as a routing target: bf16 query, bf16/fp8 cache, any batch, "
              "heads padded to 16 below 16, multiples of 16 up to 128 above; computes with mla_decode",
              attention<mla_asm_refusal>, workspaces<mla_asm_refusal>);
}

kvh_kernel_desc mla_gluon_desc() {
  return desc("mla_gluon_bh16",
              "aiter's Gluon MLA decode for <= 16 heads (bh16bn64 bf16 KV, bh16bn128 fp8 KV: batch 1 and a bf16 "
              "query only) as a routing target; computes with mla_decode",
              attention<mla_gluon_refusal>, workspaces<mla_gluon_refusal>);
}

}  // namespace kvh::kernels
