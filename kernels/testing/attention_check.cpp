#include "attention_check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>

#include "attention.h"
#include "kvh_runtime.h"
#include "registry/registry.h"

namespace kvh::testing {

namespace {

constexpr uint16_t kPoison = 0x7FFF;  // NaN in fp16 and in bf16
constexpr int64_t kMargin = 1 << 14;  // NaN elements before and after the cache storage (planted
                                      // readers that mis-read a stride land here, not past the buffer)

uint16_t to_bits(kvh_dtype dt, float f) { return dt == KVH_DT_F16 ? to_fp16(f).bits : to_bf16(f).bits; }
float from_bits(kvh_dtype dt, uint16_t b) { return dt == KVH_DT_F16 ? to_float(fp16_t{b}) : to_float(bf16_t{b}); }

kvh_tensor tensor(void* data, kvh_dtype dt, std::vector<int64_t> shape, std::vector<int64_t> stride) {
  kvh_tensor t{};
  t.data = data;
  t.dtype = dt;
  t.ndim = int32_t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i], t.stride[i] = stride[i];
  return t;
}

struct Built {
  AttentionArgsFixture fx;
  reference::DecodeAttentionInput ref;
};

// Everything of a case except the workspace, which depends on the reader.
Built build(const AttentionCase& c) {
  const kvh_dtype dt = c.dtype;
  const int64_t S = int64_t(c.context_lens.size()), H = c.num_heads, KVH = c.num_kv_heads, D = c.head_size,
                bs = c.block_size, x = 8;
  // kernel_pages: bs is the manager's block, kb the kernel's page (r pages a block).
  const int64_t kb = c.kernel_block_size > 0 ? c.kernel_block_size : bs, r = bs / kb;
  if (bs % kb != 0) throw std::invalid_argument("attention case: kernel_block_size does not divide block_size");
  if (S == 0 || H % KVH != 0) throw std::invalid_argument("attention case: no sequences or H % KVH != 0");
  std::mt19937_64 rng(c.seed);
  std::uniform_real_distribution<float> qk(-2.f, 2.f), vdist(-1.f, 1.f);
  auto rounded = [&](float f) { return double(from_bits(dt, to_bits(dt, f))); };

  Built b;
  auto& ref = b.ref;
  ref.num_heads = H, ref.num_kv_heads = KVH, ref.head_size = D, ref.scale = 1.0 / std::sqrt(double(D));
  ref.query = reference::RowMatrix(S, H * D);
  for (int64_t i = 0; i < ref.query.size(); ++i) ref.query.data()[i] = rounded(qk(rng));
  const double sink_factor = 150.0 / ref.scale;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t T = c.context_lens[size_t(s)];
    reference::RowMatrix k(T, KVH * D), v(T, KVH * D);
    for (int64_t i = 0; i < k.size(); ++i) k.data()[i] = rounded(qk(rng)), v.data()[i] = rounded(vdist(rng));
    if (c.sink_token >= 0 && c.sink_token < T)
      for (int64_t kv = 0; kv < KVH; ++kv) {
        const auto q = ref.query.row(s).segment(kv * (H / KVH) * D, D);
        const double factor = sink_factor / q.squaredNorm();
        for (int64_t d = 0; d < D; ++d) k(c.sink_token, kv * D + d) = rounded(float(factor * q(d)));
      }
    ref.keys.push_back(std::move(k));
    ref.values.push_back(std::move(v));
  }

  // Block tables: random distinct physical blocks; entries past a sequence's
  // blocks point at the trap block, whose pages are all NaN.
  const int64_t max_ctx = *std::max_element(c.context_lens.begin(), c.context_lens.end());
  const int64_t max_blocks = (max_ctx + bs - 1) / bs + 1;
  int64_t used = 0;
  for (int n : c.context_lens) used += (n + bs - 1) / bs;
  const int64_t num_blocks = used + 3;
  std::vector<int32_t> ids(static_cast<size_t>(num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  const int32_t trap = ids.back();
  auto& fx = b.fx;
  fx.block_tables.assign(size_t(S * max_blocks), trap);
  fx.context_lens.assign(c.context_lens.begin(), c.context_lens.end());
  size_t next = 0;
  for (int64_t s = 0; s < S; ++s)
    for (int64_t j = 0; j < (c.context_lens[size_t(s)] + bs - 1) / bs; ++j) fx.block_tables[size_t(s * max_blocks + j)] = ids[next++];
  // Kernel pages: manager block m is pages m*r .. m*r + r-1; the tables the reader gets are in pages.
  const int64_t max_pages = max_blocks * r;
  if (r > 1) {
    std::vector<int32_t> pages(size_t(S * max_pages));
    for (int64_t s = 0; s < S; ++s)
      for (int64_t j = 0; j < max_pages; ++j)
        pages[size_t(s * max_pages + j)] = int32_t(fx.block_tables[size_t(s * max_blocks + j / r)] * r + j % r);
    fx.block_tables = std::move(pages);
  }

  const CacheFormat format = CacheFormat(c.format);  // the values agree (layout.h)
  CacheGeometry geo;
  geo.num_blocks = num_blocks * r, geo.block_size = kb, geo.num_kv_heads = KVH, geo.head_size = D, geo.x = x;
  LayoutOrReason lr = make_cache_layout(format, c.scheme, geo, 0, 0, c.degenerate_stride);
  if (!lr.layout) throw std::invalid_argument("attention case: " + lr.reason);
  const CacheLayout& L = *lr.layout;
  fx.storage.assign(size_t(L.storage_elems + 2 * kMargin), kPoison);
  uint16_t* base = fx.storage.data() + kMargin;
  for (int64_t s = 0; s < S; ++s)
    for (int64_t t = 0; t < c.context_lens[size_t(s)]; ++t) {
      const int64_t blk = fx.block_tables[size_t(s * max_pages + t / kb)], off = t % kb;
      for (int64_t kv = 0; kv < KVH; ++kv)
        for (int64_t d = 0; d < D; ++d) {
          int64_t ko = 0, vo = 0;
          switch (format) {
            case CacheFormat::Flash: ko = view_offset(L.key, {blk, off, kv, d}), vo = view_offset(L.value, {blk, off, kv, d}); break;
            case CacheFormat::Hnd: ko = view_offset(L.key, {blk, kv, off, d}), vo = view_offset(L.value, {blk, kv, off, d}); break;
            case CacheFormat::PaV1:
              ko = view_offset(L.key, {blk, kv, d / x, off, d % x}), vo = view_offset(L.value, {blk, kv, d, off});
              break;
            case CacheFormat::Shuffle:
              ko = view_offset(L.key, {blk, kv, d / x, off, d % x}), vo = view_offset(L.value, {blk, kv, off / x, d, off % x});
              break;
          }
          base[ko] = to_bits(dt, float(ref.keys[size_t(s)](t, kv * D + d)));
          base[vo] = to_bits(dt, float(ref.values[size_t(s)](t, kv * D + d)));
        }
    }

  // Query: a view of a fused QKV buffer [num_seqs, (H + 2*KVH) * D]; K and V thirds are NaN.
  const int64_t qkv_row = (H + 2 * KVH) * D;
  fx.query.assign(size_t(S * qkv_row), kPoison);
  for (int64_t s = 0; s < S; ++s)
    for (int64_t i = 0; i < H * D; ++i) fx.query[size_t(s * qkv_row + i)] = to_bits(dt, float(ref.query(s, i)));
  const int64_t out_row = H * D + c.out_row_pad;
  fx.out.assign(size_t(S * out_row), kPoison);

  kvh_attention_args& a = fx.args;
  a.out = tensor(fx.out.data(), dt, {S, H, D}, {out_row, D, 1});
  StridedView qv{{S, H, D}, {qkv_row, D, 1}, 0};
  if (c.scheme == Scheme::DegenerateStrides) apply_degenerate_strides(qv, c.degenerate_stride);
  a.query = tensor(fx.query.data(), dt, qv.shape, qv.stride);
  a.key_cache = tensor(base + L.key.offset, dt, L.key.shape, L.key.stride);
  a.value_cache = tensor(base + L.value.offset, dt, L.value.shape, L.value.stride);
  a.block_tables = tensor(fx.block_tables.data(), KVH_DT_I32, {S, max_pages}, {max_pages, 1});
  a.context_lens = tensor(fx.context_lens.data(), KVH_DT_I32, {S}, {1});
  a.block_size = kb;
  a.cache_block_size = r > 1 ? bs : 0;
  a.max_context_len = int32_t(max_ctx);
  a.scale = float(ref.scale);
  a.k_scale = a.v_scale = 1.f;
  a.partition_size = c.partition_size;
  a.sliding_window = c.sliding_window;
  a.softcap = c.softcap;
  a.head_offset = c.head_offset;
  ref.sliding_window = c.sliding_window;
  ref.softcap = c.softcap;
  fx.sinks = c.sinks;
  fx.alibi_slopes = c.alibi_slopes;
  if (!c.sinks.empty()) a.sinks = tensor(fx.sinks.data(), KVH_DT_F32, {int64_t(c.sinks.size())}, {1});
  if (!c.alibi_slopes.empty())
    a.alibi_slopes = tensor(fx.alibi_slopes.data(), KVH_DT_F32, {int64_t(c.alibi_slopes.size())}, {1});
  ref.sinks.assign(c.sinks.begin(), c.sinks.end());
  ref.alibi_slopes.assign(c.alibi_slopes.begin(), c.alibi_slopes.end());
  return b;
}

struct HostConfigGuard {
  kvh::host::Config saved = kvh::host::config();
  ~HostConfigGuard() { kvh::host::config() = saved; }
};

}  // namespace

Tolerance tolerance_for(kvh_dtype dtype) { return dtype == KVH_DT_F16 ? Tolerance{1e-3, 5e-3} : Tolerance{8e-3, 1.6e-2}; }

std::string AttentionCase::str() const {
  std::ostringstream o;
  o << (dtype == KVH_DT_F16 ? "fp16" : "bf16") << " " << cache_format_name(format) << " " << to_string(scheme) << " H" << num_heads << "/KVH" << num_kv_heads << " D" << head_size << " bs" << block_size
    << " ps" << partition_size << " wave" << wave_size << (random_order ? " random" : "") << " ctx{";
  for (size_t i = 0; i < context_lens.size(); ++i) o << (i ? "," : "") << context_lens[i];
  o << "}";
  if (sink_token >= 0) o << " sink@" << sink_token;
  if (kernel_block_size > 0) o << " kernel_block_size " << kernel_block_size;
  if (scheme == Scheme::DegenerateStrides) o << " degenerate_stride " << degenerate_stride;
  if (sliding_window) o << " window" << sliding_window;
  if (softcap > 0) o << " softcap" << softcap;
  if (!sinks.empty()) o << " sinks";
  if (!alibi_slopes.empty()) o << " alibi@" << head_offset;
  return o.str();
}

std::string AttentionResult::str() const {
  std::ostringstream o;
  o << "rc " << rc << ", max_abs_err " << max_abs_err << " (" << worst << "), unwritten " << unwritten
    << ", nonfinite " << nonfinite << ", out_of_tolerance " << out_of_tolerance << ", out_of_view_writes "
    << out_of_view_writes << ", " << seconds * 1e3 << " ms";
  return o.str();
}

AttentionArgsFixture make_attention_args(const AttentionCase& c) { return build(c).fx; }

AttentionResult run_attention_case(const Kernel& reader, const AttentionCase& c) {
  Built b = build(c);
  AttentionArgsFixture& fx = b.fx;
  if (reader.workspace_bytes) {
    const uint64_t bytes = reader.workspace_bytes(&fx.args);
    fx.workspace.assign(size_t(bytes / sizeof(float) + 1), std::nanf(""));
    fx.args.workspace = fx.workspace.data();
    fx.args.workspace_bytes = bytes;
  }
  AttentionResult r;
  {
    HostConfigGuard guard;
    kvh::host::config().wave_size = c.wave_size;
    kvh::host::config().random_order = c.random_order;
    kvh::host::config().seed = c.seed;
    const auto t0 = std::chrono::steady_clock::now();
    r.rc = reader.attention(&fx.args, nullptr);
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  if (r.rc != 0) return r;

  const reference::RowMatrix want = reference::decode_attention(b.ref);
  const Tolerance tol = tolerance_for(c.dtype);
  const int64_t S = want.rows(), HD = want.cols(), D = c.head_size, out_row = HD + c.out_row_pad;
  for (int64_t s = 0; s < S; ++s) {
    for (int64_t i = 0; i < HD; ++i) {
      const uint16_t bits = fx.out[size_t(s * out_row + i)];
      const double got = from_bits(c.dtype, bits), ref = want(s, i);
      if (bits == kPoison) {
        ++r.unwritten;
      } else if (!std::isfinite(got)) {
        ++r.nonfinite;
      } else {
        const double err = std::fabs(got - ref);
        if (err > tol.atol + tol.rtol * std::fabs(ref)) ++r.out_of_tolerance;
        if (err > r.max_abs_err || r.worst.empty()) {
          r.max_abs_err = std::max(r.max_abs_err, err);
          std::ostringstream w;
          w << "seq " << s << " head " << i / D << " dim " << i % D << ": got " << got << " want " << ref;
          r.worst = w.str();
        }
      }
    }
    for (int64_t i = HD; i < out_row; ++i) r.out_of_view_writes += fx.out[size_t(s * out_row + i)] != kPoison;
  }
  return r;
}

const Kernel& builtin_reader(const std::string& name) {
  static const Registry registry;
  const Kernel* d = registry.find(name);
  if (!d || d->role != KVH_ROLE_READER) throw std::runtime_error("no built-in reader '" + name + "'");
  return *d;
}

const Kernel& planted_reader(const std::string& name) {
  static const Registry planted = [] {
    Registry r;
    r.add_provider(kvh_planted_readers, "planted");
    return r;
  }();
  const Kernel* d = planted.find(name);
  if (!d || d->origin != "planted") throw std::runtime_error("no planted reader '" + name + "'");
  return *d;
}

}  // namespace kvh::testing
