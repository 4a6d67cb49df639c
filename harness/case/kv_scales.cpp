#include "case/kv_scales.h"

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include "case/views.h"

namespace kvh {

namespace {
constexpr int64_t kMarginFloats = 64;        // NaN floats before, between and after the tensors
constexpr uint32_t kScaleGuard = 0x7FC0DEADu;  // a quiet NaN with a recognisable payload
}  // namespace

kvh_dtype cache_kvh_dtype(const Case& c) {
  switch (c.kv_cache_dtype) {
    case KvCacheDType::Fp8E4m3fn: return KVH_DT_FP8_E4M3FN;
    case KvCacheDType::Fp8E4m3fnuz: return KVH_DT_FP8_E4M3FNUZ;
    case KvCacheDType::Int8: return KVH_DT_I8;
    case KvCacheDType::Same: break;
  }
  return c.dtype == DType::F16 ? KVH_DT_F16 : KVH_DT_BF16;
}

std::optional<reference::Fp8Format> fp8_format(const Case& c) {
  switch (c.kv_cache_dtype) {
    case KvCacheDType::Fp8E4m3fn: return reference::Fp8Format::E4M3FN;
    case KvCacheDType::Fp8E4m3fnuz: return reference::Fp8Format::E4M3FNUZ;
    case KvCacheDType::Int8:
    case KvCacheDType::Same: break;
  }
  return std::nullopt;
}

float mla_fp8_scale(const Case& c) {
  return c.kv_cache_dtype == KvCacheDType::Fp8E4m3fnuz ? 1.7f / 240.f : 1.7f / 448.f;
}

kvh_scale_granularity to_kvh(KvScales s) {
  switch (s) {
    case KvScales::None: return KVH_SCALES_NONE;
    case KvScales::Tensor: return KVH_SCALES_TENSOR;
    case KvScales::Head: return KVH_SCALES_HEAD;
    case KvScales::Block: return KVH_SCALES_BLOCK;
    case KvScales::Token: return KVH_SCALES_TOKEN;
    case KvScales::Slot: return KVH_SCALES_SLOT;
  }
  return KVH_SCALES_NONE;
}

KvScaleTensors::KvScaleTensors(const Case& c, int64_t num_blocks, uint64_t data_seed)
    : gran_(to_kvh(c.kv_scales)), num_blocks_(num_blocks), num_kv_heads_(c.num_kv_heads), block_size_(c.block_size) {
  if (gran_ != KVH_SCALES_NONE && !c.quantized_cache())
    throw std::invalid_argument("kv_scales need an fp8 or int8 cache");
  switch (gran_) {
    case KVH_SCALES_NONE: return;
    case KVH_SCALES_TENSOR: shape_ = {1}; break;
    case KVH_SCALES_HEAD: shape_ = {num_kv_heads_}; break;
    case KVH_SCALES_BLOCK: shape_ = {num_blocks_, num_kv_heads_}; break;
    case KVH_SCALES_TOKEN: shape_ = {num_blocks_, num_kv_heads_, block_size_}; break;
    case KVH_SCALES_SLOT: shape_ = {num_blocks_, block_size_}; break;
  }
  int64_t n = 1;
  for (int64_t s : shape_) n *= s;
  std::mt19937_64 rng(data_seed ^ 0x5CA1E5F00D5EEDull);
  std::uniform_real_distribution<double> e(c.int8_cache() ? -6.5 : -8.0, c.int8_cache() ? -5.0 : -2.0);
  for (auto* t : {&k_, &v_}) {
    t->resize(size_t(n));
    for (float& x : *t) x = float(std::exp2(e(rng)));
  }
  if (c.mla() && gran_ == KVH_SCALES_TENSOR) k_ = v_ = {mla_fp8_scale(c)};  // issue 22: one scale, saturating
  // [margin][k][margin][v][margin], the margins NaN.
  k_off_ = kMarginFloats;
  v_off_ = 2 * kMarginFloats + n;
  std::vector<float> host(size_t(3 * kMarginFloats + 2 * n));
  for (float& x : host) std::memcpy(&x, &kScaleGuard, 4);
  std::memcpy(host.data() + k_off_, k_.data(), size_t(n) * 4);
  std::memcpy(host.data() + v_off_, v_.data(), size_t(n) * 4);
  buf_ = device::Buffer(host.size() * 4);
  buf_.upload(host.data(), host.size() * 4);
}

kvh_tensor KvScaleTensors::tensor(int64_t offset_floats) const {
  if (gran_ == KVH_SCALES_NONE) {
    kvh_tensor t{};
    t.dtype = KVH_DT_F32;
    return t;
  }
  return contiguous_tensor(static_cast<float*>(buf_.get()) + offset_floats, shape_, KVH_DT_F32);
}

float KvScaleTensors::at(const std::vector<float>& s, int64_t block, int64_t head, int64_t tok) const {
  switch (gran_) {
    case KVH_SCALES_NONE: return 1.f;
    case KVH_SCALES_TENSOR: return s[0];
    case KVH_SCALES_HEAD: return s[size_t(head)];
    case KVH_SCALES_BLOCK: return s[size_t(block * num_kv_heads_ + head)];
    case KVH_SCALES_TOKEN: return s[size_t((block * num_kv_heads_ + head) * block_size_ + tok)];
    case KVH_SCALES_SLOT: return s[size_t(block * block_size_ + tok)];
  }
  return 1.f;
}

device::Fp8WriteScales KvScaleTensors::write_scales(const Case& c) const {
  device::Fp8WriteScales w;
  w.fnuz = c.kv_cache_dtype == KvCacheDType::Fp8E4m3fnuz;
  w.int8 = c.int8_cache();
  w.bf16_input = c.dtype == DType::BF16;
  w.granularity = gran_;
  if (gran_ == KVH_SCALES_NONE) return w;
  const kvh_tensor k = k_tensor(), v = v_tensor();
  w.k = static_cast<const float*>(k.data);
  w.v = static_cast<const float*>(v.data);
  for (int i = 0; i < k.ndim && i < 3; ++i) w.ks[i] = k.stride[i], w.vs[i] = v.stride[i];
  return w;
}

KvScaleTensors KvScaleTensors::host_only() const {
  KvScaleTensors h;
  h.gran_ = gran_;
  h.num_blocks_ = num_blocks_, h.num_kv_heads_ = num_kv_heads_, h.block_size_ = block_size_;
  h.shape_ = shape_;
  h.k_ = k_, h.v_ = v_;
  h.k_off_ = k_off_, h.v_off_ = v_off_;
  return h;
}

}  // namespace kvh
