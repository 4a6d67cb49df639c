// Tests of the host SIMT runtime: the execution model the cpu backend promises.
#include <gtest/gtest.h>

#include <cstddef>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "kvh_runtime.h"

namespace {

struct WaveGuard {  // restores the runtime settings a test changes
  kvh::host::Config saved = kvh::host::config();
  ~WaveGuard() { kvh::host::config() = saved; }
};

__global__ void shared_separate_kernel(int* out) {
  __shared__ int s[128];
  const int t = threadIdx.x;
  s[t] = int(blockIdx.x) * 1000 + t;
  __syncthreads();
  out[blockIdx.x * blockDim.x + t] = s[(t + 1) % blockDim.x];
}

TEST(HostSimt, SharedMemoryOfConcurrentBlocksStaysSeparate) {
  WaveGuard g;
  kvh::host::config().workers = 2;
  kvh::host::config().random_order = true;
  const unsigned blocks = 257, threads = 128;
  std::vector<int> out(blocks * threads, -1);
  hipLaunchKernelGGL(shared_separate_kernel, dim3(blocks), dim3(threads), 0, nullptr, out.data());
  ASSERT_EQ(hipGetLastError(), hipSuccess);
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned t = 0; t < threads; ++t)
      ASSERT_EQ(out[b * threads + t], int(b) * 1000 + int((t + 1) % threads)) << "block " << b << " thread " << t;
}

__global__ void shfl_xor_kernel(int* out, int mask) {
  const int lane = threadIdx.x % warpSize;
  out[threadIdx.x] = kvh_shfl_xor(lane * 10 + int(threadIdx.x / warpSize), mask);
}

__global__ void warp_sum_kernel(float* out, const float* in) {
  float v = in[threadIdx.x];
  for (int m = warpSize / 2; m > 0; m /= 2) v += kvh_shfl_xor(v, m);
  out[threadIdx.x] = v;
}

// Planted bug: a reduction written for 32 lanes, as CUDA code often is.
__global__ void warp_sum_assumes_32_kernel(float* out, const float* in) {
  float v = in[threadIdx.x];
  for (int m = 16; m > 0; m /= 2) v += kvh_shfl_xor(v, m);
  out[threadIdx.x] = v;
}

std::vector<float> warp_sums(int wave, void (*kernel)(float*, const float*)) {
  WaveGuard g;
  kvh::host::config().wave_size = wave;
  const int n = 128;
  std::vector<float> in(n), out(n, -1.f);
  std::iota(in.begin(), in.end(), 1.f);
  hipLaunchKernelGGL(kernel, dim3(1), dim3(n), 0, nullptr, out.data(), in.data());
  EXPECT_EQ(hipGetLastError(), hipSuccess);
  return out;
}

float expected_warp_sum(int lane_base, int wave) {
  float s = 0;
  for (int i = 0; i < wave; ++i) s += float(lane_base + i + 1);
  return s;
}

class HostSimtWave : public ::testing::TestWithParam<int> {};

TEST_P(HostSimtWave, ShflXorExchangesWithinTheWave) {
  const int wave = GetParam();
  WaveGuard g;
  kvh::host::config().wave_size = wave;
  for (int mask : {1, 5, wave / 2}) {
    std::vector<int> out(128, -1);
    hipLaunchKernelGGL(shfl_xor_kernel, dim3(1), dim3(128), 0, nullptr, out.data(), mask);
    ASSERT_EQ(hipGetLastError(), hipSuccess);
    for (int t = 0; t < 128; ++t) ASSERT_EQ(out[t], ((t % wave) ^ mask) * 10 + t / wave) << "mask " << mask << " t " << t;
  }
}

TEST_P(HostSimtWave, WaveGenericReductionSumsEveryLane) {
  const int wave = GetParam();
  auto out = warp_sums(wave, warp_sum_kernel);
  for (int t = 0; t < 128; ++t) EXPECT_EQ(out[t], expected_warp_sum(t / wave * wave, wave)) << t;
}

TEST_P(HostSimtWave, ShflAndShflDownFollowHipSemantics) {
  const int wave = GetParam();
  WaveGuard g;
  kvh::host::config().wave_size = wave;
  std::vector<int> a(64, -1), b(64, -1);
  struct K {
    static void run(int* a, int* b) {
      const int lane = threadIdx.x % warpSize;
      a[threadIdx.x] = kvh_shfl(lane + 100, 3);
      b[threadIdx.x] = kvh_shfl_down(lane + 100, 4u);
    }
  };
  hipLaunchKernelGGL(K::run, dim3(1), dim3(64), 0, nullptr, a.data(), b.data());
  ASSERT_EQ(hipGetLastError(), hipSuccess);
  for (int t = 0; t < 64; ++t) {
    const int lane = t % wave;
    EXPECT_EQ(a[t], 103);
    EXPECT_EQ(b[t], lane + 4 < wave ? lane + 104 : lane + 100);  // out of range: own value
  }
}

INSTANTIATE_TEST_SUITE_P(Waves, HostSimtWave, ::testing::Values(32, 64));

TEST(HostSimt, ReductionAssuming32LanesIsRightAtWave32AndWrongAtWave64) {
  auto at32 = warp_sums(32, warp_sum_assumes_32_kernel);
  for (int t = 0; t < 128; ++t) EXPECT_EQ(at32[t], expected_warp_sum(t / 32 * 32, 32));
  auto at64 = warp_sums(64, warp_sum_assumes_32_kernel);
  int wrong = 0;
  for (int t = 0; t < 128; ++t) wrong += at64[t] != expected_warp_sum(t / 64 * 64, 64);
  EXPECT_EQ(wrong, 128) << "at wave 64 a 32-lane reduction must miss half of every wave";
}

__global__ void count_kernel(int* hits) { hits[blockIdx.x * blockDim.x + threadIdx.x] = 1; }

TEST(HostSimt, LaunchLimitsAreHipErrorsNotUndefinedBehaviour) {
  std::vector<int> hits(4096, 0);
  hipLaunchKernelGGL(count_kernel, dim3(1), dim3(2048), 0, nullptr, hits.data());
  EXPECT_EQ(hipGetLastError(), hipErrorInvalidConfiguration);
  hipLaunchKernelGGL(count_kernel, dim3(1), dim3(64), 100 * 1024, nullptr, hits.data());
  EXPECT_EQ(hipGetLastError(), hipErrorInvalidConfiguration);
  hipLaunchKernelGGL(count_kernel, dim3(0), dim3(64), 0, nullptr, hits.data());
  EXPECT_EQ(hipGetLastError(), hipErrorInvalidConfiguration);
  EXPECT_EQ(std::accumulate(hits.begin(), hits.end(), 0), 0) << "a rejected launch must not run";
  hipLaunchKernelGGL(count_kernel, dim3(4), dim3(1024), 64 * 1024, nullptr, hits.data());
  EXPECT_EQ(hipGetLastError(), hipSuccess);
  EXPECT_EQ(std::accumulate(hits.begin(), hits.end(), 0), 4096);
}

__global__ void dynamic_shared_kernel(int* out) {
  KVH_DYNAMIC_SHARED(int, s);
  s[threadIdx.x] = int(threadIdx.x) * 3;
  __syncthreads();
  out[threadIdx.x] = s[blockDim.x - 1 - threadIdx.x];
}

TEST(HostSimt, DynamicSharedMemoryIsSharedByTheBlock) {
  std::vector<int> out(256, -1);
  hipLaunchKernelGGL(dynamic_shared_kernel, dim3(1), dim3(256), 256 * sizeof(int), nullptr, out.data());
  ASSERT_EQ(hipGetLastError(), hipSuccess);
  for (int t = 0; t < 256; ++t) EXPECT_EQ(out[t], (255 - t) * 3);
}

// Planted bug: reads a neighbour's shared value without a barrier.
__global__ void missing_barrier_kernel(int* out, bool with_barrier) {
  __shared__ int s[64];
  s[threadIdx.x] = int(threadIdx.x) + 1;
  if (with_barrier) __syncthreads();
  out[threadIdx.x] = s[(threadIdx.x + 1) % 64];
  __syncthreads();
  s[threadIdx.x] = 0;  // leaves stale data for the next block on this worker
}

int wrong_reads(bool with_barrier) {
  WaveGuard g;
  kvh::host::config().random_order = true;
  kvh::host::config().workers = 1;
  int wrong = 0;
  for (int rep = 0; rep < 20; ++rep) {
    std::vector<int> out(64, -1);
    hipLaunchKernelGGL(missing_barrier_kernel, dim3(1), dim3(64), 0, nullptr, out.data(), with_barrier);
    EXPECT_EQ(hipGetLastError(), hipSuccess);
    for (int t = 0; t < 64; ++t) wrong += out[t] != (t + 1) % 64 + 1;
  }
  return wrong;
}

TEST(HostSimt, RandomFiberOrderExposesAMissingBarrier) {
  EXPECT_EQ(wrong_reads(true), 0);
  EXPECT_GT(wrong_reads(false), 0);
}

// Planted bug: each warp reduces its lanes and publishes the sum in shared
// memory, then reads another warp's sum with no barrier in between.
__global__ void cross_warp_kernel(float* out, bool with_barrier) {
  __shared__ float sums[32];
  const int warp = int(threadIdx.x) / warpSize, nwarps = int(blockDim.x) / warpSize;
  float v = float(blockIdx.x * 1000 + threadIdx.x);
  for (int m = warpSize / 2; m > 0; m /= 2) v += kvh_shfl_xor(v, m);
  if (threadIdx.x % warpSize == 0) sums[warp] = v;
  if (with_barrier) __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = sums[(warp + 1) % nwarps];
  __syncthreads();
}

int cross_warp_wrong(bool with_barrier) {
  WaveGuard g;
  kvh::host::config().random_order = true;
  kvh::host::config().workers = 1;
  int wrong = 0;
  for (int rep = 0; rep < 8; ++rep) {  // launches alternate between the two adversarial orders
    kvh::host::config().seed = uint64_t(rep);
    const int blocks = 4, threads = 256;
    std::vector<float> out(blocks * threads, -1.f);
    hipLaunchKernelGGL(cross_warp_kernel, dim3(blocks), dim3(threads), 0, nullptr, out.data(), with_barrier);
    EXPECT_EQ(hipGetLastError(), hipSuccess);
    const int ws = kvh::host::config().wave_size, nw = threads / ws;
    for (int b = 0; b < blocks; ++b)
      for (int t = 0; t < threads; ++t) {
        const int src = (t / ws + 1) % nw;
        float want = 0;
        for (int l = 0; l < ws; ++l) want += float(b * 1000 + src * ws + l);
        wrong += out[b * threads + t] != want;
      }
  }
  return wrong;
}

TEST(HostSimt, WarpRunAheadOrderExposesAMissingBarrierBetweenWarps) {
  EXPECT_EQ(cross_warp_wrong(true), 0);
  EXPECT_GT(cross_warp_wrong(false), 0);
}

__global__ void throwing_kernel() {
  if (threadIdx.x == 7) throw std::runtime_error("lane 7 gave up");
}

TEST(HostSimt, AKernelThatThrowsIsALaunchFailureWithItsMessage) {
  hipLaunchKernelGGL(throwing_kernel, dim3(2), dim3(64), 0, nullptr);
  EXPECT_EQ(hipGetLastError(), hipErrorLaunchFailure);
  EXPECT_NE(std::string(kvh::host::last_error_text()).find("lane 7 gave up"), std::string::npos);
}

#if defined(__SANITIZE_ADDRESS__)
extern "C" void* __asan_region_is_poisoned(void* beg, size_t size);

// Recurses `depth` frames, each with a 1 KiB array (ASan redzones around it),
// then throws: unwinding skips the frames' epilogues that unpoison them.
__attribute__((noinline)) int deep_throw(int depth) {
  volatile char pad[1024];
  pad[depth % 1024] = char(depth);
  if (depth == 0) throw std::runtime_error("deep throw");
  return deep_throw(depth - 1) + pad[depth % 1024];
}

// 1 where the 16 KiB of fiber stack below this frame are still poisoned.
__attribute__((noinline)) int stale_poison_below_here() {
  volatile char here = 0;
  char* top = const_cast<char*>(&here) - 64;  // clear of this frame's own redzone
  return __asan_region_is_poisoned(top - 16384, 16384) != nullptr ? 1 : 0;
}

__global__ void throw_then_look_kernel(int* stale) {
  if (blockIdx.x == 0) deep_throw(12);
  stale[blockIdx.x] = stale_poison_below_here();
}
#endif

// Under ASan: an exception thrown on a fiber must not leave the unwound
// frames' redzones poisoned for the next block run by that fiber (ASan
// cannot clear them itself: host_simt.cpp, "AddressSanitizer and fiber
// stacks"); stale poison there gives false stack-buffer-overflow reports.
TEST(HostSimt, AnExceptionOnAFiberLeavesNoStalePoisonForTheNextBlock) {
#if defined(__SANITIZE_ADDRESS__)
  WaveGuard g;
  kvh::host::config().workers = 1;  // block 1 runs on the fiber block 0 threw on
  std::vector<int> stale(2, -1);
  hipLaunchKernelGGL(throw_then_look_kernel, dim3(2), dim3(1), 0, nullptr, stale.data());
  EXPECT_EQ(hipGetLastError(), hipErrorLaunchFailure);
  EXPECT_EQ(stale[1], 0) << "the frames deep_throw unwound are still poisoned";
#else
  GTEST_SKIP() << "only meaningful under AddressSanitizer (cmake --preset asan)";
#endif
}

}  // namespace

namespace {

__global__ void plain_copy_kernel(int* out) { out[blockIdx.x * blockDim.x + threadIdx.x] = int(blockIdx.x * 7 + threadIdx.x); }
KVH_DECLARE_BARRIER_FREE(plain_copy_kernel);

__global__ void lying_kernel(int* out) {
  out[threadIdx.x] = 1;
  __syncthreads();
}
KVH_DECLARE_BARRIER_FREE(lying_kernel);

TEST(HostSimt, BarrierFreeKernelsRunAsPlainCallsWithTheSameResult) {
  EXPECT_STREQ(kvh::host::barrier_free_name(reinterpret_cast<const void*>(&plain_copy_kernel)), "plain_copy_kernel");
  std::vector<int> out(300 * 64, -1);
  hipLaunchKernelGGL(plain_copy_kernel, dim3(300), dim3(64), 0, nullptr, out.data());
  ASSERT_EQ(hipGetLastError(), hipSuccess);
  for (int b = 0; b < 300; ++b)
    for (int t = 0; t < 64; ++t) ASSERT_EQ(out[b * 64 + t], b * 7 + t);
}

// Every thread of a 3-d block records its indices at its own place: each (block, thread) once.
__global__ void index_kernel(int* out) {
  const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  int* at = out + 4 * (b * blockDim.x * blockDim.y * blockDim.z + t);
  at[0] = int(threadIdx.x), at[1] = int(threadIdx.y), at[2] = int(threadIdx.z), at[3] += 1;
}
KVH_DECLARE_BARRIER_FREE(index_kernel);

TEST(HostSimt, BarrierFreeThreadsOf3dBlocksGetEveryIndexOnce) {
  const dim3 grid(3, 2, 2), block(5, 3, 2);
  const unsigned threads = 5 * 3 * 2, blocks = 3 * 2 * 2;
  std::vector<int> out(4 * threads * blocks, 0);
  hipLaunchKernelGGL(index_kernel, grid, block, 0, nullptr, out.data());
  ASSERT_EQ(hipGetLastError(), hipSuccess);
  for (unsigned b = 0; b < blocks; ++b)
    for (unsigned z = 0, t = 0; z < 2; ++z)
      for (unsigned y = 0; y < 3; ++y)
        for (unsigned x = 0; x < 5; ++x, ++t) {
          const int* at = &out[4 * (b * threads + t)];
          ASSERT_EQ(at[0], int(x)) << "block " << b << " thread " << t;
          ASSERT_EQ(at[1], int(y)) << "block " << b << " thread " << t;
          ASSERT_EQ(at[2], int(z)) << "block " << b << " thread " << t;
          ASSERT_EQ(at[3], 1) << "block " << b << " thread " << t << " ran this many times";
        }
}

TEST(HostSimt, ABarrierInAKernelDeclaredBarrierFreeIsALaunchFailure) {
  std::vector<int> out(64, 0);
  hipLaunchKernelGGL(lying_kernel, dim3(1), dim3(64), 0, nullptr, out.data());
  EXPECT_EQ(hipGetLastError(), hipErrorLaunchFailure);
  EXPECT_NE(std::string(kvh::host::last_error_text()).find("lying_kernel is declared barrier-free but called __syncthreads"),
            std::string::npos)
      << kvh::host::last_error_text();
}

}  // namespace
