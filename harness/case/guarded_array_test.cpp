// The small guarded arrays a reader gets (guarded_array.h). On the cpu backend
// device memory is host memory: the tests write through tensor().data as a
// reader would, and check_after must name the array and the place.
#include "case/guarded_array.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "case/arena.h"
#include "case/decode_inputs.h"
#include "device/device.h"

namespace kvh {
namespace {

int32_t* i32(const kvh_tensor& t) { return static_cast<int32_t*>(t.data); }
uint8_t* bytes(const kvh_tensor& t) { return static_cast<uint8_t*>(t.data); }

#define KVH_CPU_ONLY()                       \
  if (device::info().backend != "cpu") GTEST_SKIP() << "the test writes device memory from the host"

TEST(GuardedArray, TheTensorIsTheValuesAndAReadPastGetsTheMargin) {
  KVH_CPU_ONLY();
  GuardedArrays a;
  const kvh_tensor t = a.add_i32("context_lens", {5, 6, 7}, 12345);
  ASSERT_NE(t.data, nullptr);
  EXPECT_EQ(t.dtype, KVH_DT_I32);
  ASSERT_EQ(t.ndim, 1);
  EXPECT_EQ(t.shape[0], 3);
  EXPECT_EQ(t.stride[0], 1);
  EXPECT_EQ(i32(t)[0], 5);
  EXPECT_EQ(i32(t)[2], 7);
  // Every margin element, both sides, is the requested value: what a read past gets.
  const int64_t m = kSmallMargin / 4;
  for (int64_t e = 1; e <= m; ++e) {
    ASSERT_EQ(i32(t)[-e], 12345) << "element " << -e;
    ASSERT_EQ(i32(t)[3 + e - 1], 12345) << "element " << 3 + e - 1;
  }
  ASSERT_EQ(a.arrays.size(), 1u);
  EXPECT_EQ(a.arrays[0].name(), "context_lens");
  EXPECT_EQ(a.arrays[0].elems(), 3);
  EXPECT_EQ(a.check_after(), "") << "nothing written";
  // A shape of its own (outermost first), dense.
  const kvh_tensor bt = a.add_i32("block_tables", {1, 2, 3, 4, 5, 6}, -1, {2, 3});
  ASSERT_EQ(bt.ndim, 2);
  EXPECT_EQ(bt.shape[0], 2);
  EXPECT_EQ(bt.shape[1], 3);
  EXPECT_EQ(bt.stride[0], 3);
  EXPECT_EQ(bt.stride[1], 1);
  EXPECT_EQ(i32(bt)[5], 6);
  EXPECT_EQ(i32(bt)[6], -1);
  EXPECT_EQ(i32(bt)[-1], -1);
  EXPECT_EQ(&a.arrays[0], &a.arrays.front()) << "earlier arrays stay where they were";
}

TEST(GuardedArray, WithoutFillMarginsTheMarginsHoldThePositionDependentSentinel) {
  KVH_CPU_ONLY();
  GuardedArrays a;
  const kvh_tensor t = a.add_f32("k_scale", {0.5f, 2.0f});
  EXPECT_EQ(t.dtype, KVH_DT_F32);
  float f[2];
  std::memcpy(f, t.data, sizeof f);
  EXPECT_EQ(f[0], 0.5f);
  EXPECT_EQ(f[1], 2.0f);
  const int64_t m = kSmallMargin;
  for (int64_t i : {int64_t(0), m - 1}) EXPECT_EQ(bytes(t)[i - m], GuardedArena::sentinel(i)) << "byte " << i;
  for (int64_t i : {m + 8, 2 * m + 7}) EXPECT_EQ(bytes(t)[i - m], GuardedArena::sentinel(i)) << "byte " << i;
  EXPECT_EQ(a.check_after(), "");
  // No values: no array, an empty tensor (the scales a case does not have).
  const kvh_tensor none = a.add_f32("v_scale", {});
  EXPECT_EQ(none.data, nullptr);
  EXPECT_EQ(none.ndim, 0);
  EXPECT_EQ(a.arrays.size(), 1u);
}

TEST(GuardedArray, WritesOutsideAnArrayOrIntoAReadOnlyOneAreNamed) {
  KVH_CPU_ONLY();
  GuardedArrays a;
  const kvh_tensor lens = a.add_i32("seq_lens", {10, 20, 30, 40}, -1);
  auto wrote = [&](int64_t byte, const std::string& want) {
    bytes(lens)[byte] ^= 0x5A;
    EXPECT_EQ(a.arrays[0].check_after(), want) << "byte " << byte;
    EXPECT_EQ(a.check_after(), want) << "byte " << byte;
    bytes(lens)[byte] ^= 0x5A;  // undone: the device bytes equal the host image again
    EXPECT_EQ(a.check_after(), "");
  };
  wrote(16, "the reader wrote past seq_lens (byte 1 after its end)");  // one element past: its first byte
  wrote(19, "the reader wrote past seq_lens (byte 4 after its end)");
  wrote(16 + kSmallMargin - 1, "the reader wrote past seq_lens (byte 4096 after its end)");
  wrote(-4, "the reader wrote before seq_lens (byte 4 before its start)");  // one element before
  wrote(-1, "the reader wrote before seq_lens (byte 1 before its start)");
  wrote(-kSmallMargin, "the reader wrote before seq_lens (byte 4096 before its start)");
  wrote(0, "the reader wrote into seq_lens (element 0)");
  wrote(13, "the reader wrote into seq_lens (element 3)");
  // A whole element written as a reader would: one past the end, the value that was there kept elsewhere.
  i32(lens)[4] = 7;
  EXPECT_EQ(a.check_after(), "the reader wrote past seq_lens (byte 1 after its end)");
  i32(lens)[4] = -1;
  i32(lens)[-1] = 0;
  EXPECT_EQ(a.check_after(), "the reader wrote before seq_lens (byte 4 before its start)");
  i32(lens)[-1] = -1;
  i32(lens)[2] = 31;
  EXPECT_EQ(a.check_after(), "the reader wrote into seq_lens (element 2)");
  i32(lens)[2] = 30;
  // The same value written back is no change: only what differs from the image counts.
  i32(lens)[1] = 20;
  EXPECT_EQ(a.check_after(), "");
}

TEST(GuardedArray, AWorkspacesElementsAreTheReadersButNotItsMargins) {
  KVH_CPU_ONLY();
  GuardedArrays a;
  a.add_i32("query_start_loc", {0, 3, 4}, 4);
  GuardedArray& ws = a.add("workspace segm_max", {2, 4}, KVH_DT_F32, 4, GuardedArray::Access::Write);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ws.fill_elements(&nan);
  ws.upload();
  const kvh_tensor t = ws.tensor();
  EXPECT_EQ(t.ndim, 2);
  EXPECT_EQ(ws.elems(), 8);
  float* f = static_cast<float*>(t.data);
  for (int e = 0; e < 8; ++e) EXPECT_TRUE(std::isnan(f[e])) << "filled before the call";
  for (int e = 0; e < 8; ++e) f[e] = float(e);
  EXPECT_EQ(a.check_after(), "") << "every element of a workspace may be written";
  bytes(t)[32 + 11] ^= 1;
  EXPECT_EQ(a.check_after(), "the reader wrote past workspace segm_max (byte 12 after its end)");
  bytes(t)[32 + 11] ^= 1;
  bytes(t)[-2] ^= 1;
  EXPECT_EQ(a.check_after(), "the reader wrote before workspace segm_max (byte 2 before its start)");
  bytes(t)[-2] ^= 1;
  // Elements and the margin after them: the margin is reported.
  f[7] = 70;
  bytes(t)[32] ^= 1;
  EXPECT_EQ(a.check_after(), "the reader wrote past workspace segm_max (byte 1 after its end)");
  bytes(t)[32] ^= 1;
  EXPECT_EQ(a.check_after(), "");
}

TEST(GuardedArray, TheFirstMisusedArrayInOrderIsNamed) {
  KVH_CPU_ONLY();
  GuardedArrays a;
  const kvh_tensor bt = a.add_i32("block_tables", {1, 2}, -1);
  const kvh_tensor cl = a.add_i32("context_lens", {3, 4}, 0);
  i32(cl)[2] = 9;
  EXPECT_EQ(a.check_after(), "the reader wrote past context_lens (byte 1 after its end)");
  i32(bt)[0] = 5;
  EXPECT_EQ(a.check_after(), "the reader wrote into block_tables (element 0)") << "the earlier array first";
  EXPECT_EQ(a.arrays[1].check_after(), "the reader wrote past context_lens (byte 1 after its end)");
}

TEST(GuardedArray, SmallElementsAndTheirMargins) {
  KVH_CPU_ONLY();
  GuardedArrays a;
  GuardedArray& g = a.add("alibi_slopes", {5}, KVH_DT_F16, 2, GuardedArray::Access::Read);
  const uint16_t one = 0x3C00, pad = 0x7E00;
  g.fill_elements(&one);
  g.fill_margins(&pad);
  g.upload();
  const uint16_t* h = static_cast<const uint16_t*>(g.tensor().data);
  EXPECT_EQ(h[0], one);
  EXPECT_EQ(h[4], one);
  EXPECT_EQ(h[5], pad);
  EXPECT_EQ(h[-1], pad);
  EXPECT_EQ(h[-kSmallMargin / 2], pad);
  EXPECT_EQ(h[5 + kSmallMargin / 2 - 1], pad);
  bytes(g.tensor())[9] ^= 1;
  EXPECT_EQ(a.check_after(), "the reader wrote into alibi_slopes (element 4)");
}

}  // namespace
}  // namespace kvh
