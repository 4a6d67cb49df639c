#!/usr/bin/env bash
# summary.md and the counts a person reads, end to end (issue 25), one CTest test per part:
#   summary_e2e_test.sh KVHARNESS_PLANTED WORKDIR PART
# Run from the source root (ctest does).
#   one_counting_scheme  the same run counted by `run`'s line, summary.md, junit.xml, `compare`
#                        and the nightly page (ci/nightly_report.py) reads the same, XFAIL included
#   case_file_strings    a declaration's `why` holding HTML reaches summary.md escaped, beside
#                        its fixture; the matrix names its batch axis in tokens
#   replaced_kernel      --replace-kernel: the header names the substitution REAL -> WITH and the
#                        rows that ran the substitute say "(replaced by WITH)"
set -uo pipefail
KVH=$(realpath "$1"); WORK=$2; PART=$3
SRC=$(pwd)
rm -rf "$WORK"; mkdir -p "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
# summary.md without its code spans: what a Markdown renderer parses as Markdown and HTML.
outside_code() { sed 's/`[^`]*`//g' "$1"; }

case "$PART" in
one_counting_scheme)
  "$KVH" run cases/seed-pr.toml --filter 'batch_size=4' --report-dir "$WORK/run" --no-progress >"$WORK/run.out" 2>&1 ||
    fail "seed-pr at batch 4 exits $? ($WORK/run.out)"
  want=$(sed -n 's/^6 cases: \(.*\); 0 unexpected$/\1/p' "$WORK/run.out")
  [ -n "$want" ] || fail "no counts line in run's output: $(cat "$WORK/run.out")"
  case "$want" in *" 0 FAIL, 1 XFAIL,"*) ;; *) fail "the fixture's expected FAIL is not XFAIL: $want" ;; esac
  grep -qxF -- "- 6 cases: $want" "$WORK/run/summary.md" || fail "summary.md counts otherwise than run ($want)"
  grep -qF "<property name=\"counts\" value=\"$want\"/>" "$WORK/run/junit.xml" || fail "junit.xml counts otherwise ($want)"
  "$KVH" compare "$WORK/run" "$WORK/run" >"$WORK/compare.out" 2>&1 || fail "compare of a run with itself exits $?"
  [ "$(grep -cF "6 cases: $want" "$WORK/compare.out")" = 2 ] || fail "compare counts otherwise than run ($want): $(cat "$WORK/compare.out")"
  page=$(python3 -c 'import json, sys; sys.path.insert(0, "ci"); import nightly_report as n
print(n.counts_text(json.load(open(sys.argv[1]))["cases"]))' "$WORK/run/results.json") || fail "nightly_report.counts_text"
  [ "$page" = "$want" ] || fail "the nightly page counts '$page', run '$want'"
  ;;
case_file_strings)
  # Seed 3: its one token is real (under seeds 1 and 2 it is padding, and the fixture passes).
  cat >"$WORK/hostile.toml" <<'TOML'
seeds = [3]
[[write]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["interleaved"]
head_sizes = [128]
num_tokens = [1]
block_sizes = [16]
dtypes = ["bf16"]
writers = ["fixture_shuffle_contiguous"]

[[write.expected_failure]]
component = "writer"
reasons = ["mismatch", "out_of_view_write"]
why = "<img src=x onerror=alert(1)> *[click](javascript:alert(1))*"
TOML
  "$KVH" run "$WORK/hostile.toml" --report-dir "$WORK/run" --no-progress >"$WORK/run.out" 2>&1 ||
    fail "the declared fixture run exits $? ($WORK/run.out)"
  md="$WORK/run/summary.md"
  outside_code "$md" | grep -nE '<img|\*\[click|[^\\]\]\(javascript' && fail "a case file's why reached summary.md unescaped"
  grep -qF 'regression fixture fixture_shuffle_contiguous (writer); ' "$md" || fail "the fixture is not named"
  grep -qF 'hostile.toml:12: &lt;img src=x onerror=alert(1)> \*\[click\](javascript:alert(1))\*' "$md" ||
    fail "the declaration's why is not shown beside the fixture: $(grep -n 'expected' "$md")"
  grep -qF 'Each cell covers: block_size 16; a batch of 1 token; bf16.' "$md" || fail "the write matrix's axis: $(grep -n 'covers' "$md")"
  ;;
replaced_kernel)
  "$KVH" run cases/seed-pr.toml --filter 'batch_size=4' --report-dir "$WORK/run" --no-progress \
    --replace-kernel reshape_and_cache_shuffle=planted_shuffle_v_token_swapped >"$WORK/run.out" 2>&1
  [ $? -eq 1 ] || fail "the planted writer should fail the run ($WORK/run.out)"
  md="$WORK/run/summary.md"
  grep -qF '`reshape_and_cache_shuffle` -> `planted:planted_shuffle_v_token_swapped`' "$md" ||
    fail "the header does not name the substitution: $(sed -n 1,12p "$md")"
  grep -qF -- '- providers (--provider): none (built-in kernels only)' "$md" || fail "the header does not name the providers"
  grep -qF '### reshape_and_cache_shuffle (replaced by planted:planted_shuffle_v_token_swapped) — ' "$md" ||
    fail "the failure heading names the built-in kernel: $(grep -n '^### ' "$md")"
  grep -qF '| after fix (shuffle=1) — reshape_and_cache_shuffle (replaced by planted:planted_shuffle_v_token_swapped) |' "$md" ||
    fail "a named row that ran the substitute does not say so: $(grep -n '^| after fix' "$md")"
  ;;
*) fail "unknown part $PART" ;;
esac
echo "PASS $PART"
