// Where element (block, kv head, token-in-block, dim) of a paged KV cache
// lives: one small value type per cache format, built from the views'
// strides, passed by value into kernels. Every writer and reader addresses its
// caches through these types, so each format's element address is defined
// once, here. After FlashInfer's paged-cache struct (a stride per coordinate,
// K and V strides independent, so interleaved, padded, packed and
// head-interleaved caches need no special case), with 64-bit strides and
// offsets: offsets past 2^31 are a real bug class (DESIGN.md, "large").
//
// Shapes in elements, outermost first (provider.h, DESIGN.md "Domain facts");
// x = 16 bytes / cache element (8 for fp16/bf16, 16 for fp8), a template
// parameter wherever the layout splits a coordinate by x:
//
//   format         type                 caches
//   NHD ("flash")  NhdCacheAddr         K, V [num_blocks, block_size, num_kv_heads, head_size]
//   HND            HndCacheAddr         K, V [num_blocks, num_kv_heads, block_size, head_size]
//   pa_v1          PaV1CacheAddr<x>     K    [num_blocks, num_kv_heads, head_size/x, block_size, x]
//                                       V    [num_blocks, num_kv_heads, head_size, block_size]
//   shuffle        ShuffleCacheAddr<x>  K    as pa_v1
//                                       V    [num_blocks, num_kv_heads, block_size/x, head_size, x]
//
// NHD is vLLM's flash layout (reshape_and_cache_flash), HND FlashInfer's (vLLM
// hands it to the flash writer as a permuted view), pa_v1 vLLM's
// reshape_and_cache / paged attention v1-v2 layout (aiter shuffle=0), shuffle
// aiter's reshape_and_cache with shuffle=1 (the ROCm and ASM decode kernels).
//
// A format type holds one addressing of each cache, members k and v; each answers
//   (block, head, tok, dim)       the element's offset, in elements, from the
//                                 view's data pointer (plus `offset`, the storage
//                                 offset of element [0,...,0]: 0 for a kvh_tensor,
//                                 whose data pointer is that element)
//   token_offset(block, head, tok) the offset of the token's dim 0
//   dim_offset(dim)               dim's offset from dim 0 of its token:
//                                 (b, h, t, d) = token_offset(b, h, t) + dim_offset(d)
//   slot_offset(block, tok),      the slot's offset (head 0, dim 0) and head's offset
//   head_offset(head)             from it: token_offset(b, h, t) = slot_offset(b, t) +
//                                 head_offset(h), so a writer, which moves every head
//                                 of one slot, takes the slot's base once
//   dim_stride()                  dim_offset(d + 1) - dim_offset(d) inside one
//                                 x-vector (for every d where nothing is x-split)
// dim_offset is linear within and across x-vectors, dim_offset(c*x + e) =
// c * dim_offset(x) + e * dim_stride() for 0 <= e < x, so a kernel may walk a
// token's dims with those two strides. Indices are non-negative and inside the
// view (a split coordinate divides by x unsigned). Every type here is plain
// int64 fields, trivially copyable: a kernel argument by value.
#pragma once
#include <stdint.h>

#include <type_traits>

#include "kvh_runtime.h"
#include "kvharness/provider.h"

namespace kvh::kernels {

/// One cache whose block, kv head, token and dim each have one stride (no
/// coordinate split by x): K and V of NHD and HND, V of pa_v1. Strides and
/// offset in elements.
struct UnsplitAddr {
  int64_t offset, block, head, token, dim;

  KVH_HD int64_t slot_offset(int64_t b, int64_t t) const { return offset + b * block + t * token; }
  KVH_HD int64_t head_offset(int64_t h) const { return h * head; }
  KVH_HD int64_t token_offset(int64_t b, int64_t h, int64_t t) const { return slot_offset(b, t) + head_offset(h); }
  KVH_HD int64_t dim_offset(int64_t d) const { return d * dim; }
  KVH_HD int64_t dim_stride() const { return dim; }
  KVH_HD int64_t operator()(int64_t b, int64_t h, int64_t t, int64_t d) const { return token_offset(b, h, t) + dim_offset(d); }
};

/// The x-split key cache of pa_v1 and shuffle (vLLM / aiter),
/// [num_blocks, num_kv_heads, head_size/x, block_size, x]: dim d sits in
/// x-vector d / x (stride `chunk`), element d % x (stride `elem`). Strides
/// and offset in elements.
template <int kX> struct XSplitKeyAddr {
  int64_t offset, block, head, chunk, token, elem;

  KVH_HD int64_t slot_offset(int64_t b, int64_t t) const { return offset + b * block + t * token; }
  KVH_HD int64_t head_offset(int64_t h) const { return h * head; }
  KVH_HD int64_t token_offset(int64_t b, int64_t h, int64_t t) const { return slot_offset(b, t) + head_offset(h); }
  KVH_HD int64_t dim_offset(int64_t d) const {
    return int64_t(uint64_t(d) / kX) * chunk + int64_t(uint64_t(d) % kX) * elem;
  }
  KVH_HD int64_t dim_stride() const { return elem; }
  KVH_HD int64_t operator()(int64_t b, int64_t h, int64_t t, int64_t d) const { return token_offset(b, h, t) + dim_offset(d); }
};

/// The shuffle value cache (aiter, shuffle=1), [num_blocks, num_kv_heads,
/// block_size/x, head_size, x]: token t sits in token group t / x (stride
/// `token_group`), element t % x (stride `token_elem`); dims have one
/// stride. Strides and offset in elements.
template <int kX> struct ShuffleValueAddr {
  int64_t offset, block, head, token_group, dim, token_elem;

  KVH_HD int64_t slot_offset(int64_t b, int64_t t) const {
    return offset + b * block + int64_t(uint64_t(t) / kX) * token_group + int64_t(uint64_t(t) % kX) * token_elem;
  }
  KVH_HD int64_t head_offset(int64_t h) const { return h * head; }
  KVH_HD int64_t token_offset(int64_t b, int64_t h, int64_t t) const { return slot_offset(b, t) + head_offset(h); }
  KVH_HD int64_t dim_offset(int64_t d) const { return d * dim; }
  KVH_HD int64_t dim_stride() const { return dim; }
  KVH_HD int64_t operator()(int64_t b, int64_t h, int64_t t, int64_t d) const { return token_offset(b, h, t) + dim_offset(d); }
};

/// The K and V addressing of one cache pair; the format types below fill it
/// from their views' strides (one stride array per view, its dims in the
/// format's order; a kvh_tensor's `stride`).
template <class K, class V> struct KvCacheAddr {
  K k;
  V v;
};

/// What NHD and HND have in common once their strides are named: a kernel
/// taking it serves both (the flash writer does).
using UnsplitKvAddr = KvCacheAddr<UnsplitAddr, UnsplitAddr>;

/// NHD ("flash", vLLM): K and V [num_blocks, block_size, num_kv_heads, head_size].
struct NhdCacheAddr : UnsplitKvAddr {
  NhdCacheAddr() = default;
  KVH_HD NhdCacheAddr(const int64_t* ks, const int64_t* vs, int64_t k_offset = 0, int64_t v_offset = 0)
      : UnsplitKvAddr{{k_offset, ks[0], ks[2], ks[1], ks[3]}, {v_offset, vs[0], vs[2], vs[1], vs[3]}} {}
  NhdCacheAddr(const kvh_tensor& kc, const kvh_tensor& vc) : NhdCacheAddr(kc.stride, vc.stride) {}
};

/// HND (FlashInfer, vLLM): K and V [num_blocks, num_kv_heads, block_size, head_size].
struct HndCacheAddr : UnsplitKvAddr {
  HndCacheAddr() = default;
  KVH_HD HndCacheAddr(const int64_t* ks, const int64_t* vs, int64_t k_offset = 0, int64_t v_offset = 0)
      : UnsplitKvAddr{{k_offset, ks[0], ks[1], ks[2], ks[3]}, {v_offset, vs[0], vs[1], vs[2], vs[3]}} {}
  HndCacheAddr(const kvh_tensor& kc, const kvh_tensor& vc) : HndCacheAddr(kc.stride, vc.stride) {}
};

/// pa_v1 (vLLM reshape_and_cache, aiter shuffle=0): K [num_blocks,
/// num_kv_heads, head_size/x, block_size, x], V [num_blocks, num_kv_heads, head_size, block_size].
template <int kX> struct PaV1CacheAddr : KvCacheAddr<XSplitKeyAddr<kX>, UnsplitAddr> {
  PaV1CacheAddr() = default;
  KVH_HD PaV1CacheAddr(const int64_t* ks, const int64_t* vs, int64_t k_offset = 0, int64_t v_offset = 0)
      : KvCacheAddr<XSplitKeyAddr<kX>, UnsplitAddr>{{k_offset, ks[0], ks[1], ks[2], ks[3], ks[4]},
                                                    {v_offset, vs[0], vs[1], vs[3], vs[2]}} {}
  PaV1CacheAddr(const kvh_tensor& kc, const kvh_tensor& vc) : PaV1CacheAddr(kc.stride, vc.stride) {}
};

/// shuffle (aiter reshape_and_cache, shuffle=1): K as pa_v1, V [num_blocks,
/// num_kv_heads, block_size/x, head_size, x].
template <int kX> struct ShuffleCacheAddr : KvCacheAddr<XSplitKeyAddr<kX>, ShuffleValueAddr<kX>> {
  ShuffleCacheAddr() = default;
  KVH_HD ShuffleCacheAddr(const int64_t* ks, const int64_t* vs, int64_t k_offset = 0, int64_t v_offset = 0)
      : KvCacheAddr<XSplitKeyAddr<kX>, ShuffleValueAddr<kX>>{{k_offset, ks[0], ks[1], ks[2], ks[3], ks[4]},
                                                             {v_offset, vs[0], vs[1], vs[2], vs[3], vs[4]}} {}
  ShuffleCacheAddr(const kvh_tensor& kc, const kvh_tensor& vc) : ShuffleCacheAddr(kc.stride, vc.stride) {}
};

static_assert(std::is_trivially_copyable_v<NhdCacheAddr> && std::is_trivially_copyable_v<HndCacheAddr> &&
                  std::is_trivially_copyable_v<PaV1CacheAddr<8>> && std::is_trivially_copyable_v<ShuffleCacheAddr<16>>,
              "kernel arguments by value");

namespace detail {
template <int kFormat, int kX> struct CacheAddrOf;
template <int kX> struct CacheAddrOf<KVH_CACHE_NHD, kX> { using type = NhdCacheAddr; };
template <int kX> struct CacheAddrOf<KVH_CACHE_HND, kX> { using type = HndCacheAddr; };
template <int kX> struct CacheAddrOf<KVH_CACHE_PA_V1, kX> { using type = PaV1CacheAddr<kX>; };
template <int kX> struct CacheAddrOf<KVH_CACHE_SHUFFLE, kX> { using type = ShuffleCacheAddr<kX>; };
}  // namespace detail

/// The addressing type of cache format kFormat (kvh_cache_format) with x = kX
/// (NHD and HND ignore x): what a kernel templated on the format indexes through.
template <int kFormat, int kX> using CacheAddr = typename detail::CacheAddrOf<kFormat, kX>::type;

}  // namespace kvh::kernels
