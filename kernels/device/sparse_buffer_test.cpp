// Sparse buffers on the cpu backend: the windows are readable and writable,
// an access anywhere else (an untouched page, the guard before the range)
// faults, and a range of tens of gigabytes costs only its windows' pages.
#include "device/sparse_buffer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>

namespace kvh::device {
namespace {

// Resident bytes of this process (/proc/self/statm's second field, in pages).
size_t resident_bytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
  std::fclose(f);
  return size_t(resident) * size_t(sysconf(_SC_PAGESIZE));
}

TEST(RoundWindows, RoundsOutClipsSortsAndMerges) {
  const auto w = round_windows({{9000, 9001}, {10, 20}, {4000, 4200}, {20000, 99999}}, 50000, 4096);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[0].begin, 0u);  // [0, 4096), [0, 8192) and [8192, 12288) after rounding: one window
  EXPECT_EQ(w[0].end, 12288u);
  EXPECT_EQ(w[1].begin, 16384u);
  EXPECT_EQ(w[1].end, 50000u);  // clipped to the buffer
}

TEST(RoundWindows, TouchingWindowsMerge) {
  const auto w = round_windows({{0, 4096}, {4096, 5000}}, 1 << 20, 4096);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].end, 8192u);
}

constexpr size_t kBig = size_t(24) << 30;  // 24 GiB of addresses: more than this machine's memory

TEST(SparseBuffer, WindowsAreReadableAndWritableAndCostOnlyTheirPages) {
  const size_t before = resident_bytes();
  SparseBuffer b(kBig, {{0, 1 << 20}, {(size_t(5) << 30) + 100, (size_t(5) << 30) + 200}, {kBig - 4096, kBig}});
  ASSERT_TRUE(b.reserved());
  EXPECT_EQ(b.size(), kBig);
  ASSERT_EQ(b.windows().size(), 3u);
  EXPECT_EQ(b.committed_bytes(), (size_t(1) << 20) + 2 * 4096);
  auto* p = static_cast<uint8_t*>(b.get());
  for (const ByteRange& w : b.windows()) std::memset(p + w.begin, 0x5a, w.end - w.begin);
  EXPECT_EQ(p[(size_t(5) << 30) + 150], 0x5a);
  EXPECT_EQ(p[kBig - 1], 0x5a);
  const size_t grown = resident_bytes() - before;
  EXPECT_LT(grown, size_t(16) << 20) << "resident memory grew by " << grown << " bytes";
}

TEST(SparseBufferDeathTest, AnUntouchedPageFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  SparseBuffer b(kBig, {{0, 4096}});
  volatile uint8_t* p = static_cast<uint8_t*>(b.get());
  p[0] = 1;  // backed
  EXPECT_EXIT(p[size_t(3) << 30] = 1, died_of_unbacked_access, "");
  EXPECT_EXIT((void)p[4096], died_of_unbacked_access, "");
}

TEST(SparseBufferDeathTest, TheGuardBeforeTheRangeFaults) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  SparseBuffer b(size_t(1) << 20, {{0, size_t(1) << 20}});
  volatile uint8_t* p = static_cast<uint8_t*>(b.get());
  // Where a 32-bit element offset that wrapped negative lands: up to 4 GiB before the view.
  EXPECT_EXIT((void)p[-(int64_t(3) << 30)], died_of_unbacked_access, "");
  EXPECT_EXIT((void)p[size_t(1) << 20], died_of_unbacked_access, "");  // just past the end
}

TEST(SparseBuffer, MovesAndReleases) {
  SparseBuffer a(size_t(1) << 30, {{0, 8192}});
  void* p = a.get();
  SparseBuffer b(std::move(a));
  EXPECT_EQ(b.get(), p);
  EXPECT_EQ(a.get(), nullptr);
  b = SparseBuffer();
  EXPECT_EQ(b.get(), nullptr);
}

}  // namespace
}  // namespace kvh::device
