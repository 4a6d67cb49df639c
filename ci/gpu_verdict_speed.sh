#!/usr/bin/env bash
# Issue 24's GPU measurements in one session, on the GPU machine, from the repository root:
# two self-contained cuda builds of kvharness, BEFORE and AFTER, medians of 3 of each in
# the same session, then the verdicts of every suite compared.
#
#   OUT=/some/dir bash ci/gpu_verdict_speed.sh BEFORE_KVHARNESS AFTER_KVHARNESS
#
#  1. default suite, kernel timing on (each build's default) and off (--timing-reps 0), 3 each
#  2. seed-pr suite, 3 each
#  3. every shipped suite this build can run, together in one run (the list AFTER's
#     `bench --suite all` picks), and 10,000 random cases of ci/random_attention_cases.py
#     --features: 3 each
#  4. AFTER's `bench --suite all` and `bench --suite RANDOM` (cases/s and the phase table)
#  5. kvharness compare BEFORE AFTER --fail-on changes on each suite's last run
# $OUT/verdict_speed.md: one line a run (wall seconds); $OUT/verdict_speed.log: everything.
set -uo pipefail
BEFORE=$(realpath "$1") AFTER=$(realpath "$2")
OUT=$(realpath -m "${OUT:-./gpu-out}")
cd "$(dirname "$0")/.." || exit 2
mkdir -p "$OUT"
WORK=${WORK:-/tmp/kvh-speed}
rm -rf "$WORK" && mkdir -p "$WORK"
LOG=$OUT/verdict_speed.log MD=$OUT/verdict_speed.md
: >"$LOG"
echo "# verdicts at device speed: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1), $(nproc) cores" >"$MD"
timed() {  # timed NAME CMD...: runs CMD (at most STEP_TIMEOUT s, default 150), logs it, appends "- NAME: S s (rc R)"
  local name=$1 t0 rc
  shift
  t0=$EPOCHREALTIME
  timeout "${STEP_TIMEOUT:-150}" "$@" >>"$LOG" 2>&1
  rc=$?
  printf -- '- %s: %s s (rc %d)\n' "$name" "$(awk "BEGIN { printf \"%.3f\", $EPOCHREALTIME - $t0 }")" "$rc" | tee -a "$MD"
}
python3 ci/random_attention_cases.py 10000 20261202 --features >"$WORK/random.toml"
"$AFTER" bench --suite all --report-dir "$WORK/bench-all" >"$WORK/bench-all.md" 2>"$WORK/bench-all.err"
mapfile -t SUITES < <(grep -oE '^\| cases/[^ ]+\.toml' "$WORK/bench-all.md" | sed 's/^| //')
echo "suites: ${SUITES[*]}" | tee -a "$MD"
for rep in 1 2 3; do
  for b in before after; do
    bin=$BEFORE
    [ "$b" = after ] && bin=$AFTER
    timed "$b default timing on #$rep" "$bin" run --no-progress --report-dir "$WORK/$b-default"
    timed "$b default timing off #$rep" "$bin" run --no-progress --timing-reps 0 --report-dir "$WORK/$b-default-notiming"
    timed "$b seed-pr #$rep" "$bin" run cases/seed-pr.toml --no-progress --report-dir "$WORK/$b-seedpr"
    timed "$b every suite #$rep" "$bin" run "${SUITES[@]}" --no-progress --report-dir "$WORK/$b-all"
    timed "$b random 10000 #$rep" "$bin" run "$WORK/random.toml" --no-progress --report-dir "$WORK/$b-random"
  done
done
{
  echo "## AFTER bench --suite all"
  cat "$WORK/bench-all.md" "$WORK/bench-all.err"
  "$AFTER" bench --suite "$WORK/random.toml" --report-dir "$WORK/bench-random"
} >"$OUT/bench.md" 2>&1
for s in default default-notiming seedpr all random; do
  echo "## compare before after: $s" >>"$OUT/compare.md"
  timed "compare $s" "$AFTER" compare "$WORK/before-$s" "$WORK/after-$s" --fail-on changes
  "$AFTER" compare "$WORK/before-$s" "$WORK/after-$s" >>"$OUT/compare.md" 2>&1
done
for b in before after; do
  for s in default default-notiming seedpr; do cp "$WORK/$b-$s/summary.md" "$OUT/$b-$s-summary.md" 2>/dev/null; done
done
python3 - "$WORK" >"$OUT/phases.md" <<'PY'
import json, sys, collections
work = sys.argv[1]
for b in ("before", "after"):
    for s in ("default", "default-notiming", "seedpr", "all", "random"):
        try:
            r = json.load(open(f"{work}/{b}-{s}/results.json"))
        except Exception as e:
            print(f"{b} {s}: {e}"); continue
        ph = collections.Counter()
        wall = 0.0
        reps = collections.Counter()
        for c in r["cases"]:
            wall += c["wall_ms"]
            for k, v in c["phases_ms"].items(): ph[k] += v
            reps[c.get("timing_reps")] += 1
        refs = {c.get("reference_id") for c in r["cases"] if c.get("reference_id")}
        print(f"{b} {s}: {len(r['cases'])} cases, {wall/1000:.2f} s case wall; " +
              ", ".join(f"{k} {v/1000:.2f}" for k, v in ph.most_common()) +
              f"; distinct references {len(refs)}; timing_reps {dict(reps)}")
PY
