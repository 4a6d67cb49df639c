// --isolate: cases run in worker processes, so that a kernel that kills its
// process (an abort, a segfault, a sticky GPU fault that poisons the context)
// or hangs costs that case alone: it becomes CRASH (crash or timeout, the
// component that was running named) and a fresh worker takes the rest.
//
// The parent (run_cases_isolated) splits the cases into groups of
// o.isolate_batch consecutive cases (0, the default: one group) and starts one
// worker per group, `o.worker_command` with KVH_ISOLATE_CASES naming the cases
// by index; after a crash a fresh worker takes the rest of the group. (One
// worker per run keeps the cost to one process start and, on a GPU, one
// context creation, unless a kernel crashes.) A
// worker (isolate_worker_main) writes JSON lines on file descriptor 3:
//   {"start": I}                   case I begins
//   {"component": "writer"}        the kernel now running (note_running_component)
//   {"result": I, "case": {...}}   case I's result, results.json's entry (results_io.h)
// The parent judges every result against the expectations, writes the report
// (refreshed as cases finish) and enforces --case-timeout itself (SIGKILL).
#pragma once
#include <atomic>
#include <string>
#include <vector>

#include "run/runner.h"

namespace kvh {

/// The variable that names a worker's cases: indices into the run's case
/// list, comma-separated, ranges as A-B (inclusive).
inline constexpr const char* kIsolateCasesEnv = "KVH_ISOLATE_CASES";
/// The worker's result descriptor.
inline constexpr int kIsolateFd = 3;

/// run_cases for o.isolate (runner.h has the contract: reports, exit codes,
/// stop). Differences: a worker that dies or hangs during a case makes that
/// case CRASH and the run goes on in a new worker; a device fault never ends
/// the run. A worker that dies before deciding any case is a harness failure
/// (exit 128). Throws std::runtime_error when a worker cannot be started.
RunReport run_cases_isolated(const std::vector<Case>& cases, const std::vector<std::string>& case_file_of,
                             const Registry& registry, const RunOptions& o, const std::atomic<int>& stop,
                             const RunReport& base);

/// The worker's side: runs the cases KVH_ISOLATE_CASES names (indices into
/// `cases`, which the worker loaded as its parent did before --shard and
/// --resume shortened the parent's list: o.worker_index maps) and reports
/// each on kIsolateFd. Ignores SIGINT (its parent decides). Returns 0 when
/// every case ran, 3 after a case left the device unusable (its result sent),
/// 2 when KVH_ISOLATE_CASES is missing or names no case of `cases`.
int isolate_worker_main(const std::vector<Case>& cases, const Registry& registry, const RunOptions& o);

/// "0-3,7,9-10" -> {0,1,2,3,7,9,10}; throws std::invalid_argument naming the
/// bad part, or an index >= `count`.
std::vector<size_t> parse_index_list(const std::string& s, size_t count);
/// The inverse of parse_index_list (ascending runs become ranges).
std::string format_index_list(const std::vector<size_t>& indices);

}  // namespace kvh
