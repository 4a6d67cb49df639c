#!/usr/bin/env bash
# Nightly validation of a serving image: runs the suites against an
# environment (its kernel providers and case files), keeps the night in a
# history folder, compares it with the previous night and renders
# HISTORY/index.html (ci/nightly_report.py: diff on top, trend, heat maps).
#
# Usage: ci/nightly.sh --history DIR --tag IMAGE_TAG [options] [-- RUN_ARGS...]
#   --history DIR      the history folder (kept between nights: a CI cache or a
#                      folder on the runner)
#   --tag TAG          the image under test, e.g. rocm/vllm:v0.9.1 (any
#                      character outside [A-Za-z0-9._-] becomes _ in the key)
#   --date YYYY-MM-DD  the night (default: today, UTC)
#   --suite NAME=FILE  a suite and its case file, repeatable (default:
#                      default=cases/default.toml seed-pr=cases/seed-pr.toml)
#   --provider SPEC    a kernel provider, repeatable (kvharness run --provider)
#   --kvharness BIN    the harness: a path, or a name looked up on PATH (default:
#                      $KVH, else kvharness on PATH, else build/cpu/harness/kvharness)
#   RUN_ARGS           passed to every `kvharness run` (e.g. --filter,
#                      --replace-kernel, --known-failures)
# The night is stored as HISTORY/<date>__<tag>/: night.json (date, tag,
# providers, exit code per suite) and per suite the report folder of
# `kvharness run` (results.json, summary.md, junit.xml, which kvharness owns
# as a whole: `run --resume` completes it) with, beside it, SUITE.log (the
# run's output) and, from the second night on, SUITE.compare.md: `kvharness
# compare PREVIOUS CURRENT` (the previous night is the history's latest key
# before this one). A night run again replaces its folder.
# Exit: 0 every suite ran clean and nothing regressed since the previous
# night; 1 a suite failed (kvharness exit 1) or compare found a regression;
# 2 bad usage, or a harness error (kvharness exit 2) in some suite. Every
# suite runs and the page is written whatever the exit code.
set -uo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage() { sed -n '/^# Usage:/,/^# suite runs and the page/p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "nightly: $*" >&2; exit 2; }

history="" tag="" night_date="$(date -u +%F)" kvh="${KVH:-}"
suites=() providers=() run_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --history) [ $# -ge 2 ] || die "--history needs a folder"; history="$2"; shift 2 ;;
    --tag) [ $# -ge 2 ] || die "--tag needs a value"; tag="$2"; shift 2 ;;
    --date) [ $# -ge 2 ] || die "--date needs YYYY-MM-DD"; night_date="$2"; shift 2 ;;
    --suite) [ $# -ge 2 ] || die "--suite needs NAME=FILE"; suites+=("$2"); shift 2 ;;
    --provider) [ $# -ge 2 ] || die "--provider needs a spec"; providers+=("$2"); shift 2 ;;
    --kvharness) [ $# -ge 2 ] || die "--kvharness needs a path"; kvh="$2"; shift 2 ;;
    --) shift; run_args=("$@"); break ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
[ -n "$history" ] || { usage >&2; die "--history is required"; }
[ -n "$tag" ] || { usage >&2; die "--tag is required"; }
[[ "$night_date" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}$ ]] || die "--date '$night_date': expected YYYY-MM-DD"
[ ${#suites[@]} -gt 0 ] || suites=("default=$root/cases/default.toml" "seed-pr=$root/cases/seed-pr.toml")
if [ -z "$kvh" ]; then
  kvh="$(command -v kvharness || true)"
  [ -n "$kvh" ] || kvh="$root/build/cpu/harness/kvharness"
elif [[ "$kvh" != */* ]]; then  # a bare name (--kvharness kvharness): the one on PATH
  kvh="$(command -v -- "$kvh" || echo "$kvh")"
fi
[ -x "$kvh" ] || die "kvharness not found at '$kvh' (--kvharness PATH or NAME on PATH, or KVH)"
for s in "${suites[@]}"; do
  [[ "$s" =~ ^[A-Za-z0-9._-]+=.+ ]] || die "--suite '$s': expected NAME=FILE, NAME of [A-Za-z0-9._-]"
  [ -f "${s#*=}" ] || die "--suite '$s': no such case file '${s#*=}'"
done

safe_tag="$(printf '%s' "$tag" | tr -c 'A-Za-z0-9._-' '_')"
key="${night_date}__${safe_tag}"
mkdir -p "$history" || die "cannot create '$history'"
history="$(cd "$history" && pwd)"
night="$history/$key"
# The previous night: the latest key before this one (keys sort by date first).
prev=""
for d in $(cd "$history" && ls -d -- */ 2>/dev/null | sed 's#/$##' | LC_ALL=C sort); do
  [ -f "$history/$d/night.json" ] || continue
  [[ "$d" < "$key" ]] && prev="$d"
done
# A night run again (same date and tag) replaces the earlier one: say so, it was a record.
[ -e "$night" ] && echo "nightly: $key already exists in $history: replaced by this run" >&2
rm -rf "$night"
mkdir -p "$night"

provider_args=()
for p in "${providers[@]}"; do provider_args+=(--provider "$p"); done

worst=0
raise() { # raise RC: keeps the worst exit code (2 > 1 > 0)
  if [ "$1" -eq 2 ] || { [ "$1" -ne 0 ] && [ "$worst" -ne 2 ]; }; then worst=$([ "$1" -eq 2 ] && echo 2 || echo 1); fi
}
suite_json=""
for s in "${suites[@]}"; do
  name="${s%%=*}" file="${s#*=}"
  echo "nightly: $key: suite $name ($file)"
  rc=0
  "$kvh" run "$file" "${provider_args[@]}" --report-dir "$night/$name" --no-progress --label "$tag $night_date" \
    "${run_args[@]}" >"$night/$name.log" 2>&1 || rc=$?
  tail -n 3 "$night/$name.log"
  raise "$rc"
  cmp_rc=null
  if [ -n "$prev" ] && [ -f "$history/$prev/$name/results.json" ] && [ -f "$night/$name/results.json" ]; then
    cmp_rc=0
    # Beside the report folder, not in it: kvharness refuses (--resume) a folder holding files it did not write.
    "$kvh" compare "$history/$prev/$name" "$night/$name" --fail-on regressions >"$night/$name.compare.md" 2>&1 || cmp_rc=$?
    echo "nightly: $key: compare with $prev, suite $name: exit $cmp_rc"
    raise "$cmp_rc"
  fi
  suite_json+="${suite_json:+, }\"$name\": {\"case_file\": $(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$file"), \"exit_code\": $rc, \"compare_exit_code\": $cmp_rc}"
done

python3 - "$night/night.json" "$night_date" "$tag" "$prev" "{${suite_json}}" "${providers[@]}" <<'EOF'
import json, sys
out, date, tag, prev, suites = sys.argv[1:6]
json.dump({"date": date, "tag": tag, "previous": prev or None, "providers": sys.argv[6:],
           "suites": json.loads(suites)}, open(out, "w"), indent=1)
EOF
python3 "$root/ci/nightly_report.py" "$history" --night "$key" --out "$history/index.html" || raise 2
cp "$history/index.html" "$night/index.html"
echo "nightly: $key: exit $worst (previous night: ${prev:-none}); page $history/index.html"
exit "$worst"
