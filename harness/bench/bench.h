// `kvharness bench`: how close the cache writers and decode-attention readers
// come to the device's memory bandwidth.
//
// 1. Copy bandwidth: one large hipMemcpy DeviceToDevice (2 GiB by default),
//    counted as bytes read + bytes written (2 x size), median of the timed
//    copies. This is the 100% every kernel is measured against.
// 2. Each kernel at each size: median of `reps` launches after `warmup`,
//    bracketed by device events (device::time_launches), divided into the
//    bytes the kernel MUST move (below): GB/s (10^9 bytes/s) and % of copy.
//
// Bytes a kernel must move: every input read once plus every output written
// once, nothing else (e = element bytes, 2 for bf16):
//   writer (T tokens, H kv heads, D head size):
//       K and V inputs read      2 * T*H*D*e
//     + K and V cache written    2 * T*H*D*e
//     + slot_mapping read        T * 8           (int64)
//     Every slot is valid (no padding tokens). The inputs are the K and V
//     columns of a fused QKV buffer [T, (NH + 2H) * D] with NH = 4H query
//     heads: the query columns are not read and not counted.
//   decode attention (S sequences of C context tokens, NH query heads, H kv heads):
//       query read               S*NH*D*e
//     + K and V of every context token   2 * S*C*H*D*e
//     + block tables read        S*ceil(C/block_size) * 4   (int32, the entries used)
//     + context_lens read        S * 4
//     + out written              S*NH*D*e
//     Split-K partials (the workspace) are the kernel's own business: not
//     counted, so a kernel that spills more partials shows as slower.
//
// Inputs: valid finite numbers filled on the device (device::fill_random16);
// caches kv_first (one allocation, K = buf[0], V = buf[1]) in the kernel's
// own cache format from cases/layout.h; slots: each run of block_size tokens
// goes to one random block (prefill-like); block tables: a random permutation
// of the blocks, block 0 (the null block) unused.
// Caches: launches cycle through `copies` independent sets of every buffer
// the kernel reads or writes, enough that their total is at least
// rotate_mib (default 512 MiB, ten times the H200's 50 MB L2), so that small
// sizes are timed from DRAM too, not from L2. The workspace is shared.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "registry/registry.h"

namespace kvh::bench {

struct Options {
  std::string report_dir = "reports/bench";
  bool quick = false;          // a small sweep (the cpu backend / CI smoke test)
  int warmup = 3;
  int reps = 20;
  double copy_mib = 2048;      // size of the D2D copy
  double rotate_mib = -1;      // each kernel cycles through buffer sets totalling at least this much
                               // (0: no rotation; < 0: 512 on GPU backends, 0 on cpu)
  std::vector<std::string> kernels;  // only these kernels (empty: every sweep kernel)
};

/// Bytes a writer must move (see the top of this file).
int64_t writer_bytes(int64_t num_tokens, int64_t num_kv_heads, int64_t head_size, int64_t elem_bytes);
/// Bytes a decode-attention reader must move (see the top of this file).
int64_t attention_bytes(int64_t num_seqs, int64_t context_len, int64_t num_heads, int64_t num_kv_heads,
                        int64_t head_size, int64_t block_size, int64_t elem_bytes);

/// One measured kernel at one size.
struct Row {
  std::string kernel, kind;  // kind: writer | reader
  std::string cache_format;
  int64_t num_tokens = 0;    // writers
  int64_t num_seqs = 0, context_len = 0;  // readers
  int64_t num_heads = 0, num_kv_heads = 0, head_size = 0, block_size = 16;
  int64_t bytes = 0;         // what the kernel must move
  int64_t footprint = 0;     // device bytes of one buffer set
  int copies = 1;            // buffer sets the launches cycle through
  double median_us = 0, min_us = 0, max_us = 0;
  int reps = 0;
  double gbps = 0, pct_of_copy = 0;
  std::string error;         // non-empty: not measured, and why
  std::string shape() const; // "T=4096 H=8 D=128" or "S=64 C=4096 32/8 D=128"
};

struct Result {
  std::string backend, device, arch;
  int compute_units = 0;
  uint64_t memory_bytes = 0;
  std::string started_at, finished_at;
  Options options;
  int64_t copy_bytes = 0;    // bytes moved by one copy: 2 x its size
  double copy_us = 0, copy_gbps = 0;
  std::string copy_error;
  std::vector<Row> rows;
  bool complete = true;      // false when a device fault stopped the sweep
  std::string stopped_because;
};

/// Runs the sweep (Options::quick: the small one). Never throws for a
/// kernel's failure: the row carries the error; a device fault stops the
/// sweep with complete = false.
Result run(const Options& o, const Registry& registry);
/// The console table (fmt).
std::string table(const Result& r);
std::string markdown(const Result& r);
/// "kvharness.bench/1".
std::string json(const Result& r);
/// run + print the table + write bench.md and bench.json to o.report_dir.
/// Exit code: 0, or 1 if any row failed or the sweep was cut short.
int bench_main(const Options& o, const Registry& registry);

}  // namespace kvh::bench
