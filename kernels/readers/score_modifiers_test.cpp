// Score modifiers (sliding window, sinks, soft-cap, ALiBi) and split control
// in the built-in readers, against reference/attention on the cpu backend;
// the registered modifier fixtures fail exactly where their bug bites, and
// each planted modifier bug (testing/planted_readers.hip) is caught.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attention.h"
#include "kvh_runtime.h"
#include "testing/attention_check.h"

namespace kvh::testing {
namespace {

// Sink logits per local head, spread so that some dominate the denominator (e^6 ~ 400 against ~400-2400
// for a few hundred unit-scale logits) and some barely count.
std::vector<float> sinks_for(int num_heads) {
  std::vector<float> s;
  for (int h = 0; h < num_heads; ++h) s.push_back(-1.f + 7.f * float(h) / float(num_heads));
  return s;
}

// The slopes rank `rank` of a tp-way model with num_heads heads per rank gets (global head index).
std::vector<float> slopes_for(int num_heads, int tp, int rank) {
  const std::vector<double> all = reference::alibi_slopes(int64_t(num_heads) * tp);
  return std::vector<float>(all.begin() + rank * num_heads, all.begin() + (rank + 1) * num_heads);
}

struct Mods {
  const char* name;
  int32_t window;
  float softcap;
  bool sinks, alibi;
};
const Mods kMods[] = {
    {"window100", 100, 0, false, false},    {"window300", 300, 0, false, false},
    {"window1", 1, 0, false, false},        {"softcap1", 0, 1.f, false, false},
    {"softcap30", 0, 30.f, false, false},   {"sinks", 0, 0, true, false},
    {"alibi", 0, 0, false, true},           {"all", 200, 2.f, true, true},
};

AttentionCase with_mods(AttentionCase c, const Mods& m, int tp = 2, int rank = 1) {
  c.sliding_window = m.window;
  c.softcap = m.softcap;
  if (m.sinks) c.sinks = sinks_for(c.num_heads);
  if (m.alibi) c.alibi_slopes = slopes_for(c.num_heads, tp, rank), c.head_offset = rank * c.num_heads;
  return c;
}

// The built-in readers (not the fixtures): the NHD/HND readers are the split-K kernel of
// paged_attention.h with another addressing, so they apply the modifiers too.
const char* const kReaders[] = {"paged_attention_v1", "paged_attention_rocm", "pa_fwd_asm", "paged_attention_nhd",
                                "paged_attention_hnd"};

// Every built-in reader, every modifier, split-K at the default partition (256), at 512 and at 100 (where
// a window of 300 leaves whole partitions empty); lengths on both sides of every edge.
TEST(ScoreModifiers, BuiltinReadersMatchTheReference) {
  for (const char* reader : kReaders)
    for (const Mods& m : kMods)
      for (int32_t ps : {0, 512, 100}) {
        if (std::string(reader) == "pa_fwd_asm" && ps != 0) continue;  // no partitions: partition_size is ignored
        AttentionCase c;
        c.format = kvh_cache_format(builtin_reader(reader).cache_format);
        c.num_heads = 8, c.num_kv_heads = 2, c.wave_size = 32;
        c.context_lens = {1, 99, 101, 257, 513, 1000};
        c.partition_size = ps;
        c = with_mods(c, m);
        const AttentionResult r = run_attention_case(builtin_reader(reader), c);
        EXPECT_TRUE(r.passed()) << reader << " " << m.name << " " << c.str() << ": " << r.str();
      }
}

TEST(ScoreModifiers, BuiltinReadersDeclareAllFour) {
  for (const char* reader : kReaders)
    EXPECT_EQ(builtin_reader(reader).caps.modifiers,
              uint32_t(KVH_MOD_SLIDING_WINDOW | KVH_MOD_SINKS | KVH_MOD_SOFTCAP | KVH_MOD_ALIBI))
        << reader;
}

// kernel_pages (a 64-token manager block read as 16-token kernel pages): the window's first
// token, the partitions it empties and the sink's partition are found through the page table
// in kernel pages, for both the NHD and the HND reader.
TEST(ScoreModifiers, PageReadersUnderKernelPages) {
  for (const char* reader : {"paged_attention_nhd", "paged_attention_hnd"})
    for (const Mods& m : kMods)
      for (int32_t ps : {0, 100}) {
        AttentionCase c;
        c.format = kvh_cache_format(builtin_reader(reader).cache_format);
        c.num_heads = 8, c.num_kv_heads = 2, c.wave_size = 32;
        c.block_size = 64, c.kernel_block_size = 16;
        c.context_lens = {1, 99, 101, 257, 1000};
        c.partition_size = ps;
        c = with_mods(c, m);
        const AttentionResult r = run_attention_case(builtin_reader(reader), c);
        EXPECT_TRUE(r.passed()) << reader << " " << m.name << " " << c.str() << ": " << r.str();
      }
}

// Fraction of `out` elements whose bits change when paged_attention_rocm runs `c` with its
// modifiers switched off in the args: a modifier that changes nothing would make the tests above vacuous.
double changed_fraction(const AttentionCase& c) {
  const Kernel& k = builtin_reader("paged_attention_rocm");
  auto run = [&](bool on) {
    AttentionArgsFixture fx = make_attention_args(c);
    if (!on) fx.args.sliding_window = 0, fx.args.softcap = 0, fx.args.sinks = {}, fx.args.alibi_slopes = {};
    const uint64_t bytes = k.workspace_bytes(&fx.args);
    fx.workspace.assign(size_t(bytes / 4 + 1), 0.f);
    fx.args.workspace = fx.workspace.data();
    fx.args.workspace_bytes = bytes;
    EXPECT_EQ(k.attention(&fx.args, nullptr), 0);
    return fx.out;
  };
  const std::vector<uint16_t> a = run(true), b = run(false);
  int64_t changed = 0;
  for (size_t i = 0; i < a.size(); ++i) changed += a[i] != b[i];
  return double(changed) / double(a.size());
}

TEST(ScoreModifiers, EachModifierChangesTheOutput) {
  for (const Mods& m : kMods) {
    AttentionCase c;
    c.num_heads = 8, c.num_kv_heads = 2, c.context_lens = {301, 1000};
    c = with_mods(c, m);
    EXPECT_GT(changed_fraction(c), 0.45) << m.name;  // softcap 30 too: tanh bends every logit a little
  }
}

TEST(ScoreModifiers, MalformedModifiersAreRefusedWithoutLaunching) {
  AttentionCase c;
  c.context_lens = {10};
  c.sinks = sinks_for(c.num_heads);
  for (const char* reader : kReaders) {
    const Kernel& k = builtin_reader(reader);
    c.format = kvh_cache_format(k.cache_format);
    auto rc_with = [&](auto edit) {
      AttentionArgsFixture fx = make_attention_args(c);
      edit(fx.args);
      return k.attention(&fx.args, nullptr);
    };
    EXPECT_EQ(rc_with([](kvh_attention_args&) {}), 0) << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.sliding_window = -1; }), hipErrorInvalidValue) << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.softcap = -2.f; }), hipErrorInvalidValue) << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.sinks.shape[0] = 7; }), hipErrorInvalidValue) << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.sinks.dtype = KVH_DT_F16; }), hipErrorInvalidValue) << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.alibi_slopes = a.sinks, a.alibi_slopes.ndim = 2; }),
              hipErrorInvalidValue)
        << reader;
  }
}

// ---- the registered fixtures: FAIL where the bug bites, PASS elsewhere ----

TEST(ModifierFixtures, SinkPerPartitionFailsOnlyWithSeveralPartitions) {
  const Kernel& fx = builtin_reader("fixture_sink_per_partition");
  EXPECT_TRUE(fx.fixture);
  AttentionCase c;
  c.context_lens = {300, 1000};  // 2 and 4 partitions of 256
  c.sinks = sinks_for(c.num_heads);
  EXPECT_TRUE(run_attention_case(builtin_reader("paged_attention_rocm"), c).passed());
  EXPECT_FALSE(run_attention_case(fx, c).passed()) << "the sink is counted 2 and 4 times";
  AttentionCase one = c;
  one.context_lens = {1, 200, 256};  // one partition each: counted once
  EXPECT_TRUE(run_attention_case(fx, one).passed());
  AttentionCase big = c;
  big.partition_size = 512, big.context_lens = {300, 512};  // one partition of 512
  EXPECT_TRUE(run_attention_case(fx, big).passed());
  AttentionCase windowed = c;
  windowed.sliding_window = 100, windowed.context_lens = {1000};  // tokens 900..999: one partition (768..1023)
  EXPECT_TRUE(run_attention_case(fx, windowed).passed());
  AttentionCase no_sinks = c;
  no_sinks.sinks.clear();
  EXPECT_TRUE(run_attention_case(fx, no_sinks).passed());
}

TEST(ModifierFixtures, AlibiRankSlopesFailsOnlyUnderTensorParallelism) {
  const Kernel& fx = builtin_reader("fixture_alibi_rank_slopes");
  EXPECT_TRUE(fx.fixture);
  AttentionCase c;
  c.context_lens = {5, 300};
  for (int rank : {0, 1}) {
    AttentionCase r = with_mods(c, {"alibi", 0, 0, false, true}, /*tp=*/2, rank);
    EXPECT_TRUE(run_attention_case(builtin_reader("paged_attention_rocm"), r).passed()) << rank;
    EXPECT_FALSE(run_attention_case(fx, r).passed()) << "tp 2 rank " << rank;
  }
  AttentionCase tp1 = with_mods(c, {"alibi", 0, 0, false, true}, /*tp=*/1, 0);
  EXPECT_TRUE(run_attention_case(fx, tp1).passed()) << "at tp 1 the per-rank count is the model's";
  EXPECT_TRUE(run_attention_case(fx, c).passed()) << "no ALiBi";
}

// ---- planted (unregistered) bugs of each new axis, each caught ----

void expect_caught(const char* planted, const AttentionCase& bites, const AttentionCase& spared) {
  EXPECT_TRUE(run_attention_case(builtin_reader("paged_attention_rocm"), bites).passed()) << bites.str();
  const AttentionResult bad = run_attention_case(planted_reader(planted), bites);
  EXPECT_EQ(bad.rc, 0) << planted;
  EXPECT_FALSE(bad.passed()) << planted << " " << bites.str() << ": " << bad.str();
  EXPECT_TRUE(run_attention_case(planted_reader(planted), spared).passed()) << planted << " " << spared.str();
}

TEST(PlantedModifierBugs, SoftcapAfterMaskingIsCaught) {
  AttentionCase c;
  c.context_lens = {1000};  // window keeps 900..999; tokens 768..899 share its partition
  c.sliding_window = 100, c.softcap = 1.f;
  AttentionCase uncapped = c;
  uncapped.softcap = 0;
  expect_caught("planted_softcap_after_mask", c, uncapped);
}

TEST(PlantedModifierBugs, WindowOffByOneIsCaught) {
  AttentionCase c;
  c.context_lens = {300, 1000};
  c.sliding_window = 8;  // one extra token of nine weighs ~11%
  AttentionCase wide = c;
  wide.sliding_window = 1000;  // keeps every token either way
  expect_caught("planted_window_off_by_one", c, wide);
}

TEST(PlantedModifierBugs, IgnoredPartitionSizeIsCaught) {
  AttentionCase c;
  c.partition_size = 512, c.context_lens = {700, 1000};  // splits at 256 into 3-4 partitions, room for 2
  AttentionCase short_ctx = c;
  short_ctx.context_lens = {200, 256};
  expect_caught("planted_partition_size_ignored", c, short_ctx);
}

TEST(PlantedModifierBugs, ReducingEmptyPartitionsIsCaught) {
  AttentionCase c;
  c.context_lens = {1000, 300};  // window 100: partitions 0-2 of the first sequence, 0 of the second, never run
  c.sliding_window = 100;
  AttentionCase no_window = c;
  no_window.sliding_window = 0;
  expect_caught("planted_empty_partition_reduce", c, no_window);
  const AttentionResult bad = run_attention_case(planted_reader("planted_empty_partition_reduce"), c);
  EXPECT_GT(bad.nonfinite, 0) << "it merges the NaN-filled workspace of the partitions that never ran";
}

}  // namespace
}  // namespace kvh::testing
