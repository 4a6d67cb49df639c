#include "case/attention_case.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <optional>
#include <random>

#include "case/arena.h"
#include "attention.h"
#include "case/cache_setup.h"
#include "device/counter_rng.h"
#include "case/device_cache.h"
#include "device/device.h"
#include "case/kv_scales.h"
#include "run/parallel.h"
#include "router/router.h"
#include "case/stale.h"
#include "check/tolerance.h"
#include "case/value_dist.h"
#include "case/values.h"
#include "case/views.h"
#include "check/write_check.h"

namespace kvh {

namespace {

constexpr uint16_t kPoisonF16 = 0x7E5A, kPoisonBF16 = 0x7FDA;  // quiet NaNs with a recognisable payload

// The sequences of one case: lengths, block tables, and every token's slot.
struct Sequences {
  std::vector<int32_t> context_lens;
  std::vector<int32_t> block_tables;  // [num_seqs, max_blocks]; entries past a sequence's pages hold padding_id
  int64_t max_blocks = 0, num_blocks = 0, total_tokens = 0;
  int32_t padding_id = -1;            // -1 or num_blocks + K (Case::block_table_padding): out of range
  std::vector<int64_t> slots;         // [total_tokens], sequence by sequence
};

// Bytes of the guarded margins around `out`, block_tables and context_lens.
constexpr int64_t kSmallMargin = 4096;

// Per-sequence context lengths: the case's explicit list, or draws from
// [min, max] whose first two are the ends themselves (when the batch has
// room), so that a range meant to reach a partition edge always reaches it.
std::vector<int64_t> draw_context_lens(const Case& c, std::mt19937_64& rng) {
  if (!c.context_lens.empty()) return c.context_lens;
  std::uniform_int_distribution<int64_t> len(c.context_len_min, c.context_len_max);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < c.batch_size; ++i)
    out.push_back(i == 0 ? c.context_len_max : i == 1 ? c.context_len_min : len(rng));
  std::shuffle(out.begin(), out.end(), rng);  // the ends sit at random batch positions
  return out;
}

Sequences make_sequences(const Case& c, std::mt19937_64& rng) {
  Sequences s;
  int64_t used = 0;
  for (int64_t n : draw_context_lens(c, rng)) {
    s.context_lens.push_back(int32_t(n));
    const int64_t blocks = (n + c.block_size - 1) / c.block_size;
    s.max_blocks = std::max(s.max_blocks, blocks);
    used += blocks;
    s.total_tokens += n;
  }
  // Every row gets at least one padding entry: a reader that looks one page past a
  // sequence's last page finds the padding id there, never another sequence's page.
  ++s.max_blocks;
  // Block 0 is the null block, blocks below min_block_id are unused; a few spare blocks
  // hold stale tokens nobody owns. The sequences' pages are a shuffle of the ids above.
  s.num_blocks = c.min_block_id + used + used / 8 + 1;
  std::vector<int32_t> ids(size_t(s.num_blocks - c.min_block_id));
  std::iota(ids.begin(), ids.end(), int32_t(c.min_block_id));
  std::shuffle(ids.begin(), ids.end(), rng);
  s.padding_id = c.block_table_padding < 0 ? -1 : int32_t(s.num_blocks + c.block_table_padding);
  s.block_tables.assign(size_t(c.batch_size * s.max_blocks), s.padding_id);
  size_t next = 0;
  for (int64_t i = 0; i < c.batch_size; ++i) {
    const int64_t n = s.context_lens[size_t(i)];
    const int64_t blocks = (n + c.block_size - 1) / c.block_size;
    for (int64_t b = 0; b < blocks; ++b) s.block_tables[size_t(i * s.max_blocks + b)] = ids[next++];
    for (int64_t t = 0; t < n; ++t)
      s.slots.push_back(int64_t(s.block_tables[size_t(i * s.max_blocks + t / c.block_size)]) * c.block_size +
                        t % c.block_size);
  }
  return s;
}

// The host's logical inputs of a case whose `values` axis reshapes them (value_dist.h).
struct ShapedInputs {
  std::vector<uint16_t> query, key, value;
};

std::vector<uint16_t> host_stream(DType dtype, uint64_t data_seed, uint64_t stream, int64_t n) {
  const U16Buffer b = counter16(dtype, rng::kInput, rng::stream_key(data_seed, stream), size_t(n));
  return {b.begin(), b.end()};
}

// The values behind a case's score modifiers, as float32 (what the reader gets) for the local
// heads [tp_rank * num_heads, (tp_rank + 1) * num_heads) of the model's num_heads * tp.
struct ModifierValues {
  std::vector<float> sinks, alibi_slopes;  // [num_heads] each, or empty (off)
};

// Sinks: uniform in [0, 6) per GLOBAL head from the case's seed alone (not its id), so the ranks of one
// model see slices of one vector; e^6 ~ 400 is of the order of the exp-sum of a few hundred unit-scale
// logits, so a sink counted twice moves the output well beyond tolerance. Slopes: reference::alibi_slopes
// of the model's global head count, the rank's slice.
ModifierValues modifier_values(const Case& c) {
  ModifierValues m;
  const int64_t total = c.num_heads * c.tp, first = int64_t(c.tp_rank) * c.num_heads;
  if (c.sinks) {
    std::mt19937_64 rng(rng::stream_key(c.seed, 0x51c5u));
    std::uniform_real_distribution<double> u(0.0, 6.0);
    std::vector<float> all;
    for (int64_t h = 0; h < total; ++h) all.push_back(float(u(rng)));
    m.sinks.assign(all.begin() + first, all.begin() + first + c.num_heads);
  }
  if (c.alibi) {
    const std::vector<double> all = reference::alibi_slopes(total);
    for (int64_t h = 0; h < c.num_heads; ++h) m.alibi_slopes.push_back(float(all[size_t(first + h)]));
  }
  return m;
}

// Reference attention from the logical tensors: query [S, nh*hd], K/V [T, nkv*hd]
// (tokens sequence by sequence), or, with k and v null, K/V generated a
// sequence at a time from the case's streams kKeys/kValues of data_seed (the
// same elements counter16 would give: no whole-context copy on the host).
// One sequence at a time on each core: only that sequence's K and V are ever
// widened to float64. An fp8 cache (scales set): each K/V element is what the
// cache holds, dequantized: the reference codec's
// fp8_decode(fp8_encode(float(x) / scale)) * scale, with the scale of the
// token's slot (physical block, kv head, token-in-block).
reference::RowMatrix reference_out(const Case& c, const Sequences& s, const uint16_t* q, const uint16_t* k,
                                   const uint16_t* v, uint64_t data_seed, double scale, const ModifierValues& mods,
                                   const std::atomic<bool>& cancel,
                                   const KvScaleTensors* fp8 = nullptr) {
  const std::optional<reference::Fp8Format> f8 = fp8_format(c);
  auto cached = [&](uint16_t bits, bool is_value, int64_t token, int64_t j) {  // an fp8 cache's element
    const double x = decode16(c.dtype, bits);
    const int64_t slot = s.slots[size_t(token)], blk = slot / c.block_size, tok = slot % c.block_size;
    const int64_t head = j / c.head_size;
    const float sc = is_value ? fp8->v_at(blk, head, tok) : fp8->k_at(blk, head, tok);
    return reference::fp8_decode(reference::fp8_encode(double(float(x) / sc), *f8), *f8) * double(sc);
  };
  const int64_t qw = c.num_heads * c.head_size, kw = c.num_kv_heads * c.head_size;
  std::vector<int64_t> first_token(size_t(c.batch_size) + 1, 0);
  for (int64_t i = 0; i < c.batch_size; ++i) first_token[size_t(i) + 1] = first_token[size_t(i)] + s.context_lens[size_t(i)];
  reference::RowMatrix out(c.batch_size, qw);
  parallel_for(c.batch_size, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end && !cancel.load(std::memory_order_relaxed); ++i) {
      reference::DecodeAttentionInput in;
      in.num_heads = c.num_heads;
      in.num_kv_heads = c.num_kv_heads;
      in.head_size = c.head_size;
      in.scale = scale;
      in.sliding_window = c.sliding_window;
      in.softcap = double(float(c.softcap));  // the reader gets a float
      in.sinks.assign(mods.sinks.begin(), mods.sinks.end());
      in.alibi_slopes.assign(mods.alibi_slopes.begin(), mods.alibi_slopes.end());
      in.query.resize(1, qw);
      for (int64_t j = 0; j < qw; ++j) in.query(0, j) = decode16(c.dtype, q[size_t(i * qw + j)]);
      const int64_t n = s.context_lens[size_t(i)], tok0 = first_token[size_t(i)];
      const uint16_t *ks = k ? k + tok0 * kw : nullptr, *vs = v ? v + tok0 * kw : nullptr;
      thread_local std::vector<uint16_t> kgen, vgen;
      if (!k) {
        kgen.resize(size_t(n * kw));
        vgen.resize(size_t(n * kw));
        const bool bf16 = c.dtype == DType::BF16;
        rng::fill_run16(rng::kInput, bf16, kgen.data(), 1, n * kw, rng::stream_key(data_seed, rng::kKeys), uint64_t(tok0 * kw));
        rng::fill_run16(rng::kInput, bf16, vgen.data(), 1, n * kw, rng::stream_key(data_seed, rng::kValues), uint64_t(tok0 * kw));
        ks = kgen.data(), vs = vgen.data();
      }
      reference::RowMatrix K(n, kw), V(n, kw);
      if (f8 && fp8) {
        for (int64_t t = 0; t < n; ++t)
          for (int64_t j = 0; j < kw; ++j) {
            K(t, j) = cached(ks[size_t(t * kw + j)], false, tok0 + t, j);
            V(t, j) = cached(vs[size_t(t * kw + j)], true, tok0 + t, j);
          }
      } else {  // a 16-bit cache holds the inputs as they are
        const double* value_of = decode16_table(c.dtype);
        for (int64_t e = 0; e < n * kw; ++e) {
          K.data()[e] = value_of[ks[size_t(e)]];
          V.data()[e] = value_of[vs[size_t(e)]];
        }
      }
      in.keys.push_back(std::move(K));
      in.values.push_back(std::move(V));
      out.row(i) = reference::decode_attention(in).row(0);
    }
  });
  return out;
}

}  // namespace

MemoryEstimate estimate_decode_memory(const Case& c, int32_t cache_format) {
  const int64_t S = c.batch_size, NH = c.num_heads, NKV = c.num_kv_heads, HD = c.head_size, B = c.block_size;
  int64_t used = 0, T = 0, max_ctx = 0;  // the same block count as make_sequences, every drawn length at the max
  for (int64_t i = 0; i < S; ++i) {
    const int64_t n = c.context_lens.empty() ? c.context_len_max : c.context_lens[size_t(i)];
    used += (n + B - 1) / B;
    T += n;
    max_ctx = std::max(max_ctx, n);
  }
  const int64_t num_blocks = c.min_block_id + used + used / 8 + 1;
  const CacheGeometry g{num_blocks, B, NKV, HD, 8, 2};
  auto made = make_cache_layout(CacheFormat(cache_format), c.layout, g, c.padded_page_bytes);
  // A layout the format cannot take runs nothing; without it, count the two views alone.
  const int64_t storage = made.layout ? made.layout->storage_elems : 2 * num_blocks * B * NKV * HD;
  const int64_t block_stride = made.layout ? made.layout->block_stride : B * NKV * HD;
  const int64_t margin = std::max<int64_t>(
      {64 * 1024, 4 * block_stride, 2 * (std::max<int64_t>(c.block_table_padding, 0) + 3) * block_stride});
  const int64_t max_blocks = (max_ctx + B - 1) / B + 1;
  const int64_t partitions = (max_ctx + 255) / 256;
  MemoryEstimate e;
  e.device_bytes = 2 * (storage * 2 + 2 * margin)         // cache and snapshot
                   + S * (NH + 2 * NKV) * HD * 2           // the step's fused QKV
                   + T * 2 * NKV * HD * 2 + T * 8          // the context's fused KV, slot_mapping
                   + S * NH * HD * 2 + S * max_blocks * 4 + S * 4 + 3 * 2 * kSmallMargin
                   + (partitions > 1 ? 4 * S * NH * partitions * (2 + HD) : 0);
  // Q as the reference reads it; K and V of a sequence per thread, 16-bit and float64; shaped
  // values (value_dist.h) keep the whole context's K and V on the host, before and after shaping.
  const int64_t shaped = c.values == ValueDist::Normal ? 0 : 2 * (2 * T * NKV * HD * 2 + S * NH * HD * 2);
  e.host_bytes = shaped + S * NH * HD * 2
                 + int64_t(host_threads()) * 2 * max_ctx * NKV * HD * (8 + 2)
                 + 2 * (S * NH * HD * 2 + 2 * kSmallMargin)          // out and its download
                 + 2 * (S * max_blocks * 4 + S * 4 + 4 * kSmallMargin) + T * 8;
  return e;
}

std::string memory_refusal(const MemoryEstimate& need, bool cpu_backend, uint64_t device_total,
                           uint64_t host_available) {
  const double gib = double(int64_t(1) << 30);
  if (cpu_backend) {
    const int64_t both = need.device_bytes + need.host_bytes;
    if (uint64_t(both) <= host_available) return "";
    return fmt::format("needs {:.1f} GiB of host memory ({:.1f} GiB of buffers the cpu backend keeps in host memory "
                       "as device memory, {:.1f} GiB for the reference); {:.1f} GiB available",
                       both / gib, need.device_bytes / gib, need.host_bytes / gib, host_available / gib);
  }
  std::string why;
  if (uint64_t(need.device_bytes) > device_total)
    why = fmt::format("needs {:.1f} GiB of device memory; the device has {:.1f} GiB", need.device_bytes / gib,
                      device_total / gib);
  if (uint64_t(need.host_bytes) > host_available)
    why += fmt::format("{}needs {:.1f} GiB of host memory; {:.1f} GiB available", why.empty() ? "" : "; ",
                       need.host_bytes / gib, host_available / gib);
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

int64_t target_compute_units(const std::string& target) {
  if (target.empty()) return device::info().compute_units;
  if (target.rfind("cus=", 0) == 0) {
    size_t used = 0;
    long long n = -1;
    try {
      n = std::stoll(target.substr(4), &used);
    } catch (const std::exception&) {
    }
    if (n < 1 || used != target.size() - 4)
      throw std::invalid_argument("target '" + target + "': expected cus=N with N >= 1");
    return n;
  }
  return routing::compute_units_of(target);
}

CaseResult run_decode_case(const Case& c, const Registry& registry, const DecodeOptions& options) {
  CaseResult r;
  r.c = c;
  r.data_seed = hash_seed(c.id(), c.seed);
  auto unsupported = [&](std::string detail) {
    r.v.status = Status::Unsupported;
    r.v.reason = reason::kUnsupported;
    r.v.detail = std::move(detail);
    return r;
  };

  // 1. Which reader: the case's, or the router's decision.
  std::string reader = c.reader;
  if (!c.router_policy.empty()) {
    try {
      routing::RouteInput in;
      in.num_seqs = c.batch_size;
      in.num_heads = c.num_heads;
      in.head_size = c.head_size;
      in.cache_dtype = c.fp8_cache()              ? routing::CacheDtype::fp8
                       : c.dtype == DType::F16 ? routing::CacheDtype::fp16
                                               : routing::CacheDtype::bf16;
      in.high_precision = c.high_precision;
      in.compute_units = target_compute_units(c.target);
      const routing::RouteDecision d = routing::route(c.router_policy, in);
      reader = d.reader;
      r.route_reason = d.reason;
    } catch (const std::invalid_argument& e) {
      return unsupported(e.what());
    }
  }
  r.routed_to = reader;
  const Kernel* rd = registry.find(reader);
  if (!rd || rd->role != KVH_ROLE_READER || !rd->attention)
    return unsupported("no decode-attention reader named '" + reader + "'");
  const Kernel* wr = nullptr;
  if (c.kind == CaseKind::Pipeline) {
    wr = registry.find(c.writer);
    if (!wr || wr->role != KVH_ROLE_WRITER) return unsupported("no cache writer named '" + c.writer + "'");
    if (wr->cache_format != rd->cache_format) {
      const std::string why =
          fmt::format("writer {} writes the {} cache but reader {} reads {}", c.writer,
                      cache_format_name(wr->cache_format), reader, cache_format_name(rd->cache_format));
      if (c.router_policy.empty()) return unsupported(why);
      // Cannot be launched even with --launch-misrouted: the reader cannot read this writer's cache.
      add_cause(r.v, component::kRouter, reason::kMisroute,
                fmt::format("router {} sent the case to {} ({}): {}", c.router_policy, reader, r.route_reason, why));
      return r;
    }
    if (std::string why = wr->outside_capabilities(kernel_use(c, wr->cache_format)); !why.empty())
      return unsupported(why);
  }

  // 2. Capabilities: a router that picks a kernel outside them has misrouted.
  // A pipeline still runs its writer first: the writer's own damage is a
  // separate cause that a misroute must not hide.
  std::string misroute;
  KernelUse reader_use = kernel_use(c, rd->cache_format);
  reader_use.modifiers = c.modifiers();
  if (const std::string why = rd->outside_capabilities(reader_use); !why.empty()) {
    if (c.router_policy.empty()) return unsupported(why);
    misroute = fmt::format("router {} sent the case to {} ({}): {}", c.router_policy, reader, r.route_reason, why);
    if (!wr && !options.launch_misrouted) {
      add_cause(r.v, component::kRouter, reason::kMisroute, misroute);
      return r;
    }
  }
  // The route the case file states (expect_routed_to): another one is a misroute even when that kernel can run it.
  if (misroute.empty() && !c.router_policy.empty() && !c.expect_routed_to.empty() && reader != c.expect_routed_to) {
    misroute = fmt::format("router {} sent the case to {} ({}); the case file expects {}", c.router_policy, reader,
                           r.route_reason, c.expect_routed_to);
    if (!wr && !options.launch_misrouted) {
      add_cause(r.v, component::kRouter, reason::kMisroute, misroute);
      return r;
    }
  }

  // 3. The sequences and the layout.
  std::mt19937_64 rng(r.data_seed);
  const Sequences s = make_sequences(c, rng);  // block tables and slots in the cache manager's blocks
  r.context_lens = s.context_lens;
  // kernel_pages: the reader gets its tables in kernel pages, manager block m = pages m*r .. m*r+r-1.
  // Padding entries stay out of range in kernel pages: -1, or num_pages + K (num_pages = num_blocks * r),
  // whose pages lie in the cache arena's margins like the manager blocks' would.
  const int64_t page = c.page_size(), pages_per_block = c.block_size / page, max_pages = s.max_blocks * pages_per_block;
  const int64_t num_pages = s.num_blocks * pages_per_block;
  const int32_t page_padding_id = c.block_table_padding < 0 ? -1 : int32_t(num_pages + c.block_table_padding);
  std::vector<int32_t> page_tables = s.block_tables;
  if (pages_per_block > 1) {
    page_tables.assign(size_t(c.batch_size * max_pages), page_padding_id);
    for (int64_t i = 0; i < c.batch_size; ++i)
      for (int64_t j = 0; j < max_pages; ++j) {
        const int32_t m = s.block_tables[size_t(i * s.max_blocks + j / pages_per_block)];
        if (m != s.padding_id) page_tables[size_t(i * max_pages + j)] = int32_t(m * pages_per_block + j % pages_per_block);
      }
  }
  const CacheGeometry g = case_geometry(c, s.num_blocks);
  auto made = make_cache_layout(CacheFormat(rd->cache_format), c.layout, g, c.padded_page_bytes, 0, c.degenerate_stride);
  if (!made.layout) return unsupported(made.reason);
  const CacheLayout& L = *made.layout;
  r.key_layout = L.key.str();
  r.value_layout = L.value.str();
  // Bytes: room for the pages of the out-of-range ids around the cache (block -1 in front,
  // num_blocks .. num_blocks + K behind), which hold NaN (fill_pages below).
  const int64_t margin =
      std::max<int64_t>({64 * 1024, 4 * L.block_stride, 2 * (std::max<int64_t>(c.block_table_padding, 0) + 3) * L.block_stride});
  const int64_t S = c.batch_size, NH = c.num_heads, HD = c.head_size, T = s.total_tokens, NKV = c.num_kv_heads;
  const double scale = 1.0 / std::sqrt(double(HD));
  // fp8 caches: the dequant scales (a small guarded device buffer; host copies for the reference).
  std::optional<KvScaleTensors> kv_scales;
  try {
    kv_scales.emplace(c, s.num_blocks, r.data_seed);
  } catch (const device::AllocError& e) {
    add_cause(r.v, component::kHarness, reason::kHarnessError, e.what(), true);
    return r;
  }
  const KvScaleTensors* fp8 = c.fp8_cache() ? &*kv_scales : nullptr;

  // 4. The reference, on the host's cores while the device works: it makes its own copies
  // of the logical inputs from the same counter-based streams the device fills its
  // buffers from, and widens them to float64 one sequence at a time. The `values` axis
  // (value_dist.h) reshapes the inputs on the host first; the device then gets those.
  std::optional<ShapedInputs> shaped;
  if (c.values != ValueDist::Normal) {
    enter_phase(Phase::Inputs);
    shaped.emplace();
    shaped->key = host_stream(c.dtype, r.data_seed, rng::kKeys, T * NKV * HD);
    shaped->value = host_stream(c.dtype, r.data_seed, rng::kValues, T * NKV * HD);
    shaped->query = host_stream(c.dtype, r.data_seed, rng::kQueries, S * NH * HD);
    shape_values(c, s.context_lens, shaped->query, shaped->key, shaped->value);
  }
  const ModifierValues mods = modifier_values(c);
  reference::RowMatrix ref;
  std::atomic<bool> cancel{false};  // a case that returns early never reads the reference
  std::future<void> ref_done = run_async([&, seed = r.data_seed] {
    if (shaped) {
      ref = reference_out(c, s, shaped->query.data(), shaped->key.data(), shaped->value.data(), seed, scale, mods,
                          cancel, fp8);
      return;
    }
    const auto query = counter16(c.dtype, rng::kInput, rng::stream_key(seed, rng::kQueries), size_t(S * NH * HD));
    ref = reference_out(c, s, query.data(), nullptr, nullptr, seed, scale, mods, cancel, fp8);
  });
  struct Join {  // every return waits for it (it reads this frame's locals), cutting it short
    std::future<void>& f;
    std::atomic<bool>& cancel;
    ~Join() {
      cancel = true;
      if (f.valid()) f.wait();
    }
  } join{ref_done, cancel};

  // out [S, NH, HD] poisoned, inside a guarded arena of its own.
  const uint16_t poison = c.dtype == DType::F16 ? kPoisonF16 : kPoisonBF16;
  GuardedArena out(S * NH * HD, 2, 4096);
  std::fill_n(out.storage_as<uint16_t>(), S * NH * HD, poison);

  // Which component a device error belongs to: the kernel launched last, until its synchronize returns.
  const char* on_device = component::kHarness;
  try {
    // 5. The cache and the input buffers, made on the device.
    enter_phase(Phase::AllocFill);
    DeviceArena cache(L.storage_elems, margin, L.geo.elem_bytes), snapshot(L.storage_elems, margin, L.geo.elem_bytes);
    // An attention case's reference writer overwrites every page whose tokens are all context:
    // no old tokens there. A pipeline's writer under test must be judged against them.
    std::vector<uint8_t> overwritten;
    if (!wr && c.stale == Stale::Random && !c.fp8_cache()) {  // the only fill that skips them
      overwritten.assign(size_t(num_pages), 0);
      std::vector<int64_t> tokens(size_t(num_pages), 0);
      for (int64_t slot : s.slots)
        if (++tokens[size_t(slot / page)] == page) overwritten[size_t(slot / page)] = 1;
    }
    cache.fill_cache(L, c.dtype, r.data_seed, c.stale, c.kv_cache_dtype, overwritten);
    device::settle();
    enter_phase(Phase::Inputs);
    // The query is a view into a fused QKV buffer of the decode step (one token a sequence);
    // the context's K and V a fused KV buffer (no query columns: they would only cost memory),
    // whose token stride is still 2 * num_kv_heads * head_size, not contiguous.
    DeviceQkv step = make_device_qkv(S, NH, NKV, HD, c.dtype, r.data_seed, rng::kQueries, rng::kStepKv,
                                           rng::kStepKv);
    DeviceQkv hist = make_device_qkv(T, 0, NKV, HD, c.dtype, r.data_seed, rng::kFiller, rng::kKeys, rng::kValues);
    if (shaped) {
      enter_phase(Phase::Copy);
      set_qkv_from_host(step, &shaped->query, nullptr, nullptr);
      set_qkv_from_host(hist, nullptr, &shaped->key, &shaped->value);
    }
    enter_phase(Phase::Copy);
    device::Buffer d_out(out.bytes().size()), d_slots(std::max<size_t>(s.slots.size(), 1) * 8);
    // block_tables and context_lens in guarded arenas: context_lens's margins hold sentinels,
    // block_tables's the padding id, so a read past the table's end gets an out-of-range page too.
    GuardedArena bt(int64_t(page_tables.size()), 4, kSmallMargin), cl(S, 4, kSmallMargin);
    std::fill_n(reinterpret_cast<int32_t*>(bt.bytes().data()), bt.bytes().size() / 4, page_padding_id);
    std::copy(page_tables.begin(), page_tables.end(), bt.storage_as<int32_t>());
    std::copy(s.context_lens.begin(), s.context_lens.end(), cl.storage_as<int32_t>());
    device::Buffer d_bt(bt.bytes().size()), d_cl(cl.bytes().size());
    d_out.upload(out.bytes().data(), out.bytes().size());
    d_bt.upload(bt.bytes().data(), bt.bytes().size());
    d_cl.upload(cl.bytes().data(), cl.bytes().size());
    if (!s.slots.empty()) d_slots.upload(s.slots.data(), s.slots.size() * 8);
    const auto* slots = static_cast<const int64_t*>(d_slots.get());
    // The reference writer: a 16-bit cache's bits, or the reference codec's fp8 codes.
    auto reference_write = [&](DeviceArena& into) {
      if (fp8)
        reference_write_fp8_into(into, L, hist.buf.get(), hist.views.k, hist.views.v, slots, T, fp8->write_scales(c));
      else
        reference_write_into(into, L, hist.buf.get(), hist.views.k, hist.views.v, slots, T);
    };

    bool writer_failed = false;
    if (wr) {  // pipeline: the writer under test writes every context token, and is judged first
      enter_phase(Phase::AllocFill);
      snapshot.copy_from(cache);  // the reference writer's starting point
      enter_phase(Phase::Reference);
      reference_write(snapshot);
      device::settle();  // the harness's device work is done: an error from here on is the writer's
      on_device = component::kWriter;
      note_running_component(on_device);
      enter_phase(Phase::Launch);
      const int rc = launch_writer(*wr, L, cache.storage(), hist.views, hist.buf.get(), d_slots.get(), T, c.dtype,
                                   cache_kvh_dtype(c), fp8);
      if (rc != 0) {
        const LaunchFailure f = launch_failure(*wr, rc);
        add_cause(r.v, component::kWriter, reason::kLaunchError, f.detail, f.status == Status::Crash);
        if (!misroute.empty()) add_cause(r.v, component::kRouter, reason::kMisroute, misroute);
        return r;
      }
      device::synchronize();
      on_device = component::kHarness;
      note_running_component(on_device);
      enter_phase(Phase::Check);
      const Verdict wv = check_writer_on_device(L, c.dtype, r.data_seed, snapshot, cache, c.stale, c.kv_cache_dtype);
      for (auto& cause : wv.causes) {
        writer_failed = true;
        add_cause(r.v, cause.component.c_str(), cause.reason.c_str(), "writer: " + cause.detail, cause.crash);
      }
      // What the reader must leave alone: the cache as the writer left it (snapshot holds the
      // reference's, equal to it when the writer passed).
      enter_phase(Phase::Check);
      if (writer_failed) snapshot.copy_from(cache);
    } else {  // attention: the reference writer puts the context into the cache
      enter_phase(Phase::Reference);
      reference_write(cache);
      enter_phase(Phase::AllocFill);
      snapshot.copy_from(cache);
    }
    if (!misroute.empty()) {
      add_cause(r.v, component::kRouter, reason::kMisroute, misroute);
      if (!options.launch_misrouted) return r;
    }
    // The pages just outside the cache (page -1, pages num_pages .. num_pages + K; L's pages are
    // the kernel's) hold NaN (an fp8 cache: its format's NaN code): a reader that brings a padding
    // entry's page into its arithmetic writes NaN.
    enter_phase(Phase::AllocFill);
    const int64_t past = std::max<int64_t>(c.block_table_padding, 0) + 1;
    const uint16_t nan_page = c.fp8_cache() ? padding_page_code8(c.kv_cache_dtype == KvCacheDType::Fp8E4m3fnuz)
                                            : padding_page_bits(c.dtype);
    for (DeviceArena* arena : {&cache, &snapshot}) {
      arena->fill_pages(L, -1, 1, nan_page);
      arena->fill_pages(L, num_pages, past, nan_page);
    }

    kvh_attention_args a{};
    const kvh_dtype dt = to_kvh(c.dtype);
    a.out = to_tensor(StridedView{{S, NH, HD}, {NH * HD, HD, 1}, 0}, static_cast<uint8_t*>(d_out.get()) + 4096, 2, dt);
    a.query = to_tensor(kernel_view(step.views.q, L), step.buf.get(), 2, dt);
    a.key_cache = to_tensor(L.key, cache.storage(), L.geo.elem_bytes, cache_kvh_dtype(c));
    a.value_cache = to_tensor(L.value, cache.storage(), L.geo.elem_bytes, cache_kvh_dtype(c));
    a.block_tables = contiguous_tensor(static_cast<uint8_t*>(d_bt.get()) + kSmallMargin, {S, max_pages}, KVH_DT_I32);
    a.context_lens = contiguous_tensor(static_cast<uint8_t*>(d_cl.get()) + kSmallMargin, {S}, KVH_DT_I32);
    a.block_size = page;
    a.cache_block_size = pages_per_block > 1 ? c.block_size : 0;
    a.max_context_len = *std::max_element(s.context_lens.begin(), s.context_lens.end());
    a.scale = float(scale);
    a.k_scale = a.v_scale = 1.f;  // an fp8 cache without scale tensors: the scale is 1
    if (fp8) {
      a.kv_scales = fp8->granularity();
      a.k_scales = fp8->k_tensor();
      a.v_scales = fp8->v_tensor();
    }
    a.partition_size = c.partition_size;
    a.sliding_window = int32_t(c.sliding_window);
    a.softcap = float(c.softcap);
    a.head_offset = int32_t(c.tp_rank * NH);
    device::Buffer d_sinks, d_slopes;
    if (!mods.sinks.empty()) {
      d_sinks = device::Buffer(mods.sinks.size() * 4);
      d_sinks.upload(mods.sinks.data(), mods.sinks.size() * 4);
      a.sinks = contiguous_tensor(d_sinks.get(), {NH}, KVH_DT_F32);
    }
    if (!mods.alibi_slopes.empty()) {
      d_slopes = device::Buffer(mods.alibi_slopes.size() * 4);
      d_slopes.upload(mods.alibi_slopes.data(), mods.alibi_slopes.size() * 4);
      a.alibi_slopes = contiguous_tensor(d_slopes.get(), {NH}, KVH_DT_F32);
    }
    device::Buffer d_ws;
    if (rd->workspace_bytes) {
      const uint64_t ws = rd->workspace_bytes(&a);
      if (ws) {
        enter_phase(Phase::AllocFill);
        d_ws = device::Buffer(ws);
        std::vector<uint32_t> nan(ws / 4 + 1, 0x7FC0DEADu);  // a reduce that reads unwritten partials gets NaN
        d_ws.upload(nan.data(), ws);
        a.workspace = d_ws.get();
        a.workspace_bytes = ws;
      }
    }
    device::settle();  // the harness's device work is done: an error from here on is the reader's
    on_device = component::kReader;
    note_running_component(on_device);
    enter_phase(Phase::Launch);
    const int rc = rd->attention(&a, nullptr);
    if (rc != 0) {
      const LaunchFailure f = launch_failure(*rd, rc);
      add_cause(r.v, component::kReader, reason::kLaunchError, f.detail, f.status == Status::Crash);
      return r;
    }
    device::synchronize();
    on_device = component::kHarness;
    note_running_component(on_device);

    enter_phase(Phase::Copy);
    GuardedArena out_after(S * NH * HD, 2, 4096, GuardedArena::Uninitialized{});
    d_out.download(out_after.bytes().data(), out_after.bytes().size());
    enter_phase(Phase::Check);
    const int64_t cache_changed = cache.first_difference(snapshot);
    GuardedArena bt_after(bt.storage_elems(), 4, kSmallMargin, GuardedArena::Uninitialized{});
    GuardedArena cl_after(S, 4, kSmallMargin, GuardedArena::Uninitialized{});
    d_bt.download(bt_after.bytes().data(), bt_after.bytes().size());
    d_cl.download(cl_after.bytes().data(), cl_after.bytes().size());

    // 6. The reader's checks, strongest first.
    enter_phase(Phase::Reference);
    ref_done.get();
    enter_phase(Phase::Check);
    Tolerance tol = attention_tolerance(c.dtype);
    tol.atol *= value_scale(c);  // large values: the tolerance relative to V's magnitude (value_dist.h)
    int64_t unwritten = 0, nonfinite = 0, beyond = 0, worst = -1, first_nonfinite = -1, first_unwritten = -1,
            first_beyond = -1;
    double max_abs = 0, max_rel = 0;
    const uint16_t* o = out_after.storage_as<uint16_t>();
    for (int64_t i = 0; i < S * NH * HD; ++i) {
      if (o[i] == poison) {
        if (unwritten++ == 0) first_unwritten = i;
        continue;
      }
      const double got = decode16(c.dtype, o[i]), want = ref(i / (NH * HD), i % (NH * HD));
      if (!std::isfinite(got)) {
        if (nonfinite++ == 0) first_nonfinite = i;
        continue;
      }
      const double err = std::fabs(got - want);
      if (err > tol.atol + tol.rtol * std::fabs(want) && beyond++ == 0) first_beyond = i;
      if (err > max_abs || worst < 0) max_abs = err, worst = i;
      max_rel = std::max(max_rel, err / std::max(std::fabs(want), 1e-6));
    }
    r.v.max_abs_err = max_abs;
    r.v.max_rel_err = max_rel;
    const std::string worst_text =
        worst < 0 ? std::string()
                  : fmt::format("worst element seq {} head {} dim {}: got {:.6g}, want {:.6g} (atol {}, rtol {})",
                                worst / (NH * HD), worst % (NH * HD) / HD, worst % HD,
                                decode16(c.dtype, o[worst]), ref(worst / (NH * HD), worst % (NH * HD)), tol.atol, tol.rtol);
    const std::string counts = fmt::format("{} unwritten, {} NaN/Inf, {} beyond tolerance of {} outputs", unwritten,
                                           nonfinite, beyond, S * NH * HD);
    r.v.bad_elements = unwritten + nonfinite + beyond;
    const std::string numbers = counts + (worst_text.empty() ? "" : "; " + worst_text);
    if (!misroute.empty()) {  // launched anyway: the damage belongs to the router's cause
      r.v.causes.back().detail += ". Launched anyway: " + numbers;
      if (r.v.causes.size() == 1) r.v.detail = r.v.causes.back().detail;
      return r;
    }
    // Writing outside `out`, or into the cache, is the reader's own fault whatever the cache held.
    if (std::memcmp(out_after.bytes().data(), out.bytes().data(), size_t(out.margin_bytes())) != 0 ||
        std::memcmp(out_after.bytes().data() + out.margin_bytes() + S * NH * HD * 2,
                    out.bytes().data() + out.margin_bytes() + S * NH * HD * 2, size_t(out.margin_bytes())) != 0)
      add_cause(r.v, component::kReader, reason::kOutOfView, "the reader wrote outside `out` (arena margin); " + numbers);
    else if (bt_after.bytes() != bt.bytes() || cl_after.bytes() != cl.bytes())
      add_cause(r.v, component::kReader, reason::kOutOfView,
                fmt::format("the reader wrote into {} (or its guard margin); {}",
                            bt_after.bytes() != bt.bytes() ? "block_tables" : "context_lens", numbers));
    else if (cache_changed >= 0)
      add_cause(r.v, component::kReader, reason::kOutOfView,
                fmt::format("the reader wrote into the KV cache (first changed byte: arena byte {}, {}); {}",
                            cache_changed, describe_arena_byte(L, margin, cache_changed), numbers));
    auto where = [&](int64_t i) { return fmt::format("seq {} head {} dim {}", i / (NH * HD), i % (NH * HD) / HD, i % HD); };
    if (unwritten)
      add_cause(r.v, component::kReader, reason::kUnwritten, "first unwritten at " + where(first_unwritten) + "; " + numbers);
    if (writer_failed) {
      // The reader read a corrupted cache: wrong numbers are the writer's damage, not a verdict on the reader.
      if (nonfinite || beyond) r.v.causes.front().detail += ". The reader's output downstream: " + numbers;
      if (r.v.causes.size() >= 1) r.v.detail = r.v.causes.front().detail;
      return r;
    }
    if (nonfinite)
      add_cause(r.v, component::kReader, reason::kNanOrInf, "first NaN/Inf at " + where(first_nonfinite) + "; " + numbers);
    else if (beyond)
      add_cause(r.v, component::kReader, reason::kMismatch,
                fmt::format("first beyond tolerance at {}: got {:.6g}, want {:.6g}; {}", where(first_beyond),
                            decode16(c.dtype, o[first_beyond]), ref(first_beyond / (NH * HD), first_beyond % (NH * HD)),
                            numbers));
    if (!r.v.causes.empty()) return r;
    r.v.detail = worst_text;
    // kernel_us (the reader) and writer_us: after the verdict's launches and downloads. Relaunching
    // is idempotent: the reader overwrites out and its workspace, the writer rewrites the same slots.
    if (timing_enabled(options.timing)) {
      enter_phase(Phase::Timing);
      on_device = component::kReader;
      note_running_component(on_device);
      r.v.kernel_us = time_kernel(options.timing, [&] { return rd->attention(&a, nullptr); }, &r.v.detail);
      on_device = component::kWriter;
      note_running_component(on_device);
      if (wr)
        r.v.writer_us = time_kernel(options.timing, [&] {
          return launch_writer(*wr, L, cache.storage(), hist.views, hist.buf.get(), d_slots.get(), T, c.dtype,
                                   cache_kvh_dtype(c), fp8);
        }, &r.v.detail);
    }
  } catch (const device::AllocError& e) {
    add_cause(r.v, component::kHarness, reason::kHarnessError, e.what(), true);
  } catch (const device::Error& e) {
    add_cause(r.v, on_device, on_device == component::kHarness ? reason::kHarnessError : reason::kCrash, e.what(), true);
  } catch (const std::invalid_argument& e) {
    add_cause(r.v, component::kHarness, reason::kHarnessError, std::string("reference: ") + e.what(), true);
  }
  return r;
}

}  // namespace kvh
