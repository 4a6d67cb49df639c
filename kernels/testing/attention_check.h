// Test helper for decode-attention readers (cpu backend): builds one case's
// logical inputs, places K/V into a paged cache with the case's layout
// (strides from cases/layout.h's make_cache_layout), runs a reader through its
// provider function pointer, and compares `out` with reference/attention.h.
// Every memory byte the reader must not use holds NaN (unused cache slots,
// unused block-table entries point at an all-NaN block, the K/V thirds of the
// fused QKV buffer, the workspace); `out` is poisoned with NaN before launch.
// So a read outside the view shows up as NaN, and an unwritten element as poison.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "kvharness/provider.h"
#include "layout.h"
#include "registry/registry.h"

/// The planted-bug readers (testing/planted_readers.hip), provider-style (ABI 2 descriptors).
extern "C" const kvh_kernel_desc* kvh_planted_readers(int32_t* count);

namespace kvh::testing {

/// Storage offset (elements) of element `idx` (outermost first) of view v: the
/// cache element a reference fill and a check address, format by format.
inline int64_t view_offset(const StridedView& v, std::initializer_list<int64_t> idx) {
  int64_t off = v.offset, i = 0;
  for (int64_t e : idx) off += e * v.stride[size_t(i++)];
  return off;
}
using kvh::Kernel;
using kvh::Registry;

/// Allowed |got - ref| <= atol + rtol * |ref| per output element, against the
/// float64 reference computed from the same rounded 16-bit inputs.
struct Tolerance {
  double atol, rtol;
};
/// fp16: atol 1e-3, rtol 5e-3; bf16: atol 8e-3, rtol 1.6e-2. The error budget
/// is dominated by rounding `out` to 16 bits (half an ulp: 2^-11 relative for
/// fp16, 2^-8 for bf16), about 2-4x below these; float32 logits and sums add
/// ~1e-5. A dropped token of a 257-token sequence moves fp16 outputs by ~4e-3.
Tolerance tolerance_for(kvh_dtype dtype);

/// One test case. Inputs are uniform random: q and K in [-2, 2], V in [-1, 1].
struct AttentionCase {
  kvh_dtype dtype = KVH_DT_F16;
  kvh_cache_format format = KVH_CACHE_SHUFFLE;  // any kvh_cache_format (the reader's)
  Scheme scheme = Scheme::Separate;             // how K and V share memory (cases/layout.h)
  int num_heads = 8, num_kv_heads = 1, head_size = 128, block_size = 16;
  /// kernel_pages: the kernel's page (tokens), a divisor of block_size (then the
  /// cache manager's block); the reader gets block_size = kernel_block_size,
  /// cache_block_size = block_size and tables in kernel pages. 0: block_size.
  int kernel_block_size = 0;
  /// degenerate_strides scheme: the stride of every size-1 dim of the K/V cache and query views.
  int64_t degenerate_stride = 0;
  std::vector<int> context_lens{1, 255, 256, 257, 1000};
  int32_t partition_size = 0;                   // 0: the reader's default
  int64_t out_row_pad = 0;                      // extra elements between out rows (a strided out view)
  int wave_size = 64;                           // host runtime wavefront (32 or 64)
  bool random_order = true;                     // randomised fiber order between barriers
  /// >= 0: in every sequence longer than this token index, that token's key
  /// is made ~10x parallel to the query of the first head of each kv group, so
  /// its logit is ~150 above the rest (an attention sink).
  int sink_token = -1;
  /// Score modifiers (kvharness/provider.h), passed to the reader and the reference alike.
  int32_t sliding_window = 0;       // 0 = off
  float softcap = 0.f;              // 0 = off
  std::vector<float> sinks;         // [num_heads] or empty = off
  std::vector<float> alibi_slopes;  // [num_heads] or empty = off
  int32_t head_offset = 0;
  uint64_t seed = 1;
  std::string str() const;
};

/// What one run produced.
struct AttentionResult {
  int rc = -1;                   // the reader's return code
  double max_abs_err = 0;        // over finite written elements
  std::string worst;             // "seq 3 head 1 dim 17: got .. want .."
  int64_t unwritten = 0;         // elements of out still holding the poison
  int64_t nonfinite = 0;         // other NaN/Inf elements
  int64_t out_of_tolerance = 0;  // finite elements beyond atol + rtol*|ref|
  int64_t out_of_view_writes = 0;  // changed padding between out rows
  double seconds = 0;            // wall time of the reader call
  bool passed() const {
    return rc == 0 && unwritten == 0 && nonfinite == 0 && out_of_tolerance == 0 && out_of_view_writes == 0;
  }
  std::string str() const;
};

/// Builds, runs and checks `c` with `reader` (role KVH_ROLE_READER). The host
/// runtime's wave size and fiber order are set for the run and restored.
/// Throws std::invalid_argument when the case itself cannot be built.
AttentionResult run_attention_case(const Kernel& reader, const AttentionCase& c);

/// The kvh_attention_args run_attention_case would pass, with the buffers it
/// points into; for argument-validation tests that then corrupt one field.
struct AttentionArgsFixture {
  kvh_attention_args args{};
  std::vector<uint16_t> storage, query, out;
  std::vector<int32_t> block_tables, context_lens;
  std::vector<float> workspace, sinks, alibi_slopes;
};
AttentionArgsFixture make_attention_args(const AttentionCase& c);

/// The built-in reader named `name`; throws std::runtime_error if missing.
const Kernel& builtin_reader(const std::string& name);
/// The planted reader named `name` (kvh_planted_readers); throws if missing.
const Kernel& planted_reader(const std::string& name);

}  // namespace kvh::testing
