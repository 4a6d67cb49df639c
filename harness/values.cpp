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

std::vector<uint16_t> random16(DType dtype, size_t n, std::mt19937_64& rng, float mean, float stddev) {
  std::normal_distribution<float> dist(mean, stddev);
  std::vector<uint16_t> out(n);
  for (auto& v : out) {
    float f = dist(rng);
    if (f == 0.f) f = 0.5f;  // never zero: zeros hide unwritten outputs
    v = encode16(dtype, f);
  }
  return out;
}

uint64_t hash_seed(const std::string& s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace kvh
