// The harness's counter-based generator: value i of a stream is a pure
// function of (key, i), so the host and any device produce the same inputs
// for a case in any order and on any number of threads (SplitMix64's output
// function over the counter; Steele, Lea, Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014). Integer arithmetic only:
// no float rounding that could differ between compilers or devices.
#pragma once
#include <algorithm>
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

/// bits16_of_word(kOldToken, bf16, w, lane) from the lane's 16 bits r, in
/// arithmetic a vector unit has (x % 11 as x - 11 * (x * 187 >> 11), exact
/// for x < 32): the same bits for every r (counter_rng_test, exhaustive).
inline uint16_t old_token16(bool bf16, unsigned r) {
  const unsigned x = (r >> 10) & 31u, e = x - 11u * ((x * 187u) >> 11);
  return bf16 ? uint16_t((r & 0x8000u) | ((e + 122u) << 7) | (r & 0x7Fu)) : uint16_t((r & 0x8000u) | ((e + 10u) << 10) | (r & 0x3FFu));
}
/// bits16_of_word(kInput, bf16, w, lane) from the lane's 32 bits r: the count
/// of trailing zeros read from the exponent of the lowest set bit converted
/// to float (exact: a power of two), not a ctz instruction.
inline uint16_t input16(bool bf16, uint32_t r) {
  const uint32_t m = ((r >> 10) & 0x3FFFu) | 0x4000u, low = m & (0u - m);
  const float f = float(int32_t(low));
  uint32_t fb;
  __builtin_memcpy(&fb, &f, 4);
  const uint32_t tz = (fb >> 23) - 127u, sign = (r >> 31) << 15;
  return bf16 ? uint16_t(sign | ((127u - tz) << 7) | (r & 0x7Fu)) : uint16_t(sign | ((15u - tz) << 10) | (r & 0x3FFu));
}

/// dst[i * stride] := element first + i of the stream `key`, i in [0, n) (host
/// code: the cpu backend's fills and the host's copies of inputs). Words are
/// hashed 32 at a time, then their 16- or 32-bit lanes are turned into
/// elements in a loop the compiler vectorizes; bits16 element by element
/// gives the same bits (counter_rng_test).
template <int K, bool Bf16>
inline void fill_run16(uint16_t* dst, int64_t stride, int64_t n, uint64_t key, uint64_t first) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "lane l of a word is its l-th 16/32-bit piece in memory");
  constexpr unsigned sh = K == kOldToken ? 2u : 1u, pw = 1u << sh, mask = pw - 1;
  constexpr int64_t kWords = 32, kElems = kWords * pw;
  int64_t i = 0;
  uint64_t idx = first;
  for (; i < n && (idx & mask); ++i, ++idx) dst[i * stride] = bits16_of_word(K, Bf16, at(key, idx >> sh), unsigned(idx & mask));
  uint64_t words[kWords];
  uint16_t out[kElems];
  for (; i + int64_t(pw) <= n;) {
    const int64_t nw = std::min<int64_t>(kWords, (n - i) >> sh);
    for (int64_t j = 0; j < nw; ++j) words[j] = at(key, (idx >> sh) + uint64_t(j));
    const int64_t ne = nw << sh;  // only the words hashed in this batch are read
    if constexpr (K == kOldToken) {
      uint16_t lanes[kElems];
      __builtin_memcpy(lanes, words, size_t(nw) * 8);
      for (int64_t k = 0; k < ne; ++k) out[k] = old_token16(Bf16, lanes[k]);
    } else {
      uint32_t lanes[kElems];
      __builtin_memcpy(lanes, words, size_t(nw) * 8);
      for (int64_t k = 0; k < ne; ++k) out[k] = input16(Bf16, lanes[k]);
    }
    if (stride == 1) __builtin_memcpy(dst + i, out, size_t(ne) * 2);
    else
      for (int64_t k = 0; k < ne; ++k) dst[(i + k) * stride] = out[k];
    i += ne;
    idx += uint64_t(ne);
  }
  for (; i < n; ++i, ++idx) dst[i * stride] = bits16_of_word(K, Bf16, at(key, idx >> sh), unsigned(idx & mask));
}

/// fill_run16 with the kind and format chosen at run time.
inline void fill_run16(int kind, bool bf16, uint16_t* dst, int64_t stride, int64_t n, uint64_t key, uint64_t first) {
  if (kind == kOldToken) bf16 ? fill_run16<kOldToken, true>(dst, stride, n, key, first) : fill_run16<kOldToken, false>(dst, stride, n, key, first);
  else bf16 ? fill_run16<kInput, true>(dst, stride, n, key, first) : fill_run16<kInput, false>(dst, stride, n, key, first);
}

/// Element `i` of an old-token stream of an fp8 cache: a uniformly random
/// code of the format, a NaN code replaced by its neighbour (0x7F/0xFF ->
/// 0x7E/0xFE for e4m3fn, 0x80 -> 0x81 for e4m3fnuz): finite like kOldToken.
KVH_HOST_DEVICE inline uint8_t fp8_old_code(uint64_t key, uint64_t i, bool fnuz) {
  uint8_t c = uint8_t(at(key, i >> 3) >> ((i & 7u) * 8u));
  if (fnuz ? c == 0x80u : (c & 0x7Fu) == 0x7Fu) c ^= 0x01u;
  return c;
}

/// Element `i` of an old-token stream of an int8 cache: a uniformly random
/// byte, 0x80 (-128, the code no writer writes; the stale marker) replaced by 0x81.
KVH_HOST_DEVICE inline uint8_t int8_old_code(uint64_t key, uint64_t i) {
  uint8_t c = uint8_t(at(key, i >> 3) >> ((i & 7u) * 8u));
  if (c == 0x80u) c = 0x81u;
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
