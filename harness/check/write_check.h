// The verdict of a write case: compares the cache storage after the kernel
// with the reference's, byte for byte, and classifies every difference.
#pragma once
#include <vector>

#include "case/arena.h"
#include "device/write_diff.h"
#include "case.h"
#include "layout.h"
#include "check/verdict.h"

namespace kvh {

/// before: the storage as it was before the writer ran (sentinels + old
/// tokens); expected: the same with the reference writer's tokens applied;
/// actual: what came back. All three the same size.
/// PASS iff actual == expected everywhere, margins included. Otherwise FAIL with
///   out_of_view_write  a byte no view owns changed (first offset and whose memory),
///   mismatch           an owned element holds a wrong value (worst element named),
///   unwritten_output   an element that should have changed kept its value from `before`,
/// in that order of precedence; detail counts all three. An fp8 or int8 cache (kv,
/// L.geo.elem_bytes 1) is compared code by code; values are named as the
/// codes decode (reference/fp8.h; int8: the signed code), before any scale. The arenas are views
/// (a GuardedArena, or device memory the host reads in place).
Verdict check_write(const CacheLayout& L, DType dtype, const ArenaBytes& before, const ArenaBytes& expected,
                    const ArenaBytes& actual, KvCacheDType kv = KvCacheDType::Same);

/// The FAIL verdict of a tally with a difference (check_write's on the host,
/// device::write_diff's on the device): the reason by the precedence above, the
/// counts, the worst element with its got and want, and the first element of the
/// primary class (its storage byte offset for an out-of-view write).
Verdict write_verdict(const CacheLayout& L, DType dtype, const device::WriteDiff& d,
                      KvCacheDType kv = KvCacheDType::Same);

}  // namespace kvh
