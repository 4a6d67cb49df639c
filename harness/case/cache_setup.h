// Pieces every case that touches a paged cache shares: old tokens in the
// cache, the fused QKV input buffer, and one call of a writer under test.
#pragma once
#include <cstdint>
#include <vector>

#include "case/arena.h"
#include "case.h"
#include "kvharness/provider.h"
#include "layout.h"
#include "registry/registry.h"
#include "check/verdict.h"

namespace kvh {

/// A fused QKV projection output [num_tokens, (num_heads + 2*num_kv_heads) * head_size]
/// and the three strided views into it (each [num_tokens, heads, head_size]).
struct FusedQkv {
  StridedView q, k, v;
};
/// The q, k and v views of a fused QKV buffer of num_tokens tokens (the
/// buffer itself lives on the device: device_cache.h make_device_qkv).
FusedQkv fused_qkv_views(int64_t num_tokens, int64_t num_heads, int64_t num_kv_heads, int64_t head_size);

kvh_dtype to_kvh(DType d);

/// Calls writer `w` on device buffers: the cache storage (element 0 at
/// d_storage), the fused QKV buffer and slot_mapping [num_tokens] int64.
/// Returns the writer's return code.
/// The outcome of a launch that returned rc != 0: CRASH when the provider
/// raised (KVH_RAISED; detail: "NAME raised: " + its message, e.g. a Python
/// exception with the provider's file:line), UNSUPPORTED when it declined the
/// case (KVH_UNSUPPORTED; detail: refusal_detail), else FAIL (the kernel refused
/// the arguments; detail: "NAME returned " + the runtime's error text). NAME is
/// Kernel::label() (the substitute under --replace-kernel).
struct LaunchFailure {
  Status status;
  std::string detail;
};
LaunchFailure launch_failure(const Kernel& k, int rc);
/// "NAME refused the case at call time: REASON" (KVH_UNSUPPORTED, kvharness.Unsupported).
std::string refusal_detail(const Kernel& k, const std::string& reason);

/// What case `c` asks of a kernel of `cache_format` (for Kernel::outside_capabilities);
/// its block_size is the kernel's page (Case::page_size: kernel_block_size under kernel_pages).
KernelUse kernel_use(const Case& c, int32_t cache_format);

/// Why kernel `k` cannot take case `c` for its cache format alone: an MLA case (Case::mla) and a
/// kernel of another format, or a kernel of format mla and a case that is not MLA; "" when they
/// agree. A mismatch is UNSUPPORTED with this reason, as any format a kernel does not declare.
std::string cache_format_refusal(const Case& c, const Kernel& k);

/// The geometry of case `c`'s cache of `manager_blocks` blocks of c.block_size
/// tokens, in the kernel's pages: under kernel_pages, manager_blocks * r pages of
/// kernel_block_size tokens (r = block_size / kernel_block_size); else as given.
/// Elements of the case's cache dtype (fp8: bytes, x = 16). An MLA case: one latent head,
/// head_size kv_lora_rank and rope_dim qk_rope_head_dim (layout.h CacheGeometry).
CacheGeometry case_geometry(const Case& c, int64_t manager_blocks);

/// `v` as a kernel gets it: under the degenerate_strides layout every size-1 dim
/// carries L.degenerate_stride (query and key/value views, like the cache's).
StridedView kernel_view(const StridedView& v, const CacheLayout& L);

class KvScaleTensors;
/// Calls writer `w` (block_size = the layout's page, L.geo.block_size; key and
/// value through kernel_view). An mla layout: key = kv_c and value = k_pe as 2-D views
/// (mla_writer_view, then kernel_view), key_cache = value_cache = L.latent, v_scales = k_scales. The cache tensors get `cache_dtype` (an fp8 one:
/// L's elements are bytes) and, when `scales` is given, its k_scales/v_scales
/// with their granularity.
int launch_writer(const Kernel& w, const CacheLayout& L, void* d_storage, const FusedQkv& qkv, void* d_qkv,
                  void* d_slots, int64_t num_tokens, DType dtype, kvh_dtype cache_dtype,
                  const KvScaleTensors* scales = nullptr);
/// The arguments launch_writer passes (for timing the same call: time_case_kernel).
kvh_write_args writer_args(const CacheLayout& L, void* d_storage, const FusedQkv& qkv, void* d_qkv, void* d_slots,
                           int64_t num_tokens, DType dtype, kvh_dtype cache_dtype,
                           const KvScaleTensors* scales = nullptr);

}  // namespace kvh
