#include <fmt/format.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "report/report.h"

namespace kvh {

namespace {

// How one case reads in a matrix cell, worst first: an unexpected CRASH,
// an unexpected FAIL, XPASS, INTERRUPTED, an expected failure (xfail), PASS, n/a.
int severity(const CaseResult& cr) {
  if (cr.unexpected_failure()) return cr.v.status == Status::Crash ? 6 : cr.v.status == Status::Fail ? 5 : 4;
  if (cr.v.status == Status::Interrupted) return 3;
  if (cr.v.status == Status::Fail || cr.v.status == Status::Crash) return 2;
  return cr.v.status == Status::Pass ? 1 : 0;
}

std::string label(const CaseResult& cr) {
  switch (severity(cr)) {
    case 6: return fmt::format("**CRASH** {}", cr.v.reason);
    case 5: return fmt::format("**FAIL** {}", cr.v.reason);
    case 4: return "**XPASS**";
    case 3: return "INTERRUPTED";
    case 2: return fmt::format("xfail {}", cr.v.reason);
    case 1: return "PASS";
  }
  return "n/a";
}

// One matrix cell: the worst case's label, with how many of the cell's cases share its severity.
struct Cell {
  int n = 0, worst = -1, at_worst = 0;
  std::string text_of_worst;
  void add(const CaseResult& cr) {
    ++n;
    const int sev = severity(cr);
    if (sev > worst) worst = sev, at_worst = 0, text_of_worst = label(cr);
    at_worst += sev == worst;
  }
  std::string text() const {
    if (n == 0) return "—";
    if (at_worst == n) return text_of_worst;
    return fmt::format("{} {}/{}", text_of_worst, at_worst, n);
  }
};

// Rows and columns in first-seen order, as the case file lists them.
struct Ordered {
  std::vector<std::string> items;
  void add(const std::string& s) {
    if (std::find(items.begin(), items.end(), s) == items.end()) items.push_back(s);
  }
};

bool name_char(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; }

// `text` (a variant, a kernel name, a route) with every whole-word kernel name that --replace-kernel
// replaced written as its label, "REAL (replaced by python:mod:WITH)": the substitute ran.
std::string relabel(const RunReport& r, const std::string& text) {
  if (r.replaced_kernels.empty()) return text;
  std::string out;
  for (size_t i = 0; i < text.size();) {
    bool hit = false;
    if (i == 0 || !name_char(text[i - 1]))
      for (const auto& [real, label] : r.replaced_kernels)
        if (text.compare(i, real.size(), real) == 0 &&
            (i + real.size() == text.size() || !name_char(text[i + real.size()]))) {
          out += label;
          i += real.size();
          hit = true;
          break;
        }
    if (!hit) out += text[i++];
  }
  return out;
}

void write_matrices(std::string& out, const RunReport& r) {
  // One matrix per (kind, model, head size, and for decode cases what the cache holds outside the
  // case's tokens: stale slots and block-table padding when not the defaults): rows = variants, columns = layouts.
  std::vector<std::string> order;
  std::map<std::string, std::vector<const CaseResult*>> groups;
  for (const auto& cr : r.results) {
    std::string cache;
    if (cr.c.stale != Stale::Random) cache += fmt::format(", stale {}", to_string(cr.c.stale));
    if (cr.c.kind != CaseKind::Write && cr.c.block_table_padding >= 0)
      cache += ", block_table_padding " + block_table_padding_name(cr.c.block_table_padding);
    if (cr.c.kind != CaseKind::Write && cr.c.min_block_id != 1) cache += fmt::format(", block ids >= {}", cr.c.min_block_id);
    const std::string key = fmt::format("{} — {} (tp={}, {} heads / {} kv heads per rank), head_size {}{}",
                                        to_string(cr.c.kind), cr.c.model, cr.c.tp, cr.c.num_heads,
                                        cr.c.num_kv_heads, cr.c.head_size, cache);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&cr);
  }
  for (const auto& key : order) {
    Ordered rows, cols;
    std::map<std::pair<std::string, std::string>, Cell> cells;
    std::set<std::string> axes;
    for (const CaseResult* cr : groups[key]) {
      rows.add(cr->c.variant());
      cols.add(to_string(cr->c.layout));
      cells[{cr->c.variant(), to_string(cr->c.layout)}].add(*cr);
      axes.insert(fmt::format("block_size {}", cr->c.block_size));
      axes.insert(fmt::format("{} tokens", cr->c.batch_size));
      axes.insert(to_string(cr->c.dtype));
    }
    out += fmt::format("\n### {}\n\n", key);
    out += "Each cell covers: ";
    bool first = true;
    for (const auto& a : axes) out += (first ? "" : ", ") + a, first = false;
    out += ".\n\n| variant |";
    for (const auto& c : cols.items) out += " " + c + " |";
    out += "\n|---|";
    for (size_t i = 0; i < cols.items.size(); ++i) out += "---|";
    out += "\n";
    for (const auto& row : rows.items) {
      out += "| " + relabel(r, row) + " |";
      for (const auto& c : cols.items) out += " " + cells[{row, c}].text() + " |";
      out += "\n";
    }
  }
}

// The PR thread's tables, kernel by kernel: per model "Variant | batch_size |
// verdict | max abs error | routed to", then "Model | Type | batch_size=N ...".
void write_pipeline_tables(std::string& out, const RunReport& r) {
  Ordered models, batches;
  for (const auto& cr : r.results)
    if (cr.c.kind == CaseKind::Pipeline) models.add(cr.c.model), batches.add(std::to_string(cr.c.batch_size));
  if (models.items.empty()) return;
  out += "\n## Pipeline: writer then reader, per model\n";
  std::map<std::string, bool> hybrid;
  for (const auto& m : models.items) {
    // The PR's columns, plus head_size and layout where this file varies them.
    std::set<std::string> head_sizes, layouts;
    for (const auto& cr : r.results)
      if (cr.c.kind == CaseKind::Pipeline && cr.c.model == m)
        head_sizes.insert(std::to_string(cr.c.head_size)), layouts.insert(to_string(cr.c.layout));
    const bool show_hd = head_sizes.size() > 1, show_layout = layouts.size() > 1;
    bool timed = false;  // GPU backends time every passing case
    for (const auto& cr : r.results) timed |= cr.c.kind == CaseKind::Pipeline && cr.c.model == m && cr.v.kernel_us.has_value();
    out += fmt::format("\n### {}\n\n| Variant |{}{} batch_size | verdict | max abs error | routed to |{}\n|---|{}{}---|---|---|---|{}\n",
                       m, show_hd ? " head_size |" : "", show_layout ? " layout |" : "", timed ? " reader us |" : "",
                       show_hd ? "---|" : "", show_layout ? "---|" : "", timed ? "---|" : "");
    for (const auto& cr : r.results) {
      if (cr.c.kind != CaseKind::Pipeline || cr.c.model != m) continue;
      hybrid[m] = cr.c.hybrid;
      std::string verdict = label(cr);
      for (size_t k = 1; k < cr.v.causes.size(); ++k) verdict += fmt::format(" + {} {}", cr.v.causes[k].component, cr.v.causes[k].reason);
      const std::string err = cr.v.max_abs_err ? fmt::format("{:.3g}", *cr.v.max_abs_err) : "— (not launched)";
      const std::string routed = cr.routed_to.empty()           ? "—"
                                 : cr.c.router_policy.empty() ? relabel(r, cr.routed_to)
                                                              : fmt::format("{} ({})", relabel(r, cr.routed_to),
                                                                            cr.c.router_policy);
      const std::string us = !timed ? "" : cr.v.kernel_us ? fmt::format(" {:.1f} |", *cr.v.kernel_us) : " — |";
      out += fmt::format("| {} |{}{} {} | {} | {} | {} |{}\n", relabel(r, cr.c.variant()),
                         show_hd ? fmt::format(" {} |", cr.c.head_size) : "",
                         show_layout ? fmt::format(" {} |", to_string(cr.c.layout)) : "", cr.c.batch_size, verdict, err,
                         routed, us);
    }
  }
  out += "\n### Summary\n\n| Model | Type |";
  for (const auto& b : batches.items) out += fmt::format(" batch_size={} |", b);
  out += "\n|---|---|";
  for (size_t i = 0; i < batches.items.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& m : models.items) {
    out += fmt::format("| {} | {} |", m, hybrid[m] ? "Hybrid" : "Attention-only");
    for (const auto& b : batches.items) {
      int pass = 0, n = 0;
      Ordered failed;
      std::map<std::string, int> times;
      for (const auto& cr : r.results) {
        if (cr.c.kind != CaseKind::Pipeline || cr.c.model != m || std::to_string(cr.c.batch_size) != b) continue;
        ++n;
        if (cr.v.status == Status::Pass) ++pass;
        else if (cr.v.status != Status::Unsupported) {
          const std::string f = fmt::format("{} ({}{})", relabel(r, cr.c.variant()), cr.expected ? "xfail " : "",
                                            cr.v.reason);
          failed.add(f);
          ++times[f];
        }
      }
      std::vector<std::string> parts;
      for (const auto& f : failed.items) parts.push_back(times[f] > 1 ? fmt::format("{} ×{}", f, times[f]) : f);
      if (n == 0) out += " — |";
      else out += fmt::format(" {}/{} PASS{}{} |", pass, n, parts.empty() ? "" : "; FAIL: ", fmt::join(parts, ", "));
    }
    out += "\n";
  }
}

// The kernel a failure belongs to, for grouping: the writer, the reader that ran, or the router
// policy (an UNSUPPORTED case: the kernels it names). Replaced kernels by their labels.
std::string kernel_of(const RunReport& r, const CaseResult& cr) {
  const std::string reader = cr.routed_to.empty() ? cr.c.reader : cr.routed_to;
  if (cr.v.status == Status::Unsupported) {
    if (cr.c.kind == CaseKind::Write) return relabel(r, cr.c.writer);
    return relabel(r, cr.c.kind == CaseKind::Pipeline ? cr.c.writer + " + " + reader : reader);
  }
  if (cr.v.component.empty()) return relabel(r, cr.c.kind == CaseKind::Write ? cr.c.writer : cr.c.variant());  // XPASS
  if (cr.v.component == component::kWriter) return relabel(r, cr.c.writer);
  if (cr.v.component == component::kRouter) return "router " + cr.c.router_policy;
  if (cr.v.component == component::kHarness) return "the harness";
  return relabel(r, reader);
}

void write_failure(std::string& out, int n, const CaseResult& cr) {
  out += fmt::format("\n#### {} `{}`\n\n- verdict: {} ({}, {}){}\n- {}\n", n, cr.c.id(), to_string(cr.v.status),
                     cr.v.reason, cr.v.component.empty() ? "-" : cr.v.component,
                     cr.expected ? " — expected" : "", cr.v.detail);
  for (size_t k = 1; k < cr.v.causes.size(); ++k)
    out += fmt::format("- also: {} {}: {}\n", cr.v.causes[k].component, cr.v.causes[k].reason, cr.v.causes[k].detail);
  for (const auto& k : cr.v.causes)
    if (!k.expected_by.empty()) out += fmt::format("- {} {} expected by {}\n", k.component, k.reason, k.expected_by);
  if (!cr.context_lens.empty() && cr.context_lens.size() <= 16)
    out += fmt::format("- context_lens {}\n", fmt::join(cr.context_lens, ", "));
  if (!cr.query_lens.empty() && cr.query_lens.size() <= 16)  // a ragged case: token J of a sequence is its J-th new token
    out += fmt::format("- query_lens {} ({}; row `seq S token J` is new token J of sequence S, at position "
                       "context_len - query_len + J)\n",
                       fmt::join(cr.query_lens, ", "), cr.c.causal ? "causal" : "not causal");
  if (cr.v.max_abs_err)  // max_ulp_err: issue 23 (B long contexts)
    out += fmt::format("- max abs error {:.6g}, max rel error {:.6g}{}\n", *cr.v.max_abs_err, cr.v.max_rel_err.value_or(0),
                       cr.v.max_ulp_err ? fmt::format(", max {:.3g} output ulps", *cr.v.max_ulp_err) : "");
  if (!cr.key_layout.empty()) out += fmt::format("- K view `{}`, V view `{}`\n", cr.key_layout, cr.value_layout);
  out += fmt::format("- reproduce: `{}`\n", cr.repro);
}

}  // namespace

std::string message_key(const std::string& m) {
  std::string out;
  for (size_t i = 0; i < m.size();) {
    const char prev = i ? m[i - 1] : ' ';
    if (!std::isdigit(static_cast<unsigned char>(m[i])) || name_char(prev) || prev == ':') {
      // A name (fp8, gfx942), a source line (k.py:42), or no number: as it is, up to the next word.
      out += m[i++];
      while (i < m.size() && std::isdigit(static_cast<unsigned char>(m[i])) && name_char(m[i - 1])) out += m[i++];
      continue;
    }
    if (m.compare(i, 2, "0x") == 0 && i + 2 < m.size() && std::isxdigit(static_cast<unsigned char>(m[i + 2]))) {
      out += "0xN";
      for (i += 2; i < m.size() && std::isxdigit(static_cast<unsigned char>(m[i])); ++i) {
      }
      continue;
    }
    out += 'N';  // digits, a fraction, an exponent: 12, 1.5, 3e-05
    while (i < m.size() && std::isdigit(static_cast<unsigned char>(m[i]))) ++i;
    if (i + 1 < m.size() && m[i] == '.' && std::isdigit(static_cast<unsigned char>(m[i + 1])))
      for (++i; i < m.size() && std::isdigit(static_cast<unsigned char>(m[i])); ++i) {
      }
    if (i + 1 < m.size() && (m[i] == 'e' || m[i] == 'E')) {
      size_t j = i + 1;
      if (j < m.size() && (m[j] == '-' || m[j] == '+')) ++j;
      if (j < m.size() && std::isdigit(static_cast<unsigned char>(m[j])))
        for (i = j; i < m.size() && std::isdigit(static_cast<unsigned char>(m[i])); ++i) {
        }
    }
  }
  return out;
}

std::string time_profile_markdown(const RunReport& r, size_t slowest) {
  std::vector<PhaseTimes> all;
  double wall = 0;
  for (const auto& cr : r.results) {
    all.push_back(cr.phases);
    wall += cr.wall_ms;
  }
  std::string out = fmt::format("{} cases, {:.2f} s of case wall time; phases largest first (a case charges its "
                                "time to one phase at a time):\n\n| phase | seconds | share |\n|---|---|---|\n",
                                r.results.size(), wall / 1000);
  double charged = 0;
  for (const auto& [name, ms] : phase_totals(all)) {
    charged += ms;
    out += fmt::format("| {} | {:.2f} | {:.1f}% |\n", name, ms / 1000, wall > 0 ? 100 * ms / wall : 0.0);
  }
  out += fmt::format("| (between phases: judging, repro lines) | {:.2f} | {:.1f}% |\n", (wall - charged) / 1000,
                     wall > 0 ? 100 * (wall - charged) / wall : 0.0);
  std::vector<const CaseResult*> by_wall;
  for (const auto& cr : r.results) by_wall.push_back(&cr);
  std::stable_sort(by_wall.begin(), by_wall.end(), [](auto* a, auto* b) { return a->wall_ms > b->wall_ms; });
  if (by_wall.size() > slowest) by_wall.resize(slowest);
  if (by_wall.empty()) return out;
  out += "\n| slowest cases | ms | largest phase | float64 reference ms (host, overlapped) |\n|---|---|---|---|\n";
  for (const CaseResult* cr : by_wall) {
    const auto top = std::max_element(cr->phases.begin(), cr->phases.end()) - cr->phases.begin();
    out += fmt::format("| `{}` | {:.1f} | {} {:.1f} ms | {} |\n", cr->c.id(), cr->wall_ms, phase_name(Phase(top)),
                       cr->phases[size_t(top)], cr->reference_ms > 0 ? fmt::format("{:.1f}", cr->reference_ms) : "-");
  }
  return out;
}

namespace {

// The header: run, backend, case files, counts, exit code, what the cells mean.
void write_header(std::string& out, const RunReport& r) {
  const Counts n = count(r);
  out += fmt::format("- backend: {} ({}, {}), wave size {}; kvharness {}{}\n", r.backend, r.device, r.arch, r.wave_size,
                     r.tool_version.empty() ? "?" : r.tool_version, r.label.empty() ? "" : ", label " + r.label);
  out += fmt::format("- started {}, finished {}{}\n", r.started_at, r.finished_at.empty() ? "—" : r.finished_at,
                     r.complete ? ""
                     : " — **INCOMPLETE: " +
                           (!r.stopped_because.empty() ? r.stopped_because
                            : !r.error.empty()         ? r.error
                                                       : std::string("not finished (written while the run goes on, "
                                                                     "or the process was killed)")) +
                           "**");
  if (!r.error.empty()) out += fmt::format("- **error: {}**\n", r.error);
  out += fmt::format("- case files: {}{}{}\n", fmt::join(r.case_files, ", "),
                     r.filter.empty() ? "" : fmt::format(", filter `{}`", r.filter),
                     r.seed ? fmt::format(", seed {}", *r.seed) : "");
  if (!r.replaced_kernels.empty()) {
    std::vector<std::string> labels;
    for (const auto& [real, label] : r.replaced_kernels) labels.push_back(label);
    out += fmt::format("- kernels replaced (--replace-kernel; the substitute's code and declaration ran, judged "
                       "under the real name): {}\n", fmt::join(labels, "; "));
  }
  out += fmt::format("- {} cases: {} PASS, {} FAIL, {} CRASH, {} XPASS, {} UNSUPPORTED{}\n", r.results.size(), n.pass,
                     n.fail, n.crash, n.xpass, n.unsupported,
                     n.interrupted ? fmt::format(", {} INTERRUPTED", n.interrupted) : "");
  out += fmt::format("- **{} unexpected failure(s)**; {} expected failure(s) (xfail); exit code {}\n", n.unexpected,
                     n.expected, r.exit_code < 0 ? std::string("—") : std::to_string(r.exit_code));
  out += "- Cells: `PASS`; `**FAIL** reason` / `**CRASH** reason` unexpected (they fail the run); `**XPASS**` a case "
         "declared to fail that passed (fails the run); `xfail reason` an expected failure of a regression fixture "
         "(`fixture_*` kernels, the router policy `aiter-pre-b4885d2` alias `aiter-v0.1.10.post3`) or of a "
         "declaration; `n/a` unsupported. `k/n`: k of the cell's n cases are in the state shown.\n";
}

// "`a`, `b`, `c` and 93 more": the first `shown` case ids of a group.
std::string examples(const std::vector<const CaseResult*>& cases, size_t shown) {
  std::vector<std::string> ids;
  for (size_t i = 0; i < cases.size() && i < shown; ++i) ids.push_back("`" + cases[i]->c.id() + "`");
  return fmt::format("{}{}", fmt::join(ids, ", "),
                     cases.size() > shown ? fmt::format(" and {} more", cases.size() - shown) : "");
}

// Groups of cases in first-seen order.
struct Groups {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const CaseResult*>> cases;
  void add(const std::string& key, const CaseResult& cr) {
    if (!cases.count(key)) order.push_back(key);
    cases[key].push_back(&cr);
  }
};

// `s` on one line, for a markdown list item or table cell: newlines (a Triton CompilationError
// quotes the kernel's source) become " ⏎ ", a backtick a quote, a table's "|" "\\|".
std::string one_line(const std::string& s, bool in_table) {
  std::string out;
  for (char ch : s) {
    if (ch == '\n') out += " ⏎ ";
    else if (ch == '`') out += '\'';
    else if (ch == '|' && in_table) out += "\\|";
    else if (ch != '\r') out += ch;
  }
  return out;
}

constexpr const char* kGroupingRule =
    "CRASHes and UNSUPPORTED cases are grouped by kernel and message: messages that differ only in numbers (sizes, "
    "counts, addresses) are one finding, while a different source line (`file.py:LINE`), a different "
    "word or a different kernel is another.";

// Unexpected failures first. A CRASH is grouped by (kernel, message_key): one compile error that hits
// 96 cases is one finding with its count, a few case ids and one case in full with its repro. Other
// failures are grouped by (kernel, layout, reason), every case listed: one bug usually fails a whole group.
void write_unexpected(std::string& out, const RunReport& r) {
  Groups crashes, others;
  for (const auto& cr : r.results) {
    if (!cr.unexpected_failure()) continue;
    if (cr.v.status == Status::Crash)
      crashes.add(fmt::format("{} — CRASH {}\x1f{}", kernel_of(r, cr), cr.v.reason, message_key(cr.v.detail)), cr);
    else
      others.add(fmt::format("{} — {} — {} {}", kernel_of(r, cr), to_string(cr.c.layout), to_string(cr.v.status),
                             cr.v.reason),
                 cr);
  }
  out += "\n## Unexpected failures\n";
  if (crashes.order.empty() && others.order.empty()) out += "\nNone.\n";
  if (!crashes.order.empty()) out += fmt::format("\n{}\n", kGroupingRule);
  int k = 0;
  for (const auto& key : crashes.order) {
    const auto& g = crashes.cases[key];
    std::set<std::string> layouts;
    for (const CaseResult* cr : g) layouts.insert(to_string(cr->c.layout));
    const size_t cut = key.find('\x1f');
    // The first case's own message: the key's N would print "a power of N" for "a power of 2".
    out += fmt::format("\n### {} ({} case{})\n\n- message (the first case's; the others differ at most in numbers): "
                       "`{}`\n- {} case{} ({}): {}\n- the first in full:\n",
                       key.substr(0, cut), g.size(), g.size() == 1 ? "" : "s", one_line(g.front()->v.detail, false), g.size(),
                       g.size() == 1 ? "" : "s", fmt::join(layouts, ", "), examples(g, 3));
    write_failure(out, ++k, *g.front());
  }
  for (const auto& key : others.order) {
    const auto& g = others.cases[key];
    out += fmt::format("\n### {} ({} case{})\n", key, g.size(), g.size() == 1 ? "" : "s");
    for (const CaseResult* cr : g) write_failure(out, ++k, *cr);
  }
}

// Counts per (model, kind), models in the order of the run.
void write_per_model(std::string& out, const RunReport& r) {
  out += "\n## Per model\n\n| model | kind | cases | PASS | unexpected | xfail | XPASS | UNSUPPORTED |\n"
         "|---|---|---|---|---|---|---|---|\n";
  struct Row {
    int cases = 0, pass = 0, unexpected = 0, xfail = 0, xpass = 0, unsupported = 0;
  };
  std::map<std::pair<std::string, std::string>, Row> per_model;
  Ordered models;
  for (const auto& cr : r.results) {
    Row& row = per_model[{cr.c.model, to_string(cr.c.kind)}];
    ++row.cases;
    row.pass += cr.v.status == Status::Pass;
    row.unexpected += cr.unexpected_failure();
    row.xfail += cr.expected;
    row.xpass += cr.v.status == Status::Xpass;
    row.unsupported += cr.v.status == Status::Unsupported;
    models.add(cr.c.model);
  }
  for (const auto& m : models.items)
    for (const char* kind : {"write", "attention", "pipeline"}) {
      auto it = per_model.find({m, kind});
      if (it == per_model.end()) continue;
      const Row& c = it->second;
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", m, kind, c.cases, c.pass, c.unexpected, c.xfail,
                         c.xpass, c.unsupported);
    }
}

// Every expected failure with its reason, then every UNSUPPORTED case with why.
void write_expected_and_unsupported(std::string& out, const RunReport& r) {
  out += "\n## Expected failures\n";
  int x = 0;
  for (const auto& cr : r.results)
    if (cr.expected) write_failure(out, ++x, cr);
  if (x == 0) out += "\nNone.\n";
  // UNSUPPORTED: one row per (kernel, message_key), with the first case's reason as it reads.
  Groups unsupported;
  for (const auto& cr : r.results)
    if (cr.v.status == Status::Unsupported)
      unsupported.add(kernel_of(r, cr) + "\x1f" + message_key(cr.v.detail), cr);
  if (unsupported.order.empty()) return;
  out += fmt::format("\n## Unsupported\n\n{}\n\n| kernel | reason (of the first case) | cases | e.g. |\n"
                     "|---|---|---|---|\n", kGroupingRule);
  for (const auto& key : unsupported.order) {
    const auto& g = unsupported.cases[key];
    out += fmt::format("| {} | {} | {} | {} |\n", key.substr(0, key.find('\x1f')), one_line(g.front()->v.detail, true),
                       g.size(),
                       examples(g, 3));
  }
}

}  // namespace

std::string summary_markdown(const RunReport& r) {
  std::string out = "# kvharness run\n\n";
  write_header(out, r);
  write_unexpected(out, r);
  write_pipeline_tables(out, r);
  out += "\n## Matrices\n";
  write_matrices(out, r);
  write_per_model(out, r);
  out += "\n## Where the time went\n\n" + time_profile_markdown(r, 5);
  write_expected_and_unsupported(out, r);
  return out;
}

}  // namespace kvh
