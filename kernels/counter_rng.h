// The harness's counter-based generator: value i of a stream is a pure
// function of (key, i), so the host and any device produce the same inputs
// for a case in any order and on any number of threads (SplitMix64's output
// function over the counter; Steele, Lea, Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014). Integer arithmetic only:
// no float rounding that could differ between compilers or devices.
#pragma once
#include <cstdint>

#if defined(__CUDACC__) || defined(__HIPCC__)
#define KVH_HOST_DEVICE __host__ __device__
#else
#define KVH_HOST_DEVICE
#endif

namespace kvh::rng {

/// Trailing zero bits of m (m != 0).
KVH_HOST_DEVICE inline unsigned ctz32(unsigned m) {
#if defined(__CUDA_ARCH__)
  return unsigned(__ffs(int(m)) - 1);  // nvcc device code
#else
  return unsigned(__builtin_ctz(m));  // host compilers, and clang's HIP device code
#endif
}

/// SplitMix64's finalizer: a bijection of 64-bit words with full avalanche.
KVH_HOST_DEVICE inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// Random word number `i` of the stream `key`.
KVH_HOST_DEVICE inline uint64_t at(uint64_t key, uint64_t i) { return mix64(key + (i + 1) * 0x9E3779B97F4A7C15ull); }

/// The key of stream `stream` of a case whose data seed is `data_seed`.
KVH_HOST_DEVICE inline uint64_t stream_key(uint64_t data_seed, uint64_t stream) {
  return mix64(data_seed ^ mix64(stream + 0x5851F42D4C957F2Dull));
}

/// What a stream's 16-bit elements hold.
///   kInput     keys, values, queries: uniform on [-2, 2) as the format's grid
///              has it (magnitude 2^-e * 1.m with e = 0 half the time, 1 a
///              quarter, ..., down to 2^-14; random sign, random mantissa);
///              never zero (a zero would hide an unwritten output), always finite
///   kOldToken  what a cache held before the case (stale tokens, unused
///              slots): finite, non-zero, magnitudes 2^-5..2^5
enum Kind : int { kInput = 0, kOldToken = 1 };

/// Elements per random word: 4 old-token elements or 2 input elements (16
/// and 32 of its bits): the fills of multi-gigabyte caches are bound by the hash.
KVH_HOST_DEVICE inline unsigned per_word(int kind) { return kind == kOldToken ? 4u : 2u; }
/// log2(per_word(kind)): index arithmetic by shifts, not divisions, in the fill loops.
KVH_HOST_DEVICE inline unsigned per_word_log2(int kind) { return kind == kOldToken ? 2u : 1u; }

/// Element `lane` (< per_word(kind)) of random word `w`, as f16 bits (bf16
/// false) or bf16 bits (bf16 true).
KVH_HOST_DEVICE inline uint16_t bits16_of_word(int kind, bool bf16, uint64_t w, unsigned lane) {
  if (kind == kOldToken) {
    const unsigned r = unsigned(w >> (lane * 16)) & 0xFFFFu;
    const unsigned sign = (r >> 15) << 15, e = ((r >> 10) & 31u) % 11u;  // 2^-5 .. 2^5
    return bf16 ? uint16_t(sign | ((e + 122u) << 7) | (r & 0x7Fu)) : uint16_t(sign | ((e + 10u) << 10) | (r & 0x3FFu));
  }
  const unsigned r = unsigned(w >> (lane * 32));
  const unsigned sign = (r >> 31) << 15;
  const unsigned tz = ctz32(((r >> 10) & 0x3FFFu) | 0x4000u);  // geometric exponent, capped at 14
  return bf16 ? uint16_t(sign | ((127u - tz) << 7) | (r & 0x7Fu)) : uint16_t(sign | ((15u - tz) << 10) | (r & 0x3FFu));
}

/// Element `i` of a stream, as f16 bits (bf16 false) or bf16 bits (bf16 true).
KVH_HOST_DEVICE inline uint16_t bits16(int kind, bool bf16, uint64_t key, uint64_t i) {
  const unsigned sh = per_word_log2(kind);
  return bits16_of_word(kind, bf16, at(key, i >> sh), unsigned(i & ((1u << sh) - 1)));
}

/// Element `i` of an old-token stream of an fp8 cache: a uniformly random
/// code of the format, a NaN code replaced by its neighbour (0x7F/0xFF ->
/// 0x7E/0xFE for e4m3fn, 0x80 -> 0x81 for e4m3fnuz): finite like kOldToken.
KVH_HOST_DEVICE inline uint8_t fp8_old_code(uint64_t key, uint64_t i, bool fnuz) {
  uint8_t c = uint8_t(at(key, i >> 3) >> ((i & 7u) * 8u));
  if (fnuz ? c == 0x80u : (c & 0x7Fu) == 0x7Fu) c ^= 0x01u;
  return c;
}

/// The streams of one case (stream_key's second argument).
enum Stream : uint64_t {
  kKeys = 1,        // K of every context token, logical [num_tokens, num_kv_heads, head_size]
  kValues = 2,      // V, same shape
  kQueries = 3,     // decode queries [num_seqs, num_heads, head_size]
  kOldKeys = 4,     // the K cache's old contents, logical cache order
  kOldValues = 5,   // the V cache's
  kFiller = 6,      // columns of a fused QKV buffer that the kernel must not read
  kStepKv = 7,      // the decode step's own K/V columns (not read by a reader)
};

}  // namespace kvh::rng
