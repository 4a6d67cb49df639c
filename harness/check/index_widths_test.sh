#!/usr/bin/env bash
# Index widths end to end (issue 23): the default suite's sparse slice (block
# ids above 65,535, element offsets past 2^31 in each view, only the touched
# pages backed) passes with the real kernels in little memory, and catches a
# reader that keeps a block id in 16 bits and a writer or reader that keeps an
# element offset in 32 bits: `kvharness run` with no case file, the planted
# kernel in place of the real one, exits 1 with that case CRASH or FAIL.
#   index_widths_test.sh KVHARNESS_PLANTED WORKDIR
# Run from the source root (the default suite is cases/default.toml).
set -uo pipefail
KVH=$1 WORK=$2
rm -rf "$WORK"; mkdir -p "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
readers='id=*minblock=1100000*'
writers='layout=large'

# The real kernels pass (the control: a kill below proves something).
"$KVH" run --filter "$readers" --report-dir "$WORK/real-readers" --no-progress --timing-reps 0 >"$WORK/real-readers.log" 2>&1 \
  || fail "the sparse reader slice does not pass with the real kernels ($WORK/real-readers.log)"
"$KVH" run --filter "$writers" --report-dir "$WORK/real-writers" --no-progress --timing-reps 0 >"$WORK/real-writers.log" 2>&1 \
  || fail "the sparse writer slice does not pass with the real kernels ($WORK/real-writers.log)"

# expect_caught NAME FILTER REAL=PLANTED: exit 1, and the planted kernel's cases CRASH or FAIL.
expect_caught() {
  local name=$1 filter=$2 repl=$3 dir=$WORK/$1
  "$KVH" run --filter "$filter" --replace-kernel "$repl" --report-dir "$dir" --no-progress --timing-reps 0 \
    >"$dir.log" 2>&1
  local rc=$?
  [[ $rc == 1 ]] || fail "$name: exit $rc, expected 1 ($dir.log)"
  # A fault ends the run at its case (the report names it CRASH): the counts are results.json's.
  local counts
  counts=$(python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['counts']; print(c['fail'] + c['crash'], c)" \
    "$dir/results.json") || fail "$name: no results.json ($dir.log)"
  [[ ${counts%% *} -gt 0 ]] || fail "$name: no FAIL or CRASH ($dir.log)"
  echo "caught: $name (${counts#* })"
}
expect_caught uint16-block-id "$readers,reader=paged_attention_rocm" paged_attention_rocm=planted_uint16_block_id
expect_caught int32-offset-reader "$readers,reader=paged_attention_rocm" paged_attention_rocm=planted_int32_offset
expect_caught int32-offset-writer "$writers,writer=reshape_and_cache_flash" \
  reshape_and_cache_flash=planted_writer_int32_offset
echo "PASS"
