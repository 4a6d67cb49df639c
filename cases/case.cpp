#include "case.h"

#include <fmt/format.h>

namespace kvh {

const char* to_string(CaseKind k) {
  switch (k) {
    case CaseKind::Write: return "write";
    case CaseKind::Attention: return "attention";
    case CaseKind::Pipeline: return "pipeline";
  }
  return "?";
}

const char* to_string(DType d) { return d == DType::F16 ? "fp16" : "bf16"; }

std::string Case::id() const {
  return fmt::format("{}/{}/tp{}/hd{}/{}/bs{}/{}/n{}/{}/s{}", to_string(kind), model, tp, head_size, to_string(layout),
                     block_size, to_string(dtype), batch_size, writer, seed);
}

}  // namespace kvh
