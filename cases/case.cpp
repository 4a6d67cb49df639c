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
    case ValueDist::LowLogits: return "low_logits";
    case ValueDist::AwayFromZero: return "away_from_zero";
  }
  return "?";
}

const char* to_string(KvScales s) {
  switch (s) {
    case KvScales::None: return "none";
    case KvScales::Tensor: return "tensor";
    case KvScales::Head: return "head";
    case KvScales::Block: return "block";
    case KvScales::Token: return "token";
    case KvScales::Slot: return "slot";
  }
  return "?";
}

std::optional<KvScales> parse_kv_scales(const std::string& s) {
  for (auto v : {KvScales::None, KvScales::Tensor, KvScales::Head, KvScales::Block, KvScales::Token, KvScales::Slot})
    if (s == to_string(v)) return v;
  return std::nullopt;
}

const char* to_string(KvCacheDType d) {
  switch (d) {
    case KvCacheDType::Same: return "same";
    case KvCacheDType::Fp8E4m3fn: return "fp8_e4m3fn";
    case KvCacheDType::Fp8E4m3fnuz: return "fp8_e4m3fnuz";
    case KvCacheDType::Int8: return "int8";
  }
  return "?";
}

std::string Case::kv_cache_dtype_name() const { return quantized_cache() ? to_string(kv_cache_dtype) : to_string(dtype); }

std::optional<ValueDist> parse_value_dist(const std::string& s) {
  for (auto v : {ValueDist::Normal, ValueDist::Sink, ValueDist::Large, ValueDist::LowLogits, ValueDist::AwayFromZero})
    if (s == to_string(v)) return v;
  return std::nullopt;
}

const char* to_string(Stale s) {
  switch (s) {
    case Stale::Random: return "random";
    case Stale::Nan: return "nan";
    case Stale::Inf: return "inf";
  }
  return "?";
}

std::optional<Stale> parse_stale(const std::string& s) {
  for (auto v : {Stale::Random, Stale::Nan, Stale::Inf})
    if (s == to_string(v)) return v;
  return std::nullopt;
}

std::string block_table_padding_name(int64_t padding) {
  return padding < 0 ? std::string("-1") : fmt::format("num_blocks+{}", padding);
}

std::optional<int64_t> parse_block_table_padding(const std::string& s) {
  if (s == "-1") return -1;
  const std::string prefix = "num_blocks+";
  if (s.rfind(prefix, 0) != 0 || s.size() == prefix.size() || s.size() > prefix.size() + 3) return std::nullopt;
  int64_t k = 0;
  for (size_t i = prefix.size(); i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return std::nullopt;
    k = k * 10 + (s[i] - '0');
  }
  if (k > kMaxPaddingK) return std::nullopt;
  return k;
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


// An explicit list of lengths: "L1+L2+..." up to 8, else "N@HASH" (64-bit FNV-1a of them in hex).
std::string list_part(const std::vector<int64_t>& lens) {
  if (lens.size() <= 8) return fmt::format("{}", fmt::join(lens, "+"));
  uint64_t h = 0xcbf29ce484222325ull;
  for (int64_t n : lens)
    for (int b = 0; b < 8; ++b) h = (h ^ uint8_t(uint64_t(n) >> (8 * b))) * 0x100000001b3ull;
  return fmt::format("{}@{:016x}", lens.size(), h);
}

std::string context_part(const Case& c) {
  if (c.kind == CaseKind::Write) return "";
  if (c.context_lens.empty()) return fmt::format("ctx{}-{}/", c.context_len_min, c.context_len_max);
  return "ctx=" + list_part(c.context_lens) + "/";
}

// "/q..." and "/noncausal" of a ragged case; "" for decode (ids of decode cases stay).
std::string query_part(const Case& c) {
  if (!c.ragged()) return "";
  std::string q;
  if (!c.query_lens.empty()) q = "/q=" + list_part(c.query_lens);
  else if (c.query_mixed) q = fmt::format("/qmix{}-{}", c.query_len_min, c.query_len_max);
  else if (c.query_len_min == c.query_len_max) q = fmt::format("/q{}", c.query_len_min);
  else q = fmt::format("/q{}-{}", c.query_len_min, c.query_len_max);
  return c.causal ? q : q + "/noncausal";
}
}  // namespace

namespace {
// "mlaR+P/" of an MLA case ("mlaR+PnN/" when the default scale comes from a nope dim other than 128);
// "" otherwise (ids of other cases stay).
std::string mla_part(const Case& c) {
  if (!c.mla()) return "";
  const bool nope = c.softmax_scale == 0 && c.qk_nope_head_dim != 128;
  return fmt::format("mla{}+{}{}/", c.kv_lora_rank, c.qk_rope_head_dim,
                     nope ? fmt::format("n{}", c.qk_nope_head_dim) : std::string());
}
}  // namespace

namespace {
// "/values=V/stale=S[/pad=..][/minblock=N]/kv=F/scales=G" of Case::id, each only when not default;
// `paging` false leaves out the two that only move block ids (Case::logical_id).
std::string values_part(const Case& c, bool paging) {
  std::string vals = c.values == ValueDist::Normal ? "" : fmt::format("/values={}", to_string(c.values));
  if (c.stale != Stale::Random) vals += fmt::format("/stale={}", to_string(c.stale));
  if (paging && c.block_table_padding >= 0) vals += "/pad=" + block_table_padding_name(c.block_table_padding);
  if (paging && c.min_block_id != 1) vals += fmt::format("/minblock={}", c.min_block_id);
  if (c.quantized_cache()) vals += fmt::format("/kv={}", to_string(c.kv_cache_dtype));
  if (c.kv_scales != KvScales::None) vals += fmt::format("/scales={}", to_string(c.kv_scales));
  return vals;
}

// The query part and the score modifiers of Case::id; `launch` false leaves out what only
// changes how a kernel runs (partition size, derived tolerance, launch configuration).
std::string modifiers_part(const Case& c, bool launch) {
  std::string mods = query_part(c);
  if (c.sliding_window > 0) mods += fmt::format("/win{}", c.sliding_window);
  if (c.sinks) mods += "/sinks";
  if (c.softcap > 0) mods += fmt::format("/cap{}", c.softcap);
  if (c.alibi) mods += "/alibi";
  if (c.tp_rank != 0) mods += fmt::format("/rank{}", c.tp_rank);
  if (launch && c.partition_size != 0) mods += fmt::format("/ps{}", c.partition_size);
  if (c.softmax_scale != 0) mods += fmt::format("/sc={}", c.softmax_scale);
  if (launch && c.derived_tolerance) mods += "/tol=derived";  // issue 23 (B long contexts)
  if (launch && !c.launch_config.empty()) mods += "/cfg=" + c.launch_config;  // issue 23 (D)
  return mods;
}
}  // namespace

std::string Case::id() const {
  const std::string ctx = context_part(*this);
  const std::string hp = !router_policy.empty() && high_precision != 1 ? fmt::format("/hp{}", high_precision) : "";
  std::string pad =
      layout == Scheme::Padded && padded_page_bytes > 0 ? fmt::format("-{}B", padded_page_bytes) : std::string();
  if (layout == Scheme::KernelPages) pad = fmt::format("-k{}", kernel_block_size);
  if (layout == Scheme::DegenerateStrides) pad = fmt::format("-s{}", degenerate_stride);
  return fmt::format("{}/{}/tp{}/hd{}/{}{}{}/bs{}/{}/n{}/{}{}{}{}{}/s{}", to_string(kind), model, tp, head_size,
                     mla_part(*this), to_string(layout), pad, block_size, to_string(dtype), batch_size, ctx,
                     kernels_of(*this), hp, values_part(*this, true), modifiers_part(*this, true), seed);
}

std::string Case::logical_id() const {
  return fmt::format("{}/{}/tp{}/h{}x{}/hd{}/{}{}/n{}/{}{}{}/s{}", kind == CaseKind::Write ? "write" : "decode", model,
                     tp, num_heads, num_kv_heads, head_size, mla_part(*this), to_string(dtype), batch_size,
                     context_part(*this), values_part(*this, false), modifiers_part(*this, false), seed);
}

std::string Case::variant() const {
  const std::string row = variant_name.empty() ? kernels_of(*this) : variant_name;
  return launch_config.empty() ? row : row + " (cfg " + launch_config + ")";  // issue 23 (D): no glob characters
}

uint32_t Case::modifiers() const {
  // The kvh_modifier values of kvharness/provider.h (cases/ does not include the ABI header).
  return (sliding_window > 0 ? 1u : 0u) | (sinks ? 2u : 0u) | (softcap > 0 ? 4u : 0u) | (alibi ? 8u : 0u) |
         (ragged() && !causal ? 16u : 0u);
}

std::string json_double(double v) {
  std::string s = fmt::format("{}", v);
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

int Case::shuffle() const {
  if (!router_policy.empty()) return 1;  // both routed readers read the shuffled V layout
  const std::string& k = kind == CaseKind::Write || reader.empty() ? writer : reader;
  return k.find("shuffle") != std::string::npos || k == "paged_attention_rocm" || k == "pa_fwd_asm" ||
                 k == "fixture_mask_by_zero" || k == "fixture_prefetch_past_last_page"
             ? 1
             : 0;
}

}  // namespace kvh
