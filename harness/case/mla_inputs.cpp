#include "case/mla_inputs.h"

#include <algorithm>
#include <stdexcept>

#include "device/counter_rng.h"

namespace kvh {

FusedQkv mla_kv_views(int64_t T, int64_t R, int64_t P) {
  const int64_t row = R + P + kMlaProjectionPad;
  FusedQkv f;
  f.q = StridedView{{T, 0, R + P}, {row, R + P, 1}, 0};
  f.k = StridedView{{T, 1, R}, {row, R, 1}, 0};
  f.v = StridedView{{T, 1, P}, {row, P, 1}, R};
  return f;
}

StridedView mla_writer_view(const StridedView& v) {
  return StridedView{{v.shape[0], v.shape[2]}, {v.stride[0], v.stride[2]}, v.offset};
}

DeviceQkv make_device_mla_kv(int64_t T, int64_t R, int64_t P, DType dtype, uint64_t data_seed, uint64_t kc_stream,
                             uint64_t kpe_stream) {
  DeviceQkv out;
  out.views = mla_kv_views(T, R, P);
  const int64_t elems = std::max<int64_t>(T * (R + P + kMlaProjectionPad), 1);
  out.buf = device::Buffer(size_t(elems) * 2);
  const bool bf16 = dtype == DType::BF16;
  device::fill_view16(out.buf.get(), view16(StridedView{{elems}, {1}, 0}), rng::kOldToken, bf16,
                      rng::stream_key(data_seed, rng::kFiller));
  if (T == 0) return out;
  device::fill_view16(out.buf.get(), view16(out.views.k), rng::kInput, bf16, rng::stream_key(data_seed, kc_stream));
  device::fill_view16(out.buf.get(), view16(out.views.v), rng::kInput, bf16, rng::stream_key(data_seed, kpe_stream));
  return out;
}

void reference_write_mla_into(DeviceArena& cache, const CacheLayout& L, const void* src, const FusedQkv& kv,
                              const int64_t* slots, int64_t T, const device::Fp8WriteScales* fp8) {
  if (L.format != CacheFormat::Mla) throw std::invalid_argument("reference_write_mla_into: not an mla layout");
  // The reference writer copies K and V of the same head size; here each part is written on its
  // own (K map and view twice for kv_c, then the V map and view twice for k_pe).
  for (bool rope : {false, true}) {
    const device::CacheMap m = cache_map(L, rope);
    const device::View16 v = view16(rope ? kv.v : kv.k);
    if (fp8) {
      device::Fp8WriteScales s = *fp8;
      s.v = s.k, s.vs[0] = s.ks[0];  // one scale for the whole row
      device::reference_write_fp8(cache.storage(), m, m, src, v, v, slots, T, L.geo.block_size, s);
    } else {
      device::reference_write(cache.storage(), m, m, src, v, v, slots, T, L.geo.block_size);
    }
  }
}

}  // namespace kvh
