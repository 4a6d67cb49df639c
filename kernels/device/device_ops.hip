#include "device/device_ops.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "../reference/fp8.h"
#include "../reference/int8.h"
#include "device/counter_rng.h"
#include "device/device.h"
#include "device/guard_pattern.h"
#include "kvh_runtime.h"

namespace kvh::device {

int64_t View16::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

namespace {

constexpr unsigned kThreads = 256;
#if defined(KVH_BACKEND_HIP) || defined(KVH_BACKEND_CUDA)
constexpr uint64_t kMaxBlocks = 4096;
constexpr uint64_t kSentinelChunk = 8;  // bytes a thread fills per step: neighbours write neighbours
#else
// Host SIMT: each GPU thread is a function call on a worker. A few blocks per
// worker, and long contiguous runs per thread, keep the calls few and the loops
// vectorisable.
constexpr uint64_t kMaxBlocks = 8;
#endif

void check_launch(const char* what) {
  const hipError_t e = hipGetLastError();
  if (e != hipSuccess) throw Error(std::string(what) + " launch: " + hipGetErrorString(e));
}

// The view fills' launch shape. Host: a work item is a row of a page or a whole page, so
// blocks of 32 items let a cache of a few hundred pages still reach every worker.
#if defined(KVH_BACKEND_HIP) || defined(KVH_BACKEND_CUDA)
constexpr unsigned kFillThreads = kThreads;
#else
constexpr unsigned kFillThreads = 32;
#endif
unsigned fill_blocks(uint64_t items) {
  return unsigned(std::max<uint64_t>(1, std::min<uint64_t>((items + kFillThreads - 1) / kFillThreads, kMaxBlocks)));
}

unsigned blocks_for(uint64_t work, uint64_t per_thread = 1) {
  const uint64_t threads = (work + per_thread - 1) / per_thread;
  return unsigned(std::max<uint64_t>(1, std::min<uint64_t>((threads + kThreads - 1) / kThreads, kMaxBlocks)));
}

#if defined(KVH_BACKEND_HIP) || defined(KVH_BACKEND_CUDA)
__global__ void fill_sentinel_kernel(uint8_t* b, uint64_t n, uint64_t first) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t c = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; c * kSentinelChunk < n; c += stride) {
    const uint64_t begin = c * kSentinelChunk, end = begin + kSentinelChunk < n ? begin + kSentinelChunk : n;
    for (uint64_t i = begin; i < end; ++i) b[i] = sentinel_byte(first + i);
  }
}
KVH_DECLARE_BARRIER_FREE(fill_sentinel_kernel);
#endif

// A work item is the `inner` innermost dims of the view (host: a row of the
// two innermost, so the outer index arithmetic is paid once per row; GPU: one
// element, so neighbouring threads write neighbouring elements). skip: null, or
// one byte per index of the view's outermost dim; a nonzero byte leaves that
// index's elements alone (the others keep their stream positions).
__global__ void fill_view16_kernel(uint16_t* base, View16 v, int inner, uint64_t items, int kind, int bf16,
                                   uint64_t key, const uint8_t* skip) {
  const int nd = v.ndim;
  const uint64_t per_outer = items / uint64_t(v.shape[0]);
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t r = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < items; r += stride) {
    if (skip && skip[r / per_outer]) continue;
    int64_t off = v.offset, rest = int64_t(r);
    for (int d = nd - 1 - inner; d >= 0; --d) {
      off += (rest % v.shape[d]) * v.stride[d];
      rest /= v.shape[d];
    }
#if defined(KVH_BACKEND_HIP) || defined(KVH_BACKEND_CUDA)
    base[off] = rng::bits16(kind, bf16 != 0, key, r);  // inner = 0: one element
#else
    const int64_t n1 = inner >= 1 ? v.shape[nd - 1] : 1, n2 = inner >= 2 ? v.shape[nd - 2] : 1;
    const int64_t s1 = v.stride[nd - 1], s2 = nd >= 2 ? v.stride[nd - 2] : 0;
    const uint64_t idx = r * uint64_t(n1 * n2);  // the row's first element in the stream
    for (int64_t a = 0; a < n2; ++a) rng::fill_run16(kind, bf16 != 0, base + off + a * s2, s1, n1, key, idx + uint64_t(a * n1));
#endif
  }
}
KVH_DECLARE_BARRIER_FREE(fill_view16_kernel);

// fill_view16_kernel's walk with one constant: work item = the `inner` innermost dims.
__global__ void fill_view16_const_kernel(uint16_t* base, View16 v, int inner, uint64_t items, uint16_t bits) {
  const int nd = v.ndim;
  const int64_t n1 = inner >= 1 ? v.shape[nd - 1] : 1, n2 = inner >= 2 ? v.shape[nd - 2] : 1;
  const int64_t s1 = v.stride[nd - 1], s2 = nd >= 2 ? v.stride[nd - 2] : 0;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t r = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < items; r += stride) {
    int64_t off = v.offset, rest = int64_t(r);
    for (int d = nd - 1 - inner; d >= 0; --d) {
      off += (rest % v.shape[d]) * v.stride[d];
      rest /= v.shape[d];
    }
    for (int64_t a = 0; a < n2; ++a)
      for (int64_t b = 0; b < n1; ++b) base[off + a * s2 + b * s1] = bits;
  }
}
KVH_DECLARE_BARRIER_FREE(fill_view16_const_kernel);

__device__ inline int64_t map_offset(const CacheMap& m, int64_t b, int64_t h, int64_t t, int64_t d) {
  return m.offset + b * m.sb + h * m.sh + (t / m.xt) * m.st_hi + (t % m.xt) * m.st_lo + (d / m.xd) * m.sd_hi +
         (d % m.xd) * m.sd_lo;
}

// A work item is (token, kv head, dim) on a GPU, (token, kv head) with its
// head_size dims on the host (dims = 1 or head_size).
__global__ void reference_write_kernel(uint16_t* storage, CacheMap km, CacheMap vm, const uint16_t* src, View16 k,
                                       View16 v, const int64_t* slots, int64_t items, int64_t dims,
                                       int64_t block_size) {
  const int64_t heads = k.shape[1], hd = k.shape[2];
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t r = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < uint64_t(items); r += stride) {
    const int64_t row = int64_t(r) / (hd / dims), d0 = int64_t(r) % (hd / dims) * dims;
    const int64_t t = row / heads, h = row % heads;
    const int64_t slot = slots[t];
    if (slot < 0) continue;
    const int64_t blk = slot / block_size, tok = slot % block_size;
    if (dims == 1) {
      storage[map_offset(km, blk, h, tok, d0)] = src[k.offset + t * k.stride[0] + h * k.stride[1] + d0 * k.stride[2]];
      storage[map_offset(vm, blk, h, tok, d0)] = src[v.offset + t * v.stride[0] + h * v.stride[1] + d0 * v.stride[2]];
      continue;
    }
    // A whole row (the host): the token's part of the offset once, the dims without divisions.
    const uint16_t* ks = src + k.offset + t * k.stride[0] + h * k.stride[1];
    const uint16_t* vs = src + v.offset + t * v.stride[0] + h * v.stride[1];
    for (int m = 0; m < 2; ++m) {
      const CacheMap& c = m ? vm : km;
      const uint16_t* from = m ? vs : ks;
      const int64_t sd = m ? v.stride[2] : k.stride[2];
      uint16_t* row = storage + map_offset(c, blk, h, tok, 0);
      for (int64_t hi = 0, d = 0; hi < hd / c.xd; ++hi)
        for (int64_t lo = 0; lo < c.xd; ++lo, ++d) row[hi * c.sd_hi + lo * c.sd_lo] = from[d * sd];
    }
  }
}
KVH_DECLARE_BARRIER_FREE(reference_write_kernel);

// One work item per element (fp8 caches are filled far less often than 16-bit ones).
// code >= 0: every element gets that byte (stale patterns); else the old-token stream.
__global__ void fill_view8_kernel(uint8_t* base, View16 v, uint64_t items, int mode, uint64_t key, int code) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t r = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < items; r += stride) {
    int64_t off = v.offset, rest = int64_t(r);
    for (int d = v.ndim - 1; d >= 0; --d) {
      off += (rest % v.shape[d]) * v.stride[d];
      rest /= v.shape[d];
    }
    base[off] = code >= 0           ? uint8_t(code)
                : mode == kCode8Int8 ? rng::int8_old_code(key, r)
                                     : rng::fp8_old_code(key, r, mode != 0);
  }
}
KVH_DECLARE_BARRIER_FREE(fill_view8_kernel);

// The scale of (block, head, token-in-block) under granularity g, from
// provider.h's shapes (written here again: kernels/ has its own).
__device__ inline float fp8_write_scale(int32_t g, const float* p, const int64_t* s, int64_t b, int64_t h, int64_t t) {
  if (g == 1) return p[0];                                // tensor [1]
  if (g == 2) return p[h * s[0]];                         // head [num_kv_heads]
  if (g == 3) return p[b * s[0] + h * s[1]];              // block [num_blocks, num_kv_heads]
  if (g == 4) return p[b * s[0] + h * s[1] + t * s[2]];   // token [num_blocks, num_kv_heads, block_size]
  if (g == 5) return p[b * s[0] + t * s[1]];              // slot [num_blocks, block_size]
  return 1.f;                                             // none
}

// One work item per (token, kv head, dim).
__global__ void reference_write_fp8_kernel(uint8_t* storage, CacheMap km, CacheMap vm, const uint16_t* src, View16 k,
                                           View16 v, const int64_t* slots, int64_t items, int64_t block_size,
                                           Fp8WriteScales sc) {
  const int64_t heads = k.shape[1], hd = k.shape[2];
  const reference::Fp8Format f = sc.fnuz ? reference::Fp8Format::E4M3FNUZ : reference::Fp8Format::E4M3FN;
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x;
  for (uint64_t r = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; r < uint64_t(items); r += stride) {
    const int64_t d = int64_t(r) % hd, row = int64_t(r) / hd, t = row / heads, h = row % heads;
    const int64_t slot = slots[t];
    if (slot < 0) continue;
    const int64_t blk = slot / block_size, tok = slot % block_size;
    const uint16_t kb = src[k.offset + t * k.stride[0] + h * k.stride[1] + d * k.stride[2]];
    const uint16_t vb = src[v.offset + t * v.stride[0] + h * v.stride[1] + d * v.stride[2]];
    const float kf = sc.bf16_input ? to_float(bf16_t{kb}) : to_float(fp16_t{kb});
    const float vf = sc.bf16_input ? to_float(bf16_t{vb}) : to_float(fp16_t{vb});
    const float ks = fp8_write_scale(sc.granularity, sc.k, sc.ks, blk, h, tok);
    const float vs = fp8_write_scale(sc.granularity, sc.v, sc.vs, blk, h, tok);
    if (sc.int8) {
      storage[map_offset(km, blk, h, tok, d)] = uint8_t(reference::int8_encode(kf, ks));
      storage[map_offset(vm, blk, h, tok, d)] = uint8_t(reference::int8_encode(vf, vs));
      continue;
    }
    storage[map_offset(km, blk, h, tok, d)] = reference::fp8_encode(double(kf / ks), f);
    storage[map_offset(vm, blk, h, tok, d)] = reference::fp8_encode(double(vf / vs), f);
  }
}
KVH_DECLARE_BARRIER_FREE(reference_write_fp8_kernel);

#if defined(KVH_BACKEND_HIP) || defined(KVH_BACKEND_CUDA)
// Grid-stride over 8-byte words (coalesced); the smallest differing byte
// index wins through atomicMin. *first starts at ~0 (none).
__global__ void first_difference_kernel(const uint8_t* a, const uint8_t* b, uint64_t n, unsigned long long* first) {
  const uint64_t stride = uint64_t(gridDim.x) * blockDim.x, words = n / 8;
  for (uint64_t w = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; w <= words; w += stride) {
    const uint64_t begin = w * 8, end = begin + 8 < n ? begin + 8 : n;
    for (uint64_t i = begin; i < end; ++i)
      if (a[i] != b[i]) {
        atomicMin(first, (unsigned long long)i);
        break;
      }
  }
}
#else
// Thread i scans its own contiguous chunk of 8-byte words and records the
// first differing byte in it (or -1): no atomics, the host takes the first.
__global__ void first_difference_kernel(const uint8_t* a, const uint8_t* b, uint64_t n, uint64_t chunk,
                                        int64_t* first) {
  const uint64_t tid = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  int64_t found = -1;
  const uint64_t words = n / 8;
  const uint64_t end = (tid + 1) * chunk < words ? (tid + 1) * chunk : words;
  for (uint64_t w = tid * chunk; w < end; ++w) {
    uint64_t x, y;
    memcpy(&x, a + w * 8, 8);
    memcpy(&y, b + w * 8, 8);
    if (x != y) {
      for (uint64_t i = w * 8;; ++i)
        if (a[i] != b[i]) {
          found = int64_t(i);
          break;
        }
      break;
    }
  }
  if (found < 0 && tid == 0)  // the tail that does not fill a word
    for (uint64_t i = words * 8; i < n; ++i)
      if (a[i] != b[i]) {
        found = int64_t(i);
        break;
      }
  first[tid] = found;
}
#endif
KVH_DECLARE_BARRIER_FREE(first_difference_kernel);

}  // namespace

void fill_sentinel(void* bytes, size_t n) { fill_sentinel_at(bytes, n, 0); }

void fill_sentinel_at(void* bytes, size_t n, uint64_t first) {
  if (!n) return;
#if !defined(KVH_BACKEND_HIP) && !defined(KVH_BACKEND_CUDA)
  // Host memory: the pattern repeats every 65,536 bytes, so copy it from two periods of it.
  static const std::vector<uint8_t> pattern = [] {
    std::vector<uint8_t> p(2 << 16);
    for (size_t i = 0; i < p.size(); ++i) p[i] = sentinel_byte(i);
    return p;
  }();
  auto* b = static_cast<uint8_t*>(bytes);
  for (size_t done = 0; done < n;) {
    const size_t len = std::min<size_t>(n - done, 1 << 16);
    std::memcpy(b + done, pattern.data() + (first + done) % (1 << 16), len);
    done += len;
  }
#else
  hipLaunchKernelGGL(fill_sentinel_kernel, dim3(blocks_for(n, kSentinelChunk)), dim3(kThreads), 0, 0,
                     static_cast<uint8_t*>(bytes), uint64_t(n), first);
  check_launch("fill_sentinel");
#endif
}

namespace {

// The work split of both view fills: the view (a 1-dim one cut into rows on
// the host), how many innermost dims a work item takes, and the item count.
struct FillPlan {
  View16 v;
  int inner;
  uint64_t items;
};
FillPlan plan_fill(const View16& view, const char* what) {
  if (view.ndim < 1 || view.ndim > 6) throw std::invalid_argument(std::string(what) + ": a view of 1 to 6 dims");
  const int64_t n = view.numel();
  View16 v = view;
#if defined(KVH_BACKEND_HIP) || defined(KVH_BACKEND_CUDA)
  const int inner = 0;
#else
  // Dims after the first that lie contiguously in memory become one, size-1 dims go: the rows
  // a work item fills get long, and the logical order (each element's stream index) stays.
  // Dim 0 stays as it is: fill_view16's skip_outer indexes it.
  View16 m{};
  m.ndim = 1, m.shape[0] = v.shape[0], m.stride[0] = v.stride[0], m.offset = v.offset;
  for (int d = 1; d < v.ndim; ++d) {
    if (v.shape[d] == 1) continue;
    if (m.ndim > 1 && m.stride[m.ndim - 1] == v.shape[d] * v.stride[d]) {
      m.shape[m.ndim - 1] *= v.shape[d];
      m.stride[m.ndim - 1] = v.stride[d];
    } else {
      m.shape[m.ndim] = v.shape[d], m.stride[m.ndim] = v.stride[d];
      ++m.ndim;
    }
  }
  if (m.ndim == 1 && view.ndim > 1) {  // every dim after the first is size 1: rows of one element
    m.ndim = 2;
    m.shape[1] = 1, m.stride[1] = 1;
  }
  v = m;
  if (v.ndim == 1 && n > 0) {  // a 1-D view: one long row would be one thread's, cut it into rows of up to 4096
    int64_t cols = 4096;
    while (n % cols) cols /= 2;
    v.ndim = 2;
    v.shape[0] = n / cols, v.shape[1] = cols;
    v.stride[1] = m.stride[0], v.stride[0] = cols * m.stride[0];
  }
  const int inner = v.ndim >= 3 ? 2 : 1;  // at least one outer dim left to spread over threads
#endif
  // (GPU: one element a work item, the view as it is.)
  int64_t per_item = 1;
  for (int d = v.ndim - inner; d < v.ndim && inner; ++d) per_item *= v.shape[d];
  return {v, inner, n == 0 ? 0 : uint64_t(n / per_item)};
}

}  // namespace

void fill_view16(void* base, const View16& view, int kind, bool bf16, uint64_t key, const uint8_t* skip_outer) {
  const FillPlan p = plan_fill(view, "fill_view16");
  if (p.items == 0) return;
  if (skip_outer && (view.ndim < 2 || p.v.shape[0] != view.shape[0]))
    throw std::invalid_argument("fill_view16: skip_outer needs a view of 2 or more dims");
  hipLaunchKernelGGL(fill_view16_kernel, dim3(fill_blocks(p.items)), dim3(kFillThreads), 0, 0,
                     static_cast<uint16_t*>(base), p.v, p.inner, p.items, kind, int(bf16), key, skip_outer);
  check_launch("fill_view16");
}

void fill_view16_const(void* base, const View16& view, uint16_t bits) {
  const FillPlan p = plan_fill(view, "fill_view16_const");
  if (p.items == 0) return;
  hipLaunchKernelGGL(fill_view16_const_kernel, dim3(fill_blocks(p.items)), dim3(kFillThreads), 0, 0,
                     static_cast<uint16_t*>(base), p.v, p.inner, p.items, bits);
  check_launch("fill_view16_const");
}

void reference_write(void* storage, const CacheMap& k_cache, const CacheMap& v_cache, const void* src,
                     const View16& key, const View16& value, const int64_t* slot_mapping, int64_t num_tokens,
                     int64_t block_size) {
  if (key.ndim != 3 || value.ndim != 3) throw std::invalid_argument("reference_write: key/value views of 3 dims");
#if defined(KVH_BACKEND_HIP) || defined(KVH_BACKEND_CUDA)
  const int64_t dims = 1;
#else
  const int64_t dims = key.shape[2];
#endif
  const int64_t items = num_tokens * key.shape[1] * key.shape[2] / dims;
  if (items == 0) return;
  hipLaunchKernelGGL(reference_write_kernel, dim3(blocks_for(uint64_t(items))), dim3(kThreads), 0, 0,
                     static_cast<uint16_t*>(storage), k_cache, v_cache, static_cast<const uint16_t*>(src), key, value,
                     slot_mapping, items, dims, block_size);
  check_launch("reference_write");
}

void fill_view8(void* base, const View16& view, int mode, uint64_t key) {
  if (view.ndim < 1 || view.ndim > 6) throw std::invalid_argument("fill_view8: a view of 1 to 6 dims");
  const int64_t n = view.numel();
  if (n == 0) return;
  hipLaunchKernelGGL(fill_view8_kernel, dim3(blocks_for(uint64_t(n))), dim3(kThreads), 0, 0, static_cast<uint8_t*>(base),
                     view, uint64_t(n), mode, key, -1);
  check_launch("fill_view8");
}

void fill_view8_const(void* base, const View16& view, uint8_t code) {
  if (view.ndim < 1 || view.ndim > 6) throw std::invalid_argument("fill_view8_const: a view of 1 to 6 dims");
  const int64_t n = view.numel();
  if (n == 0) return;
  hipLaunchKernelGGL(fill_view8_kernel, dim3(blocks_for(uint64_t(n))), dim3(kThreads), 0, 0, static_cast<uint8_t*>(base),
                     view, uint64_t(n), 0, uint64_t(0), int(code));
  check_launch("fill_view8_const");
}

void reference_write_fp8(void* storage, const CacheMap& k_cache, const CacheMap& v_cache, const void* src,
                         const View16& key, const View16& value, const int64_t* slot_mapping, int64_t num_tokens,
                         int64_t block_size, const Fp8WriteScales& scales) {
  if (key.ndim != 3 || value.ndim != 3) throw std::invalid_argument("reference_write_fp8: key/value views of 3 dims");
  const int64_t items = num_tokens * key.shape[1] * key.shape[2];
  if (items == 0) return;
  hipLaunchKernelGGL(reference_write_fp8_kernel, dim3(blocks_for(uint64_t(items))), dim3(kThreads), 0, 0,
                     static_cast<uint8_t*>(storage), k_cache, v_cache, static_cast<const uint16_t*>(src), key, value,
                     slot_mapping, items, block_size, scales);
  check_launch("reference_write_fp8");
}

int64_t first_difference(const void* a, const void* b, size_t n) {
  if (!n) return -1;
#if defined(KVH_BACKEND_HIP) || defined(KVH_BACKEND_CUDA)
  Buffer d_first(8);
  unsigned long long none = ~0ull;
  d_first.upload(&none, 8);
  hipLaunchKernelGGL(first_difference_kernel, dim3(blocks_for(n / 8 + 1)), dim3(kThreads), 0, 0,
                     static_cast<const uint8_t*>(a), static_cast<const uint8_t*>(b), uint64_t(n),
                     static_cast<unsigned long long*>(d_first.get()));
  check_launch("first_difference");
  // The download waits for the kernel (same stream) and reports its failure: no synchronize
  // of our own, so testing::inject_fault's count stays the kernels under test's.
  unsigned long long first = 0;
  d_first.download(&first, 8);
  return first == ~0ull ? -1 : int64_t(first);
#else
  const unsigned blocks = unsigned(std::min<uint64_t>(64, kMaxBlocks));
  const uint64_t threads = uint64_t(blocks) * kThreads;
  const uint64_t chunk = std::max<uint64_t>(1, (n / 8 + threads - 1) / threads);
  Buffer d_first(threads * 8);
  hipLaunchKernelGGL(first_difference_kernel, dim3(blocks), dim3(kThreads), 0, 0, static_cast<const uint8_t*>(a),
                     static_cast<const uint8_t*>(b), uint64_t(n), chunk, static_cast<int64_t*>(d_first.get()));
  check_launch("first_difference");
  std::vector<int64_t> first(threads);
  d_first.download(first.data(), threads * 8);
  int64_t found = -1;  // the least: thread 0 also scans the tail past the last whole word
  for (int64_t f : first)
    if (f >= 0 && (found < 0 || f < found)) found = f;
  return found;
#endif
}

}  // namespace kvh::device
