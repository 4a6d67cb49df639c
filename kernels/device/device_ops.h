// The harness's own device work, where the data lives (issue 9): sentinel
// and counter-based fills, the reference writer, and bulk comparisons. Not
// kernels under test: written from the layouts' definitions, checked against
// reference/ in device_ops_test.cpp. On the cpu backend these run through the
// host SIMT runtime's barrier-free path, on all its workers.
#pragma once
#include <cstddef>
#include <cstdint>

namespace kvh::device {

/// A strided view of 16-bit elements: up to 6 dims, shape and stride in
/// elements (outermost first), offset in elements from the base pointer.
struct View16 {
  int32_t ndim = 0;
  int64_t shape[6] = {}, stride[6] = {};
  int64_t offset = 0;
  int64_t numel() const;
};

/// Storage offset (elements) of element (block b, kv head h, token t, dim d)
/// of one paged cache: offset + b*sb + h*sh + (t/xt)*st_hi + (t%xt)*st_lo +
/// (d/xd)*sd_hi + (d%xd)*sd_lo. Covers every cache format (an x-split dim has
/// xd or xt = x; an unsplit one has x = its size and hi stride 0).
struct CacheMap {
  int64_t offset = 0, sb = 0, sh = 0, st_hi = 0, st_lo = 0, xt = 1, sd_hi = 0, sd_lo = 0, xd = 1;
};

/// bytes[i] = GuardedArena::sentinel(i) for i in [0, n): a guarded arena's
/// margins and unowned storage, position-dependent (harness/case/arena.h).
void fill_sentinel(void* bytes, size_t n);
/// The same for bytes [first, first + n) of an arena whose byte `first` is at `bytes`.
void fill_sentinel_at(void* bytes, size_t n, uint64_t first);
/// base[v(i)] = rng::bits16(kind, bf16, key, i) for every logical (row-major)
/// index i of `v` (kernels/device/counter_rng.h): the same values the host gets from
/// the same stream. skip_outer: null, or device bytes [v.shape[0]] (v of 2 or
/// more dims, else std::invalid_argument on every backend); the elements of an outermost index
/// whose byte is nonzero are left as they are: a cache's pages that a writer
/// will overwrite in full (the others get the values they would get anyway).
void fill_view16(void* base, const View16& v, int kind, bool bf16, uint64_t key, const uint8_t* skip_outer = nullptr);
/// base[v(i)] = bits for every index i of `v`: a constant bit pattern (a
/// decode case's stale slots, harness/case/stale.h). v.offset may be negative
/// (a page in an arena's front margin) as long as base[v(i)] lies in the buffer.
void fill_view16_const(void* base, const View16& v, uint16_t bits);
/// The reference writer: for every token t with slot_mapping[t] >= 0, copies
/// key[t, h, d] / value[t, h, d] (views of [num_tokens, num_kv_heads,
/// head_size] at src) to block slot/block_size, token slot%block_size of the
/// K / V cache at `storage`. slot_mapping: device int64 [num_tokens].
void reference_write(void* storage, const CacheMap& k_cache, const CacheMap& v_cache, const void* src,
                     const View16& key, const View16& value, const int64_t* slot_mapping, int64_t num_tokens,
                     int64_t block_size);
/// fill_view8's `mode` for an int8 cache (0: e4m3fn, 1: e4m3fnuz).
constexpr int kCode8Int8 = 2;
/// base8[v(i)] = rng::fp8_old_code(key, i, fnuz) for every logical index i of
/// `v` (a view of 1-byte elements): the old tokens of an fp8 cache; mode
/// kCode8Int8: rng::int8_old_code(key, i), an int8 cache's.
void fill_view8(void* base, const View16& v, int mode, uint64_t key);
/// base8[v(i)] = code for every element of `v` (1-byte elements): an fp8 cache's stale pattern.
void fill_view8_const(void* base, const View16& v, uint8_t code);

/// What the reference writer needs to quantize into an fp8 cache: the
/// format, the input dtype, and the scales (granularity as
/// kvh_scale_granularity; k/v f32 device pointers with up to 3 strides,
/// shapes per provider.h; null under NONE, where the scale is 1).
struct Fp8WriteScales {
  int32_t fnuz = 0, bf16_input = 0, granularity = 0;
  int32_t int8 = 0;  // 1: an int8 cache (reference/int8.h int8_encode) instead of fp8
  const float* k = nullptr;
  const float* v = nullptr;
  int64_t ks[3] = {}, vs[3] = {};
};
/// The reference writer into an fp8 cache (1-byte elements at `storage`):
/// as reference_write, but each element becomes
/// reference::fp8_encode(float(value) / scale) (reference/fp8.h: round to
/// nearest even, saturating), the division in float32 as provider.h states;
/// with scales.int8, reference::int8_encode (reference/int8.h: RNE, +-127).
void reference_write_fp8(void* storage, const CacheMap& k_cache, const CacheMap& v_cache, const void* src,
                         const View16& key, const View16& value, const int64_t* slot_mapping, int64_t num_tokens,
                         int64_t block_size, const Fp8WriteScales& scales);

/// Index of the first byte where a and b (device, n bytes each) differ, or -1.
int64_t first_difference(const void* a, const void* b, size_t n);

}  // namespace kvh::device
