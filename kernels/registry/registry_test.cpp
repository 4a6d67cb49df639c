// The provider ABI as the registry sees it: ABI 1 providers still load, ABI 2
// contexts come back on every call, growable structs are read within their
// struct_size, capabilities, provider errors.
#include "registry/registry.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <string>
#include <vector>

namespace kvh {
namespace {

kvh_tensor tensor_at(void* data, kvh_dtype dt, std::vector<int64_t> shape) {
  kvh_tensor t{};
  t.data = data;
  t.dtype = dt;
  t.ndim = int32_t(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) t.shape[i] = shape[i];
  return t;
}

// ---- ABI 1: a provider library built against the frozen ABI 1 header ----

TEST(RegistryAbi1, ProviderBuiltAgainstAbi1HeaderLoadsAndGetsEveryField) {
  Registry reg;
  reg.load_provider(KVH_TEST_V1_PROVIDER);
  const Kernel* w = reg.find("v1_record_write");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->abi_version, 1);
  EXPECT_EQ(w->role, KVH_ROLE_WRITER);
  EXPECT_EQ(w->cache_format, KVH_CACHE_PA_V1);
  EXPECT_EQ(w->origin, KVH_TEST_V1_PROVIDER);
  int64_t rec[4] = {0, 0, 0, 0};
  kvh_write_args a{};
  a.key_cache = tensor_at(rec, KVH_DT_I64, {4});
  a.slot_mapping = tensor_at(nullptr, KVH_DT_I64, {37});
  a.key = tensor_at(nullptr, KVH_DT_F16, {37, 2, 64});
  a.key.stride[0] = 384;
  a.value_cache = tensor_at(nullptr, KVH_DT_F16, {5, 2, 64, 16});
  a.block_size = 16;
  ASSERT_EQ(w->write(&a, nullptr), 0);
  EXPECT_EQ(rec[0], 16);
  EXPECT_EQ(rec[1], 37);
  EXPECT_EQ(rec[2], 384);
  EXPECT_EQ(rec[3], 2);

  const Kernel* r = reg.find("v1_fixture_record_attention");
  ASSERT_NE(r, nullptr);
  EXPECT_TRUE(r->fixture);
  EXPECT_EQ(r->caps.head_sizes, (std::vector<int32_t>{64, 128}));
  float out[5] = {0, 0, 0, 0, 0};
  kvh_attention_args b{};
  b.out = tensor_at(out, KVH_DT_F32, {5});
  b.block_size = 32;
  b.max_context_len = 1300;
  b.scale = 0.125f;
  b.k_scale = 2.f;
  b.partition_size = 256;
  b.workspace_bytes = 4096;
  ASSERT_TRUE(r->workspace_bytes);
  EXPECT_EQ(r->workspace_bytes(&b), 96u);
  ASSERT_EQ(r->attention(&b, nullptr), 0);
  EXPECT_EQ(out[0], 0.125f);
  EXPECT_EQ(out[1], 2.f);
  EXPECT_EQ(out[2], 1300.f);
  EXPECT_EQ(out[3], 256.f);
  EXPECT_EQ(out[4], 4096.f);
  b.block_size = 7;  // the kernel refuses: its HIP error code comes back unchanged
  EXPECT_EQ(r->attention(&b, nullptr), 1);
}

TEST(RegistryAbi1, LoadingTheSameProviderTwiceNamesTheFirstOrigin) {
  Registry reg;
  reg.load_provider(KVH_TEST_V1_PROVIDER);
  try {
    reg.load_provider(KVH_TEST_V1_PROVIDER);
    FAIL() << "a duplicate kernel name must be refused";
  } catch (const ProviderLoadError& e) {
    EXPECT_NE(std::string(e.what()).find("already registered by " KVH_TEST_V1_PROVIDER), std::string::npos) << e.what();
  }
}

TEST(RegistryLoad, MissingLibraryAndMissingSymbolsAreProviderLoadErrors) {
  Registry reg;
  EXPECT_THROW(reg.load_provider("/nonexistent/libnothing.so"), ProviderLoadError);
  // A real shared library without either entry point.
  try {
    reg.load_provider("libm.so.6");
    FAIL();
  } catch (const ProviderLoadError& e) {
    EXPECT_NE(std::string(e.what()).find("exports neither kvh_provider_open"), std::string::npos) << e.what();
  }
}

// ---- ABI 2 ----

TEST(RegistryAbi2, ALibraryIsOpenedWithTheConfigurationAfterTheQuestionMark) {
  Registry reg;
  try {
    reg.load_provider(KVH_TEST_C_PROVIDER "?fast");
    FAIL() << "the provider refuses any configuration";
  } catch (const ProviderLoadError& e) {
    EXPECT_EQ(std::string(e.what()), KVH_TEST_C_PROVIDER "?fast: this provider takes no configuration");
  }
  reg.load_provider(KVH_TEST_C_PROVIDER);
  const Kernel* k = reg.find("c_write_nothing");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->abi_version, KVH_ABI_VERSION);
  EXPECT_EQ(k->caps.head_sizes, std::vector<int32_t>{128});
  kvh_write_args a{};
  EXPECT_EQ(k->write(&a, nullptr), 0);
}

int add_context(void* ctx, const kvh_write_args* a, void*) {
  static_cast<int64_t*>(a->key_cache.data)[0] += *static_cast<int64_t*>(ctx);
  return 0;
}
const char* message_of(void* ctx) { return *static_cast<int64_t*>(ctx) == 1 ? "one" : "two"; }
int raises(void*, const kvh_write_args*, void*) { return KVH_RAISED; }

kvh_kernel_desc writer(const char* name, void* ctx, kvh_write_fn fn = add_context) {
  kvh_kernel_desc d{};
  d.abi_version = KVH_ABI_VERSION;
  d.name = name;
  d.role = KVH_ROLE_WRITER;
  d.cache_format = KVH_CACHE_NHD;
  d.context = ctx;
  d.write = fn;
  d.last_error = message_of;
  return d;
}

TEST(RegistryAbi2, EachKernelGetsItsOwnContextBack) {
  static int64_t one = 1, two = 2;
  Registry reg;
  reg.add(writer("ctx_one", &one), "test");
  reg.add(writer("ctx_two", &two), "test");
  int64_t acc = 0;
  kvh_write_args a{};
  a.key_cache = tensor_at(&acc, KVH_DT_I64, {1});
  ASSERT_EQ(reg.find("ctx_one")->write(&a, nullptr), 0);
  EXPECT_EQ(acc, 1);
  ASSERT_EQ(reg.find("ctx_two")->write(&a, nullptr), 0);
  EXPECT_EQ(acc, 3);
  EXPECT_EQ(reg.find("ctx_two")->last_error(), "two");
}

TEST(RegistryAbi2, RaisedIsDistinctAndCarriesTheProvidersMessage) {
  static int64_t one = 1;
  Registry reg;
  reg.add(writer("raiser", &one, raises), "test");
  kvh_write_args a{};
  EXPECT_EQ(reg.find("raiser")->write(&a, nullptr), KVH_RAISED);
  EXPECT_EQ(reg.find("raiser")->last_error(), "one");
}

TEST(RegistryAbi2, CallerStructsCarryTheirSize) {
  const kvh_write_args w{};
  const kvh_attention_args r{};
  const kvh_capabilities c{};
  EXPECT_EQ(w.struct_size, sizeof(kvh_write_args));
  EXPECT_EQ(r.struct_size, sizeof(kvh_attention_args));
  EXPECT_EQ(c.struct_size, sizeof(kvh_capabilities));
  EXPECT_TRUE(KVH_HAS_FIELD(&w, kvh_write_args, block_size));
}

// A provider compiled against a later header whose writer arguments have one
// more field: it must see that field absent in what this harness passes.
struct future_write_args {
  kvh_write_args now;   // every field this header has, then one more
  double future_scale;  // default 1.0 when absent
};

int future_writer(void*, const kvh_write_args* raw, void*) {
  const auto* a = reinterpret_cast<const future_write_args*>(raw);
  const bool has = a->now.struct_size >= offsetof(future_write_args, future_scale) + sizeof(double);
  const double s = has ? a->future_scale : 1.0;
  static_cast<double*>(a->now.key_cache.data)[0] = s * double(a->now.block_size);
  return 0;
}

TEST(RegistryAbi2, ACalleeBuiltAgainstALargerArgsStructSeesNewFieldsAbsent) {
  Registry reg;
  reg.add(writer("future", nullptr, future_writer), "test");
  double got = 0;
  kvh_write_args a{};
  a.key_cache = tensor_at(&got, KVH_DT_F32, {1});
  a.block_size = 16;
  ASSERT_EQ(reg.find("future")->write(&a, nullptr), 0);
  EXPECT_EQ(got, 16.0) << "read past struct_size: future_scale is garbage, not its default";
  // Known-bad: a caller that claims the larger size makes the field visible.
  future_write_args big{};
  big.now = a;
  big.now.struct_size = sizeof(big);
  big.future_scale = 3.0;
  ASSERT_EQ(future_writer(nullptr, reinterpret_cast<const kvh_write_args*>(&big), nullptr), 0);
  EXPECT_EQ(got, 48.0);
}

// A provider compiled against an older, smaller writer-args struct (no
// block_size yet) reads its own fields from what this harness passes, and
// sees a struct_size at least as large as its own.
struct past_write_args {
  uint32_t struct_size;
  uint32_t reserved;
  kvh_tensor key, value, key_cache, value_cache, slot_mapping;
};

int past_writer(void*, const kvh_write_args* raw, void*) {
  const auto* a = reinterpret_cast<const past_write_args*>(raw);
  if (a->struct_size < sizeof(past_write_args)) return 1;  // hipErrorInvalidValue: too old a caller
  static_cast<int64_t*>(a->key_cache.data)[0] = a->slot_mapping.shape[0];
  return 0;
}

TEST(RegistryAbi2, ACalleeBuiltAgainstASmallerArgsStructReadsItsPrefix) {
  Registry reg;
  reg.add(writer("past", nullptr, past_writer), "test");
  int64_t got = 0;
  kvh_write_args a{};
  a.key_cache = tensor_at(&got, KVH_DT_I64, {1});
  a.slot_mapping = tensor_at(nullptr, KVH_DT_I64, {37});
  ASSERT_EQ(reg.find("past")->write(&a, nullptr), 0);
  EXPECT_EQ(got, 37);
  // Known-bad: a caller whose struct is smaller than the callee's is refused, not misread.
  a.struct_size = offsetof(kvh_write_args, slot_mapping);
  EXPECT_EQ(reg.find("past")->write(&a, nullptr), 1);
}

// A provider built against an older, smaller descriptor (no last_error, no
// capabilities) hands out arrays with its own stride; what lies past its
// struct_size is not read.
constexpr uint32_t kOldDescSize = offsetof(kvh_kernel_desc, last_error);

int open_old(const kvh_open_args* args, kvh_provider* out) {
  static std::vector<unsigned char> storage;
  static int64_t one = 1;
  storage.assign(2 * kOldDescSize, 0);
  for (int i = 0; i < 2; ++i) {
    kvh_kernel_desc d = writer(i == 0 ? "old_a" : "old_b", &one);
    d.struct_size = kOldDescSize;
    d.capabilities = reinterpret_cast<const kvh_capabilities*>(0x1);  // past struct_size: must be ignored
    std::memcpy(storage.data() + i * kOldDescSize, &d, kOldDescSize);
  }
  out->num_kernels = 2;
  out->kernels = reinterpret_cast<const kvh_kernel_desc*>(storage.data());
  if (std::strcmp(args->config, "ok") == 0) return 0;
  std::snprintf(args->error, args->error_size, "bad config '%s'", args->config);
  return 3;
}

TEST(RegistryAbi2, DescriptorsOfASmallerStructAreWalkedWithTheirOwnStride) {
  Registry reg;
  reg.add_provider(open_old, "ok", "old");
  const Kernel* a = reg.find("old_a");
  const Kernel* b = reg.find("old_b");
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(b->last_error_fn, nullptr);
  EXPECT_TRUE(b->caps.head_sizes.empty());
  EXPECT_EQ(b->caps.dtypes, (1u << KVH_DT_F16) | (1u << KVH_DT_BF16));
}

TEST(RegistryAbi2, AFailedOpenIsAProviderLoadErrorWithTheProvidersMessage) {
  Registry reg;
  try {
    reg.add_provider(open_old, "nope", "old");
    FAIL();
  } catch (const ProviderLoadError& e) {
    EXPECT_EQ(std::string(e.what()), "old: bad config 'nope'");
  }
}

// ---- ragged queries (kvharness 0.4) ----

int no_attention(void*, const kvh_attention_args*, void*) { return 0; }
int two_workspaces(void*, const kvh_attention_args*, kvh_workspace_spec* specs, int32_t max, int32_t* count) {
  if (max < 2) return KVH_RAISED;
  specs[0] = kvh_workspace_spec{KVH_DT_F32, 2, {3, 5}, "segm_max"};
  specs[1] = kvh_workspace_spec{KVH_DT_I32, 1, {7}, "counts"};
  *count = 2;
  return 0;
}
int bad_workspace(void*, const kvh_attention_args*, kvh_workspace_spec* specs, int32_t, int32_t* count) {
  specs[0] = kvh_workspace_spec{KVH_DT_F32, 0, {}, "flat"};  // ndim 0
  *count = 1;
  return 0;
}

// A provider built against 0.3's header: its descriptor and capabilities end before the 0.4
// fields, whatever lies beyond (here: garbage) is not read. It is decode only, no typed workspaces.
TEST(RegistryRagged, ADescriptorOfKvharness03IsDecodeOnly) {
  static kvh_capabilities caps;
  std::memset(static_cast<void*>(&caps), 0xFF, sizeof(caps));
  caps.struct_size = uint32_t(offsetof(kvh_capabilities, max_query_len));
  caps.num_head_sizes = caps.num_block_sizes = 0, caps.dtypes = 0, caps.cache_formats = 0, caps.max_gqa_ratio = 0;
  caps.cache_dtypes = caps.kv_scales = caps.modifiers = 0;
  kvh_kernel_desc d{};
  std::memset(static_cast<void*>(&d), 0xFF, sizeof(d));
  d.struct_size = uint32_t(offsetof(kvh_kernel_desc, workspaces));
  d.abi_version = 2, d.name = "old_reader", d.description = "", d.role = KVH_ROLE_READER;
  d.cache_format = KVH_CACHE_NHD, d.fixture = 0, d.context = nullptr, d.write = nullptr;
  d.attention = no_attention, d.workspace_bytes = nullptr, d.last_error = nullptr, d.capabilities = &caps;
  Registry reg;
  reg.add(d, "old");
  const Kernel& k = *reg.find("old_reader");
  EXPECT_EQ(k.caps.max_query_len, 1);
  EXPECT_FALSE(k.workspaces);
  KernelUse u;
  u.head_size = 128, u.block_size = 16, u.num_heads = 8, u.num_kv_heads = 2, u.cache_format = KVH_CACHE_NHD;
  EXPECT_EQ(k.outside_capabilities(u), "");
  u.max_query_len = 8;
  EXPECT_EQ(k.outside_capabilities(u),
            "old_reader is a decode-only reader (max_query_len 1); this case has up to 8 query tokens per sequence");
}

TEST(RegistryRagged, TypedWorkspacesAreReadAndCheckedByEntry) {
  static kvh_capabilities caps{};
  caps.max_query_len = 16;
  caps.modifiers = KVH_MOD_NON_CAUSAL;
  kvh_kernel_desc d{};
  d.abi_version = KVH_ABI_VERSION, d.name = "typed", d.role = KVH_ROLE_READER, d.cache_format = KVH_CACHE_NHD;
  d.attention = no_attention, d.workspaces = two_workspaces, d.capabilities = &caps;
  kvh_kernel_desc bad = d;
  bad.name = "bad_typed", bad.workspaces = bad_workspace;
  Registry reg;
  reg.add(d, "test");
  reg.add(bad, "test");
  const Kernel& k = *reg.find("typed");
  EXPECT_EQ(k.caps.max_query_len, 16);
  kvh_attention_args a{};
  const std::vector<kvh_workspace_spec> specs = k.workspaces(&a);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_STREQ(specs[0].name, "segm_max");
  EXPECT_EQ(specs[1].shape[0], 7);
  KernelUse u;
  u.head_size = 128, u.block_size = 16, u.num_heads = 8, u.num_kv_heads = 2, u.max_query_len = 17;
  EXPECT_EQ(k.outside_capabilities(u), "typed declares max_query_len 16; this case has up to 17 query tokens per sequence");
  u.max_query_len = 16, u.modifiers = KVH_MOD_NON_CAUSAL;
  EXPECT_EQ(k.outside_capabilities(u), "");
  try {
    reg.find("bad_typed")->workspaces(&a);
    FAIL() << "ndim 0 accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "workspaces: entry 0 ('flat'): ndim 0 outside 1..6");
  }
}

// ---- issue 22 (C): split plans (kvh_kernel_desc.plan, kvharness 0.6) ----
int one_plan(void*, const kvh_plan_args* a, kvh_plan* out) {
  static const int32_t splits[4] = {1, 2, 3, 4};
  out->num_tensors = 1;
  out->specs[0] = kvh_workspace_spec{};
  out->specs[0].dtype = KVH_DT_I32, out->specs[0].ndim = 1, out->specs[0].shape[0] = a->num_seqs;
  std::strcpy(out->specs[0].name, "num_splits");
  out->data[0] = splits;
  return a->num_seqs > 4 ? KVH_RAISED : 0;
}
int too_many_plans(void*, const kvh_plan_args*, kvh_plan* out) {
  out->num_tensors = KVH_MAX_PLAN_TENSORS + 1;
  return 0;
}

// The planner is read only within the descriptor's struct_size, and its plan is checked.
TEST(RegistryPlan, PlannerReadWithinStructSizeAndItsPlanChecked) {
  kvh_kernel_desc d{};
  d.abi_version = KVH_ABI_VERSION, d.name = "planned", d.role = KVH_ROLE_READER, d.cache_format = KVH_CACHE_MLA;
  d.attention = no_attention, d.plan = one_plan;
  kvh_kernel_desc old = d;
  old.name = "old_planned";
  old.struct_size = uint32_t(offsetof(kvh_kernel_desc, plan));  // a kvharness 0.5 descriptor: no plan field
  kvh_kernel_desc many = d;
  many.name = "too_many", many.plan = too_many_plans;
  Registry reg(Registry::NoBuiltins{});
  reg.add(d, "test");
  reg.add(old, "test");
  reg.add(many, "test");
  EXPECT_FALSE(reg.find("old_planned")->plan);
  const Kernel& k = *reg.find("planned");
  ASSERT_TRUE(k.plan);
  kvh_plan_args a{};
  a.num_seqs = 3;
  const kvh_plan p = k.plan(&a);
  ASSERT_EQ(p.num_tensors, 1);
  EXPECT_EQ(static_cast<const int32_t*>(p.data[0])[2], 3);
  a.num_seqs = 5;
  EXPECT_THROW(k.plan(&a), PlannerFailed);
  try {
    reg.find("too_many")->plan(&a);
    FAIL() << "9 plan tensors accepted";
  } catch (const PlannerFailed& e) {
    EXPECT_EQ(std::string(e.what()), "planner: num_tensors 9 outside 0..8");
  }
}

// ---- capabilities ----

TEST(Capabilities, EveryDeclaredDimensionIsChecked) {
  static const int32_t heads[] = {128}, blocks[] = {16, 32};
  kvh_capabilities caps{};
  caps.head_sizes = heads;
  caps.num_head_sizes = 1;
  caps.block_sizes = blocks;
  caps.num_block_sizes = 2;
  caps.dtypes = 1u << KVH_DT_BF16;
  caps.max_gqa_ratio = 8;
  kvh_kernel_desc d = writer("capable", nullptr);
  d.capabilities = &caps;
  Registry reg;
  reg.add(d, "test");
  const Kernel& k = *reg.find("capable");
  KernelUse ok;
  ok.head_size = 128, ok.block_size = 32, ok.num_heads = 16, ok.num_kv_heads = 2, ok.dtype = KVH_DT_BF16;
  ok.cache_format = KVH_CACHE_NHD;
  EXPECT_EQ(k.outside_capabilities(ok), "");
  auto bad = [&](auto mutate, const char* expect) {
    KernelUse u = ok;
    mutate(u);
    const std::string why = k.outside_capabilities(u);
    EXPECT_NE(why.find(expect), std::string::npos) << why;
  };
  bad([](KernelUse& u) { u.head_size = 64; }, "declares head_size 128 only; this case has head_size 64");
  bad([](KernelUse& u) { u.block_size = 544; }, "declares block_size 16, 32 only; this case has block_size 544");
  bad([](KernelUse& u) { u.dtype = KVH_DT_F16; }, "declares dtype bf16 only; this case has fp16");
  bad([](KernelUse& u) { u.num_heads = 32; }, "GQA ratio of at most 8; this case has 16");
  bad([](KernelUse& u) { u.cache_format = KVH_CACHE_SHUFFLE; }, "declares cache format flash; this case needs shuffle");
  // fp8 caches and scales: not declared, so outside.
  bad([](KernelUse& u) { u.cache_dtype = KVH_DT_FP8_E4M3FNUZ; },
      "declares cache dtype bf16 only; this case has a fp8_e4m3fnuz cache");
  bad([](KernelUse& u) { u.kv_scales = KVH_SCALES_TOKEN; }, "does not declare kv_scales token");
  KernelUse same = ok;
  same.cache_dtype = KVH_DT_BF16;  // the K/V dtype itself is always in
  EXPECT_EQ(k.outside_capabilities(same), "");
  caps.cache_dtypes = (1u << KVH_DT_BF16) | (1u << KVH_DT_FP8_E4M3FN);
  caps.kv_scales = 1u << KVH_SCALES_HEAD;
  kvh_kernel_desc d2 = writer("capable_fp8", nullptr);
  d2.capabilities = &caps;
  reg.add(d2, "test");
  const Kernel& k2 = *reg.find("capable_fp8");
  KernelUse fp8 = ok;
  fp8.cache_dtype = KVH_DT_FP8_E4M3FN;
  fp8.kv_scales = KVH_SCALES_HEAD;
  EXPECT_EQ(k2.outside_capabilities(fp8), "");
  fp8.kv_scales = KVH_SCALES_BLOCK;
  EXPECT_NE(k2.outside_capabilities(fp8).find("does not declare kv_scales block"), std::string::npos);
  fp8.kv_scales = KVH_SCALES_HEAD;
  fp8.cache_dtype = KVH_DT_FP8_E4M3FNUZ;
  EXPECT_NE(k2.outside_capabilities(fp8).find("declares cache dtype bf16, fp8_e4m3fn only"), std::string::npos)
      << k2.outside_capabilities(fp8);
}

// Issue 25 (item 11): `kvharness info` shows each kernel's declaration in one line.
TEST(Capabilities, SummaryNamesWhatIsDeclaredAndOnlyThat) {
  static const int32_t heads[] = {64, 128}, blocks[] = {16};
  kvh_capabilities caps{};
  caps.head_sizes = heads, caps.num_head_sizes = 2;
  caps.block_sizes = blocks, caps.num_block_sizes = 1;
  caps.dtypes = 1u << KVH_DT_F16;
  caps.cache_dtypes = (1u << KVH_DT_F16) | (1u << KVH_DT_FP8_E4M3FN);
  caps.kv_scales = (1u << KVH_SCALES_NONE) | (1u << KVH_SCALES_TENSOR);
  caps.max_gqa_ratio = 8;
  kvh_kernel_desc d = writer("declared", nullptr);
  d.capabilities = &caps;
  Registry reg;
  reg.add(d, "test");
  EXPECT_EQ(reg.find("declared")->capability_summary(),
            "fp16; head_size 64, 128; block_size 16; cache fp8_e4m3fn; kv_scales tensor; gqa <= 8");
  const std::string flash = reg.find("reshape_and_cache_flash")->capability_summary();
  EXPECT_EQ(flash.rfind("fp16, bf16; head_size any; block_size any; cache fp8_e4m3fn", 0), 0u) << flash;
  const std::string pa = reg.find("paged_attention_v1")->capability_summary();
  EXPECT_EQ(pa.rfind("fp16, bf16; head_size multiples of 8 up to 256; block_size any", 0), 0u) << pa;
  const std::string mla = reg.find("mla_decode")->capability_summary();  // 80 head sizes, one run
  EXPECT_NE(mla.find("head_size 8..640 by 8;"), std::string::npos) << mla;
}

TEST(Capabilities, DefaultsAreMultiplesOf8UpTo256ForReadersAndFp16Bf16) {
  Registry reg;
  KernelUse w;
  w.head_size = 68, w.block_size = 16, w.num_heads = 4, w.num_kv_heads = 1, w.dtype = KVH_DT_F16;
  EXPECT_EQ(reg.find("reshape_and_cache_flash")->outside_capabilities(w), "") << "writers: any head size";
  const Kernel& k = *reg.find("paged_attention_v1");
  KernelUse u;
  u.cache_format = KVH_CACHE_PA_V1;
  u.head_size = 256, u.block_size = 544, u.num_heads = 64, u.num_kv_heads = 1, u.dtype = KVH_DT_BF16;
  EXPECT_EQ(k.outside_capabilities(u), "");
  u.head_size = 260;
  EXPECT_NE(k.outside_capabilities(u), "");
  u.head_size = 100;
  EXPECT_NE(k.outside_capabilities(u), "");
}

// Issue 12: the HND cache format is a format a kernel may declare; one past it is not.
TEST(RegistryAbi2, HndIsAFormatAndTheBuiltinsServeIt) {
  Registry reg;
  kvh_kernel_desc d = writer("hnd_writer", nullptr);
  d.cache_format = KVH_CACHE_HND;
  reg.add(d, "test");
  EXPECT_STREQ(cache_format_name(reg.find("hnd_writer")->cache_format), "hnd");
  d.name = "format_5";
  d.cache_format = KVH_CACHE_MLA + 1;  // kvharness 0.6 made 4 the mla format: 5 is the first unknown
  EXPECT_THROW(reg.add(d, "test"), ProviderLoadError);
  for (const char* name : {"paged_attention_hnd", "reshape_and_cache_flash_hnd"})
    EXPECT_EQ(reg.find(name)->cache_format, KVH_CACHE_HND) << name;
  EXPECT_EQ(reg.find("paged_attention_nhd")->cache_format, KVH_CACHE_NHD);
  EXPECT_TRUE(reg.find("fixture_paged_attention_nhd_manager_pages")->fixture);
}

}  // namespace
}  // namespace kvh
