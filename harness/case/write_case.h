// Runs one `write` case end to end: guarded cache full of old tokens, random
// K/V in a fused QKV buffer, the writer under test on the backend, the
// reference writer on the host, and the byte-exact verdict.
#pragma once
#include "registry/registry.h"
#include "bench/timing.h"
#include "check/verdict.h"

namespace kvh {

/// Never throws for a kernel's misbehaviour: launch errors are FAIL
/// launch_error, device faults CRASH; impossible configurations UNSUPPORTED.
/// A PASS is then timed (kernel_us) under `timing` (see timing.h).
CaseResult run_write_case(const Case& c, const Registry& registry, const TimingOptions& timing = {});

/// Blocks of a write case's cache: room for every token twice over, so that
/// slots land on random, non-consecutive blocks; the large suite has more
/// than 65,535 blocks and element offsets past 2^31.
int64_t write_case_num_blocks(const Case& c, int64_t page_elems);

}  // namespace kvh
