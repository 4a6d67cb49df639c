#include "case/device_cache.h"

#include <fmt/format.h>

#include <algorithm>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

#include "device/counter_rng.h"
#include "run/parallel.h"
#include "case/stale.h"
#include "case/views.h"
#include "check/write_check.h"

namespace kvh {

device::View16 view16(const StridedView& v) {
  if (v.shape.empty() || v.shape.size() > 6) throw std::invalid_argument("a view of 1 to 6 dims: " + v.str());
  device::View16 out;
  out.ndim = int32_t(v.shape.size());
  for (size_t i = 0; i < v.shape.size(); ++i) out.shape[i] = v.shape[i], out.stride[i] = v.stride[i];
  out.offset = v.offset;
  return out;
}

device::CacheMap cache_map(const CacheLayout& L, bool is_value) {
  const StridedView& v = is_value ? L.value : L.key;
  const auto& s = v.stride;
  const int64_t x = L.geo.x, B = L.geo.block_size, D = L.geo.head_size;
  device::CacheMap m;
  m.offset = v.offset;
  m.sb = s[0];
  // An unsplit token or dim: x = its whole extent, so the "hi" part is always 0.
  m.xt = B;
  m.xd = L.format == CacheFormat::Mla && is_value ? L.geo.rope_dim : D;  // mla: V is the rope part
  switch (L.format) {
    case CacheFormat::Flash:  // [b, t, h, d]
    case CacheFormat::Mla:    // [b, t, 1, latent or rope dim]
      m.st_lo = s[1], m.sh = s[2], m.sd_lo = s[3];
      return m;
    case CacheFormat::Hnd:  // [b, h, t, d]
      m.sh = s[1], m.st_lo = s[2], m.sd_lo = s[3];
      return m;
    case CacheFormat::PaV1:
      if (is_value) {  // [b, h, d, t]
        m.sh = s[1], m.sd_lo = s[2], m.st_lo = s[3];
        return m;
      }
      break;
    case CacheFormat::Shuffle:
      if (is_value) {  // [b, h, t/x, d, t%x]
        m.sh = s[1], m.xt = x, m.st_hi = s[2], m.sd_lo = s[3], m.st_lo = s[4];
        return m;
      }
      break;
  }
  // The x-split K cache of pa_v1 and shuffle: [b, h, d/x, t, d%x].
  m.sh = s[1], m.xd = x, m.sd_hi = s[2], m.st_lo = s[3], m.sd_lo = s[4];
  return m;
}

std::vector<PageRange> page_ranges(std::vector<int64_t> ids, int64_t num_pages) {
  std::sort(ids.begin(), ids.end());
  std::vector<PageRange> out;
  for (int64_t id : ids) {
    if (id < 0 || id >= num_pages) continue;
    if (!out.empty() && id <= out.back().end)
      out.back().end = std::max(out.back().end, id + 1);
    else
      out.push_back({id, id + 1});
  }
  return out;
}

namespace {

// Pages [r.begin, r.end) of view v: v with dim 0 cut to them.
StridedView page_view(const StridedView& v, const PageRange& r) {
  StridedView p = v;
  p.shape[0] = r.end - r.begin;
  p.offset = v.offset + r.begin * v.stride[0];
  return p;
}

// The highest element offset of a non-empty view (strides are non-negative).
int64_t last_offset(const StridedView& v) {
  int64_t last = v.offset;
  for (size_t d = 0; d < v.shape.size(); ++d) last += (v.shape[d] - 1) * v.stride[d];
  return last;
}

}  // namespace

std::vector<device::ByteRange> touched_bytes(const CacheLayout& L, int64_t margin, const std::vector<PageRange>& touched) {
  const int64_t eb = L.geo.elem_bytes, storage = L.storage_elems * eb;
  std::vector<device::ByteRange> w{{0, size_t(margin)}, {size_t(margin + storage), size_t(2 * margin + storage)}};
  for (const PageRange& r : touched)
    for (const StridedView* v : {&L.key, &L.value}) {
      const StridedView p = page_view(*v, r);
      w.push_back({size_t(margin + p.offset * eb), size_t(margin + (last_offset(p) + 1) * eb)});
    }
  std::sort(w.begin(), w.end(), [](const auto& a, const auto& b) { return a.begin < b.begin; });
  return w;
}

DeviceArena::DeviceArena(int64_t storage_elems, int64_t margin_bytes, int64_t elem_bytes)
    : storage_elems_(storage_elems),
      margin_(margin_bytes),
      elem_bytes_(elem_bytes),
      buf_(size_t(storage_elems * elem_bytes + 2 * margin_bytes)) {}

DeviceArena::DeviceArena(const CacheLayout& L, int64_t margin_bytes, std::vector<PageRange> touched)
    : storage_elems_(L.storage_elems), margin_(margin_bytes), elem_bytes_(L.geo.elem_bytes) {
  const int64_t bytes = storage_elems_ * elem_bytes_ + 2 * margin_;
  if (storage_elems_ * elem_bytes_ < kSparseArenaBytes) {
    buf_ = device::Buffer(size_t(bytes));
    return;
  }
  sparse_ = device::SparseBuffer(size_t(bytes), touched_bytes(L, margin_, touched));
  touched_ = std::move(touched);
}

std::vector<device::ByteRange> DeviceArena::windows() const {
  if (sparse()) return sparse_.windows();
  return {{0, size_bytes()}};
}

void DeviceArena::fill_cache(const CacheLayout& L, DType dtype, uint64_t data_seed, Stale stale, KvCacheDType kv,
                             const std::vector<uint8_t>& overwritten_pages) {
  if (!overwritten_pages.empty() &&
      (int64_t(overwritten_pages.size()) != L.key.shape[0] || int64_t(overwritten_pages.size()) != L.value.shape[0]))
    throw std::invalid_argument(fmt::format("fill_cache: {} page flags for views of {} and {} pages",
                                            overwritten_pages.size(), L.key.shape[0], L.value.shape[0]));
  // The views never overlap (make_cache_layout), so when they own as many elements as the
  // storage has, they own all of it: only the margins need sentinels, the old tokens cover the rest.
  if (sparse()) {  // every backed window, each byte's sentinel that of its arena position
    for (const device::ByteRange& w : windows())
      device::fill_sentinel_at(data() + w.begin, w.end - w.begin, uint64_t(w.begin));
  } else if (L.key.numel() + L.value.numel() == L.storage_elems) {
    device::fill_sentinel(data(), size_t(margin_));
    // The back margin's sentinel continues the arena's byte positions (GuardedArena::sentinel(i)).
    device::fill_sentinel_at(storage() + storage_elems_ * elem_bytes_, size_t(margin_),
                             uint64_t(margin_ + storage_elems_ * elem_bytes_));
  } else {
    device::fill_sentinel(data(), size_bytes());
  }
  // The views, or a sparse arena's touched pages of them (page `first` of each part is the view's).
  struct Part {
    StridedView key, value;
    int64_t first;
  };
  std::vector<Part> parts;
  if (!sparse()) parts.push_back({L.key, L.value, 0});
  for (const PageRange& r : touched_) parts.push_back({page_view(L.key, r), page_view(L.value, r), r.begin});
  if (kv != KvCacheDType::Same) {
    const int mode = kv == KvCacheDType::Int8 ? device::kCode8Int8 : kv == KvCacheDType::Fp8E4m3fnuz;
    for (const Part& p : parts) {
      if (stale != Stale::Random) {
        device::fill_view8_const(storage(), view16(p.key), *stale_code8(stale, kv, false));
        device::fill_view8_const(storage(), view16(p.value), *stale_code8(stale, kv, true));
        continue;
      }
      device::fill_view8(storage(), view16(p.key), mode, rng::stream_key(data_seed, rng::kOldKeys));
      device::fill_view8(storage(), view16(p.value), mode, rng::stream_key(data_seed, rng::kOldValues));
    }
    return;
  }
  if (stale != Stale::Random) {
    for (const Part& p : parts) {
      device::fill_view16_const(storage(), view16(p.key), *stale_bits(stale, dtype, false));
      device::fill_view16_const(storage(), view16(p.value), *stale_bits(stale, dtype, true));
    }
    return;
  }
  const bool bf16 = dtype == DType::BF16;
  device::Buffer skip;
  if (!overwritten_pages.empty()) {
    skip = device::Buffer(overwritten_pages.size());
    skip.upload(overwritten_pages.data(), overwritten_pages.size());
  }
  for (const Part& p : parts) {
    const auto* flags = skip.get() ? static_cast<const uint8_t*>(skip.get()) + p.first : nullptr;
    device::fill_view16(storage(), view16(p.key), rng::kOldToken, bf16, rng::stream_key(data_seed, rng::kOldKeys),
                        flags);
    device::fill_view16(storage(), view16(p.value), rng::kOldToken, bf16,
                        rng::stream_key(data_seed, rng::kOldValues), flags);
  }
}

void DeviceArena::fill_pages(const CacheLayout& L, int64_t first_id, int64_t count, uint16_t bits) {
  for (int64_t id = first_id; id < first_id + count; ++id)
    for (const StridedView* v : {&L.key, &L.value}) {
      StridedView page = *v;
      page.shape[0] = 1;
      page.offset = v->offset + id * v->stride[0];
      // The lowest and highest element the page touches (strides are positive).
      int64_t last = page.offset;
      for (size_t d = 0; d < page.shape.size(); ++d) last += (page.shape[d] - 1) * page.stride[d];
      if (last >= 0 && page.offset < storage_elems_) continue;  // storage: another view's page (kv_first V's block -1 is K's last)
      if (page.offset * elem_bytes_ < -margin_ || (last + 1) * elem_bytes_ > storage_elems_ * elem_bytes_ + margin_)
        throw std::invalid_argument(fmt::format(
            "fill_pages: the page of block id {} reaches elements [{}, {}] of a storage of {} with {}-byte margins",
            id, page.offset, last, storage_elems_, margin_));
      if (elem_bytes_ == 1)
        device::fill_view8_const(storage(), view16(page), uint8_t(bits));
      else
        device::fill_view16_const(storage(), view16(page), bits);
    }
}

void DeviceArena::copy_from(const DeviceArena& o) {
  if (o.size_bytes() != size_bytes()) throw std::logic_error("DeviceArena::copy_from: arenas of different sizes");
  const std::vector<device::ByteRange> w = windows();
  if (o.windows().size() != w.size()) throw std::logic_error("DeviceArena::copy_from: arenas of different windows");
  for (const device::ByteRange& r : w) device::copy_d2d(data() + r.begin, o.data() + r.begin, r.end - r.begin);
}

GuardedArena DeviceArena::download() const {
  if (sparse()) throw std::logic_error("DeviceArena::download: a sparse arena (only its touched pages exist)");
  GuardedArena h(storage_elems_, elem_bytes_, margin_, GuardedArena::Uninitialized{});
  // In 16 MiB pieces on all host threads: a pageable download is bound by the host's staging copy.
  constexpr int64_t kPiece = 16 << 20;
  const int64_t n = int64_t(h.bytes().size());
  parallel_for((n + kPiece - 1) / kPiece, 1, [&](int64_t b, int64_t e) {
    for (int64_t p = b; p < e; ++p)
      buf_.download_range(h.bytes().data() + p * kPiece, size_t(p * kPiece), size_t(std::min(kPiece, n - p * kPiece)));
  });
  return h;
}

int64_t DeviceArena::first_difference(const DeviceArena& o) const {
  if (o.size_bytes() != size_bytes()) throw std::logic_error("DeviceArena::first_difference: different sizes");
  for (const device::ByteRange& r : windows())  // in address order: the first found is the first
    if (const int64_t d = device::first_difference(data() + r.begin, o.data() + r.begin, r.end - r.begin); d >= 0)
      return int64_t(r.begin) + d;
  return -1;
}

DeviceQkv make_device_qkv(int64_t T, int64_t nh, int64_t nkv, int64_t hd, DType dtype, uint64_t data_seed,
                          uint64_t q_stream, uint64_t k_stream, uint64_t v_stream) {
  DeviceQkv out;
  out.views = fused_qkv_views(T, nh, nkv, hd);
  const int64_t elems = std::max<int64_t>(T * (nh + 2 * nkv) * hd, 1);
  out.buf = device::Buffer(size_t(elems) * 2);
  const bool bf16 = dtype == DType::BF16;
  if (nh)  // without query columns, k and v cover every element
    device::fill_view16(out.buf.get(), view16(StridedView{{elems}, {1}, 0}), rng::kOldToken, bf16,
                        rng::stream_key(data_seed, rng::kFiller));
  if (T == 0) return out;
  if (nh && q_stream)  // 0: the query columns keep the filler (a write reads no query)
    device::fill_view16(out.buf.get(), view16(out.views.q), rng::kInput, bf16, rng::stream_key(data_seed, q_stream));
  device::fill_view16(out.buf.get(), view16(out.views.k), rng::kInput, bf16, rng::stream_key(data_seed, k_stream));
  device::fill_view16(out.buf.get(), view16(out.views.v), rng::kInput, bf16, rng::stream_key(data_seed, v_stream));
  return out;
}

void set_qkv_from_host(DeviceQkv& f, const std::vector<uint16_t>* query, const std::vector<uint16_t>* key,
                       const std::vector<uint16_t>* value) {
  std::vector<uint16_t> host(f.buf.size() / 2);
  f.buf.download(host.data(), f.buf.size());
  for (const auto& [view, t] : {std::pair{&f.views.q, query}, {&f.views.k, key}, {&f.views.v, value}}) {
    if (!t) continue;
    if (int64_t(t->size()) != view->numel())
      throw std::invalid_argument("set_qkv_from_host: a tensor of " + std::to_string(t->size()) +
                                  " elements for the view " + view->str());
    size_t i = 0;
    for_each_offset(*view, [&](int64_t off) { host[size_t(off)] = (*t)[i++]; });
  }
  f.buf.upload(host.data(), f.buf.size());
}

void reference_write_into(DeviceArena& cache, const CacheLayout& L, const void* src, const StridedView& key,
                          const StridedView& value, const int64_t* slot_mapping, int64_t num_tokens) {
  device::reference_write(cache.storage(), cache_map(L, false), cache_map(L, true), src, view16(key), view16(value),
                          slot_mapping, num_tokens, L.geo.block_size);
}

void reference_write_fp8_into(DeviceArena& cache, const CacheLayout& L, const void* src, const StridedView& key,
                              const StridedView& value, const int64_t* slot_mapping, int64_t num_tokens,
                              const device::Fp8WriteScales& scales) {
  device::reference_write_fp8(cache.storage(), cache_map(L, false), cache_map(L, true), src, view16(key), view16(value),
                              slot_mapping, num_tokens, L.geo.block_size, scales);
}

std::string describe_arena_byte(const CacheLayout& L, int64_t margin, int64_t b) {
  if (b < margin) return "front arena margin";
  const int64_t elem = (b - margin) / L.geo.elem_bytes;
  return elem < L.storage_elems ? L.describe(elem) : "back arena margin";
}

GuardedArena host_fill_cache(const CacheLayout& L, DType dtype, uint64_t data_seed, int64_t margin_bytes,
                             Stale stale, KvCacheDType kv) {
  GuardedArena h(L.storage_elems, L.geo.elem_bytes, margin_bytes);  // sentinels everywhere
  if (kv != KvCacheDType::Same) {
    uint8_t* st8 = h.storage();
    const bool fnuz = kv == KvCacheDType::Fp8E4m3fnuz, int8 = kv == KvCacheDType::Int8;
    for (const auto& [view, stream] : {std::pair{&L.key, rng::kOldKeys}, {&L.value, rng::kOldValues}}) {
      if (const std::optional<uint8_t> code = stale_code8(stale, kv, view == &L.value)) {
        parallel_for_each_offset(*view, [&](int64_t off, int64_t) { st8[off] = *code; });
        continue;
      }
      const uint64_t key = rng::stream_key(data_seed, stream);
      parallel_for_each_offset(*view, [&](int64_t off, int64_t i) {
        st8[off] = int8 ? rng::int8_old_code(key, uint64_t(i)) : rng::fp8_old_code(key, uint64_t(i), fnuz);
      });
    }
    return h;
  }
  uint16_t* st = h.storage_as<uint16_t>();
  const bool bf16 = dtype == DType::BF16;
  for (const auto& [view, stream] : {std::pair{&L.key, rng::kOldKeys}, {&L.value, rng::kOldValues}}) {
    if (const std::optional<uint16_t> bits = stale_bits(stale, dtype, view == &L.value)) {
      parallel_for_each_offset(*view, [&](int64_t off, int64_t) { st[off] = *bits; });
      continue;
    }
    const uint64_t key = rng::stream_key(data_seed, stream);
    parallel_for_each_offset(*view, [&](int64_t off, int64_t i) {
      st[off] = rng::bits16(rng::kOldToken, bf16, key, uint64_t(i));
    });
  }
  return h;
}

Verdict check_writer_on_device(const CacheLayout& L, DType dtype, uint64_t data_seed, const DeviceArena& expected,
                               const DeviceArena& actual, Stale stale, KvCacheDType kv) {
  const int64_t first = actual.first_difference(expected);
  if (first < 0) {  // the device says equal: nothing to download
    Verdict pass;
    pass.max_abs_err = pass.max_rel_err = 0.0;
    return pass;
  }
  // Something differs: explain it where the caches are (issue 24). The cache as the writer
  // found it is the fill again, made on the device (a pure function of the seed); a byte mask
  // says which storage elements the views own; device threads classify and count every
  // element, and one small tally comes back (device/write_diff.h). A sparse arena has no
  // whole cache to explain with: the first differing byte names it.
  if (!actual.sparse()) try {
    enter_phase(Phase::AllocFill);
    DeviceArena before(L.storage_elems, actual.margin_bytes(), L.geo.elem_bytes);
    before.fill_cache(L, dtype, data_seed, stale, kv);
    device::Buffer owned(size_t(std::max<int64_t>(L.storage_elems, 1)));
    device::View16 all;
    all.ndim = 1;
    all.shape[0] = L.storage_elems;
    all.stride[0] = 1;
    device::fill_view8_const(owned.get(), all, 0);
    device::fill_view8_const(owned.get(), view16(L.key), 1);
    device::fill_view8_const(owned.get(), view16(L.value), 1);
    enter_phase(Phase::Check);
    const device::ElemDecode decode = kv == KvCacheDType::Int8          ? device::ElemDecode::Int8
                                      : kv == KvCacheDType::Fp8E4m3fnuz ? device::ElemDecode::E4m3fnuz
                                      : kv == KvCacheDType::Fp8E4m3fn   ? device::ElemDecode::E4m3fn
                                      : dtype == DType::BF16            ? device::ElemDecode::BF16
                                                                        : device::ElemDecode::F16;
    const device::WriteDiff d =
        device::write_diff(actual.data(), expected.data(), before.data(), static_cast<const uint8_t*>(owned.get()),
                           actual.size_bytes(), actual.margin_bytes(), L.storage_elems, int(L.geo.elem_bytes), decode);
    Verdict v = write_verdict(L, dtype, d, kv);
    attribute(v, component::kWriter);
    return v;
  } catch (const std::bad_alloc&) {
  } catch (const device::AllocError&) {
  }
  // No room to explain (the large layouts need three more copies of the cache), or a sparse
  // arena: still a FAIL, named by its first differing byte.
  enter_phase(Phase::Check);
  Verdict v;
  const int64_t el = (first - actual.margin_bytes()) / actual.elem_bytes();
  const bool owned = first >= actual.margin_bytes() && el < L.storage_elems && (L.key.index_of(el) || L.value.index_of(el));
  add_cause(v, component::kWriter, owned ? reason::kMismatch : reason::kOutOfView,
            fmt::format("the cache differs from the reference writer's from arena byte {} ({}); {} to "
                        "classify the rest (out of view, mismatched, unwritten)",
                        first, describe_arena_byte(L, actual.margin_bytes(), first),
                        actual.sparse() ? "a sparse arena (only the case's pages exist): no whole cache" : "no memory"));
  return v;
}

}  // namespace kvh
