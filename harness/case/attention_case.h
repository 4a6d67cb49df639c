// Runs one `attention` or `pipeline` case: decode attention over a paged cache
// of random sequences, checked against reference attention computed straight
// from the logical Q, K and V.
//   attention: the reference writer fills the cache; the reader (or the
//              reader a router picks) under test computes attention.
//   pipeline:  the writer under test fills the cache, then the reader: what an
//              end-to-end accuracy run measures, in milliseconds.
#pragma once
#include "registry/registry.h"
#include "bench/timing.h"
#include "check/verdict.h"

namespace kvh {

struct DecodeOptions {
  bool launch_misrouted = false;  // launch a misrouted kernel anyway and report the damage too
  TimingOptions timing;           // a PASS is timed: the reader (kernel_us), in pipelines the writer too (writer_us)
};

/// Compute units the router assumes for `target`: a named target (MI300X,
/// MI325X, MI355X), "cus=N" for a what-if, or "" for the device's own.
/// Throws std::invalid_argument naming the known targets.
int64_t target_compute_units(const std::string& target);

/// Routing is checked before launch: a routed kernel asked for a head size
/// outside its declared capabilities is FAIL misroute. Never throws for a
/// kernel's misbehaviour (launch errors FAIL launch_error, device faults CRASH).
CaseResult run_decode_case(const Case& c, const Registry& registry, const DecodeOptions& options);

/// The most memory one decode case can need, in bytes, from its shape alone
/// (every drawn sequence at context_len_max): device, the cache arena and its
/// snapshot (margins included), the fused QKV buffers, slot_mapping, `out`,
/// block_tables, context_lens and the split-K workspace at partition 256;
/// host, the reference's copies of Q, K and V (twice for a `values` axis that
/// reshapes them), its float64 K and V of one sequence per host thread, and
/// `out` with its downloaded copy. The host explanation of a failing writer
/// is not counted: it degrades to a first-byte report when memory runs out.
struct MemoryEstimate {
  int64_t device_bytes = 0, host_bytes = 0;
};
/// `cache_format`: the reader's (KVH_CACHE_*; a router's readers read shuffle).
MemoryEstimate estimate_decode_memory(const Case& c, int32_t cache_format);

/// "" when a machine holds `need`, else why not, with the numbers in GiB.
/// device_total: the device's memory (ignored on the cpu backend, where device
/// memory is host memory and both parts must fit in host_available).
std::string memory_refusal(const MemoryEstimate& need, bool cpu_backend, uint64_t device_total,
                           uint64_t host_available);

/// MemAvailable of /proc/meminfo in bytes (0 when unreadable). The variable
/// KVH_TEST_HOST_MEMORY (bytes) replaces it: the refusal path's test hook.
uint64_t host_available_bytes();

}  // namespace kvh
