// 16-bit element values for the harness: random inputs and decoding for
// reports. Uses Eigen's half and bfloat16, not the kernels' own conversions,
// so that a conversion bug in kernels/ cannot hide itself.
#pragma once
#include <cstdint>
#include <vector>

#include "case/arena.h"
#include "case.h"

namespace kvh {

/// Bits of the 16-bit element of `dtype` nearest to `f` (round to nearest even).
uint16_t encode16(DType dtype, float f);
/// The value of a 16-bit element of `dtype`.
double decode16(DType dtype, uint16_t bits);
/// decode16 of every bit pattern of `dtype`: table[bits] (65,536 entries, made
/// once), for loops that widen millions of elements.
const double* decode16_table(DType dtype);
/// Elements [0, n) of the counter-based stream `key` (kernels/device/counter_rng.h,
/// rng::kInput or rng::kOldToken), computed on all cores: the same values a
/// device fill of that stream writes, element i of the logical tensor first.
/// The buffer is not zero-filled first: the parallel fill is its first touch.
U16Buffer counter16(DType dtype, int kind, uint64_t key, size_t n);
/// FNV-1a of a string: per-case data seeds derived from case ids.
uint64_t hash_seed(const std::string& s, uint64_t seed);
/// The seed of a case's random data: hash_seed of its logical id (cases/case.h
/// Case::logical_id), so that the cases of a matrix that differ only in layout, block
/// size, kernel or router draw the same data (issue 24).
uint64_t case_data_seed(const Case& c);

}  // namespace kvh
