// The verdict of a write case: compares the cache storage after the kernel
// with the reference's, byte for byte, and classifies every difference.
#pragma once
#include <functional>
#include <optional>
#include <vector>

#include "arena.h"
#include "case.h"
#include "layout.h"
#include "verdict.h"

namespace kvh {

/// expected: the storage before the launch (sentinels + old tokens) with the
/// reference writes applied; old_values: the value each written element held
/// before (storage element -> bits, nullopt if it was not to be written),
/// asked only for differing elements; actual: what came back.
/// PASS iff actual == expected everywhere, margins included. Otherwise FAIL with
///   out_of_view_write  a byte no view owns changed (first offset and whose memory),
///   mismatch           an owned element holds a wrong value (worst element named),
///   unwritten_output   an element that should have been written kept its old value,
/// in that order of precedence; detail counts all three.
Verdict check_write(const CacheLayout& L, DType dtype, const std::function<std::optional<uint16_t>(int64_t)>& old_value,
                    const GuardedArena& expected, const GuardedArena& actual);

/// A writer's whole verdict: applies the reference writer (key, value
/// [num_tokens, num_kv_heads, head_size] logical; slots [num_tokens], negative
/// skipped) to `expected`, which holds the storage as it was before the writer
/// ran and holds the reference result afterwards, then check_write()s `actual`
/// against it. FAILs are attributed to the writer (component "writer").
Verdict check_writer_output(const CacheLayout& L, DType dtype, const std::vector<uint16_t>& key,
                            const std::vector<uint16_t>& value, const std::vector<int64_t>& slots,
                            GuardedArena& expected, const GuardedArena& actual);

}  // namespace kvh
