// A planted-bug reader for the large reader suite (cases/large_readers.toml),
// for tests only (not in the builtin provider): the simple shuffle-layout
// reader of fixtures/simple_reader.h computing its K and V element offsets in
// int32. Right while every offset is below 2^31; past that (a K or V view of
// more than 2^31 elements, sequences in its top blocks) the offset wraps
// negative and the reader reads far outside the view: FAIL (wrong values) or
// CRASH (an unmapped address). kvharness_planted registers it:
//   kvharness_planted run cases/large_readers.toml \
//     --replace-kernel paged_attention_rocm=planted_int32_offset
#include "../fixtures/simple_reader.h"
#include "registry/kernel_desc.h"

namespace {

struct Int32Offset : kvh::kernels::CorrectSimplePolicy {
  using Offset = int32_t;
};

int planted_int32_offset(const kvh_attention_args* a, void* stream) {
  return kvh::kernels::launch_simple_reader<Int32Offset>(a, stream);
}

const kvh_kernel_desc kPlanted[] = {
    kvh::kernels::reader_desc<planted_int32_offset>(
        "planted_int32_offset",
        "PLANTED BUG: shuffle-layout reader computing K/V element offsets in int32 (wraps past 2^31 elements)",
        KVH_CACHE_SHUFFLE, 1, nullptr),
};

}  // namespace

/// The planted wide-index readers, provider-style (kvharness/provider.h); fixture = 1.
extern "C" const kvh_kernel_desc* kvh_planted_wide_readers(int32_t* count) {
  *count = int32_t(sizeof(kPlanted) / sizeof(kPlanted[0]));
  return kPlanted;
}
