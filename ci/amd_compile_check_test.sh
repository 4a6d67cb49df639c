#!/usr/bin/env bash
# Tests ci/amd_compile_check.sh both ways:
#   1. a copy of a kernel with a planted compile error -> exit 1, the
#      compiler's error shown;
#   2. the clean kernel -> exit 0, the table names its kernel for all three
#      targets and resources.json says ok.
# Ends with the plain "N passed, N failed" line; exits 1 if any check failed.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
check="$here/amd_compile_check.sh"
kernel="$root/kernels/writers/reshape_and_cache.hip"
kernel_name="reshape_and_cache_kernel<kvh::kernels::Copy16>"  # the 16-bit instance of the templated writer

tmp="$(mktemp -d /tmp/kvh-amd-check-test.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT

passed=0
failed=0
ok() { echo "ok: $1"; passed=$((passed + 1)); }
bad() { echo "FAIL: $1"; failed=$((failed + 1)); }

# The toolchain install is not under test; do it once, up front.
bash "$check" --install-only || { echo "FAIL: toolchain install"; echo "0 passed, 1 failed"; exit 1; }

# 1. Planted error inside the kernel body (device code, every target sees it).
sed 's/^\(  const int64_t token = blockIdx.x;\)$/\1\n  kvh_planted_compile_error = token;/' "$kernel" >"$tmp/bad.hip"
if grep -q kvh_planted_compile_error "$tmp/bad.hip"; then
  ok "planted error inserted"
else
  bad "could not plant the error (kernel source changed?)"
fi
bash "$check" --no-install --out "$tmp/bad-out" --src "$tmp/bad.hip" >"$tmp/bad.stdout" 2>"$tmp/bad.stderr"
rc=$?
[ "$rc" -eq 1 ] && ok "planted error: exit 1" || bad "planted error: exit $rc, expected 1"
grep -q "kvh_planted_compile_error" "$tmp/bad.stderr" && ok "planted error: compiler output shown" ||
  bad "planted error: compiler output not shown on stderr"
for t in gfx90a gfx940 gfx942; do
  grep -q "FAILED: $tmp/bad.hip \[$t\]" "$tmp/bad.stderr" && ok "planted error: $t reported failed" ||
    bad "planted error: $t not reported failed"
done
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if not d["ok"] and len(d["failures"]) == 3 else 1)' \
  "$tmp/bad-out/resources.json" && ok "planted error: resources.json ok=false, 3 failures" ||
  bad "planted error: resources.json does not record the failures"

# 2. The clean kernel.
bash "$check" --no-install --out "$tmp/good-out" --src "$kernel" >"$tmp/good.stdout" 2>"$tmp/good.stderr"
rc=$?
[ "$rc" -eq 0 ] && ok "clean kernel: exit 0" || { bad "clean kernel: exit $rc, expected 0"; cat "$tmp/good.stderr"; }
for t in gfx90a gfx940 gfx942; do
  grep -Eq "^\| \`$kernel_name\` \| kernels/writers/reshape_and_cache.hip \| $t" "$tmp/good-out/resources.md" &&
    ok "clean kernel: table row for $t" || bad "clean kernel: no table row for $kernel_name on $t"
done
grep -q "$kernel_name" "$tmp/good.stdout" && ok "clean kernel: table printed" || bad "clean kernel: table not printed"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); k=[r for r in d["kernels"] if r["kernel"]==sys.argv[2]]; sys.exit(0 if d["ok"] and len(k) == 3 and all(isinstance(r["vgprs"], int) and r["vgprs"] > 0 for r in k) else 1)' \
  "$tmp/good-out/resources.json" "$kernel_name" && ok "clean kernel: resources.json has VGPRs for 3 targets" ||
  bad "clean kernel: resources.json incomplete"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
