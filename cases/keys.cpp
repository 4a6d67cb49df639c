#include "keys.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <stdexcept>

#include "case.h"
#include "expectation.h"
#include "layout.h"
#include "route_boundaries.h"

namespace kvh {

namespace {

constexpr uint32_t bits(std::initializer_list<KeyTable> ts) {
  uint32_t out = 0;
  for (KeyTable t : ts) out |= key_table_bit(t);
  return out;
}

constexpr uint32_t kTop = bits({KeyTable::TopLevel});
constexpr uint32_t kModel = bits({KeyTable::Model});
constexpr uint32_t kWrite = bits({KeyTable::Write});
constexpr uint32_t kDecode = bits({KeyTable::Attention, KeyTable::Pipeline});
constexpr uint32_t kCaseTables = kWrite | kDecode;
constexpr uint32_t kVariants = bits({KeyTable::Variants});
constexpr uint32_t kRouteRule = bits({KeyTable::RouteRule});
constexpr uint32_t kByIds = bits({KeyTable::ExpectedFailure, KeyTable::KnownFailure});
constexpr uint32_t kDeclarations = kByIds | bits({KeyTable::ScopedExpectedFailure});
constexpr uint32_t kFilterOnly = 0;

constexpr int64_t kTwo20 = int64_t(1) << 20;
constexpr int64_t kTwo40 = int64_t(1) << 40;

// One row under construction: CaseKey's fields by name, so that the table reads as a table.
struct Row {
  CaseKey k;
  Row(const char* name, uint32_t tables, KeyType type) {
    k.name = name;
    k.tables = tables;
    k.type = type;
  }
  Row& dflt(std::string d) {
    k.default_value = std::move(d);
    return *this;
  }
  Row& values(std::vector<std::string> v) {
    k.values = std::move(v);
    return *this;
  }
  Row& range(int64_t lo, int64_t hi) {
    k.range = {lo, hi};
    return *this;
  }
  Row& numbered(std::string n) {
    k.numbered = std::move(n);
    return *this;
  }
  Row& field(KeyType t) {
    k.field_type = t;
    return *this;
  }
  Row& note(std::string n) {
    k.values_note = std::move(n);
    return *this;
  }
  Row& filter(std::string f) {
    k.filter = std::move(f);
    return *this;
  }
  Row& means(std::string m) {
    k.meaning = std::move(m);
    return *this;
  }
  Row& ignored() {
    k.ignored = true;
    return *this;
  }
  operator CaseKey() const { return k; }  // NOLINT: a row is its key
};

std::vector<std::string> scheme_names() {
  std::vector<std::string> out;
  for (Scheme s : all_schemes()) out.push_back(to_string(s));
  return out;
}

std::vector<std::string> dtype_names() { return {to_string(DType::F16), to_string(DType::BF16)}; }

std::vector<CaseKey> top_level_keys() {
  return {
      Row("seeds", kTop, KeyType::Integers).dflt("[1]").range(0, kTwo40).filter("seed")
          .means("data seeds: every case runs once per seed (`--seed N` replaces them)"),
      Row("model", kTop, KeyType::Tables).dflt("none").means("[[model]] tables: models beside the presets"),
      Row("write", kTop, KeyType::Tables).dflt("none")
          .means("[[write]] tables: cache-write cases, each table one cartesian product of its axes"),
      Row("attention", kTop, KeyType::Tables).dflt("none")
          .means("[[attention]] tables: decode-attention cases over a cache the reference writer fills"),
      Row("pipeline", kTop, KeyType::Tables).dflt("none")
          .means("[[pipeline]] tables: a writer under test, then a reader, judged against attention over the "
                 "logical K/V"),
      Row("expected_failure", kTop | kCaseTables | kVariants, KeyType::Tables).dflt("none")
          .means("declared expected failures (cases/expectation.h): at top level the cases their filter or ids "
                 "name, in this file; inside a table or variant that table's (variant's) cases, narrowed by "
                 "their filter"),
  };
}

std::vector<CaseKey> model_keys() {
  return {
      Row("name", kModel, KeyType::String).dflt("required")
          .means("the model's name in `models`; not a preset's or an earlier [[model]]'s"),
      Row("num_heads", kModel, KeyType::Integer).dflt("required").range(1, 4096)
          .means("query heads of the whole model (before tensor parallelism)"),
      Row("num_kv_heads", kModel, KeyType::Integer).dflt("required").range(1, 4096)
          .means("KV heads of the whole model; divides num_heads (GQA)"),
      Row("head_size", kModel, KeyType::Integer).dflt("required").range(1, 1024).means("elements per head"),
      Row("hybrid", kModel, KeyType::Boolean).dflt("false")
          .means("attention + mamba layers (the blocks-first interleaved cache)"),
      Row("kv_lora_rank", kModel, KeyType::Integer).dflt("0 (not MLA)").range(1, 4096)
          .means("MLA: the latent rank; then num_kv_heads is 1 (may be left out) and head_size kv_lora_rank + "
                 "qk_rope_head_dim (may be left out)"),
      Row("qk_rope_head_dim", kModel, KeyType::Integer).dflt("required beside kv_lora_rank").range(1, 1024)
          .means("MLA: the rope dims of a query/key head"),
      Row("qk_nope_head_dim", kModel, KeyType::Integer).dflt("required beside kv_lora_rank").range(1, 1024)
          .means("MLA: the nope dims of a query/key head (the softmax scale's)"),
      Row("source", kModel, KeyType::String).dflt("none").ignored()
          .means("where the numbers come from; for the file's reader, never read"),
  };
}

// The axes every case table has (cases/case_file.cpp CommonAxes).
std::vector<CaseKey> case_table_keys() {
  return {
      Row("models", kCaseTables, KeyType::Strings).dflt("required")
          .note("preset names (`kvharness info`) or [[model]] names").filter("model")
          .means("the models whose attention shapes the cases take"),
      Row("tp", kCaseTables, KeyType::IntegerAxis).dflt("1").range(1, 1024).filter("tp")
          .means("tensor-parallel degree, one or several (each a case axis): per-rank heads num_heads/tp, KV heads "
                 "max(1, num_kv_heads/tp) (MLA: the one latent head)"),
      Row("layouts", kCaseTables, KeyType::Strings).dflt("required (MLA tables: [\"separate\"])")
          .values(scheme_names()).filter("layout")
          .means("how the cache sits in memory (cases/layout.h); `large` is [[write]] only; MLA caches take "
                 "separate, offset, padded and degenerate_strides"),
      Row("head_sizes", kCaseTables, KeyType::Integers).dflt("the model's").range(1, 1024).filter("head_size")
          .means("overrides each model's head size"),
      Row("block_sizes", kCaseTables, KeyType::Integers).dflt("required").range(1, 65536).filter("block_size")
          .means("tokens per cache block (kernel_pages: the cache manager's block)"),
      Row("dtypes", kCaseTables, KeyType::Strings).dflt("required").values(dtype_names()).filter("dtype")
          .means("element type of Q, K, V and the output"),
      Row("padded_page_bytes", kCaseTables, KeyType::Integer).dflt("0 (derived)").range(0, int64_t(1) << 32)
          .means("the padded layout's page size in bytes"),
      Row("kernel_block_size", kCaseTables, KeyType::Integer).dflt("required with kernel_pages, else refused")
          .range(1, 65536)
          .means("the kernel's page in tokens; block_sizes are multiples of it. Ids: `kernel_pages-kN`"),
      Row("degenerate_strides", kCaseTables, KeyType::Integers)
          .dflt(fmt::format("[0, 1, {}]", kDegenerateLargeStride)).range(0, kTwo40)
          .means("degenerate_strides layout only: one case per value, the stride of every size-1 dim of the "
                 "views. Ids: `degenerate_strides-sN`"),
      Row("kv_cache_dtype", kCaseTables, KeyType::Strings).dflt("the K/V dtype")
          .values({"fp16", "bf16", "fp8_e4m3fn", "fp8_e4m3fnuz", "int8"}).filter("kv_cache_dtype")
          .means("the cache's element type: a 16-bit entry applies to cases of that dtype, an fp8 or int8 one "
                 "quantizes (int8 needs kv_scales other than none). Ids gain `/kv=FMT` for fp8 and int8"),
      // MLA (issue 22; kvharness/provider.h KVH_CACHE_MLA): the latent cache's shape, beside or instead of a preset's.
      Row("kv_lora_rank", kCaseTables, KeyType::Integer).dflt("the model's (0: not MLA)").range(1, 4096)
          .filter("kv_lora_rank")
          .means("MLA: the latent part of the cache row; makes the table's cases MLA (num_kv_heads 1, head_size "
                 "kv_lora_rank + qk_rope_head_dim). Ids gain `mlaR+P/` after the head size"),
      Row("qk_rope_head_dim", kCaseTables, KeyType::Integer).dflt("the model's; required beside kv_lora_rank")
          .range(1, 1024).means("MLA: the rope part of the cache row (and of the query's head)"),
      Row("qk_nope_head_dim", kCaseTables, KeyType::Integer)
          .dflt("the model's; without an MLA model, required unless softmax_scale").range(1, 1024)
          .means("MLA: the model's per-head nope dim; the default softmax scale is 1/sqrt(qk_nope_head_dim + "
                 "qk_rope_head_dim). Ids gain `nN` after `mlaR+P` when not 128 and softmax_scale is not given"),
      Row("softmax_scale", kCaseTables, KeyType::FloatAxis).dflt("MLA: 1/sqrt(qk_nope_head_dim + qk_rope_head_dim)")
          .range(0, 1000).note("in (0, 1000]; MLA tables only").filter("softmax_scale")
          .means("MLA: the softmax scale of the score (DeepSeek's is 1/sqrt(qk_nope + qk_rope), not "
                 "1/sqrt(head_size)). Ids gain `/sc=X`"),
      Row("kv_scales", kCaseTables, KeyType::Strings).dflt("[\"none\"]")
          .values({"none", "tensor", "head", "block", "token", "slot"}).filter("kv_scales")
          .means("granularity of the dequant scales, fp8 and int8 caches only (slot: [num_blocks, block_size], "
                 "per token). Ids gain `/scales=G` when not none"),
  };
}

std::vector<CaseKey> writer_keys() {
  return {
      Row("num_tokens", kWrite, KeyType::Integers).dflt("required").range(1, int64_t(1) << 22)
          .filter("batch_size").means("tokens written per case"),
      Row("writers", kWrite | bits({KeyTable::Pipeline}), KeyType::Strings)
          .dflt("required ([[pipeline]]: unless variants)").note("writer names (`kvharness info`)")
          .filter("writer").means("the writers under test; a pipeline crosses them with its readers and routers"),
      Row("writers", bits({KeyTable::Attention}), KeyType::Strings).dflt("none").ignored()
          .means("accepted and never read: the reference writer fills an attention case's cache (a writer under "
                 "test: [[pipeline]])"),
  };
}

// [[attention]] and [[pipeline]]: the batch, the kernels, the router's inputs.
std::vector<CaseKey> decode_keys() {
  return {
      Row("batch_sizes", kDecode, KeyType::Integers).dflt("required unless context_lens_lists").range(1, 65536)
          .filter("batch_size").means("sequences per case (one query token each, unless query_lens says more)"),
      Row("context_lens", kDecode, KeyType::IntegerPair).dflt("required unless context_lens_lists")
          .range(1, kTwo20)
          .means("[min, max]: each sequence's length is drawn from it, both ends among them in a batch of two "
                 "or more"),
      Row("context_lens_lists", kDecode, KeyType::IntegerLists).dflt("none").range(1, kTwo20)
          .note("1 to 65536 lengths a list")
          .means("instead of batch_sizes and context_lens: explicit per-sequence lengths, one list per batch"),
      Row("query_lens", kDecode, KeyType::QueryLensAxis).dflt("1 (decode)").range(1, kTwo20)
          .means("new query tokens per sequence (ragged queries: speculative decode, prefill chunks): N, [min, max] "
                 "drawn with both ends, or {mixed = [min, max]}: decode, speculative [2, 8] and chunks in one "
                 "batch. Each is clamped to its sequence's length. Ids gain `/qN`, `/qMIN-MAX` or `/qmixMIN-MAX`"),
      Row("query_lens_lists", kDecode, KeyType::IntegerLists).dflt("none").range(1, kTwo20)
          .note("one list per context_lens_lists list, of its length")
          .means("beside context_lens_lists: explicit per-sequence query lengths, each at most its context "
                 "length. Ids gain `/q=...`"),
      Row("causal", kDecode, KeyType::BooleanAxis).dflt("true").filter("causal")
          .means("ragged queries: causal within each chunk (token j of q sees keys t <= L - q + j); false: every "
                 "query token sees its whole sequence. Ids gain `/noncausal`"),
      Row("variants", kDecode, KeyType::Tables).dflt("none")
          .means("the matrix rows, each naming its kernels ([[*.variants]]); beside them readers, routers and "
                 "writers are not read"),
      Row("readers", kDecode, KeyType::Strings).dflt("none").note("reader names (`kvharness info`)")
          .filter("reader").means("readers under test, a row each"),
      Row("routers", kDecode, KeyType::Strings).dflt("none").note("router policies (`kvharness info`)")
          .filter("router_policy").means("router policies under test, a row each: the policy picks the reader"),
      // issue 23 (D): launch configurations (kvharness/provider.h kvh_launch_config)
      Row("launch_configs", kCaseTables, KeyType::Strings).dflt("none (the kernel's default launch)")
          .note("\"all\", or an array of configuration names the kernel declares (`kvharness info`)")
          .filter("launch_config")
          .means("one case per selected launch configuration (threads per block, partition size, a Triton "
                 "kernel's num_warps...) of the table's writer ([[write]]) or reader (reader rows only), which the "
                 "call receives. Ids gain `/cfg=NAME`"),
      Row("target", kDecode, KeyType::String).dflt("the device's").values(named_targets()).numbered("cus=N")
          .range(1, 65536).note("N: compute units").filter("target")
          .means("the compute units the router sees (checked in every table; used by router rows, and by the planner of an MLA case's reader)"),
      Row("high_precision", kDecode, KeyType::Integer).dflt("1").range(0, 2)
          .means("the router's high-precision mode"),
      Row("values", kDecode, KeyType::Strings).dflt("[\"normal\"]").values({"normal", "sink", "large", "low_logits", "away_from_zero"})
          .filter("values")
          .means("distributions of Q, K and V (harness/case/value_dist.h). Ids gain `/values=V` when not normal"),
      Row("route_boundaries", kDecode, KeyType::Boolean).dflt("false")
          .means("router rows also get the batch sizes around the threshold num_seqs * num_heads > 2 * CUs of "
                 "the named target (aiter policies), or around the 2d/3d threshold of the per-rank kv heads "
                 "(vllm-unified policies; cases/route_boundaries.h), or batches 1 and 2 (vllm-rocm-mla policies: "
                 "the Gluon kernel's fp8 batch limit)"),
      // ---- issue 23 (B long contexts) ----
      Row("tolerance", kDecode, KeyType::String).dflt("\"dtype\"").values({"dtype", "derived"})
          .means("how `out` is judged: dtype = atol/rtol by dtype; derived = also within 1.5 ulps of the output "
                 "at the reference plus 0.5 ulp of its head's largest output (harness/check/tolerance.h); fp16 "
                 "outputs of 16-bit caches only, not MLA. Ids gain `/tol=derived`"),
      // ---- end issue 23 (B long contexts) ----
      Row("min_block_id", kDecode, KeyType::Integer).dflt("1").range(1, int64_t(1) << 30)
          .means("sequences' pages come from block ids from this one up (block 0 is the null block). Ids gain "
                 "`/minblock=N` when not 1"),
  };
}

// [[attention]] and [[pipeline]]: score modifiers, split control and masking (case.h).
std::vector<CaseKey> modifier_keys() {
  return {
      Row("sliding_window", kDecode, KeyType::IntegerAxis).dflt("0 (off)").range(0, kTwo20)
          .filter("sliding_window")
          .means("left window in tokens, the query's own included. Ids gain `/winN`"),
      Row("sinks", kDecode, KeyType::BooleanAxis).dflt("false").filter("sinks")
          .means("one attention-sink logit per head in the softmax denominator. Ids gain `/sinks`"),
      Row("softcap", kDecode, KeyType::FloatAxis).dflt("0 (off)").range(0, 1000000).filter("softcap")
          .means("logit soft-cap: cap * tanh(s / cap). Ids gain `/capX`"),
      Row("alibi", kDecode, KeyType::BooleanAxis).dflt("false").filter("alibi")
          .means("ALiBi with the standard slopes of the model's num_heads * tp heads. Ids gain `/alibi`"),
      Row("tp_rank", kDecode, KeyType::IntegerAxis).dflt("0").note("0..tp-1").filter("tp_rank")
          .means("the rank whose heads run: its slice of the ALiBi slopes and sinks. Ids gain `/rankR`"),
      Row("partition_size", kDecode, KeyType::IntegerAxis).dflt("0 (the reader's default)").range(0, kTwo20)
          .filter("partition_size").means("split-K partition in tokens passed to the reader. Ids gain `/psP`"),
      Row("stale", kDecode, KeyType::Strings).dflt("[\"random\"]").values({"random", "nan", "inf"})
          .filter("stale")
          .means("what the cache slots a case does not write hold (harness/case/stale.h). Ids gain `/stale=S` "
                 "when not random"),
      Row("block_table_padding", kDecode, KeyType::String).dflt("\"-1\"").values({"-1"}).numbered("num_blocks+K")
          .range(0, kMaxPaddingK).filter("block_table_padding")
          .means("the out-of-range block id of block_tables entries past each sequence's last page. Ids gain "
                 "`/pad=num_blocks+K` when not -1"),
  };
}

std::vector<CaseKey> route_keys() {
  return {
      Row("expect_routed_to", kDecode | kVariants, KeyType::StringOrTables).dflt("none")
          .note("a reader name, or route rules (the keys of `expect_routed_to` entries)")
          .means("the reader a router case must be routed to: the first rule whose keys all match it; another "
                 "route is FAIL misroute. A variant's overrides its table's"),
      Row("reader", kRouteRule, KeyType::String).dflt("required").means("the reader the router must pick"),
      Row("routers", kRouteRule, KeyType::Strings).dflt("any").means("the router policies the rule applies to"),
      Row("head_sizes", kRouteRule, KeyType::Integers).dflt("any").range(1, 1024)
          .means("the head sizes it applies to"),
      Row("dtypes", kRouteRule, KeyType::Strings).dflt("any").values(dtype_names()).means("the dtypes it applies to"),
      Row("batch_sizes", kRouteRule, KeyType::Integers).dflt("any").range(1, 65536)
          .means("the batch sizes it applies to"),
      Row("batch_range", kRouteRule, KeyType::IntegerPair).dflt("any").range(1, 65536)
          .means("[min, max]: the batch sizes it applies to"),
      Row("high_precision", kRouteRule, KeyType::Integer).dflt("any").range(0, 2)
          .means("the high-precision mode it applies to"),
  };
}

std::vector<CaseKey> variant_keys() {
  return {
      Row("name", kVariants, KeyType::String).dflt("the kernels")
          .means("the row's label; a variant with expected failures needs one"),
      Row("writer", kVariants, KeyType::String).dflt("[[pipeline.variants]]: required; else refused")
          .note("a writer name").filter("writer").means("the writer under test"),
      Row("reader", kVariants, KeyType::String).dflt("exactly one of reader, router").note("a reader name")
          .filter("reader").means("the reader under test"),
      Row("router", kVariants, KeyType::String).dflt("exactly one of reader, router").note("a router policy")
          .filter("router_policy").means("the router policy that picks the reader"),
  };
}

// [[expected_failure]], scoped expected_failure and [[known_failure]] (cases/expectation.h).
std::vector<CaseKey> declaration_keys() {
  return {
      Row("filter", kDeclarations, KeyType::String).dflt("none").note("a filter expression (the filter keys)")
          .means("the cases it covers; scoped: narrows its table's (variant's) cases"),
      Row("ids", kByIds, KeyType::Strings).dflt("none").note("case ids")
          .means("exact cases it covers, beside its filter; a declaration names cases by filter or ids"),
      Row("component", kDeclarations, KeyType::String).dflt("any kernel component").values(expectable_components())
          .means("the component that must fail (a harness failure is never expected)"),
      Row("reasons", kDeclarations, KeyType::Strings).dflt("any FAIL reason (a CRASH only if listed)")
          .values(expectable_reasons()).means("the failures it allows"),
      Row("why", kDeclarations, KeyType::String).dflt("required").means("the bug, in words (reports show it)"),
      Row("known_failure", bits({KeyTable::KnownFailuresTopLevel}), KeyType::Tables).dflt("required")
          .means("[[known_failure]] tables of a --known-failures file: failures of your own kernels to expect"),
  };
}

// Fields of a case that no file sets, which filters (and results.json) name.
std::vector<CaseKey> filter_only_keys() {
  std::vector<std::string> kinds;
  for (CaseKind k : {CaseKind::Write, CaseKind::Attention, CaseKind::Pipeline}) kinds.push_back(to_string(k));
  return {
      Row("id", kFilterOnly, KeyType::Derived).filter("id").means("the case id (`kvharness list` prints them)"),
      Row("kind", kFilterOnly, KeyType::Derived).values(kinds).filter("kind").means("the table that made the case"),
      Row("num_heads", kFilterOnly, KeyType::Derived).field(KeyType::Integer).filter("num_heads")
          .means("query heads per rank"),
      Row("num_kv_heads", kFilterOnly, KeyType::Derived).field(KeyType::Integer).filter("num_kv_heads")
          .means("KV heads per rank"),
      Row("variant", kFilterOnly, KeyType::Derived).filter("variant")
          .means("the matrix row: the variant's name, else its kernels"),
      Row("max_query_len", kFilterOnly, KeyType::Derived).field(KeyType::Integer).filter("max_query_len")
          .means("the most query tokens a sequence of the case can have (1: decode)"),
      Row("mla", kFilterOnly, KeyType::Derived).values({"0", "1"}).filter("mla")
          .means("1 when the case's cache is MLA's latent cache (kv_lora_rank > 0)"),
      Row("shuffle", kFilterOnly, KeyType::Derived).values({"0", "1"}).filter("shuffle")
          .means("1 when the V cache is shuffled (a shuffle writer or reader, or a router)"),
  };
}

std::vector<CaseKey> build_table() {
  std::vector<CaseKey> out;
  for (auto part : {top_level_keys, model_keys, case_table_keys, writer_keys, decode_keys, modifier_keys,
                    route_keys, variant_keys, declaration_keys, filter_only_keys})
    for (CaseKey& k : part()) out.push_back(std::move(k));
  return out;
}

// "2^N" for the powers of two from 2^20 up, else the number.
std::string number(int64_t v) {
  for (int n = 20; n < 63; ++n)
    if (v == int64_t(1) << n) return fmt::format("2^{}", n);
  return std::to_string(v);
}

std::string where(const CaseKey& k) {
  if (k.filter_only()) return "filter only";
  std::vector<std::string> out;
  for (KeyTable t : all_key_tables())
    if (k.in(t)) out.push_back(to_string(t));
  return fmt::format("{}", fmt::join(out, ", "));
}

// "derived (integer)" for a Derived row of a typed field.
std::string type_cell(const CaseKey& k) {
  if (k.type == KeyType::Derived && k.field_type != KeyType::String)
    return fmt::format("{} ({})", to_string(k.type), to_string(k.field_type));
  return to_string(k.type);
}

std::string values_cell(const CaseKey& k) {
  std::vector<std::string> parts;
  if (!k.values.empty() || !k.numbered.empty()) {
    std::vector<std::string> quoted;
    for (const auto& v : k.values) quoted.push_back("`" + v + "`");
    if (!k.numbered.empty()) quoted.push_back("`" + k.numbered + "`");
    parts.push_back(fmt::format("{}", fmt::join(quoted, " ")));
  }
  // A numbered spelling's range is its integer's: "K in 0..16".
  if (k.range.set())
    parts.push_back((k.numbered.empty() ? "" : k.numbered.substr(k.numbered.size() - 1) + " in ") +
                    number(k.range.lo) + ".." + number(k.range.hi));
  if (!k.values_note.empty()) parts.push_back(k.values_note);
  return fmt::format("{}", fmt::join(parts, "; "));
}

// A Markdown table cell: `|` would end it.
std::string cell(const std::string& s) {
  std::string out;
  for (char ch : s) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out;
}

}  // namespace

const std::vector<KeyTable>& all_key_tables() {
  static const std::vector<KeyTable> t{KeyTable::TopLevel,        KeyTable::Model,
                                       KeyTable::Write,           KeyTable::Attention,
                                       KeyTable::Pipeline,        KeyTable::Variants,
                                       KeyTable::RouteRule,       KeyTable::ExpectedFailure,
                                       KeyTable::ScopedExpectedFailure, KeyTable::KnownFailuresTopLevel,
                                       KeyTable::KnownFailure};
  return t;
}

const char* to_string(KeyTable t) {
  switch (t) {
    case KeyTable::TopLevel: return "top level";
    case KeyTable::Model: return "[[model]]";
    case KeyTable::Write: return "[[write]]";
    case KeyTable::Attention: return "[[attention]]";
    case KeyTable::Pipeline: return "[[pipeline]]";
    case KeyTable::Variants: return "[[*.variants]]";
    case KeyTable::RouteRule: return "`expect_routed_to` entries";
    case KeyTable::ExpectedFailure: return "[[expected_failure]]";
    case KeyTable::ScopedExpectedFailure: return "scoped `expected_failure`";
    case KeyTable::KnownFailuresTopLevel: return "known-failures file";
    case KeyTable::KnownFailure: return "[[known_failure]]";
  }
  return "?";
}

const char* to_string(KeyType t) {
  switch (t) {
    case KeyType::String: return "string";
    case KeyType::Strings: return "array of strings";
    case KeyType::Integer: return "integer";
    case KeyType::Integers: return "array of integers";
    case KeyType::IntegerPair: return "[min, max] integers";
    case KeyType::IntegerLists: return "array of integer arrays";
    case KeyType::Boolean: return "boolean";
    case KeyType::IntegerAxis: return "integer or array of integers";
    case KeyType::BooleanAxis: return "boolean or array of booleans";
    case KeyType::FloatAxis: return "number or array of numbers";
    case KeyType::QueryLensAxis: return "integer, [min, max] or {mixed = [min, max]}, or an array of them";
    case KeyType::Tables: return "array of tables";
    case KeyType::StringOrTables: return "string or array of tables";
    case KeyType::Derived: return "derived";
  }
  return "?";
}

const std::vector<CaseKey>& case_keys() {
  static const std::vector<CaseKey> table = build_table();
  return table;
}

const CaseKey& case_key(KeyTable t, const std::string& name) {
  for (const CaseKey& k : case_keys())
    if (k.name == name && k.in(t)) return k;
  throw std::logic_error(fmt::format("key '{}' of {} is not in the key table (cases/keys.cpp): add it there", name,
                                     to_string(t)));
}

std::vector<std::string> keys_of(KeyTable t) {
  std::vector<std::string> out;
  for (const CaseKey& k : case_keys())
    if (k.in(t)) out.push_back(k.name);
  return out;
}

std::set<std::string> accepted_keys(KeyTable t) {
  const std::vector<std::string> keys = keys_of(t);
  return {keys.begin(), keys.end()};
}

const std::vector<std::string>& filter_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const CaseKey& k : case_keys())
      if (!k.filter.empty() && std::find(out.begin(), out.end(), k.filter) == out.end()) out.push_back(k.filter);
    return out;
  }();
  return keys;
}

std::vector<std::string> filter_key_values(const std::string& key) {
  for (const CaseKey& k : case_keys()) {
    if (k.filter != key) continue;
    if (!k.values.empty()) return k.values;
    if (k.type == KeyType::Boolean || k.type == KeyType::BooleanAxis) return {"0", "1"};
  }
  return {};
}

const char* to_string(FilterType t) {
  switch (t) {
    case FilterType::Text: return "text";
    case FilterType::Integer: return "an integer";
    case FilterType::Number: return "a number";
  }
  return "?";
}

FilterType filter_type_of(const CaseKey& k) {
  switch (k.type == KeyType::Derived ? k.field_type : k.type) {
    case KeyType::Integer:
    case KeyType::Integers:
    case KeyType::IntegerPair:
    case KeyType::IntegerLists:
    case KeyType::IntegerAxis: return FilterType::Integer;
    case KeyType::FloatAxis: return FilterType::Number;
    default: return FilterType::Text;
  }
}

FilterKeySpec filter_key_spec(const std::string& key) {
  FilterKeySpec out;
  bool found = false;
  for (const CaseKey& k : case_keys()) {
    if (k.filter != key) continue;
    if (!found) out.type = filter_type_of(k);
    found = true;
    if (out.numbered.empty()) out.numbered = k.numbered;
    if (k.range.set())
      out.range = out.range.set() ? KeyRange{std::min(out.range.lo, k.range.lo), std::max(out.range.hi, k.range.hi)}
                                  : k.range;
  }
  if (!found) throw std::logic_error(fmt::format("'{}' is not a filter key of the key table (cases/keys.cpp)", key));
  out.values = filter_key_values(key);
  return out;
}

std::optional<int64_t> numbered_value(const std::string& numbered, const std::string& v) {
  if (numbered.empty()) return std::nullopt;
  const std::string prefix = numbered.substr(0, numbered.size() - 1);
  if (v.size() <= prefix.size() || v.size() > prefix.size() + 18 || v.compare(0, prefix.size(), prefix) != 0 ||
      v.find_first_not_of("0123456789", prefix.size()) != std::string::npos)
    return std::nullopt;
  return std::stoll(v.substr(prefix.size()));  // at most 18 digits: no overflow
}

std::string case_keys_markdown() {
  std::string out =
      "# Case-file keys\n\n"
      "Generated by `kvharness info --keys` from the key table `cases/keys.cpp`, which the case-file loader, the\n"
      "filter language and this page share; do not edit (the test `CaseFileKeysDoc` compares the two).\n"
      "An unknown key is an error naming the file, line, key and the keys its table accepts. `filter` is the\n"
      "filter key (`--filter`, a declaration's `filter`) that a key's values become; `filter only` rows are\n"
      "fields of a case that no file sets. Values: the closed set, the inclusive range, or in words.\n"
      "A filter value must be of its key's type: an integer or a number (compared as one: `tp=08` selects tp\n"
      "8), or one of a closed set; a glob (`*`, `?`, `[`) is matched against the value as text, unchecked.\n\n"
      "| key | where | type | default | values | filter | meaning |\n"
      "|---|---|---|---|---|---|---|\n";
  for (const CaseKey& k : case_keys())
    out += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} |\n", k.name, cell(where(k)), type_cell(k),
                       cell(k.default_value), cell(values_cell(k)), k.filter.empty() ? "" : "`" + k.filter + "`",
                       cell(k.meaning));
  std::vector<std::string> quoted;
  for (const auto& f : filter_keys()) quoted.push_back("`" + f + "`");
  out += fmt::format("\nFilter keys, in the order errors list them: {}.\n", fmt::join(quoted, ", "));
  return out;
}

}  // namespace kvh
