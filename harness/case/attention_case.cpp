// A decode case (attention, pipeline) as named stages over one state struct,
// DecodeCase: plan (route, capabilities, sequences, layout) -> reference
// (started on the host's cores) -> buffers -> inputs -> write the context
// (the reference writer, or the writer under test, judged) -> launch the
// reader -> judge -> timing. Each stage charges its time to its phase
// (run/phases.h); a stage that returns false has given the case its verdict.
#include "case/attention_case.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <future>
#include <optional>
#include <random>

#include "case/arena.h"
#include "case/case_state.h"
#include "case/cache_setup.h"
#include "case/decode_inputs.h"
#include "case/decode_reference.h"
#include "case/device_cache.h"
#include "case/guarded_array.h"
#include "case/kv_scales.h"
#include "case/launch_configs.h"  // issue 23 (D)
#include "case/mla_inputs.h"
#include "case/reference_cache.h"
#include "case/stale.h"
#include "case/value_dist.h"
#include "case/values.h"
#include "case/views.h"
#include "check/tolerance.h"
#include "device/counter_rng.h"
#include "device/device.h"
#include "route_boundaries.h"
#include "router/router.h"
#include "run/parallel.h"

namespace kvh {

namespace {

constexpr uint16_t kPoisonF16 = 0x7E5A, kPoisonBF16 = 0x7FDA;  // quiet NaNs with a recognisable payload
constexpr int64_t kMaxWorkspaceBytes = int64_t(16) << 30;        // one typed workspace, at most (16 GiB)

// The state of one decode case, passed from stage to stage.
struct DecodeCase : CaseState {
  DecodeCase(const Case& c_, const DecodeOptions& o) : c(c_), options(o) {
    r.c = c;
    r.data_seed = case_data_seed(c);
    rng.seed(r.data_seed);
  }
  DecodeCase(const DecodeCase&) = delete;
  DecodeCase& operator=(const DecodeCase&) = delete;

  const Case& c;
  const DecodeOptions& options;
  // plan
  std::string reader, misroute;  // misroute: the router's cause, recorded once the writer is judged
  const Kernel* rd = nullptr;
  const Kernel* wr = nullptr;    // pipelines only
  std::mt19937_64 rng;
  Sequences s;                   // in the cache manager's blocks
  PageTables pt;                 // what the reader gets: kernel pages
  std::optional<CacheLayout> layout;
  int64_t margin = 0;            // bytes around the cache storage
  double scale = 0;
  std::optional<KvScaleTensors> kv_scales;
  const KvScaleTensors* fp8 = nullptr;  // set for fp8 caches
  // reference
  std::shared_ptr<const ShapedInputs> shaped;  // the `values` axis's inputs (shared with the reference)
  ModifierValues mods;
  ReferenceCache::Lease ref_lease;  // this case's hold on its reference (reference_cache.h)
  ReferenceCache::Matrix ref;       // [num_query_tokens, num_heads * out_head()], once judged
  // buffers and inputs
  uint16_t poison = 0;
  std::optional<GuardedArena> out;               // the host image of out (margins included)
  GuardedArrays arrays;                           // block_tables, context_lens, the ragged metadata, workspaces
  std::optional<DeviceArena> cache, snapshot;   // snapshot: the cache the reader must leave as it is
  std::optional<DeviceQkv> step, hist;          // the decode step's fused QKV; the context's fused KV
  device::Buffer d_out, d_slots, d_ws;
  // launch and judge
  bool writer_failed = false;
  kvh_attention_args a{};
  kvh_launch_config launch{};  // issue 23 (D): a.launch_config points here when the case runs a declared one
  std::optional<GuardedArena> out_after;
  int64_t cache_changed = -1;
  std::string arrays_misused;  // GuardedArrays::check_after after the reader's call

  const CacheLayout& L() const { return *layout; }
  /// Elements of one head of `out`: head_size, or kv_lora_rank for an MLA case (provider.h).
  int64_t out_head() const { return c.mla() ? c.kv_lora_rank : c.head_size; }
  int64_t outputs() const { return s.num_query_tokens * c.num_heads * out_head(); }
  /// Elements of the query's logical tensor [num_query_tokens, num_heads, head_size].
  int64_t query_elems() const { return s.num_query_tokens * c.num_heads * c.head_size; }
  /// Rows a reader can reach in `out` and the query: num_seqs * max_query_len (a padded
  /// per-request stride on the packed tensors); decode: num_seqs.
  int64_t reach_rows() const { return std::max<int64_t>(s.num_query_tokens, c.batch_size * s.max_query_len); }
  /// Bytes of `out`'s margins: 4096, or every row up to reach_rows() (in the back margin).
  int64_t out_margin() const {
    const int64_t past = (reach_rows() - s.num_query_tokens + 1) * c.num_heads * out_head() * 2;
    return std::max<int64_t>(4096, (past + 4095) / 4096 * 4096);
  }
};

// plan: the sequences (drawn first: a router sees the query lengths; recorded once the case runs).
void plan_sequences(DecodeCase& d) { d.s = make_sequences(d.c, d.rng); }

// plan: the reader, the case's own or the router's decision for it.
bool plan_route(DecodeCase& d) {
  const Case& c = d.c;
  d.reader = c.reader;
  if (c.router_policy.empty()) return true;
  try {
    routing::RouteInput in;
    in.num_seqs = c.batch_size;
    in.num_heads = c.num_heads;
    in.num_kv_heads = c.num_kv_heads;  // the vLLM unified launcher's grid
    in.num_query_tokens = d.s.num_query_tokens;
    in.max_query_len = d.s.max_query_len;
    in.head_size = c.head_size;
    in.cache_dtype = c.fp8_cache()               ? routing::CacheDtype::fp8
                     : c.int8_cache()            ? routing::CacheDtype::int8
                     : c.dtype == DType::F16 ? routing::CacheDtype::fp16
                                             : routing::CacheDtype::bf16;
    in.high_precision = c.high_precision;
    in.compute_units = target_compute_units(c.target);
    // What a stack's own dispatcher may read besides (a provider router, kvh_route_args).
    const KernelUse use = kernel_use(c, KVH_CACHE_NHD);
    in.block_size = use.block_size;
    in.dtype = use.dtype;
    in.cache_dtype_code = use.cache_dtype ? use.cache_dtype : use.dtype;
    in.kv_scales = use.kv_scales;
    in.max_context_len = *std::max_element(d.s.context_lens.begin(), d.s.context_lens.end());
    in.causal = c.causal;
    in.target = target_compute_units_of(c.target) && c.target.rfind("cus=", 0) != 0 ? c.target : "";
    in.kv_lora_rank = c.mla() ? c.kv_lora_rank : 0;  // issue 22 (D): the vllm-rocm-mla-* policies route MLA steps
    const routing::RouteDecision decision = routing::route(c.router_policy, in);
    d.reader = decision.reader;
    d.r.route_reason = decision.reason;
  } catch (const routing::RouterError& e) {  // a provider's router raised: the router crashed, not the case
    add_cause(d.r.v, component::kRouter, reason::kCrash, e.what(), true);
    return false;
  } catch (const std::invalid_argument& e) {
    return d.unsupported(e.what());
  }
  return true;
}

// plan: the kernels exist, a pipeline's writer writes the reader's cache format, and the
// writer can run the case. A router's reader of another format is a misroute.
bool plan_kernels(DecodeCase& d, const Registry& registry) {
  const Case& c = d.c;
  d.r.routed_to = d.reader;
  d.rd = registry.find(d.reader);
  if (!d.rd || d.rd->role != KVH_ROLE_READER || !d.rd->attention) {
    if (c.router_policy.empty()) return d.unsupported("no decode-attention reader named '" + d.reader + "'");
    // A router (a provider's, mapping its library's kernel names) chose a kernel the harness cannot run.
    add_cause(d.r.v, component::kRouter, reason::kMisroute,
              fmt::format("router {} sent the case to '{}' ({}): no decode-attention reader of that name is "
                          "registered (`kvharness info` lists them)",
                          c.router_policy, d.reader, d.r.route_reason));
    return false;
  }
  // issue 23 (D): a case file selects configurations the reader declares (launch_configs.h); one it
  // does not declare (a hand-made case) is refused by name rather than run as the default launch.
  if (!c.launch_config.empty() && !d.rd->launch_config(c.launch_config))
    return d.unsupported(fmt::format("{} declares no launch configuration '{}'", d.rd->label(), c.launch_config));
  if (c.kind != CaseKind::Pipeline) return true;
  d.wr = registry.find(c.writer);
  if (!d.wr || d.wr->role != KVH_ROLE_WRITER) return d.unsupported("no cache writer named '" + c.writer + "'");
  if (d.wr->cache_format != d.rd->cache_format) {
    const std::string why =
        fmt::format("writer {} writes the {} cache but reader {} reads {}", c.writer,
                    cache_format_name(d.wr->cache_format), d.reader, cache_format_name(d.rd->cache_format));
    if (c.router_policy.empty()) return d.unsupported(why);
    // Cannot be launched even with --launch-misrouted: the reader cannot read this writer's cache.
    add_cause(d.r.v, component::kRouter, reason::kMisroute,
              fmt::format("router {} sent the case to {} ({}): {}", c.router_policy, d.reader, d.r.route_reason, why));
    return false;
  }
  if (std::string why = d.wr->outside_capabilities(kernel_use(c, d.wr->cache_format)); !why.empty())
    return d.unsupported(why);
  return true;
}

// plan: a router that picks a kernel outside its capabilities, or other than the route the
// case file states (expect_routed_to, even to a kernel that could run it), has misrouted. A
// pipeline still runs its writer first: the writer's own damage is a separate cause that a
// misroute must not hide.
bool plan_capabilities(DecodeCase& d) {
  const Case& c = d.c;
  KernelUse reader_use = kernel_use(c, d.rd->cache_format);
  reader_use.modifiers = c.modifiers();
  reader_use.max_query_len = c.max_query_len();
  // An MLA case only an MLA reader can read, and an MLA reader reads nothing else (cache_setup.h).
  std::string why = cache_format_refusal(c, *d.rd);
  if (why.empty()) why = d.rd->outside_capabilities(reader_use);
  if (!why.empty()) {
    if (c.router_policy.empty()) return d.unsupported(why);
    d.misroute = fmt::format("router {} sent the case to {} ({}): {}", c.router_policy, d.reader, d.r.route_reason, why);
  } else if (!c.router_policy.empty() && !c.expect_routed_to.empty() && d.reader != c.expect_routed_to) {
    d.misroute = fmt::format("router {} sent the case to {} ({}); the case file expects {}", c.router_policy, d.reader,
                             d.r.route_reason, c.expect_routed_to);
  }
  if (!d.misroute.empty() && !d.wr && !d.options.launch_misrouted) {
    add_cause(d.r.v, component::kRouter, reason::kMisroute, d.misroute);
    return false;
  }
  return true;
}

// The softmax scale of a case: its own softmax_scale when set; an MLA case's model scale
// 1/sqrt(qk_nope_head_dim + qk_rope_head_dim) (DeepSeek's, provider.h: not 1/sqrt(R + P));
// else 1/sqrt(head_size), as every case before MLA.
double case_softmax_scale(const Case& c) {
  if (c.softmax_scale > 0) return c.softmax_scale;
  if (c.mla() && c.qk_nope_head_dim + c.qk_rope_head_dim > 0)
    return 1.0 / std::sqrt(double(c.qk_nope_head_dim + c.qk_rope_head_dim));
  return 1.0 / std::sqrt(double(c.head_size));
}

// An MLA case's settings the harness does not run, by name: the score modifiers DeepSeek-class
// models do not use (no half-support), the shaped `values` axis, and fp8 scales other than one
// per tensor (provider.h KVH_CACHE_MLA). "" when none.
std::string mla_refusal(const Case& c) {
  std::vector<std::string> mods;
  if (c.sliding_window > 0) mods.push_back("sliding_window");
  if (c.softcap > 0) mods.push_back("softcap");
  if (c.modifiers() & KVH_MOD_SINKS) mods.push_back("sinks");
  if (c.modifiers() & KVH_MOD_ALIBI) mods.push_back("alibi");
  if (!mods.empty())
    return fmt::format("MLA cases take no score modifier ({} set): DeepSeek-class models use none", fmt::join(mods, ", "));
  if (c.values != ValueDist::Normal) return "MLA cases take values = normal only";
  if (c.fp8_cache() && c.kv_scales != KvScales::Tensor && c.kv_scales != KvScales::None)
    return "MLA fp8 caches have one per-tensor scale (kv_scales = tensor)";
  return "";
}

// plan: the page tables of the drawn sequences, the cache layout and its margins, the fp8 scales.
bool plan_layout(DecodeCase& d) {
  const Case& c = d.c;
  d.r.context_lens = d.s.context_lens;
  if (c.ragged()) d.r.query_lens = d.s.query_lens;
  d.pt = make_page_tables(c, d.s);
  auto made = make_cache_layout(CacheFormat(d.rd->cache_format), c.layout, case_geometry(c, d.s.num_blocks),
                                c.padded_page_bytes, 0, c.degenerate_stride);
  if (!made.layout) return d.unsupported(made.reason);
  d.layout = std::move(made.layout);
  d.r.key_layout = d.L().key.str();
  d.r.value_layout = d.L().value.str();
  // Bytes: room for the pages of the out-of-range ids around the cache (block -1 in front,
  // num_blocks .. num_blocks + K behind), which hold NaN (pad_out_of_range_pages).
  const int64_t bs = d.L().block_stride;
  d.margin = std::max<int64_t>({64 * 1024, 4 * bs, 2 * (std::max<int64_t>(c.block_table_padding, 0) + 3) * bs});
  d.scale = case_softmax_scale(c);
  if (c.mla()) {
    if (const std::string why = mla_refusal(c); !why.empty()) return d.unsupported(why);
  }
  // fp8 caches: the dequant scales (a small guarded device buffer; host copies for the reference).
  try {
    d.kv_scales.emplace(c, d.s.num_blocks, d.r.data_seed);
  } catch (const device::AllocError& e) {
    add_cause(d.r.v, component::kHarness, reason::kHarnessError, e.what(), true);
    return false;
  }
  d.fp8 = c.quantized_cache() ? &*d.kv_scales : nullptr;  // fp8 or int8
  return true;
}

// reference: the key of a case's reference: its logical inputs (Case::logical_id), the drawn
// context and query lengths, and, for scales per block, token or slot, where each token lies
// (its scale depends on its block).
std::string reference_key(const DecodeCase& d) {
  const Case& c = d.c;
  uint64_t h = hash_seed(fmt::format("{}|{}", fmt::join(d.s.context_lens, ","), fmt::join(d.s.query_lens, ",")), 0);
  std::string key = fmt::format("{}|lens@{:016x}", c.logical_id(), h);
  if (c.kv_scales == KvScales::Block || c.kv_scales == KvScales::Token || c.kv_scales == KvScales::Slot)
    key += fmt::format("|bs{}|slots@{:016x}", c.block_size, hash_seed(fmt::format("{}", fmt::join(d.s.slots, ",")), 0));
  return key;
}

// reference: what the computation reads, owned by it (it may outlive this case: reference_cache.h).
ReferenceCache::Compute reference_compute(const DecodeCase& d) {
  std::shared_ptr<const KvScaleTensors> fp8;  // the host copies only: no device memory freed on a pool thread
  if (d.fp8) fp8 = std::make_shared<const KvScaleTensors>(d.fp8->host_only());
  return [c = d.c, s = d.s, shaped = d.shaped, fp8, mods = d.mods, scale = d.scale,
          seed = d.r.data_seed, elems = d.query_elems()](const std::atomic<bool>& cancel) {
    if (shaped)
      return reference_out(c, s, shaped->query.data(), shaped->key.data(), shaped->value.data(), seed, scale, mods,
                           cancel, fp8.get());
    const auto query = counter16(c.dtype, rng::kInput, rng::stream_key(seed, rng::kQueries), size_t(elems));
    if (c.mla()) return mla_reference_out(c, s, query.data(), seed, scale, cancel, fp8.get());
    return reference_out(c, s, query.data(), nullptr, nullptr, seed, scale, mods, cancel, fp8.get());
  };
}

// reference: on the host's cores while the device works, or the one an earlier case over the
// same logical inputs computed (reference_cache.h). The computation makes its own copies of
// the logical inputs from the same counter-based streams the device fills its buffers from.
// The `values` axis (value_dist.h) reshapes the inputs on the host first; the device then
// gets those. Then `out` [S, NH, HD], poisoned, in a guarded arena of its own.
void start_reference(DecodeCase& d) {
  const Case& c = d.c;
  if (c.values != ValueDist::Normal) {
    enter_phase(Phase::Inputs);
    d.shaped = std::make_shared<const ShapedInputs>(make_shaped_inputs(c, d.s, d.r.data_seed));
  }
  d.mods = modifier_values(c);
  const std::string key = reference_key(d);
  d.r.reference_id = fmt::format("{:016x}", hash_seed(key, 0));
  d.ref_lease = ReferenceCache::process().acquire(key, reference_compute(d));
  d.r.reference_reused = !d.ref_lease.started();
  d.poison = c.dtype == DType::F16 ? kPoisonF16 : kPoisonBF16;
  d.out.emplace(d.outputs(), 2, d.out_margin());
  std::fill_n(d.out->storage_as<uint16_t>(), d.outputs(), d.poison);
}

// buffers: the cache and its snapshot on the device, sentinels everywhere and old tokens (or
// the stale pattern) in every owned element. An attention case's reference writer overwrites
// every page whose tokens are all context: no old tokens there. A pipeline's writer under
// test must be judged against them.
void make_cache(DecodeCase& d) {
  const Case& c = d.c;
  const CacheLayout& L = d.L();
  enter_phase(Phase::AllocFill);
  // The pages the block tables name: all a sparse arena backs (a large cache's; issue 23).
  const std::vector<PageRange> touched =
      page_ranges(std::vector<int64_t>(d.pt.tables.begin(), d.pt.tables.end()), L.key.shape[0]);
  d.cache.emplace(L, d.margin, touched);
  d.snapshot.emplace(L, d.margin, touched);
  std::vector<uint8_t> overwritten;
  if (!d.wr && c.stale == Stale::Random && !c.quantized_cache()) {  // the only fill that skips them
    overwritten.assign(size_t(d.pt.num_pages), 0);
    std::vector<int64_t> tokens(size_t(d.pt.num_pages), 0);
    for (int64_t slot : d.s.slots)
      if (++tokens[size_t(slot / d.pt.page)] == d.pt.page) overwritten[size_t(slot / d.pt.page)] = 1;
  }
  d.cache->fill_cache(L, c.dtype, d.r.data_seed, c.stale, c.kv_cache_dtype, overwritten);
  device::settle();
}

// inputs: the query is a view into a fused QKV buffer of the step (its new tokens: one a
// sequence for decode, num_query_tokens for ragged queries); the context's K and V a fused KV
// buffer (no query columns: they would only cost memory), whose token stride is still
// 2 * num_kv_heads * head_size, not contiguous. Then `out` and slot_mapping.
void make_inputs(DecodeCase& d) {
  const Case& c = d.c;
  const int64_t NH = c.num_heads, NKV = c.num_kv_heads, HD = c.head_size;
  enter_phase(Phase::Inputs);
  // Rows up to reach_rows() exist (and are filled) so that a padded stride reads queries, not
  // another allocation; the reader's view is num_query_tokens rows.
  d.step.emplace(make_device_qkv(d.reach_rows(), NH, NKV, HD, c.dtype, d.r.data_seed, rng::kQueries, rng::kStepKv,
                                 rng::kStepKv));
  d.step->views.q.shape[0] = d.s.num_query_tokens;
  if (c.mla())  // the latent projection: kv_c and k_pe column views of one wider buffer
    d.hist.emplace(make_device_mla_kv(d.s.total_tokens, c.kv_lora_rank, c.qk_rope_head_dim, c.dtype, d.r.data_seed,
                                      rng::kKeys, rng::kValues));
  else
    d.hist.emplace(make_device_qkv(d.s.total_tokens, 0, NKV, HD, c.dtype, d.r.data_seed, rng::kFiller, rng::kKeys,
                                   rng::kValues));
  if (d.shaped) {
    enter_phase(Phase::Copy);
    set_qkv_from_host(*d.step, &d.shaped->query, nullptr, nullptr);
    set_qkv_from_host(*d.hist, nullptr, &d.shaped->key, &d.shaped->value);
  }
  enter_phase(Phase::Copy);
  d.d_out = device::Buffer(d.out->bytes().size());
  d.d_slots = device::Buffer(std::max<size_t>(d.s.slots.size(), 1) * 8);
  d.d_out.upload(d.out->bytes().data(), d.out->bytes().size());
  if (!d.s.slots.empty()) d.d_slots.upload(d.s.slots.data(), d.s.slots.size() * 8);
}

// The reference writer into `into`: a 16-bit cache's bits, or the reference codec's fp8 codes.
void reference_write(DecodeCase& d, DeviceArena& into) {
  const auto* slots = static_cast<const int64_t*>(d.d_slots.get());
  const DeviceQkv& h = *d.hist;
  if (d.c.mla()) {
    const device::Fp8WriteScales ws = d.fp8 ? d.fp8->write_scales(d.c) : device::Fp8WriteScales{};
    reference_write_mla_into(into, d.L(), h.buf.get(), h.views, slots, d.s.total_tokens, d.fp8 ? &ws : nullptr);
    return;
  }
  if (d.fp8)
    reference_write_fp8_into(into, d.L(), h.buf.get(), h.views.k, h.views.v, slots, d.s.total_tokens,
                             d.fp8->write_scales(d.c));
  else
    reference_write_into(into, d.L(), h.buf.get(), h.views.k, h.views.v, slots, d.s.total_tokens);
}

kvh_write_args case_writer_args(DecodeCase& d) {
  return writer_args(d.L(), d.cache->storage(), d.hist->views, d.hist->buf.get(), d.d_slots.get(), d.s.total_tokens,
                     d.c.dtype, cache_kvh_dtype(d.c), d.fp8);
}

int launch_case_writer(DecodeCase& d) {
  const kvh_write_args a = case_writer_args(d);
  return d.wr->write(&a, nullptr);
}

// launch (pipeline): the writer under test writes every context token and is judged first,
// against the reference writer's cache. The snapshot then holds what the reader must leave
// alone: the cache as the writer left it (the reference's, equal to it when the writer passed).
bool write_context_under_test(DecodeCase& d) {
  enter_phase(Phase::AllocFill);
  d.snapshot->copy_from(*d.cache);  // the reference writer's starting point
  enter_phase(Phase::Reference);
  reference_write(d, *d.snapshot);
  device::settle();  // the harness's device work is done: an error from here on is the writer's
  d.running(component::kWriter);
  enter_phase(Phase::Launch);
  if (const int rc = launch_case_writer(d); rc != 0) {
    const LaunchFailure f = launch_failure(*d.wr, rc);
    if (f.status == Status::Unsupported) {  // declined at call time: as outside its declaration (plan_kernels),
      device::synchronize();                // unless it wrote outside its views before declining
      d.running(component::kHarness);
      enter_phase(Phase::Check);
      const Verdict wv = check_writer_on_device(d.L(), d.c.dtype, d.r.data_seed, *d.snapshot, *d.cache, d.c.stale,
                                                d.c.kv_cache_dtype);
      if (wv.reason == reason::kOutOfView) {
        add_cause(d.r.v, component::kWriter, reason::kOutOfView,
                  "writer: " + wv.detail + "; then it refused the case: " + f.detail);
        return false;
      }
      if (d.misroute.empty()) return d.unsupported(f.detail);
      add_cause(d.r.v, component::kRouter, reason::kMisroute, d.misroute + "; and " + f.detail);  // keep the router's
      return false;
    }
    add_cause(d.r.v, component::kWriter, reason::kLaunchError, f.detail, f.status == Status::Crash);
    if (!d.misroute.empty()) add_cause(d.r.v, component::kRouter, reason::kMisroute, d.misroute);
    return false;
  }
  device::synchronize();
  d.running(component::kHarness);
  enter_phase(Phase::Check);
  const Verdict wv = check_writer_on_device(d.L(), d.c.dtype, d.r.data_seed, *d.snapshot, *d.cache, d.c.stale,
                                            d.c.kv_cache_dtype);
  for (auto& cause : wv.causes) {
    d.writer_failed = true;
    add_cause(d.r.v, cause.component.c_str(), cause.reason.c_str(), "writer: " + cause.detail, cause.crash);
  }
  enter_phase(Phase::Check);
  if (d.writer_failed) d.snapshot->copy_from(*d.cache);
  return true;
}

// The context in the cache: the writer under test (pipeline) or the reference writer
// (attention). Then a misroute is recorded; the reader runs only with --launch-misrouted.
bool write_context(DecodeCase& d) {
  if (d.wr) {
    if (!write_context_under_test(d)) return false;
  } else {
    enter_phase(Phase::Reference);
    reference_write(d, *d.cache);
    enter_phase(Phase::AllocFill);
    d.snapshot->copy_from(*d.cache);
  }
  if (d.misroute.empty()) return true;
  add_cause(d.r.v, component::kRouter, reason::kMisroute, d.misroute);
  return d.options.launch_misrouted;
}

// buffers: the pages just outside the cache (page -1, pages num_pages .. num_pages + K; the
// layout's pages are the kernel's) hold NaN (an fp8 cache: its format's NaN code): a reader
// that brings a padding entry's page into its arithmetic writes NaN.
void pad_out_of_range_pages(DecodeCase& d) {
  const Case& c = d.c;
  enter_phase(Phase::AllocFill);
  const int64_t past = std::max<int64_t>(c.block_table_padding, 0) + 1;
  const uint16_t nan_page = c.quantized_cache() ? padding_page_code8(c.kv_cache_dtype) : padding_page_bits(c.dtype);
  for (DeviceArena* arena : {&*d.cache, &*d.snapshot}) {
    arena->fill_pages(d.L(), -1, 1, nan_page);
    arena->fill_pages(d.L(), d.pt.num_pages, past, nan_page);
  }
}

// buffers: the arrays beside `out` and the cache, each in its own guarded allocation
// (guarded_array.h). What a read past one gets: block_tables' margins the padding id (an
// out-of-range page, which holds NaN), seq_lens' 1 and query_start_loc's num_query_tokens + 1
// (a phantom sequence of one query token, written past `out`); context_lens keeps the
// sentinels of ABI 2.
void make_metadata(DecodeCase& d) {
  const Case& c = d.c;
  const int64_t S = c.batch_size;
  kvh_attention_args& a = d.a;
  GuardedArrays& g = d.arrays;
  // A kernel that indexes per-sequence arrays by query row reads up to num_query_tokens rows: the
  // margins reach that far, so that it reads margin values, never another allocation.
  const int64_t rows = d.s.num_query_tokens + 1;
  a.block_tables = g.add_i32("block_tables", d.pt.tables, d.pt.padding_id, {S, d.pt.max_pages}, rows * d.pt.max_pages);
  a.context_lens = g.add_i32("context_lens", d.s.context_lens, std::nullopt, {}, rows);
  a.seq_lens = g.add_i32("seq_lens", d.s.context_lens, 1, {}, rows);
  a.query_start_loc = g.add_i32("query_start_loc", d.s.query_start_loc, int32_t(d.s.num_query_tokens + 1), {}, rows);
  a.max_query_len = int32_t(d.s.max_query_len);
  a.num_query_tokens = int32_t(d.s.num_query_tokens);
  a.causal = c.causal ? 1 : 0;
  a.k_scale_tensor = g.add_f32("k_scale_tensor", {a.k_scale});
  a.v_scale_tensor = g.add_f32("v_scale_tensor", {a.v_scale});
  a.sinks = g.add_f32("sinks", d.mods.sinks);
  a.alibi_slopes = g.add_f32("alibi_slopes", d.mods.alibi_slopes);
}

// A reader that declined the case at call time (KVH_UNSUPPORTED: its launch, workspace_bytes or
// workspaces) is judged as one outside its declaration (plan_capabilities): UNSUPPORTED when the
// case names it, misroute when a router picked it. A writer's failure found before stays the verdict.
void reader_refused(DecodeCase& d, const std::string& detail) {
  Verdict& v = d.r.v;
  if (!d.c.router_policy.empty() && d.misroute.empty()) {
    add_cause(v, component::kRouter, reason::kMisroute,
              fmt::format("router {} sent the case to {} ({}): {}", d.c.router_policy, d.reader, d.r.route_reason,
                          detail));
  } else if (v.causes.empty()) {
    d.unsupported(detail);
  } else {  // a misroute launched anyway, or the pipeline writer's failure: the verdict stands, noted
    v.detail += "; " + detail;
    v.causes.front().detail += "; " + detail;
  }
}

// buffers: a reader's typed workspaces (kvh_kernel_desc.workspaces), each a guarded array of
// its own whose elements start as NaN (integer types: 0x7FC0DEAD words); only their margins
// are the harness's. Returns false (a CRASH of the reader's provider) when the declaration fails.
bool make_typed_workspaces(DecodeCase& d) {
  std::vector<kvh_workspace_spec> specs;
  try {
    specs = d.rd->workspaces(&d.a);
  } catch (const KernelRefused& e) {
    reader_refused(d, refusal_detail(*d.rd, e.what()));
    return false;
  } catch (const std::runtime_error& e) {
    add_cause(d.r.v, component::kReader, reason::kLaunchError, e.what(), true);
    return false;
  }
  enter_phase(Phase::AllocFill);
  for (const kvh_workspace_spec& w : specs) {
    const int64_t eb = w.dtype == KVH_DT_I64 ? 8 : w.dtype == KVH_DT_F16 || w.dtype == KVH_DT_BF16 ? 2 : 4;
    const std::vector<int64_t> shape(w.shape, w.shape + w.ndim);
    double bytes = double(eb);
    for (int64_t n : shape) bytes *= double(n);
    // The reader's request, not the harness's need: one it cannot be given is the reader's failure.
    if (bytes > double(kMaxWorkspaceBytes)) {
      add_cause(d.r.v, component::kReader, reason::kLaunchError,
                fmt::format("typed workspace '{}' of {:.3g} GiB asked for; at most {} GiB is given", w.name,
                            bytes / double(int64_t(1) << 30), kMaxWorkspaceBytes >> 30));
      return false;
    }
    try {
      GuardedArray& ws = d.arrays.add(std::string("workspace ") + w.name, shape, kvh_dtype(w.dtype), eb,
                                      GuardedArray::Access::Write);
      const uint64_t nan = w.dtype == KVH_DT_F16 ? 0x7E5A : w.dtype == KVH_DT_BF16 ? 0x7FDA
                           : w.dtype == KVH_DT_F32 ? 0x7FC0DEADu : 0x7FC0DEAD7FC0DEADull;
      ws.fill_elements(&nan);
      ws.upload();
      d.a.workspaces[d.a.num_workspaces++] = ws.tensor();
    } catch (const std::bad_alloc&) {
      add_cause(d.r.v, component::kReader, reason::kLaunchError,
                fmt::format("typed workspace '{}' of {:.3g} GiB could not be allocated on the host", w.name,
                            bytes / double(int64_t(1) << 30)));
      return false;
    }
  }
  return true;
}

// buffers: the plan of a reader with a planner (provider.h kvh_plan_fn): the planner gets the
// host seq_lens / query_start_loc and the case's compute units; each tensor it builds goes
// into a read-only guarded array of its own ("plan NAME": a kernel that writes it is FAIL
// out_of_view_write naming it). KVH_UNSUPPORTED is the reader's refusal; KVH_RAISED or a
// malformed plan a CRASH of component "planner". Returns false when the case has its verdict.
bool make_plan(DecodeCase& d) {
  const Case& c = d.c;
  kvh_plan_args pa{};
  pa.num_seqs = c.batch_size;
  pa.num_heads = c.num_heads;
  pa.num_kv_heads = c.num_kv_heads;
  pa.head_size = c.head_size;
  pa.block_size = d.pt.page;
  pa.compute_units = target_compute_units(c.target);
  pa.max_query_len = int32_t(d.s.max_query_len);
  pa.num_query_tokens = int32_t(d.s.num_query_tokens);
  pa.dtype = to_kvh(c.dtype);
  pa.cache_dtype = cache_kvh_dtype(c);
  pa.seq_lens = d.s.context_lens.data();
  pa.query_start_loc = d.s.query_start_loc.data();
  kvh_plan plan;
  d.running(component::kPlanner);
  try {
    plan = d.rd->plan(&pa);
  } catch (const KernelRefused& e) {
    d.running(component::kHarness);
    reader_refused(d, refusal_detail(*d.rd, e.what()));
    return false;
  } catch (const PlannerFailed& e) {
    d.running(component::kHarness);
    add_cause(d.r.v, component::kPlanner, reason::kLaunchError, fmt::format("{}'s {}", d.rd->name, e.what()), true);
    return false;
  }
  d.running(component::kHarness);
  enter_phase(Phase::AllocFill);
  for (int32_t i = 0; i < plan.num_tensors; ++i) {
    const kvh_workspace_spec& w = plan.specs[i];
    const int64_t eb = w.dtype == KVH_DT_I64 ? 8 : w.dtype == KVH_DT_F16 || w.dtype == KVH_DT_BF16 ? 2 : 4;
    const std::vector<int64_t> shape(w.shape, w.shape + w.ndim);
    GuardedArray& g = d.arrays.add(std::string("plan ") + w.name, shape, kvh_dtype(w.dtype), eb, GuardedArray::Access::Read);
    if (g.elems() > 0) std::memcpy(g.host_as<uint8_t>(), plan.data[i], size_t(g.elems() * eb));
    g.upload();
    d.a.plan[i] = g.tensor();
  }
  d.a.num_plan_tensors = plan.num_tensors;
  return true;
}

// buffers: the reader's arguments (kvh_attention_args, include/kvharness/provider.h) over the
// guarded buffers, and its split-K workspace full of NaN: a reduce that reads unwritten
// partials gets NaN.
bool make_reader_args(DecodeCase& d) {
  const Case& c = d.c;
  const CacheLayout& L = d.L();
  const int64_t T = d.s.num_query_tokens, NH = c.num_heads, OH = d.out_head();
  kvh_attention_args& a = d.a;
  const kvh_dtype dt = to_kvh(c.dtype);
  a.out = to_tensor(StridedView{{T, NH, OH}, {NH * OH, OH, 1}, 0}, static_cast<uint8_t*>(d.d_out.get()) + d.out_margin(), 2, dt);
  a.query = to_tensor(kernel_view(d.step->views.q, L), d.step->buf.get(), 2, dt);
  // MLA: key_cache and value_cache are the same latent view [num_blocks, block_size, R + P].
  a.key_cache = to_tensor(c.mla() ? L.latent : L.key, d.cache->storage(), L.geo.elem_bytes, cache_kvh_dtype(c));
  a.value_cache = to_tensor(c.mla() ? L.latent : L.value, d.cache->storage(), L.geo.elem_bytes, cache_kvh_dtype(c));
  a.block_size = d.pt.page;
  a.cache_block_size = d.pt.pages_per_block > 1 ? c.block_size : 0;
  a.max_context_len = *std::max_element(d.s.context_lens.begin(), d.s.context_lens.end());
  a.scale = float(d.scale);
  a.k_scale = a.v_scale = 1.f;  // an fp8 cache without scale tensors: the scale is 1
  if (d.fp8) {
    a.kv_scales = d.fp8->granularity();
    a.k_scales = d.fp8->k_tensor();
    a.v_scales = d.fp8->v_tensor();
  }
  a.partition_size = c.partition_size;
  d.launch = launch_config_of(c, *d.rd);  // issue 23 (D)
  a.launch_config = d.launch.name ? &d.launch : nullptr;
  a.sliding_window = int32_t(c.sliding_window);
  a.softcap = float(c.softcap);
  a.head_offset = int32_t(c.tp_rank * NH);
  make_metadata(d);
  if (d.rd->plan && !make_plan(d)) return false;
  if (d.rd->workspaces) return make_typed_workspaces(d);
  if (!d.rd->workspace_bytes) return true;
  uint64_t ws = 0;
  try {
    ws = d.rd->workspace_bytes(&a);
  } catch (const KernelRefused& e) {
    reader_refused(d, refusal_detail(*d.rd, e.what()));
    return false;
  }
  if (!ws) return true;
  enter_phase(Phase::AllocFill);
  d.d_ws = device::Buffer(ws);
  std::vector<uint32_t> nan(ws / 4 + 1, 0x7FC0DEADu);
  d.d_ws.upload(nan.data(), ws);
  a.workspace = d.d_ws.get();
  a.workspace_bytes = ws;
  return true;
}

// Everything the reader could have touched, back to the host: `out` with its margins, the
// metadata arrays' guards, and the cache's first changed byte.
void copy_back(DecodeCase& d) {
  enter_phase(Phase::Copy);
  d.out_after.emplace(d.outputs(), 2, d.out_margin(), GuardedArena::Uninitialized{});
  d.d_out.download(d.out_after->bytes().data(), d.out_after->bytes().size());
  enter_phase(Phase::Check);
  d.cache_changed = d.cache->first_difference(*d.snapshot);
  d.arrays_misused = d.arrays.check_after();
}

void judge_out_of_view(DecodeCase& d, const std::string& numbers);

// A reader that declined at call time is judged as by its declaration (reader_refused), unless it
// wrote outside `out`, into its metadata or into the cache before declining: a refusal must not hide
// damage the checks would see. (`out` itself, written or not, is its own business.)
void reader_refused_after_damage_check(DecodeCase& d, const std::string& detail) {
  const size_t causes = d.r.v.causes.size();
  judge_out_of_view(d, "then it refused the case: " + detail);
  if (d.r.v.causes.size() == causes) reader_refused(d, detail);
}

// launch: the reader under test, then everything it could have touched back to the host:
// `out`, block_tables and context_lens with their margins, and the cache's first changed byte.
bool launch_reader(DecodeCase& d) {
  device::settle();  // the harness's device work is done: an error from here on is the reader's
  d.running(component::kReader);
  enter_phase(Phase::Launch);
  if (const int rc = d.rd->attention(&d.a, nullptr); rc != 0) {
    const LaunchFailure f = launch_failure(*d.rd, rc);
    if (f.status == Status::Unsupported) {
      device::synchronize();
      d.running(component::kHarness);
      copy_back(d);
      reader_refused_after_damage_check(d, f.detail);
      return false;
    }
    add_cause(d.r.v, component::kReader, reason::kLaunchError, f.detail, f.status == Status::Crash);
    return false;
  }
  device::synchronize();
  d.running(component::kHarness);
  copy_back(d);
  return true;
}

// Query row `row` of `out` as a verdict names it: "seq S" (decode), "seq S token J" (ragged:
// token J of the sequence's new tokens).
std::string row_name(const DecodeCase& d, int64_t row) {
  if (!d.c.ragged()) return fmt::format("seq {}", row);
  const auto& loc = d.s.query_start_loc;
  const int64_t seq = std::upper_bound(loc.begin(), loc.end(), int32_t(row)) - loc.begin() - 1;
  return fmt::format("seq {} token {}", seq, row - loc[size_t(seq)]);
}

// What `out` holds against the reference: counts of each failure class, the first of each
// (flat index into [num_query_tokens, NH, HD]), the worst element and the largest errors
// (absolute, relative, and in output ulps: output_ulp of tolerance.h).
struct OutputStats {
  int64_t unwritten = 0, nonfinite = 0, beyond = 0, worst = -1, first_nonfinite = -1, first_unwritten = -1,
          first_beyond = -1;
  double max_abs = 0, max_rel = 0, max_ulp = 0;
  Tolerance tol;
  std::string worst_text, numbers;  // the worst element; the counts and the worst, for every cause
};

// The largest |ref| of each (query row, head) [num_query_tokens * NH]: the derived bound's floor
// (tolerance.h kDerivedFloorUlps). Empty unless the case asks for the derived tolerance.
std::vector<double> head_maxima(const DecodeCase& d) {
  if (!d.c.derived_tolerance) return {};
  const int64_t NH = d.c.num_heads, HD = d.out_head(), rows = d.outputs() / (NH * HD);
  std::vector<double> m(size_t(rows * NH), 0.0);
  for (int64_t i = 0; i < rows * NH * HD; ++i)
    m[size_t(i / HD)] = std::max(m[size_t(i / HD)], std::fabs((*d.ref)(i / (NH * HD), i % (NH * HD))));
  return m;
}

OutputStats compare_out(const DecodeCase& d) {
  const Case& c = d.c;
  const int64_t NH = c.num_heads, HD = d.out_head(), n = d.outputs();
  OutputStats st;
  st.tol = attention_tolerance(c.dtype);
  st.tol.atol *= value_scale(c);  // large values: the tolerance relative to V's magnitude (value_dist.h)
  const std::vector<double> head_max = head_maxima(d);
  const uint16_t* o = d.out_after->storage_as<uint16_t>();
  for (int64_t i = 0; i < n; ++i) {
    if (o[i] == d.poison) {
      if (st.unwritten++ == 0) st.first_unwritten = i;
      continue;
    }
    const double got = decode16(c.dtype, o[i]), want = (*d.ref)(i / (NH * HD), i % (NH * HD));
    if (!std::isfinite(got)) {
      if (st.nonfinite++ == 0) st.first_nonfinite = i;
      continue;
    }
    const double err = std::fabs(got - want), ulp = output_ulp(c.dtype, want);
    bool beyond = err > st.tol.atol + st.tol.rtol * std::fabs(want);
    if (!head_max.empty())  // issue 23 (B long contexts): the derived bound, inside the dtype's
      beyond |= err > kDerivedUlps * ulp + kDerivedFloorUlps * output_ulp(c.dtype, head_max[size_t(i / HD)]);
    if (beyond && st.beyond++ == 0) st.first_beyond = i;
    if (err > st.max_abs || st.worst < 0) st.max_abs = err, st.worst = i;
    st.max_rel = std::max(st.max_rel, err / std::max(std::fabs(want), 1e-6));
    st.max_ulp = std::max(st.max_ulp, err / ulp);
  }
  const std::string bound = head_max.empty() ? fmt::format("atol {}, rtol {}", st.tol.atol, st.tol.rtol)
                                             : fmt::format("atol {}, rtol {}, and {} ulps + {} ulp of the head's "
                                                           "largest output",
                                                           st.tol.atol, st.tol.rtol, kDerivedUlps, kDerivedFloorUlps);
  if (st.worst >= 0)
    st.worst_text = fmt::format("worst element {} head {} dim {}: got {:.6g}, want {:.6g} ({}); max {:.3g} output ulps",
                                row_name(d, st.worst / (NH * HD)), st.worst % (NH * HD) / HD, st.worst % HD,
                                decode16(c.dtype, o[st.worst]), (*d.ref)(st.worst / (NH * HD), st.worst % (NH * HD)),
                                bound, st.max_ulp);
  const std::string counts = fmt::format("{} unwritten, {} NaN/Inf, {} beyond tolerance of {} outputs", st.unwritten,
                                         st.nonfinite, st.beyond, n);
  st.numbers = counts + (st.worst_text.empty() ? "" : "; " + st.worst_text);
  return st;
}

// judge: writing outside `out`, into block_tables / context_lens, or into the cache is the
// reader's own fault whatever the cache held.
void judge_out_of_view(DecodeCase& d, const std::string& numbers) {
  const GuardedArena &out = *d.out, &after = *d.out_after;
  const size_t m = size_t(out.margin_bytes()), tail = m + size_t(d.outputs()) * 2;
  const bool front = std::memcmp(after.bytes().data(), out.bytes().data(), m) != 0;
  size_t past = 0;  // the first changed byte after `out`, counted from 1
  while (past < m && after.bytes()[tail + past] == out.bytes()[tail + past]) ++past;
  if (front || past < m) {
    const int64_t row_bytes = d.c.num_heads * d.out_head() * 2;
    const std::string where = front ? "before its start"
                                    : fmt::format("byte {} after its end: query row {}, out has {} rows",
                                                  past + 1, d.s.num_query_tokens + int64_t(past) / row_bytes,
                                                  d.s.num_query_tokens);
    add_cause(d.r.v, component::kReader, reason::kOutOfView,
              fmt::format("the reader wrote outside `out` (arena margin, {}); {}", where, numbers));
  } else if (!d.arrays_misused.empty()) {
    add_cause(d.r.v, component::kReader, reason::kOutOfView, d.arrays_misused + "; " + numbers);
  } else if (d.cache_changed >= 0) {
    add_cause(d.r.v, component::kReader, reason::kOutOfView,
              fmt::format("the reader wrote into the KV cache (first changed byte: arena byte {}, {}); {}",
                          d.cache_changed, describe_arena_byte(d.L(), d.margin, d.cache_changed), numbers));
  }
}

// judge: the reader's checks, strongest first, once the reference is done. A misrouted
// launch's damage belongs to the router's cause; after a failed writer, wrong numbers are
// the writer's damage, not a verdict on the reader. Returns true for a PASS.
bool judge(DecodeCase& d) {
  const Case& c = d.c;
  enter_phase(Phase::Reference);
  d.ref = d.ref_lease.get();
  if (d.ref_lease.started()) d.r.reference_ms = d.ref_lease.compute_ms();
  enter_phase(Phase::Check);
  const OutputStats st = compare_out(d);
  Verdict& v = d.r.v;
  v.max_abs_err = st.max_abs;
  v.max_rel_err = st.max_rel;
  if (st.worst >= 0) v.max_ulp_err = st.max_ulp;
  v.bad_elements = st.unwritten + st.nonfinite + st.beyond;
  if (!d.misroute.empty()) {  // launched anyway
    v.causes.back().detail += ". Launched anyway: " + st.numbers;
    if (v.causes.size() == 1) v.detail = v.causes.back().detail;
    return false;
  }
  judge_out_of_view(d, st.numbers);
  const int64_t NH = c.num_heads, HD = d.out_head();
  auto where = [&](int64_t i) { return fmt::format("{} head {} dim {}", row_name(d, i / (NH * HD)), i % (NH * HD) / HD, i % HD); };
  if (st.unwritten)
    add_cause(v, component::kReader, reason::kUnwritten, "first unwritten at " + where(st.first_unwritten) + "; " + st.numbers);
  if (d.writer_failed) {
    if (st.nonfinite || st.beyond) v.causes.front().detail += ". The reader's output downstream: " + st.numbers;
    if (v.causes.size() >= 1) v.detail = v.causes.front().detail;
    return false;
  }
  if (st.nonfinite)
    add_cause(v, component::kReader, reason::kNanOrInf, "first NaN/Inf at " + where(st.first_nonfinite) + "; " + st.numbers);
  else if (st.beyond)
    add_cause(v, component::kReader, reason::kMismatch,
              fmt::format("first beyond tolerance at {}: got {:.6g}, want {:.6g}; {}", where(st.first_beyond),
                          decode16(c.dtype, d.out_after->storage_as<uint16_t>()[st.first_beyond]),
                          (*d.ref)(st.first_beyond / (NH * HD), st.first_beyond % (NH * HD)), st.numbers));
  if (!v.causes.empty()) return false;
  v.detail = st.worst_text;
  return true;
}

// timing: kernel_us (the reader) and writer_us, after the verdict's launches and downloads.
// Relaunching is idempotent: the reader overwrites out and its workspace, the writer
// rewrites the same slots.
void time_kernels(DecodeCase& d) {
  if (!timing_enabled(d.options.timing)) return;
  enter_phase(Phase::Timing);
  d.running(component::kReader);
  // The budget: a share of the case's wall time so far, split between its kernels.
  const double budget_us = d.options.timing.budget * d.elapsed_us() / (d.wr ? 2 : 1);
  const KernelTime t = time_case_kernel(
      d.options.timing, *d.rd, &d.a, [&] { return d.rd->attention(&d.a, nullptr); }, &d.r.v.detail, budget_us);
  d.r.v.kernel_us = t.kernel_us;
  d.r.v.host_us = t.host_us;
  d.r.v.timing_method = t.method;
  d.r.v.timing_reps = t.reps;
  d.running(component::kWriter);
  if (!d.wr) return;
  const kvh_write_args wa = case_writer_args(d);
  d.r.v.writer_us =
      time_case_kernel(d.options.timing, *d.wr, &wa, [&] { return launch_case_writer(d); }, &d.r.v.detail, budget_us)
          .kernel_us;
}

// The stages from the cache on, on the device; a device error is charged to d.on_device.
void run_on_device(DecodeCase& d) {
  make_cache(d);
  make_inputs(d);
  if (!write_context(d)) return;
  pad_out_of_range_pages(d);
  if (!make_reader_args(d) || !launch_reader(d)) return;
  if (judge(d)) time_kernels(d);
}

}  // namespace

int64_t target_compute_units(const std::string& target) {
  if (target.empty()) return device::info().compute_units;
  if (target.rfind("cus=", 0) == 0) {  // the case model's one cus=N parser (cases/route_boundaries.h)
    if (const std::optional<int64_t> n = target_compute_units_of(target)) return *n;
    throw std::invalid_argument("target '" + target + "': expected cus=N with N >= 1");
  }
  return routing::compute_units_of(target);
}

CaseResult run_decode_case(const Case& c, const Registry& registry, const DecodeOptions& options) {
  DecodeCase d(c, options);
  plan_sequences(d);
  if (!plan_route(d) || !plan_kernels(d, registry) || !plan_capabilities(d) || !plan_layout(d)) return d.r;
  start_reference(d);
  run_device_stages(d, [&] {
    try {
      run_on_device(d);
    } catch (const std::invalid_argument& e) {  // the reference's (rethrown by judge), or a fill's own check
      add_cause(d.r.v, component::kHarness, reason::kHarnessError, std::string("reference: ") + e.what(), true);
    }
  });
  return d.r;
}

}  // namespace kvh
