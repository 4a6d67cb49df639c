// Test helper for ragged-query (varlen) readers on the cpu backend: builds a
// ragged batch (sequence s: q_s new query tokens, L_s tokens in all), places
// K/V into a paged cache of the reader's format (any of the four) through a
// cases/layout.h scheme, fp16/bf16 or fp8 (any scale granularity), runs the
// reader through its provider entry points (typed workspaces included), and
// compares `out` with a float64 brute force written here from provider.h's
// definition (p = L_s - q_s + j; causal: t <= p, else t < L_s; window masks
// t <= p - window; ALiBi slope * (t - p); the sink once in the denominator).
//
// Every byte the reader must not use is poison: unused cache slots and the
// trap page (the block-table padding id) hold NaN, `out` is NaN before the
// call, and the arrays sit in longer buffers whose margins read like the
// harness's (provider.h): query_start_loc num_query_tokens + 1, seq_lens and
// context_lens 1, block_tables the padding id, extra out/query rows NaN. A
// read past an array therefore gives NaN or wrong values instead of undefined
// behaviour, and a write past `out` or past a typed workspace (each in its own
// NaN margin) is counted.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kvharness/provider.h"
#include "layout.h"
#include "registry/registry.h"

/// The planted unified readers (testing/planted_unified_readers.hip), provider-style.
extern "C" const kvh_kernel_desc* kvh_planted_unified_readers(int32_t* count);

namespace kvh::testing {

/// One sequence of a ragged batch: q new query tokens of len tokens in all (1 <= q <= len).
struct RaggedSeq {
  int q, len;
};

struct RaggedCase {
  kvh_dtype dtype = KVH_DT_F16;
  int32_t cache_dtype = 0;                            // 0: dtype; or KVH_DT_FP8_E4M3FN / KVH_DT_FP8_E4M3FNUZ
  kvh_scale_granularity kv_scales = KVH_SCALES_NONE;  // fp8 caches; NONE: the k_scale / v_scale floats
  bool scale_tensors = true;  // fp8 under NONE: pass k_scale_tensor / v_scale_tensor too (same values)
  kvh_cache_format format = KVH_CACHE_NHD;            // the reader's
  Scheme scheme = Scheme::Separate;
  int num_heads = 12, num_kv_heads = 2, head_size = 64, block_size = 16;
  std::vector<RaggedSeq> seqs{{1, 1}, {5, 40}, {64, 64}, {1, 300}, {47, 290}};
  bool causal = true;
  /// false: a decode call as an older caller makes it (no query_start_loc, max_query_len and
  /// num_query_tokens 0, no seq_lens); every q must be 1.
  bool ragged_fields = true;
  int32_t partition_size = 0;
  int64_t out_row_pad = 0;  // extra elements between out rows (a strided out view)
  int wave_size = 64;
  bool random_order = true;
  int32_t sliding_window = 0;
  float softcap = 0.f;
  std::vector<float> sinks, alibi_slopes;  // [num_heads] or empty = off
  int32_t head_offset = 0;
  uint64_t seed = 1;

  int num_query_tokens() const;
  int max_query_len() const;
  std::string str() const;
};

struct RaggedResult {
  int rc = -1;
  double max_abs_err = 0;
  std::string worst;
  int64_t unwritten = 0, nonfinite = 0, out_of_tolerance = 0;
  int64_t out_of_view_writes = 0;       // changed elements of out's row padding and the rows past it
  int64_t workspace_margin_writes = 0;  // changed elements in the NaN margins around the typed workspaces
  std::vector<kvh_workspace_spec> workspaces;  // what the reader asked for
  bool passed() const {
    return rc == 0 && unwritten == 0 && nonfinite == 0 && out_of_tolerance == 0 && out_of_view_writes == 0 &&
           workspace_margin_writes == 0;
  }
  std::string str() const;
};

/// Builds, runs and checks `c` with `reader`; the host runtime's wave size and fiber order are
/// set for the run and restored. Throws std::invalid_argument when the case cannot be built.
RaggedResult run_ragged_case(const Kernel& reader, const RaggedCase& c);

/// The args run_ragged_case would pass (workspaces not yet allocated), with the buffers they
/// point into; for argument-validation tests that then corrupt one field. Move-only.
struct RaggedArgs {
  kvh_attention_args args{};
  std::vector<std::vector<char>> owned;  // every buffer the args point into
};
RaggedArgs make_ragged_args(const RaggedCase& c);

/// A random ragged batch of `n` sequences: decode-like (q 1..9) and chunks (q 40..70) mixed,
/// contexts from q (a first chunk) up to max_len, both ends included.
std::vector<RaggedSeq> random_ragged_batch(uint64_t seed, int n, int max_len = 300);

/// The planted unified reader named `name` (kvh_planted_unified_readers); throws if missing.
const Kernel& planted_unified_reader(const std::string& name);

}  // namespace kvh::testing
