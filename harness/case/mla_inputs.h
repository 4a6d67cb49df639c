// The inputs of an MLA case (kvharness/provider.h KVH_CACHE_MLA) where the data lives: the
// latent projection the writer reads kv_c and k_pe from, and the reference writer of the
// latent cache. Shapes outermost first, in elements. R = kv_lora_rank, P = qk_rope_head_dim.
#pragma once
#include <cstdint>

#include "case/device_cache.h"
#include "device/device_ops.h"
#include "layout.h"

namespace kvh {

/// Columns a latent projection row has past kv_c and k_pe: the buffer is wider than what a
/// writer may read (vLLM splits kv_a_proj_with_mqa's output [T, R + P]; a fused q_a/kv_a
/// projection is wider still), so a writer that reads a row past k_pe reads filler.
constexpr int64_t kMlaProjectionPad = 64;

/// Views of a projection buffer [num_tokens, R + P + kMlaProjectionPad]: k = kv_c [T, 1, R]
/// (columns 0 .. R), v = k_pe [T, 1, P] (columns R .. R + P); q is empty. The harness's 3-D
/// views; a writer gets them as 2-D [T, R] / [T, P] (mla_writer_view).
FusedQkv mla_kv_views(int64_t num_tokens, int64_t kv_lora_rank, int64_t rope_dim);

/// `v` [T, 1, D] of mla_kv_views as the writer's 2-D [T, D] (provider.h: kv_c, k_pe).
StridedView mla_writer_view(const StridedView& v);

/// The projection buffer on the device: stream kFiller everywhere, then kv_c from stream
/// kc_stream and k_pe from kpe_stream of data_seed (logical [T, D] order, as counter16 gives).
DeviceQkv make_device_mla_kv(int64_t num_tokens, int64_t kv_lora_rank, int64_t rope_dim, DType dtype,
                             uint64_t data_seed, uint64_t kc_stream, uint64_t kpe_stream);

/// The reference writer of the latent cache (vLLM concat_and_cache_mla): for every token t with
/// slot_mapping[t] >= 0, kv_c[t] goes to the latent part and k_pe[t] to the rope part of that
/// slot's row. `kv` holds views of mla_kv_views over the device buffer `src`. fp8: null for a
/// 16-bit cache, else the per-tensor scale (granularity TENSOR, one scale for both parts).
/// Throws std::invalid_argument when L is not an mla layout.
void reference_write_mla_into(DeviceArena& cache, const CacheLayout& L, const void* src, const FusedQkv& kv,
                              const int64_t* slot_mapping, int64_t num_tokens,
                              const device::Fp8WriteScales* fp8 = nullptr);

}  // namespace kvh
