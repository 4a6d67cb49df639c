// The field table of results.json case entries (results_fields.h): every
// field written is read back, nothing is written beside the table, and the
// table's flags (derived, nullable, optional) say what the code does.
#include "report/results_fields.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "report/results_io.h"

namespace kvh {
namespace {

using json = nlohmann::json;

// A case with every field of the table away from its default (the router case:
// high_precision is written only with a router policy).
Case every_case_field_set() {
  Case c;
  c.kind = CaseKind::Pipeline;
  c.model = "Qwen3-235B-A22B";
  c.tp = 8;
  c.hybrid = true;
  c.num_heads = 8;
  c.num_kv_heads = 2;
  c.head_size = 128;
  c.layout = Scheme::KernelPages;
  c.block_size = 64;
  c.padded_page_bytes = 4096;
  c.kernel_block_size = 16;
  c.degenerate_stride = 7;
  c.dtype = DType::BF16;
  c.batch_size = 2;
  c.writer = "reshape_and_cache_shuffle";
  c.reader = "pa_fwd_asm";
  c.router_policy = "aiter-v0.1.12";
  c.target = "mi300x";
  c.high_precision = 2;
  c.context_lens = {17, 300};
  c.context_len_min = 17;
  c.context_len_max = 300;
  // Ragged queries: an explicit list (min and max its extremes); mixed and noncausal only to set every field.
  c.query_lens = {3, 200};
  c.query_len_min = 3;
  c.query_len_max = 200;
  c.query_mixed = true;
  c.causal = false;
  c.values = ValueDist::Sink;
  c.kv_cache_dtype = KvCacheDType::Fp8E4m3fnuz;
  c.kv_scales = KvScales::Block;
  c.sliding_window = 128;
  c.sinks = true;
  c.softcap = 30;
  c.alibi = true;
  c.tp_rank = 3;
  c.partition_size = 256;
  c.derived_tolerance = true;  // issue 23 (B long contexts)
  c.launch_config = "t64_ps512";  // issue 23 (D)
  c.stale = Stale::Nan;
  c.block_table_padding = 4;
  c.min_block_id = 70000;
  c.kv_lora_rank = 512, c.qk_rope_head_dim = 64, c.qk_nope_head_dim = 96, c.softmax_scale = 0.1;
  c.expect_routed_to = "pa_fwd_asm";
  c.variant_name = "after fix";
  c.seed = 3;
  c.source = "x.toml:4";
  return c;
}

Cause every_cause_field_set() { return Cause{"router", "misroute", "routed wrong", true, "x.toml:9"}; }

CaseResult every_field_set() {
  CaseResult cr;
  cr.c = every_case_field_set();
  add_cause(cr.v, component::kRouter, reason::kMisroute, "routed wrong", true);
  cr.v.causes.push_back(every_cause_field_set());
  cr.expected = true;
  cr.v.max_abs_err = 0.25;
  cr.v.max_rel_err = 0.5;
  cr.v.max_ulp_err = 3.5;  // issue 23 (B long contexts)
  cr.v.kernel_us = 12.25;
  cr.v.writer_us = 3.5;
  cr.v.host_us = 84.5;
  cr.v.timing_method = "graph";
  cr.v.bad_elements = 7;
  cr.data_seed = 18446744073709551557ull;
  cr.key_layout = "(2,8):(1,2)+0";
  cr.value_layout = "(2,8):(8,1)+64";
  cr.routed_to = "pa_fwd_asm";
  cr.route_reason = "head_size 128";
  cr.repro = "kvharness run x.toml";
  cr.fixture = true;
  cr.expectations = {"x.toml:9"};
  cr.context_lens = {17, 300};
  cr.query_lens = {3, 200};
  cr.padding_tokens = {0, 5, 63};
  cr.wall_ms = 12.5;
  cr.reference_ms = 7.25;
  cr.reference_id = "00c0ffee00c0ffee";
  cr.reference_reused = true;
  cr.v.timing_reps = 7;
  for (int p = 0; p < kPhaseCount; ++p) cr.phases[size_t(p)] = 0.5 + p;
  return cr;
}

std::set<std::string> keys(const json& o) {
  std::set<std::string> k;
  for (const auto& [key, v] : o.items()) k.insert(key);
  return k;
}

template <class R>
std::set<std::string> names(const std::vector<JsonField<R>>& fields) {
  std::set<std::string> n;
  for (const auto& f : fields) n.insert(f.name);
  return n;
}

// The names of `a` that `b` lacks, space-separated.
std::string only_in(const std::set<std::string>& a, const std::set<std::string>& b) {
  std::string s;
  for (const auto& n : a)
    if (!b.count(n)) s += (s.empty() ? "" : " ") + n;
  return s;
}

// The guard of the round trip below: a field the sample leaves at its default would
// round-trip even if its reader dropped it.
TEST(ResultsFields, TheSampleSetsEveryField) {
  const CaseResult all = every_field_set(), none;
  for (const ResultsField& f : results_fields())
    EXPECT_NE(f.write(all), f.write(none)) << f.name << ": set it in every_field_set(), or the round trip misses it";
  for (const CauseField& f : cause_fields())
    EXPECT_NE(f.write(every_cause_field_set()), f.write(Cause{})) << "causes[]." << f.name;
}

// Issue 19: a field written and not read back, or read and never written, fails here.
TEST(ResultsFields, EveryFieldRoundTrips) {
  const CaseResult cr = every_field_set();
  const json e = case_result_json(cr);
  EXPECT_EQ(only_in(keys(e), names(results_fields())), "") << "written beside the table: write them through it";
  EXPECT_EQ(only_in(names(results_fields()), keys(e)), "") << "in the table, not written";
  for (const json& k : e.at("causes")) EXPECT_EQ(keys(k), names(cause_fields()));
  const auto same = [&](const json& back, const char* how) {
    EXPECT_TRUE(back == e) << how << ": read back and written again, the entry differs (JSON patch): "
                           << json::diff(e, back).dump();
  };
  same(case_result_json(case_result_from_json(e)), "rebuilt from the entry's fields");
  same(case_result_json(case_result_from_json(e, &cr.c)), "matched to the caller's case");
  same(case_result_json(case_result_from_json(json::parse(e.dump()))), "through the text");
}

TEST(ResultsFields, OnlyDerivedFieldsHaveNoReaderAndEveryFieldIsDescribed) {
  std::set<std::string> seen;
  for (const ResultsField& f : results_fields()) {
    EXPECT_TRUE(seen.insert(f.name).second) << f.name << " twice";
    EXPECT_EQ(f.read == nullptr, f.role == FieldRole::Derived || f.role == FieldRole::Key) << f.name;
    EXPECT_EQ(f.role == FieldRole::Key, f.name == std::string("id")) << f.name << ": the id is the one key";
    EXPECT_NE(std::string(f.meaning), "") << f.name;
    EXPECT_FALSE(f.read == nullptr && f.optional) << f.name << ": a field never read cannot be optional";
  }
  for (const CauseField& f : cause_fields()) {
    EXPECT_NE(f.read, nullptr) << f.name;
    EXPECT_NE(std::string(f.meaning), "") << f.name;
  }
}

// The entries of a few cases: a write, a decode case without a router, and the full sample.
std::vector<CaseResult> various() {
  CaseResult write;
  write.c.model = "M";
  write.c.writer = "reshape_and_cache";
  CaseResult attention = write;
  attention.c.kind = CaseKind::Attention;
  attention.c.writer = "";
  attention.c.reader = "paged_attention_v1";
  attention.c.context_len_min = attention.c.context_len_max = 5;
  return {write, attention, every_field_set()};
}

TEST(ResultsFields, OnlyNullableFieldsAreNull) {
  for (const CaseResult& cr : various()) {
    const json e = case_result_json(cr);
    for (const ResultsField& f : results_fields())
      EXPECT_TRUE(f.nullable || !e.at(f.name).is_null()) << e["id"] << ": " << f.name << " null";
    for (const json& k : e.at("causes"))
      for (const CauseField& f : cause_fields()) EXPECT_TRUE(f.nullable || !k.at(f.name).is_null()) << f.name;
  }
}

// A required field, absent, refuses the entry and names the field (in the full sample every
// field is read: high_precision has a router, the decode-only fields a decode case).
TEST(ResultsFields, AbsentRequiredFieldsAreRefusedByName) {
  const json e = case_result_json(every_field_set());
  for (const ResultsField& f : results_fields()) {
    if (f.optional || f.role == FieldRole::Derived) continue;
    json without = e;
    without.erase(f.name);
    try {
      case_result_from_json(without);
      ADD_FAILURE() << "accepted without " << f.name;
    } catch (const std::runtime_error& x) {
      EXPECT_NE(std::string(x.what()).find(std::string("\"") + f.name + "\""), std::string::npos) << x.what();
    }
  }
}

// An optional field may be absent (an older kvharness wrote the entry): it reads back as its
// default. Checked where the value is the default or a result (a case field's value that is
// not the default may be part of the id: LayoutParametersReadBack).
TEST(ResultsFields, AbsentOptionalFieldsReadBackAsTheirDefaults) {
  for (const CaseResult& cr : various()) {
    const json e = case_result_json(cr);
    for (const ResultsField& f : results_fields()) {
      if (!f.optional || (f.role == FieldRole::Case && f.write(cr) != f.write(CaseResult{}))) continue;
      json without = e;
      without.erase(f.name);
      CaseResult back;
      EXPECT_NO_THROW(back = case_result_from_json(without)) << e["id"] << ": " << f.name;
      EXPECT_EQ(f.write(back), f.write(CaseResult{})) << e["id"] << ": " << f.name;
    }
  }
}

// The message of what case_result_from_json(e, c) throws; "" (and a failure) when it accepts e.
std::string refusal(const json& e, const Case* c = nullptr) {
  try {
    case_result_from_json(e, c);
  } catch (const std::runtime_error& x) {
    return x.what();
  }
  ADD_FAILURE() << "accepted " << e.dump().substr(0, 200) << (c ? " (matched)" : " (rebuilt)");
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// --resume and --isolate match an entry to its case by id: the entry must still have every
// required field, as `merge` (which rebuilds the case) demands.
TEST(ResultsIo, AMatchedEntryLacksNoRequiredField) {
  const CaseResult cr = every_field_set();
  const json e = case_result_json(cr);
  for (const ResultsField& f : results_fields()) {
    if (f.optional || f.role == FieldRole::Derived) continue;
    json without = e;
    without.erase(f.name);
    EXPECT_TRUE(has(refusal(without, &cr.c), std::string("field \"") + f.name + "\"")) << f.name;
  }
}

// A matched entry's case fields must be its case's: a field that differs names the field
// and both values (issue: `tp = 4` in an entry whose id says tp8 was accepted and rewritten).
TEST(ResultsIo, AMatchedEntryMustDescribeItsCase) {
  const CaseResult cr = every_field_set();
  const json e = case_result_json(cr);
  const auto differs = [&](json bad, const char* field, const std::string& have, const std::string& want) {
    const std::string why = refusal(bad, &cr.c);
    EXPECT_TRUE(has(why, std::string("field \"") + field + "\"") && has(why, have) && has(why, want))
        << field << ": " << why;
    EXPECT_TRUE(has(why, e.at("id").get<std::string>())) << why;
  };
  json bad = e;
  bad["tp"] = 4;
  differs(bad, "tp", "4", "8");
  bad = e;
  bad["model"] = "Llama-3-8B";
  differs(bad, "model", "\"Llama-3-8B\"", "\"Qwen3-235B-A22B\"");
  bad = e;
  bad["source"] = "y.toml:1";
  differs(bad, "source", "\"y.toml:1\"", "\"x.toml:4\"");
  bad = e;
  bad["seed"] = 99;
  differs(bad, "seed", "99", "3");
  bad = e;
  bad.erase("stale");  // optional: absent reads as the default
  differs(bad, "stale", "\"random\"", "\"nan\"");
  // Every case field, given the value a default case writes, is refused by name.
  const CaseResult plain;
  for (const ResultsField& f : results_fields()) {
    if (f.role != FieldRole::Case || f.write(plain) == f.write(cr)) continue;
    bad = e;
    bad[f.name] = f.write(plain);
    EXPECT_TRUE(has(refusal(bad, &cr.c), std::string("field \"") + f.name + "\"")) << f.name;
  }
}

// Fields with a fixed set of values refuse others, naming the field and the values it may
// have: the primary reason and component, each cause's, and a negative count.
TEST(ResultsFields, EnumFieldsRefuseValuesThisVersionDoesNotKnow) {
  const CaseResult cr = every_field_set();
  const json e = case_result_json(cr);
  const std::vector<std::string> reasons = {reason::kMismatch,   reason::kOutOfView,   reason::kUnwritten,
                                            reason::kNanOrInf,   reason::kMisroute,    reason::kUnsupported,
                                            reason::kLaunchError, reason::kCrash,      reason::kTimeout,
                                            reason::kHarnessError, reason::kXpass,     reason::kInterrupted};
  const std::vector<std::string> components = {component::kWriter, component::kReader, component::kRouter,
                                               component::kHarness, component::kPlanner};
  const auto refused = [&](const json& bad, const std::string& field, const std::vector<std::string>& allowed) {
    for (const Case* c : {static_cast<const Case*>(nullptr), &cr.c}) {
      const std::string why = refusal(bad, c);
      EXPECT_TRUE(has(why, "field \"" + field + "\"")) << field << ": " << why;
      for (const std::string& a : allowed)
        EXPECT_TRUE(has(why, a)) << field << " does not name " << a << ": " << why;
    }
  };
  json bad = e;
  bad["reason"] = "bogus";
  refused(bad, "reason", reasons);
  bad = e;
  bad["component"] = "gpu";
  refused(bad, "component", components);
  bad = e;
  bad["causes"][0]["reason"] = "bogus";
  refused(bad, "causes[0].reason", reasons);
  bad = e;
  bad["causes"][1]["component"] = "gpu";
  refused(bad, "causes[1].component", components);
  bad = e;
  bad["causes"][1]["component"] = nullptr;  // never null in a cause
  refused(bad, "causes[1].component", components);
  bad = e;
  bad["bad_elements"] = -5;
  refused(bad, "bad_elements", {"-5"});
  bad = e;
  bad["bad_elements"] = 1.5;
  refused(bad, "bad_elements", {});
  // null stays what it is for PASS: no reason, no component.
  CaseResult pass;
  pass.c = cr.c;
  EXPECT_EQ(case_result_json(case_result_from_json(case_result_json(pass))), case_result_json(pass));
  // Every known value reads back, and the docs list every reason.
  for (const char* r : reason_names()) {
    bad = e;
    bad["reason"] = bad["causes"][0]["reason"] = r;
    EXPECT_EQ(case_result_json(case_result_from_json(bad)), bad) << r;
    EXPECT_TRUE(has(results_fields_markdown(), std::string(" ") + r + " ")) << r << ": not in the docs";
  }
  for (const char* k : component_names()) {
    bad = e;
    bad["component"] = bad["causes"][0]["component"] = k;
    EXPECT_EQ(case_result_json(case_result_from_json(bad)), bad) << k;
  }
  EXPECT_EQ(reason_names().size(), reasons.size());
  EXPECT_EQ(component_names().size(), components.size());
}

// An error inside a cause (or phases_ms) names the entry's id and where in it the field is.
TEST(ResultsFields, ErrorsInsideAFieldNameTheCaseAndThePlace) {
  const CaseResult cr = every_field_set();
  const json e = case_result_json(cr);
  const std::string id = e.at("id");
  json bad = e;
  bad["causes"][1].erase("reason");
  std::string why = refusal(bad);
  EXPECT_TRUE(has(why, "case " + id + ": field \"causes[1].reason\": missing")) << why;
  bad = e;
  bad["causes"][0]["crash"] = "yes";
  why = refusal(bad, &cr.c);
  EXPECT_TRUE(has(why, "case " + id + ": field \"causes[0].crash\"")) << why;
  bad = e;
  bad["causes"][1] = 3;
  why = refusal(bad);
  EXPECT_TRUE(has(why, "case " + id + ": field \"causes\"") && has(why, "[1]")) << why;
  bad = e;
  bad["phases_ms"][phase_name(Phase(0))] = "fast";
  why = refusal(bad);
  EXPECT_TRUE(has(why, "case " + id + ": field \"phases_ms." + phase_name(Phase(0)) + "\"")) << why;
}

const char* const kRaggedFields[] = {"query_len_min", "query_len_max", "query_mixed", "causal", "query_lens",
                                     "given_query_lens"};

// The ragged-query fields as they are written: null for writes, 1 and false for decode, the
// drawn lengths only where a case is ragged, and read back as they were.
TEST(ResultsFields, RaggedQueryFieldsAreWrittenAndReadBack) {
  const std::vector<CaseResult> v = various();
  const json write = case_result_json(v[0]), decode = case_result_json(v[1]);
  for (const char* f : {"query_len_min", "query_len_max", "query_lens", "given_query_lens"})
    EXPECT_TRUE(write.at(f).is_null()) << f;
  EXPECT_EQ(decode.at("query_len_min"), 1);
  EXPECT_EQ(decode.at("query_len_max"), 1);
  EXPECT_EQ(decode.at("query_mixed"), false);
  EXPECT_EQ(decode.at("causal"), true);
  EXPECT_TRUE(decode.at("query_lens").is_null()) << "decode: none drawn";
  EXPECT_TRUE(decode.at("given_query_lens").is_null());
  // A drawn ragged case: the range, and the lengths that ran.
  CaseResult r = v[1];
  r.c.batch_size = 3;
  r.c.query_len_min = 2;
  r.c.query_len_max = 64;
  r.c.causal = false;
  r.query_lens = {64, 2, 5};
  const json e = case_result_json(r);
  EXPECT_EQ(e.at("query_len_min"), 2);
  EXPECT_EQ(e.at("query_len_max"), 64);
  EXPECT_EQ(e.at("causal"), false);
  EXPECT_EQ(e.at("query_lens"), json({64, 2, 5}));
  EXPECT_TRUE(e.at("given_query_lens").is_null()) << "drawn, not given";
  EXPECT_NE(e.at("id").get<std::string>().find("/q2-64/noncausal/"), std::string::npos) << e.at("id");
  const CaseResult back = case_result_from_json(e);
  EXPECT_EQ(back.c.id(), r.c.id());
  EXPECT_EQ(back.c.query_len_min, 2);
  EXPECT_EQ(back.c.query_len_max, 64);
  EXPECT_FALSE(back.c.causal);
  EXPECT_FALSE(back.c.query_mixed);
  EXPECT_EQ(back.query_lens, (std::vector<int32_t>{64, 2, 5}));
  EXPECT_EQ(case_result_json(case_result_from_json(e, &r.c)), e) << "matched to its case";
  // A mixed batch, and a given list (part of the id).
  r.c.query_mixed = true;
  EXPECT_EQ(case_result_from_json(case_result_json(r)).c.id(), r.c.id());
  r.c.query_mixed = false;
  r.c.query_lens = {1, 9, 4};
  r.c.query_len_min = 1;
  r.c.query_len_max = 9;
  const json g = case_result_json(r);
  EXPECT_EQ(g.at("given_query_lens"), json({1, 9, 4}));
  EXPECT_EQ(case_result_from_json(g).c.query_lens, (std::vector<int64_t>{1, 9, 4}));
  EXPECT_EQ(case_result_from_json(g).c.id(), r.c.id());
}

// results.json written before ragged queries has none of the fields: its entries (writes and
// decode cases) still load, rebuilt or matched to their case, as the same case and id.
TEST(ResultsFields, ResultsWithoutTheRaggedQueryFieldsStillLoad) {
  std::vector<CaseResult> old = various();
  old.pop_back();  // the full sample is ragged; older results had write and decode cases
  CaseResult routed = every_field_set();
  routed.c.query_lens.clear();
  routed.c.query_len_min = routed.c.query_len_max = 1;
  routed.c.query_mixed = false;
  routed.c.causal = true;
  routed.query_lens.clear();
  old.push_back(routed);
  for (const CaseResult& cr : old) {
    const json e = case_result_json(cr);
    json before = e;
    for (const char* f : kRaggedFields) {
      ASSERT_TRUE(before.contains(f)) << f;
      before.erase(f);
    }
    CaseResult back;
    ASSERT_NO_THROW(back = case_result_from_json(before)) << e["id"];
    EXPECT_EQ(back.c.id(), cr.c.id());
    EXPECT_EQ(case_result_json(back), e) << "read back as if written now: " << json::diff(e, case_result_json(back)).dump();
    ASSERT_NO_THROW(back = case_result_from_json(before, &cr.c)) << e["id"] << " matched (--resume, --isolate)";
    EXPECT_EQ(case_result_json(back), e);
  }
  // A ragged entry without them is not its case: matched, the first differing field is named.
  const CaseResult ragged = every_field_set();
  json without = case_result_json(ragged);
  without.erase("causal");
  EXPECT_TRUE(has(refusal(without, &ragged.c), "field \"causal\"")) << refusal(without, &ragged.c);
  without = case_result_json(ragged);
  without.erase("given_query_lens");
  EXPECT_TRUE(has(refusal(without, &ragged.c), "field \"given_query_lens\"")) << refusal(without, &ragged.c);
}

// docs/results-json.md is the table's Markdown; KVH_UPDATE_DOCS=1 rewrites it.
TEST(ResultsFields, DocsPageIsCurrent) {
  const std::string path = KVH_SOURCE_DIR "/docs/results-json.md";
  const std::string want = results_fields_markdown();
  if (const char* u = std::getenv("KVH_UPDATE_DOCS"); u && std::string(u) == "1") std::ofstream(path) << want;
  std::stringstream have;
  have << std::ifstream(path).rdbuf();
  EXPECT_EQ(have.str(), want) << path << " is stale: run this test with KVH_UPDATE_DOCS=1 and commit the page";
}

}  // namespace
}  // namespace kvh
