// The built-in kernels, offered through the same provider ABI (version 2) a
// shared library uses (kvharness/provider.h).
#include "kernel_desc.h"

extern "C" int kvh_reshape_and_cache_flash(const kvh_write_args*, void*);
extern "C" int kvh_reshape_and_cache(const kvh_write_args*, void*);
extern "C" int kvh_reshape_and_cache_shuffle(const kvh_write_args*, void*);
extern "C" int kvh_reshape_and_cache_shuffle_contiguous(const kvh_write_args*, void*);
extern "C" int kvh_paged_attention_v1(const kvh_attention_args*, void*);
extern "C" int kvh_paged_attention_rocm(const kvh_attention_args*, void*);
extern "C" uint64_t kvh_paged_attention_workspace_bytes(const kvh_attention_args*);
extern "C" int kvh_pa_fwd_asm(const kvh_attention_args*, void*);
extern "C" int kvh_fixture_fp8_fnuz_read_as_fn(const kvh_attention_args*, void*);

namespace {

using namespace kvh::kernels;

// Every built-in writer quantizes and every built-in reader dequantizes fp8
// caches at every scale granularity (cache_fp8.h).
constexpr uint32_t kAllCacheDtypes = (1u << KVH_DT_F16) | (1u << KVH_DT_BF16) | (1u << KVH_DT_FP8_E4M3FN) |
                                     (1u << KVH_DT_FP8_E4M3FNUZ);
constexpr uint32_t kAllScales = (1u << KVH_SCALES_NONE) | (1u << KVH_SCALES_TENSOR) | (1u << KVH_SCALES_HEAD) |
                                (1u << KVH_SCALES_BLOCK) | (1u << KVH_SCALES_TOKEN);
kvh_capabilities fp8_caps() {
  kvh_capabilities c{};
  c.cache_dtypes = kAllCacheDtypes;
  c.kv_scales = kAllScales;
  return c;
}
const kvh_capabilities kFp8Caps = fp8_caps();
const int32_t kAsmHeadSizes[] = {128};
kvh_capabilities asm_caps() {
  kvh_capabilities c = fp8_caps();
  c.head_sizes = kAsmHeadSizes;
  c.num_head_sizes = 1;
  return c;
}
const kvh_capabilities kAsmCaps = asm_caps();
const kvh_workspace_fn kSplitK = workspace_entry<kvh_paged_attention_workspace_bytes>;

const kvh_kernel_desc kBuiltins[] = {
    writer_desc<kvh_reshape_and_cache_flash>("reshape_and_cache_flash", "NHD cache writer, stride-aware",
                                             KVH_CACHE_NHD, 0, &kFp8Caps),
    writer_desc<kvh_reshape_and_cache>("reshape_and_cache", "pa_v1 (shuffle=0) cache writer, stride-aware",
                                       KVH_CACHE_PA_V1, 0, &kFp8Caps),
    writer_desc<kvh_reshape_and_cache_shuffle>("reshape_and_cache_shuffle",
                                               "shuffle=1 cache writer, stride-aware (the fix)", KVH_CACHE_SHUFFLE, 0,
                                               &kFp8Caps),
    writer_desc<kvh_reshape_and_cache_shuffle_contiguous>(
        "fixture_shuffle_contiguous",
        "REGRESSION FIXTURE: shuffle=1 writer that assumes a contiguous cache (block base = "
        "block_id * num_kv_heads * head_size * block_size)",
        KVH_CACHE_SHUFFLE, 1),
    reader_desc<kvh_paged_attention_v1>("paged_attention_v1",
                                        "paged decode attention, pa_v1 V layout (shuffle=0), split-K", KVH_CACHE_PA_V1,
                                        0, kSplitK, &kFp8Caps),
    reader_desc<kvh_paged_attention_rocm>(
        "paged_attention_rocm",
        "paged decode attention, shuffle V layout (shuffle=1), split-K: the general ROCm kernel",
        KVH_CACHE_SHUFFLE, 0, kSplitK, &kFp8Caps),
    reader_desc<kvh_fixture_fp8_fnuz_read_as_fn>(
        "fixture_fp8_fnuz_read_as_fn",
        "REGRESSION FIXTURE: paged_attention_rocm that decodes an e4m3fnuz cache as e4m3fn (values 2x, 0x80 read as -0)",
        KVH_CACHE_SHUFFLE, 1, kSplitK, &kFp8Caps),
    reader_desc<kvh_pa_fwd_asm>(
        "pa_fwd_asm",
        "fixed-function decode attention for head_size 128, shuffle layout (stand-in for aiter's ASM kernel)",
        KVH_CACHE_SHUFFLE, 0, nullptr, &kAsmCaps),
};

}  // namespace

/// The built-in provider's ABI 2 entry (Registry's constructor opens it); takes no configuration.
extern "C" int kvh_builtin_open(const kvh_open_args* args, kvh_provider* out) {
  (void)args;
  out->num_kernels = int32_t(sizeof(kBuiltins) / sizeof(kBuiltins[0]));
  out->kernels = kBuiltins;
  return 0;
}
