// The built-in kernels, offered through the same provider ABI (version 2) a
// shared library uses (kvharness/provider.h).
#include "registry/kernel_desc.h"
#include "readers/mla_decode.h"
#include "readers/mla_variants.h"  // issue 22 (D)

extern "C" int kvh_reshape_and_cache_flash(const kvh_write_args*, void*);
extern "C" int kvh_reshape_and_cache_flash_hnd(const kvh_write_args*, void*);
extern "C" int kvh_reshape_and_cache(const kvh_write_args*, void*);
extern "C" int kvh_reshape_and_cache_shuffle(const kvh_write_args*, void*);
extern "C" int kvh_reshape_and_cache_shuffle_contiguous(const kvh_write_args*, void*);
// issue 22 (MLA writer): concat_and_cache_mla and its fixture.
extern "C" int kvh_concat_and_cache_mla(const kvh_write_args*, void*);
extern "C" int kvh_fixture_mla_fp8_writer_no_clamp(const kvh_write_args*, void*);
extern "C" int kvh_paged_attention_v1(const kvh_attention_args*, void*);
extern "C" int kvh_paged_attention_rocm(const kvh_attention_args*, void*);
extern "C" int kvh_paged_attention_nhd(const kvh_attention_args*, void*);
extern "C" int kvh_paged_attention_hnd(const kvh_attention_args*, void*);
extern "C" int kvh_paged_attention_nhd_manager_pages(const kvh_attention_args*, void*);
extern "C" uint64_t kvh_paged_attention_workspace_bytes(const kvh_attention_args*);
extern "C" int kvh_pa_fwd_asm(const kvh_attention_args*, void*);
extern "C" int kvh_fixture_fp8_fnuz_read_as_fn(const kvh_attention_args*, void*);
extern "C" int kvh_fixture_int8_scales_per_sequence(const kvh_attention_args*, void*);  // issue 22 (int8)
extern "C" int kvh_fixture_sink_per_partition(const kvh_attention_args*, void*);
extern "C" int kvh_fixture_alibi_rank_slopes(const kvh_attention_args*, void*);
extern "C" int kvh_fixture_mask_by_zero(const kvh_attention_args*, void*);
extern "C" int kvh_fixture_prefetch_past_last_page(const kvh_attention_args*, void*);
extern "C" int kvh_unified_attention_2d(const kvh_attention_args*, void*);
extern "C" int kvh_unified_attention_3d(const kvh_attention_args*, void*);
extern "C" int kvh_unified_attention_2d_hnd(const kvh_attention_args*, void*);
extern "C" int kvh_unified_attention_3d_hnd(const kvh_attention_args*, void*);
extern "C" int kvh_fixture_unified_metadata_by_query_row(const kvh_attention_args*, void*);
extern "C" int kvh_fixture_unified_causal_off_by_one(const kvh_attention_args*, void*);
extern "C" int kvh_fixture_unified_seq_end_mask_if_causal(const kvh_attention_args*, void*);
extern "C" int kvh_fixture_unified_padded_query_stride(const kvh_attention_args*, void*);
extern "C" int kvh_unified_attention_workspaces(const kvh_attention_args*, kvh_workspace_spec*, int32_t, int32_t*);

namespace {

using namespace kvh::kernels;

// Every built-in writer quantizes and every built-in reader dequantizes fp8
// and int8 caches at every scale granularity (cache_fp8.h; int8 and SLOT: issue 22).
constexpr uint32_t kAllCacheDtypes = (1u << KVH_DT_F16) | (1u << KVH_DT_BF16) | (1u << KVH_DT_FP8_E4M3FN) |
                                     (1u << KVH_DT_FP8_E4M3FNUZ) | (1u << KVH_DT_I8);
constexpr uint32_t kAllScales = (1u << KVH_SCALES_NONE) | (1u << KVH_SCALES_TENSOR) | (1u << KVH_SCALES_HEAD) |
                                (1u << KVH_SCALES_BLOCK) | (1u << KVH_SCALES_TOKEN) | (1u << KVH_SCALES_SLOT);
kvh_capabilities fp8_caps() {
  kvh_capabilities c{};
  c.cache_dtypes = kAllCacheDtypes;
  c.kv_scales = kAllScales;
  return c;
}
const kvh_capabilities kFp8Caps = fp8_caps();
/// Every built-in reader applies all four score modifiers (kvh_modifier).
constexpr uint32_t kAllModifiers = KVH_MOD_SLIDING_WINDOW | KVH_MOD_SINKS | KVH_MOD_SOFTCAP | KVH_MOD_ALIBI;
const int32_t kAsmHeadSizes[] = {128};
kvh_capabilities asm_caps() {
  kvh_capabilities c = fp8_caps();
  c.head_sizes = kAsmHeadSizes;
  c.num_head_sizes = 1;
  c.modifiers = kAllModifiers;
  c.max_query_len = 4;  // the multi-token mode (pa_fwd_hd128.h kMaxQueryTokens): causal only
  return c;
}
kvh_capabilities general_caps() {
  kvh_capabilities c = fp8_caps();
  c.modifiers = kAllModifiers;
  return c;
}
const kvh_capabilities kAsmCaps = asm_caps();
const kvh_capabilities kGeneralCaps = general_caps();

// The NHD/HND readers declare what a production FlashInfer/FlashAttention-style
// decode kernel compiles dispatch entries for: power-of-two pages up to 256
// (and 1), GQA groups up to 16 (every preset model's ratio), fp16 and bf16.
// The kernel itself would run any block size; the declaration is what a case
// or a router must respect (a hybrid model's 544-token manager block reaches
// these readers only through kernel_pages, as 16-token kernel pages). They are
// the same split-K kernel as paged_attention_rocm, so they apply all four
// score modifiers (kernels/readers/score_modifiers_test.cpp runs them).
const int32_t kPageBlockSizes[] = {1, 8, 16, 32, 64, 128, 256};
kvh_capabilities page_caps() {
  kvh_capabilities c{};
  c.block_sizes = kPageBlockSizes;
  c.num_block_sizes = int32_t(sizeof(kPageBlockSizes) / sizeof(kPageBlockSizes[0]));
  c.dtypes = (1u << KVH_DT_F16) | (1u << KVH_DT_BF16);
  c.max_gqa_ratio = 16;
  c.modifiers = kAllModifiers;
  return c;
}
const kvh_capabilities kPageCaps = page_caps();

// The unified (varlen) readers: ragged query batches up to 65536 tokens a sequence, causal or
// not, every score modifier, fp8 caches at every scale granularity, any block size, GQA ratio
// and multiple of 8 up to 256 as head_size; the 3d path's workspaces are typed.
kvh_capabilities unified_caps() {
  kvh_capabilities c = fp8_caps();
  c.modifiers = kAllModifiers | KVH_MOD_NON_CAUSAL;
  c.max_query_len = 65536;
  return c;
}
const kvh_capabilities kUnifiedCaps = unified_caps();
const kvh_workspaces_fn kSegments = workspaces_entry<kvh_unified_attention_workspaces>;
const kvh_workspace_fn kSplitK = workspace_entry<kvh_paged_attention_workspace_bytes>;

// issue 22 (MLA writer): the latent cache's writers take any block size (1 included: aiter's pages of
// one token), fp16/bf16 inputs, 16-bit or fp8 caches with one per-tensor scale (provider.h KVH_CACHE_MLA).
kvh_capabilities mla_writer_caps() {
  kvh_capabilities c{};
  c.cache_formats = 1u << KVH_CACHE_MLA;
  c.cache_dtypes = kAllCacheDtypes & ~(1u << KVH_DT_I8);  // MLA caches: 16-bit or fp8 (provider.h), no int8
  c.kv_scales = (1u << KVH_SCALES_NONE) | (1u << KVH_SCALES_TENSOR);
  return c;
}
const kvh_capabilities kMlaWriterCaps = mla_writer_caps();
// ---- issue 22 (C): the MLA reader mla_decode (kernels/readers/mla_decode.h) and its fixtures ----
// head_size R + P: any multiple of 8 up to 640 (576 = 512 + 64 for every MLA preset).
struct MlaHeadSizes {
  int32_t v[80];
  MlaHeadSizes() {
    for (int i = 0; i < 80; ++i) v[i] = 8 * (i + 1);
  }
};
const MlaHeadSizes kMlaHeadSizes;
kvh_capabilities mla_caps() {
  kvh_capabilities c = mla_decode_capabilities();
  c.head_sizes = kMlaHeadSizes.v;
  c.num_head_sizes = 80;
  return c;
}
const kvh_capabilities kMlaCaps = mla_caps();
/// A reader of the latent cache with planner `plan`, typed workspaces and launcher `attention`.
kvh_kernel_desc mla_desc(const char* name, const char* description, int fixture, kvh_attention_fn attention,
                         kvh_plan_fn plan) {
  kvh_kernel_desc d = base_desc(name, description, KVH_ROLE_READER, KVH_CACHE_MLA, fixture, &kMlaCaps);
  d.attention = attention;
  d.workspaces = mla_decode_workspaces;
  d.plan = plan;
  d.last_error = mla_decode_last_error;
  return d;
}
// ---- end issue 22 (C) ----

// ---- issue 23 (D): launch configurations ----
// paged_attention_v1 and paged_attention_rocm (readers/paged_attention.h) run at 128 threads a block
// (the default launch, spelled out as t128) or 64 (one wavefront of 64; 2 warps of 32 on CUDA), and
// take the partition size of a call that passes 0 from the configuration.
const kvh_launch_config kPagedAttentionConfigs[] = {
    {"t128", "threads=128,partition_size=256"},
    {"t64", "threads=64,partition_size=256"},
    {"t64_ps512", "threads=64,partition_size=512"},
};
// unified_attention_3d (readers/unified_attention.h) runs 128 threads a program whatever the case (a
// key a thread in its logits tile); its configurations split the keys: 16 segments (seg16, the
// default launch) or segments of 128 or 512 tokens for a call that passes partition_size 0.
const kvh_launch_config kUnified3dConfigs[] = {
    {"seg16", ""},
    {"ps128", "partition_size=128"},
    {"ps512", "partition_size=512"},
};
/// `d` declaring the N launch configurations `configs`.
template <size_t N>
kvh_kernel_desc with_launch_configs(kvh_kernel_desc d, const kvh_launch_config (&configs)[N]) {
  d.num_launch_configs = int32_t(N);
  d.launch_configs = configs;
  return d;
}
// ---- end issue 23 (D) ----

const kvh_kernel_desc kBuiltins[] = {
    writer_desc<kvh_reshape_and_cache_flash>("reshape_and_cache_flash", "NHD cache writer, stride-aware",
                                             KVH_CACHE_NHD, 0, &kFp8Caps),
    writer_desc<kvh_reshape_and_cache_flash_hnd>(
        "reshape_and_cache_flash_hnd",
        "the flash writer given an HND cache (a permuted view of NHD order), stride-aware", KVH_CACHE_HND, 0),
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
    with_launch_configs(reader_desc<kvh_paged_attention_v1>("paged_attention_v1",
                                                            "paged decode attention, pa_v1 V layout (shuffle=0), "
                                                            "split-K",
                                                            KVH_CACHE_PA_V1, 0, kSplitK, &kGeneralCaps),
                        kPagedAttentionConfigs),  // issue 23 (D)
    with_launch_configs(reader_desc<kvh_paged_attention_rocm>(
                            "paged_attention_rocm",
                            "paged decode attention, shuffle V layout (shuffle=1), split-K: the general ROCm kernel",
                            KVH_CACHE_SHUFFLE, 0, kSplitK, &kGeneralCaps),
                        kPagedAttentionConfigs),  // issue 23 (D)
    reader_desc<kvh_paged_attention_nhd>("paged_attention_nhd",
                                         "paged decode attention, NHD K and V (FlashAttention-style), split-K, "
                                         "stride-aware",
                                         KVH_CACHE_NHD, 0, kSplitK, &kPageCaps),
    reader_desc<kvh_paged_attention_hnd>("paged_attention_hnd",
                                         "paged decode attention, HND K and V (FlashInfer-style), split-K, "
                                         "stride-aware",
                                         KVH_CACHE_HND, 0, kSplitK, &kPageCaps),
    reader_desc<kvh_paged_attention_nhd_manager_pages>(
        "fixture_paged_attention_nhd_manager_pages",
        "REGRESSION FIXTURE: NHD reader that takes the page index from the cache manager's block size "
        "(cache_block_size) instead of the kernel's page (block_size)",
        KVH_CACHE_NHD, 1, kSplitK, &kPageCaps),
    reader_desc<kvh_fixture_fp8_fnuz_read_as_fn>(
        "fixture_fp8_fnuz_read_as_fn",
        "REGRESSION FIXTURE: paged_attention_rocm that decodes an e4m3fnuz cache as e4m3fn (values 2x, 0x80 read as -0)",
        KVH_CACHE_SHUFFLE, 1, kSplitK, &kGeneralCaps),
    reader_desc<kvh_pa_fwd_asm>(
        "pa_fwd_asm",
        "fixed-function decode attention for head_size 128, shuffle layout (stand-in for aiter's ASM kernel)",
        KVH_CACHE_SHUFFLE, 0, nullptr, &kAsmCaps),
    reader_desc<kvh_fixture_sink_per_partition>(
        "fixture_sink_per_partition",
        "REGRESSION FIXTURE: paged_attention_rocm whose every split-K partition adds the attention-sink logit to "
        "its exp-sum, so the reduce counts the sink once per non-empty partition",
        KVH_CACHE_SHUFFLE, 1, kSplitK, &kGeneralCaps),
    reader_desc<kvh_fixture_alibi_rank_slopes>(
        "fixture_alibi_rank_slopes",
        "REGRESSION FIXTURE: paged_attention_rocm that ignores alibi_slopes and computes the ALiBi slopes from the "
        "per-rank head count (num_heads of the call) instead of the model's global head index",
        KVH_CACHE_SHUFFLE, 1, kSplitK, &kGeneralCaps),
    reader_desc<kvh_fixture_mask_by_zero>(
        "fixture_mask_by_zero",
        "REGRESSION FIXTURE: shuffle-layout reader that reads every slot of a sequence's pages and masks the unused "
        "tail by multiplying with zero (NaN/Inf in stale slots leak)",
        KVH_CACHE_SHUFFLE, 1, nullptr),
    reader_desc<kvh_fixture_prefetch_past_last_page>(
        "fixture_prefetch_past_last_page",
        "REGRESSION FIXTURE: shuffle-layout reader that also reads the page after a sequence's last one (a "
        "block-table padding entry) and masks it by multiplying with zero",
        KVH_CACHE_SHUFFLE, 1, nullptr),
    reader_desc<kvh_unified_attention_2d>(
        "unified_attention_2d",
        "unified (varlen) paged attention, NHD K and V: ragged query batches (chunked prefill, spec decode, "
        "decode), one pass per block of query tokens and GQA group, online softmax",
        KVH_CACHE_NHD, 0, nullptr, &kUnifiedCaps),
    with_launch_configs(typed_reader_desc<kvh_unified_attention_3d>(
                            "unified_attention_3d",
                            "unified (varlen) paged attention, NHD K and V: keys split into segments (typed "
                            "workspaces segm_max, segm_expsum, segm_output), then a reduce",
                            KVH_CACHE_NHD, 0, kSegments, &kUnifiedCaps),
                        kUnified3dConfigs),  // issue 23 (D)
    reader_desc<kvh_unified_attention_2d_hnd>(
        "unified_attention_2d_hnd", "unified (varlen) paged attention, HND K and V, one pass (as unified_attention_2d)",
        KVH_CACHE_HND, 0, nullptr, &kUnifiedCaps),
    typed_reader_desc<kvh_unified_attention_3d_hnd>(
        "unified_attention_3d_hnd",
        "unified (varlen) paged attention, HND K and V, segments and reduce (as unified_attention_3d)", KVH_CACHE_HND,
        0, kSegments, &kUnifiedCaps),
    reader_desc<kvh_fixture_unified_metadata_by_query_row>(
        "fixture_unified_metadata_by_query_row",
        "REGRESSION FIXTURE: unified_attention_2d indexing block_tables and seq_lens by the query row instead of the "
        "row's sequence (reads past both arrays on ragged batches; exact on all-decode batches)",
        KVH_CACHE_NHD, 1, nullptr, &kUnifiedCaps),
    reader_desc<kvh_fixture_unified_causal_off_by_one>(
        "fixture_unified_causal_off_by_one",
        "REGRESSION FIXTURE: unified_attention_2d placing query token j at L - q + j - 1 (one token too early: "
        "causal queries miss their own key)",
        KVH_CACHE_NHD, 1, nullptr, &kUnifiedCaps),
    reader_desc<kvh_fixture_unified_seq_end_mask_if_causal>(
        "fixture_unified_seq_end_mask_if_causal",
        "REGRESSION FIXTURE: unified_attention_2d applying the sequence-end mask t < L only when causal (non-causal "
        "queries attend to the stale tail of the last page)",
        KVH_CACHE_NHD, 1, nullptr, &kUnifiedCaps),
    reader_desc<kvh_fixture_unified_padded_query_stride>(
        "fixture_unified_padded_query_stride",
        "REGRESSION FIXTURE: unified_attention_2d addressing query/out rows as s * max_query_len + j (a padded "
        "per-request stride on packed tensors: later requests write past out; exact on all-decode batches)",
        KVH_CACHE_NHD, 1, nullptr, &kUnifiedCaps),
    // issue 22 (MLA writer)
    writer_desc<kvh_concat_and_cache_mla>("concat_and_cache_mla",
                                          "MLA latent cache writer (kv_c then k_pe per slot), stride-aware, fp8 "
                                          "per-tensor",
                                          KVH_CACHE_MLA, 0, &kMlaWriterCaps),
    writer_desc<kvh_fixture_mla_fp8_writer_no_clamp>(
        "fixture_mla_fp8_writer_no_clamp",
        "REGRESSION FIXTURE: MLA fp8 writer without saturation (values past the format's max become NaN)",
        KVH_CACHE_MLA, 1, &kMlaWriterCaps),
    // ---- issue 22, int8 KV caches (part A) ----
    reader_desc<kvh_fixture_int8_scales_per_sequence>(
        "fixture_int8_scales_per_sequence",
        "REGRESSION FIXTURE: paged_attention_rocm that looks per-token (TOKEN, SLOT) scales up by the sequence's "
        "index instead of the token's physical block",
        KVH_CACHE_SHUFFLE, 1, kSplitK, &kGeneralCaps),
    // ---- issue 22 (C): MLA reader ----
    mla_desc("mla_decode",
             "absorbed MLA decode over the latent cache [num_blocks, block_size, R + P]: split-K from its planner "
             "(num_splits, split_bounds, work), partials in typed workspaces, then a reduce; decode and multi-token "
             "decode (MTP) up to 8 tokens, fp16/bf16 and fp8 per-tensor caches",
             0, mla_decode_attention, mla_decode_plan),
    mla_desc("fixture_mla_metadata_not_expanded",
             "REGRESSION FIXTURE: mla_decode using each sequence's metadata for every query row of a multi-token "
             "decode without expanding it (every token sees all L keys: no causal prefix; exact for decode)",
             1, fixture_mla_metadata_not_expanded, mla_decode_plan),
    mla_desc("fixture_mla_plan_other_variant",
             "REGRESSION FIXTURE: mla_decode paired with a plan built for another kernel variant (heads tiled by 32 "
             "at 128 heads, the kernel serves 16 a work item: heads 16..31 of each tile unwritten; exact elsewhere)",
             1, mla_decode_attention, fixture_mla_plan_other_variant_plan),
    // ---- end issue 22 (C) ----
    // ---- issue 22 (D): the vllm-rocm-mla-* policies' routing targets (readers/mla_variants.h) ----
    mla_asm_desc(),
    mla_gluon_desc(),
    // ---- end issue 22 (D) ----
};

}  // namespace

/// The built-in provider's ABI 2 entry (Registry's constructor opens it); takes no configuration.
extern "C" int kvh_builtin_open(const kvh_open_args* args, kvh_provider* out) {
  (void)args;
  out->num_kernels = int32_t(sizeof(kBuiltins) / sizeof(kBuiltins[0]));
  out->kernels = kBuiltins;
  return 0;
}
