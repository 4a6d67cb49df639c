#include "mla_check.h"

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
#include "mla_attention.h"

namespace kvh::testing {

namespace {

constexpr uint16_t kPoison16 = 0x7FFF;          // NaN in fp16 and bf16
constexpr int32_t kPlanSentinel = 0x7FC0DEAD;   // plan margins
constexpr int64_t kPlanMargin = 16;             // int32 words around each plan tensor
constexpr int64_t kRowPad = 8, kBlockPad = 24;  // padded latent rows and pages (elements)

uint16_t to_bits(kvh_dtype dt, float f) { return dt == KVH_DT_F16 ? to_fp16(f).bits : to_bf16(f).bits; }
double from_bits(kvh_dtype dt, uint16_t b) { return dt == KVH_DT_F16 ? to_float(fp16_t{b}) : to_float(bf16_t{b}); }

kvh_tensor tensor(void* data, int32_t dt, std::vector<int64_t> shape, std::vector<int64_t> stride) {
  kvh_tensor t{};
  t.data = data, t.dtype = dt, t.ndim = int32_t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i], t.stride[i] = stride[i];
  return t;
}
std::vector<int64_t> dense(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) s[i - 1] = s[i] * shape[i];
  return s;
}
struct HostConfigGuard {
  kvh::host::Config saved = kvh::host::config();
  ~HostConfigGuard() { kvh::host::config() = saved; }
};

}  // namespace

int MlaCase::num_query_tokens() const {
  int n = 0;
  for (const MlaSeq& s : seqs) n += s.q;
  return n;
}
int MlaCase::max_query_len() const {
  int m = 1;
  for (const MlaSeq& s : seqs) m = std::max(m, s.q);
  return m;
}
std::string MlaCase::str() const {
  std::ostringstream o;
  o << (dtype == KVH_DT_F16 ? "f16" : "bf16") << " cache" << cache_dtype << " H" << num_heads << " R" << kv_lora_rank
    << " P" << rope_dim << " bs" << block_size << " cu" << compute_units << " wave" << wave_size << " seqs";
  for (const MlaSeq& s : seqs) o << " " << s.q << "/" << s.len;
  if (!causal) o << " non-causal";
  return o.str();
}
std::string MlaResult::str() const {
  std::ostringstream o;
  o << "rc " << rc << (refused.empty() ? "" : " refused: " + refused) << ", max_abs_err " << max_abs_err << " ("
    << worst << "), unwritten " << unwritten << ", nonfinite " << nonfinite << ", out_of_tolerance "
    << out_of_tolerance << ", plan_writes " << plan_writes << ", max_splits " << max_splits;
  return o.str();
}

MlaResult run_mla_case(const Kernel& reader, const MlaCase& c) {
  const int64_t H = c.num_heads, R = c.kv_lora_rank, P = c.rope_dim, D = R + P, bs = c.block_size;
  const int64_t S = int64_t(c.seqs.size()), T = c.num_query_tokens();
  const bool fp8 = c.cache_dtype == KVH_DT_FP8_E4M3FN || c.cache_dtype == KVH_DT_FP8_E4M3FNUZ;
  const reference::Fp8Format ff =
      c.cache_dtype == KVH_DT_FP8_E4M3FNUZ ? reference::Fp8Format::E4M3FNUZ : reference::Fp8Format::E4M3FN;
  const float kscale = fp8 ? 0.0625f : 1.f;
  std::mt19937_64 rng(c.seed);
  std::uniform_real_distribution<float> uq(-1.f, 1.f), ul(-2.f, 2.f);
  // Pages: each sequence's, then one trap page (NaN) every padding entry points to; shuffled ids.
  std::vector<int64_t> pages(static_cast<size_t>(S), 0);
  int64_t num_blocks = 1, max_pages = 1;
  for (int64_t s = 0; s < S; ++s) {
    if (c.seqs[size_t(s)].q < 1 || c.seqs[size_t(s)].q > c.seqs[size_t(s)].len) throw std::invalid_argument("bad seq");
    pages[size_t(s)] = (c.seqs[size_t(s)].len + bs - 1) / bs;
    num_blocks += pages[size_t(s)];
    max_pages = std::max(max_pages, pages[size_t(s)] + 1);  // one padding column at least
  }
  std::vector<int32_t> ids(static_cast<size_t>(num_blocks), 0);
  std::iota(ids.begin(), ids.end(), 0);
  std::shuffle(ids.begin(), ids.end(), rng);
  const int32_t trap = ids.back();
  // Cache [num_blocks, bs, D], rows D + kRowPad apart, blocks bs * (D + kRowPad) + kBlockPad apart.
  const int64_t es = fp8 ? 1 : 2, row_s = D + kRowPad, blk_s = bs * row_s + kBlockPad;
  std::vector<uint8_t> cache(size_t(num_blocks * blk_s * es), 0xFF);  // 0xFF..: NaN in every format
  if (c.cache_dtype == KVH_DT_FP8_E4M3FNUZ) std::fill(cache.begin(), cache.end(), uint8_t(0x80));
  std::vector<int32_t> bt(size_t(S * max_pages), trap), lens(static_cast<size_t>(S), 0), qsl(size_t(S + 1), 0);
  reference::MlaAttentionInput ref;
  ref.num_heads = H, ref.kv_lora_rank = R, ref.rope_dim = P, ref.causal = c.causal;
  ref.scale = 1.0 / std::sqrt(192.0);
  int64_t next = 0;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t L = c.seqs[size_t(s)].len;
    lens[size_t(s)] = int32_t(L);
    qsl[size_t(s + 1)] = qsl[size_t(s)] + c.seqs[size_t(s)].q;
    for (int64_t p = 0; p < pages[size_t(s)]; ++p) bt[size_t(s * max_pages + p)] = ids[size_t(next++)];
    reference::RowMatrix lat(L, D);
    for (int64_t t = 0; t < L; ++t) {
      const int64_t blk = bt[size_t(s * max_pages + t / bs)], at = blk * blk_s + (t % bs) * row_s;
      for (int64_t d = 0; d < D; ++d) {
        const float x = ul(rng);
        if (fp8) {
          const uint8_t code = reference::fp8_encode(double(x) / kscale, ff);
          cache[size_t(at + d)] = code;
          lat(t, d) = reference::fp8_decode(code, ff) * kscale;
        } else {
          const uint16_t b = to_bits(c.dtype, x);
          std::memcpy(&cache[size_t((at + d) * 2)], &b, 2);
          lat(t, d) = from_bits(c.dtype, b);
        }
      }
    }
    ref.latent.push_back(std::move(lat));
  }
  // Query [T, H, D]: a view of a wider buffer (rows H * D + 32 apart); out [T, H, R] poisoned.
  const int64_t q_row = H * D + 32;
  std::vector<uint16_t> query(size_t(T * q_row));
  ref.query = reference::RowMatrix(T, H * D);
  for (int64_t r = 0; r < T; ++r)
    for (int64_t i = 0; i < q_row; ++i) {
      const uint16_t b = to_bits(c.dtype, uq(rng));
      query[size_t(r * q_row + i)] = b;
      if (i < H * D) ref.query(r, i) = from_bits(c.dtype, b);
    }
  ref.query_start_loc.assign(qsl.begin(), qsl.end());
  std::vector<uint16_t> out(size_t((T + 1) * H * R), kPoison16);
  float kscale_v = kscale;

  kvh_attention_args a{};
  a.out = tensor(out.data(), c.dtype, {T, H, R}, {H * R, R, 1});
  a.query = tensor(query.data(), c.dtype, {T, H, D}, {q_row, D, 1});
  const int32_t cdt = fp8 ? c.cache_dtype : c.dtype;
  a.key_cache = a.value_cache = tensor(cache.data(), cdt, {num_blocks, bs, D}, {blk_s, row_s, 1});
  a.block_tables = tensor(bt.data(), KVH_DT_I32, {S, max_pages}, {max_pages, 1});
  a.context_lens = tensor(lens.data(), KVH_DT_I32, {S}, {1});
  a.seq_lens = a.context_lens;
  a.query_start_loc = tensor(qsl.data(), KVH_DT_I32, {S + 1}, {1});
  a.block_size = bs;
  a.max_context_len = *std::max_element(lens.begin(), lens.end());
  a.scale = float(ref.scale);
  a.k_scale = a.v_scale = kscale;
  if (fp8 && c.scale_as_tensor) {
    a.kv_scales = KVH_SCALES_TENSOR;
    a.k_scales = a.v_scales = tensor(&kscale_v, KVH_DT_F32, {1}, {1});
  } else if (fp8) {
    a.k_scale_tensor = a.v_scale_tensor = tensor(&kscale_v, KVH_DT_F32, {1}, {1});
  }
  a.max_query_len = c.max_query_len();
  a.num_query_tokens = int32_t(T);
  a.causal = c.causal ? 1 : 0;

  MlaResult res;
  // The planner, as the harness calls it; each tensor copied between sentinel margins.
  kvh_plan_args pa{};
  pa.num_seqs = S, pa.num_heads = H, pa.num_kv_heads = 1, pa.head_size = D, pa.block_size = bs;
  pa.compute_units = c.compute_units, pa.max_query_len = a.max_query_len, pa.num_query_tokens = int32_t(T);
  pa.dtype = c.dtype, pa.cache_dtype = cdt, pa.seq_lens = lens.data(), pa.query_start_loc = qsl.data();
  std::vector<std::vector<int32_t>> plan_bufs, plan_copies;
  try {
    const kvh_plan plan = reader.plan(&pa);
    for (int32_t i = 0; i < plan.num_tensors; ++i) {
      const kvh_workspace_spec& w = plan.specs[i];
      std::vector<int64_t> shape(w.shape, w.shape + w.ndim);
      int64_t n = 1;
      for (int64_t d : shape) n *= d;
      std::vector<int32_t> buf(size_t(n + 2 * kPlanMargin), kPlanSentinel);
      std::memcpy(buf.data() + kPlanMargin, plan.data[i], size_t(n) * 4);
      plan_bufs.push_back(buf);
      a.plan[i] = tensor(plan_bufs.back().data() + kPlanMargin, w.dtype, shape, dense(shape));
    }
    a.num_plan_tensors = plan.num_tensors;
    if (plan.num_tensors >= 2) res.max_splits = plan.specs[1].shape[1] - 1;
  } catch (const KernelRefused& e) {
    res.refused = e.what();
    return res;
  }
  plan_copies = plan_bufs;
  std::vector<std::vector<float>> ws;
  std::vector<kvh_workspace_spec> specs;
  try {
    specs = reader.workspaces(&a);
  } catch (const KernelRefused& e) {
    res.refused = e.what();
    return res;
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    std::vector<int64_t> shape(specs[i].shape, specs[i].shape + specs[i].ndim);
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    ws.emplace_back(size_t(n + 128), std::nanf(""));
    a.workspaces[i] = tensor(ws.back().data() + 64, KVH_DT_F32, shape, dense(shape));
  }
  a.num_workspaces = int32_t(specs.size());
  {
    HostConfigGuard guard;
    kvh::host::config().wave_size = c.wave_size;
    kvh::host::config().random_order = true;
    kvh::host::config().seed = c.seed;
    res.rc = reader.attention(&a, nullptr);
  }
  for (size_t k = 0; k < plan_bufs.size(); ++k)
    for (size_t i = 0; i < plan_bufs[k].size(); ++i) res.plan_writes += plan_bufs[k][i] != plan_copies[k][i];
  if (res.rc != 0) return res;
  const reference::RowMatrix want = reference::mla_attention(ref);
  const Tolerance tol = tolerance_for(c.dtype);
  for (int64_t r = 0; r <= T; ++r)
    for (int64_t i = 0; i < H * R; ++i) {
      const uint16_t b = out[size_t(r * H * R + i)];
      if (r == T) {  // the row past `out`
        res.out_of_view_writes += b != kPoison16;
        continue;
      }
      const double got = from_bits(c.dtype, b), w = want(r, i);
      if (b == kPoison16) {
        ++res.unwritten;
      } else if (!std::isfinite(got)) {
        ++res.nonfinite;
      } else {
        const double err = std::fabs(got - w);
        if (err > tol.atol + tol.rtol * std::fabs(w)) ++res.out_of_tolerance;
        if (err > res.max_abs_err || res.worst.empty()) {
          res.max_abs_err = std::max(res.max_abs_err, err);
          std::ostringstream o;
          o << "row " << r << " head " << i / R << " dim " << i % R << ": got " << got << " want " << w;
          res.worst = o.str();
        }
      }
    }
  return res;
}

}  // namespace kvh::testing

namespace kvh::testing {
const Kernel& planted_mla_reader(const std::string& name) {
  static const Registry planted = [] {
    Registry r;
    r.add_provider(kvh_planted_mla_readers, "planted");
    return r;
  }();
  const Kernel* d = planted.find(name);
  if (!d || d->origin != "planted") throw std::runtime_error("no planted MLA reader '" + name + "'");
  return *d;
}
}  // namespace kvh::testing
