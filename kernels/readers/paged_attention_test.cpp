// paged_attention_v1 and paged_attention_rocm against reference/attention,
// through the provider function pointers, on the cpu backend (wave 32 and 64,
// randomised fiber order). Tolerances: testing/attention_check.h.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kvh_runtime.h"
#include "readers/paged_attention.h"
#include "testing/attention_check.h"

namespace kvh::testing {
namespace {

const std::vector<std::string> kReaders = {"paged_attention_v1", "paged_attention_rocm"};

kvh_cache_format format_of(const std::string& reader) {
  return builtin_reader(reader).cache_format == KVH_CACHE_PA_V1 ? KVH_CACHE_PA_V1 : KVH_CACHE_SHUFFLE;
}

struct NamedCase {
  const char* name;
  AttentionCase c;
};
// GoogleTest prints parameters into the CTest names: the name, not the bytes.
void PrintTo(const NamedCase& n, std::ostream* os) { *os << n.name; }

// Each row varies a few axes from the default (fp16, separate, H8/KVH1, D128,
// bs16, ctx {1,255,256,257,1000}, wave 64, random fiber order).
std::vector<NamedCase> cases() {
  std::vector<NamedCase> v;
  auto add = [&](const char* name, auto edit) {
    AttentionCase c;
    edit(c);
    v.push_back({name, c});
  };
  add("Fp16D128Gqa8Wave64", [](AttentionCase&) {});
  add("Fp16D128Gqa8Wave32", [](AttentionCase& c) { c.wave_size = 32; });
  add("Fp16D128RoundRobinOrder", [](AttentionCase& c) { c.random_order = false; });
  add("Bf16D64Bs48Gqa1InterleavedWave32", [](AttentionCase& c) {
    c.dtype = KVH_DT_BF16, c.head_size = 64, c.block_size = 48, c.num_heads = c.num_kv_heads = 4;
    c.scheme = Scheme::Interleaved, c.wave_size = 32;
  });
  add("Fp16D80Bs544Gqa8PaddedWave64", [](AttentionCase& c) {
    c.head_size = 80, c.block_size = 544, c.num_heads = 16, c.num_kv_heads = 2, c.scheme = Scheme::Padded;
  });
  add("Bf16D256InterleavedStridedOut", [](AttentionCase& c) {
    c.dtype = KVH_DT_BF16, c.head_size = 256, c.scheme = Scheme::Interleaved, c.out_row_pad = 8;
  });
  add("Fp16D256Bs48Gqa8OffsetPartition64Wave32", [](AttentionCase& c) {
    c.head_size = 256, c.block_size = 48, c.num_heads = 16, c.num_kv_heads = 2, c.scheme = Scheme::Offset;
    c.partition_size = 64, c.wave_size = 32;
  });
  add("Fp16D128Partition100KvFirstWave32", [](AttentionCase& c) {
    c.partition_size = 100, c.scheme = Scheme::KvFirst, c.wave_size = 32;
  });
  add("Fp16D64Gqa16Wave32", [](AttentionCase& c) { c.head_size = 64, c.num_heads = 16, c.wave_size = 32; });
  add("Fp16D128AttentionSink", [](AttentionCase& c) { c.sink_token = 10; });
  add("Bf16D128Context32768", [](AttentionCase& c) {
    c.dtype = KVH_DT_BF16, c.num_heads = 2, c.context_lens = {32768, 3};
  });
  return v;
}

class ReaderMatrix : public ::testing::TestWithParam<std::tuple<std::string, NamedCase>> {};

TEST_P(ReaderMatrix, MatchesReferenceAndWritesEveryElement) {
  const auto& [reader, named] = GetParam();
  AttentionCase c = named.c;
  c.format = format_of(reader);
  const AttentionResult r = run_attention_case(builtin_reader(reader), c);
  EXPECT_TRUE(r.passed()) << reader << " " << c.str() << ": " << r.str();
  EXPECT_EQ(r.unwritten, 0);
  EXPECT_EQ(r.nonfinite, 0);
  EXPECT_LE(r.max_abs_err, tolerance_for(c.dtype).atol + tolerance_for(c.dtype).rtol);
}

INSTANTIATE_TEST_SUITE_P(Cases, ReaderMatrix, ::testing::Combine(::testing::ValuesIn(kReaders), ::testing::ValuesIn(cases())),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" + std::get<1>(info.param).name;
                         });

TEST(PagedAttention, EveryHeadSizeMultipleOfXUpTo256) {
  for (const auto& reader : kReaders)
    for (int d = 8; d <= 256; d += 8) {
      AttentionCase c;
      c.format = format_of(reader);
      c.head_size = d, c.num_heads = 2, c.context_lens = {1, 300};
      c.wave_size = d % 16 ? 32 : 64;
      const AttentionResult r = run_attention_case(builtin_reader(reader), c);
      EXPECT_TRUE(r.passed()) << reader << " " << c.str() << ": " << r.str();
    }
}

TEST(PagedAttention, WorkspaceBytesCoverSplitKOnly) {
  AttentionCase c;  // 5 seqs, 8 heads, D 128, max_context_len 1000 -> 4 partitions of 256
  AttentionArgsFixture fx = make_attention_args(c);
  const Kernel& r = builtin_reader("paged_attention_rocm");
  EXPECT_EQ(r.workspace_bytes(&fx.args), 4u * 5 * 8 * 4 * (2 + 128));
  fx.args.partition_size = 1000;
  EXPECT_EQ(r.workspace_bytes(&fx.args), 0u);  // one partition: out written directly
}

// Each mutation must be refused with hipErrorInvalidValue before any launch:
// `out` keeps its poison.
TEST(PagedAttention, RejectsBadArgumentsWithoutLaunching) {
  struct Mutation {
    const char* what;
    void (*apply)(kvh_attention_args&);
  };
  const Mutation mutations[] = {
      {"query rank 2", [](kvh_attention_args& a) { a.query.ndim = 2; }},
      {"key_cache rank 4", [](kvh_attention_args& a) { a.key_cache.ndim = 4; }},
      {"out dtype differs", [](kvh_attention_args& a) { a.out.dtype = KVH_DT_BF16; }},
      {"cache dtype f32", [](kvh_attention_args& a) { a.key_cache.dtype = a.value_cache.dtype = KVH_DT_F32; }},
      {"block_tables int64", [](kvh_attention_args& a) { a.block_tables.dtype = KVH_DT_I64; }},
      {"context_lens float", [](kvh_attention_args& a) { a.context_lens.dtype = KVH_DT_F32; }},
      {"x = 16", [](kvh_attention_args& a) { a.key_cache.shape[4] = 16, a.key_cache.shape[2] = 8; }},
      {"head_size 100 not a multiple of x",
       [](kvh_attention_args& a) { a.query.shape[2] = a.out.shape[2] = a.value_cache.shape[3] = 100; }},
      {"head_size 264 > 256",
       [](kvh_attention_args& a) {
         a.query.shape[2] = a.out.shape[2] = a.value_cache.shape[3] = 264;
         a.key_cache.shape[2] = 33;
       }},
      {"num_heads not a multiple of num_kv_heads", [](kvh_attention_args& a) { a.key_cache.shape[1] = a.value_cache.shape[1] = 3; }},
      {"block_size disagrees with K", [](kvh_attention_args& a) { a.block_size = 32; }},
      {"V in pa_v1 layout", [](kvh_attention_args& a) { a.value_cache.ndim = 4; }},
      {"block_tables too short", [](kvh_attention_args& a) { a.max_context_len = int32_t(a.block_tables.shape[1] * 16 + 1); }},
      {"partition_size negative", [](kvh_attention_args& a) { a.partition_size = -1; }},
      {"workspace missing", [](kvh_attention_args& a) { a.workspace = nullptr; }},
      {"workspace too small", [](kvh_attention_args& a) { a.workspace_bytes -= 4; }},
  };
  const Kernel& reader = builtin_reader("paged_attention_rocm");
  AttentionCase c;
  c.head_size = 256;
  AttentionArgsFixture fx = make_attention_args(c);
  fx.workspace.assign(reader.workspace_bytes(&fx.args) / 4, 0.f);
  fx.args.workspace = fx.workspace.data();
  fx.args.workspace_bytes = fx.workspace.size() * 4;
  const std::vector<uint16_t> poisoned = fx.out;
  for (const auto& m : mutations) {
    kvh_attention_args a = fx.args;
    m.apply(a);
    EXPECT_EQ(reader.attention(&a, nullptr), hipErrorInvalidValue) << m.what;
    EXPECT_EQ(fx.out, poisoned) << m.what << ": out changed";
    fx.out = poisoned;
  }
  EXPECT_EQ(reader.attention(&fx.args, nullptr), hipSuccess) << "the unmutated arguments are valid";
}

// A variant built for 16-bit caches only (the planted readers that declare no fp8/int8
// capability) refuses an fp8 or int8 cache before any launch, and runs a 16-bit one.
TEST(PagedAttention, SixteenBitOnlyVariantRefusesOtherCachesWithoutLaunching) {
  using Only16 = kvh::kernels::Only16BitCaches<kvh::kernels::CorrectVariant>;
  const Kernel& reader = builtin_reader("paged_attention_rocm");
  AttentionCase c;
  AttentionArgsFixture fx = make_attention_args(c);
  fx.workspace.assign(reader.workspace_bytes(&fx.args) / 4, 0.f);
  fx.args.workspace = fx.workspace.data();
  fx.args.workspace_bytes = fx.workspace.size() * 4;
  const std::vector<uint16_t> poisoned = fx.out;
  for (kvh_dtype d : {KVH_DT_FP8_E4M3FN, KVH_DT_FP8_E4M3FNUZ, KVH_DT_I8}) {
    kvh_attention_args a = fx.args;
    a.key_cache.dtype = a.value_cache.dtype = d;
    a.key_cache.shape[4] = a.value_cache.shape[4] = 16;  // x = 16 bytes of 1-byte elements
    a.key_cache.shape[2] = c.head_size / 16, a.value_cache.shape[2] = c.block_size / 16;
    EXPECT_EQ((kvh::kernels::launch_paged_attention<KVH_CACHE_SHUFFLE, Only16>(a, nullptr)), hipErrorInvalidValue)
        << "cache dtype " << int(d);
    EXPECT_EQ(fx.out, poisoned) << "cache dtype " << int(d) << ": out changed";
    // Valid otherwise: the correct variant runs them (1-byte elements in a 2-byte buffer, strides unchanged).
    EXPECT_EQ((kvh::kernels::launch_paged_attention<KVH_CACHE_SHUFFLE, kvh::kernels::CorrectVariant>(a, nullptr)),
              hipSuccess)
        << "cache dtype " << int(d);
    fx.out = poisoned;
  }
  EXPECT_EQ((kvh::kernels::launch_paged_attention<KVH_CACHE_SHUFFLE, Only16>(fx.args, nullptr)), hipSuccess);
  EXPECT_NE(fx.out, poisoned) << "the 16-bit cache ran";
}

// The budget: 16 seqs x 8 heads x 2k context, head_size 128, "well under a second".
TEST(PagedAttention, SixteenSeqsEightHeads2kContextIsFast) {
  for (const auto& reader : kReaders) {
    AttentionCase c;
    c.format = format_of(reader);
    c.context_lens.assign(16, 2048);
    const AttentionResult r = run_attention_case(builtin_reader(reader), c);
    EXPECT_TRUE(r.passed()) << r.str();
    RecordProperty(reader + "_ms", std::to_string(r.seconds * 1e3));
    std::printf("%s 16x8x2048 D128: %.1f ms\n", reader.c_str(), r.seconds * 1e3);
    EXPECT_LT(r.seconds, 1.0) << reader;
  }
}

}  // namespace
}  // namespace kvh::testing
