// A write case as named stages over one state struct, WriteCase: plan (the
// writer, its capabilities, the layout, the slots) -> buffers (the cache and
// the reference's copy) -> inputs -> reference -> launch -> judge -> timing,
// each charged to its phase (run/phases.h).
#include "case/write_case.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <random>

#include "case/arena.h"
#include "case/case_state.h"
#include "case/cache_setup.h"
#include "device/counter_rng.h"
#include "case/device_cache.h"
#include "device/device.h"
#include "case/kv_scales.h"
#include "case/launch_configs.h"  // issue 23 (D)
#include "case/mla_inputs.h"
#include "case/padding.h"
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
  return slots;
}



// The state of one write case, passed from stage to stage.
struct WriteCase : CaseState {
  WriteCase(const Case& c_, const TimingOptions& t) : c(c_), timing(t) {
    r.c = c;
    r.data_seed = case_data_seed(c);
  }
  const Case& c;
  const TimingOptions& timing;
  const Kernel* w = nullptr;
  CacheGeometry g{};
  std::optional<CacheLayout> layout;
  int64_t margin = 0;                  // bytes around the cache storage
  std::vector<int64_t> slots;          // slot_mapping [num_tokens], in manager blocks; -1 = padding
  std::optional<DeviceArena> cache, expected;  // expected: the reference writer's cache
  std::optional<KvScaleTensors> scales;
  std::optional<DeviceQkv> qkv;        // K/V in a fused QKV buffer (the query columns are filler)
  device::Buffer qkv_before, d_slots;  // qkv_before: the inputs as given, to see a writer that changes them
  std::string refusal;                 // the writer declined at call time (KVH_UNSUPPORTED): its reason
  kvh_launch_config launch_cfg{};      // issue 23 (D): the case's launch configuration ({null, null}: default)

  const CacheLayout& L() const { return *layout; }
  int launch() const {
    const kvh_write_args a = args();
    return w->write(&a, nullptr);
  }
  kvh_write_args args() const {
    kvh_write_args a = writer_args(L(), cache->storage(), qkv->views, qkv->buf.get(), d_slots.get(), c.batch_size,
                                   c.dtype, cache_kvh_dtype(c), &*scales);
    a.launch_config = launch_cfg.name ? &launch_cfg : nullptr;  // issue 23 (D)
    return a;
  }
};

// plan: the writer and its capabilities, the layout of its cache format, the slots.
bool plan(WriteCase& d, const Registry& registry) {
  const Case& c = d.c;
  d.w = registry.find(c.writer);
  if (!d.w) return d.unsupported("no kernel named '" + c.writer + "' is registered");
  if (d.w->role != KVH_ROLE_WRITER || !d.w->write) return d.unsupported("kernel '" + c.writer + "' is not a cache writer");
  // issue 23 (D): a configuration the writer does not declare (a hand-made case) is refused by name.
  if (!c.launch_config.empty() && !d.w->launch_config(c.launch_config))
    return d.unsupported(fmt::format("{} declares no launch configuration '{}'", d.w->label(), c.launch_config));
  d.launch_cfg = launch_config_of(c, *d.w);
  if (std::string why = cache_format_refusal(c, *d.w); !why.empty()) return d.unsupported(why);
  if (std::string why = d.w->outside_capabilities(kernel_use(c, d.w->cache_format)); !why.empty())
    return d.unsupported(why);
  d.g = c.mla() ? case_geometry(c, 0)
                : CacheGeometry{0, c.block_size, c.num_kv_heads, c.head_size, cache_x(c), cache_elem_bytes(c)};
  d.g = case_geometry(c, write_case_num_blocks(c, d.g.page_elems()));  // kernel_pages: in kernel pages
  auto made = make_cache_layout(CacheFormat(d.w->cache_format), c.layout, d.g, c.padded_page_bytes, 0,
                                c.degenerate_stride);
  if (!made.layout) return d.unsupported(made.reason);
  d.layout = std::move(made.layout);
  d.r.key_layout = d.L().key.str();
  d.r.value_layout = d.L().value.str();
  d.margin = std::max<int64_t>(64 * 1024, 4 * d.L().block_stride);
  // The slots come from the case's mt19937_64 stream after the four draws that seeded its inputs
  // before they became counter-based: every case keeps the slots it always had.
  std::mt19937_64 rng(d.r.data_seed);
  rng.discard(4);
  d.slots = make_slots(c, d.g.num_blocks * d.g.block_size / c.block_size, rng);  // in manager blocks
  d.r.padding_tokens = padding_tokens(c.batch_size, d.r.data_seed);
  for (int64_t i : d.r.padding_tokens) d.slots[size_t(i)] = -1;  // padding tokens: write nothing
  return true;
}

// buffers, inputs, reference: the cache on the device (sentinels everywhere, old tokens in every
// owned element) and its copy for the reference writer; the inputs; the reference writer's cache.
void prepare(WriteCase& d) {
  const Case& c = d.c;
  const CacheLayout& L = d.L();
  enter_phase(Phase::AllocFill);
  // The slots' pages: all a sparse arena backs (a large cache's; issue 23).
  std::vector<int64_t> pages;
  for (int64_t slot : d.slots)
    if (slot >= 0) pages.push_back(slot / L.geo.block_size);
  const std::vector<PageRange> touched = page_ranges(std::move(pages), L.key.shape[0]);
  d.cache.emplace(L, d.margin, touched);
  d.expected.emplace(L, d.margin, touched);
  d.cache->fill_cache(L, c.dtype, d.r.data_seed, Stale::Random, c.kv_cache_dtype);
  d.scales.emplace(c, d.g.num_blocks, d.r.data_seed);
  d.expected->copy_from(*d.cache);  // the reference writer's starting point
  enter_phase(Phase::Inputs);
  if (c.mla())  // kv_c and k_pe: column views of one latent projection, filler past them
    d.qkv.emplace(make_device_mla_kv(c.batch_size, c.kv_lora_rank, c.qk_rope_head_dim, c.dtype, d.r.data_seed,
                                     rng::kKeys, rng::kValues));
  else
    d.qkv.emplace(make_device_qkv(c.batch_size, c.num_heads, c.num_kv_heads, c.head_size, c.dtype, d.r.data_seed, 0,
                                  rng::kKeys, rng::kValues));
  d.qkv_before = device::Buffer(d.qkv->buf.size());
  device::copy_d2d(d.qkv_before.get(), d.qkv->buf.get(), d.qkv->buf.size());
  enter_phase(Phase::Copy);
  d.d_slots = device::Buffer(std::max<size_t>(d.slots.size(), 1) * 8);
  if (!d.slots.empty()) d.d_slots.upload(d.slots.data(), d.slots.size() * 8);
  enter_phase(Phase::Reference);
  const auto* slots = static_cast<const int64_t*>(d.d_slots.get());
  const DeviceQkv& q = *d.qkv;
  if (c.mla()) {
    const std::optional<device::Fp8WriteScales> fp8 =
        c.fp8_cache() ? std::optional(d.scales->write_scales(c)) : std::nullopt;
    reference_write_mla_into(*d.expected, L, q.buf.get(), q.views, slots, c.batch_size, fp8 ? &*fp8 : nullptr);
  } else if (c.quantized_cache())  // fp8 or int8 codes (write_scales says which)
    reference_write_fp8_into(*d.expected, L, q.buf.get(), q.views.k, q.views.v, slots, c.batch_size,
                             d.scales->write_scales(c));
  else
    reference_write_into(*d.expected, L, q.buf.get(), q.views.k, q.views.v, slots, c.batch_size);
  device::settle();  // the harness's device work is done: an error from here on is the writer's
}

// launch: the writer under test, to its synchronize.
bool launch(WriteCase& d) {
  d.running(component::kWriter);
  enter_phase(Phase::Launch);
  if (const int rc = d.launch(); rc != 0) {
    const LaunchFailure f = launch_failure(*d.w, rc);
    if (f.status == Status::Unsupported) {  // declined at call time: judged for damage first (judge)
      d.refusal = f.detail;
      device::synchronize();
      d.running(component::kHarness);
      return true;
    }
    add_cause(d.r.v, component::kWriter, reason::kLaunchError, f.detail, f.status == Status::Crash);
    return false;
  }
  device::synchronize();
  d.running(component::kHarness);
  return true;
}

// A writer that declined at call time is UNSUPPORTED, as by a declaration, unless it wrote outside its
// views or into its inputs before declining: a refusal must not hide damage the checks would see.
// (What it left inside its views, written or not, is its own business: it did not do the case.)
void judge_refusal(WriteCase& d, bool inputs_changed) {
  if (d.r.v.reason == reason::kOutOfView) {
    d.r.v.detail += "; then it refused the case: " + d.refusal;
  } else if (inputs_changed) {
    d.r.v = Verdict{};
    add_cause(d.r.v, component::kWriter, reason::kOutOfView,
              "the writer modified its inputs (key/value or slot_mapping); then it refused the case: " + d.refusal);
  } else {
    d.unsupported(d.refusal);
  }
}

// judge: the cache against the reference writer's, byte for byte; the inputs are read-only,
// so a writer that scribbles on them is out of view too.
void judge(WriteCase& d) {
  enter_phase(Phase::Check);
  d.r.v = check_writer_on_device(d.L(), d.c.dtype, d.r.data_seed, *d.expected, *d.cache, Stale::Random,
                                 d.c.kv_cache_dtype);
  enter_phase(Phase::Check);
  const bool qkv_changed = device::first_difference(d.qkv->buf.get(), d.qkv_before.get(), d.qkv->buf.size()) >= 0;
  std::vector<int64_t> slots_after(d.slots.size());
  if (!d.slots.empty()) d.d_slots.download(slots_after.data(), d.slots.size() * 8);
  if (d.refusal.empty()) {
    if (d.r.v.status == Status::Pass && (qkv_changed || slots_after != d.slots))
      add_cause(d.r.v, component::kWriter, reason::kOutOfView,
                !qkv_changed ? "the writer modified slot_mapping"
                : d.c.mla()  ? "the writer modified its key/value input (kv_c/k_pe: the latent projection buffer, "
                               "its columns past k_pe included)"
                             : "the writer modified its key/value input (fused QKV buffer)");
    return;
  }
  judge_refusal(d, qkv_changed || slots_after != d.slots);
}

// timing: kernel_us, after the verdict's launch and downloads; rewriting the same slots is idempotent.
void time_writer(WriteCase& d) {
  if (d.r.v.status != Status::Pass || !timing_enabled(d.timing)) return;
  enter_phase(Phase::Timing);
  d.running(component::kWriter);
  const kvh_write_args a = d.args();
  const KernelTime t = time_case_kernel(d.timing, *d.w, &a, [&] { return d.launch(); }, &d.r.v.detail,
                                        d.timing.budget * d.elapsed_us());
  d.r.v.kernel_us = t.kernel_us;
  d.r.v.host_us = t.host_us;
  d.r.v.timing_method = t.method;
  d.r.v.timing_reps = t.reps;
}

}  // namespace

int64_t write_case_num_blocks(const Case& c, int64_t page_elems) {
  const int64_t needed = (c.batch_size + c.block_size - 1) / c.block_size;
  if (c.layout != Scheme::Large) return 2 * needed + 3;
  const int64_t past_2g = ((int64_t(1) << 31) + 2 * page_elems - 1) / (2 * page_elems) + 2 * needed + 2;
  return std::max<int64_t>(65536 + 2 * needed + 2, past_2g);
}

CaseResult run_write_case(const Case& c, const Registry& registry, const TimingOptions& timing) {
  WriteCase d(c, timing);
  if (!plan(d, registry)) return d.r;
  run_device_stages(d, [&] {
    prepare(d);
    if (!launch(d)) return;
    judge(d);
    time_writer(d);
  });
  return d.r;
}

}  // namespace kvh
