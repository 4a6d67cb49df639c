// A run's results and the files written from them (reports/<run>/).
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "check/verdict.h"

namespace kvh {

/// Everything results.json records about a run.
struct RunReport {
  std::string backend, device, arch;
  std::string runtime_version;          // HIP/CUDA runtime and driver, or the host runtime's name
  int wave_size = 0;
  int compute_units = 0;
  std::string started_at, finished_at;  // ISO 8601 UTC
  bool complete = false;                // false if the run was cut short
  std::string stopped_because;          // why it was cut short (a device fault, a signal); empty otherwise
  std::string error;                    // an input or harness error that stopped the run before any case
  int interrupted_by = 0;               // the signal that ended the run (SIGINT, SIGTERM), 0 if none
  int exit_code = -1;                   // the process's exit code (runner.h ExitCode); -1 while running
  std::vector<std::string> case_files;
  std::vector<std::string> providers;   // --provider, as given (python:mod, a .so path)
  std::string filter;
  std::optional<uint64_t> seed;         // --seed, if it replaced the case files' seeds
  std::string tool_version;             // `git describe` of the build
  std::string command_line;             // as invoked
  std::string host;                     // host name
  std::string label;                    // --label / KVH_LABEL: an image tag, a runner name
  std::vector<std::string> expectation_sources;  // every [[expected_failure]]/[[known_failure]] "file:line"
  std::string identity;                 // what decides the verdicts (build, device, kernels, options): --resume
                                        // and `kvharness merge` accept only reports of one identity (run_identity)
  std::string shard;                    // "i/n" of --shard, "" for the whole run
  std::vector<std::string> merged_from; // `kvharness merge`: the results.json files it combined
  std::map<std::string, std::string> replaced_kernels;  // --replace-kernel: REAL -> Kernel::label(), e.g.
                                        // "paged_attention_rocm (replaced by python:mod:my_pa)"
  std::vector<CaseResult> results;
};

/// The outcome classes every count of a run is made of: `run`'s summary line, summary.md,
/// results.json "counts", junit.xml, `kvharness compare` and the nightly page (ci/nightly_report.py
/// mirrors outcome_of). A FAIL or CRASH whose every cause is expected is XFAIL, never FAIL or CRASH;
/// FAIL, CRASH and XPASS fail the run; Other is a verdict this version does not know (compare only).
enum class Outcome { Pass, Fail, XFail, XPass, Crash, Unsupported, Interrupted, Other };
const char* to_string(Outcome o);
/// The class of a verdict and its expected flag (CaseResult::expected).
Outcome outcome_of(Status s, bool expected);
/// The class of a results.json verdict spelling ("PASS", "FAIL", ...); unknown spellings are Other.
Outcome outcome_of(const std::string& verdict, bool expected);

/// Verdict counts of a run by Outcome, as results.json's "counts", summary.md, junit.xml,
/// `run`, `merge` and `compare` give them.
struct Counts {
  int cases = 0, pass = 0, fail = 0, xfail = 0, xpass = 0, crash = 0, unsupported = 0, interrupted = 0, other = 0;
  int harness = 0;  // cases with a harness failure (also counted in their class)
  void add(Outcome o);
  /// FAIL + CRASH + XPASS (+ unknown verdicts): what fails the run.
  int unexpected() const { return fail + crash + xpass + other; }
};
Counts count(const RunReport& r);
/// "3 PASS, 0 FAIL, 143 XFAIL, 0 XPASS, 0 CRASH, 5 UNSUPPORTED" (then ", N INTERRUPTED" and
/// ", N other" when there are any): the one spelling of a run's counts.
std::string counts_text(const Counts& n);

/// results.json, schema "kvharness.results/1" (DESIGN.md contract).
std::string results_json(const RunReport& r);
/// summary.md: matrices per kind, model and head size, per-model totals, every failure with its repro.
/// CRASH and UNSUPPORTED cases are grouped by (kernel, message_key of the message): one finding
/// with a count, example ids and one repro. Kernels replaced under --replace-kernel are named by
/// their labels (RunReport::replaced_kernels) in the header, headings and matrix rows.
std::string summary_markdown(const RunReport& r);
/// What groups a CRASH or UNSUPPORTED message with others of the same kernel: every number that is
/// not a source line (after "file.py:" / "file.cpp:") nor part of a name (fp8, e4m3, gfx942, sm_90)
/// becomes N, and a hex number 0xN; so "shared memory 139264 > 101376 (k.py:42)" and "... 73728 >
/// 101376 (k.py:42)" are one finding, two raising lines are two.
std::string message_key(const std::string& message);
/// The run's time per phase (harness/run/phases.h) summed over its cases, as a
/// markdown table (largest first, seconds and share of the summed case wall
/// time), the references line, then its `slowest` slowest cases with their largest phase.
/// summary.md's "Where the time went" and `kvharness run --profile`.
std::string time_profile_markdown(const RunReport& r, size_t slowest);
/// "References: D decode case(s) over R distinct float64 reference(s), D/R cases a reference;
/// C computed, D-C reused ...": results.json reference_id and reference_reused counted (issue 24);
/// a run of write cases only says it has no decode case.
std::string references_line(const std::vector<CaseResult>& results);
/// junit.xml: one testcase per case; FAIL and CRASH are failures, UNSUPPORTED skipped.
std::string junit_xml(const RunReport& r);
/// Replaces the report set in `dir` (summary.md, results.json, junit.xml) as
/// one: the three files are written and flushed into a staging directory
/// beside `dir`, which then takes dir's place in one atomic exchange
/// (renameat2 RENAME_EXCHANGE; where the file system lacks it, two renames).
/// A reader never sees files of two runs mixed. Throws std::runtime_error
/// naming the file on any I/O failure (write, flush, close, rename), and when
/// `dir` holds anything else than a report set (it would be lost).
void write_report_files(const RunReport& r, const std::string& dir);
/// Throws std::runtime_error when `dir` cannot hold a report set: it exists
/// and is not a directory, or holds files kvharness did not write (they would
/// be lost when the set is replaced). What write_report_files checks first.
void check_report_dir(const std::string& dir);
/// Writes `text` to `path` through a temporary file and a rename, so that a
/// reader never sees half a file. Throws std::runtime_error naming the file.
void write_text_file(const std::filesystem::path& path, const std::string& text);
/// Now, as ISO 8601 UTC.
std::string utc_now();

}  // namespace kvh
