#include "bench/bench.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <random>

#include "case/cache_setup.h"
#include "device/device.h"
#include "report/report.h"
#include "case/views.h"

namespace kvh::bench {

namespace {

constexpr int64_t kMiB = int64_t(1) << 20;
constexpr int64_t kElem = 2;              // bf16
constexpr int64_t kBlockSize = 16;
constexpr int kMaxCopies = 512;
/// Rows moving at least this much are "large" for the targets (five times the H200's L2).
constexpr int64_t kLargeBytes = 256 * kMiB;
constexpr double kWriterTarget = 70, kReaderTarget = 60;  // % of copy bandwidth at large sizes

const char* const kWriters[] = {"reshape_and_cache_flash", "reshape_and_cache", "reshape_and_cache_shuffle"};
const char* const kReaders[] = {"paged_attention_v1", "paged_attention_rocm", "pa_fwd_asm"};

struct Sweep {
  std::vector<int64_t> tokens, writer_head_sizes;
  std::vector<int64_t> batches, contexts, reader_head_sizes;
  std::vector<std::pair<int64_t, int64_t>> heads;  // (num_heads, num_kv_heads)
};

Sweep sweep(bool quick) {
  if (quick) return {{256}, {128}, {4}, {512}, {128}, {{32, 8}}};
  return {{256, 4096, 32768, 131072}, {128, 256}, {8, 64, 256}, {1024, 4096, 16384}, {128, 256}, {{32, 8}, {4, 1}}};
}

bool selected(const Options& o, const std::string& name) {
  return o.kernels.empty() || std::find(o.kernels.begin(), o.kernels.end(), name) != o.kernels.end();
}

bool supports_head_size(const Kernel& d, int64_t head_size) {
  return d.caps.head_sizes.empty() ||
         std::find(d.caps.head_sizes.begin(), d.caps.head_sizes.end(), head_size) != d.caps.head_sizes.end();
}

/// The built-in kernels `builtin` in their order, then every kernel of role
/// `role` that a provider (--provider) added: all but fixtures, and fixtures
/// only when --kernel names them (an empty Python kernel: the bridge's overhead).
template <size_t N>
std::vector<std::string> with_provider_kernels(const char* const (&builtin)[N], int32_t role, const Registry& registry,
                                               const Options& o) {
  std::vector<std::string> out(std::begin(builtin), std::end(builtin));
  for (const std::string& n : registry.names()) {
    const Kernel* k = registry.find(n);
    if (k->origin != "builtin" && k->role == role && (!k->fixture || (!o.kernels.empty() && selected(o, n))))
      out.push_back(n);
  }
  return out;
}

double rotate_bytes(const Options& o) {
  const double mib = o.rotate_mib >= 0 ? o.rotate_mib : (device::info().backend == "cpu" ? 0 : 512);
  return mib * double(kMiB);
}

int copies_for(int64_t footprint, const Options& o) {
  const double target = rotate_bytes(o);
  if (target <= 0 || footprint <= 0) return 1;
  return int(std::clamp<double>(std::ceil(target / double(footprint)), 1, kMaxCopies));
}

/// The device stopped being usable: the sweep ends.
struct DeviceLost {
  std::string what;
};

void finish(Row& r, const device::Timing& t, double copy_gbps) {
  r.median_us = t.median_us;
  r.min_us = t.min_us;
  r.max_us = t.max_us;
  r.reps = t.reps;
  r.gbps = t.median_us > 0 ? double(r.bytes) / (t.median_us * 1e-6) / 1e9 : 0;
  r.pct_of_copy = copy_gbps > 0 ? 100.0 * r.gbps / copy_gbps : 0;
}

Row measure_writer(const Kernel& w, int64_t T, int64_t H, int64_t D, const Options& o, double copy_gbps) {
  Row r;
  r.kernel = w.name;
  r.kind = "writer";
  r.cache_format = cache_format_name(w.cache_format);
  r.num_tokens = T;
  r.num_heads = 4 * H;
  r.num_kv_heads = H;
  r.head_size = D;
  r.block_size = kBlockSize;
  r.bytes = writer_bytes(T, H, D, kElem);
  const int64_t blocks = (T + kBlockSize - 1) / kBlockSize;
  CacheGeometry g{blocks + 1, kBlockSize, H, D, 16 / kElem, kElem};
  const auto made = make_cache_layout(CacheFormat(w.cache_format), Scheme::KvFirst, g);
  if (!made.layout) {
    r.error = made.reason;
    return r;
  }
  const CacheLayout& L = *made.layout;
  const FusedQkv qkv = fused_qkv_views(T, r.num_heads, H, D);
  const int64_t qkv_bytes = T * (r.num_heads + 2 * H) * D * kElem, cache_bytes = L.storage_elems * kElem;
  r.footprint = qkv_bytes + cache_bytes;
  r.copies = copies_for(r.footprint, o);

  // Slots: each run of block_size tokens goes to one random block (block 0 is the null block).
  std::mt19937_64 rng(uint64_t(T * 1000003 + D));
  std::vector<int64_t> ids(static_cast<size_t>(blocks));
  std::iota(ids.begin(), ids.end(), 1);
  std::shuffle(ids.begin(), ids.end(), rng);
  std::vector<int64_t> slots(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) slots[size_t(t)] = ids[size_t(t / kBlockSize)] * kBlockSize + t % kBlockSize;
  device::Buffer d_slots(size_t(T) * 8);
  d_slots.upload(slots.data(), slots.size() * 8);
  std::vector<device::Buffer> d_qkv, d_cache;
  for (int i = 0; i < r.copies; ++i) {
    d_qkv.emplace_back(size_t(qkv_bytes));
    device::fill_random16(d_qkv.back().get(), size_t(qkv_bytes / kElem), true, uint64_t(i) + 1);
    d_cache.emplace_back(size_t(cache_bytes));
  }
  device::synchronize();
  int next = 0;
  const auto t = device::time_launches(
      [&] {
        const size_t i = size_t(next++ % r.copies);
        return launch_writer(w, L, d_cache[i].get(), qkv, d_qkv[i].get(), d_slots.get(), T, DType::BF16, KVH_DT_BF16);
      },
      o.warmup, o.reps);
  finish(r, t, copy_gbps);
  return r;
}

Row measure_reader(const Kernel& rd, int64_t S, int64_t C, int64_t NH, int64_t H, int64_t D,
                   const Options& o, double copy_gbps) {
  Row r;
  r.kernel = rd.name;
  r.kind = "reader";
  r.cache_format = cache_format_name(rd.cache_format);
  r.num_seqs = S;
  r.context_len = C;
  r.num_heads = NH;
  r.num_kv_heads = H;
  r.head_size = D;
  r.block_size = kBlockSize;
  r.bytes = attention_bytes(S, C, NH, H, D, kBlockSize, kElem);
  const int64_t bps = (C + kBlockSize - 1) / kBlockSize, blocks = S * bps;
  CacheGeometry g{blocks + 1, kBlockSize, H, D, 16 / kElem, kElem};
  const auto made = make_cache_layout(CacheFormat(rd.cache_format), Scheme::KvFirst, g);
  if (!made.layout) {
    r.error = made.reason;
    return r;
  }
  const CacheLayout& L = *made.layout;
  const FusedQkv step = fused_qkv_views(S, NH, H, D);  // the query is a view into the decode step's fused QKV
  const int64_t qkv_bytes = S * (NH + 2 * H) * D * kElem, cache_bytes = L.storage_elems * kElem,
                out_bytes = S * NH * D * kElem;
  r.footprint = qkv_bytes + cache_bytes + out_bytes;
  r.copies = copies_for(r.footprint, o);

  std::mt19937_64 rng(uint64_t(S * 1000003 + C * 31 + D));
  std::vector<int32_t> tables(static_cast<size_t>(blocks));
  std::iota(tables.begin(), tables.end(), 1);
  std::shuffle(tables.begin(), tables.end(), rng);
  const std::vector<int32_t> lens(static_cast<size_t>(S), static_cast<int32_t>(C));
  device::Buffer d_bt(tables.size() * 4), d_cl(lens.size() * 4);
  d_bt.upload(tables.data(), tables.size() * 4);
  d_cl.upload(lens.data(), lens.size() * 4);

  std::vector<device::Buffer> d_qkv, d_cache, d_out;
  std::vector<kvh_attention_args> args;
  const kvh_dtype dt = KVH_DT_BF16;
  for (int i = 0; i < r.copies; ++i) {
    d_qkv.emplace_back(size_t(qkv_bytes));
    device::fill_random16(d_qkv.back().get(), size_t(qkv_bytes / kElem), true, uint64_t(i) * 2 + 1);
    d_cache.emplace_back(size_t(cache_bytes));
    device::fill_random16(d_cache.back().get(), size_t(cache_bytes / kElem), true, uint64_t(i) * 2 + 2);
    d_out.emplace_back(size_t(out_bytes));
    kvh_attention_args a{};
    a.out = contiguous_tensor(d_out.back().get(), {S, NH, D}, dt);
    a.query = to_tensor(step.q, d_qkv.back().get(), kElem, dt);
    a.key_cache = to_tensor(L.key, d_cache.back().get(), kElem, dt);
    a.value_cache = to_tensor(L.value, d_cache.back().get(), kElem, dt);
    a.block_tables = contiguous_tensor(d_bt.get(), {S, bps}, KVH_DT_I32);
    a.context_lens = contiguous_tensor(d_cl.get(), {S}, KVH_DT_I32);
    a.block_size = kBlockSize;
    a.max_context_len = int32_t(C);
    a.scale = float(1.0 / std::sqrt(double(D)));
    a.k_scale = a.v_scale = 1.f;
    args.push_back(a);
  }
  device::Buffer d_ws;  // split-K partials: shared by the copies, not counted
  if (rd.workspace_bytes) {
    const uint64_t ws = rd.workspace_bytes(&args[0]);
    if (ws) {
      d_ws = device::Buffer(ws);
      for (auto& a : args) a.workspace = d_ws.get(), a.workspace_bytes = ws;
    }
  }
  device::synchronize();
  int next = 0;
  const auto t = device::time_launches([&] { return rd.attention(&args[size_t(next++ % r.copies)], nullptr); },
                                       o.warmup, o.reps);
  finish(r, t, copy_gbps);
  return r;
}

// Runs one measurement; a failure becomes the row's error, a lost device throws DeviceLost.
template <class F>
Row guarded(Row base, F&& measure) {
  try {
    return measure();
  } catch (const device::Error& e) {
    base.error = e.what();
    if (e.device_lost() || !device::healthy()) throw DeviceLost{base.error};
  } catch (const std::exception& e) {
    base.error = e.what();
  }
  return base;
}

std::string mb(int64_t bytes) { return fmt::format("{:.1f}", double(bytes) / 1e6); }

struct Summary {
  std::string kernel, kind;
  int n = 0;
  double min = 0, median = 0, max = 0;
};

std::vector<Summary> large_summary(const Result& r) {
  std::map<std::string, std::vector<double>> pct;
  std::map<std::string, std::string> kind;
  std::vector<std::string> order;
  for (const Row& row : r.rows) {
    if (!row.error.empty() || row.bytes < kLargeBytes) continue;
    if (!pct.count(row.kernel)) order.push_back(row.kernel);
    pct[row.kernel].push_back(row.pct_of_copy);
    kind[row.kernel] = row.kind;
  }
  std::vector<Summary> out;
  for (const auto& k : order) {
    auto v = pct[k];
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    out.push_back({k, kind[k], int(n), v.front(), n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]), v.back()});
  }
  return out;
}

}  // namespace

int64_t writer_bytes(int64_t T, int64_t H, int64_t D, int64_t e) {
  return 2 * T * H * D * e   // K and V read
         + 2 * T * H * D * e // K and V cache written
         + T * 8;            // slot_mapping (int64)
}

int64_t attention_bytes(int64_t S, int64_t C, int64_t NH, int64_t H, int64_t D, int64_t block_size, int64_t e) {
  return S * NH * D * e                                  // query
         + 2 * S * C * H * D * e                          // K and V of every context token
         + S * ((C + block_size - 1) / block_size) * 4    // block-table entries (int32)
         + S * 4                                          // context_lens
         + S * NH * D * e;                                // out
}

std::string Row::shape() const {
  if (kind == "writer") return fmt::format("T={} H={} D={}", num_tokens, num_kv_heads, head_size);
  return fmt::format("S={} C={} {}/{} D={}", num_seqs, context_len, num_heads, num_kv_heads, head_size);
}

Result run(const Options& o, const Registry& registry) {
  Result res;
  const device::Info info = device::info();
  res.backend = info.backend;
  res.device = info.name;
  res.arch = info.arch;
  res.compute_units = info.compute_units;
  res.memory_bytes = info.memory_bytes;
  res.started_at = utc_now();
  res.options = o;
  res.options.rotate_mib = rotate_bytes(o) / double(kMiB);  // resolved once (device::info() is slow on CUDA)
  const Sweep sw = sweep(o.quick);
  try {
    // 1. Copy bandwidth.
    {
      const size_t n = size_t(o.copy_mib * double(kMiB)) / 256 * 256;
      res.copy_bytes = int64_t(2 * n);
      try {
        device::Buffer src(n), dst(n);
        device::fill_random16(src.get(), n / 2, true, 99);
        const auto t = device::time_launches([&] { device::copy_d2d(dst.get(), src.get(), n); return 0; }, o.warmup,
                                             o.reps);
        res.copy_us = t.median_us;
        res.copy_gbps = double(res.copy_bytes) / (t.median_us * 1e-6) / 1e9;
      } catch (const device::Error& e) {
        res.copy_error = e.what();
        if (e.device_lost() || !device::healthy()) throw DeviceLost{res.copy_error};
      }
    }
    // 2. Writers.
    for (const std::string& name : with_provider_kernels(kWriters, KVH_ROLE_WRITER, registry, o)) {
      const Kernel* w = registry.find(name);
      if (!w || !selected(o, name)) continue;
      for (int64_t D : sw.writer_head_sizes)
        for (int64_t T : sw.tokens) {
          Row base;
          base.kernel = name;
          base.kind = "writer";
          base.cache_format = cache_format_name(w->cache_format);
          base.num_tokens = T, base.num_heads = 32, base.num_kv_heads = 8, base.head_size = D;
          base.bytes = writer_bytes(T, 8, D, kElem);
          res.rows.push_back(guarded(base, [&] { return measure_writer(*w, T, 8, D, res.options, res.copy_gbps); }));
        }
    }
    // 3. Decode-attention readers.
    for (const std::string& name : with_provider_kernels(kReaders, KVH_ROLE_READER, registry, o)) {
      const Kernel* rd = registry.find(name);
      if (!rd || !selected(o, name)) continue;
      for (auto [NH, H] : sw.heads)
        for (int64_t D : sw.reader_head_sizes) {
          if (!supports_head_size(*rd, D)) continue;  // pa_fwd_asm: head_size 128 only
          for (int64_t S : sw.batches)
            for (int64_t C : sw.contexts) {
              Row base;
              base.kernel = name;
              base.kind = "reader";
              base.cache_format = cache_format_name(rd->cache_format);
              base.num_seqs = S, base.context_len = C, base.num_heads = NH, base.num_kv_heads = H, base.head_size = D;
              base.bytes = attention_bytes(S, C, NH, H, D, kBlockSize, kElem);
              res.rows.push_back(
                  guarded(base, [&] { return measure_reader(*rd, S, C, NH, H, D, res.options, res.copy_gbps); }));
            }
        }
    }
  } catch (const DeviceLost& lost) {
    res.complete = false;
    res.stopped_because = "device fault (the device is unusable after it): " + lost.what;
  }
  res.finished_at = utc_now();
  return res;
}

std::string table(const Result& r) {
  std::string out = fmt::format("device: {} ({}, {}, {} CUs)\n", r.device, r.backend, r.arch, r.compute_units);
  if (r.copy_error.empty())
    out += fmt::format("copy bandwidth (D2D hipMemcpy, {} MB read + written): {:.1f} GB/s ({:.1f} us)\n",
                       mb(r.copy_bytes), r.copy_gbps, r.copy_us);
  else
    out += fmt::format("copy bandwidth: not measured: {}\n", r.copy_error);
  out += fmt::format("{:<26} {:<26} {:>10} {:>6} {:>11} {:>9} {:>7}\n", "kernel", "shape", "MB moved", "sets",
                     "median us", "GB/s", "% copy");
  for (const Row& row : r.rows) {
    if (!row.error.empty()) {
      out += fmt::format("{:<26} {:<26} {:>10} ERROR: {}\n", row.kernel, row.shape(), mb(row.bytes), row.error);
      continue;
    }
    out += fmt::format("{:<26} {:<26} {:>10} {:>6} {:>11.2f} {:>9.1f} {:>6.1f}%\n", row.kernel, row.shape(),
                       mb(row.bytes), row.copies, row.median_us, row.gbps, row.pct_of_copy);
  }
  for (const Summary& s : large_summary(r))
    out += fmt::format("large sizes (>= {} MB moved) {:<26} {} rows: {:.1f}% .. {:.1f}% (median {:.1f}%), target {}%\n",
                       mb(kLargeBytes), s.kernel, s.n, s.min, s.max, s.median,
                       s.kind == "writer" ? kWriterTarget : kReaderTarget);
  if (!r.complete) out += fmt::format("INCOMPLETE: {}\n", r.stopped_because);
  return out;
}

std::string markdown(const Result& r) {
  std::string md = "# kvharness bench\n\n";
  md += fmt::format("- device: {} ({}, {}, {} CUs{})\n", r.device, r.backend, r.arch, r.compute_units,
                    r.memory_bytes ? fmt::format(", {:.1f} GiB", double(r.memory_bytes) / double(1ull << 30)) : "");
  md += fmt::format("- started {}, finished {}{}\n", r.started_at, r.finished_at, r.complete ? "" : " (INCOMPLETE)");
  md += fmt::format("- timing: median of {} launches after {} warm-up launches, {}; buffer sets rotate over at least "
                    "{} MiB\n",
                    r.options.reps, r.options.warmup, r.backend == "cpu" ? "host clock" : "device events",
                    r.options.rotate_mib);
  if (r.copy_error.empty())
    md += fmt::format("- **copy bandwidth**: {:.1f} GB/s (hipMemcpy D2D of {} MB, counted as read + written = {} MB, "
                      "{:.1f} us)\n",
                      r.copy_gbps, mb(r.copy_bytes / 2), mb(r.copy_bytes), r.copy_us);
  else
    md += fmt::format("- copy bandwidth: not measured: {}\n", r.copy_error);
  if (!r.complete) md += fmt::format("- **stopped early**: {}\n", r.stopped_because);
  md += "\nBytes moved = every input read once + every output written once (see harness/bench/bench.h): writers "
        "K+V read, K+V cache written, slot_mapping; decode attention query, K+V of every context token, "
        "block-table entries, context_lens, out (split-K partials not counted). bf16, block_size 16, kv_first "
        "cache. GB = 10^9 bytes.\n";
  const auto summary = large_summary(r);
  if (!summary.empty()) {
    md += fmt::format("\n## Large sizes (>= {} MB moved)\n\n"
                      "| kernel | rows | min % | median % | max % | target | met |\n"
                      "| --- | --- | --- | --- | --- | --- | --- |\n",
                      mb(kLargeBytes));
    for (const Summary& s : summary) {
      const double target = s.kind == "writer" ? kWriterTarget : kReaderTarget;
      md += fmt::format("| {} | {} | {:.1f} | {:.1f} | {:.1f} | {:.0f}% | {} |\n", s.kernel, s.n, s.min, s.median,
                        s.max, target, s.median >= target ? "yes" : "**no**");
    }
  }
  for (const char* kind : {"writer", "reader"}) {
    md += std::string("\n## ") + (std::string(kind) == "writer" ? "Cache writers" : "Decode attention") + "\n\n";
    md += "| kernel | shape | MB moved | buffer sets | median us | min us | GB/s | % of copy |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- |\n";
    for (const Row& row : r.rows) {
      if (row.kind != kind) continue;
      if (!row.error.empty()) {
        std::string err = row.error;
        std::replace(err.begin(), err.end(), '|', '/');
        md += fmt::format("| {} | {} | {} | | | | ERROR: {} | |\n", row.kernel, row.shape(), mb(row.bytes), err);
      } else {
        md += fmt::format("| {} | {} | {} | {} | {:.2f} | {:.2f} | {:.1f} | {:.1f}% |\n", row.kernel, row.shape(),
                          mb(row.bytes), row.copies, row.median_us, row.min_us, row.gbps, row.pct_of_copy);
      }
    }
  }
  return md;
}

std::string json(const Result& r) {
  nlohmann::json j;
  j["schema"] = "kvharness.bench/1";
  j["backend"] = r.backend;
  j["device"] = r.device;
  j["arch"] = r.arch;
  j["compute_units"] = r.compute_units;
  j["memory_bytes"] = r.memory_bytes;
  j["started_at"] = r.started_at;
  j["finished_at"] = r.finished_at;
  j["complete"] = r.complete;
  j["stopped_because"] = r.stopped_because.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.stopped_because);
  j["options"] = {{"quick", r.options.quick}, {"warmup", r.options.warmup}, {"reps", r.options.reps},
                  {"copy_mib", r.options.copy_mib}, {"rotate_mib", r.options.rotate_mib}};
  j["byte_counting"] =
      "inputs read once + outputs written once; writer: 2*T*H*D*e (K,V read) + 2*T*H*D*e (K,V cache written) + 8*T "
      "(slot_mapping); attention: S*NH*D*e (query) + 2*S*C*H*D*e (K,V) + 4*S*ceil(C/block_size) (block tables) + "
      "4*S (context_lens) + S*NH*D*e (out); split-K partials excluded";
  j["copy"] = {{"bytes", r.copy_bytes}, {"median_us", r.copy_us}, {"gbps", r.copy_gbps},
               {"error", r.copy_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.copy_error)}};
  auto& rows = j["rows"] = nlohmann::json::array();
  for (const Row& row : r.rows) {
    nlohmann::json e;
    const bool w = row.kind == "writer";
    e["kernel"] = row.kernel;
    e["kind"] = row.kind;
    e["cache_format"] = row.cache_format;
    e["layout"] = "kv_first";
    e["dtype"] = "bf16";
    e["block_size"] = row.block_size;
    e["num_tokens"] = w ? nlohmann::json(row.num_tokens) : nlohmann::json(nullptr);
    e["num_seqs"] = w ? nlohmann::json(nullptr) : nlohmann::json(row.num_seqs);
    e["context_len"] = w ? nlohmann::json(nullptr) : nlohmann::json(row.context_len);
    e["num_heads"] = row.num_heads;
    e["num_kv_heads"] = row.num_kv_heads;
    e["head_size"] = row.head_size;
    e["bytes"] = row.bytes;
    e["footprint_bytes"] = row.footprint;
    e["buffer_sets"] = row.copies;
    const bool ok = row.error.empty();
    e["median_us"] = ok ? nlohmann::json(row.median_us) : nlohmann::json(nullptr);
    e["min_us"] = ok ? nlohmann::json(row.min_us) : nlohmann::json(nullptr);
    e["max_us"] = ok ? nlohmann::json(row.max_us) : nlohmann::json(nullptr);
    e["reps"] = row.reps;
    e["gbps"] = ok ? nlohmann::json(row.gbps) : nlohmann::json(nullptr);
    e["pct_of_copy"] = ok ? nlohmann::json(row.pct_of_copy) : nlohmann::json(nullptr);
    e["error"] = ok ? nlohmann::json(nullptr) : nlohmann::json(row.error);
    rows.push_back(std::move(e));
  }
  auto& sum = j["large_sizes"] = nlohmann::json::array();
  for (const Summary& s : large_summary(r))
    sum.push_back({{"kernel", s.kernel}, {"rows", s.n}, {"min_pct", s.min}, {"median_pct", s.median},
                   {"max_pct", s.max}, {"target_pct", s.kind == "writer" ? kWriterTarget : kReaderTarget}});
  return j.dump(1) + "\n";
}

int bench_main(const Options& o, const Registry& registry) {
  const Result r = run(o, registry);
  fmt::print("{}", table(r));
  std::filesystem::create_directories(o.report_dir);
  write_text_file(std::filesystem::path(o.report_dir) / "bench.md", markdown(r));
  write_text_file(std::filesystem::path(o.report_dir) / "bench.json", json(r));
  fmt::print("report: {}/bench.md, {}/bench.json\n", o.report_dir, o.report_dir);
  bool any_error = !r.copy_error.empty();
  for (const Row& row : r.rows) any_error |= !row.error.empty();
  return r.complete && !any_error ? 0 : 1;
}

}  // namespace kvh::bench
