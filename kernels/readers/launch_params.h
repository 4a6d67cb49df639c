// Launch parameters of a built-in kernel's declared launch configuration (issue 23 (D);
// kvharness/provider.h kvh_launch_config: "KEY=VALUE" pairs joined by ','). Host code of the
// launchers; plain C strings so that nvcc, hipcc and the host compiler take it alike.
#pragma once
#include <stdint.h>
#include <string.h>

#include "kvharness/provider.h"

namespace kvh::kernels {

/// The integer VALUE of `key` in configuration `c`'s params: `dflt` when c is null (the default
/// launch) or lacks the key; -1 when the value is not a decimal integer in [0, 2^31) (the
/// launcher refuses it: hipErrorInvalidValue).
inline int64_t launch_param(const kvh_launch_config* c, const char* key, int64_t dflt) {
  if (!c || !c->params) return dflt;
  const size_t n = strlen(key);
  for (const char* p = c->params; *p;) {
    const char* end = strchr(p, ',');
    if (!end) end = p + strlen(p);
    if (size_t(end - p) > n && strncmp(p, key, n) == 0 && p[n] == '=') {
      int64_t v = 0;
      const char* d = p + n + 1;
      if (d == end) return -1;
      for (; d < end; ++d) {
        if (*d < '0' || *d > '9' || v > (int64_t(1) << 31) / 10) return -1;
        v = v * 10 + (*d - '0');
      }
      return v < (int64_t(1) << 31) ? v : -1;
    }
    p = *end ? end + 1 : end;
  }
  return dflt;
}

}  // namespace kvh::kernels
