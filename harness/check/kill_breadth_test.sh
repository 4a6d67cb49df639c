#!/usr/bin/env bash
# Breadth behind each kill (issue 23): a planted bug that only one case of the
# gate suite catches is one edit of that case away from passing. For each
# modifier, route-boundary and value-distribution mutant below, run the suite's
# cases that can reach it (no --fail-fast) and require its unexpected failures
# to span at least MIN_CASES cases of at least two models. Prints, per mutant,
# the failing cases and models; names every mutant short of that.
#
#   kill_breadth_test.sh KVHARNESS_PLANTED CASE_FILE OUT_DIR [NAME_GLOB]
#
# Same binary and environment as mutation_score_test.sh (KVH_WAVE_SIZE=64).
set -u
bin=$1 cases=$2 out=$3 only=${4:-*}
mkdir -p "$out"
MIN_CASES=3

# KIND REAL PLANTED FILTER: the cases that can run REAL and carry the mutant's class.
mutants=$(cat <<'M'
kernel	paged_attention_rocm	planted_window_off_by_one	reader=paged_attention_rocm,sliding_window!=0
kernel	paged_attention_v1	planted_v1_window_off_by_one	reader=paged_attention_v1,sliding_window!=0
kernel	paged_attention_rocm	planted_softcap_after_mask	reader=paged_attention_rocm,softcap!=0
kernel	paged_attention_rocm	planted_alibi_slope_by_kv_head	reader=paged_attention_rocm,alibi=1
kernel	paged_attention_v1	planted_v1_sink_every_partition	reader=paged_attention_v1,sinks=1
kernel	paged_attention_rocm	planted_reduce_last_max	reader=paged_attention_rocm,values=sink
kernel	paged_attention_rocm	planted_reduce_first_max	reader=paged_attention_rocm,values=sink
kernel	unified_attention_2d	planted_unified_window_from_seq_end	reader=unified_attention_2d,sliding_window!=0
kernel	unified_attention_2d	planted_unified_alibi_from_seq_end	reader=unified_attention_2d,alibi=1
kernel	pa_fwd_asm	planted_asm_no_rescale	reader=pa_fwd_asm,values=sink
router	aiter-b4885d2	planted_router_ge_threshold	router_policy=aiter-v0.1.12|aiter-b4885d2
router	aiter-b4885d2	planted_router_one_cu	router_policy=aiter-v0.1.12|aiter-b4885d2
router	aiter-b4885d2	planted_router_seqs_only	router_policy=aiter-v0.1.12|aiter-b4885d2
M
)

short=()
while IFS=$'\t' read -r kind real planted filter; do
  [[ $planted == $only ]] || continue
  opt=--replace-kernel
  [[ $kind == router ]] && opt=--replace-router
  dir="$out/$planted"
  "$bin" run "$cases" --filter "$filter" "$opt" "$real=$planted" --report-dir "$dir" --no-progress --heartbeat 0 \
    --timing-reps 0 > "$dir.log" 2>&1
  rc=$?
  if [[ $rc != 1 ]]; then short+=("$planted: exit $rc, expected 1 ($dir.log)"); continue; fi
  read -r n models < <(python3 - "$dir/results.json" <<'P'
import json, sys
j = json.load(open(sys.argv[1]))
bad = [c for c in j["cases"] if c["verdict"] in ("FAIL", "CRASH") and not c.get("expected_failure")]
print(len(bad), ",".join(sorted({c["model"] for c in bad})) or "-")
P
)
  nm=$(tr ',' '\n' <<<"$models" | grep -vc '^-$')
  printf '%-34s %4d cases  %s\n' "$planted" "$n" "$models"
  if (( n < MIN_CASES || nm < 2 )); then short+=("$planted: $n failing cases over $nm model(s) ($models)"); fi
done <<<"$mutants"

for s in "${short[@]}"; do echo "NARROW: $s"; done
((${#short[@]} == 0)) || { echo "FAIL: ${#short[@]} mutant(s) rest on too few cases"; exit 1; }
echo "every mutant above fails at least $MIN_CASES cases of at least two models"
