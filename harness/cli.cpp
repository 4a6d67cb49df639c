// The `kvharness` command line: run, list, info, bench, compare.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <fstream>
#include <cstdlib>
#include <iostream>
#include <set>

#include <fmt/ranges.h>

#include "bench.h"
#include "attention_case.h"
#include "case_file.h"
#include "router.h"
#include "compare.h"
#include "device.h"
#include "filter.h"
#include "runner.h"

namespace kvh {

namespace {

// A provider that cannot be loaded (a Python module that does not import):
// the commit under test cannot be tested; `git bisect run` skips exit 125.
constexpr int kExitProviderLoad = 125;

std::atomic<bool> g_stop{false};
extern "C" void on_signal(int) { g_stop = true; }

struct Loaded {
  std::vector<Case> cases;
  std::vector<std::string> file_of;
};

// Loads, re-seeds, filters and validates cases. Throws CaseFileError/FilterError.
Loaded load_cases(const RunOptions& o, const Registry& reg) {
  Filter filter(o.filter);
  Loaded out;
  for (const auto& file : o.case_files) {
    std::vector<Case> cases = load_case_file(file);
    std::set<std::string> seen;
    for (Case& c : cases) {
      if (o.seed) c.seed = *o.seed;
      for (const auto& [field, name] : {std::pair<const char*, const std::string&>{"writer", c.writer},
                                        {"reader", c.reader}})
        if (!name.empty() && !reg.find(name))
          throw CaseFileError(fmt::format("{}: {} '{}': no kernel of that name is registered; known: {}", c.source,
                                          field, name, fmt::join(reg.names(), ", ")));
      if (!c.router_policy.empty()) {
        const auto& known = routing::policy_names();
        if (std::find(known.begin(), known.end(), c.router_policy) == known.end())
          throw CaseFileError(fmt::format("{}: router '{}': unknown policy; known: {}", c.source, c.router_policy,
                                          fmt::join(known, ", ")));
        try {
          if (!c.target.empty()) target_compute_units(c.target);
        } catch (const std::invalid_argument& e) {
          throw CaseFileError(fmt::format("{}: field 'target': {}", c.source, e.what()));
        }
      }
      if (!filter.matches(c) || !seen.insert(c.id()).second) continue;
      out.cases.push_back(c);
      out.file_of.push_back(file);
    }
  }
  return out;
}

constexpr const char* kProviderHelp =
    "python:MODULE (a module on PYTHONPATH or a .py file, through the Python bridge), or a shared library "
    "exporting " KVH_PROVIDER_OPEN_SYMBOL " (LIB?CONFIG) or " KVH_PROVIDER_SYMBOL_V1 "; repeatable";

void add_common(CLI::App* cmd, RunOptions& o) {
  cmd->add_option("case_files", o.case_files, "TOML case files (default: cases/default.toml)");
  cmd->add_option("--filter,-f", o.filter, "e.g. head_size=256,layout=interleaved|padded,writer!=fixture_*");
  cmd->add_option("--seed", o.seed, "replace every case file's seeds with this one");
  cmd->add_option("--provider", o.providers, kProviderHelp);
}

Registry make_registry(const RunOptions& o) {
  Registry reg;
  for (const auto& p : o.providers) reg.load_provider(p);
  return reg;
}

}  // namespace

int cli_main(int argc, char** argv) {
  CLI::App app{"kvharness: correctness harness for paged KV-cache write and decode-attention kernels"};
  app.require_subcommand(1);
  RunOptions o;
  auto* run = app.add_subcommand("run", "run cases and write summary.md, results.json, junit.xml");
  add_common(run, o);
  run->add_option("--report-dir", o.report_dir, "where the report goes")->capture_default_str();
  run->add_option("--wave-size", o.wave_size, "cpu backend: lanes per wavefront, 32 or 64")
      ->check(CLI::IsMember({32, 64}));
  run->add_flag("--random-order", o.random_order, "cpu backend: run ready fibers in random order");
  run->add_flag("--launch-misrouted", o.launch_misrouted,
                "launch a kernel the router picked outside its capabilities anyway; the verdict stays misroute");
  run->add_option("--case-timeout", o.case_timeout_s,
                  "seconds one case may run before it counts as hung (CRASH timeout; the run ends, report kept); 0: none")
      ->capture_default_str();
  bool no_progress = false;
  run->add_flag("--no-progress", no_progress, "no progress bar even on a terminal");
  run->add_option("--timing-reps", o.timing.reps,
                  "GPU backends: timed launches for kernel_us of each passing case (0: no timing)")
      ->envname("KVH_TIMING_REPS")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run->add_option("--timing-warmup", o.timing.warmup, "GPU backends: untimed launches before them")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  auto* list = app.add_subcommand("list", "print the id of every case the files and filter select");
  add_common(list, o);
  auto* info = app.add_subcommand("info", "backend, device, wave size, compute units, registered kernels");
  info->add_option("--provider", o.providers, kProviderHelp);
  bench::Options bo;
  auto* bench_cmd = app.add_subcommand(
      "bench", "copy bandwidth, then time every writer and decode reader over a size sweep: GB/s and % of copy");
  bench_cmd->add_option("--report-dir", bo.report_dir, "where bench.md and bench.json go")->capture_default_str();
  bench_cmd->add_flag("--quick", bo.quick, "a small sweep (cpu backend, CI smoke test): 1 warm-up, 5 reps, 64 MiB copy");
  auto* reps_opt = bench_cmd->add_option("--reps", bo.reps, "timed launches per measurement (default 20)")
                       ->check(CLI::PositiveNumber);
  auto* warmup_opt =
      bench_cmd->add_option("--warmup", bo.warmup, "untimed launches first (default 3)")->check(CLI::NonNegativeNumber);
  auto* copy_opt = bench_cmd->add_option("--copy-mib", bo.copy_mib, "size of the D2D copy (default 2048)")
                       ->check(CLI::PositiveNumber);
  bench_cmd->add_option("--rotate-mib", bo.rotate_mib,
                        "cycle through buffer sets totalling at least this much (default 512 on GPUs, 0 on cpu)");
  bench_cmd->add_option("--kernel", bo.kernels, "only this kernel (repeatable)");
  bench_cmd->add_option("--provider", o.providers, kProviderHelp);
  std::string cmp_a, cmp_b;
  int cmp_max_only = 20;
  auto* cmp = app.add_subcommand("compare",
                                 "what regressed, what got fixed, between two runs; exit 1 on any verdict difference");
  cmp->add_option("A", cmp_a, "results.json (or its report directory) of the first run")->required();
  cmp->add_option("B", cmp_b, "results.json (or its report directory) of the second run")->required();
  cmp->add_option("--max-only", cmp_max_only, "cases listed per only-in-one-run section (0: all)")->capture_default_str();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : kExitUsage;
  }
  o.program = argv[0];
  if (o.case_files.empty()) {
    // The default job: cases/default.toml here, or in the source tree this binary was built from.
    o.case_files = {"cases/default.toml"};
    if (!std::ifstream(o.case_files[0]) && std::ifstream(KVH_SOURCE_DIR "/cases/default.toml"))
      o.case_files = {KVH_SOURCE_DIR "/cases/default.toml"};
  }

  try {
    if (*cmp) {
      const auto c = compare::compare(compare::load(cmp_a), compare::load(cmp_b));
      fmt::print("{}", compare::format(c, cmp_a, cmp_b, cmp_max_only));
      return c.changes.empty() ? kExitPass : kExitFail;
    }
    const Registry reg = make_registry(o);
    if (*bench_cmd) {
      if (bo.quick) {  // explicit options win
        if (!*reps_opt) bo.reps = 5;
        if (!*warmup_opt) bo.warmup = 1;
        if (!*copy_opt) bo.copy_mib = 64;
      }
      return bench::bench_main(bo, reg);
    }
    if (*info) {
      const auto i = device::info();
      fmt::print("backend        {}\ndevice         {}\narch           {}\nwave size      {}\ncompute units  {}\n",
                 i.backend, i.name, i.arch, i.wave_size, i.compute_units);
      if (i.memory_bytes) fmt::print("memory         {:.1f} GiB\n", double(i.memory_bytes) / (1ull << 30));
      fmt::print("\nkernels:\n");
      for (const auto& n : reg.names()) {
        const Kernel* d = reg.find(n);
        fmt::print("  {:<30} {:<7} {:<8} {}{} [{}]\n", n, d->role == KVH_ROLE_WRITER ? "writer" : "reader",
                   cache_format_name(d->cache_format), d->fixture ? "FIXTURE " : "", d->description, reg.origin(n));
      }
      return kExitPass;
    }
    const Loaded loaded = load_cases(o, reg);
    if (*list) {
      for (const auto& c : loaded.cases) fmt::print("{}\n", c.id());
      return loaded.cases.empty() ? kExitNothingRunnable : kExitPass;
    }
    if (loaded.cases.empty()) {
      fmt::print(stderr, "kvharness: no case matches (files: {}, filter '{}')\n", fmt::join(o.case_files, " "), o.filter);
      return kExitNothingRunnable;
    }
    device::configure_host(o.wave_size, o.random_order, o.seed.value_or(1));
    o.progress = !no_progress && isatty(STDERR_FILENO);
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, on_fatal_signal);
    // Test hook: the nth device synchronize raises a sticky device fault (runner_test, ctest).
    if (const char* n = std::getenv("KVH_INJECT_FAULT"); n && *n) device::testing::inject_fault(std::atoi(n));
    const RunReport rep = run_cases(loaded.cases, loaded.file_of, reg, o, g_stop);
    int pass = 0, fail = 0, unsup = 0, crash = 0;
    for (const auto& cr : rep.results) {
      pass += cr.v.status == Status::Pass;
      fail += cr.v.status == Status::Fail;
      unsup += cr.v.status == Status::Unsupported;
      crash += cr.v.status == Status::Crash;
    }
    fmt::print("{} cases: {} PASS, {} FAIL, {} CRASH, {} UNSUPPORTED{}\nreport: {}/summary.md\n", rep.results.size(),
               pass, fail, crash, unsup, rep.complete ? "" : " (INCOMPLETE)", o.report_dir);
    if (!rep.stopped_because.empty()) fmt::print(stderr, "kvharness: run stopped: {}\n", rep.stopped_because);
    return exit_code_for(rep, reg);
  } catch (const ProviderLoadError& e) {  // an untestable build: a bisect skips it
    fmt::print(stderr, "kvharness: {}\n", e.what());
    return kExitProviderLoad;
  } catch (const CaseFileError& e) {
    fmt::print(stderr, "kvharness: {}\n", e.what());
  } catch (const FilterError& e) {
    fmt::print(stderr, "kvharness: --filter: {}\n", e.what());
  } catch (const std::exception& e) {
    fmt::print(stderr, "kvharness: {}\n", e.what());
  }
  return kExitUsage;
}

}  // namespace kvh
