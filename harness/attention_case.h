// Runs one `attention` or `pipeline` case: decode attention over a paged cache
// of random sequences, checked against reference attention computed straight
// from the logical Q, K and V.
//   attention: the reference writer fills the cache; the reader (or the
//              reader a router picks) under test computes attention.
//   pipeline:  the writer under test fills the cache, then the reader: what an
//              end-to-end accuracy run measures, in milliseconds.
#pragma once
#include "registry.h"
#include "timing.h"
#include "verdict.h"

namespace kvh {

struct DecodeOptions {
  bool launch_misrouted = false;  // launch a misrouted kernel anyway and report the damage too
  TimingOptions timing;           // a PASS is timed: the reader (kernel_us), in pipelines the writer too (writer_us)
};

/// Compute units the router assumes for `target`: a named target (MI300X,
/// MI325X, MI355X), "cus=N" for a what-if, or "" for the device's own.
/// Throws std::invalid_argument naming the known targets.
int64_t target_compute_units(const std::string& target);

/// Routing is checked before launch: a routed kernel asked for a head size
/// outside its declared capabilities is FAIL misroute. Never throws for a
/// kernel's misbehaviour (launch errors FAIL launch_error, device faults CRASH).
CaseResult run_decode_case(const Case& c, const Registry& registry, const DecodeOptions& options);

}  // namespace kvh
