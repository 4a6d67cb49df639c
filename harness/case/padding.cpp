#include "case/padding.h"

#include <random>

namespace kvh {

std::vector<int64_t> padding_tokens(int64_t num_tokens, uint64_t data_seed) {
  std::vector<int64_t> out;
  if (num_tokens <= 0) return out;
  // Its own stream: the seed xor a constant ("padding" in ASCII), never the slots' stream.
  std::mt19937_64 rng(data_seed ^ 0x70616464696e67ull);
  const uint64_t mode = rng() % 4;
  if (mode == 0) return out;  // no padding at all
  const bool both_ends = mode == 1;
  for (int64_t i = 0; i < num_tokens; ++i) {
    const bool end = i == 0 || i == num_tokens - 1;
    if ((both_ends && end) || rng() % 8 == 0) out.push_back(i);
  }
  if (out.empty()) out.push_back(int64_t(rng() % uint64_t(num_tokens)));  // at least one
  // At least one real token when there are two or more: a case that writes nothing proves little.
  if (num_tokens > 1 && int64_t(out.size()) == num_tokens)
    out.erase(out.begin() + (num_tokens > 2 ? 1 + int64_t(rng() % uint64_t(num_tokens - 2)) : 1));
  return out;
}

}  // namespace kvh
