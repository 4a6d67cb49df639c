// One concrete case: everything needed to run it again alone, and its id.
#pragma once
#include <cstdint>
#include <string>

#include "layout.h"

namespace kvh {

enum class CaseKind { Write, Attention, Pipeline };
enum class DType { F16, BF16 };

const char* to_string(CaseKind k);
const char* to_string(DType d);

/// A case as the generator expands it. Head counts are per rank.
struct Case {
  CaseKind kind = CaseKind::Write;
  std::string model;
  int tp = 1;
  bool hybrid = false;
  int64_t num_heads = 0, num_kv_heads = 0, head_size = 0;
  Scheme layout = Scheme::KvFirst;
  int64_t block_size = 16;
  int64_t padded_page_bytes = 0;  // padded scheme only; 0 = derived
  DType dtype = DType::F16;
  int64_t batch_size = 0;         // write: num_tokens; attention/pipeline: num_seqs
  std::string writer;             // write, pipeline
  uint64_t seed = 1;
  std::string source;             // "file:line" of the table that made it

  /// Stable across runs: kind/model/tp/head_size/layout/block_size/dtype/batch/kernel/seed.
  std::string id() const;
  /// Row name in the matrix.
  std::string variant() const { return writer; }
};

}  // namespace kvh
