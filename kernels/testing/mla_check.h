// Test helper for MLA readers (kvharness/provider.h KVH_CACHE_MLA) on the cpu backend: builds a
// batch of sequences (q_s new query tokens of L_s), places the latent rows into a paged cache
// [num_blocks, block_size, R + P] with padded rows and blocks and pages in shuffled order, runs
// the reader as the harness does (its planner, each plan tensor in its own sentinel-margined
// buffer checked unchanged after the call; typed workspaces in NaN margins), and compares `out`
// [rows, H, R] with reference/mla_attention (float64). Unused cache rows, the trap page the
// block-table padding entries point to, and `out` before the call hold NaN.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kvharness/provider.h"
#include "registry/registry.h"

/// The planted MLA readers and fixtures (testing/planted_mla_readers.hip), provider-style.
extern "C" const kvh_kernel_desc* kvh_planted_mla_readers(int32_t* count);

namespace kvh::testing {

struct MlaSeq {
  int q, len;  // q new query tokens of len in all (1 <= q <= len)
};

struct MlaCase {
  kvh_dtype dtype = KVH_DT_BF16;
  int32_t cache_dtype = 0;  // 0: dtype; or KVH_DT_FP8_E4M3FN / KVH_DT_FP8_E4M3FNUZ (per-tensor scale)
  bool scale_as_tensor = true;  // fp8: kv_scales TENSOR (k_scales [1]); false: NONE with k_scale_tensor
  int num_heads = 16, kv_lora_rank = 512, rope_dim = 64, block_size = 16;
  std::vector<MlaSeq> seqs{{1, 1}, {1, 77}, {1, 300}};
  bool causal = true;
  int64_t compute_units = 304;
  int wave_size = 64;
  uint64_t seed = 1;

  int num_query_tokens() const;
  int max_query_len() const;
  std::string str() const;
};

struct MlaResult {
  int rc = -1;
  std::string refused;  // the planner's or workspaces' KernelRefused reason, when it refused
  double max_abs_err = 0;
  std::string worst;
  int64_t unwritten = 0, nonfinite = 0, out_of_tolerance = 0;
  int64_t plan_writes = 0;  // changed plan elements or margin words
  int64_t out_of_view_writes = 0;  // changed elements of the row past `out`
  int64_t max_splits = 0;   // from the plan (split_bounds' second dim - 1)
  bool passed() const {
    return rc == 0 && refused.empty() && unwritten == 0 && nonfinite == 0 && out_of_tolerance == 0 && plan_writes == 0 &&
           out_of_view_writes == 0;
  }
  std::string str() const;
};

/// Builds, plans, runs and checks `c` with `reader` (which must have a planner and typed
/// workspaces). Throws std::invalid_argument on a malformed case.
MlaResult run_mla_case(const Kernel& reader, const MlaCase& c);

/// A kernel of kvh_planted_mla_readers by name (a static registry of them).
const Kernel& planted_mla_reader(const std::string& name);

}  // namespace kvh::testing
