// PLANTED BUGS for the mutation test (issue 23, part C: writer views, padding,
// value edges), never in the builtin provider. Each is a real kernel with one
// rule broken the way shipped kernels have broken it:
//   planted_skips_first_token       the flash (NHD) writer's token loop starts at 1
//                                   (an off-by-one), so token 0 is never written:
//                                   invisible when token 0 is always padding
//   planted_flash_hnd_block_size_from_dim1  the flash writer given an HND cache
//                                   takes block_size from key_cache.shape[1]
//                                   (vLLM's reshape_and_cache_flash reads size(1),
//                                   right for its NHD-shaped views): num_kv_heads
//                                   in HND, right only when the two agree
//   planted_flash_fp8_no_clamp      the flash writer's fp8 encode does not saturate:
//                                   x / scale past the format's max (448 e4m3fn,
//                                   240 e4m3fnuz) by more than half an ulp becomes
//                                   the NaN code instead of +-max (16-bit and int8
//                                   caches go to the real writer)
//   planted_finite_max_sentinel     paged_attention_rocm's running max starts at
//                                   -5e4 instead of -inf: when every logit of a
//                                   row is below it, exp(l - m) underflows to 0
//                                   and the output is 0/0
//   planted_v1_finite_max_sentinel  the same in paged_attention_v1 (pa_v1 cache)
#include "registry/kernel_desc.h"
#include "readers/paged_attention.h"
#include "writers/writer_common.h"

extern "C" int kvh_reshape_and_cache_flash(const kvh_write_args* a, void* stream);

namespace kvh::kernels {
namespace {

// One block per token from first_token on; element by element through the cache's strides.
template <class E>
__global__ void planted_edge_writer_kernel(const uint16_t* key, const uint16_t* value, typename E::Out* key_cache,
                                           typename E::Out* value_cache, const int64_t* slot_mapping, Strides5 ks,
                                           Strides5 vs, UnsplitKvAddr cache, int64_t block_size, int64_t num_kv_heads,
                                           int64_t head_size, KvScales sc, int64_t first_token) {
  const int64_t token = int64_t(blockIdx.x) + first_token;
  const int64_t slot = slot_mapping[token];
  if (slot < 0) return;  // padding token
  const int64_t block = slot / block_size, offset = slot % block_size;
  const int64_t kslot = cache.k.slot_offset(block, offset), vslot = cache.v.slot_offset(block, offset);
  for (int64_t i = threadIdx.x; i < num_kv_heads * head_size; i += blockDim.x) {
    const int64_t h = i / head_size, d = i % head_size;
    key_cache[kslot + cache.k.head_offset(h) + cache.k.dim_offset(d)] =
        E::store(key[token * ks.s[0] + h * ks.s[1] + d * ks.s[2]], scale_at(sc.granularity, sc.k, 1.f, block, h, offset));
    value_cache[vslot + cache.v.head_offset(h) + cache.v.dim_offset(d)] = E::store(
        value[token * vs.s[0] + h * vs.s[1] + d * vs.s[2]], scale_at(sc.granularity, sc.v, 1.f, block, h, offset));
  }
}

// fp8 without saturation (the fixture_mla_fp8_writer_no_clamp bug in the flash writer).
template <class T, bool kFnuz> struct QuantizeFp8NoClamp {
  using Out = uint8_t;
  static KVH_HD Out store(uint16_t in, float scale) {
    const float f = to_float(T{in}) / scale;
    // Past max + half its ulp (464 e4m3fn, 248 e4m3fnuz) an unsaturated conversion gives NaN.
    if (!(f < (kFnuz ? 248.f : 464.f) && f > (kFnuz ? -248.f : -464.f))) return kFnuz ? 0x80 : 0x7F;
    return float_to_fp8(f, kFnuz);
  }
};

KVH_DECLARE_BARRIER_FREE_AS(planted_edge_copy16, planted_edge_writer_kernel<Copy16>);
KVH_DECLARE_BARRIER_FREE_AS(planted_edge_fn_f16, planted_edge_writer_kernel<QuantizeFp8NoClamp<fp16_t, false>>);
KVH_DECLARE_BARRIER_FREE_AS(planted_edge_fn_bf16, planted_edge_writer_kernel<QuantizeFp8NoClamp<bf16_t, false>>);
KVH_DECLARE_BARRIER_FREE_AS(planted_edge_fnuz_f16, planted_edge_writer_kernel<QuantizeFp8NoClamp<fp16_t, true>>);
KVH_DECLARE_BARRIER_FREE_AS(planted_edge_fnuz_bf16, planted_edge_writer_kernel<QuantizeFp8NoClamp<bf16_t, true>>);

template <class E>
int launch_edge_writer(const kvh_write_args* a, void* stream, UnsplitKvAddr cache, int64_t block_size,
                       int64_t first_token) {
  const int64_t num_tokens = a->key.shape[0] - first_token;
  if (num_tokens <= 0) return hipSuccess;
  hipLaunchKernelGGL(HIP_KERNEL_NAME(planted_edge_writer_kernel<E>), dim3(unsigned(num_tokens)),
                     dim3(writer_block_threads(a->key.shape[1], a->key.shape[2])), 0, (hipStream_t)stream,
                     (const uint16_t*)a->key.data, (const uint16_t*)a->value.data, (typename E::Out*)a->key_cache.data,
                     (typename E::Out*)a->value_cache.data, (const int64_t*)a->slot_mapping.data, strides_of(a->key),
                     strides_of(a->value), cache, block_size, a->key.shape[1], a->key.shape[2], kv_scales_of(*a),
                     first_token);
  return int(hipGetLastError());
}

int skips_first_token(const kvh_write_args* a, void* stream) {
  if (a->key_cache.dtype != a->key.dtype) return kvh_reshape_and_cache_flash(a, stream);  // quantized: the real one
  if (hipError_t e = check_write_args(*a, KVH_CACHE_NHD); e != hipSuccess) return e;
  return launch_edge_writer<Copy16>(a, stream, NhdCacheAddr(a->key_cache, a->value_cache), a->block_size, 1);
}

int flash_hnd_block_size_from_dim1(const kvh_write_args* a, void* stream) {
  if (hipError_t e = check_write_args(*a, KVH_CACHE_HND); e != hipSuccess) return e;
  return launch_edge_writer<Copy16>(a, stream, HndCacheAddr(a->key_cache, a->value_cache), a->key_cache.shape[1], 0);
}

int flash_fp8_no_clamp(const kvh_write_args* a, void* stream) {
  if (!is_fp8(a->key_cache.dtype)) return kvh_reshape_and_cache_flash(a, stream);
  if (hipError_t e = check_write_args(*a, KVH_CACHE_NHD); e != hipSuccess) return e;
  const NhdCacheAddr cache(a->key_cache, a->value_cache);
  const bool fnuz = a->key_cache.dtype == KVH_DT_FP8_E4M3FNUZ, bf16 = a->key.dtype == KVH_DT_BF16;
  if (fnuz)
    return bf16 ? launch_edge_writer<QuantizeFp8NoClamp<bf16_t, true>>(a, stream, cache, a->block_size, 0)
                : launch_edge_writer<QuantizeFp8NoClamp<fp16_t, true>>(a, stream, cache, a->block_size, 0);
  return bf16 ? launch_edge_writer<QuantizeFp8NoClamp<bf16_t, false>>(a, stream, cache, a->block_size, 0)
              : launch_edge_writer<QuantizeFp8NoClamp<fp16_t, false>>(a, stream, cache, a->block_size, 0);
}

// The running max of a row starts at a finite -5e4 ("minus infinity" in half-precision habits).
struct FiniteMaxSentinel : CorrectVariant {
  static KVH_HD float running_max_init() { return -5e4f; }
};
template <int kFormat>
int finite_max_sentinel(const kvh_attention_args* a, void* stream) {
  return launch_paged_attention<kFormat, FiniteMaxSentinel>(*a, stream);
}
uint64_t pa_workspace(const kvh_attention_args* a) { return paged_attention_workspace_bytes(*a); }

// The capabilities of the kernels they stand in for (--replace-kernel runs them with these).
kvh_capabilities flash_caps() {  // reshape_and_cache_flash's: 16-bit, fp8 and int8 caches
  kvh_capabilities c{};
  c.cache_dtypes = (1u << KVH_DT_F16) | (1u << KVH_DT_BF16) | (1u << KVH_DT_FP8_E4M3FN) |
                   (1u << KVH_DT_FP8_E4M3FNUZ) | (1u << KVH_DT_I8);
  c.kv_scales = (1u << KVH_SCALES_NONE) | (1u << KVH_SCALES_TENSOR) | (1u << KVH_SCALES_HEAD) |
                (1u << KVH_SCALES_BLOCK) | (1u << KVH_SCALES_TOKEN) | (1u << KVH_SCALES_SLOT);
  return c;
}
const kvh_capabilities kFlashCaps = flash_caps();
kvh_capabilities reader_caps() {  // the general readers': every modifier, fp8 and int8 caches
  kvh_capabilities c = flash_caps();
  c.modifiers = KVH_MOD_SLIDING_WINDOW | KVH_MOD_SINKS | KVH_MOD_SOFTCAP | KVH_MOD_ALIBI;
  return c;
}
const kvh_capabilities kReaderCaps = reader_caps();

const kvh_kernel_desc kPlantedEdges[] = {
    writer_desc<skips_first_token>("planted_skips_first_token",
                                   "PLANTED: the flash writer never writes token 0 (its token loop starts at 1)",
                                   KVH_CACHE_NHD, 1, &kFlashCaps),
    writer_desc<flash_hnd_block_size_from_dim1>(
        "planted_flash_hnd_block_size_from_dim1",
        "PLANTED: the flash writer on an HND cache takes block_size from key_cache.shape[1] (num_kv_heads there)",
        KVH_CACHE_HND, 1),
    writer_desc<flash_fp8_no_clamp>("planted_flash_fp8_no_clamp",
                                    "PLANTED (fp8): the flash writer does not saturate: past the format's max, NaN",
                                    KVH_CACHE_NHD, 1, &kFlashCaps),
    reader_desc<finite_max_sentinel<KVH_CACHE_SHUFFLE>>(
        "planted_finite_max_sentinel", "PLANTED BUG: the running max starts at -5e4, not -inf (rows below it: 0/0)",
        KVH_CACHE_SHUFFLE, 1, workspace_entry<pa_workspace>, &kReaderCaps),
    reader_desc<finite_max_sentinel<KVH_CACHE_PA_V1>>(
        "planted_v1_finite_max_sentinel",
        "PLANTED BUG (pa_v1 reader): the running max starts at -5e4, not -inf (rows below it: 0/0)", KVH_CACHE_PA_V1,
        1, workspace_entry<pa_workspace>, &kReaderCaps),
};

}  // namespace
}  // namespace kvh::kernels

extern "C" const kvh_kernel_desc* kvh_planted_edges(int32_t* count) {
  *count = int32_t(sizeof(kvh::kernels::kPlantedEdges) / sizeof(kvh::kernels::kPlantedEdges[0]));
  return kvh::kernels::kPlantedEdges;
}
