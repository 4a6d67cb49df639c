// The unified (varlen) paged attention readers (design in unified_attention.h):
// ragged query batches (chunked prefill, speculative decode, decode) over
//   unified_attention_2d, unified_attention_3d          K and V NHD [num_blocks, block_size, num_kv_heads, head_size]
//   unified_attention_2d_hnd, unified_attention_3d_hnd  K and V HND [num_blocks, num_kv_heads, block_size, head_size]
// 2d: one pass over the keys per program (online softmax), no workspace.
// 3d: keys split into segments, partials in typed workspaces (segm_max,
// segm_expsum, segm_output), then a reduce.
#include "readers/unified_attention.h"

namespace ua = kvh::kernels;

extern "C" int kvh_unified_attention_2d(const kvh_attention_args* a, void* stream) {
  return ua::launch_unified_attention<KVH_CACHE_NHD, false>(*a, stream);
}

extern "C" int kvh_unified_attention_3d(const kvh_attention_args* a, void* stream) {
  return ua::launch_unified_attention<KVH_CACHE_NHD, true>(*a, stream);
}

extern "C" int kvh_unified_attention_2d_hnd(const kvh_attention_args* a, void* stream) {
  return ua::launch_unified_attention<KVH_CACHE_HND, false>(*a, stream);
}

extern "C" int kvh_unified_attention_3d_hnd(const kvh_attention_args* a, void* stream) {
  return ua::launch_unified_attention<KVH_CACHE_HND, true>(*a, stream);
}

extern "C" int kvh_unified_attention_workspaces(const kvh_attention_args* a, kvh_workspace_spec* specs,
                                                int32_t max_specs, int32_t* count) {
  return ua::unified_attention_workspaces(a, specs, max_specs, count);
}
