#include "case/stale.h"

namespace kvh {

namespace {
// Bit patterns from IEEE 754 binary16 and bfloat16 (the top 16 bits of binary32):
// exponent all ones, mantissa zero = Inf; mantissa with its top bit set = quiet NaN.
constexpr uint16_t kF16Nan = 0x7F11, kF16PosInf = 0x7C00, kF16NegInf = 0xFC00;
constexpr uint16_t kBF16Nan = 0x7FE1, kBF16PosInf = 0x7F80, kBF16NegInf = 0xFF80;
}  // namespace

std::optional<uint16_t> stale_bits(Stale s, DType cache_dtype, bool is_value) {
  const bool f16 = cache_dtype == DType::F16;
  switch (s) {
    case Stale::Random: return std::nullopt;
    case Stale::Nan: return f16 ? kF16Nan : kBF16Nan;
    case Stale::Inf:
      if (f16) return is_value ? kF16NegInf : kF16PosInf;
      return is_value ? kBF16NegInf : kBF16PosInf;
  }
  return std::nullopt;
}

uint16_t padding_page_bits(DType cache_dtype) { return *stale_bits(Stale::Nan, cache_dtype, false); }

std::optional<uint8_t> stale_code8(Stale s, bool fnuz, bool is_value) {
  if (s == Stale::Random) return std::nullopt;
  if (fnuz) return uint8_t(0x80);
  return is_value ? uint8_t(0xFF) : uint8_t(0x7F);
}

uint8_t padding_page_code8(bool fnuz) { return *stale_code8(Stale::Nan, fnuz, false); }

std::optional<uint8_t> stale_code8(Stale s, KvCacheDType kv, bool is_value) {
  if (kv != KvCacheDType::Int8) return stale_code8(s, kv == KvCacheDType::Fp8E4m3fnuz, is_value);
  if (s == Stale::Random) return std::nullopt;
  return uint8_t(0x80);  // -128: never written (provider.h KVH_DT_I8)
}

uint8_t padding_page_code8(KvCacheDType kv) { return *stale_code8(Stale::Nan, kv, false); }

}  // namespace kvh
