// The write verdict on synthetic storage: each check fails on the corruption it exists for.
#include "check/write_check.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace kvh {
namespace {

struct Fixture {
  CacheLayout L = *make_cache_layout(CacheFormat::Shuffle, Scheme::Padded, {4, 16, 1, 64, 8, 2}, 0).layout;
  GuardedArena expected{L.storage_elems, 2, 256};
  Fixture() {
    for (int64_t e = 0; e < L.storage_elems; ++e)
      if (L.key.index_of(e) || L.value.index_of(e)) expected.storage_as<uint16_t>()[e] = uint16_t(0x3c00 + e % 512);
  }
  // Before the writer: every owned element held something else.
  GuardedArena before = [this] {
    GuardedArena b = expected;
    for (int64_t e = 0; e < L.storage_elems; ++e)
      if (L.key.index_of(e) || L.value.index_of(e)) b.storage_as<uint16_t>()[e] ^= 0x0100;
    return b;
  }();
  Verdict check(const GuardedArena& actual) const { return check_write(L, DType::F16, before, expected, actual); }
};

TEST(WriteCheck, IdenticalStorageIsAPass) {
  Fixture f;
  Verdict v = f.check(f.expected);
  EXPECT_EQ(v.status, Status::Pass);
  EXPECT_EQ(v.max_abs_err, 0.0);
}

TEST(WriteCheck, AChangedSentinelInPagePaddingIsAnOutOfViewWriteNamingTheBlock) {
  Fixture f;
  GuardedArena actual = f.expected;
  const int64_t pad = 2 * f.L.block_stride + 2 * f.L.geo.page_elems() + 3;  // padding of block 2
  actual.storage()[pad * 2 + 1] ^= 0x40;  // one byte
  Verdict v = f.check(actual);
  EXPECT_EQ(v.status, Status::Fail);
  EXPECT_EQ(v.reason, "out_of_view_write");
  EXPECT_NE(v.detail.find("page padding of block 2"), std::string::npos) << v.detail;
  EXPECT_NE(v.detail.find(fmt::format("byte offset {}", pad * 2)), std::string::npos) << v.detail;
}

TEST(WriteCheck, AWriteIntoTheMarginIsNamedAsSuch) {
  Fixture f;
  GuardedArena actual = f.expected;
  actual.bytes()[10] = uint8_t(~actual.bytes()[10]);
  Verdict v = f.check(actual);
  EXPECT_EQ(v.reason, "out_of_view_write");
  EXPECT_NE(v.detail.find("arena margin"), std::string::npos) << v.detail;
}

TEST(WriteCheck, AWrongOwnedValueIsAMismatchWithItsWorstElement) {
  Fixture f;
  GuardedArena actual = f.expected;
  const int64_t e = f.L.value.offset + 5;  // V page of block 0
  actual.storage_as<uint16_t>()[e] = 0x4400;  // 4.0
  Verdict v = f.check(actual);
  EXPECT_EQ(v.reason, "mismatch");
  EXPECT_EQ(v.bad_elements, 1);
  EXPECT_NE(v.detail.find("V page of block 0"), std::string::npos) << v.detail;
  ASSERT_TRUE(v.max_abs_err);
  EXPECT_GT(*v.max_abs_err, 0.0);
}

TEST(WriteCheck, AnElementThatKeptItsOldValueIsUnwritten) {
  Fixture f;
  GuardedArena actual = f.expected;
  const int64_t e = 7;
  actual.storage_as<uint16_t>()[e] = f.before.storage_as<uint16_t>()[e];
  Verdict v = f.check(actual);
  EXPECT_EQ(v.reason, "unwritten_output");
  EXPECT_EQ(v.bad_elements, 1);
}

}  // namespace
}  // namespace kvh
