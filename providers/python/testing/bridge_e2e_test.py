#!/usr/bin/env python3
"""End-to-end tests of the Python bridge through `kvharness run` (CTest, CPU).

  bridge_e2e_test.py TEST --kvharness BIN --out DIR --v1-provider LIB

TEST is one of:
  torch_cases          cases/python.toml with kvharness_torch exits 0; every torch_ kernel PASSes on every
                       layout its format has; torch_fixture_shuffle_contiguous fails on exactly the cases
                       where the built-in fixture_shuffle_contiguous does (interleaved and padded)
  planted_failures     a writer that writes past its page through the view's storage is out_of_view_write;
                       a writer and a reader that raise are CRASH launch_error naming type, message and the
                       raising line of the provider file; the run goes on
  findings             kvharness 0.5 (kvharness_findings.py): kvharness.Unsupported at call time is UNSUPPORTED
                       with the reason (reader, writer, workspace sizing), XPASS where a declaration expected a
                       failure, a misroute where a router picked the kernel (named by its substitute under
                       --replace-kernel, also in summary.md's header); a crash two modules down names the
                       provider's line and the stack's; summary.md groups crashes and refusals by (kernel, message)
  unimportable_module  a module whose import fails: exit 125 before any case, the module and its failing line
  provider_errors      a bad decorator argument names the user's file:line; exit 125's bisect wording only under a
                       bisect; python:NAME from its own folder suggests python:./NAME.py; an unknown kernel names
                       the line of its name and hints at --provider
  abi_v1_provider_cli  an ABI 1 provider library loads through --provider (kvharness info)
  standalone_bridge    `cmake -S providers/python -B DIR && cmake --build DIR` builds the bridge alone, and
                       $KVH_PYTHON_BRIDGE makes kvharness use it (a wrong path: exit 125 naming it)
  triton_case_file     cases/triton.toml with torch stand-ins under the Triton names: the names resolve, every
                       case but the fixture's PASSes, the fixture FAILs on interleaved and padded only
  timing_cpu           --timing-on-cpu: a torch writer and reader, timed by the bridge (kvh_kernel_desc.time),
                       have kernel_us, host_us and timing_method "host_clock" in results.json; built-in
                       kernels beside them keep the harness's loop (host_clock, host_us null); a writer that
                       passes and raises only when timed keeps its PASS with "timing: <why>" in its detail
  virtualenv           $KVH_PYTHON_EXECUTABLE=VENV/bin/python3 puts the virtualenv's site-packages on the path
Run from the repository root. Exit status 0 when every check holds.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys

PLANTED = "providers/python/testing/kvharness_planted.py"
FINDINGS = "providers/python/testing/kvharness_findings.py"
FINDINGS_STACK = "providers/python/testing/kvharness_findings_stack.py"
UNIMPORTABLE = "providers/python/testing/kvharness_unimportable.py"
MLA_TORCH = "providers/python/testing/kvharness_mla_torch.py"
FAILURES = []

# The layouts an x-split cache has (packed is NHD only), from cases/layout.h.
LAYOUTS = {"flash": {"separate", "kv_first", "interleaved", "padded", "packed", "offset"},
           "pa_v1": {"separate", "kv_first", "interleaved", "padded", "offset"},
           "shuffle": {"separate", "kv_first", "interleaved", "padded", "offset"}}
TORCH_WRITERS = {"torch_reshape_and_cache_flash": "flash", "torch_reshape_and_cache": "pa_v1",
                 "torch_reshape_and_cache_shuffle": "shuffle"}
TORCH_READERS = {"torch_paged_attention_v1": "pa_v1", "torch_paged_attention_shuffle": "shuffle"}


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILURES.append(what)


def run(args, *cli):
    cmd = [args.kvharness, *cli]
    print("$ " + " ".join(cmd))
    p = subprocess.run(cmd, capture_output=True, text=True)
    sys.stdout.write(p.stdout[-2000:])
    sys.stderr.write(p.stderr[-2000:])
    return p


def results(report_dir):
    with open(os.path.join(report_dir, "results.json")) as f:
        return json.load(f)["cases"]


def marked_line(path, marker):
    with open(path) as f:
        for i, line in enumerate(f, 1):
            if marker in line:
                return i
    raise AssertionError(f"{path}: no line marked {marker!r}")


def torch_cases(args):
    p = run(args, "run", "cases/python.toml", "--provider", "python:kvharness_torch", "--report-dir", args.out,
            "--no-progress")
    check(p.returncode == 0, f"exit code 0 (got {p.returncode})")
    cases = results(args.out)
    check(len(cases) > 500, f"{len(cases)} cases ran")
    for name, fmt in {**TORCH_WRITERS, **TORCH_READERS}.items():
        # Pipelines behind a fixture writer are expected to fail: not this kernel's verdict.
        mine = [c for c in cases if name in (c.get("writer"), c.get("reader")) and "fixture" not in (c.get("writer") or "")]
        bad = [c["id"] + ": " + c["verdict"] + " " + (c["detail"] or "")[:200]
               for c in mine if c["verdict"] != "PASS" and c["layout"] in LAYOUTS[fmt]]
        check(mine and not bad, f"{name}: {len(mine)} cases, none but PASS on its format's layouts {bad[:3]}")
        layouts = {c["layout"] for c in mine if c["verdict"] == "PASS"}
        check(layouts == LAYOUTS[fmt], f"{name} passes on every {fmt} layout: {sorted(layouts)}")
    crashes = [c["id"] for c in cases if c["verdict"] == "CRASH"]
    check(not crashes, f"no CRASH {crashes[:3]}")

    def fixture_verdicts(name):
        # The verdict only: a case's data seed hashes its id, which names the writer, so the two
        # fixtures see different slots and may fail for different first reasons.
        return {c["id"].replace(name, "FIXTURE"): c["verdict"] for c in cases
                if c["kind"] == "write" and c.get("writer") == name}
    torch_fx, builtin_fx = fixture_verdicts("torch_fixture_shuffle_contiguous"), fixture_verdicts("fixture_shuffle_contiguous")
    diff = sorted(k for k in set(torch_fx) | set(builtin_fx) if torch_fx.get(k) != builtin_fx.get(k))
    check(torch_fx and not diff, f"torch fixture verdicts == built-in fixture verdicts on {len(torch_fx)} cases {diff[:3]}")
    failing_layouts = {k.split("/")[4] for k, v in torch_fx.items() if v == "FAIL"}
    check(failing_layouts == {"interleaved", "padded"}, f"the fixtures fail on interleaved and padded: {sorted(failing_layouts)}")


def triton_case_file(args):
    """cases/triton.toml with the torch kernels standing in under the Triton names (kvharness_triton_names.py)."""
    p = run(args, "run", "cases/triton.toml", "--provider", "python:providers/python/testing/kvharness_triton_names.py",
            "--report-dir", args.out, "--no-progress")
    check(p.returncode == 0, f"exit code 0 (got {p.returncode})")
    cases = results(args.out)
    fixture = "triton_fixture_shuffle_contiguous"
    others = [c for c in cases if "fixture" not in (c.get("writer") or "")]  # both fixtures run
    bad = [(c["id"], c["verdict"]) for c in others if c["verdict"] != "PASS"]
    check(others and not bad, f"{len(others)} cases without the fixture all PASS {bad[:3]}")
    fx = [c for c in cases if c.get("writer") == fixture]
    fails = {c["layout"] for c in fx if c["verdict"] == "FAIL"}
    passes = {c["layout"] for c in fx if c["verdict"] == "PASS"}
    check(fails == {"interleaved", "padded"} and passes >= {"separate", "kv_first"} and not fails & passes,
          f"the fixture FAILs on interleaved and padded only: fails {sorted(fails)}, passes {sorted(passes)}")


# The MLA readers' cases (issue 22): pages of 1, 16 and 64 tokens, 16 and 4 heads, decode and MTP rows.
MLA_CASES = """
[[attention]]
models = ["DeepSeek-V2-Lite"]
tp = [1, 4]
batch_sizes = [3]
context_lens = [1, 90]
block_sizes = [1, 16, 64]
dtypes = ["bf16", "fp16"]
readers = ["torch_mla_decode", "fixture_torch_mla_rope_ignored"]

[[attention.expected_failure]]
filter = "reader=fixture_torch_mla_rope_ignored"
component = "reader"
reasons = ["mismatch"]
why = "known-bad: the score ignores the rope part"

[[attention]]
models = ["DeepSeek-V2-Lite"]
tp = 4
batch_sizes = [3]
query_lens = [[2, 4]]
context_lens = [4, 90]
block_sizes = [16]
dtypes = ["bf16"]
kv_cache_dtype = ["bf16", "fp8_e4m3fn", "fp8_e4m3fnuz"]
kv_scales = ["none", "tensor"]
readers = ["torch_mla_decode", "fixture_torch_mla_rope_ignored"]

[[attention.expected_failure]]
filter = "reader=fixture_torch_mla_rope_ignored"
component = "reader"
reasons = ["mismatch"]
why = "known-bad: the score ignores the rope part"
"""


def mla_torch(args):
    """The bridge's MLA side (cache format "mla", the latent cache as key_cache and value_cache, ragged
    rows): a torch MLA reader passes against the harness's reference, its rope-ignoring twin fails."""
    os.makedirs(args.out + "-cases", exist_ok=True)  # beside the report directory, which kvharness owns
    path = os.path.join(args.out + "-cases", "mla_torch.toml")
    with open(path, "w") as f:
        f.write(MLA_CASES)
    p = run(args, "run", path, "--provider", "python:" + MLA_TORCH, "--report-dir", args.out, "--no-progress")
    check(p.returncode == 0, f"exit code 0 (got {p.returncode})")
    cases = results(args.out)
    good = [c for c in cases if c.get("reader") == "torch_mla_decode"]
    bad = [(c["id"], c["verdict"], (c["detail"] or "")[:200]) for c in good if c["verdict"] != "PASS"]
    check(len(good) >= 17 and not bad, f"torch_mla_decode: {len(good)} cases, all PASS {bad[:3]}")
    check({c["block_size"] for c in good} == {1, 16, 64}, "pages of 1, 16 and 64 tokens")
    check({c["kv_cache_dtype"] for c in good} >= {"fp8_e4m3fn", "fp8_e4m3fnuz"}, "fp8 caches (uint8 codes, k_scales)")
    fx = [c for c in cases if c.get("reader") == "fixture_torch_mla_rope_ignored"]
    fails = [c for c in fx if c["verdict"] == "FAIL"]
    check(fx and len(fails) == len(fx), f"the rope-ignoring fixture FAILs all {len(fx)} cases ({len(fails)})")


def triton_mla_case_file(args):
    """cases/triton_mla.toml with the torch MLA reader standing in under triton_mla_decode."""
    p = run(args, "run", "cases/triton_mla.toml", "--provider",
            "python:providers/python/testing/kvharness_triton_names.py", "--report-dir", args.out, "--no-progress")
    check(p.returncode == 0, f"exit code 0 (got {p.returncode})")
    cases = results(args.out)
    bad = [(c["id"], c["verdict"]) for c in cases if c["verdict"] != "PASS"]
    mine = [c for c in cases if c.get("reader") == "triton_mla_decode"]
    check(mine and not bad, f"{len(cases)} cases ({len(mine)} triton_mla_decode) all PASS {bad[:3]}")


def planted_failures(args):
    # The case file lives beside the report directory: kvharness owns that directory as a whole.
    cases_file = args.out + "-planted.toml"
    os.makedirs(os.path.dirname(cases_file), exist_ok=True)
    with open(cases_file, "w") as f:
        f.write("""seeds = [1]
[[write]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["padded"]
num_tokens = [64]
block_sizes = [16]
dtypes = ["fp16"]
writers = ["planted_torch_writes_past_page", "planted_torch_raises", "torch_reshape_and_cache_flash"]

[[attention]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["kv_first"]
batch_sizes = [2]
context_lens = [1, 40]
block_sizes = [16]
dtypes = ["fp16"]
readers = ["planted_torch_reader_raises", "planted_torch_workspace_raises", "torch_paged_attention_v1",
           "torch_checks_workspace"]

[[attention]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["kv_first"]
head_sizes = [64, 128]
batch_sizes = [2]
context_lens = [1, 40]
block_sizes = [16, 32]
dtypes = ["fp16", "bf16"]
readers = ["planted_torch_hd128_only"]
""")
    p = run(args, "run", cases_file, "--provider", "python:kvharness_torch", "--provider", "python:" + PLANTED,
            "--report-dir", args.out, "--no-progress")
    check(p.returncode in (0, 1), f"the run finished (exit {p.returncode})")
    cases = results(args.out)
    by = {}
    for c in cases:
        by.setdefault(c.get("writer") or c.get("reader"), []).append(c)
    past = by.get("planted_torch_writes_past_page", [])
    check(past and all(c["verdict"] == "FAIL" and c["reason"] == "out_of_view_write" for c in past),
          f"writing past the page through the view is out_of_view_write: {[(c['verdict'], c['reason']) for c in past]}")
    for name, marker, text in (("planted_torch_raises", "# PLANTED: writer raises", "ValueError: planted failure at 64 tokens"),
                               ("planted_torch_reader_raises", "# PLANTED: reader raises", "RuntimeError: planted reader failure"),
                               ("planted_torch_workspace_raises", "# PLANTED: workspace raises",
                                "workspace_bytes: OverflowError: planted workspace failure at block_size 16")):
        where = f"{PLANTED}:{marked_line(PLANTED, marker)}"
        got = by.get(name, [])
        ok = got and all(c["verdict"] == "CRASH" and c["reason"] == "launch_error" and text in c["detail"]
                         and where in c["detail"] for c in got)
        check(ok, f"{name} is CRASH launch_error with '{text}' at {where}: {[(c['verdict'], c['reason'], c['detail']) for c in got]}")
    for name in ("torch_reshape_and_cache_flash", "torch_paged_attention_v1", "torch_checks_workspace"):
        got = by.get(name, [])
        check(got and all(c["verdict"] == "PASS" for c in got), f"the run goes on after the crashes: {name} PASSes")
    check(not any(c["verdict"] == "CRASH" and c["reason"] != "launch_error" for c in cases), "no other crash")
    # Declared capabilities: only hd128/bs16/fp16 runs; every other case is UNSUPPORTED naming the capability.
    caps = by.get("planted_torch_hd128_only", [])
    inside = [c for c in caps if c["head_size"] == 128 and c["block_size"] == 16 and c["dtype"] == "fp16"]
    check(len(caps) == 8 and len(inside) == 1 and inside[0]["verdict"] == "PASS",
          f"the reader runs inside its capabilities: {[(c['id'], c['verdict']) for c in inside]}")
    outside = [c for c in caps if c not in inside]
    check(outside and all(c["verdict"] == "UNSUPPORTED" and "planted_torch_hd128_only declares" in c["detail"] for c in outside),
          f"outside them UNSUPPORTED with the reason: {[(c['verdict'], c['detail']) for c in outside][:3]}")


def unimportable_module(args):
    p = run(args, "run", "cases/python.toml", "--provider", "python:" + UNIMPORTABLE, "--report-dir", args.out,
            "--no-progress")
    check(p.returncode == 125, f"exit code 125 (got {p.returncode})")
    where = f"{UNIMPORTABLE}:{marked_line(UNIMPORTABLE, '# PLANTED: import fails')}"
    check("python:" + UNIMPORTABLE in p.stderr, "stderr names the module")
    check("ModuleNotFoundError: No module named 'kvharness_no_such_dependency'" in p.stderr, "stderr has the exception")
    check(where in p.stderr, f"stderr has the failing line {where}")
    # No case ran, and the report set says why (a stale green set must not stay behind).
    with open(os.path.join(args.out, "results.json")) as f:
        j = json.load(f)
    check(j["cases"] == [] and j["exit_code"] == 125 and where in j["error"], f"results.json carries the error: {j['error']}")
    p = run(args, "list", "cases/python.toml", "--provider", "python:no_such_module_anywhere")
    check(p.returncode == 125 and "No module named 'no_such_module_anywhere'" in p.stderr,
          f"a module that is not on the path: exit 125 (got {p.returncode})")


def provider_errors(args):
    """Issue 25 (item 6): what a newcomer's mistakes print. A bad decorator argument names the user's
    file:line, not kvharness/__init__.py; exit 125 says "this commit cannot be tested" only under a
    bisect (bisect-run, $KVH_BISECT); `python:NAME` from the module's own folder suggests
    python:./NAME.py; an unknown kernel name points at its line in `writers =` / `readers =` and
    hints at --provider."""
    work = os.path.abspath(args.out + "-work")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    kvh = os.path.abspath(args.kvharness)
    env = {k: v for k, v in os.environ.items() if k != "KVH_BISECT"}

    def kv(*cli, cwd=work, extra_env=None):
        print("$ (cd " + cwd + ") kvharness " + " ".join(cli))
        p = subprocess.run([kvh, *cli], capture_output=True, text=True, cwd=cwd, env={**env, **(extra_env or {})})
        sys.stderr.write(p.stderr[-1500:])
        return p

    with open(os.path.join(work, "bad_decorator.py"), "w") as f:
        f.write("from kvharness import writer\n\n\n"
                "@writer(\"my_writer\", cache_format=\"flsh\")  # line 4: a typo in the format\n"
                "def write(key, value, key_cache, value_cache, slot_mapping, block_size):\n    pass\n")
    with open(os.path.join(work, "my_kernels.py"), "w") as f:
        f.write("from kvharness import writer\n\n\n@writer(\"my_writer\", cache_format=\"flash\")\n"
                "def write(key, value, key_cache, value_cache, slot_mapping, block_size):\n"
                "    key_cache.view(-1)[0] = 0\n")
    cases = os.path.join(work, "cases.toml")
    with open(cases, "w") as f:
        f.write("""seeds = [1]

[[write]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["separate"]
num_tokens = [4]
block_sizes = [16]
dtypes = ["fp16"]
writers = ["reshape_and_cache_flash",
           "my_writer"]

[[attention]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["separate"]
batch_sizes = [1]
context_lens = [1, 40]
block_sizes = [16]
dtypes = ["fp16"]
readers = ["my_reader"]
""")
    report = os.path.join(work, "report")

    p = kv("run", cases, "--provider", "python:bad_decorator.py", "--report-dir", report, "--no-progress")
    check(p.returncode == 125, f"a bad decorator argument: exit 125 (got {p.returncode})")
    check("bad_decorator.py:4" in p.stderr and "kvharness/__init__.py" not in p.stderr,
          "the error names the user's decorator line bad_decorator.py:4, not the kvharness package")
    check("cannot be tested" not in p.stderr, "outside a bisect: no bisect jargon")
    p = kv("run", cases, "--provider", "python:bad_decorator.py", "--report-dir", report, "--no-progress",
           extra_env={"KVH_BISECT": "1"})
    check(p.returncode == 125 and "(this commit cannot be tested)" in p.stderr, "KVH_BISECT=1: the bisect wording")
    p = kv("bisect-run", cases, "--provider", "python:bad_decorator.py", "--report-dir", report)
    check(p.returncode == 125 and "(this commit cannot be tested)" in p.stderr, "bisect-run: the bisect wording")

    p = kv("run", cases, "--provider", "python:my_kernels", "--report-dir", report, "--no-progress")
    check(p.returncode == 125 and "No module named 'my_kernels'" in p.stderr and "python:./my_kernels.py" in p.stderr,
          f"python:my_kernels from its own folder suggests python:./my_kernels.py (exit {p.returncode})")

    # Unknown kernels: the line of the name (line 11 of the writers array; readers on line 21), and --provider.
    p = kv("run", cases, "--report-dir", report, "--no-progress")
    check(p.returncode == 2 and f"{cases}:11: writer 'my_writer'" in p.stderr,
          f"an unknown writer points at its line in writers = (exit {p.returncode})")
    check("no --provider was given" in p.stderr and "--provider python:./my_kernels.py" in p.stderr,
          "and says no --provider was given, with an example")
    p = kv("run", cases, "--provider", "python:./my_kernels.py", "--report-dir", report, "--no-progress")
    check(p.returncode == 2 and f"{cases}:21: reader 'my_reader'" in p.stderr
          and "nor by --provider python:./my_kernels.py" in p.stderr,
          f"an unknown reader points at readers = and names the providers loaded (exit {p.returncode})")
    routed = os.path.join(work, "routed.toml")
    with open(routed, "w") as f:
        f.write("[[attention]]\nmodels = [\"Qwen3-235B-A22B\"]\ntp = 8\nlayouts = [\"separate\"]\nbatch_sizes = [1]\n"
                "context_lens = [1, 40]\nblock_sizes = [16]\ndtypes = [\"fp16\"]\n"
                "routers = [\"aiter-v0.1.12\",\n           \"my_router\"]\n")  # my_router: line 10
    p = kv("list", routed)
    check(p.returncode == 2 and f"{routed}:10: router 'my_router': unknown policy (a provider's router?" in p.stderr,
          f"an unknown router points at its line in routers = and hints at --provider (exit {p.returncode})")


def standalone_bridge(args):
    """The one command of the README builds the bridge alone; $KVH_PYTHON_BRIDGE selects it."""
    build = os.path.join(args.out, "bridge")
    cfg = ["cmake", "-S", "providers/python", "-B", build, f"-DPython3_EXECUTABLE={sys.executable}"]
    if shutil.which("ninja") and not os.path.exists(os.path.join(build, "CMakeCache.txt")):
        cfg += ["-G", "Ninja"]  # CI installs ninja-build, not make
    for cmd in (cfg, ["cmake", "--build", build]):
        p = subprocess.run(cmd, capture_output=True, text=True)
        check(p.returncode == 0, " ".join(cmd) + ("" if p.returncode == 0 else "\n" + p.stdout[-3000:] + p.stderr[-3000:]))
        if p.returncode:
            return
    lib = os.path.join(build, "libkvh_python.so")
    env = dict(os.environ, KVH_PYTHON_BRIDGE=os.path.abspath(lib))
    p = subprocess.run([args.kvharness, "info", "--provider", "python:kvharness_torch"], capture_output=True, text=True, env=env)
    check(p.returncode == 0 and "torch_reshape_and_cache_shuffle" in p.stdout, f"the standalone bridge serves kvharness_torch (exit {p.returncode}) {p.stderr[-500:]}")
    env["KVH_PYTHON_BRIDGE"] = "/nonexistent/libkvh_python.so"
    p = subprocess.run([args.kvharness, "info", "--provider", "python:kvharness_torch"], capture_output=True, text=True, env=env)
    check(p.returncode == 125 and "/nonexistent/libkvh_python.so" in p.stderr,
          f"$KVH_PYTHON_BRIDGE comes first: a wrong one is exit 125 naming it (exit {p.returncode})")


def virtualenv(args):
    """$KVH_PYTHON_EXECUTABLE set to a virtualenv's python: its site-packages are on the bridge's path."""
    venv = os.path.join(args.out, "venv")
    if not os.path.isdir(venv):
        p = subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], capture_output=True, text=True)
        check(p.returncode == 0, "python3 -m venv --without-pip " + p.stderr[-500:])
    site = subprocess.run([os.path.join(venv, "bin", "python3"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True).stdout.strip()
    with open(os.path.join(site, "kvh_venv_marker.py"), "w") as f:
        f.write("FORMAT = 'flash'\n")
    provider = os.path.join(args.out, "kvharness_venv_provider.py")
    with open(provider, "w") as f:
        f.write("import kvh_venv_marker\nfrom kvharness import writer\n\n"
                "@writer('venv_writer', cache_format=kvh_venv_marker.FORMAT)\n"
                "def w(key, value, key_cache, value_cache, slot_mapping, block_size):\n    pass\n")
    env = dict(os.environ, KVH_PYTHON_EXECUTABLE=os.path.join(venv, "bin", "python3"))
    env.pop("VIRTUAL_ENV", None)
    p = subprocess.run([args.kvharness, "info", "--provider", "python:" + provider], capture_output=True, text=True, env=env)
    check(p.returncode == 0 and "venv_writer" in p.stdout, f"the venv's module imports (exit {p.returncode}) {p.stderr[-500:]}")
    env.pop("KVH_PYTHON_EXECUTABLE")
    p = subprocess.run([args.kvharness, "info", "--provider", "python:" + provider], capture_output=True, text=True, env=env)
    check(p.returncode == 125 and "No module named 'kvh_venv_marker'" in p.stderr,
          f"known-bad: without it the module is not found (exit {p.returncode})")


FINDINGS_CASES = """seeds = [1]
[[attention]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["separate", "kv_first", "interleaved", "padded"]
head_sizes = [64, 96, 128]
batch_sizes = [1, 2, 3]
context_lens = [1, 40]
block_sizes = [16]
dtypes = ["fp16"]
readers = ["findings_pow2_reader", "findings_compile_error_reader"]

# Strict: a case declared to fail that the kernel refuses shows no failure (XPASS).
[[attention.expected_failure]]
filter = "reader=findings_pow2_reader,head_size=96,layout=padded"
component = "reader"
why = "declared to fail, to show that a refusal is not green"

[[attention]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["kv_first"]
head_sizes = [128]
batch_sizes = [2]
context_lens = [1, 40]
block_sizes = [16, 544]
dtypes = ["fp16"]
readers = ["findings_ws_refuses"]

[[write]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["interleaved"]
num_tokens = [64]
block_sizes = [16, 544]
dtypes = ["fp16"]
writers = ["findings_refusing_writer"]

# Routed: paged_attention_rocm is replaced by findings_shuffle_128_only (--replace-kernel).
[[attention]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["kv_first"]
head_sizes = [96, 128]
batch_sizes = [2]
context_lens = [1, 40]
block_sizes = [16]
dtypes = ["fp16"]
routers = ["aiter-v0.1.12"]
target = "MI355X"
"""


def findings(args):
    cases_file = args.out + "-findings.toml"
    os.makedirs(os.path.dirname(cases_file), exist_ok=True)
    with open(cases_file, "w") as f:
        f.write(FINDINGS_CASES)
    p = run(args, "run", cases_file, "--provider", "python:kvharness_torch", "--provider", "python:" + FINDINGS,
            "--replace-kernel", "paged_attention_rocm=findings_shuffle_128_only", "--report-dir", args.out,
            "--no-progress")
    check(p.returncode == 1, f"the run finished with its crashes, misroutes and XPASS: exit 1 (got {p.returncode})")
    cases = results(args.out)
    def of(name, **axes):
        return [c for c in cases if name in (c.get("writer"), c.get("reader"), c.get("routed_to"))
                and all(c[k] == v for k, v in axes.items())]
    # 1. kvharness.Unsupported at call time: UNSUPPORTED with "NAME refused the case at call time: REASON".
    refused = [c for c in of("findings_pow2_reader", head_size=96) if c["layout"] != "padded"]
    want = "findings_pow2_reader refused the case at call time: head_size 96 is not a power of two"
    check(len(refused) == 9 and all(c["verdict"] == "UNSUPPORTED" and c["reason"] == "unsupported_config"
                                    and c["detail"] == want for c in refused),
          f"a reader's refusal is UNSUPPORTED with its reason: {[(c['verdict'], c['detail']) for c in refused][:2]}")
    ok = of("findings_pow2_reader", head_size=64) + of("findings_pow2_reader", head_size=128)
    check(len(ok) == 24 and all(c["verdict"] == "PASS" for c in ok), "the same reader PASSes where it does not refuse")
    xpass = of("findings_pow2_reader", head_size=96, layout="padded")
    check(len(xpass) == 3 and all(c["verdict"] == "XPASS" and "but UNSUPPORTED: " + want in c["detail"] for c in xpass),
          f"declared to fail and refused: XPASS: {[(c['verdict'], c['detail']) for c in xpass][:1]}")
    ws = of("findings_ws_refuses")
    check({(c["block_size"], c["verdict"]) for c in ws} == {(16, "PASS"), (544, "UNSUPPORTED")}
          and all("findings_ws_refuses refused the case at call time: block_size 544 needs more shared memory"
                  in c["detail"] for c in ws if c["verdict"] == "UNSUPPORTED"),
          f"workspace sizing that refuses: UNSUPPORTED: {[(c['block_size'], c['verdict'], c['detail']) for c in ws]}")
    wr = of("findings_refusing_writer")
    check({(c["block_size"], c["verdict"]) for c in wr} == {(16, "PASS"), (544, "UNSUPPORTED")}
          and all("findings_refusing_writer refused the case at call time: block_size 544" in c["detail"]
                  for c in wr if c["verdict"] == "UNSUPPORTED"),
          f"a writer's refusal in a write case: UNSUPPORTED: {[(c['block_size'], c['verdict']) for c in wr]}")
    # 2. Routed and replaced: the refusal of the router's pick is a misroute naming the substitute.
    sub = f"paged_attention_rocm (replaced by python:{FINDINGS}:findings_shuffle_128_only)"
    routed = [c for c in cases if c.get("router_policy") == "aiter-v0.1.12"]
    bad = [c for c in routed if c["head_size"] == 96]
    check(bad and all(c["verdict"] == "FAIL" and c["reason"] == "misroute" and c["routed_to"] == "paged_attention_rocm"
                      and f"{sub} refused the case at call time: head_size 96: this build has 128 only" in c["detail"]
                      for c in bad),
          f"a routed refusal is FAIL misroute naming the substitute: {[(c['verdict'], c['detail']) for c in bad][:1]}")
    check(all(c["verdict"] == "PASS" for c in routed if c["head_size"] == 128), "the substitute PASSes head_size 128")
    # 3. The stack's frame beside the provider's line.
    crash96 = of("findings_compile_error_reader", head_size=96)
    where = (f"{FINDINGS}:{marked_line(FINDINGS, '# PROVIDER: calls the stack')}; raised in "
             f"{FINDINGS_STACK}:{marked_line(FINDINGS_STACK, '# STACK: compile error')} in compile_paged)")
    check(len(crash96) == 12 and all(c["verdict"] == "CRASH" and c["detail"].endswith(where) for c in crash96),
          f"a crash two modules down names both lines ({where}): {[c['detail'] for c in crash96][:1]}")
    # 4. summary.md: one finding per (kernel, message), with its count.
    with open(os.path.join(args.out, "summary.md")) as f:
        md = f.read()
    unexpected = md[md.index("## Unexpected failures"):md.index("## Matrices")]
    lines = unexpected.splitlines()
    heads = [(h, lines[i + 2]) for i, h in enumerate(lines) if h.startswith("### findings_compile_error_reader")]
    check(len(heads) == 2 and all(h == "### findings_compile_error_reader — CRASH launch_error (12 cases)"
                                  for h, _ in heads)
          and any(re.search(r"Required: \d+, Hardware limit: 101376", m) for _, m in heads)
          and any("must be a power of 2" in m for _, m in heads),
          f"two compile errors of 12 cases each are two findings: {heads}")
    check(unexpected.count("- reproduce: ") == 2 + len(bad) + len(xpass),
          "one repro per crash finding (misroutes and XPASS listed per case)")
    check(f"`paged_attention_rocm` -> `python:{FINDINGS}:findings_shuffle_128_only`" in md
          and re.search(r"^- providers \(--provider\): .*`python:" + re.escape(FINDINGS) + "`", md, re.M),
          "the header names the provider and the substitution")
    check(f"### {sub} — " not in unexpected and "### router aiter-v0.1.12 — kv_first — FAIL misroute" in unexpected,
          "a misroute is the router's finding")
    unsup = md[md.index("## Unsupported"):]
    check(f"| findings_pow2_reader | {want} | 9 |" in unsup, "the refusals are one row with a count")


TIMING_CASES = """seeds = [1]
[[write]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["separate", "interleaved"]
head_sizes = [128]
num_tokens = [16]
block_sizes = [16]
dtypes = ["fp16"]
writers = ["torch_reshape_and_cache_flash", "reshape_and_cache_flash", "planted_python_timing_raises"]
[[attention]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["separate"]
head_sizes = [128]
batch_sizes = [2]
context_lens = [40, 40]
block_sizes = [16]
dtypes = ["fp16"]
readers = ["torch_paged_attention_v1"]
"""


def timing_cpu(args):
    inputs = args.out + "_inputs"  # the report directory holds only what kvharness writes
    shutil.rmtree(inputs, ignore_errors=True)
    os.makedirs(inputs)
    case_file = os.path.join(inputs, "timing.toml")
    with open(case_file, "w") as f:
        f.write(TIMING_CASES)
    provider = os.path.join(inputs, "timing_provider.py")
    with open(provider, "w") as f:  # a torch writer whose second call (the first case's first timed one) raises
        f.write("import kvharness, kvharness_torch\n"
                "_calls = [0]\n"
                "@kvharness.writer('planted_python_timing_raises', cache_format='flash')\n"
                "def planted(key, value, key_cache, value_cache, slot_mapping, block_size):\n"
                "    _calls[0] += 1\n"
                "    if _calls[0] == 2:\n"
                "        raise RuntimeError('the second call fails')\n"
                "    kvharness_torch.reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, block_size)\n")
    p = run(args, "run", case_file, "--provider", "python:kvharness_torch", "--provider", "python:" + provider,
            "--report-dir", args.out, "--no-progress", "--timing-on-cpu", "--timing-reps", "5", "--timing-warmup", "1")
    check(p.returncode == 0, f"exit code 0 (got {p.returncode})")
    cases = results(args.out)
    by_kernel = {}
    for c in cases:
        by_kernel.setdefault(c.get("reader") if c["kind"] == "attention" else c["writer"], []).append(c)
    for name in ("torch_reshape_and_cache_flash", "torch_paged_attention_v1"):
        mine = by_kernel.get(name, [])
        good = [c for c in mine if c["verdict"] == "PASS" and c["timing_method"] == "host_clock"
                and (c["kernel_us"] or 0) > 0 and (c["host_us"] or 0) > 0]
        check(mine and len(good) == len(mine), f"{name}: {len(good)}/{len(mine)} PASS with kernel_us, host_us, host_clock")
    builtin = by_kernel.get("reshape_and_cache_flash", [])
    check(builtin and all(c["timing_method"] == "host_clock" and c["kernel_us"] and c["host_us"] is None
                          for c in builtin), "built-in writer: the harness's loop (host_us null)")
    raising = by_kernel.get("planted_python_timing_raises", [])
    check(len(raising) == 2, f"the raising writer ran 2 cases ({len(raising)})")
    # Both cases pass; the first one's timing fails at its warmup call, the second is timed.
    failed = [c for c in raising if c["verdict"] == "PASS" and c["kernel_us"] is None]
    timed = [c for c in raising if c["verdict"] == "PASS" and c["timing_method"] == "host_clock"]
    check(len(failed) == 1 and len(timed) == 1 and failed[0]["timing_method"] is None
          and failed[0]["host_us"] is None and "timing: " in (failed[0]["detail"] or "")
          and "RuntimeError: the second call fails" in failed[0]["detail"],
          f"a provider raising while timed: PASS kept, kernel_us null, 'timing: <why>' in detail "
          f"{[(c['verdict'], c['detail']) for c in raising]}")


# ---- issue 23 (D launch configurations) ----
# The same table twice: once over every declared configuration, once at the default launch.
_CONFIG_TABLE = """
[[attention]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["kv_first"]
head_sizes = [128]
block_sizes = [16]
dtypes = ["bf16"]
batch_sizes = [2]
context_lens = [20, 300]
readers = ["torch_pa_configs", "fixture_torch_pa_reduce_needs_4_warps"]
"""
CONFIG_CASES = ("seeds = [1]\n" + _CONFIG_TABLE + """launch_configs = "all"

[[attention.expected_failure]]
filter = "reader=fixture_torch_pa_reduce_needs_4_warps,launch_config=num_warps2"
component = "reader"
reasons = ["mismatch"]
why = "known-bad: the reduce drops the upper half of each head below 4 warps"
""" + _CONFIG_TABLE)


def launch_configs(args):
    """A Python reader's declared configurations (configs=[...]) as a case axis: one case each, the
    call gets that configuration's keywords (the fixture fails at num_warps2 only), an unknown name
    is refused naming file, line and field."""
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "configs.toml")
    with open(path, "w") as f:
        f.write(CONFIG_CASES)
    report = os.path.join(args.out, "report")  # a report directory of its own (kvharness refuses a foreign one)
    p = run(args, "run", path, "--provider", "python:providers/python/testing/kvharness_configs.py",
            "--report-dir", report, "--no-progress")
    check(p.returncode == 0, f"exit code 0 (got {p.returncode})")
    cases = results(report)
    got = sorted((c["reader"], c.get("launch_config") or "", c["verdict"]) for c in cases)
    want = sorted([("torch_pa_configs", "num_warps2", "PASS"), ("torch_pa_configs", "w4s2", "PASS"),
                   ("torch_pa_configs", "", "PASS"),
                   ("fixture_torch_pa_reduce_needs_4_warps", "num_warps2", "FAIL"),
                   ("fixture_torch_pa_reduce_needs_4_warps", "w4s2", "PASS"),
                   ("fixture_torch_pa_reduce_needs_4_warps", "", "PASS")])
    check(got == want, f"one case per configuration and the default, the fixture failing at num_warps2 only: {got}")
    ids = [c["id"] for c in cases if c.get("launch_config")]
    check(ids and all(f"/cfg={c['launch_config']}/" in c["id"] for c in cases if c.get("launch_config")),
          f"ids carry /cfg=NAME {ids[:2]}")
    with open(path, "w") as f:
        f.write(CONFIG_CASES.replace('launch_configs = "all"', 'launch_configs = ["w4s2", "w2"]'))
    p = run(args, "list", path, "--provider", "python:providers/python/testing/kvharness_configs.py")
    check(p.returncode == 2, f"an unknown configuration: exit 2 (got {p.returncode})")
    check(f"{path}:13: field 'launch_configs': reader 'torch_pa_configs' declares no launch configuration 'w2'; "
          "it declares: num_warps2, w4s2" in p.stderr, "the error names file:line, field, reader and the declared ones")
# ---- end issue 23 (D launch configurations) ----


def abi_v1_provider_cli(args):
    p = run(args, "info", "--provider", args.v1_provider)
    check(p.returncode == 0, f"exit code 0 (got {p.returncode})")
    check("v1_record_write" in p.stdout and "v1_fixture_record_attention" in p.stdout, "kvharness info lists the ABI 1 kernels")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("test", choices=["torch_cases", "planted_failures", "findings", "unimportable_module", "abi_v1_provider_cli",
                                     "provider_errors",  # issue 25
                                     "standalone_bridge", "virtualenv", "triton_case_file", "timing_cpu",
                                     "mla_torch", "triton_mla_case_file",
                                     "launch_configs"])  # issue 23 (D)
    ap.add_argument("--kvharness", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--v1-provider", required=True)
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)  # nothing of an earlier run may pass for this one
    globals()[args.test](args)
    print(f"{len(FAILURES)} check(s) failed" if FAILURES else "all checks passed")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
