#!/usr/bin/env python3
"""Checks the DOM of a rendered nightly page (chromium --dump-dom output of ci/nightly_report.py's index.html).

Usage: nightly_dom_check.py DOM_FILE --suites N --nights N [--regression TEXT]
Asserts: N heat-map tables (table.heatmap), each with at least one variant row and one coloured
cell carrying a hover text (title) and a repro command (data-repro); a trend table with one row
per night; with --regression, a diff table whose first body row has class "regression" and
contains TEXT. Exit 1 naming the first assertion that does not hold, 0 otherwise.
"""
import argparse
import sys
from html.parser import HTMLParser


class Dom(HTMLParser):
    """Collects the tables of the page: per table its class/id and rows as (class, text, cells' attrs)."""

    def __init__(self):
        super().__init__()
        self.tables, self.stack, self.row = [], [], None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append({"class": a.get("class", ""), "id": a.get("id", ""), "rows": []})
            self.stack.append(self.tables[-1])
        elif tag == "thead" and self.stack:
            self.stack[-1]["in_head"] = True
        elif tag == "tbody" and self.stack:
            self.stack[-1]["in_head"] = False
        elif tag == "tr" and self.stack and not self.stack[-1].get("in_head"):
            self.row = {"class": a.get("class", ""), "text": "", "cells": []}
            self.stack[-1]["rows"].append(self.row)
        elif tag == "td" and self.row is not None:
            self.row["cells"].append(a)

    def handle_endtag(self, tag):
        if tag == "table" and self.stack:
            self.stack.pop()
        elif tag == "tr":
            self.row = None

    def handle_data(self, data):
        if self.row is not None:
            self.row["text"] += data


def check(dom_text, suites, nights, regression):
    d = Dom()
    d.feed(dom_text)
    heat = [t for t in d.tables if "heatmap" in t["class"].split()]
    if len(heat) != suites:
        return f"{len(heat)} heat-map tables, expected {suites}"
    for t in heat:
        variant_rows = [r for r in t["rows"] if "group" not in r["class"].split()]
        cells = [c for r in variant_rows for c in r["cells"] if "cell" in c.get("class", "").split()]
        if not variant_rows or not cells:
            return "a heat-map table has no variant row or no coloured cell"
        if not all(c.get("title") and c.get("data-repro") and c.get("style", "").startswith("background:") for c in cells):
            return "a heat-map cell lacks its colour, hover text (title) or repro command (data-repro)"
    trend = [t for t in d.tables if "trend" in t["class"].split()]
    if len(trend) != 1 or len(trend[0]["rows"]) != nights:
        return f"trend table: expected one with {nights} night rows, found {[len(t['rows']) for t in trend]}"
    if regression is not None:
        diff = [t for t in d.tables if t["id"] == "diff-table"]
        if not diff or not diff[0]["rows"]:
            return "no diff table, or an empty one"
        top = diff[0]["rows"][0]
        if "regression" not in top["class"].split() or regression not in top["text"]:
            return f"the diff table's first row is not the regression '{regression}': class '{top['class']}', text '{top['text'][:200]}'"
    return None


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("dom")
    ap.add_argument("--suites", type=int, required=True)
    ap.add_argument("--nights", type=int, required=True)
    ap.add_argument("--regression")
    a = ap.parse_args(argv)
    with open(a.dom, encoding="utf-8") as f:
        err = check(f.read(), a.suites, a.nights, a.regression)
    if err:
        print(f"nightly_dom_check: {a.dom}: {err}")
        return 1
    print(f"nightly_dom_check: {a.dom}: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
