// The built-in kernels, offered through the same provider ABI a shared
// library uses (kvharness/provider.h).
#include "kvharness/provider.h"

extern "C" int kvh_reshape_and_cache_flash(const kvh_write_args*, void*);
extern "C" int kvh_reshape_and_cache(const kvh_write_args*, void*);
extern "C" int kvh_reshape_and_cache_shuffle(const kvh_write_args*, void*);
extern "C" int kvh_reshape_and_cache_shuffle_contiguous(const kvh_write_args*, void*);

namespace {

constexpr kvh_kernel_desc writer(const char* name, const char* description, kvh_cache_format format, int fixture,
                                 kvh_write_fn fn) {
  return kvh_kernel_desc{KVH_ABI_VERSION, name, description, KVH_ROLE_WRITER, format, fixture, fn, nullptr, nullptr, nullptr, 0, {}};
}

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
};

}  // namespace

extern "C" const kvh_kernel_desc* kvh_builtin_kernels(int32_t* count) {
  *count = int32_t(sizeof(kBuiltins) / sizeof(kBuiltins[0]));
  return kBuiltins;
}
