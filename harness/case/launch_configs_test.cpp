// Launch configurations as a case axis (issue 23 (D)): the case file's `launch_configs` expands
// into one case per configuration of the reader (ids "/cfg=NAME"), an unknown name is an error
// naming file, line and field, the reader's call receives the configuration it was expanded for,
// and paged_attention_rocm is right at every configuration it declares while the planted reduce
// that assumes 128 threads fails exactly at the 64-thread ones.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "case/attention_case.h"
#include "case/launch_configs.h"
#include "case/write_case.h"
#include "case_file.h"
#include "registry/kernel_desc.h"

extern "C" int kvh_paged_attention_rocm(const kvh_attention_args*, void*);
extern "C" int kvh_reshape_and_cache_shuffle(const kvh_write_args*, void*);
extern "C" uint64_t kvh_paged_attention_workspace_bytes(const kvh_attention_args*);
extern "C" const kvh_kernel_desc* kvh_planted_launch_configs(int32_t* count);

namespace kvh {
namespace {

// One attention table of paged_attention_rocm with `extra` lines; 2 sequences of 300..700 tokens
// (several 256-token partitions: the split-K reduce runs).
std::string table(const std::string& reader, const std::string& extra) {
  return "seeds = [1]\n[[attention]]\nmodels = [\"Qwen3-235B-A22B\"]\ntp = 8\nlayouts = [\"kv_first\"]\n"
         "head_sizes = [128]\nblock_sizes = [16]\ndtypes = [\"fp16\"]\nbatch_sizes = [2]\n"
         "context_lens = [300, 700]\nreaders = [\"" + reader + "\"]\n" + extra;
}

std::vector<Case> expand(const std::string& text, const Registry& reg) {
  std::vector<Case> out;
  for (const Case& c : parse_case_text(text, "cfg.toml"))
    for (Case& e : expand_launch_configs(c, reg)) out.push_back(std::move(e));
  return out;
}

std::string error_of(const std::string& text, const Registry& reg) {
  try {
    expand(text, reg);
  } catch (const CaseFileError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(LaunchConfigs, AllExpandsToEveryDeclaredConfigurationInOrderWithItsNameInTheId) {
  const Registry reg;
  const std::vector<Case> plain = expand(table("paged_attention_rocm", ""), reg);
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(plain[0].launch_config, "");
  EXPECT_EQ(plain[0].id().find("cfg="), std::string::npos) << "ids of cases without the key stay";
  const std::vector<Case> all = expand(table("paged_attention_rocm", "launch_configs = \"all\"\n"), reg);
  ASSERT_EQ(all.size(), 3u);
  const std::vector<std::string> names{"t128", "t64", "t64_ps512"};
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].launch_config, names[i]);
    EXPECT_TRUE(all[i].launch_configs.empty());
    const std::string id = all[i].id();
    EXPECT_EQ(id.substr(id.size() - names[i].size() - 8), "/cfg=" + names[i] + "/s1") << id;
    // The id without the configuration is the default launch's.
    EXPECT_EQ(id.substr(0, id.size() - names[i].size() - 8) + "/s1", plain[0].id());
    EXPECT_EQ(all[i].variant(), "reference+paged_attention_rocm (cfg " + names[i] + ")");
  }
  const std::vector<Case> some = expand(table("paged_attention_rocm", "launch_configs = [\"t64_ps512\", \"t128\"]\n"), reg);
  ASSERT_EQ(some.size(), 2u);
  EXPECT_EQ(some[0].launch_config, "t64_ps512");
  EXPECT_EQ(some[1].launch_config, "t128");
  EXPECT_EQ(expand(table("paged_attention_v1", "launch_configs = \"all\"\n"), reg).size(), 3u);
}

TEST(LaunchConfigs, AnUnknownNameNamesFileLineFieldAndTheDeclaredOnes) {
  const Registry reg;
  // A configuration's partition_size against the table's (the table's would silently win).
  EXPECT_EQ(error_of(table("paged_attention_rocm", "partition_size = 64\nlaunch_configs = \"all\"\n"), reg),
            "cfg.toml:13: field 'launch_configs': configuration 't128' of reader 'paged_attention_rocm' sets "
            "partition_size=256, and the table sets partition_size = 64: the table's would win; drop one");
  EXPECT_EQ(error_of(table("paged_attention_rocm", "launch_configs = [\"t64\", \"t32\"]\n"), reg),
            "cfg.toml:12: field 'launch_configs': reader 'paged_attention_rocm' declares no launch configuration "
            "'t32'; it declares: t128, t64, t64_ps512");
  EXPECT_EQ(error_of(table("paged_attention_nhd", "launch_configs = \"all\"\n"), reg),
            "cfg.toml:12: field 'launch_configs': reader 'paged_attention_nhd' declares no launch configuration (it "
            "runs its default launch only)");
}

TEST(LaunchConfigs, TheCaseFileRefusesMalformedSelections) {
  const auto refused = [](const std::string& extra, const std::string& needle) {
    try {
      parse_case_text(table("paged_attention_rocm", extra), "bad.toml");
      ADD_FAILURE() << "no error for " << extra;
    } catch (const CaseFileError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused("launch_configs = \"every\"\n", "bad.toml:12: field 'launch_configs': expected \"all\" or an array");
  refused("launch_configs = []\n", "field 'launch_configs': expected \"all\" or a non-empty array");
  refused("launch_configs = [\"t 64\"]\n", "expected a configuration name (1..64 characters of [A-Za-z0-9_.-]), got 't 64'");
  refused("launch_configs = [\"t64\", \"t64\"]\n", "'t64' given twice");
  refused("launch_configs = [4]\n", "expected a configuration name");
  try {
    parse_case_text("seeds = [1]\n[[attention]]\nmodels = [\"Qwen3-235B-A22B\"]\ntp = 8\nlayouts = [\"kv_first\"]\n"
                    "block_sizes = [16]\ndtypes = [\"fp16\"]\nbatch_sizes = [2]\ncontext_lens = [300, 700]\n"
                    "routers = [\"aiter-v0.1.12\"]\ntarget = \"MI300X\"\nlaunch_configs = \"all\"\n",
                    "routed.toml");
    ADD_FAILURE() << "a router table took launch_configs";
  } catch (const CaseFileError& e) {
    EXPECT_NE(std::string(e.what()).find("routed.toml:12: field 'launch_configs': applies to reader rows only"),
              std::string::npos)
        << e.what();
  }
}

// A reader that records the configuration of each call, then runs paged_attention_rocm.
std::map<std::string, std::string> g_seen;  // case's config name ("" = default) -> what the call got
std::string g_expect;  // the case being run (set before each run_decode_case)
int recording_reader(void*, const kvh_attention_args* a, void* stream) {
  const kvh_launch_config* lc = a->launch_config;
  g_seen[g_expect] = lc ? std::string(lc->name) + "|" + lc->params : "null";
  return kvh_paged_attention_rocm(a, stream);
}
int workspace_of(void*, const kvh_attention_args* a, uint64_t* bytes) {
  *bytes = kvh_paged_attention_workspace_bytes(a);
  return 0;
}
const kvh_launch_config kRecorderConfigs[] = {{"t64", "threads=64,partition_size=256"}, {"big", "threads=128,partition_size=512"}};

TEST(LaunchConfigs, TheReaderIsCalledWithTheConfigurationOfItsCase) {
  Registry reg{Registry::NoBuiltins{}};
  kvh_kernel_desc d = kernels::base_desc("recorder", "records its launch configuration", KVH_ROLE_READER,
                                         KVH_CACHE_SHUFFLE, 0, nullptr);
  d.attention = recording_reader;
  d.workspace_bytes = workspace_of;
  d.num_launch_configs = 2;
  d.launch_configs = kRecorderConfigs;
  reg.add(d, "test");
  std::vector<Case> cases = expand(table("recorder", "launch_configs = \"all\"\n"), reg);
  cases.push_back(expand(table("recorder", ""), reg).at(0));
  ASSERT_EQ(cases.size(), 3u);
  g_seen.clear();
  for (const Case& c : cases) {
    g_expect = c.launch_config;
    const CaseResult r = run_decode_case(c, reg, DecodeOptions{});
    EXPECT_EQ(r.v.status, Status::Pass) << c.id() << ": " << r.v.detail;
  }
  EXPECT_EQ(g_seen[""], "null");
  EXPECT_EQ(g_seen["t64"], "t64|threads=64,partition_size=256");
  EXPECT_EQ(g_seen["big"], "big|threads=128,partition_size=512");
  // A hand-made case naming a configuration the reader lacks is refused by name, not run as the default.
  Case odd = cases.back();
  odd.launch_config = "t32";
  g_seen.clear();
  const CaseResult r = run_decode_case(odd, reg, DecodeOptions{});
  EXPECT_EQ(r.v.status, Status::Unsupported);
  EXPECT_NE(r.v.detail.find("declares no launch configuration 't32'"), std::string::npos) << r.v.detail;
  EXPECT_TRUE(g_seen.empty());
}

// The check fails when it should: the planted reduce that strides by 128 threads passes the default
// launch and t128 and fails at t64 and t64_ps512; paged_attention_rocm passes all four.
// A writer that records the configuration of each call, then runs reshape_and_cache_shuffle.
int recording_writer(void*, const kvh_write_args* a, void* stream) {
  const kvh_launch_config* lc = a->launch_config;
  g_seen[g_expect] = lc ? std::string(lc->name) + "|" + lc->params : "null";
  return kvh_reshape_and_cache_shuffle(a, stream);
}

TEST(LaunchConfigs, AWriteTableSelectsTheWritersConfigurationsAndTheCallGetsThem) {
  Registry reg{Registry::NoBuiltins{}};
  kvh_kernel_desc d = kernels::base_desc("wrecorder", "records its launch configuration", KVH_ROLE_WRITER,
                                         KVH_CACHE_SHUFFLE, 0, nullptr);
  d.write = recording_writer;
  d.num_launch_configs = 2;
  d.launch_configs = kRecorderConfigs;
  reg.add(d, "test");
  const std::string write = "seeds = [1]\n[[write]]\nmodels = [\"Qwen3-235B-A22B\"]\ntp = 8\nlayouts = [\"kv_first\"]\n"
                            "head_sizes = [128]\nnum_tokens = [40]\nblock_sizes = [16]\ndtypes = [\"fp16\"]\n"
                            "writers = [\"wrecorder\"]\n";
  std::vector<Case> cases = expand(write + "launch_configs = [\"big\"]\n", reg);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_NE(cases[0].id().find("/cfg=big/s1"), std::string::npos) << cases[0].id();
  cases.push_back(expand(write, reg).at(0));
  g_seen.clear();
  for (const Case& c : cases) {
    g_expect = c.launch_config;
    const CaseResult r = run_write_case(c, reg);
    EXPECT_EQ(r.v.status, Status::Pass) << c.id() << ": " << r.v.detail;
  }
  EXPECT_EQ(g_seen[""], "null");
  EXPECT_EQ(g_seen["big"], "big|threads=128,partition_size=512");
  EXPECT_EQ(error_of(write + "launch_configs = [\"t32\"]\n", reg),
            "cfg.toml:11: field 'launch_configs': writer 'wrecorder' declares no launch configuration 't32'; it "
            "declares: t64, big");
}

TEST(LaunchConfigs, APlantedReduceWrongOnlyAt64ThreadsFailsExactlyThere) {
  const Registry reg;
  Registry planted;
  int32_t n = 0;
  const kvh_kernel_desc* descs = kvh_planted_launch_configs(&n);
  for (int32_t i = 0; i < n; ++i) planted.add(descs[i], "planted");
  planted.replace("paged_attention_rocm", "planted_reduce_assumes_128_threads");
  std::vector<Case> cases = expand(table("paged_attention_rocm", "launch_configs = \"all\"\n"), reg);
  cases.insert(cases.begin(), expand(table("paged_attention_rocm", ""), reg).at(0));
  for (const Case& c : cases) {
    EXPECT_EQ(run_decode_case(c, reg, DecodeOptions{}).v.status, Status::Pass) << c.id();
    const CaseResult r = run_decode_case(c, planted, DecodeOptions{});
    const bool wrong = c.launch_config == "t64" || c.launch_config == "t64_ps512";
    EXPECT_EQ(r.v.status, wrong ? Status::Fail : Status::Pass) << c.id() << ": " << r.v.detail;
  }
}

TEST(LaunchConfigs, TheRegistryRefusesMalformedDeclarations) {
  const auto refused = [](std::vector<kvh_launch_config> configs, const std::string& needle) {
    Registry reg{Registry::NoBuiltins{}};
    kvh_kernel_desc d = kernels::base_desc("k", "", KVH_ROLE_READER, KVH_CACHE_SHUFFLE, 0, nullptr);
    d.attention = recording_reader;
    d.num_launch_configs = int32_t(configs.size());
    d.launch_configs = configs.data();
    try {
      reg.add(d, "test");
      ADD_FAILURE() << "accepted: " << needle;
    } catch (const ProviderLoadError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  refused({{"a b", ""}}, "test: kernel 'k': launch_configs[0] name 'a b': expected 1..64 characters");
  refused({{nullptr, ""}}, "launch_configs[0] name '': expected");
  refused({{"a", "x=1"}, {"a", "x=2"}}, "launch configuration 'a' declared twice");
  refused({{"a", "threads"}}, "launch configuration 'a': launch parameter 'threads': expected KEY=VALUE");
  refused({{"a", "1x=2"}}, "launch parameter '1x=2'");
  refused({{"a", "x=1,x=2"}}, "launch parameter 'x' given twice");
  EXPECT_EQ(parse_launch_params("num_warps=2,num_stages=1,BLOCK_N=64").size(), 3u);
}

}  // namespace
}  // namespace kvh
