#!/usr/bin/env python3
"""Docs that run: executes the ```sh blocks of README.md, docs/*.md and every tracked */README.md.

Usage:
  doc_test.py --kvharness BIN --work DIR [--source ROOT] [--timeout S] [FILE.md ...]
  doc_test.py --self-test --kvharness BIN --work DIR
  doc_test.py --lint --kvharness BIN [FILE.md ...]    (parse and check only)

Every fenced block whose info string is `sh` runs; fences tagged with a
language this script knows is not a shell (text, python, toml, yaml, json,
cpp, cmake, diff, ...) are shown, never run. Tag every fence: an untagged
fence, an unknown tag (```ssh, ```bash, ```shell-session, ...) and a fence
inside a blockquote (`> ```sh`) are errors, so no block is silently not run.
Markers on the lines right before a ```sh fence (several may stack) change
how it is judged:

  <!-- doctest: skip (REASON) -->   not run: counted and listed with REASON
                                    (needs a GPU, a ROCm install, network, or
                                    takes too long for this test)
  <!-- doctest: exit N -->          every command but the last exits 0 and the
                                    block's LAST command exits N (default: the
                                    whole block exits 0)
  <!-- doctest: output REGEX -->    the block's output (stdout and stderr)
                                    must match REGEX (Python re.search,
                                    MULTILINE); repeatable

A marker not followed by a ```sh fence and a marker this script does not know
are errors: nothing is left unchecked by a typo.

Blocks run under `bash -e -o pipefail`, which ignores a failure inside `&&`
lists, `if`/`while` conditions, `!`, background jobs, command substitutions
in arguments and `export/local/readonly X=$(...)`. So a runnable block (its
heredoc bodies aside) may not use `&&`, `if`, a leading `!`, a trailing `&`,
`|| true`/`|| :`/`|| test $?` (or `||` followed by anything but `exit N` or
`{ ...; exit N; }`), `$(...)`/backticks around kvharness other than a plain
`NAME=$(...)`, `export/local/readonly NAME=$(...)`, or `set +e`/`set +o
pipefail`: each is an error (exit 2) naming FILE:LINE, the construct and what
to write instead (split the block, one command a line, and mark the expected
failure with `exit N`).

Each markdown file gets a fresh scratch copy of the source tree (without
build*/, .git and the run output under reports/) at WORK/<file>/; its blocks
run there in order, each as its own `bash -e -o pipefail` script started
from the copy's root, so a block may use files an earlier block of the same
file wrote. `kvharness` on PATH is BIN. A block passes when it exits as its
marker says and its output matches its output markers; otherwise the test
names FILE:LINE of the failing command (or of the block), the exit codes (or
the regex not matched) and the tail of the block's output, and exits 1.
Exit 2: usage, fence, marker or construct errors. Python 3 standard library only.
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
# Fences that are shown, never run: languages that are not a shell.
SHOWN_TAGS = {"text", "python", "py", "toml", "yaml", "yml", "json", "jsonc", "cpp", "c++", "c", "h", "cuda",
              "cmake", "diff", "markdown", "md", "html", "xml", "javascript", "js", "ini", "csv", "tsv",
              "mermaid", "dockerfile", "make", "makefile", "hip", "rust", "go"}
BLOCKQUOTE_FENCE = re.compile(r"^\s*>[\s>]*(`{3,}|~{3,})\s*([^\s`]*)")
LAST_TAG = "@@doctest-last"
ERR_TAG = "@@doctest-err"
TAIL_LINES = 30


class DocError(Exception):
    """A markdown file this script cannot judge (bad marker, unclosed fence)."""


class Block:
    def __init__(self, path, line, code, exit_code=0, skip=None, outputs=()):
        self.path, self.line, self.code = path, line, code  # line: the ```sh fence, 1-based
        self.exit_code, self.skip, self.outputs = exit_code, skip, list(outputs)
        self.commands = []  # logical commands: (first, last) script line, 1-based (line 1: after the fence)


def parse_marker(text, where):
    m = re.fullmatch(r"skip\s*\((.+)\)", text)
    if m:
        return ("skip", m.group(1).strip())
    m = re.fullmatch(r"exit\s+(\d+)", text)
    if m:
        return ("exit", int(m.group(1)))
    m = re.fullmatch(r"output\s+(.+)", text)
    if m:
        try:
            re.compile(m.group(1), re.MULTILINE)
        except re.error as e:
            raise DocError(f"{where}: doctest output marker: bad regex '{m.group(1)}': {e}")
        return ("output", m.group(1))
    raise DocError(f"{where}: unknown doctest marker '{text}' "
                   f"(known: 'skip (REASON)', 'exit N', 'output REGEX')")


# ---------------------------------------------------------------- constructs that hide a failure

HEREDOC = re.compile(r"<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")


def mask(line):
    """(masked, subst): `masked` is line with quoted text, comments and $(...)/`...` bodies blanked
    (so operators inside them are not seen); `subst` lists the command substitution bodies."""
    out, subst, i, n = [], [], 0, len(line)
    quote = None
    while i < n:
        c = line[i]
        if quote == "'":
            out.append(" " if c != "'" else c)
            quote = None if c == "'" else quote
            i += 1
            continue
        if c == "\\" and i + 1 < n:
            out.append("  ")
            i += 2
            continue
        if c == "$" and line.startswith("$(", i) and not line.startswith("$((", i):
            depth, j = 0, i + 1
            while j < n:
                if line[j] == "(":
                    depth += 1
                elif line[j] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            subst.append(line[i + 2:j])
            out.append("$" + "X" * (j - i))  # one word, operators inside hidden
            i = j + 1
            continue
        if c == "`":
            j = line.find("`", i + 1)
            j = n if j < 0 else j
            subst.append(line[i + 1:j])
            out.append("X" * (j - i + 1))
            i = j + 1
            continue
        if quote == '"':
            out.append(" " if c != '"' else c)
            quote = None if c == '"' else quote
            i += 1
            continue
        if c in "'\"":
            quote = c
            out.append(c)
            i += 1
            continue
        if c == "#" and (i == 0 or line[i - 1] in " \t;|&("):
            break
        out.append(c)
        i += 1
    return "".join(out), subst


def logical_commands(code):
    """[(first, last, masked text, substitutions)] of a block, lines 1-based; `\\` continuations,
    heredoc bodies and compound commands (do..done, case..esac, {..}, (..)) each join one command."""
    lines = code.split("\n")
    cmds, i, cur, depth = [], 0, None, 0
    while i < len(lines):
        raw = lines[i]
        masked, subst = mask(raw)
        if cur is None:
            if not masked.strip():
                i += 1
                continue
            cur = [i + 1, i + 1, [], []]
        cur[1] = i + 1
        cur[2].append(masked)
        cur[3].extend(subst)
        heredocs = [m.group(3) for m in HEREDOC.finditer(masked.replace("<<<", "   "))]
        # a heredoc delimiter inside quotes is masked away; find it in the raw line too
        if not heredocs and "<<" in raw and "<<<" not in raw:
            heredocs = [m.group(3) for m in HEREDOC.finditer(raw)]
        i += 1
        for delim in heredocs:
            while i < len(lines) and lines[i].strip() != delim:
                i += 1
            cur[1] = min(i + 1, len(lines))
            i += 1
        for w in re.findall(r"(?:(?<=^)|(?<=[\s;|&(]))(do|done|case|esac|\{|\}|\(|\))(?=$|[\s;|&)])",
                            masked):
            depth += 1 if w in ("do", "case", "{", "(") else -1
        if masked.rstrip().endswith("\\") or raw.rstrip().endswith("\\") or depth > 0 \
                or re.search(r"(\|\||\||&&)\s*$", masked):
            continue
        depth = max(depth, 0)
        cmds.append((cur[0], cur[1], "\n".join(cur[2]), cur[3]))
        cur = None
    if cur is not None:
        cmds.append((cur[0], cur[1], "\n".join(cur[2]), cur[3]))
    return cmds


def hidden_failures(code):
    """[(script line, construct, what to write instead)] for constructs under which bash -e
    does not stop at a failing command."""
    found = []
    split = "split the block: one command a line; mark an expected failure with <!-- doctest: exit N -->"
    for first, _last, text, subst in logical_commands(code):
        def add(what, instead):
            found.append((first, what, instead))
        if "&&" in text:
            add("`&&` (bash -e ignores a failure inside an && list, in a loop body too)", split)
        if re.search(r"(^|[;|&({]|\bthen|\bdo|\belse)\s*(if|elif|until)\s", text, re.M):
            add("`if`/`until` (a failing condition is not an error)", split)
        if re.search(r"(^|[;|&({]|\bdo|\bthen|\belse)\s*!\s", text, re.M):
            add("a leading `!` (bash -e ignores a negated command)", split)
        if re.search(r"(?<![&>|<])&\s*(;|$|\))", re.sub(r"[0-9]*[<>]&[0-9-]*|&>>?|&&|\|&", "  ", text), re.M):
            add("a trailing `&` (a background job's failure is never seen)", "run it in the foreground")
        for m in re.finditer(r"\|\|\s*(.*?)(?=\|\||&&|;|$)", text, re.M):
            rest = m.group(1).strip()
            if re.fullmatch(r"exit(\s+\d+)?", rest):
                continue
            if rest.startswith("{") and re.search(r"\bexit\b", text[m.end(1) - len(rest):]):
                continue
            add(f"`|| {rest}` (the command's failure is swallowed; "
                f"`|| test $?` passes when the command succeeds)",
                "write `cmd || exit N` or `cmd || { ...; exit N; }`, or split the block and mark "
                "the failing command with <!-- doctest: exit N -->")
        if re.search(r"(^|[;|&(]\s*|\s)(export|local|readonly|declare|typeset)\s+[^;|&\n]*=\$X", text, re.M):
            add("`export/local/readonly NAME=$(...)` (its status is the builtin's, never the command's)",
                "assign first (`NAME=$(...)`), then `export NAME`")
        if any(re.search(r"(^|[\s;|&(])kvharness(\s|$)", s) for s in subst) and \
                not re.fullmatch(r"\s*[A-Za-z_][A-Za-z0-9_]*=\$X+\s*", text):
            add("a command substitution around kvharness (its failure is lost in an argument)",
                "run kvharness as its own command (a plain `NAME=$(kvharness ...)` line is checked)")
        if re.search(r"(^|[;|&(]\s*)\s*set\s+(\+e|\+o\s+(errexit|pipefail))", text, re.M):
            add("`set +e`/`set +o pipefail`", split)
    return found


def extract(path, display, errors):
    """The ```sh blocks of one markdown file, with their markers; construct errors go to `errors`."""
    lines = open(path, encoding="utf-8").read().split("\n")
    blocks, pending, i = [], [], 0
    while i < len(lines):
        where = f"{display}:{i + 1}"
        m = MARKER.match(lines[i])
        if m:
            pending.append((parse_marker(m.group(1), where), where))
            i += 1
            continue
        q = BLOCKQUOTE_FENCE.match(lines[i])
        if q and q.group(2).lower() not in SHOWN_TAGS:
            raise DocError(f"{where}: ```{q.group(2) or '(no tag)'} fence inside a blockquote is never run: "
                           f"move it out of the quote, or tag it ```text")
        f = FENCE.match(lines[i])
        if not f:
            if pending and lines[i].strip():
                raise DocError(f"{pending[0][1]}: doctest marker not followed by a ```{RUNNABLE} fence")
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
        if tag != RUNNABLE and tag not in SHOWN_TAGS:
            raise DocError(f"{where}: ```{tag or '(no tag)'} fence: tag every fence: ```{RUNNABLE} runs, "
                           f"```text never runs (or a language: toml, python, json, ...)")
        if tag != RUNNABLE:
            if pending:
                raise DocError(f"{pending[0][1]}: doctest marker before a ```{tag} fence; "
                               f"markers go before ```{RUNNABLE} fences only")
            continue
        b = Block(display, start + 1, "\n".join(body) + "\n")
        seen = set()
        for (kind, value), mwhere in pending:
            if kind in seen and kind != "output":
                raise DocError(f"{mwhere}: a second '{kind}' doctest marker for one fence")
            seen.add(kind)
            if kind == "skip":
                b.skip = value
            elif kind == "exit":
                b.exit_code = value
            else:
                b.outputs.append(value)
        pending = []
        b.commands = [(a, z) for a, z, _t, _s in logical_commands(b.code)]
        if not b.skip:
            for line, what, instead in hidden_failures(b.code):
                errors.append(f"{display}:{b.line + line}: {what} hides a failure from the test; {instead}")
        blocks.append(b)
    if pending:
        raise DocError(f"{pending[0][1]}: doctest marker not followed by a ```{RUNNABLE} fence")
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
    """(exit code, output lines, failing file line or None, seconds, whether the last command started)."""
    code = b.code.split("\n")
    if b.exit_code != 0 and b.commands:
        # Announce the last logical command on its own first line (line numbers stay as they are).
        first = b.commands[-1][0] - 1
        code[first] = f"echo {LAST_TAG} >&2; " + code[first]
    script = f"trap 'echo \"{ERR_TAG} $LINENO $?\" >&2' ERR\n" + "\n".join(code)
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
    fail_line, kept, last_started = None, [], False
    for line in out.splitlines():
        if line.startswith(ERR_TAG + " "):
            script_line = int(line.split()[1])
            if fail_line is None:
                fail_line = b.line + script_line - 1  # script line 2 is the line after the fence
            continue
        if line == LAST_TAG:
            last_started = True
            continue
        kept.append(line)
    return rc, kept, fail_line, seconds, last_started


def judge(b, rc, out, fail_line, last_started):
    """None when the block did as its markers say, else why not."""
    if rc != b.exit_code:
        return f"{'a timeout' if rc is None else f'exit {rc}'}, the block must exit {b.exit_code}"
    if b.exit_code != 0:
        first, last = b.commands[-1] if b.commands else (1, 1)
        if not last_started:
            return (f"exit {rc} before its last command (line {b.line + first}) ran; "
                    f"with 'exit {b.exit_code}' only the last command may fail")
        if fail_line is not None and not (b.line + first <= fail_line <= b.line + last):
            return (f"exit {rc} from line {fail_line}, not from its last command "
                    f"(lines {b.line + first}-{b.line + last})")
    text = "\n".join(out)
    for rx in b.outputs:
        if not re.search(rx, text, re.MULTILINE):
            return f"its output does not match the output marker /{rx}/"
    return None


def default_files(source):
    """README.md, docs/*.md and every tracked README.md in a subfolder (git ls-files; a walk without git)."""
    docs = os.path.join(source, "docs")
    files = ["README.md"] + sorted(os.path.join("docs", f) for f in (os.listdir(docs) if os.path.isdir(docs) else [])
                                   if f.endswith(".md"))
    try:
        p = subprocess.run(["git", "-C", source, "ls-files", "*README.md"], stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL, check=True)
        readmes = p.stdout.decode().split()
    except (OSError, subprocess.CalledProcessError):
        readmes = []
        for root, dirs, names in os.walk(source):
            dirs[:] = [d for d in dirs if d != ".git" and not d.startswith("build")]
            readmes += [os.path.relpath(os.path.join(root, n), source) for n in names if n == "README.md"]
    for r in sorted(readmes):
        if r not in files and os.path.basename(r) == "README.md":
            files.append(r)
    return files


def run_files(args):
    source = os.path.abspath(args.source)
    kvh = os.path.abspath(args.kvharness)
    if not (os.path.isfile(kvh) and os.access(kvh, os.X_OK)):
        print(f"doc_test: --kvharness {kvh}: not an executable", file=sys.stderr)
        return 2
    files = args.files or default_files(source)
    per_file, errors = [], []
    for f in files:
        path = f if os.path.isabs(f) else os.path.join(source, f)
        display = os.path.relpath(path, source) if not os.path.isabs(f) else f
        try:
            per_file.append((display, extract(path, display, errors)))
        except (DocError, OSError) as e:
            errors.append(str(e))
    if errors:
        for e in errors:
            print(f"doc_test: {e}", file=sys.stderr)
        print(f"doc_test: {len(errors)} error(s); nothing run", file=sys.stderr)
        return 2
    if args.lint:
        n = sum(len(bl) for _d, bl in per_file)
        print(f"doc_test: {len(per_file)} file(s), {n} ```{RUNNABLE} block(s): fences, markers and constructs ok")
        return 0

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
            rc, out, fail_line, secs, last_started = run_block(b, work, env, args.timeout)
            why = judge(b, rc, out, fail_line, last_started)
            if why is None:
                passed.append(where)
                print(f"ok   {where} ({secs:.1f} s{'' if rc == 0 else f', exit {rc} as marked'})", flush=True)
                continue
            failed.append(where)
            at = f"{b.path}:{fail_line}" if fail_line is not None and rc is not None else where
            cmd = ""
            if fail_line is not None:
                cmd_lines = b.code.split("\n")
                idx = fail_line - b.line - 1
                if 0 <= idx < len(cmd_lines):
                    cmd = f": `{cmd_lines[idx].strip()}`"
            print(f"FAIL {at}{cmd}: {why} (```sh at {where}, {secs:.1f} s); "
                  f"last {TAIL_LINES} lines of its output:", flush=True)
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
<!-- doctest: exit 1 -->
```sh
false
echo reached the end; exit 1
```
<!-- doctest: output ^6 cases: 5 PASS -->
<!-- doctest: exit 0 -->
```sh
echo "6 cases: 5 PASS, 1 FAIL"
```
<!-- doctest: output ^80 cases: 80 PASS -->
```sh
echo "80 cases: 64 PASS, 16 FAIL"
```
"""

SUB_FIXTURE = """# a folder README
```sh
kvharness sub-typo
```
"""

# Each construct under which bash -e misses a failure: the test refuses it (exit 2) naming
# README.md:LINE and the construct.
REFUSED = (
    ("kvharness rnu && echo ran", "`&&`"),
    ("for i in 1 2; do kvharness rnu && echo $i; done", "`&&`"),
    ("if kvharness rnu; then echo ran; fi", "`if`"),
    ("! kvharness rnu", "leading `!`"),
    ("kvharness rnu &", "trailing `&`"),
    ('echo "$(kvharness rnu)"', "command substitution around kvharness"),
    ("echo `kvharness rnu`", "command substitution around kvharness"),
    ("export X=$(kvharness rnu)", "export/local/readonly"),
    ("kvharness rnu || true", "`|| true`"),
    ("kvharness rnu || :", "`|| :`"),
    ("kvharness rnu || test $? -eq 1", "`|| test $? -eq 1`"),
    ("set +e\nkvharness rnu", "`set +e`"),
)
# Constructs that keep a failure visible: accepted.
ACCEPTED = (
    "kvharness rnu || exit 1",
    "kvharness rnu || { echo no; exit 1; }",
    "X=$(kvharness rnu)",
    "for i in 1 2; do kvharness rnu; echo $i; done",
    "cat > f.sh <<'EOF'\nif true; then a && b; fi\nEOF",
    "echo 'a && b' \"c || true\" # && in a comment",
    "kvharness rnu 2>&1 | tee log.txt",
)
# Fences that would silently not run.
BAD_FENCES = (
    ("```\nkvharness rnu\n```\n", "tag every fence"),
    ("```ssh\nkvharness rnu\n```\n", "tag every fence"),
    ("```sh-session\n$ kvharness rnu\n```\n", "tag every fence"),
    ("```shell-session\n$ kvharness rnu\n```\n", "tag every fence"),
    ("```bash\ntrue\n```\n", "tag every fence"),
    ("> ```sh\n> kvharness rnu\n> ```\n", "inside a blockquote"),
    ("<!-- doctest: skip -->\n```sh\ntrue\n```\n", "unknown doctest marker"),
    ("<!-- doctest: output ( -->\n```sh\ntrue\n```\n", "bad regex"),
    ("<!-- doctest: exit 1 -->\n\ntext\n", "not followed by a ```sh fence"),
    ("<!-- doctest: exit 1 -->\n<!-- doctest: exit 2 -->\n```sh\ntrue\n```\n", "a second 'exit'"),
    ("```sh\ntrue\n", "fence never closed"),
)


def self_test(args):
    """The test on fixtures: each planted failure must fail it, naming its line."""
    work = os.path.abspath(args.work)
    if os.path.exists(work):
        shutil.rmtree(work)
    os.makedirs(work)
    src = os.path.join(work, "src")
    os.makedirs(os.path.join(src, "docs"))
    os.makedirs(os.path.join(src, "cases"))
    os.makedirs(os.path.join(src, "sub"))
    with open(os.path.join(src, "README.md"), "w") as f:
        f.write(FIXTURE)
    with open(os.path.join(src, "sub", "README.md"), "w") as f:
        f.write(SUB_FIXTURE)
    git = ["git", "-C", src, "-c", "user.name=t", "-c", "user.email=t@localhost"]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["add", "."], check=True)
    fixture_lines = FIXTURE.split("\n")
    typo_line = fixture_lines.index("kvharness rnu") + 1
    early_line = fixture_lines.index("false") + 1
    mismatch_fence = fixture_lines.index('echo "80 cases: 64 PASS, 16 FAIL"')  # its fence, 1-based
    skip_line = fixture_lines.index("<!-- doctest: skip (needs a GPU) -->") + 2  # its fence
    me = os.path.abspath(__file__)
    base = [sys.executable, me, "--kvharness", args.kvharness, "--source", src]
    p = subprocess.run(base + ["--work", os.path.join(work, "run")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = p.stdout.decode()
    problems = []
    if p.returncode != 1:
        problems.append(f"exit {p.returncode}, want 1")
    for want in (f"FAIL README.md:{typo_line}: `kvharness rnu`", "3 passed, 4 failed; 1 skipped",
                 f"skipped README.md:{skip_line}: needs a GPU", "before the typo",
                 f"FAIL README.md:{early_line}: `false`: exit 1 before its last command",
                 f"FAIL README.md:{mismatch_fence}: its output does not match the output marker /^80 cases: 80 PASS/",
                 "FAIL sub/README.md:3: `kvharness sub-typo`"):
        if want not in out:
            problems.append(f"output lacks '{want}'")
    if "never reached" in out:
        problems.append("the block went on after its failing command")
    if "reached the end" in out:
        problems.append("an exit-1 block went on after an earlier command failed")
    print(out)
    # Errors stop the test before anything runs (exit 2), naming FILE:LINE.
    cases = [("```sh\n" + code + "\n```\n", want) for code, want in REFUSED] + list(BAD_FENCES)
    for bad, want in cases:
        with open(os.path.join(src, "README.md"), "w") as f:
            f.write(bad)
        q = subprocess.run(base + ["--work", os.path.join(work, "bad"), "README.md"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT)
        qout = q.stdout.decode()
        if q.returncode != 2 or want not in qout or "README.md:" not in qout:
            problems.append(f"planted {bad!r}: want exit 2 and '{want}', got exit {q.returncode}, output {qout!r}")
        else:
            print(f"refused as it must: {bad.strip()!r}\n  {qout.splitlines()[0]}")
    for code in ACCEPTED:
        with open(os.path.join(src, "README.md"), "w") as f:
            f.write("```sh\n" + code + "\n```\n")
        q = subprocess.run(base + ["--lint", "README.md"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if q.returncode != 0:
            problems.append(f"accepted construct {code!r} refused: {q.stdout.decode()!r}")
    if problems:
        print("doc_test self-test FAILED:\n  " + "\n  ".join(problems))
        return 1
    print("doc_test self-test: every planted failure fails the test at its line; "
          "hiding constructs, bad fences and markers are refused")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kvharness", required=True, help="the built kvharness binary (put on PATH)")
    ap.add_argument("--work", default=None, help="scratch folder (replaced)")
    ap.add_argument("--source", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."),
                    help="the source tree (default: this script's ..)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds one block may run (default 300)")
    ap.add_argument("--self-test", action="store_true", help="check this script on a fixture")
    ap.add_argument("--lint", action="store_true", help="parse and check fences, markers and constructs; run nothing")
    ap.add_argument("files", nargs="*", help="markdown files relative to --source (default: README.md, docs/*.md, tracked */README.md)")
    args = ap.parse_args()
    if args.work is None and not args.lint:
        ap.error("--work is required (except with --lint)")
    return self_test(args) if args.self_test else run_files(args)


if __name__ == "__main__":
    sys.exit(main())
