#include "run/parallel.h"

#include <atomic>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

namespace kvh {

namespace {

boost::asio::thread_pool& pool() {
  static boost::asio::thread_pool p{static_cast<size_t>(host_threads())};
  return p;
}

// Chunks are claimed from a counter by whoever is free: the caller never
// waits on a chunk nobody has started, even when every pool thread is busy.
struct Job {
  std::function<void(int64_t, int64_t)> body;
  int64_t n = 0, chunk = 1, chunks = 0;
  std::atomic<int64_t> next{0}, done{0};
  std::mutex m;
  std::condition_variable cv;
  std::exception_ptr error;

  void work() {
    for (int64_t c; (c = next.fetch_add(1)) < chunks;) {
      try {
        body(c * chunk, std::min(n, (c + 1) * chunk));
      } catch (...) {
        std::lock_guard<std::mutex> lk(m);
        if (!error) error = std::current_exception();
      }
      if (done.fetch_add(1) + 1 == chunks) {
        std::lock_guard<std::mutex> lk(m);
        cv.notify_all();
      }
    }
  }
};

}  // namespace

int host_threads() {
  static const int n = [] {
    if (const char* e = std::getenv("KVH_HOST_THREADS"); e && std::atoi(e) > 0) return std::atoi(e);
    return int(std::max(1u, std::thread::hardware_concurrency()));
  }();
  return n;
}

void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& body) {
  if (n <= 0) return;
  const int64_t threads = host_threads();
  grain = std::max<int64_t>(grain, 1);
  if (threads == 1 || n <= grain) return body(0, n);
  auto job = std::make_shared<Job>();
  job->body = body;
  job->n = n;
  // A few chunks per thread evens out uneven ones (sequences of different lengths).
  job->chunk = std::max(grain, (n + 4 * threads - 1) / (4 * threads));
  job->chunks = (n + job->chunk - 1) / job->chunk;
  for (int64_t i = 0; i < std::min(threads, job->chunks - 1); ++i) boost::asio::post(pool(), [job] { job->work(); });
  job->work();
  std::unique_lock<std::mutex> lk(job->m);
  job->cv.wait(lk, [&] { return job->done.load() == job->chunks; });
  if (job->error) std::rethrow_exception(job->error);
}

std::future<void> run_async(std::function<void()> fn) {
  auto task = std::make_shared<std::packaged_task<void()>>(std::move(fn));
  std::future<void> f = task->get_future();
  boost::asio::post(pool(), [task] { (*task)(); });
  return f;
}

}  // namespace kvh
