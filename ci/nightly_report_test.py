#!/usr/bin/env python3
"""Unit tests of ci/nightly_report.py's counts, heat map and escaping (issue 25, items 7, 11, 12).

Run: python3 ci/nightly_report_test.py (CTest nightly_report_unit). No kvharness or browser needed.
"""
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nightly_report as n  # noqa: E402


def case(i, **kw):
    c = {"id": f"write/M/tp8/hd128/separate/c{i}", "verdict": "PASS", "model": "M", "tp": 8, "head_size": 128,
         "variant": "reshape_and_cache", "layout": "separate", "repro": f"kvharness run x --filter 'id={i}'"}
    c.update(kw)
    return c


class Counts(unittest.TestCase):
    def test_an_expected_fail_or_crash_is_xfail_as_run_counts_it(self):
        cases = [case(0), case(1, verdict="FAIL", expected_failure=True), case(2, verdict="CRASH", expected_failure=True),
                 case(3, verdict="FAIL"), case(4, verdict="XPASS"), case(5, verdict="UNSUPPORTED"),
                 case(6, verdict="INTERRUPTED")]
        self.assertEqual(n.counts_text(cases),
                         "1 PASS, 1 FAIL, 2 XFAIL, 1 XPASS, 0 CRASH, 1 UNSUPPORTED, 1 INTERRUPTED")


class Heatmap(unittest.TestCase):
    def test_groups_by_model_tp_and_head_size_in_numeric_order(self):
        cases = [case(i, tp=tp, head_size=hs, layout=l)
                 for i, (tp, hs, l) in enumerate([(16, 64, "separate"), (2, 256, "kv_first"), (8, 128, "separate"),
                                                  (2, 64, "interleaved"), (8, 64, "kv_first")])]
        page = n.render_heatmap("s", {"cases": cases})
        groups = re.findall(r"<tr class='group'><th[^>]*>M, tp (\d+), head_size (\d+)</th>", page)
        self.assertEqual(groups, [("2", "64"), ("2", "256"), ("8", "64"), ("8", "128"), ("16", "64")])
        heads = re.findall(r"<th>([a-z_]+)</th>", page.split("</thead>")[0])
        self.assertEqual(heads, ["separate", "kv_first", "interleaved"], "layouts in the order of the results")


class Replaced(unittest.TestCase):
    def test_rows_that_ran_a_substitute_say_so(self):
        res = {"cases": [case(0, variant="reshape_and_cache_shuffle"), case(1, variant="reshape_and_cache_shuffle_v2")],
               "replaced_kernels": {"reshape_and_cache_shuffle": "reshape_and_cache_shuffle (replaced by planted:p)"}}
        page = n.render_heatmap("s", res)
        self.assertIn("<th class='variant'>reshape_and_cache_shuffle (replaced by planted:p)</th>", page)
        self.assertIn("<th class='variant'>reshape_and_cache_shuffle_v2</th>", page, "whole names only")
        self.assertIn("; --replace-kernel reshape_and_cache_shuffle -&gt; planted:p</p>", page)
        named = n.render_heatmap("s", dict(res, cases=[case(2, variant="after fix", writer="reshape_and_cache_shuffle")]))
        self.assertIn("<th class='variant'>after fix — reshape_and_cache_shuffle (replaced by planted:p)</th>", named)


class Escaping(unittest.TestCase):
    def test_a_crash_chip_is_readable(self):
        # dark red with dark text read as a blank block (issue 25's first-hour trial)
        self.assertIn("background:#7f0000;color:#fff'>CRASH<", n.chip("CRASH"))
        self.assertIn("background:#41ab5d;color:#000'>PASS<", n.chip("PASS"))

    def test_strings_from_results_files_are_escaped(self):
        img = "<img src=x onerror=alert(1)>"
        cases = [case(0, verdict="FAIL", model=img, variant=img, layout=img, reason=img, id=img, repro=img, detail=img)]
        res = {"schema": "kvharness.results/1", "cases": cases, "case_files": [img], "backend": img, "device": img,
               "tool_version": img, "label": img}
        nights = [("2026-12-01__a", {"date": img, "tag": img, "suites": {img: {"exit_code": img}}, "providers": [img]},
                   {img: res}),
                  ("2026-12-02__b", {"date": "d", "tag": "t", "suites": {img: {"exit_code": 1}}}, {img: res})]
        page = n.render("/nonexistent", nights)
        self.assertNotIn("<img", page)
        self.assertIn("&lt;img src=x onerror=alert(1)&gt;", page)


if __name__ == "__main__":
    unittest.main()
