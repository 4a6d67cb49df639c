#!/usr/bin/env python3
"""Parses the compiler output of ci/amd_compile_check.sh into a resource table.

Input: a manifest (source, target, tag per line; tag.cmd, tag.log, tag.rc and
tag.s for gfx942 beside it). hipcc targets (gfx90a, gfx940): per-kernel
figures from the -Rpass-analysis=kernel-resource-usage remarks. clang-19
target (gfx942): figures from the amdhsa.kernels metadata of the assembly,
and every kernel hipcc reported for the source must be defined there.

Output: OUT/resources.md, OUT/resources.json; the table on stdout; failures
with the compiler's error output on stderr. Exit 1 on any failure.
Standard library only.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys

HIPCC_TARGETS = ("gfx90a", "gfx940")
ASM_TARGET = "gfx942"
TARGET_ORDER = {"gfx90a": 0, "gfx940": 1, "gfx942": 2}

REMARK_NAME = re.compile(r"remark: Function Name: (\S+)")
REMARK_FIELD = re.compile(r"remark:\s+([A-Za-z][A-Za-z ]*?(?: \[[^\]]*\])?): (\S+) \[-Rpass-analysis")
REMARK_KEYS = {
    "SGPRs": "sgprs",
    "VGPRs": "vgprs",
    "AGPRs": "agprs",
    "ScratchSize [bytes/lane]": "scratch_bytes",
    "Occupancy [waves/SIMD]": "occupancy",
    "SGPRs Spill": "sgpr_spills",
    "VGPRs Spill": "vgpr_spills",
    "LDS Size [bytes/block]": "lds_bytes",
    "Dynamic Stack": "dynamic_stack",
}
META_KEYS = {
    "vgpr_count": "vgprs",
    "agpr_count": "agprs",
    "sgpr_count": "sgprs",
    "vgpr_spill_count": "vgpr_spills",
    "sgpr_spill_count": "sgpr_spills",
    "group_segment_fixed_size": "lds_bytes",
    "private_segment_fixed_size": "scratch_bytes",
    "uses_dynamic_stack": "dynamic_stack",
}


def read(path, default=""):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return default


def number(v):
    try:
        return int(v)
    except ValueError:
        return {"true": True, "false": False, "True": True, "False": False}.get(v, v)


def parse_remarks(log):
    """Kernels in order of appearance: {symbol: {field: value}}."""
    kernels, cur = {}, None
    for line in log.splitlines():
        m = REMARK_NAME.search(line)
        if m:
            cur = kernels.setdefault(m.group(1), {})
            continue
        m = REMARK_FIELD.search(line)
        if m and cur is not None:
            key = REMARK_KEYS.get(m.group(1).strip())
            if key:
                cur[key] = number(m.group(2))
    return kernels


def parse_asm(asm):
    """(metadata per kernel symbol, external callees per kernel, defined kernels)."""
    meta, in_kernels, cur = {}, False, None
    in_md = False
    for line in asm.splitlines():
        if line.strip() == ".amdgpu_metadata":
            in_md = True
            continue
        if line.strip() == ".end_amdgpu_metadata":
            in_md = False
            continue
        if not in_md:
            continue
        if line.startswith("amdhsa.kernels:"):
            in_kernels = True
            continue
        if in_kernels and re.match(r"^\S", line):
            in_kernels = False
        if not in_kernels:
            continue
        m = re.match(r"^  - \.(\w+):\s*(.*)$", line)
        if m:  # a new kernel entry
            cur = {}
            meta.setdefault("__entries__", []).append(cur)
            cur[m.group(1)] = m.group(2).strip()
            continue
        m = re.match(r"^    \.(\w+):\s*(.*)$", line)
        if m and cur is not None:
            cur[m.group(1)] = m.group(2).strip()
    by_name = {}
    for e in meta.get("__entries__", []):
        if "name" in e:
            by_name[e["name"]] = {v: number(e[k]) for k, v in META_KEYS.items() if k in e}
    defined = set(re.findall(r"^\s*\.amdhsa_kernel\s+(\S+)", asm, re.M))
    # Calls out of each kernel body: `sym@rel32@lo` between its label and .Lfunc_endN.
    callees, body_of = {}, None
    for line in asm.splitlines():
        m = re.match(r"^(\S+):", line)
        if m and m.group(1) in defined:
            body_of = m.group(1)
            callees[body_of] = []
            continue
        if body_of is None:
            continue
        if re.match(r"^\.Lfunc_end\d+:", line):
            body_of = None
            continue
        for sym in re.findall(r"([A-Za-z_][\w.$]*)@rel32@lo", line):
            if not sym.startswith(".L") and sym not in callees[body_of]:
                callees[body_of].append(sym)
    return by_name, callees, defined


def demangle(symbols):
    symbols = sorted(set(symbols))
    if not symbols or not shutil.which("c++filt"):
        return {s: s for s in symbols}
    res = subprocess.run(["c++filt"], input="\n".join(symbols) + "\n", capture_output=True, text=True)
    out = res.stdout.splitlines()
    if res.returncode != 0 or len(out) != len(symbols):
        return {s: s for s in symbols}
    return dict(zip(symbols, out))


def short_name(demangled):
    """`ns::(anonymous namespace)::kern<T, 128>(args)` -> `kern<T, 128>`."""
    s = demangled.strip()
    if s.endswith(")"):  # drop the parameter list (the last balanced group)
        depth = 0
        for i in range(len(s) - 1, -1, -1):
            depth += {")": 1, "(": -1}.get(s[i], 0)
            if depth == 0:
                s = s[:i]
                break
    s = s.replace("(anonymous namespace)::", "")
    # drop leading namespaces, outside template arguments
    depth, cut = 0, 0
    for i, ch in enumerate(s):
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == ":" and depth == 0 and i + 1 < len(s) and s[i + 1] == ":":
            cut = i + 2
    return s[cut:]


def error_output(log, limit=200):
    """The compiler's output without the resource remarks (and their source excerpts)."""
    lines, skip = [], 0
    for line in log.splitlines():
        if "[-Rpass-analysis=kernel-resource-usage]" in line:
            skip = 2  # each remark is followed by the source line and a caret
            continue
        if skip and not re.search(r"(error|warning|note|remark):", line):
            skip -= 1
            continue
        skip = 0
        lines.append(line)
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more lines in the log)"]
    return "\n".join(lines)


def tool_version(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    for line in out.splitlines():
        if "clang version" in line or "HIP version" in line:
            return line.strip()
    return out.splitlines()[0].strip() if out.strip() else None


def cell(v):
    return "?" if v is None else str(v)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--elapsed", type=float, default=None)
    a = ap.parse_args()

    entries = []
    with open(a.manifest, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line:
                src, target, tag = line.split("\t")
                entries.append((src, target, tag))

    rows, failures, sources = [], [], {}
    hip_kernels = {}  # source -> ordered symbols seen by hipcc
    asm_info = {}
    for src, target, tag in entries:
        rc = int(read(tag + ".rc", "1").strip() or 1)
        log = read(tag + ".log")
        cmd = read(tag + ".cmd").strip()
        st = sources.setdefault(src, {"source": src, "targets": {}})
        st["targets"][target] = {"ok": rc == 0, "rc": rc, "log": os.path.relpath(tag + ".log", a.out), "command": cmd}
        if rc != 0:
            failures.append({"source": src, "target": target, "kind": "compile", "rc": rc, "command": cmd,
                             "output": error_output(log)})
            continue
        if target in HIPCC_TARGETS:
            ks = parse_remarks(log)
            hip_kernels.setdefault(src, [])
            for sym, fields in ks.items():
                if sym not in hip_kernels[src]:
                    hip_kernels[src].append(sym)
                rows.append(dict(symbol=sym, source=src, target=target, compiler="hipcc", **fields))
        else:
            meta, callees, defined = parse_asm(read(tag + ".s"))
            asm_info[src] = (tag, meta, callees, defined)
            for sym in sorted(defined):
                fields = dict(meta.get(sym, {}))
                ext = callees.get(sym, [])
                rows.append(dict(symbol=sym, source=src, target=target, compiler="clang-19 -nogpulib", **fields,
                                 external_calls=ext, inflated=bool(ext)))

    # gfx942 must define every kernel hipcc compiled for the same source.
    for src, (tag, meta, callees, defined) in asm_info.items():
        missing = [s for s in hip_kernels.get(src, []) if s not in defined]
        no_meta = [s for s in defined if s not in meta]
        if missing or no_meta:
            failures.append({"source": src, "target": ASM_TARGET, "kind": "missing_kernel", "rc": 0,
                             "command": read(tag + ".cmd").strip(),
                             "output": "".join(f"kernel not in the gfx942 assembly: {s}\n" for s in missing) +
                                       "".join(f"kernel without amdhsa metadata: {s}\n" for s in no_meta)})
        sources[src]["kernels"] = len(defined)
    for src in sources:
        sources[src].setdefault("kernels", len(hip_kernels.get(src, [])))

    names = demangle(r["symbol"] for r in rows)
    for r in rows:
        r["demangled"] = names.get(r["symbol"], r["symbol"])
        r["kernel"] = short_name(r["demangled"])
    src_order = {s: i for i, (s, _, _) in enumerate(entries)}
    rows.sort(key=lambda r: (src_order.get(r["source"], 0), r["kernel"], r["symbol"], TARGET_ORDER[r["target"]]))

    ok = not failures
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    fields = ("vgprs", "agprs", "sgprs", "lds_bytes", "scratch_bytes", "vgpr_spills", "sgpr_spills", "occupancy",
              "dynamic_stack", "external_calls", "inflated")
    doc = {
        "schema": "kvharness.amd-compile/1",
        "generated_at": now,
        "ok": ok,
        "elapsed_s": a.elapsed,
        "compilers": {"hipcc": tool_version(["hipcc", "--version"]),
                      "hipcc_clang": tool_version(["clang++-15", "--version"]),
                      "clang19": tool_version(["clang++-19", "--version"])},
        "sources": list(sources.values()),
        "kernels": [{k: r.get(k) for k in ("kernel", "symbol", "demangled", "source", "target", "compiler") + fields}
                    for r in rows],
        "failures": failures,
    }
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "resources.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")

    # Markdown table.
    lines = ["| kernel | source | target | VGPRs | SGPRs | LDS bytes | scratch bytes | spills |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        target = r["target"] + (" *" if r.get("inflated") else "")
        vgprs = cell(r.get("vgprs")) + (f" (+{r['agprs']} AGPR)" if r.get("agprs") else "")
        spills = f"v{cell(r.get('vgpr_spills'))} / s{cell(r.get('sgpr_spills'))}"
        lines.append(f"| `{r['kernel']}` | {r['source']} | {target} | {vgprs} | {cell(r.get('sgprs'))} | "
                     f"{cell(r.get('lds_bytes'))} | {cell(r.get('scratch_bytes'))} | {spills} |")
    table = "\n".join(lines)

    calls = sorted({c for r in rows for c in (r.get("external_calls") or [])})
    notes = [
        "gfx90a, gfx940: `hipcc` (Debian, HIP 5.2, clang 15) with the ROCm 5.2 device libraries linked, "
        "`-Rpass-analysis=kernel-resource-usage`: the realistic figures (gfx940 is the ISA family of MI300's gfx942).",
        "gfx942: `clang++-19 -nogpulib --cuda-device-only -S`, figures from the `amdhsa.kernels` metadata. "
        "`*` marks a kernel whose body calls device-library functions that stay external under `-nogpulib`"
        + (f" (here: {', '.join('`' + c + '`' for c in calls)})" if calls else "")
        + "; its register, spill and scratch figures are inflated by the call ABI. This row proves the target compiles.",
        "VGPRs on gfx90a/gfx940/gfx942 are the architectural VGPRs; AGPRs are shown when used. "
        "Spills are counts (`v` VGPR / `s` SGPR); SGPR spills go to VGPR lanes, VGPR spills to scratch. "
        "LDS is static `__shared__` only (dynamic shared memory is sized at launch). Scratch is bytes per lane.",
    ]
    md = [f"# AMD compile check: per-kernel resources", "",
          f"Generated {now} by `ci/amd_compile_check.sh`"
          + (f" in {a.elapsed:.1f} s" if a.elapsed is not None else "") + ". "
          + ("All compiles succeeded." if ok else f"**{len(failures)} failure(s)**, see below."), "",
          table, ""]
    md += [f"- {n}" for n in notes]
    if failures:
        md += ["", "## Failures", ""]
        for fl in failures:
            md += [f"### {fl['source']} ({fl['target']}, {fl['kind']}, rc {fl['rc']})", "", "```",
                   fl["command"], fl["output"], "```", ""]
    with open(os.path.join(a.out, "resources.md"), "w", encoding="utf-8") as f:
        f.write("\n".join(md) + "\n")

    print(table)
    print()
    for src, st in sources.items():
        status = ", ".join(f"{t} {'ok' if v['ok'] else 'FAILED'}" for t, v in st["targets"].items())
        print(f"{src}: {st['kernels']} kernel(s); {status}")
    if a.elapsed is not None:
        print(f"compile time: {a.elapsed:.1f} s")
    print(f"written: {os.path.join(a.out, 'resources.md')}, {os.path.join(a.out, 'resources.json')}")
    for fl in failures:
        print(f"\n=== FAILED: {fl['source']} [{fl['target']}] ({fl['kind']}, rc {fl['rc']})", file=sys.stderr)
        print(f"$ {fl['command']}", file=sys.stderr)
        print(fl["output"], file=sys.stderr)
    if failures:
        print(f"\namd_compile_check: {len(failures)} failure(s)", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
