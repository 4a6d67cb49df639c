// The fp8 side of a case (issue 11): the cache's element type, and the
// dequant scale tensors k_scales/v_scales with their host copies. The scales
// live in one guarded device buffer, each tensor between margins of NaN, so
// that a reader or writer that indexes past a scale tensor turns its output
// into NaN instead of reading a plausible neighbour.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "../reference/fp8.h"
#include "case.h"
#include "device/device.h"
#include "device/device_ops.h"
#include "kvharness/provider.h"

namespace kvh {

/// The cache tensors' kvh_dtype: the K/V dtype, or the fp8 format.
kvh_dtype cache_kvh_dtype(const Case& c);
/// Bytes of one cache element: 2 (fp16/bf16) or 1 (fp8, int8).
inline int64_t cache_elem_bytes(const Case& c) { return c.quantized_cache() ? 1 : 2; }
/// x of the x-split layouts: 16 bytes / cache element (DESIGN.md).
inline int64_t cache_x(const Case& c) { return 16 / cache_elem_bytes(c); }
/// The reference codec's format of an fp8 case; nullopt for a 16-bit or int8 cache.
std::optional<reference::Fp8Format> fp8_format(const Case& c);
/// The per-tensor scale of an fp8 MLA case (issue 22): 1.7 / the format's largest finite value
/// (448 e4m3fn, 240 e4m3fnuz). Inputs reach 2 in magnitude (counter_rng.h kInput), so the values
/// above 1.7 (about 15% of them) pass max * scale and must saturate: a writer without a clamp fails.
/// Not a power of two, so that x / scale rounds.
float mla_fp8_scale(const Case& c);
/// kvh_scale_granularity of c.kv_scales.
kvh_scale_granularity to_kvh(KvScales s);

/// k_scales and v_scales of a case over a cache of num_blocks blocks.
/// Values: log-uniform on [2^-8, 2^-2) from data_seed, so that
/// |K|, |V| < 2 quantize to codes up to 512 (the large end saturates); int8
/// caches: on [2^-6.5, 2^-5), so that |K|, |V| < 2 reach codes up to 181:
/// at the small scales the elements above 127 * scale saturate at +-127
/// (outliers), at the large ones none does. Every element distinct (a wrong
/// index or order, token or head, reads another value), K's and V's
/// different. Shapes per provider.h: tensor [1], head [num_kv_heads], block
/// [num_blocks, num_kv_heads], token [num_blocks, num_kv_heads, block_size],
/// slot [num_blocks, block_size], contiguous. Under KvScales::None there are
/// no tensors and every scale is 1. An MLA case's tensor scale is mla_fp8_scale (K's and V's:
/// the latent cache has one).
class KvScaleTensors {
 public:
  KvScaleTensors(const Case& c, int64_t num_blocks, uint64_t data_seed);
  kvh_scale_granularity granularity() const { return gran_; }
  /// The device tensors (data null under NONE).
  kvh_tensor k_tensor() const { return tensor(k_off_); }
  kvh_tensor v_tensor() const { return tensor(v_off_); }
  /// The scale of (physical block, kv head, token-in-block), from the host copy.
  float k_at(int64_t block, int64_t head, int64_t tok) const { return at(k_, block, head, tok); }
  float v_at(int64_t block, int64_t head, int64_t tok) const { return at(v_, block, head, tok); }
  /// What device::reference_write_fp8 needs (format and input dtype from c).
  device::Fp8WriteScales write_scales(const Case& c) const;
  /// The host copies alone, without the device tensors (k_tensor/v_tensor then null): what the
  /// float64 reference reads, safe to hand to a thread that may outlive the case.
  KvScaleTensors host_only() const;

 private:
  KvScaleTensors() = default;
  float at(const std::vector<float>& s, int64_t block, int64_t head, int64_t tok) const;
  kvh_tensor tensor(int64_t offset_floats) const;
  kvh_scale_granularity gran_ = KVH_SCALES_NONE;
  int64_t num_blocks_ = 0, num_kv_heads_ = 0, block_size_ = 0;
  std::vector<int64_t> shape_;
  std::vector<float> k_, v_;
  int64_t k_off_ = 0, v_off_ = 0;  // floats from the buffer's start
  device::Buffer buf_;
};

}  // namespace kvh
