// Cache layouts as data: every K and V cache is a strided view (shape +
// stride + storage offset, CuTe style) into one storage buffer, built by one of
// the allocation schemes real serving stacks use (DESIGN.md "How real serving
// stacks lay these out"). Kernels never see this type; the harness turns it
// into kvh_tensor views, and the reference indexes it on its own.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace kvh {

/// Cache formats (element order of one cache), DESIGN.md table:
///   flash:   K, V [num_blocks, block_size, num_kv_heads, head_size]
///   pa_v1:   K [num_blocks, num_kv_heads, head_size/x, block_size, x], V [num_blocks, num_kv_heads, head_size, block_size]
///   shuffle: K as pa_v1, V [num_blocks, num_kv_heads, block_size/x, head_size, x]
///   hnd:     K, V [num_blocks, num_kv_heads, block_size, head_size] (heads before tokens, FlashInfer's HND)
///   mla:     one latent cache [num_blocks, block_size, kv_lora_rank + qk_rope_head_dim] (provider.h
///            KVH_CACHE_MLA); the harness sees it as two flash-shaped views of one kv head, K = the
///            latent part [.., .., 1, kv_lora_rank] and V = the rope part [.., .., 1, qk_rope_head_dim]
///            of the same rows (CacheLayout::latent is the kernel's 3-D view)
/// The values equal kvh_cache_format's (provider.h), so a kernel's format converts by a cast.
enum class CacheFormat { Flash = 0, PaV1 = 1, Shuffle = 2, Hnd = 3, Mla = 4 };

/// How the two caches sit in memory:
///   separate     two allocations (one storage here, with a gap between them)
///   kv_first     one buffer (2, num_blocks, ...): K = buf[0], V = buf[1]
///   interleaved  blocks-first (num_blocks, 2, ...): K and V pages of a block adjacent (vLLM hybrid models)
///   padded       interleaved, with each block's K+V page padded to a larger page size (hybrid page alignment)
///   packed       one tensor (num_blocks, num_kv_heads, block_size, 2*head_size) split on the last dim (flash only)
///   offset       kv_first viewed from a non-zero storage offset
///   large        interleaved with more than 65,535 blocks, so that element offsets
///                inside each of the K and V views pass 2^31
///   head_interleaved  K and V pages alternate per kv head inside a block,
///                storage (num_blocks, num_kv_heads, 2, page of one head): the head
///                stride is twice the dense one (formats whose dim 1 is the kv head:
///                hnd, pa_v1, shuffle)
///   degenerate_strides  kv_first, with every size-1 dim of the K and V views
///                given a stride other than the canonical one (0, 1 or a large
///                value, as PyTorch leaves after unbind/permute); the harness does
///                the same to the query and key/value views (apply_degenerate_strides)
///   kernel_pages kv_first storage cut into the kernel's pages: the cache
///                manager's block (Case::block_size) holds block_size /
///                kernel_block_size kernel pages; geometry, views and block tables
///                are in kernel pages, slot_mapping in manager blocks (the same
///                token numbers: manager block b, token t = kernel page
///                b*r + t/kernel_block_size, token t%kernel_block_size)
enum class Scheme { Separate, KvFirst, Interleaved, Padded, Packed, Offset, Large, HeadInterleaved, DegenerateStrides,
                    KernelPages };

/// The "large" stride of degenerate_strides: past 2^31, so that a kernel that
/// multiplies a size-1 dim's stride by anything, or keeps strides in 32 bits,
/// reads far outside the cache.
constexpr int64_t kDegenerateLargeStride = int64_t(1) << 31;

const char* to_string(CacheFormat f);
const char* to_string(Scheme s);
std::optional<CacheFormat> parse_cache_format(const std::string& s);
std::optional<Scheme> parse_scheme(const std::string& s);
const std::vector<Scheme>& all_schemes();

/// A strided view: shape and stride in elements, outermost first, plus the
/// storage offset of element [0,...,0].
struct StridedView {
  std::vector<int64_t> shape, stride;
  int64_t offset = 0;
  /// "(1233,64,4,256):(131072,1024,256,1)+0", comparable with torch's size()/stride()/storage_offset().
  std::string str() const;
  int64_t numel() const;
  /// One past the largest storage element the view touches.
  int64_t end() const;
  /// The tensor index of storage element `elem`, if the view owns it. Needs a
  /// view whose dims nest (each stride >= the span of the dims inside it),
  /// which every layout here has.
  std::optional<std::vector<int64_t>> index_of(int64_t elem) const;
};

/// Sets the stride of every size-1 dim of `v` to `stride` (addresses do not
/// change: such a dim's index is always 0). Returns how many dims it changed.
int apply_degenerate_strides(StridedView& v, int64_t stride);

/// Sizes of one paged cache, in elements or tokens. x = 16 / element bytes.
/// MLA (format mla): num_kv_heads 1, head_size = kv_lora_rank (the K view), rope_dim =
/// qk_rope_head_dim (the V view); a page is block_size * (head_size + rope_dim) elements.
struct CacheGeometry {
  int64_t num_blocks = 0, block_size = 0, num_kv_heads = 0, head_size = 0;
  int64_t x = 8;
  int64_t elem_bytes = 2;
  int64_t rope_dim = 0;  // mla only
  /// One cache's block (mla: the whole latent page, both views).
  int64_t page_elems() const { return block_size * num_kv_heads * (head_size + rope_dim); }
};

/// K and V views of one storage buffer of `storage_elems` elements.
struct CacheLayout {
  CacheFormat format;
  Scheme scheme;
  CacheGeometry geo;
  StridedView key, value;
  int64_t storage_elems = 0;
  int64_t block_stride = 0;  // storage elements between consecutive blocks of K (same for V)
  int64_t degenerate_stride = 0;  // degenerate_strides: the stride given to size-1 dims (the harness's views too)
  StridedView latent;  // mla only: the kernel's view [num_blocks, block_size, kv_lora_rank + rope_dim]
  /// Names storage element `elem` for error messages: "K page of block 17
  /// (head 0, token 3, dim 12)", "page padding of block 4", "gap between the K
  /// and V allocations", "unused storage".
  std::string describe(int64_t elem) const;
};

/// Builds the layout, or returns the reason the combination cannot exist
/// (e.g. "packed last dim exists only for the flash cache", "head_size 80 is
/// not a multiple of x = 16"). `padded_page_bytes` is the padded page size of
/// the padded scheme (0: twice the K+V page), `storage_offset` the offset of
/// the offset scheme, `degenerate_stride` the stride of the size-1 dims of the
/// degenerate_strides scheme (which needs at least one: num_kv_heads or
/// block_size 1, else the reason says so). For kernel_pages, `geo` is in
/// kernel pages (num_blocks pages of block_size tokens).
/// The mla format takes the schemes a latent cache has: separate (its own allocation), offset,
/// padded and degenerate_strides (block_size 1: aiter's pages of one token); the others are
/// refused by name.
struct LayoutOrReason {
  std::optional<CacheLayout> layout;
  std::string reason;
};
LayoutOrReason make_cache_layout(CacheFormat format, Scheme scheme, const CacheGeometry& geo,
                                 int64_t padded_page_bytes = 0, int64_t storage_offset = 0,
                                 int64_t degenerate_stride = 0);

/// Tensor shape of a cache in `format` (outermost first).
std::vector<int64_t> cache_shape(CacheFormat format, bool is_value, const CacheGeometry& geo);

}  // namespace kvh
