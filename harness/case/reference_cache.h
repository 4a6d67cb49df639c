// The float64 decode references of one process, shared by the cases over the same
// logical inputs (issue 24). A matrix runs one logical case over several layouts,
// block sizes, kernels and routers; their data is the same (Case::logical_id), so
// is their reference, and it is computed once. The cache is bounded in bytes and
// evicts the least recently used reference nobody holds; a --isolate worker keeps
// its cache for every case it runs (one worker per run unless a case crashes).
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "../reference/attention.h"

namespace kvh {

/// KVH_REFERENCE_CACHE_MB: the process cache's bound in megabytes (default 2048 when unset; 0
/// turns sharing off). Throws std::invalid_argument naming the variable when it is not a whole
/// number from 0 to 1048576.
int64_t reference_cache_mb_from_env();

class ReferenceCache {
 public:
  using Matrix = std::shared_ptr<const reference::RowMatrix>;
  /// Computes one reference; stops early (its result then unused) once `cancel` is set.
  /// It owns what it reads: it may outlive the case that started it.
  using Compute = std::function<reference::RowMatrix(const std::atomic<bool>& cancel)>;
  struct Entry;

  /// A case's hold on one reference. get() waits for it and rethrows what its computation
  /// threw. The last holder to drop an unfinished reference cancels and forgets it, and waits
  /// for the computation to stop (the reference checks `cancel` between sequences).
  class Lease {
   public:
    Lease() = default;
    Lease(ReferenceCache* cache, std::shared_ptr<Entry> e, bool started) : cache_(cache), e_(std::move(e)), started_(started) {}
    Lease(Lease&& o) noexcept { *this = std::move(o); }
    Lease& operator=(Lease&& o) noexcept;
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    ~Lease() { release(); }
    bool valid() const { return e_ != nullptr; }
    /// The reference [num_query_tokens, num_heads * head]; waits for it.
    Matrix get();
    /// Whether this lease started the computation (the others reused it).
    bool started() const { return started_; }
    /// Wall ms the computation took (after get(); 0 before).
    double compute_ms() const;
    void release();

   private:
    ReferenceCache* cache_ = nullptr;
    std::shared_ptr<Entry> e_;
    bool started_ = false;
  };

  /// max_bytes: the references kept once nobody holds them (0: none kept, no sharing
  /// between cases that do not overlap).
  explicit ReferenceCache(int64_t max_bytes) : max_bytes_(max_bytes) {}
  /// Waits for the computations still running (a cancelled one finishes on its own).
  ~ReferenceCache();
  ReferenceCache(const ReferenceCache&) = delete;
  ReferenceCache& operator=(const ReferenceCache&) = delete;

  /// The process's cache: KVH_REFERENCE_CACHE_MB megabytes (default 2048; 0 turns sharing off).
  /// Never destroyed (computations on the host pool may outlive main).
  static ReferenceCache& process();

  /// The reference of `key`: the one computed or being computed, or `compute` started on the
  /// host pool (run/parallel.h run_async).
  Lease acquire(const std::string& key, Compute compute);

  int64_t bytes_kept() const;
  size_t size() const;

 private:
  void finish(const std::shared_ptr<Entry>& e, int64_t bytes, bool ok);
  /// One holder less; true when it was the last of an unfinished entry (now cancelled).
  bool drop(const std::shared_ptr<Entry>& e);
  void evict_locked();

  const int64_t max_bytes_;
  mutable std::mutex m_;
  std::unordered_map<std::string, std::shared_ptr<Entry>> entries_;
  std::condition_variable idle_;
  int in_flight_ = 0;  // computations started and not finished (under m_)
  int64_t bytes_ = 0;
  uint64_t clock_ = 0;
};

}  // namespace kvh
