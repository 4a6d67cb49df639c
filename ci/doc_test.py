#!/usr/bin/env python3
"""Docs that run: executes the ```sh blocks of README.md and docs/*.md.

Usage:
  doc_test.py --kvharness BIN --work DIR [--source ROOT] [--timeout S] [FILE.md ...]
  doc_test.py --self-test --kvharness BIN --work DIR

Every fenced block whose info string is `sh` runs; other fences (text,
python, toml, yaml) are shown, never run. A marker on the line right before
a ```sh fence changes that:

  <!-- doctest: skip (REASON) -->   not run: counted and listed with REASON
                                    (needs a GPU, a ROCm install, network, or
                                    takes too long for this test)
  <!-- doctest: exit N -->          the block must exit with N (default 0)

A marker that is not right before a ```sh fence, a marker this script does
not know, and a ```bash/```shell/```console fence (write ```sh, or ```text
for output) are errors: nothing is left unchecked by a typo.

Each markdown file gets a fresh scratch copy of the source tree (without
build*/, .git and the run output under reports/) at WORK/<file>/; its blocks
run there in order, each as its own `bash -e -o pipefail` script started
from the copy's root, so a block may use files an earlier block of the same
file wrote. `kvharness` on PATH is BIN. A block passes when it exits as its
marker says; otherwise the test names FILE:LINE of the failing command (or of
the block), the exit codes and the tail of the block's output, and exits 1.
Exit 2: usage or marker errors. Python 3 standard library only.
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

MARKER = re.compile(r"^\s*<!--\s*doctest:\s*(.*?)\s*-->\s*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)")
RUNNABLE = "sh"
WRONG_TAGS = {"bash", "shell", "console", "zsh", "shell-session"}
ERR_TAG = "@@doctest-err"
TAIL_LINES = 30


class DocError(Exception):
    """A markdown file this script cannot judge (bad marker, unclosed fence)."""


class Block:
    def __init__(self, path, line, code, exit_code=0, skip=None):
        self.path, self.line, self.code = path, line, code  # line: the ```sh fence, 1-based
        self.exit_code, self.skip = exit_code, skip


def parse_marker(text, where):
    m = re.fullmatch(r"skip\s*\((.+)\)", text)
    if m:
        return ("skip", m.group(1).strip())
    m = re.fullmatch(r"exit\s+(\d+)", text)
    if m:
        return ("exit", int(m.group(1)))
    raise DocError(f"{where}: unknown doctest marker '{text}' (known: 'skip (REASON)', 'exit N')")


def extract(path, display):
    """The ```sh blocks of one markdown file, with their markers."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, pending, i = [], None, 0
    while i < len(lines):
        where = f"{display}:{i + 1}"
        m = MARKER.match(lines[i])
        if m:
            if pending:
                raise DocError(f"{pending[1]}: doctest marker not followed by a ```{RUNNABLE} fence")
            pending = (parse_marker(m.group(1), where), where)
            i += 1
            continue
        f = FENCE.match(lines[i])
        if not f:
            if pending:
                raise DocError(f"{pending[1]}: doctest marker not followed by a ```{RUNNABLE} fence")
            i += 1
            continue
        indent, fence, tag = f.group(1), f.group(2), f.group(3).lower()
        start = i
        body = []
        i += 1
        while i < len(lines) and not re.match(r"^\s*" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}\s*$",
                                              lines[i]):
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i].lstrip())
            i += 1
        if i == len(lines):
            raise DocError(f"{where}: fence never closed")
        i += 1  # the closing fence
        if tag in WRONG_TAGS:
            raise DocError(f"{where}: ```{tag} fence: write ```{RUNNABLE} (run by this test) or ```text (never run)")
        if tag != RUNNABLE:
            if pending:
                raise DocError(f"{pending[1]}: doctest marker before a ```{tag or '(no tag)'} fence; "
                               f"markers go before ```{RUNNABLE} fences only")
            continue
        b = Block(display, start + 1, "\n".join(body) + "\n")
        if pending:
            kind, value = pending[0]
            if kind == "skip":
                b.skip = value
            else:
                b.exit_code = value
            pending = None
        blocks.append(b)
    if pending:
        raise DocError(f"{pending[1]}: doctest marker not followed by a ```{RUNNABLE} fence")
    return blocks


def scratch_copy(source, dest):
    """The source tree without build output, VCS data, or earlier run output."""
    if os.path.exists(dest):
        shutil.rmtree(dest)
    ignore_top = {".git", "reports"}
    ignore_any = shutil.ignore_patterns("__pycache__", "node_modules")
    os.makedirs(dest)
    for name in sorted(os.listdir(source)):
        if name in ignore_top or name.startswith("build"):
            continue
        src = os.path.join(source, name)
        if os.path.isdir(src) and not os.path.islink(src):
            shutil.copytree(src, os.path.join(dest, name), symlinks=True, ignore=ignore_any)
        else:
            shutil.copy2(src, os.path.join(dest, name), follow_symlinks=False)
    os.makedirs(os.path.join(dest, "reports"))


def run_block(b, cwd, env, timeout):
    """(exit code, output, failing file line or None, seconds)."""
    script = f"trap 'echo \"{ERR_TAG} $LINENO $?\" >&2' ERR\n" + b.code
    with tempfile.NamedTemporaryFile("w", suffix=".sh", delete=False) as f:
        f.write(script)
        name = f.name
    t0 = time.monotonic()
    try:
        p = subprocess.run(["bash", "-e", "-o", "pipefail", name], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                           start_new_session=True)
        rc, out = p.returncode, p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        rc, out = None, (e.stdout or b"").decode("utf-8", "replace") + f"\n(timed out after {timeout} s)\n"
    finally:
        os.unlink(name)
    seconds = time.monotonic() - t0
    fail_line, kept = None, []
    for line in out.splitlines():
        if line.startswith(ERR_TAG + " "):
            script_line = int(line.split()[1])
            if fail_line is None:
                fail_line = b.line + script_line - 1  # script line 2 is the line after the fence
            continue
        kept.append(line)
    return rc, kept, fail_line, seconds


def run_files(args):
    source = os.path.abspath(args.source)
    kvh = os.path.abspath(args.kvharness)
    if not (os.path.isfile(kvh) and os.access(kvh, os.X_OK)):
        print(f"doc_test: --kvharness {kvh}: not an executable", file=sys.stderr)
        return 2
    docs = os.path.join(source, "docs")
    files = args.files or (["README.md"] + sorted(
        os.path.join("docs", f) for f in (os.listdir(docs) if os.path.isdir(docs) else []) if f.endswith(".md")))
    try:
        per_file = []
        for f in files:
            path = f if os.path.isabs(f) else os.path.join(source, f)
            display = os.path.relpath(path, source) if not os.path.isabs(f) else f
            per_file.append((display, extract(path, display)))
    except (DocError, OSError) as e:
        print(f"doc_test: {e}", file=sys.stderr)
        return 2

    env = dict(os.environ)
    env["PATH"] = os.path.dirname(kvh) + os.pathsep + env.get("PATH", "")
    for k, v in (("GIT_AUTHOR_NAME", "doc test"), ("GIT_COMMITTER_NAME", "doc test"),
                 ("GIT_AUTHOR_EMAIL", "doc-test@localhost"), ("GIT_COMMITTER_EMAIL", "doc-test@localhost")):
        env.setdefault(k, v)
    for k in ("KVH_LABEL", "KVH_TIMING_REPS", "KVH_PYTHON_BRIDGE"):
        env.pop(k, None)

    t_start = time.monotonic()
    passed, skipped, failed = [], [], []
    for display, blocks in per_file:
        if not blocks:
            continue
        work = os.path.join(os.path.abspath(args.work), re.sub(r"[^A-Za-z0-9._-]", "_", display))
        scratch_copy(source, work)
        for b in blocks:
            where = f"{b.path}:{b.line}"
            if b.skip:
                skipped.append((where, b.skip))
                print(f"SKIP {where}: {b.skip}", flush=True)
                continue
            rc, out, fail_line, secs = run_block(b, work, env, args.timeout)
            if rc == b.exit_code:
                passed.append(where)
                print(f"ok   {where} ({secs:.1f} s{'' if rc == 0 else f', exit {rc} as marked'})", flush=True)
                continue
            failed.append(where)
            got = "a timeout" if rc is None else f"exit {rc}"
            at = f"{b.path}:{fail_line}" if fail_line is not None and rc is not None else where
            cmd = ""
            if fail_line is not None:
                cmd_lines = b.code.split("\n")
                idx = fail_line - b.line - 1
                if 0 <= idx < len(cmd_lines):
                    cmd = f": `{cmd_lines[idx].strip()}`"
            print(f"FAIL {at}{cmd}: {got}, the block (```sh at {where}) must exit {b.exit_code} "
                  f"({secs:.1f} s); last {TAIL_LINES} lines of its output:", flush=True)
            for line in out[-TAIL_LINES:]:
                print(f"     | {line}")
            sys.stdout.flush()
    total = time.monotonic() - t_start
    print(f"\ndoc_test: {len(passed) + len(failed)} block(s) run in {total:.1f} s: {len(passed)} passed, "
          f"{len(failed)} failed; {len(skipped)} skipped")
    for where, why in skipped:
        print(f"  skipped {where}: {why}")
    for where in failed:
        print(f"  FAILED  {where}")
    return 1 if failed else 0


FIXTURE = """# fixture
```sh
echo first block > made-by-block-1.txt
```
<!-- doctest: exit 1 -->
```sh
test -f made-by-block-1.txt
kvharness run --report-dir reports/x cases/no-such-file.toml || exit 1
```
<!-- doctest: skip (needs a GPU) -->
```sh
exit 7
```
```text
this is never run
```
```sh
echo before the typo
kvharness rnu
echo never reached
```
"""


def self_test(args):
    """The extractor on a fixture: a failing block must fail the test, naming its line."""
    work = os.path.abspath(args.work)
    if os.path.exists(work):
        shutil.rmtree(work)
    os.makedirs(work)
    src = os.path.join(work, "src")
    os.makedirs(os.path.join(src, "docs"))
    os.makedirs(os.path.join(src, "cases"))
    with open(os.path.join(src, "README.md"), "w") as f:
        f.write(FIXTURE)
    fixture_lines = FIXTURE.split("\n")
    typo_line = fixture_lines.index("kvharness rnu") + 1
    skip_line = fixture_lines.index("<!-- doctest: skip (needs a GPU) -->") + 2  # its fence
    me = os.path.abspath(__file__)
    base = [sys.executable, me, "--kvharness", args.kvharness, "--source", src]
    p = subprocess.run(base + ["--work", os.path.join(work, "run")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.decode()
    problems = []
    if p.returncode != 1:
        problems.append(f"exit {p.returncode}, want 1")
    for want in (f"FAIL README.md:{typo_line}: `kvharness rnu`", "2 passed, 1 failed; 1 skipped",
                 f"skipped README.md:{skip_line}: needs a GPU", "before the typo"):
        if want not in out:
            problems.append(f"output lacks '{want}'")
    if "never reached" in out:
        problems.append("the block went on after its failing command")
    # Marker errors stop the test before anything runs (exit 2).
    for bad, want in (("<!-- doctest: skip -->\n```sh\ntrue\n```\n", "unknown doctest marker"),
                      ("<!-- doctest: exit 1 -->\n\ntext\n", "not followed by a ```sh fence"),
                      ("```bash\ntrue\n```\n", "write ```sh"),
                      ("```sh\ntrue\n", "fence never closed")):
        with open(os.path.join(src, "README.md"), "w") as f:
            f.write(bad)
        q = subprocess.run(base + ["--work", os.path.join(work, "bad")], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        if q.returncode != 2 or want not in q.stdout.decode():
            problems.append(f"marker error '{want}': exit {q.returncode}, output {q.stdout.decode()!r}")
    print(out)
    if problems:
        print("doc_test self-test FAILED:\n  " + "\n  ".join(problems))
        return 1
    print("doc_test self-test: the planted typo fails the test at its line; markers are checked")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kvharness", required=True, help="the built kvharness binary (put on PATH)")
    ap.add_argument("--work", required=True, help="scratch folder (replaced)")
    ap.add_argument("--source", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
                    help="the source tree (default: this script's ..)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds one block may run (default 300)")
    ap.add_argument("--self-test", action="store_true", help="check this script on a fixture")
    ap.add_argument("files", nargs="*", help="markdown files relative to --source (default: README.md docs/*.md)")
    args = ap.parse_args()
    return self_test(args) if args.self_test else run_files(args)


if __name__ == "__main__":
    sys.exit(main())
