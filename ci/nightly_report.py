#!/usr/bin/env python3
"""Renders a nightly history folder (ci/nightly.sh) as one self-contained index.html.

History layout, one folder per night, keyed by date and image tag:

    HISTORY/<YYYY-MM-DD>__<tag>/night.json            {"date", "tag", "suites": {name: {"exit_code", ...}}, ...}
    HISTORY/<YYYY-MM-DD>__<tag>/<suite>/results.json  kvharness run's report (schema kvharness.results/1)
    HISTORY/<YYYY-MM-DD>__<tag>/<suite>.compare.md    kvharness compare PREVIOUS CURRENT (absent on the first night;
                                                      <suite>/compare.md in histories of before issue 25)

The page shows, for the newest night (or --night KEY):
  1. the diff with the previous night: every case whose outcome changed, regressions first
     (the classes of `kvharness compare`, harness/report/compare.h: good = PASS, UNSUPPORTED, XFAIL;
     bad = unexpected FAIL, CRASH, XPASS), with each suite's compare output folded below;
  2. the per-night trend of pass/fail counts per suite (all nights of the history);
  3. a heat map per suite: one row per kernel variant, one column per layout, rows grouped
     by model, tp and head size (numbers in increasing order; variants and layouts in the order
     of the results, as summary.md has them); a cell holds the cases of that (model, tp, head
     size, variant, layout) and takes the colour of its worst outcome; hovering shows that case's
     verdict, reason and max error, clicking copies its repro command line.
Counts use kvharness's one scheme (harness/report/report.h Outcome, counts_text): an expected
FAIL or CRASH is XFAIL. Every string from a results file is HTML-escaped (esc).
Everything (styles, the few lines of script) is inline; nothing is fetched.

Usage: nightly_report.py HISTORY [--night KEY] [--out FILE]   (default FILE: HISTORY/index.html)
Exit 2 with a message naming the file on an unreadable history.
"""
import argparse
import html
import json
import os
import re
import sys
from collections import Counter, defaultdict

# Outcome classes, worst first: the cell colour is the worst class among its cases.
CLASSES = ["CRASH", "FAIL", "XPASS", "OTHER", "INTERRUPTED", "XFAIL", "PASS", "UNSUPPORTED"]
BAD = {"CRASH", "FAIL", "XPASS", "OTHER"}
MAX_DIFF_ROWS = 15  # rows of the diff table; the rest is in each suite's compare output
COLOURS = {
    "CRASH": "#7f0000", "FAIL": "#d7301f", "XPASS": "#fd8d3c", "OTHER": "#b15928",
    "INTERRUPTED": "#969696", "XFAIL": "#bcbddc", "PASS": "#41ab5d", "UNSUPPORTED": "#e0e0e0",
}
LEGEND = {
    "CRASH": "crash", "FAIL": "unexpected FAIL", "XPASS": "XPASS (expected FAIL passed)",
    "OTHER": "unknown verdict", "INTERRUPTED": "interrupted (no verdict)", "XFAIL": "expected FAIL or CRASH",
    "PASS": "PASS", "UNSUPPORTED": "unsupported",
}


class HistoryError(Exception):
    """A history folder or file that is not what ci/nightly.sh writes; the message names it."""


def outcome(case):
    """Outcome class of one results.json case entry: report.h's outcome_of, as compare reads it
    (an expected FAIL or CRASH is XFAIL; files older than "expected_failure" mark a FAIL "fixture")."""
    v = case.get("verdict")
    if v == "FAIL":
        return "XFAIL" if case.get("expected_failure", case.get("fixture")) is True else "FAIL"
    if v == "CRASH":
        return "XFAIL" if case.get("expected_failure") is True else "CRASH"
    if v in ("PASS", "UNSUPPORTED", "XPASS", "INTERRUPTED"):
        return v
    return "OTHER"


def counts_text(cases):
    """The counts of `cases` spelled as `kvharness run` and compare spell them (report.h counts_text)."""
    n = Counter(outcome(c) for c in cases)
    s = ", ".join(f"{n[k]} {k}" for k in ("PASS", "FAIL", "XFAIL", "XPASS", "CRASH", "UNSUPPORTED"))
    if n["INTERRUPTED"]:
        s += f", {n['INTERRUPTED']} INTERRUPTED"
    if n["OTHER"]:
        s += f", {n['OTHER']} other"
    return s


def load_json(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise HistoryError(f"{path}: {e}") from e


def load_nights(history):
    """Every night of the history, oldest first: [(key, night.json, {suite: results})]."""
    if not os.path.isdir(history):
        raise HistoryError(f"{history}: not a folder")
    nights = []
    for key in sorted(os.listdir(history)):
        meta_path = os.path.join(history, key, "night.json")
        if not os.path.isfile(meta_path):
            continue
        meta = load_json(meta_path)
        for field in ("date", "tag", "suites"):
            if field not in meta:
                raise HistoryError(f"{meta_path}: field '{field}' missing")
        suites = {}
        for suite in meta["suites"]:
            rp = os.path.join(history, key, suite, "results.json")
            if os.path.isfile(rp):
                res = load_json(rp)
                if res.get("schema") != "kvharness.results/1" or not isinstance(res.get("cases"), list):
                    raise HistoryError(f"{rp}: not a kvharness.results/1 document")
                suites[suite] = res
        nights.append((key, meta, suites))
    if not nights:
        raise HistoryError(f"{history}: no night (no */night.json)")
    return nights


def fmt_err(case):
    a, r = case.get("max_abs_err"), case.get("max_rel_err")
    parts = []
    if isinstance(a, (int, float)):
        parts.append(f"max_abs_err {a:.4g}")
    if isinstance(r, (int, float)):
        parts.append(f"max_rel_err {r:.4g}")
    return ", ".join(parts) if parts else "no error measured"


def esc(s):
    return html.escape(str(s), quote=True)


def diff_rows(prev, cur):
    """Cases whose outcome changed between two results documents: (kind, suite-less row dict)."""
    a = {c["id"]: c for c in prev.get("cases", [])}
    rows = []
    for c in cur.get("cases", []):
        p = a.get(c["id"])
        new = outcome(c)
        if p is None:
            kind = "new (bad)" if new in BAD else None
            old = "absent"
        else:
            old = outcome(p)
            if old == new and p.get("reason") == c.get("reason"):
                continue
            if old not in BAD and new in BAD:
                kind = "regressed"
            elif old in BAD and new == "PASS":
                kind = "fixed"
            else:
                kind = "changed"
        if kind:
            rows.append({"kind": kind, "old": old, "new": new, "case": c})
    cur_ids = {c["id"] for c in cur.get("cases", [])}
    for cid, p in a.items():
        if cid not in cur_ids:
            rows.append({"kind": "gone", "old": outcome(p), "new": "absent", "case": p})
    order = {"regressed": 0, "new (bad)": 1, "changed": 2, "gone": 3, "fixed": 4}
    rows.sort(key=lambda r: (order[r["kind"]], r["case"]["id"]))
    return rows


def render_diff(history, key, prev_key, cur_suites, prev_suites):
    out = ["<section id='diff'>"]
    if prev_key is None:
        out.append("<h2>Changes since the previous night</h2><p>First night of this history: nothing to compare.</p>")
        return "\n".join(out + ["</section>"])
    out.append(f"<h2>Changes since the previous night ({esc(prev_key)})</h2>")
    rows = []
    for suite, res in sorted(cur_suites.items()):
        if suite in prev_suites:
            rows += [dict(r, suite=suite) for r in diff_rows(prev_suites[suite], res)]
    order = {"regressed": 0, "new (bad)": 1, "changed": 2, "gone": 3, "fixed": 4}
    rows.sort(key=lambda r: (order[r["kind"]], r["suite"], r["case"]["id"]))
    n_reg = sum(r["kind"] == "regressed" for r in rows)
    out.append(f"<p class='verdict-line'>{n_reg} regressed, {len(rows) - n_reg} other changes.</p>")
    if rows:
        out.append("<table id='diff-table'><thead><tr><th>change</th><th>suite</th><th>case</th><th>before</th>"
                   "<th>now</th><th>reason</th><th>max error</th></tr></thead><tbody>")
        for r in rows[:MAX_DIFF_ROWS]:
            c = r["case"]
            cls = "regression" if r["kind"] in ("regressed", "new (bad)") else r["kind"].split()[0]
            out.append(
                f"<tr class='{cls}' data-repro='{esc(c.get('repro') or '')}' title='click: copy the repro command'>"
                f"<td>{esc(r['kind'])}</td><td>{esc(r['suite'])}</td><td class='id'>{esc(c['id'])}</td>"
                f"<td>{chip(r['old'])}</td><td>{chip(r['new'])}</td>"
                f"<td>{esc(c.get('reason') or '')}</td><td>{esc(fmt_err(c))}</td></tr>")
        if len(rows) > MAX_DIFF_ROWS:
            out.append(f"<tr class='more'><td colspan='7'>and {len(rows) - MAX_DIFF_ROWS} more changes "
                       "(in the same order); every one is in the compare output below</td></tr>")
        out.append("</tbody></table>")
    for suite in sorted(cur_suites):
        cmp_path = os.path.join(history, key, suite + ".compare.md")
        if not os.path.isfile(cmp_path):  # a night of before issue 25 kept it inside the report folder
            cmp_path = os.path.join(history, key, suite, "compare.md")
        if os.path.isfile(cmp_path):
            with open(cmp_path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            out.append(f"<details><summary>kvharness compare, suite {esc(suite)}</summary><pre>{esc(text)}</pre></details>")
    return "\n".join(out + ["</section>"])


def render_trend(nights):
    suites = sorted({s for _, _, ss in nights for s in ss})
    out = ["<section id='trend'><h2>Trend</h2><table class='trend'><thead><tr><th>night</th>"]
    out += [f"<th>{esc(s)}</th>" for s in suites]
    out.append("</tr></thead><tbody>")
    for key, meta, ss in reversed(nights):
        out.append(f"<tr><td>{esc(key)}</td>")
        for s in suites:
            res = ss.get(s)
            if res is None:
                out.append("<td>-</td>")
                continue
            n = Counter(outcome(c) for c in res["cases"])
            total = max(1, sum(n.values()))
            bar = "".join(
                f"<span style='width:{100.0 * n[k] / total:.2f}%;background:{COLOURS[k]}' "
                f"title='{esc(LEGEND[k])}: {n[k]}'></span>" for k in reversed(CLASSES) if n[k])
            bad = sum(n[k] for k in BAD)
            ec = meta["suites"].get(s, {}).get("exit_code")
            out.append(f"<td><div class='bar'>{bar}</div>{esc(counts_text(res['cases']))}; {bad} unexpected "
                       f"(exit {esc(ec)})</td>")
        out.append("</tr>")
    return "\n".join(out + ["</tbody></table></section>"])


def number(v):
    """A results.json number field as a sort key: missing or not a number sorts first."""
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else -1


def relabel(text, replaced):
    """`text` with every whole-word kernel name --replace-kernel replaced written as its label,
    "REAL (replaced by WITH)" (results.json replaced_kernels), as summary.md names it."""
    for real, label in (replaced or {}).items():
        if isinstance(real, str) and isinstance(label, str) and real:
            text = re.sub(rf"(?<![A-Za-z0-9_]){re.escape(real)}(?![A-Za-z0-9_])", lambda _m, l=label: l, text)
    return text


def substitute(label):
    """"python:mod:WITH" of a replaced_kernels label "REAL (replaced by python:mod:WITH)"."""
    m = re.search(r" \(replaced by (.*)\)$", str(label))
    return m.group(1) if m else str(label)


def render_heatmap(suite, res):
    cases = res["cases"]
    replaced = res.get("replaced_kernels") if isinstance(res.get("replaced_kernels"), dict) else {}
    layouts = list(dict.fromkeys(c.get("layout") or "-" for c in cases))  # first seen, as in summary.md
    groups = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for c in cases:
        key = (str(c.get("model") or "-"), number(c.get("tp")), number(c.get("head_size")))
        groups[key][c.get("variant") or "-"][c.get("layout") or "-"].append(c)
    out = [f"<section class='suite'><h2>Suite {esc(suite)}</h2>",
           f"<p>{len(cases)} cases ({esc(counts_text(cases))}) from {esc(', '.join(res.get('case_files') or []))}; "
           f"{esc(res.get('backend'))} on {esc(res.get('device'))}, {esc(res.get('tool_version'))}"
           + "".join(f"; --replace-kernel {esc(real)} -&gt; {esc(substitute(label))}"
                     for real, label in sorted(replaced.items())) + "</p>",
           f"<table class='heatmap' data-suite='{esc(suite)}'><thead><tr><th>model / tp / head size / variant</th>"]
    out += [f"<th>{esc(l)}</th>" for l in layouts]
    out.append("</tr></thead><tbody>")
    for key in sorted(groups):
        model, tp, hs = key
        out.append(f"<tr class='group'><th colspan='{len(layouts) + 1}'>{esc(model)}, tp {esc(tp if tp >= 0 else '-')}, "
                   f"head_size {esc(hs if hs >= 0 else '-')}</th></tr>")
        for variant in groups[key]:  # first seen
            row = relabel(str(variant), replaced)
            for l in dict.fromkeys(replaced[k] for cs in groups[key][variant].values() for c in cs
                                   for k in (c.get("writer"), c.get("reader"), c.get("routed_to")) if k in replaced):
                if str(l) not in row:  # a named row ("after fix") that ran a substitute says so
                    row += f" — {l}"
            out.append(f"<tr><th class='variant'>{esc(row)}</th>")
            for l in layouts:
                cell = groups[key][variant].get(l)
                if not cell:
                    out.append("<td class='empty'></td>")
                    continue
                worst = min(cell, key=lambda c: (CLASSES.index(outcome(c)) if outcome(c) in CLASSES else 3, c["id"]))
                w = outcome(worst)
                n = Counter(outcome(c) for c in cell)
                counts = ", ".join(f"{n[k]} {k}" for k in CLASSES if n[k])
                tip = (f"{counts}\nworst: {worst['id']}\n{worst.get('verdict')}"
                       f"{' (expected)' if worst.get('expected_failure') else ''}"
                       f" reason: {worst.get('reason') or '-'}\n{fmt_err(worst)}\nclick: copy the repro command")
                label = f"{n['PASS']}/{len(cell)}" if w in ("PASS", "XFAIL", "UNSUPPORTED") else f"{n[w]} {w}"
                out.append(f"<td class='cell {w}' style='background:{COLOURS.get(w, '#fff')}' title='{esc(tip)}' "
                           f"data-repro='{esc(worst.get('repro') or '')}'>{esc(label)}</td>")
            out.append("</tr>")
    return "\n".join(out + ["</tbody></table></section>"])


def chip(outcome):
    """A verdict as a coloured chip, its text white on the dark (CRASH, FAIL) colours as in the legend."""
    ink = "#fff" if outcome in ("CRASH", "FAIL") else "#000"
    return f"<span class='chip' style='background:{COLOURS.get(outcome, '#fff')};color:{ink}'>{esc(outcome)}</span>"


STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.4em;margin:0 0 .3em} h2{font-size:1.15em;margin:1.4em 0 .4em}
table{border-collapse:collapse;margin:.3em 0} th,td{border:1px solid #ccc;padding:2px 6px}
thead th{background:#f3f3f3;position:sticky;top:0}
tr.group th{background:#eaeef5;text-align:left} th.variant{text-align:left;font-weight:normal;white-space:nowrap}
td.cell{cursor:pointer;text-align:center;min-width:4.5em;font-size:12px}
td.cell.CRASH,td.cell.FAIL{color:#fff} td.empty{background:#fafafa}
#diff-table tr{cursor:pointer} #diff-table tr.regression td{background:#fde0dc;font-weight:600}
#diff-table tr.fixed td{background:#e5f5e0} td.id{font-family:monospace;font-size:12px}
.chip{padding:0 4px;border-radius:3px} .verdict-line{font-weight:600}
.bar{display:flex;width:220px;height:10px;border:1px solid #999;margin-bottom:2px} .bar span{display:block;height:100%}
.legend span{display:inline-block;padding:1px 6px;margin-right:4px;border-radius:3px}
#toast{position:fixed;bottom:1em;right:1em;background:#333;color:#fff;padding:.4em .8em;border-radius:4px;display:none}
pre{background:#f7f7f7;padding:.5em;overflow:auto;max-height:30em}
"""

SCRIPT = """
function kvhCopy(text){
  var done=function(){var t=document.getElementById('toast');t.textContent='copied: '+text;t.style.display='block';
    setTimeout(function(){t.style.display='none'},2500)};
  if(navigator.clipboard&&window.isSecureContext){navigator.clipboard.writeText(text).then(done,function(){fallback()});}
  else fallback();
  function fallback(){var a=document.createElement('textarea');a.value=text;document.body.appendChild(a);a.select();
    try{document.execCommand('copy')}catch(e){} document.body.removeChild(a);done();}
}
document.addEventListener('click',function(e){
  var el=e.target.closest('[data-repro]'); if(el&&el.dataset.repro){kvhCopy(el.dataset.repro);}
});
"""


def render(history, nights, key=None):
    """The page for night KEY (default: the newest) as a string."""
    idx = len(nights) - 1 if key is None else next((i for i, n in enumerate(nights) if n[0] == key), None)
    if idx is None:
        raise HistoryError(f"{history}: no night '{key}'")
    key, meta, suites = nights[idx]
    prev_key, _, prev_suites = nights[idx - 1] if idx > 0 else (None, None, {})
    first = next(iter(suites.values()), {})
    legend = "".join(f"<span style='background:{COLOURS[k]};color:{'#fff' if k in ('CRASH', 'FAIL') else '#000'}'>"
                     f"{esc(LEGEND[k])}</span>" for k in CLASSES)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>kvharness nightly {esc(key)}</title><style>{STYLE}</style></head><body>",
        f"<h1>kvharness nightly: {esc(meta['date'])}, image {esc(meta['tag'])}</h1>",
        f"<p>{esc(first.get('label') or '')} · providers: {esc(', '.join(meta.get('providers') or ['builtin']))} · "
        f"suites: {esc(', '.join(sorted(meta['suites'])))}</p>",
        f"<p class='legend'>{legend}</p>",
        render_diff(history, key, prev_key, suites, prev_suites),
        render_trend(nights[: idx + 1]),
    ]
    parts += [render_heatmap(s, suites[s]) for s in sorted(suites)]
    parts.append(f"<div id='toast'></div><script>{SCRIPT}</script></body></html>\n")
    return "\n".join(parts)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("history")
    ap.add_argument("--night", help="the night folder to show (default: the newest)")
    ap.add_argument("--out", help="where the page goes (default: HISTORY/index.html)")
    a = ap.parse_args(argv)
    try:
        nights = load_nights(a.history)
        page = render(a.history, nights, a.night)
    except HistoryError as e:
        print(f"nightly_report: {e}", file=sys.stderr)
        return 2
    out = a.out or os.path.join(a.history, "index.html")
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(page)
    os.replace(tmp, out)
    print(f"nightly_report: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
