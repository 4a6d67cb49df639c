// Pieces every case that touches a paged cache shares: old tokens in the
// cache, the fused QKV input buffer, and one call of a writer under test.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "arena.h"
#include "case.h"
#include "kvharness/provider.h"
#include "layout.h"
#include "registry.h"
#include "verdict.h"

namespace kvh {

/// Fills every element the K and V views own with random finite, non-zero
/// "old token" values (so stale reads and unwritten slots never look like zeros).
void fill_old_tokens(const CacheLayout& L, GuardedArena& cache, DType dtype, uint64_t seed);

/// A fused QKV projection output [num_tokens, (num_heads + 2*num_kv_heads) * head_size]
/// and the three strided views into it (each [num_tokens, heads, head_size]).
struct FusedQkv {
  std::vector<uint16_t> buf;
  StridedView q, k, v;
};
/// The q, k and v views of a fused QKV buffer, without the buffer (for
/// buffers that live only on the device: kvharness bench).
FusedQkv fused_qkv_views(int64_t num_tokens, int64_t num_heads, int64_t num_kv_heads, int64_t head_size);
/// Random query; key and value (logical [num_tokens, num_kv_heads, head_size])
/// placed at their columns.
FusedQkv make_fused_qkv(int64_t num_tokens, int64_t num_heads, int64_t num_kv_heads, int64_t head_size,
                        const std::vector<uint16_t>& key, const std::vector<uint16_t>& value, DType dtype,
                        std::mt19937_64& rng);

kvh_dtype to_kvh(DType d);

/// Calls writer `w` on device buffers: the cache storage (element 0 at
/// d_storage), the fused QKV buffer and slot_mapping [num_tokens] int64.
/// Returns the writer's return code.
/// The outcome of a launch that returned rc != 0: CRASH when the provider
/// raised (KVH_RAISED; detail: "NAME raised: " + its message, e.g. a Python
/// exception with the provider's file:line), else FAIL (the kernel refused the
/// arguments; detail: "NAME returned " + the runtime's error text).
struct LaunchFailure {
  Status status;
  std::string detail;
};
LaunchFailure launch_failure(const Kernel& k, int rc);

/// What case `c` asks of a kernel of `cache_format` (for Kernel::outside_capabilities).
KernelUse kernel_use(const Case& c, int32_t cache_format);

int launch_writer(const Kernel& w, const CacheLayout& L, void* d_storage, const FusedQkv& qkv, void* d_qkv,
                  void* d_slots, int64_t num_tokens, DType dtype);

}  // namespace kvh
