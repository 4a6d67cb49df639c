#!/usr/bin/env bash
# Issue 24's GPU measurements in one session, on the GPU machine, from the repository root:
# two self-contained cuda builds of kvharness, BEFORE and AFTER, medians of 3 of each in
# the same session, then the verdicts of every suite compared.
#
#   OUT=/some/dir bash ci/gpu_verdict_speed.sh BEFORE_KVHARNESS AFTER_KVHARNESS
#
# STEPS (default "bench small large"; "random" too for both builds on the random cases):
#  bench  AFTER's `bench --suite all --suite RANDOM` (cases/s by suite, the phase table); RANDOM:
#         10,000 cases of ci/random_attention_cases.py --features
#  small  default suite with kernel timing on (each build's default), off (--timing-reps 0), off
#         without --isolate; seed-pr: 3 each, BEFORE and AFTER alternating
#  large  every shipped suite AFTER's `bench --suite all` picks, together in one run: BEFORE once,
#         AFTER 3 times
# then kvharness compare BEFORE AFTER --fail-on changes on each suite both ran.
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
want() { [[ " ${STEPS:-bench small large} " == *" $1 "* ]]; }
if want bench; then  # AFTER's bench over every shipped suite and the random cases together
  t0=$EPOCHREALTIME
  "$AFTER" bench --suite all --suite "$WORK/random.toml" --report-dir "$WORK/bench-all" >"$WORK/bench-all.md" 2>"$WORK/bench-all.err"
  brc=$?
  printf -- '- after bench --suite all --suite random.toml: %s s (rc %d)\n' "$(awk "BEGIN { printf \"%.3f\", $EPOCHREALTIME - $t0 }")" "$brc" | tee -a "$MD"
  cat "$WORK/bench-all.md" "$WORK/bench-all.err" >"$OUT/bench.md"
fi
# The suites `bench --suite all` picks on this machine (the large ones fit an H200; large_mla does not).
mapfile -t SUITES < <("$AFTER" bench --suite all --shard 1/100000 --report-dir "$WORK/pick" 2>/dev/null |
  grep -oE '^\| cases/[^ ]+\.toml' | sed 's/^| //')
[ ${#SUITES[@]} -gt 0 ] || SUITES=(cases/attention-features.toml cases/default.toml cases/fp8.toml cases/large.toml
  cases/large_readers.toml cases/mla.toml cases/mla_routes.toml cases/quant.toml cases/ragged.toml cases/seed-pr.toml)
echo "suites: ${SUITES[*]}" | tee -a "$MD"
run_both() {  # run_both NAME REPS ARGS...: BEFORE then AFTER, REPS times, reports in $WORK/{before,after}-NAME
  local name=$1 reps=$2 rep b bin
  shift 2
  for rep in $(seq 1 "$reps"); do
    for b in before after; do
      bin=$BEFORE
      [ "$b" = after ] && bin=$AFTER
      timed "$b $name #$rep" "$bin" run "$@" --no-progress --report-dir "$WORK/$b-$name"
    done
  done
}
if want small; then
  run_both default 3
  run_both default-notiming 3 --timing-reps 0
  run_both default-noiso 3 --timing-reps 0 --no-isolate
  run_both seedpr 3 cases/seed-pr.toml
  gzip -c "$WORK/after-default-notiming/results.json" >"$OUT/after-default-notiming-results.json.gz"
fi
if want large; then  # every suite together: BEFORE once (120 s), AFTER 3 times; the random cases: each once
  timed "before every suite #1" "$BEFORE" run "${SUITES[@]}" --no-progress --report-dir "$WORK/before-all"
  for rep in 1 2 3; do
    timed "after every suite #$rep" "$AFTER" run "${SUITES[@]}" --no-progress --report-dir "$WORK/after-all"
  done
fi
if want random; then
  run_both random 1 "$WORK/random.toml"
fi
for s in default default-notiming default-noiso seedpr all random; do
  [ -s "$WORK/before-$s/results.json" ] && [ -s "$WORK/after-$s/results.json" ] || continue
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
    for s in ("default", "default-notiming", "default-noiso", "seedpr", "all", "random"):
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
