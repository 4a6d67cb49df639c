// The host pool: every index once, errors come back, nesting does not deadlock.
#include "run/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <vector>

#include "run/phases.h"

namespace kvh {
namespace {

TEST(Parallel, EveryIndexIsVisitedExactlyOnce) {
  for (int64_t n : {0, 1, 5, 1000, 100003}) {
    std::vector<std::atomic<int>> seen(static_cast<size_t>(n));
    parallel_for(n, 7, [&](int64_t b, int64_t e) {
      ASSERT_LE(b, e);
      for (int64_t i = b; i < e; ++i) seen[size_t(i)]++;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(seen[size_t(i)].load(), 1) << "n " << n << " index " << i;
  }
}

TEST(Parallel, AChunkThatThrowsRethrowsOnTheCaller) {
  EXPECT_THROW(parallel_for(1000, 1,
                            [](int64_t b, int64_t e) {
                              if (b <= 500 && 500 < e) throw std::runtime_error("chunk failed");
                            }),
               std::runtime_error);
}

TEST(Parallel, NestedAndAsyncWorkFinishes) {
  std::atomic<int64_t> sum{0};
  auto f = run_async([&] {
    parallel_for(64, 1, [&](int64_t b, int64_t e) {
      parallel_for(100, 10, [&](int64_t b2, int64_t e2) { sum += (e - b) * (e2 - b2); });
    });
  });
  f.get();
  EXPECT_EQ(sum.load(), 6400);
  auto bad = run_async([] { throw std::invalid_argument("reference failed"); });
  EXPECT_THROW(bad.get(), std::invalid_argument);
}

TEST(Phases, ACaseTimeGoesToOnePhaseAtATimeAndAddsUp) {
  PhaseTimes t{};
  {
    PhaseClock clock(t);
    CurrentPhaseClock current(clock);
    enter_phase(Phase::Inputs);
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(20);
    while (std::chrono::steady_clock::now() < until) {
    }
    enter_phase(Phase::Check);
  }
  EXPECT_GE(t[size_t(Phase::Inputs)], 19.0);
  EXPECT_LT(t[size_t(Phase::Check)], t[size_t(Phase::Inputs)]);  // closed right after it opened
  EXPECT_EQ(t[size_t(Phase::Launch)], 0.0);
  enter_phase(Phase::Launch);  // no clock: nothing to charge, no crash
  const auto totals = phase_totals({t, t});
  EXPECT_EQ(totals.front().first, "inputs");
  EXPECT_DOUBLE_EQ(totals.front().second, 2 * t[size_t(Phase::Inputs)]);
}

}  // namespace
}  // namespace kvh
