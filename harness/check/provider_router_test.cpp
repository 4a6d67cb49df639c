// A provider's router (KVH_ROLE_ROUTER, kvharness 0.5) used wherever a
// built-in policy is: a case's router, expect_routed_to judged by it,
// --replace-router, its errors (CRASH) and an unknown routed kernel (misroute).
// The fake router here is aiter's rule after b4885d2 (head_size != 128 ->
// paged_attention_rocm), or that rule without the head-size test.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "case/attention_case.h"
#include "registry/provider_router.h"
#include "router/router.h"

namespace kvh {
namespace {

enum class Mode { fixed, no_head_size_test, raises, unknown_kernel, empty };

struct FakeRouter {
  Mode mode = Mode::fixed;
  kvh_route_args last{};  // what the harness passed last
  std::string target;     // last.target, copied during the call
  std::string error;
};

void put(char* dst, size_t n, const std::string& s) { std::snprintf(dst, n, "%s", s.c_str()); }

int fake_route(void* ctx, const kvh_route_args* a, kvh_route_result* out) {
  auto* f = static_cast<FakeRouter*>(ctx);
  f->last = *a;
  f->target = a->target ? a->target : "(null)";
  if (f->mode == Mode::raises) return f->error = "ValueError: no kernel for this step (dispatch.py:12)", KVH_RAISED;
  if (f->mode == Mode::empty) return 0;
  if (f->mode == Mode::unknown_kernel) return put(out->kernel, sizeof out->kernel, "pa_ragged_asm_v9"), 0;
  if (f->mode == Mode::fixed && a->head_size != 128)
    return put(out->kernel, sizeof out->kernel, "paged_attention_rocm"), put(out->reason, sizeof out->reason, "fake: head_size != 128"), 0;
  const bool asm_kernel = a->num_seqs * a->num_heads > 2 * a->compute_units;
  put(out->kernel, sizeof out->kernel, asm_kernel ? "pa_fwd_asm" : "paged_attention_rocm");
  put(out->reason, sizeof out->reason, "fake: by num_seqs*num_heads");
  return 0;
}
const char* fake_error(void* ctx) { return static_cast<FakeRouter*>(ctx)->error.c_str(); }

kvh_kernel_desc router_desc(const char* name, FakeRouter* f) {
  kvh_kernel_desc d{};
  d.abi_version = KVH_ABI_VERSION;
  d.name = name;
  d.description = "a fake stack dispatcher";
  d.role = KVH_ROLE_ROUTER;
  d.context = f;
  d.route = fake_route;
  d.last_error = fake_error;
  return d;
}

// Head size 256 at a large batch (4 heads * 8 seqs = 32 > 2 * 8 CUs): the PR thread's misroute.
Case large_batch(const std::string& router, int64_t head_size, const std::string& expect) {
  Case c;
  c.kind = CaseKind::Attention;
  c.model = "test";
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_size = head_size;
  c.layout = Scheme::KvFirst;
  c.block_size = 16;
  c.batch_size = 8;
  c.context_len_min = 1;
  c.context_len_max = 100;
  c.dtype = DType::BF16;
  c.router_policy = router;
  c.target = "cus=8";
  c.expect_routed_to = expect;
  return c;
}

struct ProviderRouter : ::testing::Test {
  FakeRouter fake;
  Registry reg;
  void SetUp() override { reg.add(router_desc("fake_aiter", &fake), "test"); }
  void TearDown() override { routing::substitute_policy("aiter-b4885d2", "aiter-b4885d2"); }
};

TEST_F(ProviderRouter, IsAPolicyOfItsRegistryOnly) {
  ASSERT_EQ(reg.routers().size(), 1u);
  EXPECT_EQ(reg.routers()[0].name, "fake_aiter");
  EXPECT_EQ(routing::canonical_policy("fake_aiter"), "fake_aiter");
  EXPECT_EQ(reg.find("fake_aiter"), nullptr) << "a router is not a kernel";
  {
    FakeRouter other;
    Registry second(Registry::NoBuiltins{});
    second.add(router_desc("fake_other", &other), "test");
    EXPECT_EQ(routing::canonical_policy("fake_other"), "fake_other");
  }
  EXPECT_EQ(routing::canonical_policy("fake_other"), "") << "its Registry is gone: so is the policy";
}

TEST_F(ProviderRouter, GetsTheCasesRoutingInputs) {
  Case c = large_batch("fake_aiter", 128, "");
  c.target = "MI355X";
  c.kv_cache_dtype = KvCacheDType::Fp8E4m3fnuz;
  c.kv_scales = KvScales::Tensor;
  c.context_lens = {100, 7, 1, 3, 5, 9, 11, 13};
  c.context_len_min = c.context_len_max = 0;
  (void)run_decode_case(c, reg, DecodeOptions{});
  const kvh_route_args& a = fake.last;
  EXPECT_EQ(a.struct_size, sizeof(kvh_route_args));
  EXPECT_EQ(a.num_seqs, 8);
  EXPECT_EQ(a.num_heads, 4);
  EXPECT_EQ(a.num_kv_heads, 2);
  EXPECT_EQ(a.head_size, 128);
  EXPECT_EQ(a.block_size, 16);
  EXPECT_EQ(a.num_query_tokens, 8);
  EXPECT_EQ(a.max_query_len, 1);
  EXPECT_EQ(a.max_context_len, 100);
  EXPECT_EQ(a.compute_units, 256);
  EXPECT_EQ(a.dtype, KVH_DT_BF16);
  EXPECT_EQ(a.cache_dtype, KVH_DT_FP8_E4M3FNUZ);
  EXPECT_EQ(a.kv_scales, KVH_SCALES_TENSOR);
  EXPECT_EQ(a.cache_format, -1);
  EXPECT_EQ(a.high_precision, 1);
  EXPECT_EQ(a.causal, 1);
  EXPECT_EQ(fake.target, "MI355X");
}

TEST_F(ProviderRouter, JudgesTheStatedRoute) {
  const CaseResult pass = run_decode_case(large_batch("fake_aiter", 256, "paged_attention_rocm"), reg, DecodeOptions{});
  EXPECT_EQ(pass.v.status, Status::Pass) << pass.v.detail;
  EXPECT_EQ(pass.routed_to, "paged_attention_rocm");
  EXPECT_EQ(pass.route_reason, "fake: head_size != 128 -> paged_attention_rocm");
  fake.mode = Mode::no_head_size_test;  // the rule before b4885d2: 256 goes to the 128-only kernel
  const CaseResult fail = run_decode_case(large_batch("fake_aiter", 256, "paged_attention_rocm"), reg, DecodeOptions{});
  EXPECT_EQ(fail.v.status, Status::Fail);
  EXPECT_EQ(fail.v.component, "router");
  EXPECT_EQ(fail.v.reason, "misroute");
  EXPECT_EQ(fail.routed_to, "pa_fwd_asm");
  EXPECT_NE(fail.v.detail.find("router fake_aiter sent the case to pa_fwd_asm"), std::string::npos) << fail.v.detail;
  // Unstated: the capabilities still catch it (pa_fwd_asm declares head_size 128 only).
  const CaseResult caps = run_decode_case(large_batch("fake_aiter", 256, ""), reg, DecodeOptions{});
  EXPECT_EQ(caps.v.reason, "misroute") << caps.v.detail;
  EXPECT_NE(caps.v.detail.find("head_size 128"), std::string::npos) << caps.v.detail;
}

TEST_F(ProviderRouter, ARaisedRouterIsACrashWithItsMessage) {
  fake.mode = Mode::raises;
  const CaseResult r = run_decode_case(large_batch("fake_aiter", 128, ""), reg, DecodeOptions{});
  EXPECT_EQ(r.v.status, Status::Crash);
  EXPECT_EQ(r.v.component, "router");
  EXPECT_EQ(r.v.detail, "router fake_aiter raised: ValueError: no kernel for this step (dispatch.py:12)");
  fake.mode = Mode::empty;
  const CaseResult e = run_decode_case(large_batch("fake_aiter", 128, ""), reg, DecodeOptions{});
  EXPECT_EQ(e.v.status, Status::Crash);
  EXPECT_EQ(e.v.detail, "router fake_aiter returned no kernel name");
}

TEST_F(ProviderRouter, AnUnknownKernelIsAMisrouteNamingIt) {
  fake.mode = Mode::unknown_kernel;
  const CaseResult r = run_decode_case(large_batch("fake_aiter", 128, ""), reg, DecodeOptions{});
  EXPECT_EQ(r.v.status, Status::Fail);
  EXPECT_EQ(r.v.reason, "misroute");
  EXPECT_NE(r.v.detail.find("'pa_ragged_asm_v9'"), std::string::npos) << r.v.detail;
  EXPECT_NE(r.v.detail.find("no decode-attention reader of that name"), std::string::npos) << r.v.detail;
}

TEST_F(ProviderRouter, ReplacesABuiltInPolicy) {
  fake.mode = Mode::no_head_size_test;
  routing::substitute_policy("aiter-v0.1.12", "fake_aiter");  // --replace-router aiter-v0.1.12=fake_aiter
  const CaseResult r = run_decode_case(large_batch("aiter-v0.1.12", 256, ""), reg, DecodeOptions{});
  EXPECT_EQ(r.routed_to, "pa_fwd_asm");
  EXPECT_EQ(r.v.status, Status::Fail) << "judged as aiter-v0.1.12, not a fixture";
  EXPECT_EQ(r.route_reason, "fake_aiter: fake: by num_seqs*num_heads -> pa_fwd_asm") << "the substitute is named";
  routing::substitute_policy("aiter-v0.1.12", "aiter-v0.1.12");
  const CaseResult back = run_decode_case(large_batch("aiter-v0.1.12", 256, ""), reg, DecodeOptions{});
  EXPECT_EQ(back.v.status, Status::Pass) << back.v.detail;
}

TEST(ProviderRouterLoad, MalformedRoutersAreRefusedByName) {
  FakeRouter f;
  Registry reg(Registry::NoBuiltins{});
  kvh_kernel_desc no_entry = router_desc("fake_no_entry", &f);
  no_entry.route = nullptr;
  EXPECT_THROW(
      try { reg.add(no_entry, "t"); } catch (const ProviderLoadError& e) {
        EXPECT_NE(std::string(e.what()).find("router 'fake_no_entry' has no route entry"), std::string::npos);
        throw;
      },
      ProviderLoadError);
  // A descriptor of kvharness 0.4 (no route field within struct_size) cannot be a router.
  kvh_kernel_desc old = router_desc("fake_old", &f);
  old.struct_size = offsetof(kvh_kernel_desc, route);
  EXPECT_THROW(reg.add(old, "t"), ProviderLoadError);
  EXPECT_THROW(reg.add(router_desc("aiter-v0.1.12", &f), "t"), ProviderLoadError) << "a built-in policy's name";
  kvh_kernel_desc fixture = router_desc("bad_router", &f);
  fixture.fixture = 1;
  EXPECT_THROW(reg.add(fixture, "t"), ProviderLoadError) << "a fixture must say so in its name";
  reg.add(router_desc("fake_twice", &f), "t");
  EXPECT_THROW(reg.add(router_desc("fake_twice", &f), "t"), ProviderLoadError);
}

TEST(ProviderRouterArgs, DefaultsFollowRouteInput) {
  routing::RouteInput in{3, 8, 64, routing::CacheDtype::fp16, 1, 304};
  const kvh_route_args a = to_route_args(in);
  EXPECT_EQ(a.num_kv_heads, 8);
  EXPECT_EQ(a.num_query_tokens, 3);
  EXPECT_EQ(a.dtype, KVH_DT_F16);
  EXPECT_EQ(a.cache_dtype, KVH_DT_F16);
  EXPECT_EQ(a.cache_format, -1);
}

}  // namespace
}  // namespace kvh
