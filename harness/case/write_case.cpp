#include "case/write_case.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "case/arena.h"
#include "case/cache_setup.h"
#include "device/counter_rng.h"
#include "case/device_cache.h"
#include "device/device.h"
#include "case/kv_scales.h"
#include "case/values.h"
#include "case/views.h"
#include "check/write_check.h"

namespace kvh {

namespace {

std::vector<int64_t> make_slots(const Case& c, int64_t num_blocks, std::mt19937_64& rng) {
  const int64_t n = c.batch_size;
  const bool large = c.layout == Scheme::Large;
  // Large suite: slots in the top blocks only, where ids exceed 65,535 and offsets 2^31.
  // Block 0 is never used: vLLM reserves it as the null block, and a writer
  // that gets the block base wrong is still right at block 0.
  const int64_t first = large ? std::max<int64_t>(1, num_blocks - (n + c.block_size - 1) / c.block_size * 2 - 2) : 1;
  const int64_t nslots = (num_blocks - first) * c.block_size;
  std::vector<int64_t> all(static_cast<size_t>(nslots));
  std::iota(all.begin(), all.end(), first * c.block_size);
  std::shuffle(all.begin(), all.end(), rng);
  std::vector<int64_t> slots(all.begin(), all.begin() + n);
  for (int64_t i = 0; i < n; ++i)
    if (i % 8 == 3) slots[size_t(i)] = -1;  // padding tokens: write nothing
  return slots;
}

}  // namespace

int64_t write_case_num_blocks(const Case& c, int64_t page_elems) {
  const int64_t needed = (c.batch_size + c.block_size - 1) / c.block_size;
  if (c.layout != Scheme::Large) return 2 * needed + 3;
  const int64_t past_2g = ((int64_t(1) << 31) + 2 * page_elems - 1) / (2 * page_elems) + 2 * needed + 2;
  return std::max<int64_t>(65536 + 2 * needed + 2, past_2g);
}

CaseResult run_write_case(const Case& c, const Registry& registry, const TimingOptions& timing) {
  CaseResult r;
  r.c = c;
  r.data_seed = hash_seed(c.id(), c.seed);
  auto unsupported = [&](std::string why) {
    r.v.status = Status::Unsupported;
    r.v.reason = reason::kUnsupported;
    r.v.detail = std::move(why);
    return r;
  };
  const Kernel* w = registry.find(c.writer);
  if (!w) return unsupported("no kernel named '" + c.writer + "' is registered");
  if (w->role != KVH_ROLE_WRITER || !w->write) return unsupported("kernel '" + c.writer + "' is not a cache writer");
  if (std::string why = w->outside_capabilities(kernel_use(c, w->cache_format)); !why.empty()) return unsupported(why);

  CacheGeometry g{0, c.block_size, c.num_kv_heads, c.head_size, cache_x(c), cache_elem_bytes(c)};
  g = case_geometry(c, write_case_num_blocks(c, g.page_elems()));  // kernel_pages: in kernel pages
  const CacheFormat format = CacheFormat(w->cache_format);
  auto made = make_cache_layout(format, c.layout, g, c.padded_page_bytes, 0, c.degenerate_stride);
  if (!made.layout) return unsupported(made.reason);
  const CacheLayout& L = *made.layout;
  r.key_layout = L.key.str();
  r.value_layout = L.value.str();

  std::mt19937_64 rng(r.data_seed);
  const int64_t T = c.batch_size, H = c.num_kv_heads, D = c.head_size;
  const int64_t margin = std::max<int64_t>(64 * 1024, 4 * L.block_stride);
  // The slots come from the case's mt19937_64 stream after the four draws that seeded its inputs
  // before they became counter-based: every case keeps the slots it always had.
  rng.discard(4);
  const auto slots = make_slots(c, g.num_blocks * g.block_size / c.block_size, rng);  // in manager blocks

  const char* on_device = component::kHarness;  // the writer from its launch until its synchronize returns
  try {
    // The cache, on the device: sentinels everywhere, old tokens in every owned element.
    enter_phase(Phase::AllocFill);
    DeviceArena cache(L.storage_elems, margin, L.geo.elem_bytes), expected(L.storage_elems, margin, L.geo.elem_bytes);
    cache.fill_cache(L, c.dtype, r.data_seed, Stale::Random, c.kv_cache_dtype);
    const KvScaleTensors scales(c, g.num_blocks, r.data_seed);
    expected.copy_from(cache);  // the reference writer's starting point
    // Inputs: K/V of the case's streams in a fused QKV buffer (the query columns are filler).
    enter_phase(Phase::Inputs);
    const DeviceQkv qkv = make_device_qkv(T, c.num_heads, H, D, c.dtype, r.data_seed, 0, rng::kKeys, rng::kValues);
    device::Buffer qkv_before(qkv.buf.size());
    device::copy_d2d(qkv_before.get(), qkv.buf.get(), qkv.buf.size());
    enter_phase(Phase::Copy);
    device::Buffer d_slots(std::max<size_t>(slots.size(), 1) * 8);
    if (!slots.empty()) d_slots.upload(slots.data(), slots.size() * 8);
    enter_phase(Phase::Reference);
    if (c.fp8_cache())
      reference_write_fp8_into(expected, L, qkv.buf.get(), qkv.views.k, qkv.views.v,
                               static_cast<const int64_t*>(d_slots.get()), T, scales.write_scales(c));
    else
      reference_write_into(expected, L, qkv.buf.get(), qkv.views.k, qkv.views.v,
                           static_cast<const int64_t*>(d_slots.get()), T);
    device::settle();  // the harness's device work is done: an error from here on is the writer's

    on_device = component::kWriter;
    note_running_component(on_device);
    enter_phase(Phase::Launch);
    const int rc = launch_writer(*w, L, cache.storage(), qkv.views, qkv.buf.get(), d_slots.get(), T, c.dtype,
                             cache_kvh_dtype(c), &scales);
    if (rc != 0) {
      const LaunchFailure f = launch_failure(*w, rc);
      add_cause(r.v, component::kWriter, reason::kLaunchError, f.detail, f.status == Status::Crash);
      return r;
    }
    device::synchronize();
    on_device = component::kHarness;
    note_running_component(on_device);

    enter_phase(Phase::Check);
    r.v = check_writer_on_device(L, c.dtype, r.data_seed, expected, cache, Stale::Random, c.kv_cache_dtype);

    // The inputs are read-only: a writer that scribbles on them is out of view too.
    enter_phase(Phase::Check);
    const bool qkv_changed = device::first_difference(qkv.buf.get(), qkv_before.get(), qkv.buf.size()) >= 0;
    std::vector<int64_t> slots_after(slots.size());
    if (!slots.empty()) d_slots.download(slots_after.data(), slots.size() * 8);
    if (r.v.status == Status::Pass && (qkv_changed || slots_after != slots))
      add_cause(r.v, component::kWriter, reason::kOutOfView,
                qkv_changed ? "the writer modified its key/value input (fused QKV buffer)"
                            : "the writer modified slot_mapping");
    // kernel_us: after the verdict's launch and downloads; rewriting the same slots is idempotent.
    if (r.v.status == Status::Pass && timing_enabled(timing)) {
      enter_phase(Phase::Timing);
      on_device = component::kWriter;
      note_running_component(on_device);
      r.v.kernel_us = time_kernel(timing, [&] {
        return launch_writer(*w, L, cache.storage(), qkv.views, qkv.buf.get(), d_slots.get(), T, c.dtype,
                             cache_kvh_dtype(c), &scales);
      }, &r.v.detail);
    }
  } catch (const device::AllocError& e) {
    add_cause(r.v, component::kHarness, reason::kHarnessError, e.what(), true);
  } catch (const device::Error& e) {
    add_cause(r.v, on_device, on_device == component::kHarness ? reason::kHarnessError : reason::kCrash, e.what(), true);
  }
  return r;
}

}  // namespace kvh
