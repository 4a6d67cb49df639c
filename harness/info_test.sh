#!/usr/bin/env bash
# `kvharness info`'s kernel table (issue 25, item 11): one column per field whatever the name's
# length (built-in names reach 41 characters), "FIXTURE" said once, and each kernel's declared
# capabilities on the line below it.
#
#   info_test.sh KVHARNESS
set -u
bin=$1
out=$("$bin" info) || { echo "FAIL: kvharness info exits $?"; exit 1; }
python3 - <<'PY' "$out"
import re, sys
text = sys.argv[1]
ok = True
def fail(msg):
    global ok
    ok = False
    print("FAIL: " + msg)
if "FIXTURE REGRESSION FIXTURE" in text or "FIXTURE: REGRESSION FIXTURE" in text:
    fail("a fixture is called FIXTURE twice")
section = text.split("\nkernels", 1)[1].split("\n\n", 1)[0].splitlines()[1:]
rows = [l for l in section if re.match(r"  \S", l)]
names = [r.split()[0] for r in rows]
if len(rows) < 20 or max(map(len, names)) <= 30:
    fail(f"expected 20+ kernels, some named beyond 30 characters: {len(rows)} rows")
cols = {r.index(" writer ") if " writer " in r else r.index(" reader ") for r in rows}
if len(cols) != 1:
    fail(f"the role column starts at {len(cols)} different offsets: {sorted(cols)}")
for i, r in enumerate(section):
    if re.match(r"  \S", r):
        nxt = section[i + 1] if i + 1 < len(section) else ""
        if not re.match(r"\s+declares: (fp16|bf16)", nxt):
            fail(f"no capability line under {r.split()[0]}: {nxt!r}")
fx = [r for r in rows if r.split()[0].startswith("fixture_")]
if not fx or not all("FIXTURE" in r for r in fx):
    fail("a fixture kernel's row does not say FIXTURE")
print(f"{len(rows)} kernels, role column at {sorted(cols)}; e.g.\n" + "\n".join(section[:2]))
sys.exit(0 if ok else 1)
PY
