// Case files (TOML) and the cartesian generator.
//
//   seeds = [1, 2]                 # optional, default [1]
//   [[model]]                      # optional extra models beside the presets
//   name = "my-model"  num_heads = 8  num_kv_heads = 2  head_size = 128  hybrid = false
//   [[write]]                      # one table = one cartesian product of its axes
//   models = ["Qwen3.5-397B-A17B"] tp = 8
//   layouts = ["separate", "interleaved"]   head_sizes = [128]  (optional: the model's own)
//   num_tokens = [4, 512]  block_sizes = [16]  dtypes = ["fp16"]  writers = ["reshape_and_cache"]
//   padded_page_bytes = 0          # optional, padded layout only
//   [[attention]] / [[pipeline]]   # decode attention; the cache is written by
//                                  # the reference (attention) or a writer under test (pipeline)
//   models, tp, layouts, head_sizes, block_sizes, dtypes  as above
//   batch_sizes = [4, 512]         # sequences (one query token each unless query_lens)
//   context_lens = [700, 1300]     # [min, max]: each sequence's length is drawn from it
//   target = "MI355X"              # compute units the router uses (default: the device's)
//   high_precision = 1             # router input, 0..2
//   [[pipeline.variants]]          # rows: name, writer (pipeline only), and reader or router
//   name = "after fix (shuffle=1)"  writer = "reshape_and_cache_shuffle"  router = "aiter-v0.1.10.post3"
//   (instead of variants: readers = [...] and/or routers = [...], crossed with writers = [...] in a pipeline)
//   context_lens_lists = [[1, 512, 513]]  # instead of batch_sizes/context_lens: explicit per-sequence
//                                  # lengths, one list per batch (its length is the batch size)
//   values = ["normal", "sink"]    # value distributions (harness/case/value_dist.h), default ["normal"]
//   expect_routed_to = "pa_fwd_asm"  # or [{reader, routers, head_sizes, dtypes, batch_sizes, batch_range,
//                                  # high_precision}, ...]: the route router cases must take (also per variant)
//   route_boundaries = true        # router rows also get the batches around the routing threshold
//                                  # for each model's heads and the named target (route_boundaries.h)
//   [[expected_failure]]           # where a fixture must fail (cases/expectation.h): filter, ids,
//   filter = "writer=fixture_*"  component = "writer"  reasons = ["mismatch"]  why = "..."
// cases/keys.h is the table of every key, where it goes, its type, default and
// values (docs/case-file-keys.md, `kvharness info --keys`); the loader reads no other.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "case.h"
#include "expectation.h"
#include "keys.h"

namespace kvh {

/// A case file is malformed. what() is "FILE:LINE: field 'F': expected E, got G"
/// (or toml++'s parse error with file, line and column).
struct CaseFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// A case file's contents: its cases in file order and its expected failures.
struct CaseFile {
  std::vector<Case> cases;
  std::vector<ExpectedFailure> expected_failures;
};

/// Expands `path` into cases and expected failures. Throws CaseFileError.
CaseFile load_case_file_full(const std::string& path);
/// The same, from TOML text; `name` stands for the file name in errors. `read`,
/// when given, receives every key the loader looked up, per table (keys_test.cpp).
CaseFile parse_case_file_text(const std::string& text, const std::string& name, KeysRead* read = nullptr);
/// The cases only (load_case_file_full(path).cases).
std::vector<Case> load_case_file(const std::string& path);
/// The cases only, from TOML text.
std::vector<Case> parse_case_text(const std::string& text, const std::string& name);

}  // namespace kvh
