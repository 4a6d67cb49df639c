#include "device/write_diff.h"

#include <cmath>
#include <string>
#include <vector>

#include "../reference/fp8.h"
#include "device/device.h"
#include "kvh_runtime.h"

namespace kvh::device {

namespace {

constexpr unsigned kThreads = 256;
constexpr int64_t kRun = 64;  // elements a thread takes at a time: contiguous, so a host worker streams
#if defined(KVH_BACKEND_HIP) || defined(KVH_BACKEND_CUDA)
constexpr unsigned kBlocks = 256;  // 65,536 tallies, reduced 256 to 1 on the device
#else
constexpr unsigned kBlocks = 16;   // host SIMT: a few blocks per worker
#endif
constexpr unsigned kGroup = 256;   // tallies one reducing thread merges

// The first of a class: an index counts only where its class has elements (a margin's are negative).
__host__ __device__ inline void take_first(int64_t& first, int64_t& count, int64_t t_first, int64_t t_count) {
  if (t_count > 0 && (count == 0 || t_first < first)) first = t_first;
  count += t_count;
}

// into += t: counts add, firsts take the least, worst the larger |error| (the smaller index of equals).
__host__ __device__ inline void merge(WriteDiff& into, const WriteDiff& t) {
  take_first(into.first_out_of_view, into.out_of_view, t.first_out_of_view, t.out_of_view);
  take_first(into.first_mismatched, into.mismatched, t.first_mismatched, t.mismatched);
  take_first(into.first_unwritten, into.unwritten, t.first_unwritten, t.unwritten);
  if (t.worst >= 0 && (t.worst_abs > into.worst_abs || (t.worst_abs == into.worst_abs && t.worst < into.worst))) {
    into.worst = t.worst;
    into.worst_abs = t.worst_abs;
    into.worst_got = t.worst_got;
    into.worst_want = t.worst_want;
  }
}

__device__ inline double decode_elem(uint32_t bits, int32_t mode) {
  switch (mode) {
    case 0: return double(to_float(fp16_t{uint16_t(bits)}));
    case 1: return double(to_float(bf16_t{uint16_t(bits)}));  // kernels/runtime/dtype.h
    case 2: return reference::fp8_decode(uint8_t(bits), reference::Fp8Format::E4M3FN);
    case 3: return reference::fp8_decode(uint8_t(bits), reference::Fp8Format::E4M3FNUZ);
    default: return double(int8_t(uint8_t(bits)));
  }
}

__device__ inline uint32_t load_elem(const uint8_t* p, int64_t i, int eb) {
  return eb == 1 ? uint32_t(p[i]) : uint32_t(p[2 * i]) | (uint32_t(p[2 * i + 1]) << 8);
}

// Thread t tallies runs t, t + T, ... of kRun elements (T: the grid's threads) into tallies[t].
__global__ void write_diff_kernel(const uint8_t* a, const uint8_t* e, const uint8_t* b, const uint8_t* owned,
                                  int64_t n_elems, int64_t margin_elems, int64_t storage_elems, int eb, int32_t mode,
                                  WriteDiff* tallies) {
  const int64_t t = int64_t(blockIdx.x) * blockDim.x + threadIdx.x, T = int64_t(gridDim.x) * blockDim.x;
  WriteDiff d;
  for (int64_t run = t; run * kRun < n_elems; run += T) {
    const int64_t end = (run + 1) * kRun < n_elems ? (run + 1) * kRun : n_elems;
    for (int64_t i = run * kRun; i < end; ++i) {
      const uint32_t got = load_elem(a, i, eb), want = load_elem(e, i, eb);
      if (got == want) continue;
      const int64_t el = i - margin_elems;
      if (el < 0 || el >= storage_elems || !owned[el]) {
        if (d.out_of_view++ == 0) d.first_out_of_view = el;
        continue;
      }
      // An element the reference changed that still holds its old value was never written.
      if (got == load_elem(b, i, eb)) {
        if (d.unwritten++ == 0) d.first_unwritten = el;
      } else if (d.mismatched++ == 0) {
        d.first_mismatched = el;
      }
      const double g = decode_elem(got, mode), w = decode_elem(want, mode);
      const double err = g - g == 0 ? (g > w ? g - w : w - g) : INFINITY;  // g - g: NaN unless g is finite
      if (err > d.worst_abs) d.worst = el, d.worst_abs = err, d.worst_got = got, d.worst_want = want;
    }
  }
  tallies[t] = d;
}
KVH_DECLARE_BARRIER_FREE(write_diff_kernel);

// Thread g merges tallies [g * kGroup, (g + 1) * kGroup) into out[g].
__global__ void merge_tallies_kernel(const WriteDiff* tallies, int64_t n, WriteDiff* out) {
  const int64_t g = int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (g * kGroup >= n) return;
  WriteDiff d;
  for (int64_t i = g * kGroup; i < n && i < (g + 1) * kGroup; ++i) merge(d, tallies[i]);
  out[g] = d;
}
KVH_DECLARE_BARRIER_FREE(merge_tallies_kernel);

void check_launch(const char* what) {
  const hipError_t e = hipGetLastError();
  if (e != hipSuccess) throw Error(std::string(what) + " launch: " + hipGetErrorString(e));
}

}  // namespace

WriteDiff write_diff(const void* actual, const void* expected, const void* before, const uint8_t* owned,
                     size_t n_bytes, int64_t margin_bytes, int64_t storage_elems, int elem_bytes, ElemDecode decode) {
  const int64_t n_elems = int64_t(n_bytes) / elem_bytes;
  const int64_t threads = int64_t(kBlocks) * kThreads, groups = (threads + kGroup - 1) / kGroup;
  Buffer tallies(size_t(threads) * sizeof(WriteDiff)), merged(size_t(groups) * sizeof(WriteDiff));
  hipLaunchKernelGGL(write_diff_kernel, dim3(kBlocks), dim3(kThreads), 0, 0, static_cast<const uint8_t*>(actual),
                     static_cast<const uint8_t*>(expected), static_cast<const uint8_t*>(before), owned, n_elems,
                     margin_bytes / elem_bytes, storage_elems, elem_bytes, int32_t(decode),
                     static_cast<WriteDiff*>(tallies.get()));
  check_launch("write_diff");
  const unsigned merge_blocks = unsigned((groups + kThreads - 1) / kThreads);
  hipLaunchKernelGGL(merge_tallies_kernel, dim3(merge_blocks), dim3(kThreads), 0, 0,
                     static_cast<const WriteDiff*>(tallies.get()), threads, static_cast<WriteDiff*>(merged.get()));
  check_launch("write_diff merge");
  std::vector<WriteDiff> down(static_cast<size_t>(groups));  // 256 tallies: the only download
  merged.download(down.data(), down.size() * sizeof(WriteDiff));
  WriteDiff d;
  for (const WriteDiff& t : down) merge(d, t);
  return d;
}

}  // namespace kvh::device
