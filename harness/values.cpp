#include "values.h"

#include <Eigen/Core>

namespace kvh {

uint16_t encode16(DType dtype, float f) {
  if (dtype == DType::F16) return Eigen::numext::bit_cast<uint16_t>(Eigen::half(f));
  return Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(f));
}

double decode16(DType dtype, uint16_t bits) {
  if (dtype == DType::F16) return double(float(Eigen::numext::bit_cast<Eigen::half>(bits)));
  return double(float(Eigen::numext::bit_cast<Eigen::bfloat16>(bits)));
}

std::vector<uint16_t> random16(DType dtype, size_t n, std::mt19937_64& rng) {
  uint64_t state = rng();
  std::vector<uint16_t> out(n);
  for (size_t i = 0; i < n; i += 2) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);  // splitmix64
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    for (size_t j = 0; j < 2 && i + j < n; ++j) {
      // 24 random bits -> [-2, 2); an exact zero becomes 0.5: zeros hide unwritten outputs
      float f = float(uint32_t(z >> (32 * j)) >> 8) * (4.0f / 16777216.0f) - 2.0f;
      out[i + j] = encode16(dtype, f == 0.f ? 0.5f : f);
    }
  }
  return out;
}

uint64_t hash_seed(const std::string& s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace kvh
