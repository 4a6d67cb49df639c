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
//   batch_sizes = [4, 512]         # sequences, one query token each
//   context_lens = [700, 1300]     # [min, max]: each sequence's length is drawn from it
//   target = "MI355X"              # compute units the router uses (default: the device's)
//   high_precision = 1             # router input, 0..2
//   [[pipeline.variants]]          # rows: name, writer (pipeline only), and reader or router
//   name = "after fix (shuffle=1)"  writer = "reshape_and_cache_shuffle"  router = "aiter-v0.1.10.post3"
//   (instead of variants: readers = [...] and/or routers = [...], crossed with writers = [...] in a pipeline)
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "case.h"

namespace kvh {

/// A case file is malformed. what() is "FILE:LINE: field 'F': expected E, got G"
/// (or toml++'s parse error with file, line and column).
struct CaseFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Expands `path` into cases, in file order. Throws CaseFileError.
std::vector<Case> load_case_file(const std::string& path);
/// The same, from TOML text; `name` stands for the file name in errors.
std::vector<Case> parse_case_text(const std::string& text, const std::string& name);

}  // namespace kvh
