// Call-time refusal (KVH_UNSUPPORTED, kvharness 0.5; kvharness.Unsupported in Python): a kernel
// that declines a case when called is judged as one outside its declared capabilities
// (capabilities_test.cpp): UNSUPPORTED with its reason when the case names it, misroute when a
// router picked it, XPASS when a declaration expected the case to fail. The contrast that proves
// the checks can fail: the same kernel returning KVH_RAISED is a CRASH, and inside its limits it PASSes.
#include <gtest/gtest.h>

#include <string>

#include "case/attention_case.h"
#include "case/write_case.h"
#include "check/expectations.h"
#include "registry/kernel_desc.h"

extern "C" int kvh_paged_attention_rocm(const kvh_attention_args*, void*);
extern "C" uint64_t kvh_paged_attention_workspace_bytes(const kvh_attention_args*);
extern "C" int kvh_reshape_and_cache_shuffle(const kvh_write_args*, void*);

namespace kvh {
namespace {

using kernels::base_desc;

thread_local std::string g_reason;
const char* reason_of(void*) { return g_reason.c_str(); }

// The built-in shuffle reader, declining every head size but 128 (a limit like "power of two only").
int reader_128_only(void*, const kvh_attention_args* a, void* stream) {
  if (a->query.shape[2] != 128) {
    g_reason = "head_size " + std::to_string(a->query.shape[2]) + " is not 128";
    return KVH_UNSUPPORTED;
  }
  return kvh_paged_attention_rocm(a, stream);
}
int reader_raises(void*, const kvh_attention_args*, void*) {
  g_reason = "planted: out of shared memory";
  return KVH_RAISED;
}
int workspace_refuses(void*, const kvh_attention_args*, uint64_t* bytes) {
  *bytes = 0;
  g_reason = "planted: no split-K plan for this case";
  return KVH_UNSUPPORTED;
}
int typed_workspaces_refuse(void*, const kvh_attention_args*, kvh_workspace_spec*, int32_t, int32_t* count) {
  *count = 0;
  g_reason = "planted: no typed workspaces for this case";
  return KVH_UNSUPPORTED;
}
int workspace_ok(void*, const kvh_attention_args* a, uint64_t* bytes) {
  *bytes = kvh_paged_attention_workspace_bytes(a);
  return 0;
}
// The built-in shuffle writer, declining every block size but 16.
int writer_bs16_only(void*, const kvh_write_args* a, void* stream) {
  if (a->block_size != 16) {
    g_reason = "block_size " + std::to_string(a->block_size) + " needs more shared memory than the device has";
    return KVH_UNSUPPORTED;
  }
  return kvh_reshape_and_cache_shuffle(a, stream);
}

// Planted: damage first, then decline. A refusal must not hide what the checks would see.
int writer_scribbles_input_then_refuses(void*, const kvh_write_args* a, void*) {
  static_cast<uint16_t*>(a->key.data)[0] ^= 0x5555;  // its key input
  g_reason = "planted: declined after writing its input";
  return KVH_UNSUPPORTED;
}
int writer_writes_before_cache_then_refuses(void*, const kvh_write_args* a, void*) {
  static_cast<uint16_t*>(a->key_cache.data)[-1] = 0x3C00;  // the element before K's view
  g_reason = "planted: declined after writing outside the view";
  return KVH_UNSUPPORTED;
}
int reader_scribbles_cache_then_refuses(void*, const kvh_attention_args* a, void*) {
  static_cast<uint16_t*>(a->value_cache.data)[3] ^= 0x5555;  // a reader writes no cache
  g_reason = "planted: declined after writing the cache";
  return KVH_UNSUPPORTED;
}

const int32_t kBlock32[] = {32};

kvh_kernel_desc reader(const char* name, kvh_attention_fn fn, kvh_workspace_fn ws = workspace_ok,
                       const kvh_capabilities* caps = nullptr) {
  kvh_kernel_desc d = base_desc(name, "refusal test reader", KVH_ROLE_READER, KVH_CACHE_SHUFFLE, 0, caps);
  d.attention = fn;
  d.workspace_bytes = ws;
  d.last_error = reason_of;
  return d;
}

// paged_attention_rocm (the router's pick for small batches) declining head sizes but 128, beside
// readers that raise or decline in their sizing, a writer that declines block sizes but 16, and a
// substitute `my_pa` declaring block_size 32 only.
Registry refusing_registry() {
  static kvh_capabilities bs32 = [] {
    kvh_capabilities c{};
    c.block_sizes = kBlock32;
    c.num_block_sizes = 1;
    return c;
  }();
  Registry reg{Registry::NoBuiltins{}};
  reg.add(reader("paged_attention_rocm", reader_128_only), "test");
  reg.add(reader("raises", reader_raises), "test");
  reg.add(reader("ws_refuses", reader_128_only, workspace_refuses), "test");
  kvh_kernel_desc typed = reader("typed_refuses", reader_128_only, nullptr);
  typed.workspaces = typed_workspaces_refuse;
  reg.add(typed, "test");
  reg.add(reader("my_pa", reader_128_only, workspace_ok, &bs32), "test");
  kvh_kernel_desc w = base_desc("shuffle_bs16_only", "refusal test writer", KVH_ROLE_WRITER, KVH_CACHE_SHUFFLE, 0,
                                nullptr);
  w.write = writer_bs16_only;
  w.last_error = reason_of;
  reg.add(w, "test");
  for (auto [name, fn] : {std::pair<const char*, kvh_write_fn>{"scribbles_input", writer_scribbles_input_then_refuses},
                          {"writes_before_cache", writer_writes_before_cache_then_refuses}}) {
    kvh_kernel_desc bad = base_desc(name, "refusal test writer: damage, then decline", KVH_ROLE_WRITER,
                                    KVH_CACHE_SHUFFLE, 0, nullptr);
    bad.write = fn;
    bad.last_error = reason_of;
    reg.add(bad, "test");
  }
  reg.add(reader("scribbles_cache", reader_scribbles_cache_then_refuses), "test");
  return reg;
}

Case decode(int64_t head_size, const std::string& reader_name) {
  Case c;
  c.kind = CaseKind::Attention;
  c.model = "test";
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_size = head_size;
  c.layout = Scheme::KvFirst;
  c.block_size = 16;
  c.batch_size = 2;
  c.context_len_min = 30;
  c.context_len_max = 90;
  c.dtype = DType::F16;
  c.reader = reader_name;
  c.seed = 3;
  return c;
}

// 40 tokens into an interleaved shuffle cache of 16-token pages.
Case write(const std::string& writer) {
  Case w;
  w.kind = CaseKind::Write;
  w.model = "test";
  w.num_heads = 4;
  w.num_kv_heads = 2;
  w.head_size = 128;
  w.layout = Scheme::Interleaved;
  w.batch_size = 40;
  w.block_size = 16;
  w.writer = writer;
  w.seed = 7;
  return w;
}

Case routed(int64_t head_size) {
  Case c = decode(head_size, "");
  c.router_policy = "aiter-v0.1.12";  // small batch: paged_attention_rocm
  c.target = "cus=8";
  return c;
}

TEST(CallTimeRefusal, ANamedReaderThatDeclinesIsUnsupportedWithItsReason) {
  const Registry reg = refusing_registry();
  const CaseResult ok = run_decode_case(decode(128, "paged_attention_rocm"), reg, {});
  EXPECT_EQ(ok.v.status, Status::Pass) << ok.v.detail;  // inside its limit the kernel runs and passes
  const CaseResult r = run_decode_case(decode(96, "paged_attention_rocm"), reg, {});
  EXPECT_EQ(r.v.status, Status::Unsupported) << r.v.detail;
  EXPECT_EQ(r.v.reason, "unsupported_config");
  EXPECT_EQ(r.v.detail, "paged_attention_rocm refused the case at call time: head_size 96 is not 128");
  EXPECT_FALSE(r.unexpected_failure());
}

TEST(CallTimeRefusal, KvhRaisedStaysACrash) {
  const CaseResult r = run_decode_case(decode(128, "raises"), refusing_registry(), {});
  EXPECT_EQ(r.v.status, Status::Crash) << r.v.detail;
  EXPECT_EQ(r.v.detail, "raises raised: planted: out of shared memory");
}

TEST(CallTimeRefusal, ARoutedReaderThatDeclinesIsAMisroute) {
  const Registry reg = refusing_registry();
  EXPECT_EQ(run_decode_case(routed(128), reg, {}).v.status, Status::Pass);
  const CaseResult r = run_decode_case(routed(96), reg, {});
  EXPECT_EQ(r.routed_to, "paged_attention_rocm");
  EXPECT_EQ(r.v.status, Status::Fail) << r.v.detail;
  EXPECT_EQ(r.v.reason, "misroute");
  EXPECT_EQ(r.v.component, "router");
  EXPECT_NE(r.v.detail.find("router aiter-v0.1.12 sent the case to paged_attention_rocm"), std::string::npos)
      << r.v.detail;
  EXPECT_NE(r.v.detail.find("refused the case at call time: head_size 96 is not 128"), std::string::npos)
      << r.v.detail;
  EXPECT_TRUE(r.unexpected_failure());
  // The route the case file expects, to a kernel that then declines: still a misroute, never green.
  Case expected = routed(96);
  expected.expect_routed_to = "paged_attention_rocm";
  const CaseResult e = run_decode_case(expected, reg, {});
  EXPECT_EQ(e.v.status, Status::Fail) << e.v.detail;
  EXPECT_EQ(e.v.reason, "misroute");
}

TEST(CallTimeRefusal, WorkspaceSizingThatDeclinesIsUnsupported) {
  const Registry reg = refusing_registry();
  const CaseResult r = run_decode_case(decode(128, "ws_refuses"), reg, {});
  EXPECT_EQ(r.v.status, Status::Unsupported) << r.v.detail;
  EXPECT_EQ(r.v.detail, "ws_refuses refused the case at call time: planted: no split-K plan for this case");
  const CaseResult t = run_decode_case(decode(128, "typed_refuses"), reg, {});
  EXPECT_EQ(t.v.status, Status::Unsupported) << t.v.detail;
  EXPECT_EQ(t.v.detail, "typed_refuses refused the case at call time: planted: no typed workspaces for this case");
}

TEST(CallTimeRefusal, AWriterThatDeclinesIsUnsupportedInWriteAndPipelineCases) {
  const Registry reg = refusing_registry();
  Case w = write("shuffle_bs16_only");
  EXPECT_EQ(run_write_case(w, reg).v.status, Status::Pass);
  w.block_size = 32;
  const CaseResult r = run_write_case(w, reg);
  EXPECT_EQ(r.v.status, Status::Unsupported) << r.v.detail;
  EXPECT_EQ(r.v.detail,
            "shuffle_bs16_only refused the case at call time: block_size 32 needs more shared memory than the device "
            "has");
  Case p = decode(128, "paged_attention_rocm");
  p.kind = CaseKind::Pipeline;
  p.writer = "shuffle_bs16_only";
  p.block_size = 32;
  const CaseResult pr = run_decode_case(p, reg, {});
  EXPECT_EQ(pr.v.status, Status::Unsupported) << pr.v.detail;
  EXPECT_NE(pr.v.detail.find("shuffle_bs16_only refused the case at call time"), std::string::npos) << pr.v.detail;
}

// Strict like a declaration: a case declared to fail that the kernel declines shows no failure: XPASS.
TEST(CallTimeRefusal, ADeclaredFailureThatIsDeclinedIsXpass) {
  const Registry reg = refusing_registry();
  const Case c = decode(96, "paged_attention_rocm");
  ExpectedFailure d;
  d.ids = {c.id()};
  d.component = "reader";
  d.why = "a bug we track";
  d.source = "t.toml:3";
  CaseResult r = run_decode_case(c, reg, {});
  judge_expectations(r, reg, {d});
  EXPECT_EQ(r.v.status, Status::Xpass) << r.v.detail;
  EXPECT_NE(r.v.detail.find("but UNSUPPORTED: paged_attention_rocm refused the case at call time"), std::string::npos)
      << r.v.detail;
  EXPECT_TRUE(r.unexpected_failure());
}

// --replace-kernel: the substitute's code and declaration apply, so its reasons name it.
TEST(CallTimeRefusal, ReasonsNameTheSubstituteUnderReplaceKernel) {
  Registry reg = refusing_registry();
  reg.replace("paged_attention_rocm", "my_pa");
  EXPECT_EQ(reg.find("paged_attention_rocm")->label(), "paged_attention_rocm (replaced by test:my_pa)");
  EXPECT_EQ(reg.find("my_pa")->label(), "my_pa");
  Case c = decode(96, "paged_attention_rocm");
  c.block_size = 32;
  const CaseResult refused = run_decode_case(c, reg, {});
  EXPECT_EQ(refused.v.status, Status::Unsupported) << refused.v.detail;
  EXPECT_EQ(refused.v.detail,
            "paged_attention_rocm (replaced by test:my_pa) refused the case at call time: head_size 96 is not 128");
  c.block_size = 16;  // outside my_pa's declaration (block_size 32 only)
  const CaseResult outside = run_decode_case(c, reg, {});
  EXPECT_EQ(outside.v.status, Status::Unsupported) << outside.v.detail;
  EXPECT_EQ(outside.v.detail,
            "paged_attention_rocm (replaced by test:my_pa) declares block_size 32 only; this case has block_size 16");
}

TEST(CallTimeRefusal, ARefusalAfterDamageIsAnOutOfViewWrite) {
  const Registry reg = refusing_registry();
  Case w = write("");
  for (const char* name : {"scribbles_input", "writes_before_cache"}) {
    w.writer = name;
    const CaseResult r = run_write_case(w, reg);
    EXPECT_EQ(r.v.status, Status::Fail) << name << ": " << r.v.detail;
    EXPECT_EQ(r.v.reason, "out_of_view_write") << name;
    EXPECT_NE(r.v.detail.find("; then it refused the case: "), std::string::npos) << r.v.detail;
    EXPECT_TRUE(r.unexpected_failure());
  }
  const CaseResult rd = run_decode_case(decode(128, "scribbles_cache"), reg, {});
  EXPECT_EQ(rd.v.status, Status::Fail) << rd.v.detail;
  EXPECT_EQ(rd.v.reason, "out_of_view_write");
  EXPECT_NE(rd.v.detail.find("the reader wrote into the KV cache"), std::string::npos) << rd.v.detail;
  EXPECT_NE(rd.v.detail.find("then it refused the case: scribbles_cache refused"), std::string::npos) << rd.v.detail;
}

}  // namespace
}  // namespace kvh
