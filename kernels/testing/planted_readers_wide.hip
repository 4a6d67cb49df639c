// Planted-bug readers for large index spaces, for tests only (not in the
// builtin provider): the simple shuffle-layout reader of
// fixtures/simple_reader.h with one index kept too narrow. Both are mutants
// killed by the default suite's sparse slice (issue 23: block ids above
// 65,535, offsets past 2^31 elements, only the touched pages backed):
//   planted_int32_offset     K and V element offsets in int32: past 2^31 the
//                            offset wraps negative and the reader reads far
//                            outside the view (the guard before a sparse
//                            arena: CRASH; plain memory: FAIL or CRASH)
//   planted_uint16_block_id  block_tables entries in uint16: block id b reads
//                            page b mod 65,536 (an untouched page: CRASH)
// kvharness_planted registers them, e.g.
//   kvharness_planted run --replace-kernel paged_attention_rocm=planted_uint16_block_id
#include "../fixtures/simple_reader.h"
#include "registry/kernel_desc.h"

namespace {

struct Int32Offset : kvh::kernels::CorrectSimplePolicy {
  using Offset = int32_t;
};

int planted_int32_offset(const kvh_attention_args* a, void* stream) {
  return kvh::kernels::launch_simple_reader<Int32Offset>(a, stream);
}

// Issue 23: the block_tables entry kept in 16 bits (an `unsigned short` page id): right while
// every block id is below 65,536; above, it reads block id mod 65,536 (an untouched page of a
// sparse arena: a fault, or another sequence's tokens).
struct Uint16BlockId : kvh::kernels::CorrectSimplePolicy {
  using BlockId = uint16_t;
};

int planted_uint16_block_id(const kvh_attention_args* a, void* stream) {
  return kvh::kernels::launch_simple_reader<Uint16BlockId>(a, stream);
}

const kvh_kernel_desc kPlanted[] = {
    kvh::kernels::reader_desc<planted_int32_offset>(
        "planted_int32_offset",
        "PLANTED BUG: shuffle-layout reader computing K/V element offsets in int32 (wraps past 2^31 elements)",
        KVH_CACHE_SHUFFLE, 1, nullptr),
    kvh::kernels::reader_desc<planted_uint16_block_id>(
        "planted_uint16_block_id",
        "PLANTED BUG: shuffle-layout reader keeping block_tables entries in uint16 (block ids past 65,535 wrap)",
        KVH_CACHE_SHUFFLE, 1, nullptr),
};

}  // namespace

/// The planted wide-index readers, provider-style (kvharness/provider.h); fixture = 1.
extern "C" const kvh_kernel_desc* kvh_planted_wide_readers(int32_t* count) {
  *count = int32_t(sizeof(kPlanted) / sizeof(kPlanted[0]));
  return kPlanted;
}
