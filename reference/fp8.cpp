#include "fp8.h"

namespace kvh::reference {

const char* to_string(Fp8Format f) { return f == Fp8Format::E4M3FN ? "fp8_e4m3fn" : "fp8_e4m3fnuz"; }

}  // namespace kvh::reference
