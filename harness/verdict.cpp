#include "verdict.h"

namespace kvh {

const char* to_string(Status s) {
  switch (s) {
    case Status::Pass: return "PASS";
    case Status::Fail: return "FAIL";
    case Status::Unsupported: return "UNSUPPORTED";
    case Status::Crash: return "CRASH";
  }
  return "?";
}

}  // namespace kvh
