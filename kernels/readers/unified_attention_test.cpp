// The unified (varlen) readers (unified_attention.h): both paths (2d one pass,
// 3d segments + reduce), NHD and HND, against a float64 brute force on random
// ragged batches (decode-like tokens and prefill chunks, contexts from a first
// chunk up to ~300), every score modifier, causal and not, fp8 caches at every
// scale granularity, GQA ratios that are not powers of two; `out` poisoned, the
// typed workspaces in NaN margins (kernels/testing/ragged_check.h).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

#include "attention.h"
#include "kvh_runtime.h"
#include "testing/ragged_check.h"
#include "testing/attention_check.h"

namespace kvh::testing {
namespace {

const char* const kUnified[] = {"unified_attention_2d", "unified_attention_3d", "unified_attention_2d_hnd",
                                "unified_attention_3d_hnd"};

bool is_3d(const std::string& name) { return name.find("_3d") != std::string::npos; }

// Under AddressSanitizer (the asan preset) the sweeps below run half their combinations:
// what ASan adds is memory safety, which every path and format still exercise; the cpu
// preset runs every combination for the numbers. Combination i runs when the parity of
// its Gray code is even, so an innermost pair (causal or not) alternates from one outer
// combination to the next and every value of every axis still runs (ASan CI time: the
// full sweeps were half of the sanitizer tests' 1,460 s).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
bool in_sweep(int i) { return !kSanitized || ((i ^ (i >> 1)) & 1) == 0; }

std::vector<float> sinks_for(int num_heads) {
  std::vector<float> s;
  for (int h = 0; h < num_heads; ++h) s.push_back(-1.f + 7.f * float(h) / float(num_heads));
  return s;
}
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
    {"none", 0, 0, false, false},   {"window8", 8, 0, false, false},   {"window100", 100, 0, false, false},
    {"window1", 1, 0, false, false}, {"softcap1", 0, 1.f, false, false}, {"softcap30", 0, 30.f, false, false},
    {"sinks", 0, 0, true, false},   {"alibi", 0, 0, false, true},      {"alibi+sinks", 0, 0, true, true},
    {"all", 50, 2.f, true, true},
};

RaggedCase with_mods(RaggedCase c, const Mods& m) {
  c.sliding_window = m.window;
  c.softcap = m.softcap;
  c.sinks = m.sinks ? sinks_for(c.num_heads) : std::vector<float>{};
  c.alibi_slopes = m.alibi ? slopes_for(c.num_heads, 2, 1) : std::vector<float>{};
  c.head_offset = m.alibi ? c.num_heads : 0;
  return c;
}

RaggedCase for_reader(const char* reader, RaggedCase c) {
  c.format = kvh_cache_format(builtin_reader(reader).cache_format);
  return c;
}

void expect_pass(const char* reader, const RaggedCase& c, const char* what = "") {
  const RaggedResult r = run_ragged_case(builtin_reader(reader), c);
  EXPECT_TRUE(r.passed()) << reader << " " << what << " " << c.str() << ": " << r.str();
}

TEST(UnifiedAttention, DeclaresCapabilities) {
  const uint32_t five = KVH_MOD_SLIDING_WINDOW | KVH_MOD_SINKS | KVH_MOD_SOFTCAP | KVH_MOD_ALIBI | KVH_MOD_NON_CAUSAL;
  for (const char* name : kUnified) {
    const Kernel& k = builtin_reader(name);
    EXPECT_FALSE(k.fixture) << name;
    EXPECT_EQ(k.cache_format, std::string(name).find("hnd") != std::string::npos ? KVH_CACHE_HND : KVH_CACHE_NHD);
    EXPECT_EQ(k.caps.max_query_len, 65536) << name;
    EXPECT_EQ(k.caps.modifiers, five) << name;
    EXPECT_TRUE(k.caps.cache_dtypes & (1u << KVH_DT_FP8_E4M3FN)) << name;
    EXPECT_TRUE(k.caps.cache_dtypes & (1u << KVH_DT_FP8_E4M3FNUZ)) << name;
    for (int g = KVH_SCALES_NONE; g <= KVH_SCALES_TOKEN; ++g) EXPECT_TRUE(k.caps.kv_scales & (1u << g)) << name << g;
    EXPECT_EQ(bool(k.workspaces), is_3d(name)) << name;
    EXPECT_FALSE(k.workspace_bytes) << name;
  }
}

// The 3d path declares segm_max / segm_expsum [num_query_tokens, num_heads, segments] and
// segm_output [.., head_size]; segments: 16 over max_context_len rounded to the page, or
// partition_size tokens.
TEST(UnifiedAttention, TypedWorkspaceSpecs) {
  RaggedCase c;  // 5 sequences, 118 query tokens, 12 heads, max context 300, pages of 16
  for (int32_t ps : {0, 64, 7}) {
    c.partition_size = ps;
    RaggedArgs ra = make_ragged_args(c);
    const std::vector<kvh_workspace_spec> w = builtin_reader("unified_attention_3d").workspaces(&ra.args);
    ASSERT_EQ(w.size(), 3u);
    const int64_t segs = ps == 0 ? (300 + 31) / 32 : (300 + ps - 1) / ps;  // ceil(300/16) = 19 -> 32 tokens
    const char* names[] = {"segm_max", "segm_expsum", "segm_output"};
    for (int i = 0; i < 3; ++i) {
      EXPECT_STREQ(w[i].name, names[i]);
      EXPECT_EQ(w[i].dtype, KVH_DT_F32);
      EXPECT_EQ(w[i].ndim, i < 2 ? 3 : 4);
      EXPECT_EQ(w[i].shape[0], 118);
      EXPECT_EQ(w[i].shape[1], 12);
      EXPECT_EQ(w[i].shape[2], segs) << ps;
      if (i == 2) EXPECT_EQ(w[i].shape[3], 64);
    }
  }
}

// Random ragged batches: both paths, both formats, pages of 16 and 64, GQA 12:2 (ratio 6) and
// 24:2 (ratio 12), causal and not; each batch mixes decode-like tokens (q 1..9) and chunks of
// 40..70 tokens over contexts from a first chunk (L = q) up to 300.
TEST(UnifiedAttention, RandomRaggedBatchesMatchBruteForce) {
  int n = 0;
  for (const char* reader : kUnified)
    for (int bs : {16, 64})
      for (int heads : {12, 24})
        for (bool causal : {true, false}) {
          if (!in_sweep(n++)) continue;
          RaggedCase c = for_reader(reader, RaggedCase{});
          c.seed = uint64_t(n);
          c.block_size = bs, c.num_heads = heads, c.num_kv_heads = 2, c.causal = causal;
          c.seqs = random_ragged_batch(c.seed, 6);
          c.wave_size = n % 2 ? 64 : 32;
          expect_pass(reader, c);
        }
}

// Every modifier (and all at once), causal and not, both paths; the HND readers, which differ
// only in the cache address (CacheAddr), which no modifier touches, with a window, ALiBi with
// sinks, and all at once (the full cross cost 80 ragged runs, 200 s under ASan).
TEST(UnifiedAttention, EveryModifierCausalAndNot) {
  int n = 0;
  for (const char* reader : kUnified)
    for (const Mods& m : kMods)
      for (bool causal : {true, false}) {
        const std::string mod = m.name;
        if (std::string(reader).find("_hnd") != std::string::npos && mod != "window8" && mod != "alibi+sinks" &&
            mod != "all")
          continue;
        if (!in_sweep(n++)) continue;
        RaggedCase c = with_mods(for_reader(reader, RaggedCase{}), m);
        c.causal = causal;
        c.seqs = {{1, 1}, {9, 9}, {57, 300}, {3, 150}, {64, 120}};
        expect_pass(reader, c, m.name);
      }
}

// fp8 caches (e4m3fn and e4m3fnuz) at every scale granularity; under NONE the scales come as
// floats and as [1] tensors, or as floats alone.
TEST(UnifiedAttention, Fp8CachesAtEveryScaleGranularity) {
  int n = 0;
  for (const char* reader : kUnified)
    for (int32_t cd : {KVH_DT_FP8_E4M3FN, KVH_DT_FP8_E4M3FNUZ})
      for (int g = KVH_SCALES_NONE; g <= KVH_SCALES_TOKEN; ++g) {
        if (!in_sweep(n + 1)) {
          ++n;
          continue;
        }
        RaggedCase c = for_reader(reader, RaggedCase{});
        c.cache_dtype = cd, c.kv_scales = kvh_scale_granularity(g);
        c.dtype = ++n % 2 ? KVH_DT_F16 : KVH_DT_BF16;
        c.scale_tensors = n % 3 != 0;
        c.seqs = random_ragged_batch(uint64_t(n), 4, 200);
        c.seed = uint64_t(n);
        c.causal = n % 2 == 0;
        expect_pass(reader, c);
      }
}

// Decode calls: a batch of q = 1 with the ragged fields, and as an older caller makes them
// (no query_start_loc, max_query_len 0, no seq_lens).
TEST(UnifiedAttention, DecodeCalls) {
  for (const char* reader : kUnified)
    for (bool fields : {true, false})
      for (int bs : {16, 64}) {
        RaggedCase c = for_reader(reader, RaggedCase{});
        c.ragged_fields = fields, c.block_size = bs;
        c.seqs = {{1, 1}, {1, 16}, {1, 17}, {1, 299}, {1, 300}};
        c.sinks = sinks_for(c.num_heads), c.sliding_window = 100;
        expect_pass(reader, c, fields ? "decode" : "decode, no ragged fields");
      }
}

// An older caller's args (struct_size of kvharness 0.3: no ragged fields at all) are a decode
// call: the 2d path writes what it writes for the same call at full size; the 3d path, whose
// workspaces are typed (0.4), refuses them.
TEST(UnifiedAttention, ArgsOfAnOlderCallerAreADecodeCall) {
  RaggedCase c;
  c.ragged_fields = false;
  c.seqs = {{1, 1}, {1, 100}, {1, 300}};
  for (const char* reader : kUnified) {
    c.format = kvh_cache_format(builtin_reader(reader).cache_format);
    RaggedArgs full = make_ragged_args(c), old = make_ragged_args(c);
    old.args.struct_size = uint32_t(offsetof(kvh_attention_args, query_start_loc));
    if (is_3d(reader)) {
      EXPECT_EQ(builtin_reader(reader).attention(&old.args, nullptr), hipErrorInvalidValue) << reader;
      continue;
    }
    ASSERT_EQ(builtin_reader(reader).attention(&full.args, nullptr), 0) << reader;
    ASSERT_EQ(builtin_reader(reader).attention(&old.args, nullptr), 0) << reader;
    const size_t n = size_t(full.args.out.shape[0] * full.args.out.stride[0]);
    EXPECT_EQ(std::memcmp(full.args.out.data, old.args.out.data, n * 2), 0) << reader;
  }
}

// partition_size is the 3d path's segment (tokens), any value: every row then merges several segments,
// some partial, some (windowed, causal) that other rows of its program never see.
TEST(UnifiedAttention, PartitionSizeIsHonoured) {
  int n = 0;
  for (const char* reader : {"unified_attention_3d", "unified_attention_3d_hnd"})
    for (int32_t ps : {3, 16, 50, 64, 299, 512}) {
      if (!in_sweep(n++)) continue;
      RaggedCase c = for_reader(reader, RaggedCase{});
      c.partition_size = ps;
      c.seqs = {{1, 1}, {70, 300}, {5, 130}, {40, 40}};
      c.sliding_window = ps == 50 ? 60 : 0;
      c.sinks = sinks_for(c.num_heads);
      const RaggedResult r = run_ragged_case(builtin_reader(reader), c);
      EXPECT_TRUE(r.passed()) << reader << " ps " << ps << ": " << r.str();
      EXPECT_EQ(r.workspace_margin_writes, 0) << reader << " ps " << ps;
      ASSERT_EQ(r.workspaces.size(), 3u);
      EXPECT_EQ(r.workspaces[0].shape[2], (300 + ps - 1) / ps);
    }
}

// GQA groups of every shape: powers of two and not, MHA, one kv head, a group larger than one
// program's rows (48 heads a kv head: two head chunks), head sizes from 16 to 256.
TEST(UnifiedAttention, GqaRatiosAndHeadSizes) {
  struct Shape {
    int heads, kv_heads, head_size;
  };
  const Shape shapes[] = {{6, 1, 64}, {12, 2, 128}, {10, 2, 80}, {3, 3, 64}, {8, 2, 256}, {96, 2, 16}, {14, 2, 192}};
  int n = 0;
  for (const char* reader : kUnified)
    for (const Shape& s : shapes) {
      if (!in_sweep(n++)) continue;
      RaggedCase c = for_reader(reader, RaggedCase{});
      c.num_heads = s.heads, c.num_kv_heads = s.kv_heads, c.head_size = s.head_size;
      c.seqs = {{1, 33}, {45, 100}, {7, 7}};
      c.causal = s.heads % 4 == 0;
      expect_pass(reader, c, "gqa");
    }
}

// Strided views: K and V sharing one allocation blocks-first, padded pages, head-interleaved
// HND pages, a strided out view; wavefronts of 32 and 64 lanes.
TEST(UnifiedAttention, StridedCachesAndOut) {
  for (const char* reader : kUnified)
    for (Scheme scheme : {Scheme::Interleaved, Scheme::Padded, Scheme::KvFirst, Scheme::HeadInterleaved}) {
      RaggedCase c = for_reader(reader, RaggedCase{});
      if (scheme == Scheme::HeadInterleaved && c.format != KVH_CACHE_HND) continue;
      c.scheme = scheme, c.out_row_pad = 24, c.wave_size = 32;
      c.seqs = random_ragged_batch(5, 5);
      expect_pass(reader, c, to_string(scheme));
    }
}

// Arguments outside the contract are refused (hipErrorInvalidValue) without launching.
TEST(UnifiedAttention, RefusesBadArguments) {
  RaggedCase c;
  c.seqs = {{3, 10}, {1, 5}};
  for (const char* reader : kUnified) {
    const Kernel& k = builtin_reader(reader);
    c.format = kvh_cache_format(k.cache_format);
    auto rc_with = [&](auto edit) {
      RaggedArgs ra = make_ragged_args(c);
      std::vector<std::vector<float>> ws;
      if (k.workspaces) {
        const auto specs = k.workspaces(&ra.args);
        for (size_t i = 0; i < specs.size(); ++i) {
          int64_t n = 1;
          for (int d = 0; d < specs[i].ndim; ++d) n *= specs[i].shape[d];
          ws.emplace_back(size_t(n), 0.f);
          kvh_tensor& t = ra.args.workspaces[i];
          t.data = ws.back().data(), t.dtype = specs[i].dtype, t.ndim = specs[i].ndim;
          int64_t st = 1;
          for (int d = specs[i].ndim - 1; d >= 0; --d) t.shape[d] = specs[i].shape[d], t.stride[d] = st, st *= t.shape[d];
        }
        ra.args.num_workspaces = int32_t(specs.size());
      }
      edit(ra.args);
      return k.attention(&ra.args, nullptr);
    };
    EXPECT_EQ(rc_with([](kvh_attention_args&) {}), 0) << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.query_start_loc = {}; }), hipErrorInvalidValue)
        << reader << ": query_start_loc missing with max_query_len 3";
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.num_query_tokens = 3; }), hipErrorInvalidValue) << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.out.shape[0] = 3; }), hipErrorInvalidValue) << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.query.shape[0] = 3, a.out.shape[0] = 3; }), hipErrorInvalidValue)
        << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.query_start_loc.shape[0] = 2; }), hipErrorInvalidValue) << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.query_start_loc.dtype = KVH_DT_I64; }), hipErrorInvalidValue)
        << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.max_query_len = 0; }), hipErrorInvalidValue) << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.max_query_len = 65537; }), hipErrorInvalidValue) << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.seq_lens.shape[0] = 3; }), hipErrorInvalidValue) << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.causal = 2; }), hipErrorInvalidValue) << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.block_tables.shape[0] = 3; }), hipErrorInvalidValue) << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.context_lens.shape[0] = 1; }), hipErrorInvalidValue) << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.sliding_window = -1; }), hipErrorInvalidValue) << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.key_cache.dtype = KVH_DT_BF16; }), hipErrorInvalidValue) << reader;
    EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.k_scale_tensor.data = &a.k_scale; }), hipErrorInvalidValue)
        << reader << ": one scale tensor without the other";
    if (is_3d(reader)) {
      EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.num_workspaces = 2; }), hipErrorInvalidValue) << reader;
      EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.workspaces[2].shape[3] = 32; }), hipErrorInvalidValue) << reader;
      EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.workspaces[1].shape[2] += 1; }), hipErrorInvalidValue) << reader;
      EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.workspaces[0].dtype = KVH_DT_F16; }), hipErrorInvalidValue)
          << reader;
      EXPECT_EQ(rc_with([](kvh_attention_args& a) { a.partition_size = -1; }), hipErrorInvalidValue) << reader;
    }
  }
}

}  // namespace
}  // namespace kvh::testing

namespace kvh::testing {
namespace {

// ---- the registered fixtures: FAIL where their bug bites, PASS where it cannot be seen ----

RaggedCase ragged_batch() {
  RaggedCase c;  // a chunk first, so that every later sequence's first row differs from its index
  c.seqs = {{47, 120}, {1, 33}, {5, 300}, {64, 64}, {2, 17}};
  return c;
}
RaggedCase decode_batch() {
  RaggedCase c;
  c.seqs = {{1, 1}, {1, 33}, {1, 300}, {1, 120}};
  return c;
}

TEST(UnifiedFixtures, AreRegisteredFixtures) {
  for (const char* name : {"fixture_unified_metadata_by_query_row", "fixture_unified_causal_off_by_one",
                           "fixture_unified_seq_end_mask_if_causal", "fixture_unified_padded_query_stride"}) {
    const Kernel& k = builtin_reader(name);
    EXPECT_TRUE(k.fixture) << name;
    EXPECT_EQ(k.cache_format, KVH_CACHE_NHD) << name;
    EXPECT_EQ(k.caps.max_query_len, 65536) << name;
  }
}

TEST(UnifiedFixtures, MetadataByQueryRowFailsOnRaggedBatches) {
  const Kernel& fx = builtin_reader("fixture_unified_metadata_by_query_row");
  for (bool causal : {true, false}) {
    RaggedCase c = ragged_batch();
    c.causal = causal;
    expect_pass("unified_attention_2d", c);
    const RaggedResult r = run_ragged_case(fx, c);
    EXPECT_EQ(r.rc, 0);
    EXPECT_FALSE(r.passed()) << c.str() << ": " << r.str();
  }
  const RaggedResult d = run_ragged_case(fx, decode_batch());
  EXPECT_TRUE(d.passed()) << "all-decode: row s is sequence s: " << d.str();
}

TEST(UnifiedFixtures, CausalOffByOneFailsWhenCausal) {
  const Kernel& fx = builtin_reader("fixture_unified_causal_off_by_one");
  RaggedCase c = ragged_batch();
  expect_pass("unified_attention_2d", c);
  EXPECT_FALSE(run_ragged_case(fx, c).passed()) << "causal: each query misses its own key";
  EXPECT_FALSE(run_ragged_case(fx, decode_batch()).passed()) << "decode too: the last token is dropped";
  RaggedCase nc = c;
  nc.causal = false;
  const RaggedResult r = run_ragged_case(fx, nc);
  EXPECT_TRUE(r.passed()) << "non-causal without a window: p is not used: " << r.str();
  nc.alibi_slopes = slopes_for(nc.num_heads, 1, 0);
  EXPECT_TRUE(run_ragged_case(fx, nc).passed()) << "a constant ALiBi shift per row cancels";
  nc.sinks = sinks_for(nc.num_heads);
  expect_pass("unified_attention_2d", nc);
  EXPECT_FALSE(run_ragged_case(fx, nc).passed()) << "... unless a sink is there";
}

TEST(UnifiedFixtures, SeqEndMaskIfCausalFailsWhenNotCausal) {
  const Kernel& fx = builtin_reader("fixture_unified_seq_end_mask_if_causal");
  RaggedCase c = ragged_batch();
  c.causal = false;
  expect_pass("unified_attention_2d", c);
  const RaggedResult r = run_ragged_case(fx, c);
  EXPECT_FALSE(r.passed()) << r.str();
  EXPECT_GT(r.nonfinite, 0) << "the stale (NaN) slots after L join the softmax: " << r.str();
  RaggedCase causal = c;
  causal.causal = true;
  EXPECT_TRUE(run_ragged_case(fx, causal).passed()) << "causal: the mask is there";
  RaggedCase aligned = c;
  aligned.seqs = {{40, 64}, {1, 16}, {9, 32}};
  EXPECT_TRUE(run_ragged_case(fx, aligned).passed()) << "every L a multiple of the page: no tail";
}

TEST(UnifiedFixtures, PaddedQueryStrideWritesPastOutOnRaggedBatches) {
  const Kernel& fx = builtin_reader("fixture_unified_padded_query_stride");
  RaggedCase c = ragged_batch();
  expect_pass("unified_attention_2d", c);
  const RaggedResult r = run_ragged_case(fx, c);
  EXPECT_FALSE(r.passed()) << r.str();
  EXPECT_GT(r.out_of_view_writes, 0) << "late requests write past out: " << r.str();
  const RaggedResult d = run_ragged_case(fx, decode_batch());
  EXPECT_TRUE(d.passed()) << "all-decode: max_query_len 1, row s * 1 + 0: " << d.str();
}

}  // namespace
}  // namespace kvh::testing
