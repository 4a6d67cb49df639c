#!/usr/bin/env bash
# Mutation score of the gate suite: for every planted bug that
# `kvharness_planted --list-mutants` names, run the suite with the planted
# kernel (or routing policy) in place of its real counterpart and require the
# run to fail (exit 1). Prints killed/planted and names every survivor; any
# survivor, or a run that ends other than 0/1, fails this test.
#
#   mutation_score_test.sh KVHARNESS_PLANTED CASE_FILE OUT_DIR [NAME_GLOB]
#
# cpu backend, wavefront 64 (CTest sets KVH_WAVE_SIZE=64): the planted 32-lane
# reduction trees are bugs only on 64-lane wavefronts.
#
# Each mutant runs only the cases that can reach its real counterpart (the
# FILTERS column: the cases that name it, and the routed cases), one filter
# after another until one fails: the other cases cannot see the bug, so the
# score is the full suite's; --fail-fast stops a run at its first unexpected
# failure. First the unmodified suite must pass.
set -u
bin=$1 cases=$2 out=$3 only=${4:-*}
mkdir -p "$out"
mutants=$("$bin" --list-mutants) || { echo "FAIL: --list-mutants: a mutant is not registered, or a planted kernel is not a mutant"; exit 1; }
start=$SECONDS

run() {  # run REPORT_DIR FILTER [replacement args...]; echoes the exit code
  local dir=$1 filter=$2; shift 2
  "$bin" run "$cases" --filter "$filter" --report-dir "$dir" --no-progress --heartbeat 0 "$@" >"$dir.log" 2>&1
  echo $?
}

# The baseline: the unmodified suite passes (else a kill would prove nothing).
# Filters that select nothing in this suite (exit 125) are skipped below.
rc=$(run "$out/baseline" "")
if [[ $rc != 0 ]]; then
  echo "FAIL: the unmodified suite does not pass (exit $rc, see $out/baseline.log)"
  exit 1
fi
# Controls: a substitution by itself fails nothing (each kernel and the router in
# place of itself, on a slice of the routed cases that reaches both readers), and a
# bad substitution is an input error.
rc=$(run "$out/identity" "router_policy=aiter-v0.1.12|aiter-b4885d2,model=Qwen3-235B-A22B,layout=kv_first" --fail-fast \
     --replace-kernel paged_attention_rocm=paged_attention_rocm --replace-kernel pa_fwd_asm=pa_fwd_asm \
     --replace-router aiter-b4885d2=aiter-b4885d2)
[[ $rc == 0 ]] || { echo "FAIL: identity substitutions fail the routed cases (exit $rc, $out/identity.log)"; exit 1; }
rc=$(run "$out/bad-option" "" --replace-kernel reshape_and_cache=planted_swaps_kv)
[[ $rc == 2 ]] || { echo "FAIL: a pa_v1 writer replaced by a flash one is not an input error (exit $rc)"; exit 1; }

declare -A empty=()
while IFS=$'\t' read -r kind real planted filters bug; do
  IFS=';' read -ra fs <<<"$filters"
  for f in "${fs[@]}"; do
    [[ -n ${empty[$f]:-} ]] && continue
    "$bin" list "$cases" --filter "$f" >/dev/null 2>&1
    empty[$f]=$([[ $? == 125 ]] && echo yes || echo no)
  done
done <<<"$mutants"

planted_n=0 killed=0 survivors=() errors=()
while IFS=$'\t' read -r kind real planted filters bug; do
  [[ $planted == $only ]] || continue
  planted_n=$((planted_n + 1))
  opt=--replace-kernel
  [[ $kind == router ]] && opt=--replace-router
  IFS=';' read -ra fs <<<"$filters"
  verdict=survived t0=$SECONDS
  for i in "${!fs[@]}"; do
    [[ ${empty[${fs[$i]}]} == yes ]] && continue
    rc=$(run "$out/$planted-$i" "${fs[$i]}" --fail-fast "$opt" "$real=$planted")
    if [[ $rc == 1 ]]; then verdict=killed; break; fi
    if [[ $rc != 0 ]]; then verdict="error (exit $rc, $out/$planted-$i.log)"; break; fi
  done
  printf '%-34s %-26s %-9s %3ds  %s\n' "$planted" "$real" "${verdict%% *}" $((SECONDS - t0)) "$bug"
  case $verdict in
    killed) killed=$((killed + 1)) ;;
    survived) survivors+=("$planted ($real): $bug") ;;
    *) errors+=("$planted: $verdict") ;;
  esac
done <<<"$mutants"

echo "mutation score: $killed/$planted_n planted bugs killed by $(basename "$cases") in $((SECONDS - start)) s"
for s in "${survivors[@]}"; do echo "SURVIVOR: $s"; done
for e in "${errors[@]}"; do echo "ERROR: $e"; done
[[ $planted_n -gt 0 && $killed == "$planted_n" ]]
