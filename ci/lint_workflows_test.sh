#!/usr/bin/env bash
# Lints .github/workflows/*.yml with action-validator (npm @action-validator/cli,
# installed by ci/bootstrap.sh into ci/tools/node_modules; it checks each file
# against the GitHub workflow schema and that `paths` globs match files).
# CTest: workflow_lint. Fails (exit 1) if any workflow is rejected, or if the
# known-bad fixture ci/testdata/bad_workflow.yml is accepted, or the linter's
# report on it does not name the bad job (/jobs/rocm) and the missing runs-on.
# Exit 2 when the linter is not installed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
lint="$root/ci/tools/node_modules/.bin/action-validator"
if [ ! -x "$lint" ]; then
  echo "lint_workflows: $lint missing; run: bash ci/bootstrap.sh (npm ci --prefix ci/tools)" >&2
  exit 2
fi

fail=0
shopt -s nullglob
files=(.github/workflows/*.yml .github/workflows/*.yaml)
[ ${#files[@]} -gt 0 ] || { echo "lint_workflows: no workflow under .github/workflows" >&2; exit 1; }
for f in "${files[@]}"; do
  if out="$("$lint" "$f" 2>&1)"; then
    echo "lint_workflows: ok   $f"
  else
    echo "lint_workflows: FAIL $f"; echo "$out"; fail=1
  fi
done

bad=ci/testdata/bad_workflow.yml
if out="$("$lint" "$bad" 2>&1)"; then
  echo "lint_workflows: FAIL: the linter accepts the known-bad $bad"; fail=1
elif ! grep -q '"/jobs/rocm/runs-on"' <<<"$out" || ! grep -q "Additional property 'step' is not allowed" <<<"$out"; then
  echo "lint_workflows: FAIL: the linter rejects $bad but without naming its errors:"; echo "$out"; fail=1
else
  echo "lint_workflows: ok   $bad rejected (missing runs-on, unknown key 'step')"
fi
exit $fail
