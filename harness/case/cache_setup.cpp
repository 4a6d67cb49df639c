#include "case/cache_setup.h"

#include "device/device.h"
#include "case/kv_scales.h"
#include "case/mla_inputs.h"
#include "case/views.h"

namespace kvh {

kvh_dtype to_kvh(DType d) { return d == DType::F16 ? KVH_DT_F16 : KVH_DT_BF16; }

FusedQkv fused_qkv_views(int64_t T, int64_t nh, int64_t nkv, int64_t hd) {
  FusedQkv f;
  const int64_t row = (nh + 2 * nkv) * hd;
  f.q = StridedView{{T, nh, hd}, {row, hd, 1}, 0};
  f.k = StridedView{{T, nkv, hd}, {row, hd, 1}, nh * hd};
  f.v = StridedView{{T, nkv, hd}, {row, hd, 1}, (nh + nkv) * hd};
  return f;
}

std::string refusal_detail(const Kernel& k, const std::string& reason) {
  return k.label() + " refused the case at call time: " + reason;
}

LaunchFailure launch_failure(const Kernel& k, int rc) {
  if (rc == KVH_RAISED) return {Status::Crash, k.label() + " raised: " + k.last_error()};
  if (rc == KVH_UNSUPPORTED) return {Status::Unsupported, refusal_detail(k, k.last_error())};
  return {Status::Fail, k.label() + " returned " + device::error_text(rc)};
}

KernelUse kernel_use(const Case& c, int32_t cache_format) {
  KernelUse u;
  u.head_size = c.head_size;
  u.block_size = c.page_size();
  u.num_heads = c.num_heads;
  u.num_kv_heads = c.num_kv_heads;
  u.dtype = to_kvh(c.dtype);
  u.cache_format = cache_format;
  u.cache_dtype = cache_kvh_dtype(c);
  u.kv_scales = to_kvh(c.kv_scales);
  return u;
}

CacheGeometry case_geometry(const Case& c, int64_t manager_blocks) {
  const int64_t page = c.page_size(), r = c.block_size / page;
  if (c.mla())  // the latent cache: K view = the latent part, V view = the rope part (layout.h)
    return CacheGeometry{manager_blocks, c.block_size, 1, c.kv_lora_rank, cache_x(c), cache_elem_bytes(c),
                         c.qk_rope_head_dim};
  return CacheGeometry{manager_blocks * r, page, c.num_kv_heads, c.head_size, cache_x(c), cache_elem_bytes(c)};
}

std::string cache_format_refusal(const Case& c, const Kernel& k) {
  const bool mla_kernel = k.cache_format == KVH_CACHE_MLA;
  if (c.mla() == mla_kernel) return "";
  return c.mla() ? k.label() + " declares cache format " + cache_format_name(k.cache_format) +
                       "; this case is MLA's latent cache (format mla, kv_lora_rank " + std::to_string(c.kv_lora_rank) +
                       ")"
                 : k.label() + " declares cache format mla (the MLA latent cache); this case is not MLA (head_size " +
                       std::to_string(c.head_size) + ", " + std::to_string(c.num_kv_heads) + " kv heads)";
}

StridedView kernel_view(const StridedView& v, const CacheLayout& L) {
  StridedView out = v;
  if (L.scheme == Scheme::DegenerateStrides) apply_degenerate_strides(out, L.degenerate_stride);
  return out;
}

kvh_write_args writer_args(const CacheLayout& L, void* d_storage, const FusedQkv& qkv, void* d_qkv, void* d_slots,
                           int64_t num_tokens, DType dtype, kvh_dtype cache_dtype, const KvScaleTensors* scales) {
  kvh_write_args a{};
  const kvh_dtype dt = to_kvh(dtype);
  a.key_cache = to_tensor(L.key, d_storage, L.geo.elem_bytes, cache_dtype);
  a.value_cache = to_tensor(L.value, d_storage, L.geo.elem_bytes, cache_dtype);
  if (scales) {
    a.kv_scales = scales->granularity();
    a.k_scales = scales->k_tensor();
    a.v_scales = scales->v_tensor();
  }
  a.key = to_tensor(kernel_view(qkv.k, L), d_qkv, 2, dt);
  a.value = to_tensor(kernel_view(qkv.v, L), d_qkv, 2, dt);
  if (L.format == CacheFormat::Mla) {  // provider.h KVH_CACHE_MLA: kv_c [T, R], k_pe [T, P], one latent cache
    a.key = to_tensor(kernel_view(mla_writer_view(qkv.k), L), d_qkv, 2, dt);
    a.value = to_tensor(kernel_view(mla_writer_view(qkv.v), L), d_qkv, 2, dt);
    a.key_cache = a.value_cache = to_tensor(L.latent, d_storage, L.geo.elem_bytes, cache_dtype);
    a.v_scales = a.k_scales;  // the one per-tensor scale
  }
  a.slot_mapping = contiguous_tensor(d_slots, {num_tokens}, KVH_DT_I64);
  a.block_size = L.geo.block_size;
  return a;
}

int launch_writer(const Kernel& w, const CacheLayout& L, void* d_storage, const FusedQkv& qkv, void* d_qkv,
                  void* d_slots, int64_t num_tokens, DType dtype, kvh_dtype cache_dtype,
                  const KvScaleTensors* scales) {
  const kvh_write_args a = writer_args(L, d_storage, qkv, d_qkv, d_slots, num_tokens, dtype, cache_dtype, scales);
  return w.write(&a, nullptr);
}

}  // namespace kvh
