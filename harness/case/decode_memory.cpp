// The memory a decode case needs, from its shape alone, and the refusal of a
// case that cannot fit (the large reader suite), before anything is allocated.
#include <fmt/format.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "case/attention_case.h"
#include "case/cache_setup.h"
#include "case/decode_inputs.h"
#include "case/device_cache.h"
#include "run/parallel.h"

namespace kvh {

namespace {
// The sequences' tokens and pages, every drawn length at the max (make_sequences' block count).
struct SeqTotals {
  int64_t used = 0, tokens = 0, max_ctx = 0, num_blocks = 0;
};
SeqTotals seq_totals(const Case& c) {
  SeqTotals t;
  for (int64_t i = 0; i < c.batch_size; ++i) {
    const int64_t n = c.context_lens.empty() ? c.context_len_max : c.context_lens[size_t(i)];
    t.used += (n + c.block_size - 1) / c.block_size;
    t.tokens += n;
    t.max_ctx = std::max(t.max_ctx, n);
  }
  t.num_blocks = c.min_block_id + t.used + t.used / 8 + 1;
  return t;
}

// An MLA case (provider.h KVH_CACHE_MLA): one latent row of R + P elements a token, the
// latent projection [T, R + P + pad] for the context, query [Q, NH, R + P] in a fused buffer,
// out [Q, NH, R], the split workspaces of at most kMlaMaxSplits (64) splits; the reference
// widens one sequence's latent rows (and their bits) per host thread.
MemoryEstimate estimate_mla_memory(const Case& c) {
  const int64_t S = c.batch_size, NH = c.num_heads, R = c.kv_lora_rank, P = c.qk_rope_head_dim, D = R + P;
  const int64_t B = c.block_size, eb = c.fp8_cache() ? 1 : 2;
  const SeqTotals st = seq_totals(c);
  const int64_t T = st.tokens, max_ctx = st.max_ctx, num_blocks = st.num_blocks;
  const CacheGeometry g{num_blocks, B, 1, R, c.fp8_cache() ? 16 : 8, eb, P};
  auto made = make_cache_layout(CacheFormat::Mla, c.layout, g, c.padded_page_bytes);
  const int64_t storage = made.layout ? made.layout->storage_elems : num_blocks * B * D;
  const int64_t block_stride = made.layout ? made.layout->block_stride : B * D;
  const int64_t margin = std::max<int64_t>(
      {64 * 1024, 4 * block_stride, 2 * (std::max<int64_t>(c.block_table_padding, 0) + 3) * block_stride});
  const int64_t max_blocks = (max_ctx + B - 1) / B + 1, Q = S * c.max_query_len(), splits = 64;
  MemoryEstimate e;
  e.device_bytes = 2 * (storage * eb + 2 * margin)              // cache and snapshot
                   + Q * (NH + 2) * D * 2                        // the step's fused buffer (query view)
                   + T * (D + 64) * 2 + T * 8                    // the latent projection, slot_mapping
                   + Q * NH * R * 2 + S * max_blocks * 4 + S * 4 + 3 * 2 * kSmallMargin
                   + 4 * Q * NH * splits * (2 + R)               // split workspaces
                   + 4 * S * (splits + 2) + 12 * S * splits;     // the plan
  e.host_bytes = Q * NH * D * 2 + int64_t(host_threads()) * max_ctx * D * (8 + 2)
                 + 2 * (Q * NH * R * 2 + 2 * kSmallMargin) + 2 * (S * max_blocks * 4 + S * 4 + 4 * kSmallMargin)
                 + T * 8 + Q * NH * R * 8;
  return e;
}
}  // namespace

MemoryEstimate estimate_decode_memory(const Case& c, int32_t cache_format) {
  if (c.mla()) return estimate_mla_memory(c);
  const int64_t S = c.batch_size, NH = c.num_heads, NKV = c.num_kv_heads, HD = c.head_size, B = c.block_size;
  const SeqTotals st = seq_totals(c);
  const int64_t T = st.tokens, max_ctx = st.max_ctx, num_blocks = st.num_blocks;
  const CacheGeometry g{num_blocks, B, NKV, HD, 8, 2};
  auto made = make_cache_layout(CacheFormat(cache_format), c.layout, g, c.padded_page_bytes);
  // A layout the format cannot take runs nothing; without it, count the two views alone.
  const int64_t storage = made.layout ? made.layout->storage_elems : 2 * num_blocks * B * NKV * HD;
  const int64_t block_stride = made.layout ? made.layout->block_stride : B * NKV * HD;
  const int64_t margin = std::max<int64_t>(
      {64 * 1024, 4 * block_stride, 2 * (std::max<int64_t>(c.block_table_padding, 0) + 3) * block_stride});
  const int64_t max_blocks = (max_ctx + B - 1) / B + 1;
  const int64_t partitions = (max_ctx + 255) / 256;
  // A sparse arena (device_cache.h, issue 23) backs its margins and its sequences' pages (at
  // most a block stride each in each view), rounded to the backend's granularity (2 MiB on GPUs).
  const int64_t cache_bytes =
      storage * 2 < kSparseArenaBytes
          ? storage * 2 + 2 * margin
          : std::min(storage * 2, 2 * (st.used + 2) * block_stride * 2 + (int64_t(16) << 20)) + 2 * margin;
  const int64_t Q = S * c.max_query_len();  // query tokens at most (decode: one a sequence)
  MemoryEstimate e;
  e.device_bytes = 2 * cache_bytes                         // cache and snapshot
                   + Q * (NH + 2 * NKV) * HD * 2           // the step's fused QKV
                   + T * 2 * NKV * HD * 2 + T * 8          // the context's fused KV, slot_mapping
                   + Q * NH * HD * 2 + S * max_blocks * 4 + S * 4 + 3 * 2 * kSmallMargin
                   + (partitions > 1 ? 4 * Q * NH * partitions * (2 + HD) : 0);
  // Q as the reference reads it; K and V of a sequence per thread, 16-bit and float64; shaped
  // values (value_dist.h) keep the whole context's K and V on the host, before and after shaping.
  const int64_t shaped = c.values == ValueDist::Normal ? 0 : 2 * (2 * T * NKV * HD * 2 + Q * NH * HD * 2);
  e.host_bytes = shaped + Q * NH * HD * 2
                 + int64_t(host_threads()) * 2 * max_ctx * NKV * HD * (8 + 2)
                 + 2 * (Q * NH * HD * 2 + 2 * kSmallMargin)          // out and its download
                 + 2 * (S * max_blocks * 4 + S * 4 + 4 * kSmallMargin) + T * 8;
  return e;
}

namespace {
// "16.8 GiB", or below a GiB "34.2 MiB" (a sparse cache's estimate would read 0.0 GiB).
std::string size_text(uint64_t bytes) {
  if (bytes >= (uint64_t(1) << 30)) return fmt::format("{:.1f} GiB", double(bytes) / double(uint64_t(1) << 30));
  return fmt::format("{:.1f} MiB", double(bytes) / double(uint64_t(1) << 20));
}
}  // namespace

std::string memory_refusal(const MemoryEstimate& need, bool cpu_backend, uint64_t device_total,
                           uint64_t host_available) {
  if (cpu_backend) {
    const int64_t both = need.device_bytes + need.host_bytes;
    if (uint64_t(both) <= host_available) return "";
    return fmt::format("needs {} of host memory ({} of buffers the cpu backend keeps in host memory "
                       "as device memory, {} for the reference); {} available",
                       size_text(uint64_t(both)), size_text(uint64_t(need.device_bytes)),
                       size_text(uint64_t(need.host_bytes)), size_text(host_available));
  }
  std::string why;
  if (uint64_t(need.device_bytes) > device_total)
    why = fmt::format("needs {} of device memory; the device has {}", size_text(uint64_t(need.device_bytes)),
                      size_text(device_total));
  if (uint64_t(need.host_bytes) > host_available)
    why += fmt::format("{}needs {} of host memory; {} available", why.empty() ? "" : "; ",
                       size_text(uint64_t(need.host_bytes)), size_text(host_available));
  return why;
}

uint64_t host_available_bytes() {
  if (const char* v = std::getenv("KVH_TEST_HOST_MEMORY"); v && *v) return std::strtoull(v, nullptr, 10);
  std::FILE* f = std::fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kib = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, "MemAvailable: %" SCNu64 " kB", &kib) == 1) break;
  std::fclose(f);
  return kib * 1024;
}

}  // namespace kvh
