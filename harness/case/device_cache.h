// Cases' buffers where the data lives (issue 9): guarded arenas in device
// memory, filled and compared there by kernels/device_ops; the host sees
// their bytes only when a check has found something to explain.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "case/arena.h"
#include "case/cache_setup.h"
#include "case.h"
#include "device/device.h"
#include "device/device_ops.h"
#include "device/sparse_buffer.h"
#include "layout.h"

namespace kvh {

/// `v` for the device ops. Throws std::invalid_argument for more than 6 dims.
device::View16 view16(const StridedView& v);
/// The element map of the K (is_value false) or V cache of `L` (device_ops.h).
/// Agrees with reference::cache_offset on every element (device_cache_test).
device::CacheMap cache_map(const CacheLayout& L, bool is_value);

/// Page ids [begin, end) of a cache layout's views (the kernel's pages, dim 0 of L.key and L.value).
struct PageRange {
  int64_t begin = 0, end = 0;
};
/// The ids in [0, num_pages) of `ids` as sorted, merged ranges (others are
/// margin pages: block-table padding).
std::vector<PageRange> page_ranges(std::vector<int64_t> ids, int64_t num_pages);
/// A cache arena of this many storage bytes or more is sparse (issue 23):
/// only the pages its case touches are backed by memory. Every view that
/// spans 2^31 16-bit elements or more passes it; no cache of the default
/// suite's other slices comes near it.
constexpr int64_t kSparseArenaBytes = int64_t(1) << 31;
/// The bytes of an arena of L with `margin_bytes` margins that are backed by
/// memory when it is sparse: both margins, and for each of `touched` and each
/// of L's K and V views the bytes from its first page's lowest element to its
/// last page's highest. Sorted, not yet rounded.
std::vector<device::ByteRange> touched_bytes(const CacheLayout& L, int64_t margin_bytes,
                                             const std::vector<PageRange>& touched);

/// A guarded arena in device memory: margin_bytes, storage_elems elements of
/// elem_bytes (2: fp16/bf16, 1: fp8), margin_bytes again (as GuardedArena on
/// the host). Contents undefined until filled. Throws device::AllocError when
/// the device cannot hold it.
///
/// Sparse (the second constructor, when L's storage reaches kSparseArenaBytes):
/// the arena's address range is reserved in full, but only touched_bytes() is
/// backed (device/sparse_buffer.h: an access elsewhere faults, a CRASH). Every
/// operation below then works on the touched pages and the margins alone; the
/// old tokens of a touched page are its index within its PageRange's sub-view
/// (not the whole view's, as in a plain arena: the same in the cache and its
/// copies, never in the host's host_fill_cache), and download() refuses.
class DeviceArena {
 public:
  DeviceArena(int64_t storage_elems, int64_t margin_bytes, int64_t elem_bytes = 2);
  /// An arena for L's storage: sparse, backing the pages of `touched` and the
  /// margins, when L.storage_elems * elem_bytes >= kSparseArenaBytes; else as above.
  DeviceArena(const CacheLayout& L, int64_t margin_bytes, std::vector<PageRange> touched);
  uint8_t* data() const { return static_cast<uint8_t*>(sparse_.get() ? sparse_.get() : buf_.get()); }
  size_t size_bytes() const { return sparse_.get() ? sparse_.size() : buf_.size(); }
  /// True for the second constructor's sparse arena: the operations cover the
  /// pages of touched() and the margins only (the rest is not backed, or where
  /// the device lacks a virtual memory API, backed but never filled).
  bool sparse() const { return sparse_.get() != nullptr; }
  const std::vector<PageRange>& touched() const { return touched_; }
  /// Bytes backed by memory (all of them for a plain arena).
  size_t backed_bytes() const { return sparse_.get() ? sparse_.committed_bytes() : buf_.size(); }
  uint8_t* storage() const { return data() + margin_; }
  int64_t margin_bytes() const { return margin_; }
  int64_t storage_elems() const { return storage_elems_; }
  int64_t elem_bytes() const { return elem_bytes_; }
  /// Sentinels everywhere, then old tokens (streams kOldKeys / kOldValues of
  /// data_seed) in every element L's K and V views own; with `stale` other
  /// than Random, that pattern instead of the old tokens (stale.h stale_bits). An fp8 cache (kv) gets finite
  /// random codes of its format (rng::fp8_old_code), or its stale byte (stale.h stale_code8).
  /// overwritten_pages: empty, or one flag per page of L's views ([num_blocks]): a flagged
  /// page's owned elements may keep any contents, because the caller overwrites every one
  /// of them next (an attention case's reference writer, whose tokens fill the page); the
  /// 16-bit old-token fill skips them (time: most of a decode case's cache is context).
  /// Throws std::invalid_argument when the flags are not one per page.
  void fill_cache(const CacheLayout& L, DType dtype, uint64_t data_seed, Stale stale = Stale::Random,
                  KvCacheDType kv = KvCacheDType::Same, const std::vector<uint8_t>& overwritten_pages = {});
  /// The K and V pages of block ids [first_id, first_id + count) := `bits`,
  /// each page that lies wholly in the arena's margins: the pages of
  /// out-of-range ids (block-table padding; stale.h padding_page_bits). A page
  /// that overlaps the storage is left alone: it is another view's (in a
  /// kv_first cache V's block -1 is K's last block). Throws
  /// std::invalid_argument when a page would reach past the arena.
  /// `bits`: the 16-bit pattern, or for an fp8 (1-byte) arena the byte in its low bits.
  void fill_pages(const CacheLayout& L, int64_t first_id, int64_t count, uint16_t bits);
  /// This arena's bytes := o's (same size).
  void copy_from(const DeviceArena& o);
  /// The bytes as a host GuardedArena (for the host-side explanation of a
  /// difference). Throws std::logic_error for a sparse arena.
  GuardedArena download() const;
  /// Index of the first byte where this arena and `o` differ, or -1 (on the device).
  int64_t first_difference(const DeviceArena& o) const;

 private:
  // The byte windows every operation covers: the whole arena, or a sparse one's backed windows.
  std::vector<device::ByteRange> windows() const;
  int64_t storage_elems_, margin_, elem_bytes_;
  device::Buffer buf_;
  device::SparseBuffer sparse_;      // a sparse arena's memory (buf_ then empty)
  std::vector<PageRange> touched_;   // a sparse arena's backed pages
};

/// A fused QKV buffer [num_tokens, (num_heads + 2*num_kv_heads) * head_size]
/// in device memory, generated there: stream kFiller everywhere (columns a
/// kernel must not read), then the q (unless q_stream is 0), k and v views from streams q_stream,
/// k_stream and v_stream of data_seed (logical order [num_tokens, heads,
/// head_size], so the host's counter16 of the same stream is the same tensor).
struct DeviceQkv {
  device::Buffer buf;
  FusedQkv views;
};
DeviceQkv make_device_qkv(int64_t num_tokens, int64_t num_heads, int64_t num_kv_heads, int64_t head_size, DType dtype,
                          uint64_t data_seed, uint64_t q_stream, uint64_t k_stream, uint64_t v_stream);

/// Replaces the contents of f's q, k and v views (each when not null) with
/// logical host tensors [num_tokens, heads * head_size]: inputs the host
/// reshaped (the `values` axis, value_dist.h). The other columns keep their
/// fill. Throws std::invalid_argument when a tensor's size is not its view's.
void set_qkv_from_host(DeviceQkv& f, const std::vector<uint16_t>* query, const std::vector<uint16_t>* key,
                       const std::vector<uint16_t>* value);

/// The reference writer on `cache`: for every token t with slot_mapping[t]
/// >= 0 (device int64 [num_tokens]), key[t] and value[t] (views [num_tokens,
/// num_kv_heads, head_size] of the device buffer `src`) go to that slot of L's
/// K and V caches. Run it before the writer under test: a writer that
/// scribbles on its inputs must not move the reference with it.
void reference_write_into(DeviceArena& cache, const CacheLayout& L, const void* src, const StridedView& key,
                          const StridedView& value, const int64_t* slot_mapping, int64_t num_tokens);
/// The same into an fp8 cache: each element quantized with the case's scales
/// (device::reference_write_fp8: reference/fp8.h's encoder).
void reference_write_fp8_into(DeviceArena& cache, const CacheLayout& L, const void* src, const StridedView& key,
                              const StridedView& value, const int64_t* slot_mapping, int64_t num_tokens,
                              const device::Fp8WriteScales& scales);

/// Names arena byte `b` of a cache arena of L with `margin` bytes before the
/// storage: "front arena margin", L.describe(element), "back arena margin".
std::string describe_arena_byte(const CacheLayout& L, int64_t margin, int64_t b);

/// The host's copy of what DeviceArena::fill_cache makes (sentinels, then
/// old tokens or the `stale` pattern in every element L's views own), computed on all cores.
GuardedArena host_fill_cache(const CacheLayout& L, DType dtype, uint64_t data_seed, int64_t margin_bytes,
                             Stale stale = Stale::Random, KvCacheDType kv = KvCacheDType::Same);

/// Judges a writer's cache on the device: `actual` against `expected` (the
/// fill of data_seed with reference_write_into applied). Equal: PASS,
/// nothing downloaded. Different: `actual` and `expected` come to the host,
/// the cache as the writer found it is made again there (host_fill_cache:
/// a pure function of the seed), and check_write explains the difference
/// (component "writer"). Without host memory for the explanation (the large
/// layouts), still a FAIL naming the first differing byte.
/// `stale`: the pattern the cache was filled with (fill_cache).
Verdict check_writer_on_device(const CacheLayout& L, DType dtype, uint64_t data_seed, const DeviceArena& expected,
                               const DeviceArena& actual, Stale stale = Stale::Random,
                               KvCacheDType kv = KvCacheDType::Same);

}  // namespace kvh
