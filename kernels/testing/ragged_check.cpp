#include "ragged_check.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>

#include "attention_check.h"
#include "fp8.h"
#include "kvh_runtime.h"

namespace kvh::testing {

namespace {

constexpr uint16_t kPoison16 = 0x7FFF;  // NaN in fp16 and in bf16
constexpr int64_t kCacheMargin = 1 << 12;  // poison elements before and after the cache storage
constexpr int64_t kWorkspaceMargin = 64;   // NaN floats before and after each typed workspace, beyond one leading slice

uint16_t to_bits(kvh_dtype dt, float f) { return dt == KVH_DT_F16 ? to_fp16(f).bits : to_bf16(f).bits; }
float from_bits(kvh_dtype dt, uint16_t b) { return dt == KVH_DT_F16 ? to_float(fp16_t{b}) : to_float(bf16_t{b}); }
uint32_t nan_bits() {
  const float f = std::nanf("");
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

kvh_tensor tensor(void* data, int32_t dt, std::vector<int64_t> shape, std::vector<int64_t> stride) {
  kvh_tensor t{};
  t.data = data;
  t.dtype = dt;
  t.ndim = int32_t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i], t.stride[i] = stride[i];
  return t;
}
std::vector<int64_t> dense_strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}

template <class T> T* alloc(RaggedArgs& ra, size_t n, T fill) {
  ra.owned.emplace_back(std::max<size_t>(n, 1) * sizeof(T));
  T* p = reinterpret_cast<T*>(ra.owned.back().data());
  std::fill(p, p + n, fill);
  return p;
}

/// Everything of a built case the check needs besides the args.
struct Built {
  RaggedArgs ra;
  std::vector<double> q;                     // [nqt, H, D]
  std::vector<std::vector<double>> k, v;     // per sequence [L, KVH, D]
  uint16_t* out = nullptr;                   // the out buffer, out_rows rows of out_row elements
  int64_t out_rows = 0, out_row = 0;
};

Built build(const RaggedCase& c) {
  const int64_t S = int64_t(c.seqs.size()), H = c.num_heads, KVH = c.num_kv_heads, D = c.head_size, bs = c.block_size;
  if (S == 0 || KVH < 1 || H % KVH != 0 || bs < 1) throw std::invalid_argument("ragged case: bad shape");
  for (const RaggedSeq& sq : c.seqs)
    if (sq.q < 1 || sq.q > sq.len) throw std::invalid_argument("ragged case: need 1 <= q <= len");
  const int64_t nqt = c.num_query_tokens(), mql = c.max_query_len();
  if (!c.ragged_fields && mql != 1) throw std::invalid_argument("ragged case: a call without ragged fields is decode");
  const kvh_dtype dt = c.dtype;
  const int32_t cd = c.cache_dtype ? c.cache_dtype : dt;
  const bool fp8 = cd == KVH_DT_FP8_E4M3FN || cd == KVH_DT_FP8_E4M3FNUZ;
  const reference::Fp8Format f8 = cd == KVH_DT_FP8_E4M3FNUZ ? reference::Fp8Format::E4M3FNUZ : reference::Fp8Format::E4M3FN;
  const kvh_scale_granularity gran = fp8 ? c.kv_scales : KVH_SCALES_NONE;
  if (!fp8 && c.kv_scales != KVH_SCALES_NONE) throw std::invalid_argument("ragged case: scales need an fp8 cache");
  const int64_t es = fp8 ? 1 : 2;
  std::mt19937_64 rng(c.seed);
  std::uniform_real_distribution<float> qk(-2.f, 2.f), vdist(-1.f, 1.f), sdist(0.5f, 2.f);
  auto rounded = [&](float f) { return double(from_bits(dt, to_bits(dt, f))); };

  Built b;
  RaggedArgs& ra = b.ra;
  kvh_attention_args& a = ra.args;
  // Rows past num_query_tokens: enough for a kernel that pads every request to max_query_len.
  const int64_t extra_rows = std::max(S * mql, nqt) - nqt + 4;

  // Query: a view of a fused QKV buffer; the K/V thirds and the extra rows are NaN.
  const int64_t qkv_row = (H + 2 * KVH) * D;
  uint16_t* qbuf = alloc<uint16_t>(ra, size_t((nqt + extra_rows) * qkv_row), kPoison16);
  b.q.resize(size_t(nqt * H * D));
  for (int64_t r = 0; r < nqt; ++r)
    for (int64_t i = 0; i < H * D; ++i) {
      const double v = rounded(qk(rng));
      b.q[size_t(r * H * D + i)] = v;
      qbuf[r * qkv_row + i] = to_bits(dt, float(v));
    }
  b.out_row = H * D + c.out_row_pad;
  b.out_rows = nqt + extra_rows;
  b.out = alloc<uint16_t>(ra, size_t(b.out_rows * b.out_row), kPoison16);

  // Pages: random distinct blocks; table entries past a sequence's pages (and the table's
  // margin rows) hold the trap block, whose every slot is poison.
  const int64_t max_len = std::max_element(c.seqs.begin(), c.seqs.end(), [](auto& x, auto& y) { return x.len < y.len; })->len;
  const int64_t max_pages = (max_len + bs - 1) / bs + 1;
  int64_t used = 0;
  for (const RaggedSeq& sq : c.seqs) used += (sq.len + bs - 1) / bs;
  const int64_t num_blocks = used + 3;
  std::vector<int32_t> ids(static_cast<size_t>(num_blocks));
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  const int32_t trap = ids.back();
  const int64_t meta_margin = std::max<int64_t>(nqt, 8) + 2;  // rows/elements past each metadata array
  int32_t* bt = alloc<int32_t>(ra, size_t((S + meta_margin) * max_pages), trap);
  size_t next = 0;
  for (int64_t s = 0; s < S; ++s)
    for (int64_t j = 0; j < (c.seqs[size_t(s)].len + bs - 1) / bs; ++j) bt[s * max_pages + j] = ids[next++];

  CacheGeometry geo;
  geo.num_blocks = num_blocks, geo.block_size = bs, geo.num_kv_heads = KVH, geo.head_size = D;
  geo.x = 16 / es, geo.elem_bytes = es;
  LayoutOrReason lr = make_cache_layout(CacheFormat(c.format), c.scheme, geo);
  if (!lr.layout) throw std::invalid_argument("ragged case: " + lr.reason);
  const CacheLayout& L = *lr.layout;
  const uint8_t poison8 = f8 == reference::Fp8Format::E4M3FN ? 0x7F : 0x80;
  char* storage;
  {
    const size_t n = size_t(L.storage_elems + 2 * kCacheMargin);
    if (fp8) storage = reinterpret_cast<char*>(alloc<uint8_t>(ra, n, poison8));
    else storage = reinterpret_cast<char*>(alloc<uint16_t>(ra, n, kPoison16));
  }
  char* base = storage + kCacheMargin * es;
  const int64_t x = geo.x;

  // Scales (fp8): the granularity's tensors, or the floats (and [1] tensors) under NONE.
  float* scales[2] = {nullptr, nullptr};
  std::vector<int64_t> sshape;
  switch (gran) {
    case KVH_SCALES_TENSOR: sshape = {1}; break;
    case KVH_SCALES_HEAD: sshape = {KVH}; break;
    case KVH_SCALES_BLOCK: sshape = {num_blocks, KVH}; break;
    case KVH_SCALES_TOKEN: sshape = {num_blocks, KVH, bs}; break;
    default: break;
  }
  const float none_scale[2] = {fp8 ? 0.75f : 1.f, fp8 ? 1.25f : 1.f};
  if (!sshape.empty()) {
    const int64_t n = std::accumulate(sshape.begin(), sshape.end(), int64_t(1), std::multiplies<int64_t>());
    for (int kvi = 0; kvi < 2; ++kvi) {
      scales[kvi] = alloc<float>(ra, size_t(n), 0.f);
      for (int64_t i = 0; i < n; ++i) scales[kvi][i] = sdist(rng);
    }
  }
  auto scale_of = [&](int kvi, int64_t blk, int64_t kvh, int64_t slot) -> float {
    switch (gran) {
      case KVH_SCALES_TENSOR: return scales[kvi][0];
      case KVH_SCALES_HEAD: return scales[kvi][kvh];
      case KVH_SCALES_BLOCK: return scales[kvi][blk * KVH + kvh];
      case KVH_SCALES_TOKEN: return scales[kvi][(blk * KVH + kvh) * bs + slot];
      default: return none_scale[kvi];
    }
  };

  for (int64_t s = 0; s < S; ++s) {
    const int64_t T = c.seqs[size_t(s)].len;
    std::vector<double> ks(size_t(T * KVH * D)), vs(ks.size());
    for (int64_t t = 0; t < T; ++t) {
      const int64_t blk = bt[s * max_pages + t / bs], off = t % bs;
      for (int64_t kvh = 0; kvh < KVH; ++kvh)
        for (int64_t d = 0; d < D; ++d) {
          int64_t ko = 0, vo = 0;
          switch (c.format) {
            case KVH_CACHE_NHD: ko = view_offset(L.key, {blk, off, kvh, d}), vo = view_offset(L.value, {blk, off, kvh, d}); break;
            case KVH_CACHE_HND: ko = view_offset(L.key, {blk, kvh, off, d}), vo = view_offset(L.value, {blk, kvh, off, d}); break;
            case KVH_CACHE_PA_V1:
              ko = view_offset(L.key, {blk, kvh, d / x, off, d % x}), vo = view_offset(L.value, {blk, kvh, d, off});
              break;
            case KVH_CACHE_SHUFFLE:
              ko = view_offset(L.key, {blk, kvh, d / x, off, d % x}), vo = view_offset(L.value, {blk, kvh, off / x, d, off % x});
              break;
          }
          const size_t li = size_t((t * KVH + kvh) * D + d);
          const float kraw = qk(rng), vraw = vdist(rng);
          if (fp8) {
            const float ksc = scale_of(0, blk, kvh, off), vsc = scale_of(1, blk, kvh, off);
            const uint8_t kc = reference::fp8_encode(double(kraw) / ksc, f8), vc = reference::fp8_encode(double(vraw) / vsc, f8);
            base[ko] = char(kc), base[vo] = char(vc);
            ks[li] = double(float(reference::fp8_decode(kc, f8)) * ksc);  // what the kernel computes, exactly
            vs[li] = double(float(reference::fp8_decode(vc, f8)) * vsc);
          } else {
            const uint16_t kb = to_bits(dt, kraw), vb = to_bits(dt, vraw);
            std::memcpy(base + ko * 2, &kb, 2), std::memcpy(base + vo * 2, &vb, 2);
            ks[li] = from_bits(dt, kb), vs[li] = from_bits(dt, vb);
          }
        }
    }
    b.k.push_back(std::move(ks));
    b.v.push_back(std::move(vs));
  }

  // Metadata, each in a buffer whose margin reads like the harness's.
  int32_t* qsl = alloc<int32_t>(ra, size_t(S + 1 + meta_margin), int32_t(nqt + 1));
  int32_t* seq_lens = alloc<int32_t>(ra, size_t(S + meta_margin), 1);
  int32_t* ctx_lens = alloc<int32_t>(ra, size_t(S + meta_margin), 1);
  qsl[0] = 0;
  for (int64_t s = 0; s < S; ++s) {
    qsl[s + 1] = qsl[s] + c.seqs[size_t(s)].q;
    seq_lens[s] = ctx_lens[s] = c.seqs[size_t(s)].len;
  }

  const int32_t cdt = fp8 ? cd : int32_t(dt);
  a.out = tensor(b.out, dt, {nqt, H, D}, {b.out_row, D, 1});
  a.query = tensor(qbuf, dt, {nqt, H, D}, {qkv_row, D, 1});
  a.key_cache = tensor(base + L.key.offset * es, cdt, L.key.shape, L.key.stride);
  a.value_cache = tensor(base + L.value.offset * es, cdt, L.value.shape, L.value.stride);
  a.block_tables = tensor(bt, KVH_DT_I32, {S, max_pages}, {max_pages, 1});
  a.context_lens = tensor(ctx_lens, KVH_DT_I32, {S}, {1});
  a.block_size = bs;
  a.max_context_len = int32_t(max_len);
  a.scale = float(1.0 / std::sqrt(double(D)));
  a.k_scale = none_scale[0], a.v_scale = none_scale[1];
  a.partition_size = c.partition_size;
  a.kv_scales = gran;
  if (!sshape.empty()) {
    a.k_scales = tensor(scales[0], KVH_DT_F32, sshape, dense_strides(sshape));
    a.v_scales = tensor(scales[1], KVH_DT_F32, sshape, dense_strides(sshape));
  }
  a.sliding_window = c.sliding_window;
  a.softcap = c.softcap;
  a.head_offset = c.head_offset;
  if (!c.sinks.empty()) {
    float* p = alloc<float>(ra, c.sinks.size(), 0.f);
    std::copy(c.sinks.begin(), c.sinks.end(), p);
    a.sinks = tensor(p, KVH_DT_F32, {int64_t(c.sinks.size())}, {1});
  }
  if (!c.alibi_slopes.empty()) {
    float* p = alloc<float>(ra, c.alibi_slopes.size(), 0.f);
    std::copy(c.alibi_slopes.begin(), c.alibi_slopes.end(), p);
    a.alibi_slopes = tensor(p, KVH_DT_F32, {int64_t(c.alibi_slopes.size())}, {1});
  }
  if (c.ragged_fields) {
    a.query_start_loc = tensor(qsl, KVH_DT_I32, {S + 1}, {1});
    a.seq_lens = tensor(seq_lens, KVH_DT_I32, {S}, {1});
    a.max_query_len = int32_t(mql);
    a.num_query_tokens = int32_t(nqt);
    a.causal = c.causal ? 1 : 0;
    if (fp8 && gran == KVH_SCALES_NONE && c.scale_tensors) {
      float* ks = alloc<float>(ra, 1, none_scale[0]);
      float* vs = alloc<float>(ra, 1, none_scale[1]);
      a.k_scale_tensor = tensor(ks, KVH_DT_F32, {1}, {1});
      a.v_scale_tensor = tensor(vs, KVH_DT_F32, {1}, {1});
    }
  }
  return b;
}

/// The float64 brute force: [nqt, H, D].
std::vector<double> brute_force(const Built& b, const RaggedCase& c) {
  const int64_t H = c.num_heads, KVH = c.num_kv_heads, D = c.head_size, group = H / KVH;
  const double scale = double(b.ra.args.scale);
  std::vector<double> out(b.q.size(), 0.0);
  int64_t row = 0;
  for (size_t s = 0; s < c.seqs.size(); ++s) {
    const int64_t q = c.seqs[s].q, L = c.seqs[s].len;
    const std::vector<double>&K = b.k[s], &V = b.v[s];
    for (int64_t j = 0; j < q; ++j, ++row) {
      const int64_t p = L - q + j;
      const int64_t first = c.sliding_window > 0 ? std::max<int64_t>(0, p - c.sliding_window + 1) : 0;
      const int64_t last = c.causal ? p : L - 1;
      for (int64_t h = 0; h < H; ++h) {
        const int64_t kvh = h / group;
        const double* qv = &b.q[size_t((row * H + h) * D)];
        std::vector<double> logit;
        double m = -INFINITY;
        for (int64_t t = first; t <= last; ++t) {
          const double* kv = &K[size_t((t * KVH + kvh) * D)];
          double dot = 0;
          for (int64_t d = 0; d < D; ++d) dot += qv[d] * kv[d];
          double x = scale * dot;
          if (c.softcap > 0) x = c.softcap * std::tanh(x / c.softcap);
          if (!c.alibi_slopes.empty()) x += double(c.alibi_slopes[size_t(h)]) * double(t - p);
          logit.push_back(x);
          m = std::max(m, x);
        }
        if (!c.sinks.empty()) m = std::max(m, double(c.sinks[size_t(h)]));
        double den = c.sinks.empty() ? 0.0 : std::exp(double(c.sinks[size_t(h)]) - m);
        std::vector<double> acc(size_t(D), 0.0);
        for (int64_t t = first; t <= last; ++t) {
          const double w = std::exp(logit[size_t(t - first)] - m);
          den += w;
          const double* vv = &V[size_t((t * KVH + kvh) * D)];
          for (int64_t d = 0; d < D; ++d) acc[size_t(d)] += w * vv[d];
        }
        for (int64_t d = 0; d < D; ++d) out[size_t((row * H + h) * D + d)] = den > 0 ? acc[size_t(d)] / den : 0.0;
      }
    }
  }
  return out;
}

struct HostConfigGuard {
  kvh::host::Config saved = kvh::host::config();
  ~HostConfigGuard() { kvh::host::config() = saved; }
};

}  // namespace

int RaggedCase::num_query_tokens() const {
  int n = 0;
  for (const RaggedSeq& s : seqs) n += s.q;
  return n;
}

int RaggedCase::max_query_len() const {
  int m = 0;
  for (const RaggedSeq& s : seqs) m = std::max(m, s.q);
  return m;
}

std::string RaggedCase::str() const {
  std::ostringstream o;
  o << (dtype == KVH_DT_F16 ? "fp16" : "bf16");
  if (cache_dtype) o << " cache " << dtype_name(cache_dtype) << " scales " << scales_name(kv_scales);
  o << " " << cache_format_name(format) << " " << to_string(scheme) << " H" << num_heads << "/KVH" << num_kv_heads
    << " D" << head_size << " bs" << block_size << " ps" << partition_size << " wave" << wave_size
    << (causal ? " causal" : " non-causal") << (ragged_fields ? "" : " no-ragged-fields") << " seqs{";
  for (size_t i = 0; i < seqs.size(); ++i) o << (i ? "," : "") << seqs[i].q << "/" << seqs[i].len;
  o << "}";
  if (sliding_window) o << " window" << sliding_window;
  if (softcap > 0) o << " softcap" << softcap;
  if (!sinks.empty()) o << " sinks";
  if (!alibi_slopes.empty()) o << " alibi";
  if (out_row_pad) o << " out_row_pad" << out_row_pad;
  o << " seed" << seed;
  return o.str();
}

std::string RaggedResult::str() const {
  std::ostringstream o;
  o << "rc " << rc << ", max_abs_err " << max_abs_err << " (" << worst << "), unwritten " << unwritten
    << ", nonfinite " << nonfinite << ", out_of_tolerance " << out_of_tolerance << ", out_of_view_writes "
    << out_of_view_writes << ", workspace_margin_writes " << workspace_margin_writes;
  return o.str();
}

RaggedArgs make_ragged_args(const RaggedCase& c) { return std::move(build(c).ra); }

RaggedResult run_ragged_case(const Kernel& reader, const RaggedCase& c) {
  Built b = build(c);
  kvh_attention_args& a = b.ra.args;
  RaggedResult r;
  // Typed workspaces, each inside NaN margins; or the byte workspace of an older reader.
  std::vector<std::vector<float>> ws;
  std::vector<int64_t> margins;
  if (reader.workspaces) {
    r.workspaces = reader.workspaces(&a);
    if (r.workspaces.size() > KVH_MAX_WORKSPACES) throw std::invalid_argument("too many workspaces");
    for (size_t i = 0; i < r.workspaces.size(); ++i) {
      const kvh_workspace_spec& sp = r.workspaces[i];
      if (sp.dtype != KVH_DT_F32) throw std::invalid_argument("ragged check: f32 workspaces only");
      std::vector<int64_t> shape(sp.shape, sp.shape + sp.ndim);
      const int64_t n = std::accumulate(shape.begin(), shape.end(), int64_t(1), std::multiplies<int64_t>());
      // Margins of a whole leading slice and then some: a row's worth of entries past the end stays in them.
      const int64_t margin = kWorkspaceMargin + (shape.empty() || shape[0] == 0 ? 0 : n / shape[0]);
      margins.push_back(margin);
      ws.emplace_back(size_t(n + 2 * margin), std::nanf(""));
      a.workspaces[i] = tensor(ws.back().data() + margin, KVH_DT_F32, shape, dense_strides(shape));
    }
    a.num_workspaces = int32_t(r.workspaces.size());
  } else if (reader.workspace_bytes) {
    const uint64_t bytes = reader.workspace_bytes(&a);
    ws.emplace_back(size_t(bytes / 4 + 1), std::nanf(""));
    a.workspace = ws.back().data();
    a.workspace_bytes = bytes;
  }
  {
    HostConfigGuard guard;
    kvh::host::config().wave_size = c.wave_size;
    kvh::host::config().random_order = c.random_order;
    kvh::host::config().seed = c.seed;
    r.rc = reader.attention(&a, nullptr);
  }
  if (r.rc != 0) return r;
  if (reader.workspaces) {
    const uint32_t nan = nan_bits();
    for (size_t k = 0; k < ws.size(); ++k)
      for (size_t i = 0, m = size_t(margins[k]); i < ws[k].size(); ++i) {
        const std::vector<float>& w = ws[k];
        if (i >= m && i < w.size() - m) continue;
        uint32_t u;
        std::memcpy(&u, &w[i], 4);
        r.workspace_margin_writes += u != nan;
      }
  }

  const std::vector<double> want = brute_force(b, c);
  const Tolerance tol = tolerance_for(c.dtype);
  const int64_t nqt = c.num_query_tokens(), HD = int64_t(c.num_heads) * c.head_size, D = c.head_size;
  for (int64_t row = 0; row < b.out_rows; ++row)
    for (int64_t i = 0; i < b.out_row; ++i) {
      const uint16_t bits = b.out[row * b.out_row + i];
      if (row >= nqt || i >= HD) {
        r.out_of_view_writes += bits != kPoison16;
        continue;
      }
      const double got = from_bits(c.dtype, bits), ref = want[size_t(row * HD + i)];
      if (bits == kPoison16) {
        ++r.unwritten;
      } else if (!std::isfinite(got)) {
        ++r.nonfinite;
      } else {
        const double err = std::fabs(got - ref);
        if (err > tol.atol + tol.rtol * std::fabs(ref)) ++r.out_of_tolerance;
        if (err > r.max_abs_err || r.worst.empty()) {
          r.max_abs_err = std::max(r.max_abs_err, err);
          std::ostringstream w;
          w << "row " << row << " head " << i / D << " dim " << i % D << ": got " << got << " want " << ref;
          r.worst = w.str();
        }
      }
    }
  return r;
}

std::vector<RaggedSeq> random_ragged_batch(uint64_t seed, int n, int max_len) {
  std::mt19937_64 rng(seed * 7919 + 17);
  std::vector<RaggedSeq> seqs;
  for (int i = 0; i < n; ++i) {
    const bool chunk = i % 3 == 1 || (i % 3 == 2 && rng() % 2);
    const int q = chunk ? 40 + int(rng() % 31) : 1 + int(rng() % 9);
    // Both ends of the context: a first chunk (len = q), the longest, and anything between.
    int len;
    switch (i % 4) {
      case 0: len = q; break;
      case 1: len = max_len; break;
      default: len = q + int(rng() % uint64_t(max_len - q + 1)); break;
    }
    seqs.push_back({q, std::max(len, q)});
  }
  return seqs;
}

const Kernel& planted_unified_reader(const std::string& name) {
  static const Registry planted = [] {
    Registry r;
    r.add_provider(kvh_planted_unified_readers, "planted");
    return r;
  }();
  const Kernel* d = planted.find(name);
  if (!d || d->origin != "planted") throw std::runtime_error("no planted unified reader '" + name + "'");
  return *d;
}

}  // namespace kvh::testing
