#include "layout.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <numeric>

namespace kvh {

const char* to_string(CacheFormat f) {
  switch (f) {
    case CacheFormat::Flash: return "flash";
    case CacheFormat::PaV1: return "pa_v1";
    case CacheFormat::Shuffle: return "shuffle";
    case CacheFormat::Hnd: return "hnd";
    case CacheFormat::Mla: return "mla";
  }
  return "?";
}

const std::vector<Scheme>& all_schemes() {
  static const std::vector<Scheme> s{Scheme::Separate, Scheme::KvFirst, Scheme::Interleaved, Scheme::Padded,
                                     Scheme::Packed,   Scheme::Offset,  Scheme::Large,  Scheme::HeadInterleaved,
                                     Scheme::DegenerateStrides, Scheme::KernelPages};
  return s;
}

const char* to_string(Scheme s) {
  switch (s) {
    case Scheme::Separate: return "separate";
    case Scheme::KvFirst: return "kv_first";
    case Scheme::Interleaved: return "interleaved";
    case Scheme::Padded: return "padded";
    case Scheme::Packed: return "packed";
    case Scheme::Offset: return "offset";
    case Scheme::Large: return "large";
    case Scheme::HeadInterleaved: return "head_interleaved";
    case Scheme::DegenerateStrides: return "degenerate_strides";
    case Scheme::KernelPages: return "kernel_pages";
  }
  return "?";
}

std::optional<CacheFormat> parse_cache_format(const std::string& s) {
  for (auto f : {CacheFormat::Flash, CacheFormat::PaV1, CacheFormat::Shuffle, CacheFormat::Hnd, CacheFormat::Mla})
    if (s == to_string(f)) return f;
  return std::nullopt;
}

std::optional<Scheme> parse_scheme(const std::string& s) {
  for (auto v : all_schemes())
    if (s == to_string(v)) return v;
  return std::nullopt;
}

std::string StridedView::str() const {
  return fmt::format("({}):({})+{}", fmt::join(shape, ","), fmt::join(stride, ","), offset);
}

int64_t StridedView::numel() const {
  return std::accumulate(shape.begin(), shape.end(), int64_t{1}, std::multiplies<>());
}

int64_t StridedView::end() const {
  int64_t last = offset;
  for (size_t i = 0; i < shape.size(); ++i) last += (shape[i] - 1) * stride[i];
  return last + 1;
}

std::optional<std::vector<int64_t>> StridedView::index_of(int64_t elem) const {
  int64_t rem = elem - offset;
  if (rem < 0) return std::nullopt;
  std::vector<size_t> order(shape.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return stride[a] > stride[b]; });
  std::vector<int64_t> idx(shape.size(), 0);
  for (size_t d : order) {
    if (stride[d] == 0 || shape[d] == 1) continue;  // a size-1 dim's index is 0 whatever its stride
    int64_t i = rem / stride[d];
    if (i >= shape[d]) return std::nullopt;
    idx[d] = i;
    rem -= i * stride[d];
  }
  if (rem != 0) return std::nullopt;
  return idx;
}

int apply_degenerate_strides(StridedView& v, int64_t stride) {
  int n = 0;
  for (size_t i = 0; i < v.shape.size(); ++i)
    if (v.shape[i] == 1) v.stride[i] = stride, ++n;
  return n;
}

std::vector<int64_t> cache_shape(CacheFormat format, bool is_value, const CacheGeometry& g) {
  switch (format) {
    case CacheFormat::Flash: return {g.num_blocks, g.block_size, g.num_kv_heads, g.head_size};
    case CacheFormat::PaV1:
      if (is_value) return {g.num_blocks, g.num_kv_heads, g.head_size, g.block_size};
      return {g.num_blocks, g.num_kv_heads, g.head_size / g.x, g.block_size, g.x};
    case CacheFormat::Shuffle:
      if (is_value) return {g.num_blocks, g.num_kv_heads, g.block_size / g.x, g.head_size, g.x};
      return {g.num_blocks, g.num_kv_heads, g.head_size / g.x, g.block_size, g.x};
    case CacheFormat::Hnd: return {g.num_blocks, g.num_kv_heads, g.block_size, g.head_size};
    case CacheFormat::Mla: return {g.num_blocks, g.block_size, 1, is_value ? g.rope_dim : g.head_size};
  }
  return {};
}

namespace {

// Row-major strides of `shape` with the outermost stride replaced by block_stride.
std::vector<int64_t> block_strides(const std::vector<int64_t>& shape, int64_t block_stride) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    s[i] = acc;
    acc *= shape[i];
  }
  s[0] = block_stride;
  return s;
}

// The latent cache (format mla): rows of kv_lora_rank + rope_dim elements, block_stride apart per
// block; K is the latent part of each row, V the rope part, `latent` the whole row.
LayoutOrReason make_mla_layout(Scheme scheme, const CacheGeometry& g, int64_t padded_page_bytes,
                               int64_t storage_offset, int64_t degenerate_stride) {
  auto no = [](std::string why) { return LayoutOrReason{std::nullopt, std::move(why)}; };
  if (g.num_kv_heads != 1 || g.rope_dim <= 0)
    return no(fmt::format("the mla cache has one latent head and a rope part (num_kv_heads 1, rope_dim > 0); got "
                          "num_kv_heads {} and rope_dim {}",
                          g.num_kv_heads, g.rope_dim));
  const int64_t row = g.head_size + g.rope_dim, page = g.block_size * row, nb = g.num_blocks;
  CacheLayout L{CacheFormat::Mla, scheme, g, {}, {}, 0, 0, scheme == Scheme::DegenerateStrides ? degenerate_stride : 0};
  L.block_stride = page;
  switch (scheme) {
    case Scheme::Separate: break;
    case Scheme::Offset: L.key.offset = storage_offset > 0 ? storage_offset : 37 * g.x; break;
    case Scheme::Padded: {
      if (padded_page_bytes % g.elem_bytes != 0) return no("padded page size is not a whole number of elements");
      const int64_t padded = padded_page_bytes > 0 ? padded_page_bytes / g.elem_bytes : page + std::max<int64_t>(64, page / 4);
      if (padded <= page)
        return no(fmt::format("padded page {} bytes does not exceed the latent page {} bytes", padded * g.elem_bytes,
                              page * g.elem_bytes));
      L.block_stride = padded;
      break;
    }
    case Scheme::DegenerateStrides:
      if (g.block_size != 1)
        return no(fmt::format("degenerate_strides needs a size-1 dim of the mla cache [num_blocks, block_size, {}]: "
                              "block_size 1, not {}",
                              row, g.block_size));
      break;
    default:
      return no(fmt::format("layout {} does not apply to the mla cache (one latent tensor; layouts: separate, offset, "
                            "padded, degenerate_strides)",
                            to_string(scheme)));
  }
  L.storage_elems = L.key.offset + nb * L.block_stride;
  L.latent = StridedView{{nb, g.block_size, row}, {L.block_stride, row, 1}, L.key.offset};
  L.key = StridedView{cache_shape(CacheFormat::Mla, false, g), {L.block_stride, row, row, 1}, L.key.offset};
  L.value = StridedView{cache_shape(CacheFormat::Mla, true, g), {L.block_stride, row, row, 1}, L.key.offset + g.head_size};
  if (scheme == Scheme::DegenerateStrides) {
    apply_degenerate_strides(L.latent, degenerate_stride);
    apply_degenerate_strides(L.key, degenerate_stride);
    apply_degenerate_strides(L.value, degenerate_stride);
  }
  return {L, ""};
}

}  // namespace

LayoutOrReason make_cache_layout(CacheFormat format, Scheme scheme, const CacheGeometry& g, int64_t padded_page_bytes,
                                 int64_t storage_offset, int64_t degenerate_stride) {
  auto no = [](std::string why) { return LayoutOrReason{std::nullopt, std::move(why)}; };
  if (g.num_blocks <= 0 || g.block_size <= 0 || g.num_kv_heads <= 0 || g.head_size <= 0)
    return no("num_blocks, block_size, num_kv_heads and head_size must be positive");
  if (format != CacheFormat::Flash && format != CacheFormat::Hnd && g.head_size % g.x != 0)
    return no(fmt::format("head_size {} is not a multiple of x = {} ({} cache)", g.head_size, g.x, to_string(format)));
  if (format == CacheFormat::Shuffle && g.block_size % g.x != 0)
    return no(fmt::format("block_size {} is not a multiple of x = {} (shuffled V cache)", g.block_size, g.x));
  if (scheme == Scheme::Packed && format != CacheFormat::Flash)
    return no("packed last dim exists only for the flash (NHD) cache");
  if (scheme == Scheme::HeadInterleaved && format == CacheFormat::Flash)
    return no("head_interleaved needs the kv head as dim 1 (hnd, pa_v1, shuffle); the flash (NHD) cache has tokens there");
  if (scheme == Scheme::DegenerateStrides && g.num_kv_heads != 1 && g.block_size != 1)
    return no(fmt::format("degenerate_strides needs a size-1 cache dim (num_kv_heads or block_size 1); this case has "
                          "num_kv_heads {} and block_size {}",
                          g.num_kv_heads, g.block_size));

  if (format == CacheFormat::Mla) return make_mla_layout(scheme, g, padded_page_bytes, storage_offset, degenerate_stride);
  CacheLayout L{format, scheme, g, {}, {}, 0, 0, scheme == Scheme::DegenerateStrides ? degenerate_stride : 0};
  const int64_t page = g.page_elems(), nb = g.num_blocks;
  L.key.shape = cache_shape(format, false, g);
  L.value.shape = cache_shape(format, true, g);
  switch (scheme) {
    case Scheme::Separate: {
      const int64_t gap = 64;  // allocator gap: memory of neither cache
      L.block_stride = page;
      L.value.offset = nb * page + gap;
      L.storage_elems = 2 * nb * page + gap;
      break;
    }
    case Scheme::KvFirst:
    case Scheme::DegenerateStrides:  // the size-1 dims' strides are replaced below
    case Scheme::KernelPages:        // geo is in kernel pages already
      L.block_stride = page;
      L.value.offset = nb * page;
      L.storage_elems = 2 * nb * page;
      break;
    case Scheme::Offset:
      if (storage_offset <= 0) storage_offset = 37 * g.x;  // 16-byte aligned, not page aligned
      L.block_stride = page;
      L.key.offset = storage_offset;
      L.value.offset = storage_offset + nb * page;
      L.storage_elems = storage_offset + 2 * nb * page;
      break;
    case Scheme::Interleaved:
    case Scheme::Large:  // blocks-first, so that offsets inside each view pass 2^31
      L.block_stride = 2 * page;
      L.value.offset = page;
      L.storage_elems = nb * 2 * page;
      break;
    case Scheme::Padded: {
      int64_t padded = padded_page_bytes > 0 ? padded_page_bytes / g.elem_bytes : 0;
      if (padded_page_bytes % g.elem_bytes != 0) return no("padded page size is not a whole number of elements");
      if (padded == 0) padded = 2 * page + std::max<int64_t>(64, page / 4);
      if (padded <= 2 * page)
        return no(fmt::format("padded page {} bytes does not exceed the K+V page {} bytes", padded * g.elem_bytes,
                              2 * page * g.elem_bytes));
      L.block_stride = padded;
      L.value.offset = page;
      L.storage_elems = nb * padded;
      break;
    }
    case Scheme::HeadInterleaved: {
      // Storage (num_blocks, num_kv_heads, 2, head_page): K of head h, then V of head h.
      const int64_t head_page = g.block_size * g.head_size;
      L.block_stride = 2 * page;
      L.value.offset = head_page;
      L.storage_elems = nb * 2 * page;
      L.key.stride = block_strides(L.key.shape, L.block_stride);
      L.value.stride = block_strides(L.value.shape, L.block_stride);
      L.key.stride[1] = L.value.stride[1] = 2 * head_page;
      return {L, ""};
    }
    case Scheme::Packed: {
      // Storage tensor (num_blocks, num_kv_heads, block_size, 2*head_size); the
      // flash view [block, token, head, dim] is a permuted view of it.
      const int64_t hd2 = 2 * g.head_size;
      L.block_stride = g.num_kv_heads * g.block_size * hd2;
      L.key.stride = {L.block_stride, hd2, g.block_size * hd2, 1};
      L.value.stride = L.key.stride;
      L.value.offset = g.head_size;
      L.storage_elems = nb * L.block_stride;
      return {L, ""};
    }
  }
  L.key.stride = block_strides(L.key.shape, L.block_stride);
  L.value.stride = block_strides(L.value.shape, L.block_stride);
  if (scheme == Scheme::DegenerateStrides) {
    apply_degenerate_strides(L.key, degenerate_stride);
    apply_degenerate_strides(L.value, degenerate_stride);
  }
  return {L, ""};
}

std::string CacheLayout::describe(int64_t elem) const {
  if (format == CacheFormat::Mla) {
    if (auto i = key.index_of(elem)) return fmt::format("latent (kv_c) of block {} (token {}, dim {})", (*i)[0], (*i)[1], (*i)[3]);
    if (auto i = value.index_of(elem))
      return fmt::format("rope (k_pe) of block {} (token {}, dim {})", (*i)[0], (*i)[1], geo.head_size + (*i)[3]);
  }
  auto logical = [&](const StridedView& v, const std::vector<int64_t>& i) {
    // tensor index -> (block, head, token, dim) per format
    int64_t b = i[0], h, t, d;
    if (format == CacheFormat::Flash) {
      t = i[1], h = i[2], d = i[3];
    } else if (format == CacheFormat::Hnd) {
      h = i[1], t = i[2], d = i[3];
    } else if (&v == &key || format == CacheFormat::Shuffle) {
      h = i[1];
      if (&v == &key) d = i[2] * geo.x + i[4], t = i[3];
      else t = i[2] * geo.x + i[4], d = i[3];
    } else {
      h = i[1], d = i[2], t = i[3];
    }
    return fmt::format("block {} (head {}, token {}, dim {})", b, h, t, d);
  };
  if (auto i = key.index_of(elem)) return "K page of " + logical(key, *i);
  if (auto i = value.index_of(elem)) return "V page of " + logical(value, *i);
  if (elem < 0) return fmt::format("arena margin, {} elements before the storage", -elem);
  if (elem >= storage_elems) return fmt::format("arena margin, {} elements after the storage", elem - storage_elems + 1);
  if (scheme == Scheme::Separate && elem >= key.end() && elem < value.offset) return "gap between the K and V allocations";
  if (elem < key.offset) return "storage before the view's offset";
  if (scheme == Scheme::Padded) return fmt::format("page padding of block {}", elem / block_stride);
  return "storage outside both views";
}

}  // namespace kvh
