// What a case comes to: the contract's verdicts and reason classes
// (DESIGN.md "Contract that scripts and CI rely on").
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "case.h"

namespace kvh {

enum class Status { Pass, Fail, Unsupported, Crash };
const char* to_string(Status s);

/// Reason classes for non-PASS verdicts, as results.json spells them.
namespace reason {
inline constexpr const char* kMismatch = "mismatch";
inline constexpr const char* kOutOfView = "out_of_view_write";
inline constexpr const char* kUnwritten = "unwritten_output";
inline constexpr const char* kNanOrInf = "nan_or_inf";
inline constexpr const char* kMisroute = "misroute";
inline constexpr const char* kUnsupported = "unsupported_config";
inline constexpr const char* kLaunchError = "launch_error";
inline constexpr const char* kCrash = "crash";
inline constexpr const char* kTimeout = "timeout";
}  // namespace reason

struct Verdict {
  Status status = Status::Pass;
  std::string reason;              // empty for PASS
  std::string detail;              // one paragraph a human can act on
  std::optional<double> max_abs_err, max_rel_err;
  std::optional<double> kernel_us;     // median µs of the kernel (pipeline: the reader); GPU backends, PASS only
  std::optional<double> writer_us;     // pipeline: median µs of the writer
  int64_t bad_elements = 0;
};

/// One case after it ran.
struct CaseResult {
  Case c;
  Verdict v;
  uint64_t data_seed = 0;          // seed of the random inputs
  std::string key_layout, value_layout;  // "(shape):(stride)+offset"
  std::string routed_to, route_reason;   // attention and pipeline: the reader that ran, and why
  std::string repro;               // command line that re-runs this case alone
  bool fixture = false;            // a regression fixture ran: a FAIL is expected and not counted
  double wall_ms = 0;
};

}  // namespace kvh
