// libFuzzer target: cases/case_file.h parse_case_text on arbitrary bytes.
//
// Contract checked: for any input, parse_case_text either returns the
// expanded cases (each of which can name itself: Case::id) or throws
// CaseFileError. Any other exception escapes and libFuzzer reports it as a
// crash (an uncaught exception aborts); ASan/UBSan report memory errors and
// undefined behaviour; -rss_limit_mb / -malloc_limit_mb (fuzz/run.sh) turn an
// unbounded expansion from a small file into a failure.
#include <cstddef>
#include <cstdint>
#include <string>

#include "case_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    for (const kvh::Case& c : kvh::parse_case_text(text, "fuzz.toml")) {
      volatile size_t n = c.id().size() + c.variant().size() + size_t(c.shuffle());
      (void)n;
    }
  } catch (const kvh::CaseFileError&) {
    // A rejected file: the documented outcome for bad input.
  }
  return 0;
}
