// --shard's partition, --isolate's index lists, and results.json entries read
// back (what --isolate's parent, --resume and merge rely on).
#include "run/shard.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "run/isolate.h"
#include "report/report.h"
#include "report/results_io.h"
#include "case/write_case.h"

namespace kvh {
namespace {

TEST(Shard, ParsesIOfNAndRefusesTheRest) {
  const Shard s = parse_shard("2/3");
  EXPECT_EQ(s.index, 2);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(s.str(), "2/3");
  for (const char* bad : {"0/3", "4/3", "3", "1/0", "a/b", "1/3x", "/3", "-1/3"})
    EXPECT_THROW(parse_shard(bad), std::invalid_argument) << bad;
}

TEST(Shard, EveryIdIsInExactlyOneShardAndShardsAreBalanced) {
  std::map<int, int> per_shard;
  for (int k = 0; k < 3000; ++k) {
    const std::string id = "write/model/tp8/hd128/kv_first/bs16/bf16/n" + std::to_string(k) + "/w/s1";
    int in = 0;
    for (int i = 1; i <= 3; ++i)
      if (in_shard(id, Shard{i, 3})) ++in, ++per_shard[i];
    ASSERT_EQ(in, 1) << id;
    EXPECT_TRUE(in_shard(id, Shard{1, 1}));
  }
  for (int i = 1; i <= 3; ++i) EXPECT_NEAR(per_shard[i], 1000, 150) << "shard " << i;
}

TEST(Isolate, IndexListsRoundTripAndRefuseBadParts) {
  const std::vector<size_t> v = {0, 1, 2, 5, 7, 8};
  EXPECT_EQ(format_index_list(v), "0-2,5,7-8");
  EXPECT_EQ(parse_index_list("0-2,5,7-8", 9), v);
  EXPECT_TRUE(parse_index_list("", 9).empty());
  for (const char* bad : {"9", "3-1", "x", "1-", "1,,2", "2-9"}) EXPECT_THROW(parse_index_list(bad, 9), std::invalid_argument) << bad;
}

Case sample_case() {
  Case c;
  c.kind = CaseKind::Attention;
  c.model = "Qwen3-235B-A22B";
  c.tp = 8;
  c.num_heads = 8;
  c.num_kv_heads = 1;
  c.head_size = 128;
  c.layout = Scheme::Padded;
  c.padded_page_bytes = 4096;
  c.dtype = DType::BF16;
  c.batch_size = 2;
  c.writer = "reshape_and_cache_shuffle";
  c.router_policy = "aiter-v0.1.12";
  c.high_precision = 2;
  c.context_lens = {17, 300};
  c.context_len_min = 17;
  c.context_len_max = 300;
  c.variant_name = "after fix";
  c.seed = 3;
  c.source = "x.toml:4";
  return c;
}

TEST(ResultsIo, AnEntryReadsBackToTheSameEntry) {
  CaseResult cr;
  cr.c = sample_case();
  add_cause(cr.v, component::kRouter, reason::kMisroute, "routed wrong");
  cr.v.causes[0].expected_by = "x.toml:9";
  cr.expected = true;
  cr.v.max_abs_err = 0.25;
  cr.v.bad_elements = 7;
  cr.data_seed = 18446744073709551557ull;
  cr.routed_to = "pa_fwd_asm";
  cr.context_lens = {17, 300};
  cr.expectations = {"x.toml:9"};
  cr.wall_ms = 12.5;
  cr.phases[1] = 3.0;
  cr.repro = "kvharness run x.toml";
  const nlohmann::json e = case_result_json(cr);
  EXPECT_EQ(case_result_json(case_result_from_json(e)), e) << "rebuilt from the entry's fields";
  EXPECT_EQ(case_result_json(case_result_from_json(e, &cr.c)), e) << "matched to the caller's case";
  EXPECT_EQ(case_result_from_json(e).data_seed, cr.data_seed);
}

// The layout parameters of issue 12 are part of the id: they must come back, and an entry
// that lacks one (a results.json of an older kvharness) rebuilds to another id, refused.
TEST(ResultsIo, LayoutParametersReadBack) {
  for (const auto& [scheme, key] : {std::pair{Scheme::KernelPages, "kernel_block_size"},
                                    std::pair{Scheme::DegenerateStrides, "degenerate_stride"}}) {
    CaseResult cr;
    cr.c = sample_case();
    cr.c.layout = scheme;
    cr.c.block_size = 64;
    if (scheme == Scheme::KernelPages) cr.c.kernel_block_size = 16;
    else cr.c.degenerate_stride = int64_t(1) << 31;
    const nlohmann::json e = case_result_json(cr);
    EXPECT_EQ(case_result_json(case_result_from_json(e)), e) << key;
    const Case back = case_result_from_json(e).c;
    EXPECT_EQ(back.kernel_block_size, cr.c.kernel_block_size);
    EXPECT_EQ(back.degenerate_stride, cr.c.degenerate_stride);
    nlohmann::json old = e;
    old.erase(key);
    EXPECT_THROW(case_result_from_json(old), std::runtime_error) << key << " absent: another id";
  }
}

TEST(ResultsIo, AnEntryThatDoesNotFitIsRefusedByField) {
  CaseResult cr;
  cr.c = sample_case();
  const nlohmann::json good = case_result_json(cr);
  auto refused = [&](nlohmann::json e, const std::string& field) {
    try {
      case_result_from_json(e);
      ADD_FAILURE() << "accepted an entry with a bad " << field;
    } catch (const std::runtime_error& x) {
      EXPECT_NE(std::string(x.what()).find("\"" + field + "\""), std::string::npos) << x.what();
    }
  };
  nlohmann::json e = good;
  e["tp"] = 4;  // another case than the id says
  refused(e, "id");
  e = good;
  e["verdict"] = "MAYBE";
  refused(e, "verdict");
  e = good;
  e.erase("causes");
  refused(e, "causes");
  e = good;
  e["layout"] = "diagonal";
  refused(e, "layout");
  Case other = sample_case();
  other.seed = 4;
  EXPECT_THROW(case_result_from_json(good, &other), std::runtime_error) << "matched to another case";
}

// --resume refuses the entries `merge` refuses, and a case field that is not its case's
// (issue: a resumed entry without "tp", or with tp 4 under a tp8 id, was refilled from the case).
// --replace-kernel's substitutes and the providers survive a merge, so the merged summary.md still names them.
TEST(ResultsIo, MergeKeepsTheReplacedKernels) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kvh_merge_replaced_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  RunReport r;
  r.identity = "same";
  r.complete = true;
  r.replaced_kernels["paged_attention_rocm"] = "paged_attention_rocm (replaced by python:mod:my_pa)";
  r.providers = {"python:mod"};  // issue 25: the merged header names the providers too
  CaseResult cr;
  cr.c = sample_case();
  r.results = {cr};
  std::ofstream(dir / "results.json") << results_json(r);
  const RunReport m = merge_runs({dir.string()});
  EXPECT_EQ(m.replaced_kernels, r.replaced_kernels);
  EXPECT_EQ(m.providers, r.providers);
  const std::string md = summary_markdown(m);
  EXPECT_NE(md.find("`paged_attention_rocm` -> `python:mod:my_pa`"), std::string::npos) << md;
  EXPECT_NE(md.find("- providers (--provider): `python:mod`"), std::string::npos) << md;
  std::filesystem::remove_all(dir);
}

TEST(ResultsIo, ResumeRefusesWhatMergeRefuses) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("kvh_resume_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  CaseResult cr;
  cr.c = sample_case();
  const nlohmann::json good = case_result_json(cr);
  const auto write = [&](const nlohmann::json& e) {
    nlohmann::json d = {{"schema", "kvharness.results/1"}, {"identity", "same"}, {"complete", true}, {"shard", ""}};
    d["cases"] = nlohmann::json::array({e});
    std::ofstream(dir / "results.json") << d.dump();
  };
  // What --resume (matched by id to cr.c) and merge (rebuilt) throw; "" where one accepts it.
  const auto refusals = [&](const nlohmann::json& e) {
    write(e);
    std::pair<std::string, std::string> why;
    try {
      load_resumed(dir.string(), {cr.c}, "same", "");
    } catch (const PartialRunError& x) {
      why.first = x.what();
    }
    try {
      merge_runs({dir.string()});
    } catch (const PartialRunError& x) {
      why.second = x.what();
    }
    return why;
  };
  ASSERT_EQ(refusals(good), std::make_pair(std::string(), std::string()));
  for (const char* field : {"tp", "model", "seed", "source", "writer"}) {
    nlohmann::json e = good;
    e.erase(field);
    const auto [resume, merge] = refusals(e);
    const std::string want = std::string("field \"") + field + "\": missing";
    EXPECT_NE(resume.find(want), std::string::npos) << "--resume: " << resume;
    EXPECT_NE(merge.find(want), std::string::npos) << "merge: " << merge;
  }
  nlohmann::json e = good;
  e["reason"] = "bogus";
  const auto [resume, merge] = refusals(e);
  EXPECT_NE(resume.find("field \"reason\": 'bogus'"), std::string::npos) << "--resume: " << resume;
  EXPECT_NE(merge.find("field \"reason\": 'bogus'"), std::string::npos) << "merge: " << merge;
  e = good;
  e["tp"] = 4;
  const std::string tampered = refusals(e).first;
  EXPECT_NE(tampered.find("field \"tp\": 4"), std::string::npos) << "--resume: " << tampered;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kvh
