#include "case/reference_cache.h"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <stdexcept>

#include "run/parallel.h"

namespace kvh {

struct ReferenceCache::Entry {
  std::string key;
  std::shared_future<Matrix> result;
  std::atomic<bool> cancel{false};
  std::atomic<double> ms{0};
  // Under the cache's mutex:
  int holders = 0;
  bool done = false;    // computed, counted in bytes_
  bool listed = true;   // still in entries_
  int64_t bytes = 0;
  uint64_t last_use = 0;
};

int64_t reference_cache_mb_from_env() {
  const char* e = std::getenv("KVH_REFERENCE_CACHE_MB");
  if (!e) return 2048;
  const std::string v = e;
  constexpr int64_t kMax = int64_t(1) << 20;  // 1 TiB
  int64_t mb = 0;
  bool ok = !v.empty() && v.size() <= 7;
  for (char ch : v) ok = ok && ch >= '0' && ch <= '9';
  if (ok) mb = std::stoll(v);
  if (!ok || mb > kMax)
    throw std::invalid_argument("KVH_REFERENCE_CACHE_MB='" + v + "': expected a whole number of megabytes from 0 to " +
                                std::to_string(kMax) + " (0 turns reference sharing off)");
  return mb;
}

ReferenceCache& ReferenceCache::process() {
  static ReferenceCache* cache = [] {
    int64_t mb = 2048;
    try {
      mb = reference_cache_mb_from_env();
    } catch (const std::invalid_argument&) {  // the CLI refused it already; a library user gets the default
    }
    return new ReferenceCache(mb << 20);
  }();
  return *cache;
}

ReferenceCache::Lease ReferenceCache::acquire(const std::string& key, Compute compute) {
  std::lock_guard<std::mutex> lk(m_);
  if (auto it = entries_.find(key); it != entries_.end()) {
    ++it->second->holders;
    it->second->last_use = ++clock_;
    return Lease(this, it->second, false);
  }
  auto e = std::make_shared<Entry>();
  e->key = key;
  e->holders = 1;
  e->last_use = ++clock_;
  auto promise = std::make_shared<std::promise<Matrix>>();
  e->result = promise->get_future().share();
  entries_.emplace(key, e);
  ++in_flight_;
  // Detached: the future run_async returns is not kept; the promise carries the outcome.
  try {
    (void)run_async([this, e, promise, compute = std::move(compute)] {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      auto m = std::make_shared<const reference::RowMatrix>(compute(e->cancel));
      e->ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      finish(e, int64_t(m->size()) * int64_t(sizeof(double)), !e->cancel);
      promise->set_value(std::move(m));
    } catch (...) {
      finish(e, 0, false);  // an error is not kept: the next case computes again (and sees it)
      promise->set_exception(std::current_exception());
    }
    std::lock_guard<std::mutex> done(m_);
    if (--in_flight_ == 0) idle_.notify_all();
  });
  } catch (...) {  // not started (no memory for the task): nothing may wait on this entry
    entries_.erase(key);
    e->listed = false;
    if (--in_flight_ == 0) idle_.notify_all();
    throw;
  }
  return Lease(this, e, true);
}

ReferenceCache::~ReferenceCache() {
  std::unique_lock<std::mutex> lk(m_);
  idle_.wait(lk, [this] { return in_flight_ == 0; });
}

void ReferenceCache::finish(const std::shared_ptr<Entry>& e, int64_t bytes, bool ok) {
  std::lock_guard<std::mutex> lk(m_);
  if (!ok || !e->listed) {
    if (e->listed) entries_.erase(e->key), e->listed = false;
    return;
  }
  e->done = true;
  e->bytes = bytes;
  bytes_ += bytes;
  evict_locked();
}

bool ReferenceCache::drop(const std::shared_ptr<Entry>& e) {
  std::lock_guard<std::mutex> lk(m_);
  if (--e->holders > 0) return false;
  if (!e->done) {  // nobody waits for it any more: stop it, forget it
    e->cancel = true;
    if (e->listed) entries_.erase(e->key);
    e->listed = false;
    return true;
  }
  evict_locked();
  return false;
}

// The least recently used references nobody holds go first, until the kept ones fit.
void ReferenceCache::evict_locked() {
  while (bytes_ > max_bytes_) {
    std::shared_ptr<Entry> oldest;
    for (const auto& [key, e] : entries_)
      if (e->done && e->holders == 0 && (!oldest || e->last_use < oldest->last_use)) oldest = e;
    if (!oldest) return;
    bytes_ -= oldest->bytes;
    oldest->listed = false;
    entries_.erase(oldest->key);
  }
}

int64_t ReferenceCache::bytes_kept() const {
  std::lock_guard<std::mutex> lk(m_);
  return bytes_;
}

size_t ReferenceCache::size() const {
  std::lock_guard<std::mutex> lk(m_);
  return entries_.size();
}

ReferenceCache::Lease& ReferenceCache::Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    release();
    cache_ = o.cache_;
    e_ = std::move(o.e_);
    started_ = o.started_;
    o.cache_ = nullptr;
  }
  return *this;
}

ReferenceCache::Matrix ReferenceCache::Lease::get() { return e_->result.get(); }

double ReferenceCache::Lease::compute_ms() const { return e_ ? e_->ms.load() : 0.0; }

void ReferenceCache::Lease::release() {
  if (!e_) return;
  // The last holder of an unfinished reference waits for its cancelled computation to stop, so
  // that no computation outlives every case (at exit it would run into static destructors).
  if (cache_->drop(e_)) e_->result.wait();
  e_.reset();
}

}  // namespace kvh
