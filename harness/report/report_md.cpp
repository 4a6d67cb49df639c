#include <fmt/format.h>

#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
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

// Strings from outside the harness (a kernel's exception text, a case file's `why`, model and variant
// names, a provider's kernel names) as Markdown text that renders as written and nothing else: HTML's
// < and & as entities (no tag or entity of theirs survives), the Markdown punctuation that could start
// emphasis, code, a link or a table cell backslash-escaped, and one line (a newline reads " ⏎ "). A `>`
// without its `<` starts no tag and stays, so "a -> b" reads as written.
std::string md_text(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    const char ch = s[i];
    switch (ch) {
      case '\n': out += " ⏎ "; break;
      case '\r': break;
      case '<': out += "&lt;"; break;
      case '&': out += "&amp;"; break;
      case '\\': case '`': case '*': case '[': case ']': case '|': case '~': out += '\\', out += ch; break;
      case '_':  // between letters or digits (head_size) it is no emphasis: left as is, so names stay readable
        if (i == 0 || i + 1 == s.size() || !std::isalnum(static_cast<unsigned char>(s[i - 1])) ||
            !std::isalnum(static_cast<unsigned char>(s[i + 1])))
          out += '\\';
        out += ch;
        break;
      default: out += ch;
    }
  }
  return out;
}

// `s` as a Markdown code span: shown literally by every CommonMark renderer (no HTML, no emphasis
// inside), on one line; a backtick would end the span early and becomes a quote; in a table, `|`
// would end the cell.
std::string code(const std::string& s, bool in_table = false) {
  std::string out = "`";
  for (char ch : s) {
    if (ch == '\n') out += " ⏎ ";
    else if (ch == '`') out += '\'';
    else if (ch == '|' && in_table) out += "\\|";
    else if (ch != '\r') out += ch;
  }
  return out + "`";
}

// "1 token", "2 sequences": a count with its noun, singular or plural.
std::string counted(int64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// "2, 4, 160": numbers in increasing order.
std::string ascending(const std::set<int64_t>& values) { return fmt::format("{}", fmt::join(values, ", ")); }

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

// The --replace-kernel labels of the kernels `cr` ran (writer, reader, the reader its router picked).
std::vector<std::string> replaced_in(const RunReport& r, const CaseResult& cr) {
  std::vector<std::string> out;
  for (const std::string* k : {&cr.c.writer, &cr.c.reader, &cr.routed_to})
    if (auto it = r.replaced_kernels.find(*k); !k->empty() && it != r.replaced_kernels.end() &&
                                               std::find(out.begin(), out.end(), it->second) == out.end())
      out.push_back(it->second);
  return out;
}

// A row's name as the reader must see it: a named row ("after fix") that ran a substitute says so
// ("after fix — reshape_and_cache_shuffle (replaced by X)"); a row named by its kernels has them relabelled.
std::string row_label(const RunReport& r, const std::string& variant, const std::vector<std::string>& replaced) {
  std::string out = relabel(r, variant);
  for (const auto& label : replaced)
    if (out.find(label) == std::string::npos) out += " — " + label;
  return md_text(out);
}

// What a matrix cell covers, each axis named by what it counts, numbers in increasing order: a write
// case's batch_size counts tokens, a decode case's sequences. "block_size 16; batches of 2, 4, 160
// sequences; bf16".
std::string batch_axes(CaseKind kind, const std::set<int64_t>& block_sizes, const std::set<int64_t>& batch_sizes,
                       const std::vector<std::string>& dtypes) {
  const bool write = kind == CaseKind::Write;
  const char* many = write ? "tokens" : "sequences";
  const std::string batches =
      batch_sizes.size() == 1
          ? fmt::format("a batch of {}", counted(*batch_sizes.begin(), write ? "token" : "sequence", many))
          : fmt::format("batches of {} {}", ascending(batch_sizes), many);
  return fmt::format("block_size {}; {}; {}", ascending(block_sizes), batches, fmt::join(dtypes, ", "));
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
                                        to_string(cr.c.kind), md_text(cr.c.model), cr.c.tp, cr.c.num_heads,
                                        cr.c.num_kv_heads, cr.c.head_size, cache);
    if (!groups.count(key)) order.push_back(key);
    groups[key].push_back(&cr);
  }
  for (const auto& key : order) {
    Ordered rows, cols;
    std::map<std::pair<std::string, std::string>, Cell> cells;
    std::set<int64_t> block_sizes, batch_sizes;
    Ordered dtypes;
    std::map<std::string, Ordered> replaced;  // per row: the substitutes its cases ran
    for (const CaseResult* cr : groups[key]) {
      rows.add(cr->c.variant());
      for (const auto& label : replaced_in(r, *cr)) replaced[cr->c.variant()].add(label);
      cols.add(to_string(cr->c.layout));
      cells[{cr->c.variant(), to_string(cr->c.layout)}].add(*cr);
      block_sizes.insert(cr->c.block_size);
      batch_sizes.insert(cr->c.batch_size);
      dtypes.add(to_string(cr->c.dtype));
    }
    out += fmt::format("\n### {}\n\n", key);
    out += fmt::format("Each cell covers: {}.\n\n| variant |",
                       batch_axes(groups[key].front()->c.kind, block_sizes, batch_sizes, dtypes.items));
    for (const auto& c : cols.items) out += " " + c + " |";
    out += "\n|---|";
    for (size_t i = 0; i < cols.items.size(); ++i) out += "---|";
    out += "\n";
    for (const auto& row : rows.items) {
      out += "| " + row_label(r, row, replaced[row].items) + " |";
      for (const auto& c : cols.items) out += " " + cells[{row, c}].text() + " |";
      out += "\n";
    }
  }
}

// The PR thread's tables, kernel by kernel: per model "Variant | batch_size |
// verdict | max abs error | routed to", then "Model | Type | batch_size=N ...".
void write_pipeline_tables(std::string& out, const RunReport& r) {
  Ordered models;
  std::set<int64_t> batches;  // columns of the summary table, in increasing order
  for (const auto& cr : r.results)
    if (cr.c.kind == CaseKind::Pipeline) models.add(cr.c.model), batches.insert(cr.c.batch_size);
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
    out += fmt::format("\n### {}\n\n| Variant |{}{} batch_size (sequences) | verdict | max abs error | routed to |{}\n|---|{}{}---|---|---|---|{}\n",
                       md_text(m), show_hd ? " head_size |" : "", show_layout ? " layout |" : "", timed ? " reader us |" : "",
                       show_hd ? "---|" : "", show_layout ? "---|" : "", timed ? "---|" : "");
    for (const auto& cr : r.results) {
      if (cr.c.kind != CaseKind::Pipeline || cr.c.model != m) continue;
      hybrid[m] = cr.c.hybrid;
      std::string verdict = label(cr);
      for (size_t k = 1; k < cr.v.causes.size(); ++k) verdict += fmt::format(" + {} {}", cr.v.causes[k].component, cr.v.causes[k].reason);
      const std::string err = cr.v.max_abs_err ? fmt::format("{:.3g}", *cr.v.max_abs_err) : "— (not launched)";
      const std::string routed = cr.routed_to.empty()           ? "—"
                                 : cr.c.router_policy.empty() ? md_text(relabel(r, cr.routed_to))
                                                              : md_text(fmt::format("{} ({})", relabel(r, cr.routed_to),
                                                                                    cr.c.router_policy));
      const std::string us = !timed ? "" : cr.v.kernel_us ? fmt::format(" {:.1f} |", *cr.v.kernel_us) : " — |";
      out += fmt::format("| {} |{}{} {} | {} | {} | {} |{}\n", row_label(r, cr.c.variant(), replaced_in(r, cr)),
                         show_hd ? fmt::format(" {} |", cr.c.head_size) : "",
                         show_layout ? fmt::format(" {} |", to_string(cr.c.layout)) : "", cr.c.batch_size, verdict, err,
                         routed, us);
    }
  }
  out += "\n### Summary\n\n| Model | Type |";
  for (const auto b : batches) out += fmt::format(" batch_size={} |", b);
  out += "\n|---|---|";
  for (size_t i = 0; i < batches.size(); ++i) out += "---|";
  out += "\n";
  for (const auto& m : models.items) {
    out += fmt::format("| {} | {} |", md_text(m), hybrid[m] ? "Hybrid" : "Attention-only");
    for (const auto b : batches) {
      int pass = 0, n = 0;
      Ordered failed;
      std::map<std::string, int> times;
      for (const auto& cr : r.results) {
        if (cr.c.kind != CaseKind::Pipeline || cr.c.model != m || cr.c.batch_size != b) continue;
        ++n;
        if (cr.v.status == Status::Pass) ++pass;
        else if (cr.v.status != Status::Unsupported) {
          const std::string f = fmt::format("{} ({}{})", row_label(r, cr.c.variant(), replaced_in(r, cr)),
                                            cr.expected ? "xfail " : "", cr.v.reason);
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
std::string kernel_of_raw(const RunReport& r, const CaseResult& cr);
std::string kernel_of(const RunReport& r, const CaseResult& cr) { return md_text(kernel_of_raw(r, cr)); }
std::string kernel_of_raw(const RunReport& r, const CaseResult& cr) {
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
  out += fmt::format("\n#### {} {}\n\n- verdict: {} ({}, {}){}\n- {}\n", n, code(cr.c.id()), to_string(cr.v.status),
                     cr.v.reason, cr.v.component.empty() ? "-" : cr.v.component,
                     cr.expected ? " — expected" : "", md_text(cr.v.detail));
  for (size_t k = 1; k < cr.v.causes.size(); ++k)
    out += fmt::format("- also: {} {}: {}\n", cr.v.causes[k].component, cr.v.causes[k].reason,
                       md_text(cr.v.causes[k].detail));
  for (const auto& k : cr.v.causes)
    if (!k.expected_by.empty())
      out += fmt::format("- {} {} expected by {}\n", k.component, k.reason, md_text(k.expected_by));
  if (!cr.context_lens.empty() && cr.context_lens.size() <= 16)
    out += fmt::format("- context_lens {}\n", fmt::join(cr.context_lens, ", "));
  if (!cr.query_lens.empty() && cr.query_lens.size() <= 16)  // a ragged case: token J of a sequence is its J-th new token
    out += fmt::format("- query_lens {} ({}; row `seq S token J` is new token J of sequence S, at position "
                       "context_len - query_len + J)\n",
                       fmt::join(cr.query_lens, ", "), cr.c.causal ? "causal" : "not causal");
  if (cr.v.max_abs_err)  // max_ulp_err: issue 23 (B long contexts)
    out += fmt::format("- max abs error {:.6g}, max rel error {:.6g}{}\n", *cr.v.max_abs_err, cr.v.max_rel_err.value_or(0),
                       cr.v.max_ulp_err ? fmt::format(", max {:.3g} output ulps", *cr.v.max_ulp_err) : "");
  if (!cr.key_layout.empty()) out += fmt::format("- K view {}, V view {}\n", code(cr.key_layout), code(cr.value_layout));
  out += fmt::format("- reproduce: {}\n", code(cr.repro));
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

std::string references_line(const std::vector<CaseResult>& results) {
  std::set<std::string> ids;
  int64_t cases = 0, computed = 0;
  for (const CaseResult& cr : results) {
    if (cr.reference_id.empty()) continue;
    ++cases;
    ids.insert(cr.reference_id);
    if (!cr.reference_reused) ++computed;
  }
  if (cases == 0) return "References: no decode case (write cases only: nothing to share).";
  return fmt::format("References: {} decode case(s) over {} distinct float64 reference(s), {:.2f} cases a "
                     "reference; {} computed, {} reused from the run's reference cache.",
                     cases, ids.size(), ids.empty() ? 0.0 : double(cases) / double(ids.size()), computed,
                     cases - computed);
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
  out += "\n" + references_line(r.results) + "\n";
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

// "python:mod:my_pa" of a --replace-kernel label "REAL (replaced by python:mod:my_pa)".
std::string substitute_of(const std::string& label) {
  const std::string tag = " (replaced by ";
  const size_t at = label.find(tag);
  if (at == std::string::npos || label.empty() || label.back() != ')') return label;
  return label.substr(at + tag.size(), label.size() - at - tag.size() - 1);
}

// The header: what ran (backend, device, providers, substitutions, case files, filter, seed), the
// counts (report.h's classes, as `run` prints them), the exit code, what the cells mean.
void write_header(std::string& out, const RunReport& r) {
  const Counts n = count(r);
  out += fmt::format("- backend: {} ({}, {}), wave size {}; kvharness {}{}\n", md_text(r.backend), md_text(r.device),
                     md_text(r.arch), r.wave_size, md_text(r.tool_version.empty() ? "?" : r.tool_version),
                     r.label.empty() ? "" : ", label " + md_text(r.label));
  out += fmt::format("- started {}, finished {}{}\n", r.started_at, r.finished_at.empty() ? "—" : r.finished_at,
                     r.complete ? ""
                     : " — **INCOMPLETE: " +
                           md_text(!r.stopped_because.empty() ? r.stopped_because
                                   : !r.error.empty()         ? r.error
                                                              : std::string("not finished (written while the run goes "
                                                                            "on, or the process was killed)")) +
                           "**");
  if (!r.error.empty()) out += fmt::format("- **error: {}**\n", md_text(r.error));
  std::vector<std::string> files, providers;
  for (const auto& f : r.case_files) files.push_back(code(f));
  for (const auto& p : r.providers) providers.push_back(code(p));
  out += fmt::format("- case files: {}; filter: {}; seed: {}\n",
                     files.empty() ? "—" : fmt::format("{}", fmt::join(files, ", ")),
                     r.filter.empty() ? "none" : code(r.filter),
                     r.seed ? std::to_string(*r.seed) : "from the case files");
  out += fmt::format("- providers (--provider): {}\n",
                     providers.empty() ? "none (built-in kernels only)" : fmt::format("{}", fmt::join(providers, ", ")));
  if (!r.replaced_kernels.empty()) {
    std::vector<std::string> subs;
    for (const auto& [real, label] : r.replaced_kernels)
      subs.push_back(fmt::format("{} -> {}", code(real), code(substitute_of(label))));
    out += fmt::format("- kernels replaced (--replace-kernel; the substitute's code and declaration ran, judged "
                       "under the real name, and headings and rows say `REAL (replaced by WITH)`): {}\n",
                       fmt::join(subs, "; "));
  }
  out += fmt::format("- {} cases: {}\n", r.results.size(), counts_text(n));
  out += fmt::format("- **{} unexpected failure(s)** (FAIL, CRASH, XPASS); exit code {}\n", n.unexpected(),
                     r.exit_code < 0 ? std::string("—") : std::to_string(r.exit_code));
  out += "- Cells: `PASS`; `**FAIL** reason` / `**CRASH** reason` unexpected (they fail the run); `**XPASS**` a case "
         "declared to fail that passed (fails the run); `xfail reason` an expected failure (XFAIL) of a regression "
         "fixture (`fixture_*` kernels, the router policy `aiter-pre-b4885d2` alias `aiter-v0.1.10.post3`) or of a "
         "declaration; `n/a` unsupported. `k/n`: k of the cell's n cases are in the state shown.\n";
}

// "`a`, `b`, `c` and 93 more": the first `shown` case ids of a group.
std::string examples(const std::vector<const CaseResult*>& cases, size_t shown, bool in_table = false) {
  std::vector<std::string> ids;
  for (size_t i = 0; i < cases.size() && i < shown; ++i) ids.push_back(code(cases[i]->c.id(), in_table));
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

constexpr const char* kGroupingRule =
    "CRASHes and UNSUPPORTED cases are grouped by kernel and message: messages that differ only in numbers (sizes, "
    "counts, addresses) are one finding, while a different source line (`file.py:LINE`), a different "
    "word or a different kernel is another.";

// "kernel — layout — FAIL reason" (an XPASS: "kernel — layout — XPASS"): the title of a group of
// failures, unexpected or expected.
std::string group_title(const RunReport& r, const CaseResult& cr) {
  const Outcome o = outcome_of(cr.v.status, cr.expected);
  return fmt::format("{} — {} — {}{}", kernel_of(r, cr), to_string(cr.c.layout), to_string(o),
                     o == Outcome::XPass || cr.v.reason.empty() ? "" : " " + cr.v.reason);
}

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
      others.add(group_title(r, cr), cr);
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
                       "{}\n- {} case{} ({}): {}\n- the first in full:\n",
                       key.substr(0, cut), g.size(), g.size() == 1 ? "" : "s", md_text(g.front()->v.detail), g.size(),
                       g.size() == 1 ? "" : "s", fmt::join(layouts, ", "), examples(g, 3));
    write_failure(out, ++k, *g.front());
  }
  for (const auto& key : others.order) {
    const auto& g = others.cases[key];
    out += fmt::format("\n### {} ({} case{})\n", key, g.size(), g.size() == 1 ? "" : "s");
    for (const CaseResult* cr : g) write_failure(out, ++k, *cr);
  }
}

// Counts per (model, kind) in the run's one scheme (report.h Outcome), models in the order of the run.
void write_per_model(std::string& out, const RunReport& r) {
  out += "\n## Per model\n\n| model | kind | cases | PASS | FAIL | XFAIL | XPASS | CRASH | UNSUPPORTED |\n"
         "|---|---|---|---|---|---|---|---|---|\n";
  std::map<std::pair<std::string, std::string>, Counts> per_model;
  Ordered models;
  for (const auto& cr : r.results) {
    per_model[{cr.c.model, to_string(cr.c.kind)}].add(outcome_of(cr.v.status, cr.expected));
    models.add(cr.c.model);
  }
  for (const auto& m : models.items)
    for (const char* kind : {"write", "attention", "pipeline"}) {
      auto it = per_model.find({m, kind});
      if (it == per_model.end()) continue;
      const Counts& c = it->second;
      out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", md_text(m), kind, c.cases, c.pass, c.fail,
                         c.xfail, c.xpass, c.crash, c.unsupported);
    }
}

// A cause's expected_by (expectations.cpp), "regression fixture X (writer); FILE:LINE: why", in parts;
// either half may be missing.
struct ExpectedBy {
  std::string fixture, source, why;
};
ExpectedBy split_expected_by(const std::string& s) {
  static const std::regex re(R"(^(regression fixture [^;]*)?(?:; )?(?:([^ ;]+:[0-9]+): )?([\s\S]*)$)");
  std::smatch m;
  if (!std::regex_match(s, m, re)) return {"", "", s};
  return {m[1].str(), m[2].str(), m[3].str()};
}

// The expected failures grouped like the unexpected ones, by (kernel, layout, verdict and reason): per
// group its count, what expects it (the fixture, each declaration's file:line and `why`), a few ids,
// the first case's detail and one repro. Then every UNSUPPORTED case with why.
void write_expected_and_unsupported(std::string& out, const RunReport& r) {
  out += "\n## Expected failures\n";
  Groups expected;
  for (const auto& cr : r.results)
    if (cr.expected) expected.add(group_title(r, cr), cr);
  if (expected.order.empty()) out += "\nNone.\n";
  else
    out += "\nGrouped by kernel, layout and reason; each group names what expects it (a regression fixture, "
           "a declaration's `file:line` and its `why`) and one case to re-run.\n";
  for (const auto& key : expected.order) {
    const auto& g = expected.cases[key];
    // One line per (cause, fixture, why); the declarations that say the same `why` share it.
    Ordered why;
    std::map<std::string, Ordered> sources;
    for (const CaseResult* cr : g)
      for (const auto& k : cr->v.causes) {
        if (k.expected_by.empty()) continue;
        const ExpectedBy e = split_expected_by(k.expected_by);
        const std::string w = fmt::format("{} {}: {}\x1f{}", k.component, k.reason, e.fixture, e.why);
        why.add(w);
        if (!e.source.empty()) sources[w].add(e.source);
      }
    out += fmt::format("\n### {} ({} case{})\n\n", key, g.size(), g.size() == 1 ? "" : "s");
    for (const auto& w : why.items) {
      const size_t cut = w.find('\x1f');
      const std::string declared =
          sources[w].items.empty() ? "" : fmt::format("{}: ", fmt::join(sources[w].items, ", "));
      std::string text = w.substr(0, cut);
      const std::string rest = declared + w.substr(cut + 1);
      if (!rest.empty()) text += (text.back() == ' ' ? "" : "; ") + rest;
      out += fmt::format("- expected: {}\n", md_text(text));
    }
    out += fmt::format("- cases: {}\n- the first: {}\n- reproduce: {}\n", examples(g, 3), md_text(g.front()->v.detail),
                       code(g.front()->repro));
  }
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
    out += fmt::format("| {} | {} | {} | {} |\n", key.substr(0, key.find('\x1f')), md_text(g.front()->v.detail),
                       g.size(), examples(g, 3, true));
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
