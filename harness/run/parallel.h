// The harness's host parallelism: one process-wide pool of worker threads
// (Boost.Asio's thread_pool, one per core) for references, input generation
// and host-side checks. Kernels on the cpu backend have their own workers.
#pragma once
#include <cstdint>
#include <functional>
#include <future>

namespace kvh {

/// Threads of the pool (hardware_concurrency, at least 1; KVH_HOST_THREADS overrides).
int host_threads();

/// Calls body(begin, end) on disjoint chunks covering [0, n), each at least
/// `grain` long, on the pool and on the calling thread, and returns when all
/// are done. The first exception a chunk throws is rethrown here (the other
/// chunks still run to their end). Safe to call from a pool thread.
void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t begin, int64_t end)>& body);

/// Runs fn on the pool; get() waits for it and rethrows what it threw. For
/// host work that overlaps device work (the reference while kernels run).
std::future<void> run_async(std::function<void()> fn);

}  // namespace kvh
