// The built-in kernels, offered through the same provider ABI a shared
// library uses (kvharness/provider.h).
#include "kvharness/provider.h"

extern "C" int kvh_reshape_and_cache_flash(const kvh_write_args*, void*);
extern "C" int kvh_reshape_and_cache(const kvh_write_args*, void*);
extern "C" int kvh_reshape_and_cache_shuffle(const kvh_write_args*, void*);
extern "C" int kvh_reshape_and_cache_shuffle_contiguous(const kvh_write_args*, void*);
extern "C" int kvh_paged_attention_v1(const kvh_attention_args*, void*);
extern "C" int kvh_paged_attention_rocm(const kvh_attention_args*, void*);
extern "C" uint64_t kvh_paged_attention_workspace_bytes(const kvh_attention_args*);
extern "C" int kvh_pa_fwd_asm(const kvh_attention_args*, void*);

namespace {

constexpr kvh_kernel_desc writer(const char* name, const char* description, kvh_cache_format format, int fixture,
                                 kvh_write_fn fn) {
  return kvh_kernel_desc{KVH_ABI_VERSION, name, description, KVH_ROLE_WRITER, format, fixture, fn, nullptr, nullptr, nullptr, 0, {}};
}

constexpr kvh_kernel_desc reader(const char* name, const char* description, kvh_cache_format format,
                                 kvh_attention_fn fn, kvh_workspace_fn workspace, const int32_t* head_sizes,
                                 int32_t num_head_sizes) {
  return kvh_kernel_desc{KVH_ABI_VERSION, name, description, KVH_ROLE_READER, format, 0, nullptr, fn, workspace,
                         head_sizes, num_head_sizes, {}};
}

const int32_t kAsmHeadSizes[] = {128};

const kvh_kernel_desc kBuiltins[] = {
    writer("reshape_and_cache_flash", "NHD cache writer, stride-aware", KVH_CACHE_NHD, 0, kvh_reshape_and_cache_flash),
    writer("reshape_and_cache", "pa_v1 (shuffle=0) cache writer, stride-aware", KVH_CACHE_PA_V1, 0,
           kvh_reshape_and_cache),
    writer("reshape_and_cache_shuffle", "shuffle=1 cache writer, stride-aware (the fix)", KVH_CACHE_SHUFFLE, 0,
           kvh_reshape_and_cache_shuffle),
    writer("fixture_shuffle_contiguous",
           "REGRESSION FIXTURE: shuffle=1 writer that assumes a contiguous cache (block base = "
           "block_id * num_kv_heads * head_size * block_size)",
           KVH_CACHE_SHUFFLE, 1, kvh_reshape_and_cache_shuffle_contiguous),
    reader("paged_attention_v1", "paged decode attention, pa_v1 V layout (shuffle=0), split-K", KVH_CACHE_PA_V1,
           kvh_paged_attention_v1, kvh_paged_attention_workspace_bytes, nullptr, 0),
    reader("paged_attention_rocm", "paged decode attention, shuffle V layout (shuffle=1), split-K: the general ROCm kernel",
           KVH_CACHE_SHUFFLE, kvh_paged_attention_rocm, kvh_paged_attention_workspace_bytes, nullptr, 0),
    reader("pa_fwd_asm", "fixed-function decode attention for head_size 128, shuffle layout (stand-in for aiter's ASM kernel)",
           KVH_CACHE_SHUFFLE, kvh_pa_fwd_asm, nullptr, kAsmHeadSizes, 1),
};

}  // namespace

extern "C" const kvh_kernel_desc* kvh_builtin_kernels(int32_t* count) {
  *count = int32_t(sizeof(kBuiltins) / sizeof(kBuiltins[0]));
  return kBuiltins;
}
