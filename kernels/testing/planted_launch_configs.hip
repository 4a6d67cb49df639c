// Planted launch-configuration bug (issue 23 (D)), for the mutation test only (not in the
// builtin provider): the general shuffle-layout reader of paged_attention.h whose split-K reduce
// strides its loop over head_size by kPaThreads (128, the default launch) instead of the block's
// threads. Right at the default launch and at t128; at 64 threads a block (the t64 and t64_ps512
// configurations) dims 64..127 of every multi-partition head are never written: the same kernel is
// right or wrong by launch configuration, as in the public report of a Triton split-K reduce
// miscompiled at 2 warps and right at 4.
//   planted_reduce_assumes_128_threads   stands in for paged_attention_rocm
#include "readers/paged_attention.h"
#include "registry/kernel_desc.h"

namespace {

using kvh::kernels::CorrectVariant;

struct ReduceAssumes128Threads : CorrectVariant {
  static KVH_HD int reduce_dim_stride(int /*threads*/) { return kvh::kernels::kPaThreads; }
};

int reduce_assumes_128_threads(const kvh_attention_args* a, void* stream) {
  return kvh::kernels::launch_paged_attention<KVH_CACHE_SHUFFLE, ReduceAssumes128Threads>(*a, stream);
}

uint64_t workspace(const kvh_attention_args* a) { return kvh::kernels::paged_attention_workspace_bytes(*a); }

// The declaration of paged_attention_rocm (builtin_provider.cpp kGeneralCaps): fp8 and int8 caches at
// every scale granularity, every score modifier.
kvh_capabilities general_caps() {
  kvh_capabilities c{};
  c.cache_dtypes = (1u << KVH_DT_F16) | (1u << KVH_DT_BF16) | (1u << KVH_DT_FP8_E4M3FN) |
                   (1u << KVH_DT_FP8_E4M3FNUZ) | (1u << KVH_DT_I8);
  c.kv_scales = (1u << KVH_SCALES_NONE) | (1u << KVH_SCALES_TENSOR) | (1u << KVH_SCALES_HEAD) |
                (1u << KVH_SCALES_BLOCK) | (1u << KVH_SCALES_TOKEN) | (1u << KVH_SCALES_SLOT);
  c.modifiers = KVH_MOD_SLIDING_WINDOW | KVH_MOD_SINKS | KVH_MOD_SOFTCAP | KVH_MOD_ALIBI;
  return c;
}
const kvh_capabilities kCaps = general_caps();

const kvh_kernel_desc kPlanted[] = {
    kvh::kernels::reader_desc<reduce_assumes_128_threads>(
        "planted_reduce_assumes_128_threads",
        "PLANTED BUG (launch configurations): the split-K reduce strides head_size by 128 whatever the block's "
        "threads: at 64 threads a block (t64, t64_ps512) dims 64..127 of multi-partition heads stay unwritten",
        KVH_CACHE_SHUFFLE, 1, kvh::kernels::workspace_entry<workspace>, &kCaps),
};

}  // namespace

/// The planted launch-configuration readers, provider-style (kvharness/provider.h); fixture = 1.
extern "C" const kvh_kernel_desc* kvh_planted_launch_configs(int32_t* count) {
  *count = int32_t(sizeof(kPlanted) / sizeof(kPlanted[0]));
  return kPlanted;
}
