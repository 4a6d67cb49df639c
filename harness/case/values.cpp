#include "case/values.h"

#include <vector>

#include <Eigen/Core>

#include "device/counter_rng.h"
#include "run/parallel.h"

namespace kvh {

uint16_t encode16(DType dtype, float f) {
  if (dtype == DType::F16) return Eigen::numext::bit_cast<uint16_t>(Eigen::half(f));
  return Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(f));
}

const double* decode16_table(DType dtype) {
  // Every value of both formats, converted once: the references widen hundreds of millions of elements.
  static const std::vector<double> table = [] {
    std::vector<double> t(2 << 16);
    for (uint32_t b = 0; b < (1u << 16); ++b) {
      t[b] = double(float(Eigen::numext::bit_cast<Eigen::half>(uint16_t(b))));
      t[(1u << 16) + b] = double(float(Eigen::numext::bit_cast<Eigen::bfloat16>(uint16_t(b))));
    }
    return t;
  }();
  return table.data() + (dtype == DType::F16 ? 0u : 1u << 16);
}

double decode16(DType dtype, uint16_t bits) { return decode16_table(dtype)[bits]; }

U16Buffer counter16(DType dtype, int kind, uint64_t key, size_t n) {
  U16Buffer out(n);
  const bool bf16 = dtype == DType::BF16;
  parallel_for(int64_t(n), 1 << 16, [&](int64_t b, int64_t e) {
    rng::fill_run16(kind, bf16, out.data() + b, 1, e - b, key, uint64_t(b));
  });
  return out;
}

uint64_t hash_seed(const std::string& s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

uint64_t case_data_seed(const Case& c) { return hash_seed(c.logical_id(), c.seed); }

}  // namespace kvh
