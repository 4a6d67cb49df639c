#include "case.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

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

const char* to_string(ValueDist v) {
  switch (v) {
    case ValueDist::Normal: return "normal";
    case ValueDist::Sink: return "sink";
    case ValueDist::Large: return "large";
  }
  return "?";
}

std::optional<ValueDist> parse_value_dist(const std::string& s) {
  for (auto v : {ValueDist::Normal, ValueDist::Sink, ValueDist::Large})
    if (s == to_string(v)) return v;
  return std::nullopt;
}

namespace {
std::string kernels_of(const Case& c) {
  if (c.kind == CaseKind::Write) return c.writer;
  const std::string w = c.kind == CaseKind::Attention ? "reference" : c.writer;
  const std::string r = c.router_policy.empty()
                            ? c.reader
                            : fmt::format("router={}@{}", c.router_policy, c.target.empty() ? "device" : c.target);
  return w + "+" + r;
}


std::string context_part(const Case& c) {
  if (c.kind == CaseKind::Write) return "";
  if (c.context_lens.empty()) return fmt::format("ctx{}-{}/", c.context_len_min, c.context_len_max);
  if (c.context_lens.size() <= 8) return fmt::format("ctx={}/", fmt::join(c.context_lens, "+"));
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a over the lengths
  for (int64_t n : c.context_lens)
    for (int b = 0; b < 8; ++b) h = (h ^ uint8_t(uint64_t(n) >> (8 * b))) * 0x100000001b3ull;
  return fmt::format("ctx={}@{:016x}/", c.context_lens.size(), h);
}
}  // namespace

std::string Case::id() const {
  const std::string ctx = context_part(*this);
  const std::string hp = !router_policy.empty() && high_precision != 1 ? fmt::format("/hp{}", high_precision) : "";
  std::string pad =
      layout == Scheme::Padded && padded_page_bytes > 0 ? fmt::format("-{}B", padded_page_bytes) : std::string();
  if (layout == Scheme::KernelPages) pad = fmt::format("-k{}", kernel_block_size);
  if (layout == Scheme::DegenerateStrides) pad = fmt::format("-s{}", degenerate_stride);
  const std::string vals = values == ValueDist::Normal ? "" : fmt::format("/values={}", to_string(values));
  return fmt::format("{}/{}/tp{}/hd{}/{}{}/bs{}/{}/n{}/{}{}{}{}/s{}", to_string(kind), model, tp, head_size,
                     to_string(layout), pad, block_size, to_string(dtype), batch_size, ctx, kernels_of(*this), hp,
                     vals, seed);
}

std::string Case::variant() const { return variant_name.empty() ? kernels_of(*this) : variant_name; }

int Case::shuffle() const {
  if (!router_policy.empty()) return 1;  // both routed readers read the shuffled V layout
  const std::string& k = kind == CaseKind::Write || reader.empty() ? writer : reader;
  return k.find("shuffle") != std::string::npos || k == "paged_attention_rocm" || k == "pa_fwd_asm" ? 1 : 0;
}

}  // namespace kvh
