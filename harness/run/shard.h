// Splitting a run and putting it back together: --shard i/n, --resume DIR and
// `kvharness merge`. All three rest on the run's identity: what decides its
// verdicts, so that results of two processes may stand in one report only
// when they came from the same build, device, kernels, cases and options.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "report/report.h"
#include "run/runner.h"

namespace kvh {

/// Inputs that cannot be resumed or merged (another build, device, kernels,
/// case set or options; overlapping shards; an unreadable file). what() names
/// the file and the field that differs.
struct PartialRunError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Shard `index` of `count` (1-based), as --shard spells it: "i/n".
struct Shard {
  int index = 1, count = 1;
  std::string str() const { return std::to_string(index) + "/" + std::to_string(count); }
};
/// "2/3" -> {2, 3}; throws std::invalid_argument unless 1 <= i <= n.
Shard parse_shard(const std::string& s);
/// Whether case `id` belongs to shard s: FNV-1a (64-bit) of the id modulo n is
/// i-1. Depends on the id alone: adding a case moves no other case between shards.
bool in_shard(const std::string& id, const Shard& s);

/// The run's identity (results.json "identity"): tool version, backend,
/// device, wave size, case files, filter, seed, and every option that changes
/// verdicts (--provider, --replace-kernel, --replace-router, --known-failures,
/// --launch-misrouted, --random-order). Not the report directory, --shard,
/// --isolate, --resume, --label or timing options.
std::string run_identity(const RunOptions& o, const std::string& tool_version, const std::string& backend,
                         const std::string& device, int wave_size);

/// --resume DIR: the results DIR/results.json decided (every verdict but
/// INTERRUPTED), each matched by id to its case in `cases` (the run's, after
/// --filter and --shard). Throws PartialRunError when the file is missing or
/// not a results.json, its run stopped on an input error, its identity or
/// shard differs from `identity`/`shard`, or it decided a case `cases` lacks.
std::vector<CaseResult> load_resumed(const std::string& dir, const std::vector<Case>& cases,
                                     const std::string& identity, const std::string& shard);

/// `kvharness merge`: one report of the runs in `inputs` (results.json files
/// or their directories), cases rebuilt from the files. Complete when every
/// input is, and when they are shards, when all n shards are there. Throws
/// PartialRunError when an input is unreadable, stopped on an input error,
/// has another identity or shard count, repeats a shard, or shares a case id
/// with another input.
RunReport merge_runs(const std::vector<std::string>& inputs);

}  // namespace kvh
