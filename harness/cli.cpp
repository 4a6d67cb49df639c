// The `kvharness` command line: run, list, info, bench, compare.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <csignal>
#include <fstream>
#include <cstdlib>
#include <iostream>
#include <map>
#include <algorithm>
#include <cctype>
#include <cmath>
#include <chrono>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "bench/bench.h"
#include "case/reference_cache.h"
#include "case/attention_case.h"
#include "case/launch_configs.h"  // issue 23 (D)
#include "case_file.h"
#include "router/router.h"
#include "report/compare.h"
#include "device/device.h"
#include "filter.h"
#include "keys.h"
#include "model.h"
#include "route_boundaries.h"
#include "run/isolate.h"
#include "run/runner.h"
#include "run/shard.h"

namespace kvh {

namespace {

std::atomic<int> g_stop{0};  // the signal that asked the run to stop
extern "C" void on_signal(int sig) { g_stop = sig; }

struct Loaded {
  std::vector<Case> cases;
  std::vector<std::string> file_of;
  std::vector<ExpectedFailure> expectations;  // the case files' [[expected_failure]] tables
  size_t before_filter = 0;                   // cases the files hold
  std::set<std::string> unknown_kernels;      // list --allow-unknown-kernels: "writer NAME" not registered
};

// Names of the registered kernels of one role, for error messages.
std::string kernels_of_role(const Registry& reg, int role) {
  std::vector<std::string> out;
  for (const auto& n : reg.names())
    if (reg.find(n)->role == role) out.push_back(n);
  return fmt::format("{}", fmt::join(out, ", "));
}

// What an unknown kernel name may mean: a provider's kernel, and the providers that were loaded.
std::string provider_hint(const RunOptions& o) {
  if (o.providers.empty())
    return " by the built-in kernels, and no --provider was given (a provider's kernel? load its module "
           "or library: --provider python:./my_kernels.py, --provider ./libmy_kernels.so)";
  return fmt::format(" by the built-in kernels nor by --provider {} (a typo? another provider's kernel?)",
                     fmt::join(o.providers, ", --provider "));
}

// Loads, re-seeds, filters and validates cases. Throws CaseFileError/FilterError.
// allow_unknown: `list --allow-unknown-kernels`: a kernel or router name no provider registered is
// accepted (collected in unknown_kernels) so that a case file naming provider kernels and routers is
// checked without loading them; a registered name of the wrong role is still an error.
Loaded load_cases(const RunOptions& o, const Registry& reg, bool allow_unknown = false) {
  Filter filter(o.filter);
  Loaded out;
  for (const auto& file : o.case_files) {
    CaseFile cf = load_case_file_full(file);
    std::vector<Case>& cases = cf.cases;
    std::set<std::string> seen;
    std::vector<Case> expanded;  // issue 23 (D): the file's cases, one per selected launch configuration
    for (Case& c : cases) {
      if (o.seed) c.seed = *o.seed;
      // A kernel of the wrong role is an input error, not an UNSUPPORTED case: a typo must not become a silent skip.
      for (const auto& [field, name, role] :
           {std::tuple<const char*, const std::string&, int>{"writer", c.writer, KVH_ROLE_WRITER},
            {"reader", c.reader, KVH_ROLE_READER}, {"expect_routed_to", c.expect_routed_to, KVH_ROLE_READER}}) {
        if (name.empty()) continue;
        const Kernel* d = reg.find(name);
        if (!d && allow_unknown) {
          out.unknown_kernels.insert(fmt::format("{} {}", field, name));
          continue;
        }
        if (!d || d->role != role) {
          const std::string& at = field == std::string("writer") ? c.writer_source
                                  : field == std::string("reader") ? c.reader_source : std::string();
          throw CaseFileError(fmt::format("{}: {} '{}': {}; known {}s: {}", at.empty() ? c.source : at, field, name,
                                          d ? fmt::format("a {} kernel, not a {}",
                                                          d->role == KVH_ROLE_WRITER ? "writer" : "reader", field)
                                            : "no kernel of that name is registered" + provider_hint(o),
                                          field, kernels_of_role(reg, role)));
        }
      }
      if (!c.router_policy.empty()) {
        const auto& known = routing::policy_names();
        const bool is_known = std::find(known.begin(), known.end(), c.router_policy) != known.end();
        if (!is_known && allow_unknown) {  // a provider's router (kvharness 0.5), not loaded by `list`
          out.unknown_kernels.insert(fmt::format("router {}", c.router_policy));
        } else if (!is_known) {
          throw CaseFileError(fmt::format("{}: router '{}': unknown policy{}; known: {}",
                                          c.reader_source.empty() ? c.source : c.reader_source, c.router_policy,
                                          o.providers.empty() ? " (a provider's router? load it with --provider)" : "",
                                          fmt::join(known, ", ")));
        }
      }
      for (Case& e : expand_launch_configs(c, reg)) {  // issue 23 (D)
        expanded.push_back(e);
        if (!filter.matches(e) || !seen.insert(e.id()).second) continue;
        out.cases.push_back(std::move(e));
        out.file_of.push_back(file);
      }
    }
    out.before_filter += expanded.size();
    // A declaration that covers no case of its file checks nothing: the fixture row it
    // names was removed or renamed, and a green run would claim a check that never happened.
    for (auto& e : cf.expected_failures) {
      if (std::none_of(expanded.begin(), expanded.end(), [&](const Case& c) { return e.covers(c); }))
        throw CaseFileError(fmt::format("{}: this expected failure covers no case of the file (stale: the row or "
                                        "kernel it names is gone{})",
                                        e.source, o.seed ? ", or its ids changed with --seed" : ""));
      out.expectations.push_back(std::move(e));
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
  cmd->add_option("--replace-kernel", o.replace_kernels,
                  "REAL=WITH: run kernel WITH (e.g. from --provider) wherever the cases name or route to REAL; "
                  "judged as REAL (repeatable)");
  cmd->add_option("--replace-router", o.replace_routers,
                  "REAL=WITH: route the cases of router policy REAL with policy WITH's rule; judged as REAL "
                  "(repeatable)");
}

// A bad --replace-kernel / --replace-router: an input error (exit 2), named.
struct OptionError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// "REAL=WITH" of option `opt`.
std::pair<std::string, std::string> split_replacement(const std::string& opt, const std::string& v) {
  const size_t eq = v.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
    throw OptionError(fmt::format("{} '{}': expected REAL=WITH", opt, v));
  return {v.substr(0, eq), v.substr(eq + 1)};
}

Registry make_registry(const RunOptions& o) {
  Registry reg;
  for (const auto& p : o.providers) reg.load_provider(p);
  try {
    for (const auto& r : o.replace_kernels) {
      const auto [real, with] = split_replacement("--replace-kernel", r);
      reg.replace(real, with);
    }
    for (const auto& r : o.replace_routers) {
      const auto [real, with] = split_replacement("--replace-router", r);
      try {
        routing::substitute_policy(real, with);
      } catch (const std::invalid_argument& e) {
        throw OptionError("--replace-router " + r + ": " + e.what());
      }
    }
  } catch (const std::invalid_argument& e) {  // Registry::replace names the option itself
    throw OptionError(e.what());
  }
  return reg;
}

// Why a filter selected nothing: the cases the files hold, and the values each filter key takes there.
std::string why_nothing_matches(const RunOptions& o, const Loaded& l) {
  if (l.before_filter == 0) return fmt::format("the case files ({}) hold no case", fmt::join(o.case_files, " "));
  return fmt::format("the case files ({}) hold {} cases, none matches --filter '{}'; `kvharness list` without the "
                     "filter prints their ids",
                     fmt::join(o.case_files, " "), l.before_filter, o.filter);
}

// "FIXTURE: " before a fixture's description, unless the description says so already
// ("REGRESSION FIXTURE: ..."): info printed "FIXTURE REGRESSION FIXTURE" on every fixture.
std::string fixture_mark(const Kernel& d) {
  if (!d.fixture) return "";
  std::string upper = d.description.substr(0, 32);
  for (char& ch : upper) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  return upper.find("FIXTURE") != std::string::npos ? "" : "FIXTURE: ";
}

// `kvharness info`: the backend, the kernels, and what case files can name.
void print_info(const Registry& reg) {
  const auto i = device::info();
  fmt::print("kvharness      {}\nbackend        {}\ndevice         {}\narch           {}\nwave size      {}\n"
             "compute units  {}\nruntime        {}\n",
             KVH_VERSION, i.backend, i.name, i.arch, i.wave_size, i.compute_units, i.runtime_version);
  if (i.memory_bytes) fmt::print("memory         {:.1f} GiB\n", double(i.memory_bytes) / (1ull << 30));
  fmt::print("\nkernels (name, role, cache format, description [origin]; then what each declares):\n");
  size_t width = 0;  // the longest name sets the column: a long provider name must not shift the rest
  for (const auto& n : reg.names()) width = std::max(width, n.size());
  for (const auto& n : reg.names()) {
    const Kernel* d = reg.find(n);
    fmt::print("  {:<{}} {:<7} {:<8} {}{} [{}]\n", n, width, d->role == KVH_ROLE_WRITER ? "writer" : "reader",
               cache_format_name(d->cache_format), fixture_mark(*d), d->description, reg.origin(n));
    fmt::print("  {:<{}} declares: {}\n", "", width, d->capability_summary());
    std::vector<std::string> configs;  // issue 23 (D): what a case file's launch_configs may name
    for (const auto& lc : d->launch_configs) configs.push_back(lc.name + (lc.params.empty() ? "" : " (" + lc.params + ")"));
    if (!configs.empty()) fmt::print("  {:<{}} launch_configs: {}\n", "", width, fmt::join(configs, ", "));
  }
  fmt::print("\nrouter policies (case files: routers = [NAME, ...]):\n");
  const auto& routers = reg.routers();
  size_t pw = 22;
  for (const auto& p : routing::policy_names()) pw = std::max(pw, p.size());
  for (const auto& p : routing::policy_names())
    if (auto r = std::find_if(routers.begin(), routers.end(), [&](const auto& x) { return x.name == p; });
        r != routers.end())
      fmt::print("  {:<{}} {}{} [{}]\n", p, pw, r->fixture && r->description.find("FIXTURE") == std::string::npos
                                                     ? "FIXTURE: " : "", r->description, r->origin);
    else if (routing::canonical_policy(p) == p)
      fmt::print("  {:<{}} {}\n", p, pw,
                 !routing::is_regression_fixture(p) ? ""
                 : p.rfind("vllm-rocm-mla-", 0) == 0  // issue 22: the MLA policies before vLLM PR 51011
                     ? "REGRESSION FIXTURE: fp8 caches of < 16 heads to the Gluon kernel (batch 1 only)"
                     : "REGRESSION FIXTURE: no head-size test");
    else
      fmt::print("  {:<{}} alias of {}\n", p, pw, routing::canonical_policy(p));
  fmt::print("\ntargets (case files: target = NAME, or cus=N):\n");
  for (const auto& t : routing::target_names()) fmt::print("  {:<8} {} compute units\n", t, routing::compute_units_of(t));
  fmt::print("\nmodel presets (whole model; per rank at tp: heads/tp, max(1, kv heads/tp)):\n");
  for (const auto& m : model_presets())
    fmt::print("  {:<24} {:>3} heads {:>2} kv heads  head_size {:>3}{}{}\n", m.name, m.num_heads, m.num_kv_heads,
               m.head_size, m.hybrid ? "  hybrid" : "",
               m.mla() ? fmt::format("  MLA kv_lora_rank {} + qk_rope_head_dim {} (qk_nope_head_dim {})  [{}]",
                                     m.kv_lora_rank, m.qk_rope_head_dim, m.qk_nope_head_dim, m.source)
                       : std::string());
}

std::string host_name() {
  char buf[256] = {};
  return ::gethostname(buf, sizeof buf - 1) == 0 ? buf : "";
}

// What every report set says of the tool and the call that made it (run's and bench --suite's).
RunReport report_base(const std::string& command_line) {
  RunReport base;
  base.tool_version = KVH_VERSION;
  base.command_line = command_line;
  base.host = host_name();
  return base;
}

std::string decode_memory_refusal(const std::vector<Case>& cases, const Registry& reg);
std::vector<std::string> default_case_files();
template <class Keep>
void keep_cases(Loaded& loaded, std::vector<size_t>& worker_index, Keep keep);

// `bench --suite all`: every case file of the shipped cases/ folder (and cases/stacks/) whose
// kernels and routers this registry has, in name order; the others are named on stderr with
// why (a provider's suite without its --provider, a suite too large for this device).
std::vector<std::string> shipped_suites(const RunOptions& o, const Registry& reg) {
  const std::filesystem::path dir = std::filesystem::path(default_case_files().front()).parent_path();
  std::vector<std::string> files, out;
  for (const auto& sub : {dir, dir / "stacks"}) {
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(sub, ec))
      if (e.path().extension() == ".toml") files.push_back(e.path().string());
  }
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    RunOptions one = o;
    one.case_files = {f};
    // A broken shipped file is an error (CaseFileError propagates); a provider's suite is skipped.
    const Loaded loaded = load_cases(one, reg, /*allow_unknown=*/true);
    std::string why;
    if (!loaded.unknown_kernels.empty())
      why = fmt::format("needs --provider for {}", fmt::join(loaded.unknown_kernels, ", "));
    else if (loaded.cases.empty())
      why = "no case";
    else
      why = decode_memory_refusal(loaded.cases, reg);
    if (why.empty()) out.push_back(f);
    else fmt::print(stderr, "kvharness bench: skipping {}: {}\n", f, why);
  }
  if (out.empty()) throw CaseFileError(fmt::format("bench --suite all: no runnable case file under {}", dir.string()));
  return out;
}

// One line a suite of a `bench --suite` run: its cases, their summed wall time, cases per second.
std::string suite_rows(const RunReport& rep, const std::vector<std::string>& file_of) {
  std::map<std::string, std::pair<int64_t, double>> by;  // file -> cases, case wall ms
  std::map<std::string, int64_t> unexpected;
  for (size_t i = 0; i < rep.results.size() && i < file_of.size(); ++i) {
    auto& [n, ms] = by[file_of[i]];
    ++n;
    ms += rep.results[i].wall_ms;
    unexpected[file_of[i]] += rep.results[i].unexpected_failure() ? 1 : 0;
  }
  // cases/s here is of the suite's case wall time (the headline's is of the process's wall time).
  std::string out = "| suite | cases | case wall s | cases/s of case wall | unexpected |\n|---|---|---|---|---|\n";
  for (const auto& [file, v] : by)
    out += fmt::format("| {} | {} | {:.2f} | {:.1f} | {} |\n", file, v.first, v.second / 1000,
                       v.second > 0 ? v.first / (v.second / 1000) : 0.0, unexpected[file]);
  return out;
}

// `kvharness bench --suite FILE...` (or `all`): the harness's own speed on its suites, run together
// as one run (one reference cache, one phase table), for CI logs and nightly sizing (a benchmark,
// not a test: it never fails on time). The verdicts still decide the exit code.
// Its report set carries what `run`'s does (identity, shard, command line, versions), so that the
// shards of a bench merge (`kvharness merge`) and a report says which shard and tool made it.
int bench_suites_main(const std::vector<std::string>& suites, const std::string& report_dir, RunOptions o,
                      const std::string& shard_text, const std::string& command_line, const Registry& reg) {
  std::vector<std::string> files;
  for (const auto& suite : suites) {
    if (suite != "all") {
      files.push_back(suite);
      continue;
    }
    for (auto& f : shipped_suites(o, reg)) files.push_back(std::move(f));
  }
  o.case_files = files;
  o.report_dir = report_dir + "/suite";
  Shard sh;
  try {
    if (!shard_text.empty()) sh = parse_shard(shard_text);
  } catch (const std::invalid_argument& e) {
    throw OptionError(e.what());  // a usage error (exit 2), as `run --shard` says it
  }
  Loaded loaded = load_cases(o, reg);
  if (!shard_text.empty()) {
    std::vector<size_t> index(loaded.cases.size());
    keep_cases(loaded, index, [&](const Case& c) { return in_shard(c.id(), sh); });
  }
  if (const std::string why = decode_memory_refusal(loaded.cases, reg); !why.empty()) throw CaseFileError(why);
  o.expectations = loaded.expectations;
  RunReport base = report_base(command_line);
  const device::Info di = device::info();
  base.runtime_version = di.runtime_version;
  if (!shard_text.empty()) base.shard = sh.str();
  base.identity = run_identity(o, KVH_VERSION, di.backend, di.name, di.wave_size);
  const std::atomic<int> stop{0};
  const auto t0 = std::chrono::steady_clock::now();
  const RunReport rep = run_cases(loaded.cases, loaded.file_of, reg, o, stop, base);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const Counts n = count(rep);
  fmt::print("## bench --suite {}{}\n\n{} cases of {} file(s) in {:.2f} s ({:.1f} cases/s) on {} ({}); {}; {} "
             "unexpected; report {}\n\n{}\n{}\n",
             fmt::join(suites, " --suite "), shard_text.empty() ? "" : " --shard " + shard_text, rep.results.size(),
             files.size(), wall, wall > 0 ? double(rep.results.size()) / wall : 0.0, rep.backend, rep.device,
             counts_text(n), n.unexpected(), o.report_dir, suite_rows(rep, loaded.file_of), time_profile_markdown(rep, 5));
  return rep.exit_code;
}

// Before anything is allocated: the decode case that needs the most memory
// (attention_case.h estimate_decode_memory), and why this machine cannot hold
// it, or "" (issue 11: the large reader suite refuses with its estimate).
std::string decode_memory_refusal(const std::vector<Case>& cases, const Registry& reg) {
  const Case* worst = nullptr;
  MemoryEstimate most;
  for (const Case& c : cases) {
    if (c.kind == CaseKind::Write) continue;
    const Kernel* k = c.router_policy.empty() ? reg.find(c.reader) : nullptr;
    const MemoryEstimate e = estimate_decode_memory(c, k ? k->cache_format : int32_t(KVH_CACHE_SHUFFLE));
    if (!worst || e.device_bytes + e.host_bytes > most.device_bytes + most.host_bytes) worst = &c, most = e;
  }
  if (!worst) return "";
  const device::Info i = device::info();
  const std::string why = memory_refusal(most, i.backend == "cpu", i.memory_bytes, host_available_bytes());
  if (why.empty()) return "";
  return fmt::format("{}: case {} {}: this machine cannot run it; nothing was allocated", worst->source, worst->id(),
                     why);
}

// On the cpu backend, a decode case without `target` routes and plans with this host's kernel
// workers (its core count, KVH_HOST_WORKERS) as compute units, so the same case file could route
// one way on a 2-core machine and another on a 16-core one. Warns once, at the first case whose
// router or reader reads them (an aiter policy, an MLA policy, a provider's router, a reader with
// a planner; the vLLM unified rules do not), with how many cases do.
void warn_host_compute_units(const std::vector<Case>& cases, const Registry& reg) {
  const device::Info i = device::info();
  if (i.backend != "cpu") return;
  const Case* first = nullptr;
  size_t n = 0;
  for (const Case& c : cases) {
    if (c.kind == CaseKind::Write || !c.target.empty()) continue;
    const Kernel* k = c.router_policy.empty() ? reg.find(c.reader) : nullptr;
    const bool reads_compute_units = c.router_policy.empty() ? k && k->plan : !unified_rule_of(c.router_policy);
    if (!reads_compute_units) continue;
    if (!first) first = &c;
    ++n;
  }
  if (!first) return;
  fmt::print(stderr,
             "kvharness: warning: {}: {} without a `target`: on the cpu backend it takes this host's {} kernel "
             "workers as compute units, so another machine may route or plan it otherwise; give the table a target "
             "(target = \"MI300X\", or cus=N){}\n",
             first->source,
             first->router_policy.empty() ? "the reader " + first->reader + " plans"
                                          : "router " + first->router_policy + " routes",
             i.compute_units, n > 1 ? fmt::format(" ({} cases like it)", n) : "");
}

// The command line: every subcommand and the variables its options fill. Built in
// place and never moved (CLI11 binds the options to these members).
struct Cli {
  CLI::App app{"kvharness: correctness harness for paged KV-cache write and decode-attention kernels"};
  RunOptions o;
  CLI::App *run = nullptr, *list = nullptr, *info = nullptr, *bench_cmd = nullptr, *cmp = nullptr, *merge = nullptr;
  // run
  CLI::Option* report_dir_opt = nullptr;
  bool profile = false, no_progress = false, bisect = false, isolate_worker = false;
  std::string label, resume_dir, shard_text;
  double heartbeat = -1;
  // info, bench
  bool info_keys = false;
  bool allow_unknown_kernels = false;  // list --allow-unknown-kernels
  bench::Options bo;
  CLI::Option *reps_opt = nullptr, *warmup_opt = nullptr, *copy_opt = nullptr;
  std::vector<std::string> bench_suites;
  std::string bench_shard;  // bench --suite --shard I/N
  // compare, merge
  std::string cmp_a, cmp_b, cmp_fail_on = "regressions";
  compare::Options co;
  std::vector<std::string> merge_inputs;
  std::string merge_out;
  // when kvharness started: the wall time a run prints at its end
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  // the command line as parsed (after the bisect-run rewrite)
  std::vector<std::string> rewritten;
  std::vector<char*> rewritten_argv;
  std::string command_line;
};

void add_run(Cli& k) {
  RunOptions& o = k.o;
  CLI::App* run = k.run = k.app.add_subcommand("run", "run cases and write summary.md, results.json, junit.xml");
  add_common(run, o);
  k.report_dir_opt = run->add_option("--report-dir", o.report_dir, "where the report goes")->capture_default_str();
  run->add_option("--wave-size", o.wave_size, "cpu backend: lanes per wavefront, 32 or 64")
      ->check(CLI::IsMember({32, 64}));
  run->add_flag("--random-order", o.random_order, "cpu backend: run ready fibers in random order");
  run->add_flag("--launch-misrouted", o.launch_misrouted,
                "launch a kernel the router picked outside its capabilities anyway; the verdict stays misroute");
  run->add_option("--case-timeout", o.case_timeout_s,
                  "seconds one case may run before it counts as hung (CRASH timeout; the run ends, report kept); 0: none")
      ->capture_default_str();
  run->add_flag("--profile", k.profile, "after the run, print where the time went: phases summed over the cases, and "
                                        "the slowest cases (summary.md has the same table)");
  run->add_flag("--no-progress", k.no_progress, "no progress bar even on a terminal");
  run->add_option("--known-failures", o.known_failures,
                  "TOML file of [[known_failure]] tables (filter/ids, component, reasons, why): failures of your own "
                  "kernels that are expected, strictly (a covered case that passes is XPASS)");
  run->add_option("--label", k.label, "a label for this run in the reports (an image tag, a runner)")->envname("KVH_LABEL");
  run->add_flag("--fail-fast", o.fail_fast,
                "stop at the first unexpected failure (exit 1, report incomplete): enough for a bisect step");
  run->add_flag("--bisect", k.bisect,
                "for `git bisect run`: an input error exits 125 (this commit cannot be tested) instead of 2");
  run->add_option("--heartbeat", k.heartbeat,
                  "seconds between progress lines when stderr is not a terminal (default 10; 0: none)");
}

// run's options that decide where and how its cases run: processes, resume, shards, timing.
void add_run_scheduling(Cli& k) {
  RunOptions& o = k.o;
  CLI::App* run = k.run;
  run->add_flag("--isolate,!--no-isolate", o.isolate,
                "run the cases in worker processes: a kernel that aborts, faults or hangs is that case's CRASH and "
                "the run goes on (default: on, every backend; --no-isolate runs them in this process)");
  run->add_option("--isolate-batch", o.isolate_batch,
                  "with --isolate: at most this many cases per worker process (0: one worker for the run, a new one "
                  "after each crash)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run->add_flag("--isolate-worker", k.isolate_worker)->group("");  // internal: a worker of --isolate (isolate.h)
  run->add_option("--resume", k.resume_dir,
                  "DIR: keep the cases DIR/results.json decided (same build, device, kernels, cases and options, "
                  "else refused) and run the rest; the report goes to DIR unless --report-dir is given");
  run->add_option("--shard", k.shard_text,
                  "I/N: run only the cases of shard I of N (a stable split by case id); `kvharness merge` joins the "
                  "shards' reports");
  run->add_option("--timing-reps", o.timing.reps,
                  "GPU backends: the most timed launches for kernel_us of each passing case (0: no timing)")
      ->envname("KVH_TIMING_REPS")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run->add_option("--timing-warmup", o.timing.warmup,
                  "GPU backends: untimed launches before them (the verdict's launch has warmed the kernel)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  run->add_option("--timing-budget", o.timing.budget,
                  "share of each case's wall time its kernel timing may add: as many timed launches as fit, 1 to "
                  "--timing-reps (0: always --timing-reps)")
      ->check(CLI::Range(0.0, 10.0))
      ->check(CLI::Validator(  // CLI::Range lets NaN through (every comparison with it is false)
          [](std::string& v) { return std::isnan(std::strtod(v.c_str(), nullptr)) ? std::string("NaN") : std::string(); },
          "", "not NaN"))
      ->capture_default_str();
  run->add_flag("--timing-on-cpu", o.timing.on_cpu,
                "time passing cases on the cpu backend too (host clock; a Python provider's own timing reports "
                "host_us and timing_method host_clock)");
}

void add_list_and_info(Cli& k) {
  k.list = k.app.add_subcommand("list", "print the id of every case the files and filter select");
  add_common(k.list, k.o);
  k.list->add_flag("--allow-unknown-kernels", k.allow_unknown_kernels,
                   "check the case files without the providers their kernels come from (no torch or triton "
                   "needed): a writer, reader, expect_routed_to or router no provider registered is accepted and named on "
                   "stderr as 'unknown kernel (not loaded): FIELD NAME'; everything else is checked as usual");
  k.info = k.app.add_subcommand("info", "backend, device, wave size, compute units, registered kernels");
  k.info->add_option("--provider", k.o.providers, kProviderHelp);
  k.info->add_flag("--keys", k.info_keys,
                   "instead: every case-file key (where it goes, type, default, values, filter key, meaning) as "
                   "Markdown, docs/case-file-keys.md");
}

void add_bench(Cli& k) {
  bench::Options& bo = k.bo;
  CLI::App* b = k.bench_cmd = k.app.add_subcommand(
      "bench", "copy bandwidth, then time every writer and decode reader over a size sweep: GB/s and % of copy");
  b->add_option("--report-dir", bo.report_dir, "where bench.md and bench.json go; with --suite, the run's report set in DIR/suite/")->capture_default_str();
  b->add_flag("--quick", bo.quick, "a small sweep (cpu backend, CI smoke test): 1 warm-up, 5 reps, 64 MiB copy");
  k.reps_opt = b->add_option("--reps", bo.reps, "timed launches per measurement (default 20)")->check(CLI::PositiveNumber);
  k.warmup_opt =
      b->add_option("--warmup", bo.warmup, "untimed launches first (default 3)")->check(CLI::NonNegativeNumber);
  k.copy_opt = b->add_option("--copy-mib", bo.copy_mib, "size of the D2D copy (default 2048)")->check(CLI::PositiveNumber);
  b->add_option("--rotate-mib", bo.rotate_mib,
                "cycle through buffer sets totalling at least this much (default 512 on GPUs, 0 on cpu)");
  b->add_option("--kernel", bo.kernels, "only this kernel (repeatable)");
  b->add_option("--suite", k.bench_suites,
                "instead of the kernel sweep: run these case files together as `run` does and report the "
                "harness's own speed (wall time, cases per second by suite, time per phase, references); "
                "repeatable; `all`: every shipped suite this build can run");
  b->add_option("--shard", k.bench_shard, "with --suite: only shard I/N of the cases (as run --shard)");
  b->add_option("--provider", k.o.providers, kProviderHelp);
}

void add_compare_and_merge(Cli& k) {
  CLI::App* cmp = k.cmp = k.app.add_subcommand(
      "compare", "what regressed, what got fixed, between two runs; exit 0 no gating difference, 1 a gating "
                 "difference (--fail-on), 2 an unreadable or non-results input");
  cmp->add_option("A", k.cmp_a, "results.json (or its report directory) of the first run")->required();
  cmp->add_option("B", k.cmp_b, "results.json (or its report directory) of the second run")->required();
  cmp->add_option("--filter,-f", k.co.filter, "compare only the cases this matches (the filter language of run)");
  cmp->add_option("--fail-on", k.cmp_fail_on,
                  "exit 1 on: regressions (good in A, FAIL/CRASH/XPASS in B; slower cases with "
                  "--kernel-us-threshold), changes (also any verdict or reason change), any (also cases of one run "
                  "only or interrupted)")
      ->check(CLI::IsMember({"regressions", "changes", "any"}))
      ->capture_default_str();
  cmp->add_option("--kernel-us-threshold", k.co.kernel_us_threshold,
                  "a case passing in both whose kernel_us B/A exceeds this ratio (e.g. 1.2) is slower: a regression")
      ->check(CLI::PositiveNumber);
  cmp->add_option("--max-only", k.co.max_only, "cases listed per only-in-one-run or interrupted section (0: all)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  CLI::App* merge = k.merge = k.app.add_subcommand(
      "merge", "one report (summary.md, results.json, junit.xml) of several runs of the same cases, e.g. the "
               "shards of --shard; exit as `run` would for the merged run, 2 for inputs that do not fit together");
  merge->add_option("inputs", k.merge_inputs, "results.json files or report directories")->required();
  merge->add_option("-o,--output", k.merge_out, "report directory of the merged run")->required();
}

// `bisect-run` in `kvharness --help` and among the names "did you mean" offers. It is never parsed
// as itself: rewrite_bisect_run makes it `run` first, so `kvharness bisect-run --help` is run's help.
void add_bisect_run(Cli& k) {
  k.app.add_subcommand("bisect-run", "for `git bisect run`: `run --bisect --fail-fast --no-progress ARGS` (run's "
                                     "options; exit 0 good, 1 bad, 125 skip, 128+ abort)")
      ->allow_extras();
}

// `kvharness bisect-run ARGS` is `kvharness run --bisect --fail-fast --no-progress ARGS`: for `git bisect run`.
void rewrite_bisect_run(Cli& k, int& argc, char**& argv) {
  if (argc < 2 || std::string(argv[1]) != "bisect-run") return;
  k.rewritten = {argv[0], "run", "--bisect", "--fail-fast", "--no-progress"};
  for (int i = 2; i < argc; ++i) k.rewritten.emplace_back(argv[i]);
  for (auto& a : k.rewritten) k.rewritten_argv.push_back(a.data());
  argc = int(k.rewritten_argv.size());
  argv = k.rewritten_argv.data();
}

// Whether `dir` or a folder above it is a git work tree with a bisect in progress (BISECT_START in
// its git dir; a linked worktree's `.git` file names that dir).
bool git_bisect_in_progress(std::filesystem::path dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (; !dir.empty(); dir = dir.parent_path()) {
    const fs::path dot_git = dir / ".git";
    fs::path git_dir = dot_git;
    if (fs::is_regular_file(dot_git, ec)) {
      std::string line;
      std::getline(std::ifstream(dot_git), line);
      if (line.rfind("gitdir: ", 0) != 0) return false;
      git_dir = fs::path(line.substr(8));
      if (git_dir.is_relative()) git_dir = dir / git_dir;
    } else if (!fs::is_directory(dot_git, ec)) {
      if (dir == dir.parent_path()) break;
      continue;
    }
    return fs::exists(git_dir / "BISECT_START", ec);
  }
  return false;
}

// Whether this run is a `git bisect run` step: --bisect (bisect-run), $KVH_BISECT set (not "0"),
// or a bisect in progress in the working directory's repository. Only then does an exit 125 say
// "this commit cannot be tested"; anywhere else that is jargon.
bool bisecting(const Cli& k) {
  if (k.bisect) return true;
  if (const char* e = std::getenv("KVH_BISECT"); e && *e && std::string(e) != "0") return true;
  std::error_code ec;
  const std::filesystem::path here = std::filesystem::current_path(ec);
  return !ec && git_bisect_in_progress(here);
}

// The default job: cases/default.toml here, else the installed one (PREFIX/bin/kvharness ->
// PREFIX/share/kvharness/cases, `cmake --install`), else the source tree this binary was built from.
std::vector<std::string> default_case_files() {
  std::vector<std::string> files = {"cases/default.toml"};
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::string installed =
      ec ? "" : (exe.parent_path() / "../share/kvharness/cases/default.toml").lexically_normal().string();
  if (!std::ifstream(files[0])) {
    if (!installed.empty() && std::ifstream(installed))
      files = {installed};
    else if (std::ifstream(KVH_SOURCE_DIR "/cases/default.toml"))
      files = {KVH_SOURCE_DIR "/cases/default.toml"};
  }
  return files;
}

// The values of option `opt` (--provider, --replace-router) in a recorded command line.
std::vector<std::string> option_values(const std::string& command_line, const std::string& opt) {
  std::vector<std::string> words, out;
  for (size_t at = 0; at < command_line.size();) {
    const size_t end = std::min(command_line.find(' ', at), command_line.size());
    if (end > at) words.push_back(command_line.substr(at, end - at));
    at = end + 1;
  }
  for (size_t i = 0; i < words.size(); ++i)
    if (words[i] == opt && i + 1 < words.size())
      out.push_back(words[++i]);
    else if (words[i].rfind(opt + "=", 0) == 0)
      out.push_back(words[i].substr(opt.size() + 1));
  return out;
}

// One side of what decides a run's verdicts besides the code, as compare prints it.
struct RunSetup {
  std::vector<std::string> case_files, providers, substitutions;
};

// A results.json's case files, providers (its "providers" field where it has one, else its command
// line's --provider) and substitutions (replaced_kernels, and --replace-router of its command line).
RunSetup setup_of(const nlohmann::json& j) {
  RunSetup s;
  auto strings = [](const nlohmann::json& v, std::vector<std::string>& out) {
    if (v.is_array())
      for (const auto& x : v)
        if (x.is_string()) out.push_back(x.get<std::string>());
  };
  strings(j.value("case_files", nlohmann::json()), s.case_files);
  const std::string line = j.value("command_line", std::string());
  if (j.contains("providers"))
    strings(j["providers"], s.providers);
  else
    s.providers = option_values(line, "--provider");
  if (const auto r = j.find("replaced_kernels"); r != j.end() && r->is_object())
    for (const auto& [real, label] : r->items())
      s.substitutions.push_back(label.is_string() ? label.get<std::string>() : real);
  for (const auto& r : option_values(line, "--replace-router")) s.substitutions.push_back("router " + r);
  std::sort(s.providers.begin(), s.providers.end());
  std::sort(s.substitutions.begin(), s.substitutions.end());
  return s;
}

// The file names of a suite: the same case file sits at different paths on different machines.
std::vector<std::string> file_names(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  for (const auto& p : paths) out.push_back(std::filesystem::path(p).filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

// Warns on stderr, naming both sides, where runs A and B differ in case files, providers or
// substitutions: their differences may be the setup's, not the code's. Returns whether they do.
bool warn_setup_differences(const nlohmann::json& a, const nlohmann::json& b) {
  const RunSetup x = setup_of(a), y = setup_of(b);
  auto side = [](const std::vector<std::string>& v) { return v.empty() ? std::string("(none)") : fmt::format("{}", fmt::join(v, " ")); };
  bool differ = false;
  auto check = [&](bool same, const char* what, const std::vector<std::string>& va, const std::vector<std::string>& vb) {
    if (same) return;
    differ = true;
    fmt::print(stderr, "kvharness compare: warning: the runs used different {}: A: {}; B: {}\n", what, side(va),
               side(vb));
  };
  check(file_names(x.case_files) == file_names(y.case_files), "case files", x.case_files, y.case_files);
  check(x.providers == y.providers, "providers", x.providers, y.providers);
  check(x.substitutions == y.substitutions, "substitutions (--replace-kernel, --replace-router)", x.substitutions,
        y.substitutions);
  return differ;
}

int compare_main(Cli& k) {
  try {
    k.co.fail_on = compare::parse_fail_on(k.cmp_fail_on);
    const nlohmann::json a = compare::load(k.cmp_a), b = compare::load(k.cmp_b);
    const auto c = compare::compare(a, b, k.co);
    fmt::print("{}", compare::format(c, k.cmp_a, k.cmp_b, k.co));
    std::fflush(stdout);  // the report first, then what qualifies it
    const bool differ = warn_setup_differences(a, b);
    if (differ && k.co.fail_on == compare::FailOn::Any) {
      fmt::print(stderr, "kvharness compare: --fail-on any: the runs' setups differ: exit {}\n",
                 compare::kExitGatingDifference);
      return compare::kExitGatingDifference;
    }
    return compare::exit_code(c, k.co);
  } catch (const FilterError& e) {
    fmt::print(stderr, "kvharness compare: --filter: {}\n", e.what());
  } catch (const std::exception& e) {
    fmt::print(stderr, "kvharness compare: {}\n", e.what());
  }
  return compare::kExitInputError;
}

int merge_main(Cli& k) {
  try {
    const RunReport m = merge_runs(k.merge_inputs);
    check_report_dir(k.merge_out);
    write_report_files(m, k.merge_out);
    const Counts n = count(m);
    fmt::print("merged {} runs: {} cases: {}{}; {} unexpected\nreport: {}/summary.md\n", k.merge_inputs.size(),
               m.results.size(), counts_text(n), m.complete ? "" : " (INCOMPLETE: " + m.stopped_because + ")",
               n.unexpected(), k.merge_out);
    return m.exit_code;
  } catch (const std::exception& e) {
    fmt::print(stderr, "kvharness merge: {}\n", e.what());
    return int(kExitUsage);
  }
}

// compare, merge, bench, info and list: no report set. Their exit code, or nothing for `run`.
// Throws what make_registry and load_cases throw (the caller reports it).
std::optional<int> other_commands(Cli& k) {
  if (*k.cmp) return compare_main(k);
  if (*k.merge) return merge_main(k);
  if (*k.run) return std::nullopt;
  if (*k.info && k.info_keys) {  // the key table alone: no registry, no device
    fmt::print("{}", case_keys_markdown());
    return kExitPass;
  }
  const Registry reg = make_registry(k.o);
  if (*k.bench_cmd && !k.bench_suites.empty())
    return bench_suites_main(k.bench_suites, k.bo.report_dir, k.o, k.bench_shard, k.command_line, reg);
  if (*k.bench_cmd && !k.bench_shard.empty()) throw CaseFileError("bench --shard takes effect with --suite only");
  if (*k.bench_cmd) {
    if (k.bo.quick) {  // explicit options win
      if (!*k.reps_opt) k.bo.reps = 5;
      if (!*k.warmup_opt) k.bo.warmup = 1;
      if (!*k.copy_opt) k.bo.copy_mib = 64;
    }
    return bench::bench_main(k.bo, reg);
  }
  if (*k.info) {
    print_info(reg);
    return kExitPass;
  }
  const Loaded loaded = load_cases(k.o, reg, k.allow_unknown_kernels);
  warn_host_compute_units(loaded.cases, reg);
  for (const auto& c : loaded.cases) fmt::print("{}\n", c.id());  // list
  for (const auto& u : loaded.unknown_kernels) fmt::print(stderr, "kvharness: unknown kernel (not loaded): {}\n", u);
  if (loaded.cases.empty()) fmt::print(stderr, "kvharness: no case matches: {}\n", why_nothing_matches(k.o, loaded));
  return loaded.cases.empty() ? kExitNothingRunnable : kExitPass;
}

// The cases of `loaded` whose ids `keep` accepts, with their worker indexes.
template <class Keep>
void keep_cases(Loaded& loaded, std::vector<size_t>& worker_index, Keep keep) {
  Loaded mine;
  std::vector<size_t> mine_index;
  for (size_t i = 0; i < loaded.cases.size(); ++i)
    if (keep(loaded.cases[i])) {
      mine.cases.push_back(loaded.cases[i]);
      mine.file_of.push_back(loaded.file_of[i]);
      mine_index.push_back(worker_index[i]);
    }
  loaded.cases = std::move(mine.cases);
  loaded.file_of = std::move(mine.file_of);
  worker_index = std::move(mine_index);
}

// Whether two paths name the same directory (a path that does not exist is only itself).
bool same_dir(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (std::filesystem::equivalent(a, b, ec)) return true;
  return std::filesystem::path(a).lexically_normal() == std::filesystem::path(b).lexically_normal();
}

// `run` after its arguments parsed: every path leaves a report set, an input error's too, so
// that the previous run's green files never outlive this one.
class RunCommand {
 public:
  RunCommand(Cli& k)
      : k_(k), o_(k.o), base_(report_base(k.command_line)), input_error_(k.bisect ? kExitNothingRunnable : kExitUsage) {
    base_.label = k.label;
    base_.case_files = o_.case_files;
    base_.filter = o_.filter;
    base_.seed = o_.seed;
  }
  int input_error() const { return input_error_; }

  /// Prints `message`; for `run` (not a worker), writes an incomplete report set with it. Returns `code`.
  int stop_before_any_case(int code, const std::string& message) {
    fmt::print(stderr, "kvharness: {}\n", message);
    if (!*k_.run || k_.isolate_worker) return code;
    if (!k_.resume_dir.empty() && same_dir(k_.resume_dir, o_.report_dir)) {
      // The report set there is the run --resume was to complete: its decided cases must survive a refusal.
      fmt::print(stderr, "kvharness: {} left as it was\n", o_.report_dir);
      return code;
    }
    RunReport rep = base_;
    const device::Info i = device::info();
    rep.backend = i.backend, rep.device = i.name, rep.arch = i.arch, rep.wave_size = i.wave_size;
    rep.runtime_version = i.runtime_version;
    rep.started_at = rep.finished_at = utc_now();
    rep.complete = false;  // no case was judged: never a green report
    rep.error = message;
    rep.exit_code = code;
    try {
      write_report_files(rep, o_.report_dir);
    } catch (const std::exception& e) {
      fmt::print(stderr, "kvharness: {}\n", e.what());
      return int(kExitHarness);
    }
    return code;
  }

  /// The run itself: cases loaded, sharded, resumed, isolated or not. Throws the input errors
  /// (CaseFileError, FilterError, OptionError, ProviderLoadError) and device errors for the caller.
  int run(int argc, char** argv) {
    const Registry reg = make_registry(o_);
    Loaded loaded = load_cases(o_, reg);
    add_known_failures(loaded);
    if (k_.isolate_worker) {  // a worker of --isolate: its parent loaded the same cases and writes the report
      device::configure_host(o_.wave_size, o_.random_order, o_.seed.value_or(1));
      return isolate_worker_main(loaded.cases, reg, o_);
    }
    warn_host_compute_units(loaded.cases, reg);
    // Each case's index in the list a worker of --isolate loads (before --shard and --resume).
    std::vector<size_t> worker_index(loaded.cases.size());
    for (size_t i = 0; i < worker_index.size(); ++i) worker_index[i] = i;
    if (!k_.shard_text.empty()) {
      const size_t all = loaded.cases.size();
      const Shard sh = shard();
      keep_cases(loaded, worker_index, [&](const Case& c) { return in_shard(c.id(), sh); });
      if (loaded.cases.empty())
        return stop_before_any_case(kExitNothingRunnable,
                                    fmt::format("--shard {} selects none of the {} cases", k_.shard_text, all));
      base_.shard = sh.str();
    }
    if (loaded.cases.empty())
      return stop_before_any_case(kExitNothingRunnable, "no case matches: " + why_nothing_matches(o_, loaded));
    if (const std::string why = decode_memory_refusal(loaded.cases, reg); !why.empty())
      return stop_before_any_case(kExitUsage, why);
    device::configure_host(o_.wave_size, o_.random_order, o_.seed.value_or(1));
    const device::Info di = device::info();
    base_.identity = run_identity(o_, KVH_VERSION, di.backend, di.name, di.wave_size);
    // Isolated unless told otherwise, on every backend: a crashing kernel costs one case, not the
    // run (issue 23: the cpu run lost 1,539 of 1,684 cases to one segfault), at a cost within noise.
    if (!*k_.run->get_option("--isolate")) o_.isolate = true;
    if (!k_.resume_dir.empty()) resume(loaded, worker_index);
    if (o_.isolate) set_worker_command(argc, argv, std::move(worker_index));
    return run_loaded(loaded, reg);
  }

 private:
  void add_known_failures(Loaded& loaded) const {
    for (const auto& path : o_.known_failures)
      for (auto& e : load_known_failures(path)) {
        // A known failure serves many suites, so covering nothing here is not an error; but say so.
        if (std::none_of(loaded.cases.begin(), loaded.cases.end(), [&](const Case& c) { return e.covers(c); }))
          fmt::print(stderr, "kvharness: warning: {}: this known failure covers no case of this run\n", e.source);
        loaded.expectations.push_back(std::move(e));
      }
  }
  Shard shard() const {
    try {
      return parse_shard(k_.shard_text);
    } catch (const std::invalid_argument& e) {
      throw OptionError(e.what());
    }
  }
  // --resume: the cases DIR/results.json decided are kept; the rest run.
  void resume(Loaded& loaded, std::vector<size_t>& worker_index) {
    try {
      o_.resumed = load_resumed(k_.resume_dir, loaded.cases, base_.identity, base_.shard);
    } catch (const PartialRunError& e) {
      throw OptionError(e.what());
    }
    std::set<std::string> done;
    for (const auto& cr : o_.resumed) done.insert(cr.c.id());
    const size_t all = loaded.cases.size();
    keep_cases(loaded, worker_index, [&](const Case& c) { return !done.count(c.id()); });
    fmt::print(stderr, "kvharness: --resume {}: {} of {} cases already decided, {} to run\n", k_.resume_dir,
               o_.resumed.size(), all, loaded.cases.size());
  }
  // A worker is this binary with this run's arguments (isolate.h); it runs the cases its parent names.
  void set_worker_command(int argc, char** argv, std::vector<size_t> worker_index) {
    char exe[4096];
    const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
    o_.worker_command = {n > 0 ? std::string(exe, size_t(n)) : std::string(argv[0])};
    for (int i = 1; i < argc; ++i) o_.worker_command.emplace_back(argv[i]);
    o_.worker_command.emplace_back("--isolate-worker");
    o_.worker_index = std::move(worker_index);
  }
  int run_loaded(Loaded& loaded, const Registry& reg) {
    o_.progress = !k_.no_progress && isatty(STDERR_FILENO);
    o_.heartbeat_seconds = k_.heartbeat >= 0 ? k_.heartbeat : (isatty(STDERR_FILENO) ? 0 : 10);
    o_.expectations = std::move(loaded.expectations);
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) std::signal(sig, on_fatal_signal);
    // Test hook: the nth device synchronize raises a sticky device fault (runner_test, ctest).
    if (const char* n = std::getenv("KVH_INJECT_FAULT"); n && *n) device::testing::inject_fault(std::atoi(n));
    base_.runtime_version = device::info().runtime_version;
    o_.print_end = [this](const RunReport& r) { print_end(r); };  // also when a case never returns
    const RunReport rep = run_cases(loaded.cases, loaded.file_of, reg, o_, g_stop, base_);
    print_end(rep);
    return rep.exit_code;
  }
  // The end of a run, however it ended (all cases, --fail-fast, a signal between cases or during
  // one, a timeout): the counts, wall time and `report:` line on stdout, why it stopped on stderr.
  void print_end(const RunReport& rep) const {
    const Counts n = count(rep);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - k_.started).count();
    fmt::print("{} cases: {}{}; {} unexpected\nwall time: {:.1f} s{}\nreport: {}/summary.md\n", rep.results.size(),
               counts_text(n), rep.complete ? "" : " (INCOMPLETE)", n.unexpected(), wall,
               wall >= 60 ? " (" + human_duration(wall) + ")" : "", o_.report_dir);
    if (k_.profile) fmt::print("\n{}", time_profile_markdown(rep, 10));
    std::fflush(stdout);
    if (!rep.stopped_because.empty()) fmt::print(stderr, "kvharness: run stopped: {}\n", rep.stopped_because);
    if (!rep.complete && !rep.stopped_because.empty())  // a newcomer found --resume only in docs/ci.md
      fmt::print(stderr, "kvharness: to run the rest, repeat this command with --resume {}\n", o_.report_dir);
    if (rep.exit_code == kExitHarness)
      fmt::print(stderr, "kvharness: the harness itself failed (see the CRASH harness_error cases): exit 128\n");
  }

  Cli& k_;
  RunOptions& o_;
  RunReport base_;
  int input_error_;
};

// How many edits (a letter inserted, deleted, replaced, or two neighbours swapped) turn `a` into
// `b`: how far a typo is from a name ("rnu" is 1 from "run", "--fitler" 1 from "--filter").
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  std::iota(d[0].begin(), d[0].end(), size_t(0));
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1] ? 1 : 0)});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The name of `names` closest to `typed`, when close enough to be what was meant: at most a third
// of its letters off (one for short names); none for a one-letter option ("-x" is no "-h").
std::optional<std::string> closest_name(const std::string& typed, const std::vector<std::string>& names) {
  std::optional<std::string> best;
  size_t best_distance = 0;
  for (const auto& n : names)
    if (const size_t d = edit_distance(typed, n); !best || d < best_distance) best = n, best_distance = d;
  if (!best || typed.size() <= 2 || best_distance > std::max<size_t>(1, typed.size() / 3)) return std::nullopt;
  return best;
}

// The options a person may type to `cmd` ("--filter", "-f"); internal ones (no group) left out.
std::vector<std::string> option_names(const CLI::App* cmd) {
  std::vector<std::string> out;
  for (const CLI::Option* opt : cmd->get_options()) {
    if (opt->get_group().empty()) continue;
    for (const auto& l : opt->get_lnames()) out.push_back("--" + l);
    for (const auto& n : opt->get_snames()) out.push_back("-" + n);
  }
  return out;
}

// Every command of `app`, in the order of its --help.
std::vector<const CLI::App*> all_commands(const CLI::App& app) {
  return app.get_subcommands(std::function<bool(const CLI::App*)>());
}

// What is wrong with unknown argument `typed` of `cmd` (nullptr: no command yet), with the
// closest valid name, or the commands that have it when it is another command's option.
std::string unknown_argument(Cli& k, const CLI::App* cmd, const std::string& typed) {
  std::vector<std::string> commands;
  for (const CLI::App* sub : all_commands(k.app)) commands.push_back(sub->get_name());
  if (typed.empty() || typed[0] != '-') {
    if (cmd) return fmt::format("unexpected argument '{}'", typed);
    const auto near = closest_name(typed, commands);
    return near ? fmt::format("unknown command '{}'; did you mean '{}'?", typed, *near)
                : fmt::format("unknown command '{}'; the commands: {}", typed, fmt::join(commands, ", "));
  }
  const std::string name = typed.substr(0, typed.find('='));  // --fitler=x
  if (const auto near = closest_name(name, option_names(cmd ? cmd : &k.app)))
    return fmt::format("unknown option '{}'; did you mean '{}'?", name, *near);
  std::vector<std::string> owners;  // an option of another command, e.g. `run --fail-on`
  for (const CLI::App* sub : all_commands(k.app)) {
    const auto names = option_names(sub);
    if (std::find(names.begin(), names.end(), name) != names.end()) owners.push_back(sub->get_name());
  }
  return owners.empty() ? fmt::format("unknown option '{}'", name)
                        : fmt::format("unknown option '{}' (an option of {})", name, fmt::join(owners, ", "));
}

// A command-line error in kvharness's words, on stderr: `kvharness CMD: what`, the closest valid
// name of an unknown option or command, and where the help is. Returns 2 (125 under --bisect:
// a usage error says nothing about the commit).
int usage_error(Cli& k, const CLI::ParseError& e, bool bisecting) {
  const CLI::App* cmd = nullptr;  // the command whose arguments were being parsed
  for (const CLI::App* sub : k.app.get_subcommands()) cmd = sub;
  const std::vector<std::string> extra = k.app.remaining(true);
  const std::string who = cmd ? "kvharness " + cmd->get_name() : std::string("kvharness");
  const std::string what = !extra.empty() ? unknown_argument(k, cmd, extra.front()) : std::string(e.what());
  fmt::print(stderr, "{}: {} (`{} --help` lists {})\n", who, what, who, cmd ? "its options" : "the commands");
  return bisecting ? kExitNothingRunnable : kExitUsage;
}

}  // namespace

int cli_main(int argc, char** argv) {
  Cli k;
  k.app.set_version_flag("--version", std::string("kvharness ") + KVH_VERSION);
  k.app.require_subcommand(1);
  add_run(k);
  add_run_scheduling(k);
  add_list_and_info(k);
  add_bench(k);
  add_compare_and_merge(k);
  add_bisect_run(k);
  if (argc < 2) {  // a bare `kvharness`: what it can do
    fmt::print(stderr, "{}\nkvharness: a command is required\n", k.app.help());
    return kExitUsage;
  }
  rewrite_bisect_run(k, argc, argv);
  try {
    k.app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help, --version
    return k.app.exit(e);
  } catch (const CLI::ParseError& e) {
    // Under `git bisect run`, a usage error says nothing about the commit: skip it, never "bad".
    const bool bisecting = std::any_of(argv, argv + argc, [](const char* a) { return std::string(a) == "--bisect"; });
    return usage_error(k, e, bisecting);
  }
  k.o.program = argv[0];
  if (!k.resume_dir.empty() && !*k.report_dir_opt) k.o.report_dir = k.resume_dir;  // --resume DIR completes DIR
  for (int i = 0; i < argc; ++i) k.command_line += (i ? " " : "") + std::string(argv[i]);
  if (k.o.case_files.empty()) {
    k.o.case_files = default_case_files();
    // Which suite ran when none was named (a worker's parent said it already).
    if ((*k.run && !k.isolate_worker) || *k.list)
      fmt::print(stderr, "kvharness: cases: {} (default)\n", fmt::join(k.o.case_files, " "));
  }
  RunCommand cmd(k);
  if (*k.run) try {
      check_report_dir(k.o.report_dir);  // before anything runs: a bad --report-dir loses no work
    } catch (const std::exception& e) {
      fmt::print(stderr, "kvharness: {}\n", e.what());
      return cmd.input_error();
    }
  try {
    try {
      reference_cache_mb_from_env();  // a typo there would quietly turn sharing off
    } catch (const std::invalid_argument& e) {
      throw OptionError(e.what());
    }
    if (auto done = other_commands(k); done) return *done;
    return cmd.run(argc, argv);
  } catch (const ProviderLoadError& e) {
    return cmd.stop_before_any_case(kExitNothingRunnable,
                                    std::string(e.what()) + (bisecting(k) ? " (this commit cannot be tested)" : ""));
  } catch (const CaseFileError& e) {
    return cmd.stop_before_any_case(cmd.input_error(), e.what());
  } catch (const FilterError& e) {
    return cmd.stop_before_any_case(cmd.input_error(), std::string("--filter: ") + e.what());
  } catch (const OptionError& e) {
    return cmd.stop_before_any_case(cmd.input_error(), e.what());
  } catch (const std::exception& e) {  // device::Error and the rest: the harness failed
    return cmd.stop_before_any_case(kExitHarness, e.what());
  }
}

}  // namespace kvh
