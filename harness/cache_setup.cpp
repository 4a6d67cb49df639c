#include "cache_setup.h"

#include "device.h"
#include "values.h"
#include "views.h"

namespace kvh {

namespace {
// Finite, non-zero, magnitudes 2^-5..2^5.
uint16_t old_token_bits(DType d, uint64_t r) {
  if (d == DType::F16) return uint16_t((r & 0x8000u) | (((r >> 16) % 11 + 10) << 10) | ((r >> 32) & 0x3ffu));
  return uint16_t((r & 0x8000u) | (((r >> 16) % 11 + 122) << 7) | ((r >> 32) & 0x7fu));
}
}  // namespace

kvh_dtype to_kvh(DType d) { return d == DType::F16 ? KVH_DT_F16 : KVH_DT_BF16; }

void fill_old_tokens(const CacheLayout& L, GuardedArena& cache, DType dtype, uint64_t seed) {
  uint16_t* st = cache.storage_as<uint16_t>();
  uint64_t s = seed | 1;
  auto fill = [&](int64_t off) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;  // xorshift64: this runs for every cache element
    st[off] = old_token_bits(dtype, s);
  };
  for_each_offset(L.key, fill);
  for_each_offset(L.value, fill);
}

FusedQkv make_fused_qkv(int64_t T, int64_t nh, int64_t nkv, int64_t hd, const std::vector<uint16_t>& key,
                        const std::vector<uint16_t>& value, DType dtype, std::mt19937_64& rng) {
  FusedQkv f;
  const int64_t row = (nh + 2 * nkv) * hd;
  f.buf.resize(size_t(std::max<int64_t>(T * row, 1)));
  uint64_t x = rng() | 1;
  for (auto& e : f.buf) {  // the columns nobody reads in a write: cheap finite non-zero bits
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    e = old_token_bits(dtype, x);
  }
  for (int64_t t = 0; t < T; ++t)
    for (int64_t i = 0; i < nkv * hd; ++i) {
      f.buf[size_t(t * row + nh * hd + i)] = key[size_t(t * nkv * hd + i)];
      f.buf[size_t(t * row + (nh + nkv) * hd + i)] = value[size_t(t * nkv * hd + i)];
    }
  const FusedQkv views = fused_qkv_views(T, nh, nkv, hd);
  f.q = views.q;
  f.k = views.k;
  f.v = views.v;
  return f;
}

FusedQkv fused_qkv_views(int64_t T, int64_t nh, int64_t nkv, int64_t hd) {
  FusedQkv f;
  const int64_t row = (nh + 2 * nkv) * hd;
  f.q = StridedView{{T, nh, hd}, {row, hd, 1}, 0};
  f.k = StridedView{{T, nkv, hd}, {row, hd, 1}, nh * hd};
  f.v = StridedView{{T, nkv, hd}, {row, hd, 1}, (nh + nkv) * hd};
  return f;
}

LaunchFailure launch_failure(const Kernel& k, int rc) {
  if (rc == KVH_RAISED) return {Status::Crash, k.name + " raised: " + k.last_error()};
  return {Status::Fail, k.name + " returned " + device::error_text(rc)};
}

KernelUse kernel_use(const Case& c, int32_t cache_format) {
  KernelUse u;
  u.head_size = c.head_size;
  u.block_size = c.block_size;
  u.num_heads = c.num_heads;
  u.num_kv_heads = c.num_kv_heads;
  u.dtype = to_kvh(c.dtype);
  u.cache_format = cache_format;
  return u;
}

int launch_writer(const Kernel& w, const CacheLayout& L, void* d_storage, const FusedQkv& qkv, void* d_qkv,
                  void* d_slots, int64_t num_tokens, DType dtype) {
  kvh_write_args a{};
  const kvh_dtype dt = to_kvh(dtype);
  a.key_cache = to_tensor(L.key, d_storage, 2, dt);
  a.value_cache = to_tensor(L.value, d_storage, 2, dt);
  a.key = to_tensor(qkv.k, d_qkv, 2, dt);
  a.value = to_tensor(qkv.v, d_qkv, 2, dt);
  a.slot_mapping = contiguous_tensor(d_slots, {num_tokens}, KVH_DT_I64);
  a.block_size = L.geo.block_size;
  return w.write(&a, nullptr);
}

}  // namespace kvh
