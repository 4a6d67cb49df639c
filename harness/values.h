// 16-bit element values for the harness: random inputs and decoding for
// reports. Uses Eigen's half and bfloat16, not the kernels' own conversions,
// so that a conversion bug in kernels/ cannot hide itself.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

#include "case.h"

namespace kvh {

/// Bits of the 16-bit element of `dtype` nearest to `f` (round to nearest even).
uint16_t encode16(DType dtype, float f);
/// The value of a 16-bit element of `dtype`.
double decode16(DType dtype, uint16_t bits);
/// n random, finite, non-zero elements, uniform in [-2, 2) (a splitmix64
/// stream seeded from rng: these buffers reach hundreds of millions of elements).
std::vector<uint16_t> random16(DType dtype, size_t n, std::mt19937_64& rng);
/// FNV-1a of a string: per-case data seeds derived from case ids.
uint64_t hash_seed(const std::string& s, uint64_t seed);

}  // namespace kvh
