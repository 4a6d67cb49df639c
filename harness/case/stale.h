// What a decode case's cache holds where the case writes nothing (issue 11):
// the `stale` axis's bit patterns, and the pages that block-table padding ids
// point at. One place keyed by the cache dtype, so a new cache format adds
// its patterns here and nowhere else.
#pragma once
#include <cstdint>
#include <optional>

#include "case.h"

namespace kvh {

/// The bit pattern every unwritten slot of the K cache (is_value false) or of
/// the V cache holds under `s`, for cache dtype `cache_dtype`; nullopt for
/// Stale::Random (finite old tokens from the counter streams instead).
///   fp16: NaN 0x7F11, +Inf 0x7C00 (K), -Inf 0xFC00 (V)
///   bf16: NaN 0x7FE1, +Inf 0x7F80 (K), -Inf 0xFF80 (V)
/// The NaNs are quiet with a payload distinct from the output poison of
/// attention_case.cpp (0x7E5A, 0x7FDA), so a reader that copies a stale value
/// into `out` is not mistaken for one that left `out` unwritten. Formats without
/// Inf (fp8 e4m3fn: NaN 0x7F; e4m3fnuz: NaN 0x80) use their NaN for Stale::Inf.
std::optional<uint16_t> stale_bits(Stale s, DType cache_dtype, bool is_value);

/// What the pages of out-of-range block ids hold (the ids block-table padding
/// uses, attention_case.cpp): the dtype's stale NaN in both caches, so that a
/// reader that lets a padding page into its arithmetic, even multiplied by
/// zero, writes NaN.
uint16_t padding_page_bits(DType cache_dtype);

/// The byte every unwritten slot of an fp8 cache holds under `s`; nullopt for
/// Stale::Random. Neither format has Inf, so Stale::Inf is NaN too:
///   e4m3fn:   NaN 0x7F (K), 0xFF (V)  (S.1111.111; OCP FP8 E4M3)
///   e4m3fnuz: NaN 0x80 (its only NaN; the bit pattern of -0 elsewhere)
std::optional<uint8_t> stale_code8(Stale s, bool fnuz, bool is_value);

/// What the pages of out-of-range block ids hold in an fp8 cache: its NaN.
uint8_t padding_page_code8(bool fnuz);

/// The byte every unwritten slot of a one-byte cache (fp8 or int8) holds under `s`; nullopt
/// for Stale::Random. fp8: stale_code8(s, fnuz, is_value). int8 has neither NaN nor Inf:
/// Stale::Nan and Stale::Inf are both 0x80 = -128, the code no writer ever writes
/// (provider.h KVH_DT_I8 saturates at +-127), so a reader that lets a stale int8 slot in
/// reads -128 * scale, a value no correct cache holds, and fails the comparison.
std::optional<uint8_t> stale_code8(Stale s, KvCacheDType kv, bool is_value);
/// What the pages of out-of-range block ids hold in a one-byte cache: stale_code8(Stale::Nan, kv).
uint8_t padding_page_code8(KvCacheDType kv);

}  // namespace kvh
