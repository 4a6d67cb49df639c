// One reference per logical input (issue 24): the data seed is the logical id's, the
// process's reference cache computes a key once and shares it, cancels what nobody waits
// for, keeps no error and stays within its bytes; and sharing never hides a wrong kernel.
#include "case/reference_cache.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>
#include <thread>

#include "case/attention_case.h"
#include "case/values.h"
#include "registry/registry.h"

extern "C" const kvh_kernel_desc* kvh_planted_readers(int32_t* count);

namespace kvh {
namespace {

reference::RowMatrix matrix(double v, int64_t rows = 4) { return reference::RowMatrix::Constant(rows, 8, v); }

TEST(ReferenceCache, OneComputationForOneKeyItsResultShared) {
  ReferenceCache cache(int64_t(1) << 20);
  std::atomic<int> computed{0};
  auto compute = [&](double v) {
    return [&computed, v](const std::atomic<bool>&) {
      ++computed;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the second acquire finds it in flight
      return matrix(v);
    };
  };
  ReferenceCache::Lease a = cache.acquire("k1", compute(1.0));
  ReferenceCache::Lease b = cache.acquire("k1", compute(9.0));
  EXPECT_TRUE(a.started());
  EXPECT_FALSE(b.started());
  const ReferenceCache::Matrix ma = a.get(), mb = b.get();
  EXPECT_EQ(ma.get(), mb.get());
  EXPECT_EQ((*ma)(0, 0), 1.0);
  a.release(), b.release();
  ReferenceCache::Lease c = cache.acquire("k1", compute(9.0));  // done and kept
  EXPECT_FALSE(c.started());
  EXPECT_EQ((*c.get())(3, 7), 1.0);
  ReferenceCache::Lease d = cache.acquire("k2", compute(2.0));  // another key: its own
  EXPECT_TRUE(d.started());
  EXPECT_EQ((*d.get())(0, 0), 2.0);
  EXPECT_EQ(computed.load(), 2);
}

TEST(ReferenceCache, TheLastHolderOfAnUnfinishedReferenceCancelsIt) {
  ReferenceCache cache(int64_t(1) << 20);
  std::atomic<bool> saw_cancel{false};
  auto slow = [&](const std::atomic<bool>& cancel) {
    for (int i = 0; i < 2000 && !cancel; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    saw_cancel = cancel.load();
    return matrix(5.0);
  };
  {
    ReferenceCache::Lease a = cache.acquire("slow", slow);
    ReferenceCache::Lease b = cache.acquire("slow", slow);
    b.release();  // a still holds it: nothing is cancelled
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    EXPECT_FALSE(saw_cancel.load());
  }  // a dropped unread: cancelled and forgotten
  for (int i = 0; i < 2000 && !saw_cancel; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_TRUE(saw_cancel.load());
  ReferenceCache::Lease again = cache.acquire("slow", [](const std::atomic<bool>&) { return matrix(6.0); });
  EXPECT_TRUE(again.started()) << "a cancelled reference must be computed again, not served";
  EXPECT_EQ((*again.get())(0, 0), 6.0);
}

TEST(ReferenceCache, AnErrorReachesEveryHolderAndIsNotKept) {
  ReferenceCache cache(int64_t(1) << 20);
  ReferenceCache::Lease a = cache.acquire("bad", [](const std::atomic<bool>&) -> reference::RowMatrix {
    throw std::invalid_argument("shapes disagree");
  });
  EXPECT_THROW(a.get(), std::invalid_argument);
  a.release();
  ReferenceCache::Lease b = cache.acquire("bad", [](const std::atomic<bool>&) { return matrix(1.0); });
  EXPECT_TRUE(b.started());
  EXPECT_EQ((*b.get())(0, 0), 1.0);
}

TEST(ReferenceCache, KeepsAtMostItsBytesEvictingTheLeastRecentlyUsed) {
  const int64_t one = 4 * 8 * int64_t(sizeof(double));
  ReferenceCache cache(3 * one);
  auto fill = [&](const std::string& key, double v) {
    ReferenceCache::Lease l = cache.acquire(key, [v](const std::atomic<bool>&) { return matrix(v); });
    l.get();
    return l.started();
  };
  for (int k = 1; k <= 3; ++k) EXPECT_TRUE(fill("k" + std::to_string(k), k));
  EXPECT_FALSE(fill("k1", 0));  // k1 used again: k2 is now the least recent
  EXPECT_TRUE(fill("k4", 4));   // over the bound: k2 goes
  EXPECT_LE(cache.bytes_kept(), 3 * one);
  EXPECT_EQ(cache.size(), 3u);
  EXPECT_FALSE(fill("k1", 0));
  EXPECT_TRUE(fill("k2", 2)) << "the least recently used reference was not the one evicted";
  ReferenceCache none(0);  // no bytes: nothing kept once released
  ReferenceCache::Lease l = none.acquire("x", [](const std::atomic<bool>&) { return matrix(1.0); });
  l.get();
  l.release();
  EXPECT_EQ(none.size(), 0u);
}

Case decode(Scheme layout, int64_t block_size, const std::string& reader) {
  Case c;
  c.kind = CaseKind::Attention;
  c.model = "test";
  c.num_heads = 8, c.num_kv_heads = 2, c.head_size = 64;
  c.layout = layout;
  c.block_size = block_size;
  c.batch_size = 5;
  c.context_len_min = 1, c.context_len_max = 300;
  c.dtype = DType::F16;
  c.reader = reader;
  c.seed = 24;
  return c;
}

// The data seed follows the logical inputs: what a matrix varies around one data set (layout,
// paging, kernels, router, launch) keeps it; what changes the data moves it.
TEST(DataSeed, FollowsTheLogicalInputsOnly) {
  const Case base = decode(Scheme::KvFirst, 16, "paged_attention_v1");
  const uint64_t seed = case_data_seed(base);
  std::vector<std::pair<std::string, Case>> same, other;
  auto with = [&](auto& list, const std::string& what, auto change) {
    Case c = base;
    change(c);
    list.emplace_back(what, c);
  };
  with(same, "layout", [](Case& c) { c.layout = Scheme::Interleaved; });
  with(same, "block_size", [](Case& c) { c.block_size = 32; });
  with(same, "reader", [](Case& c) { c.reader = "paged_attention_rocm"; });
  with(same, "pipeline", [](Case& c) { c.kind = CaseKind::Pipeline, c.writer = "reshape_and_cache"; });
  with(same, "router", [](Case& c) { c.reader.clear(), c.router_policy = "aiter-v0.1.12", c.target = "MI300X"; });
  with(same, "partition_size", [](Case& c) { c.partition_size = 256; });
  with(same, "block ids", [](Case& c) { c.min_block_id = 70000, c.block_table_padding = 2; });
  with(same, "launch config", [](Case& c) { c.launch_config = "bs64"; });
  with(other, "seed", [](Case& c) { c.seed = 25; });
  with(other, "head_size", [](Case& c) { c.head_size = 128; });
  with(other, "kv heads", [](Case& c) { c.num_kv_heads = 4; });
  with(other, "dtype", [](Case& c) { c.dtype = DType::BF16; });
  with(other, "batch", [](Case& c) { c.batch_size = 6; });
  with(other, "context", [](Case& c) { c.context_len_max = 301; });
  with(other, "queries", [](Case& c) { c.query_len_max = 4; });
  with(other, "values", [](Case& c) { c.values = ValueDist::Sink; });
  with(other, "stale", [](Case& c) { c.stale = Stale::Nan; });
  with(other, "cache dtype", [](Case& c) { c.kv_cache_dtype = KvCacheDType::Int8, c.kv_scales = KvScales::Head; });
  with(other, "window", [](Case& c) { c.sliding_window = 64; });
  with(other, "rank", [](Case& c) { c.tp = 2, c.tp_rank = 1; });
  with(other, "write", [](Case& c) { c.kind = CaseKind::Write, c.writer = "reshape_and_cache"; });
  for (const auto& [what, c] : same) EXPECT_EQ(case_data_seed(c), seed) << what << ": " << c.logical_id();
  for (const auto& [what, c] : other) EXPECT_NE(case_data_seed(c), seed) << what << ": " << c.logical_id();
}

Registry with_planted() {
  Registry reg;
  reg.add_provider(kvh_planted_readers, "planted");
  return reg;
}

// Sharing one reference across a matrix: the correct readers over several layouts and block
// sizes share one reference id and PASS; a planted reader after them gets the shared reference
// and still FAILs (a cache that served a wrong or stale reference would show here).
TEST(DataSeed, AMatrixSharesOneReferenceAndAPlantedReaderStillFails) {
  Registry reg = with_planted();
  std::string id;
  for (Scheme layout : {Scheme::KvFirst, Scheme::Interleaved, Scheme::Separate})
    for (int64_t bs : {16, 32}) {
      const CaseResult r = run_decode_case(decode(layout, bs, "paged_attention_v1"), reg, {});
      EXPECT_EQ(r.v.status, Status::Pass) << r.c.id() << ": " << r.v.detail;
      if (id.empty()) id = r.reference_id;
      EXPECT_EQ(r.reference_id, id) << r.c.id();
      EXPECT_EQ(r.data_seed, case_data_seed(r.c));
    }
  const CaseResult bad = run_decode_case(decode(Scheme::KvFirst, 16, "planted_v1_gqa_modulo"), reg, {});
  EXPECT_EQ(bad.reference_id, id);
  EXPECT_TRUE(bad.reference_reused);
  EXPECT_EQ(bad.v.status, Status::Fail) << bad.v.detail;
  EXPECT_EQ(bad.v.reason, "mismatch") << bad.v.detail;
}

// A dequant scale per block, token or slot depends on where a token lies: such a reference is
// keyed by its paging too; a scale per tensor or head is not.
TEST(DataSeed, ScalesPerBlockKeyTheReferenceByItsPaging) {
  Registry reg;
  auto ref_id = [&](KvScales g, int64_t bs) {
    Case c = decode(Scheme::KvFirst, bs, "paged_attention_v1");
    c.kv_cache_dtype = KvCacheDType::Fp8E4m3fn;
    c.kv_scales = g;
    const CaseResult r = run_decode_case(c, reg, {});
    EXPECT_EQ(r.v.status, Status::Pass) << c.id() << ": " << r.v.detail;
    return r.reference_id;
  };
  EXPECT_EQ(ref_id(KvScales::Head, 16), ref_id(KvScales::Head, 32));
  EXPECT_NE(ref_id(KvScales::Block, 16), ref_id(KvScales::Block, 32));
}

// KVH_REFERENCE_CACHE_MB: a whole number of megabytes or an error naming the variable (a typo
// must not quietly turn sharing off).
TEST(ReferenceCache, TheEnvironmentBoundIsAWholeNumberOfMegabytes) {
  ::unsetenv("KVH_REFERENCE_CACHE_MB");
  EXPECT_EQ(reference_cache_mb_from_env(), 2048);
  for (const auto& [v, mb] : {std::pair<const char*, int64_t>{"0", 0}, {"12", 12}, {"1048576", 1048576}}) {
    ::setenv("KVH_REFERENCE_CACHE_MB", v, 1);
    EXPECT_EQ(reference_cache_mb_from_env(), mb) << v;
  }
  for (const char* bad : {"", "abc", "-5", "1e99", "1048577", "99999999999999999999", " 12", "12MB"}) {
    ::setenv("KVH_REFERENCE_CACHE_MB", bad, 1);
    try {
      reference_cache_mb_from_env();
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("KVH_REFERENCE_CACHE_MB='" + std::string(bad) + "'"), std::string::npos)
          << e.what();
    }
  }
  ::unsetenv("KVH_REFERENCE_CACHE_MB");
}

}  // namespace
}  // namespace kvh
