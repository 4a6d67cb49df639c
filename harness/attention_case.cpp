#include "attention_case.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>
#include <cstring>
#include <future>
#include <optional>
#include <random>

#include "arena.h"
#include "attention.h"
#include "cache_setup.h"
#include "counter_rng.h"
#include "device_cache.h"
#include "device.h"
#include "parallel.h"
#include "router.h"
#include "tolerance.h"
#include "value_dist.h"
#include "values.h"
#include "views.h"
#include "write_check.h"

namespace kvh {

namespace {

constexpr uint16_t kPoisonF16 = 0x7E5A, kPoisonBF16 = 0x7FDA;  // quiet NaNs with a recognisable payload

// The sequences of one case: lengths, block tables, and every token's slot.
struct Sequences {
  std::vector<int32_t> context_lens;
  std::vector<int32_t> block_tables;  // [num_seqs, max_blocks]
  int64_t max_blocks = 0, num_blocks = 0, total_tokens = 0;
  std::vector<int64_t> slots;         // [total_tokens], sequence by sequence
};

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
  // Block 0 is the null block; a few spare blocks hold stale tokens nobody owns.
  s.num_blocks = 1 + used + used / 8 + 1;
  std::vector<int32_t> ids(size_t(s.num_blocks - 1));
  std::iota(ids.begin(), ids.end(), 1);
  std::shuffle(ids.begin(), ids.end(), rng);
  s.block_tables.assign(size_t(c.batch_size * s.max_blocks), 0);
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

// Reference attention from the logical tensors: query [S, nh*hd], K/V [T, nkv*hd]
// (tokens sequence by sequence). One sequence at a time on each core: only
// that sequence's K and V are ever widened to float64.
reference::RowMatrix reference_out(const Case& c, const Sequences& s, const uint16_t* q, const uint16_t* k,
                                   const uint16_t* v, double scale, const std::atomic<bool>& cancel) {
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
      in.query.resize(1, qw);
      for (int64_t j = 0; j < qw; ++j) in.query(0, j) = decode16(c.dtype, q[size_t(i * qw + j)]);
      const int64_t n = s.context_lens[size_t(i)], tok0 = first_token[size_t(i)];
      reference::RowMatrix K(n, kw), V(n, kw);
      for (int64_t t = 0; t < n; ++t)
        for (int64_t j = 0; j < kw; ++j) {
          K(t, j) = decode16(c.dtype, k[size_t((tok0 + t) * kw + j)]);
          V(t, j) = decode16(c.dtype, v[size_t((tok0 + t) * kw + j)]);
        }
      in.keys.push_back(std::move(K));
      in.values.push_back(std::move(V));
      out.row(i) = reference::decode_attention(in).row(0);
    }
  });
  return out;
}

}  // namespace

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
      in.cache_dtype = c.dtype == DType::F16 ? routing::CacheDtype::fp16 : routing::CacheDtype::bf16;
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
  if (const std::string why = rd->outside_capabilities(kernel_use(c, rd->cache_format)); !why.empty()) {
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
  const int64_t page = c.page_size(), pages_per_block = c.block_size / page, max_pages = s.max_blocks * pages_per_block;
  std::vector<int32_t> page_tables = s.block_tables;
  if (pages_per_block > 1) {
    page_tables.assign(size_t(c.batch_size * max_pages), 0);
    for (int64_t i = 0; i < c.batch_size; ++i)
      for (int64_t j = 0; j < max_pages; ++j)
        page_tables[size_t(i * max_pages + j)] =
            int32_t(s.block_tables[size_t(i * s.max_blocks + j / pages_per_block)] * pages_per_block + j % pages_per_block);
  }
  const CacheGeometry g = case_geometry(c, s.num_blocks);
  auto made = make_cache_layout(CacheFormat(rd->cache_format), c.layout, g, c.padded_page_bytes, 0, c.degenerate_stride);
  if (!made.layout) return unsupported(made.reason);
  const CacheLayout& L = *made.layout;
  r.key_layout = L.key.str();
  r.value_layout = L.value.str();
  const int64_t margin = std::max<int64_t>(64 * 1024, 4 * L.block_stride);
  const int64_t S = c.batch_size, NH = c.num_heads, HD = c.head_size, T = s.total_tokens, NKV = c.num_kv_heads;
  const double scale = 1.0 / std::sqrt(double(HD));

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
  reference::RowMatrix ref;
  std::atomic<bool> cancel{false};  // a case that returns early never reads the reference
  std::future<void> ref_done = run_async([&, seed = r.data_seed] {
    if (shaped) {
      ref = reference_out(c, s, shaped->query.data(), shaped->key.data(), shaped->value.data(), scale, cancel);
      return;
    }
    const auto key = counter16(c.dtype, rng::kInput, rng::stream_key(seed, rng::kKeys), size_t(T * NKV * HD));
    const auto value = counter16(c.dtype, rng::kInput, rng::stream_key(seed, rng::kValues), size_t(T * NKV * HD));
    const auto query = counter16(c.dtype, rng::kInput, rng::stream_key(seed, rng::kQueries), size_t(S * NH * HD));
    ref = reference_out(c, s, query.data(), key.data(), value.data(), scale, cancel);
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
    DeviceArena cache(L.storage_elems, margin), snapshot(L.storage_elems, margin);
    cache.fill_cache(L, c.dtype, r.data_seed);
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
    device::Buffer d_bt(std::max<size_t>(page_tables.size(), 1) * 4), d_cl(size_t(S) * 4);
    d_out.upload(out.bytes().data(), out.bytes().size());
    d_bt.upload(page_tables.data(), page_tables.size() * 4);
    d_cl.upload(s.context_lens.data(), size_t(S) * 4);
    if (!s.slots.empty()) d_slots.upload(s.slots.data(), s.slots.size() * 8);
    const auto* slots = static_cast<const int64_t*>(d_slots.get());

    bool writer_failed = false;
    if (wr) {  // pipeline: the writer under test writes every context token, and is judged first
      enter_phase(Phase::AllocFill);
      snapshot.copy_from(cache);  // the reference writer's starting point
      enter_phase(Phase::Reference);
      reference_write_into(snapshot, L, hist.buf.get(), hist.views.k, hist.views.v, slots, T);
      device::settle();  // the harness's device work is done: an error from here on is the writer's
      on_device = component::kWriter;
      note_running_component(on_device);
      enter_phase(Phase::Launch);
      const int rc = launch_writer(*wr, L, cache.storage(), hist.views, hist.buf.get(), d_slots.get(), T, c.dtype);
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
      const Verdict wv = check_writer_on_device(L, c.dtype, r.data_seed, snapshot, cache);
      for (auto& cause : wv.causes) {
        writer_failed = true;
        add_cause(r.v, cause.component.c_str(), cause.reason.c_str(), "writer: " + cause.detail, cause.crash);
      }
      // What the reader must leave alone: the cache as the writer left it (snapshot holds the
      // reference's, equal to it when the writer passed).
      enter_phase(Phase::Check);
      if (writer_failed) snapshot.copy_from(cache);
    } else {  // attention: the reference writer puts the context into the cache
      reference_write_into(cache, L, hist.buf.get(), hist.views.k, hist.views.v, slots, T);
      enter_phase(Phase::AllocFill);
      snapshot.copy_from(cache);
    }
    if (!misroute.empty()) {
      add_cause(r.v, component::kRouter, reason::kMisroute, misroute);
      if (!options.launch_misrouted) return r;
    }

    kvh_attention_args a{};
    const kvh_dtype dt = to_kvh(c.dtype);
    a.out = to_tensor(StridedView{{S, NH, HD}, {NH * HD, HD, 1}, 0}, static_cast<uint8_t*>(d_out.get()) + 4096, 2, dt);
    a.query = to_tensor(kernel_view(step.views.q, L), step.buf.get(), 2, dt);
    a.key_cache = to_tensor(L.key, cache.storage(), 2, dt);
    a.value_cache = to_tensor(L.value, cache.storage(), 2, dt);
    a.block_tables = contiguous_tensor(d_bt.get(), {S, max_pages}, KVH_DT_I32);
    a.context_lens = contiguous_tensor(d_cl.get(), {S}, KVH_DT_I32);
    a.block_size = page;
    a.cache_block_size = pages_per_block > 1 ? c.block_size : 0;
    a.max_context_len = *std::max_element(s.context_lens.begin(), s.context_lens.end());
    a.scale = float(scale);
    a.k_scale = a.v_scale = 1.f;
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

    // 6. The reader's checks, strongest first.
    enter_phase(Phase::Reference);
    ref_done.get();
    enter_phase(Phase::Check);
    Tolerance tol = attention_tolerance(c.dtype);
    tol.atol *= value_scale(c);  // large values: the tolerance relative to V's magnitude (value_dist.h)
    int64_t unwritten = 0, nonfinite = 0, beyond = 0, worst = -1, first_nonfinite = -1, first_unwritten = -1;
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
      if (err > tol.atol + tol.rtol * std::fabs(want)) ++beyond;
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
      add_cause(r.v, component::kReader, reason::kMismatch, numbers);
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
          return launch_writer(*wr, L, cache.storage(), hist.views, hist.buf.get(), d_slots.get(), T, c.dtype);
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
