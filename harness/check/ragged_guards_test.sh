#!/usr/bin/env bash
# The guarded arrays of a ragged call, end to end: a reader that reads one
# element past query_start_loc (a phantom sequence) and one that writes one
# query row past a typed workspace (testing/planted_unified_readers.hip) are
# each FAIL out_of_view_write naming what they touched; the real readers
# PASS the same cases.
# Usage: ragged_guards_test.sh KVHARNESS_PLANTED CASES_DIR OUT_DIR
set -u
bin=$1 cases=$2 out=$3
mkdir -p "$out"
fails=0

verdict() {  # verdict DIR: "VERDICT REASON DETAIL" of the run's one case
  python3 -c 'import json,sys; c = json.load(open(sys.argv[1]))["cases"]; assert len(c) == 1, len(c); c = c[0]
print(c["verdict"], c["reason"], c["detail"])' "$1/results.json"
}

check() {  # check NAME READER REPLACEMENT EXPECTED_REGEX
  local name=$1 reader=$2 with=$3 want=$4
  local filter="reader=$reader,model=Qwen2.5-1.5B,layout=kv_first,causal=1,max_query_len=40,partition_size=128"
  "$bin" run "$cases/default.toml" --filter "$filter" --report-dir "$out/$name-real" --no-progress >/dev/null 2>&1
  local real; real=$(verdict "$out/$name-real")
  [[ $real == PASS* ]] || { echo "FAIL: $reader does not pass its own case: $real"; fails=$((fails + 1)); }
  "$bin" run "$cases/default.toml" --filter "$filter" --replace-kernel "$reader=$with" \
    --report-dir "$out/$name" --no-progress >/dev/null 2>&1
  local got; got=$(verdict "$out/$name")
  if [[ $got =~ $want ]]; then echo "ok: $with: ${got:0:160}"; else
    echo "FAIL: $with: expected /$want/, got: $got"; fails=$((fails + 1)); fi
}

check phantom unified_attention_2d planted_unified_reads_past_query_start_loc \
  '^FAIL out_of_view_write the reader wrote outside `out` \(arena margin, byte 1 after its end: query row [0-9]+, out has [0-9]+ rows\)'
check workspace unified_attention_3d planted_unified_writes_past_workspace \
  '^FAIL out_of_view_write the reader wrote past workspace segm_expsum \(byte 1 after its end\)'
exit $((fails > 0))
