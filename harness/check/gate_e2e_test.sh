#!/usr/bin/env bash
# End-to-end tests of the gate (issue 7), one per CTest test:
#   gate_e2e_test.sh KVHARNESS WORKDIR TEST
# Run from the source root (ctest does). Each test fails with a message naming
# what the gate let through.
set -uo pipefail
KVH=$(realpath "$1"); WORK=$2; TEST=$3
SRC=$(pwd)
rm -rf "$WORK"; mkdir -p "$WORK"
fail() { echo "FAIL: $*" >&2; exit 1; }
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@"; }

case "$TEST" in
# Defect 2: nothing checked that a fixture still fails. The seed-pr suite
# declares where its fixtures fail; flipping the "before fix" row to the fixed
# writer makes those cases XPASS and the run fail.
xpass_when_a_fixture_is_flipped)
  "$KVH" run cases/seed-pr.toml --filter 'batch_size=4' --report-dir "$WORK/ok" --no-progress --heartbeat 0.2 \
    > "$WORK/ok.out" 2>&1 || fail "the seed-pr suite at batch 4 should pass with its declared expected failures"
  grep -q "cases done, 0 unexpected failure(s) so far" "$WORK/ok.out" || fail "no heartbeat line on a non-TTY run"
  "$KVH" --version | grep -q "^kvharness " || fail "--version"
  sed '/name = "before fix (shuffle=1)"/{n;s/fixture_shuffle_contiguous/reshape_and_cache_shuffle/}' \
    cases/seed-pr.toml > "$WORK/flipped.toml"
  grep -q 'fixture_shuffle_contiguous' "$WORK/flipped.toml" && fail "the flip did not replace the fixture"
  "$KVH" run "$WORK/flipped.toml" --filter 'batch_size=4' --report-dir "$WORK/flip" --no-progress > "$WORK/out" 2>&1
  rc=$?
  [ $rc -eq 1 ] || fail "flipped fixture: expected exit 1, got $rc"
  [ "$(json "$WORK/flip/results.json" "j['counts']['xpass']")" -ge 1 ] || fail "no XPASS in results.json"
  grep -q '\*\*XPASS\*\*' "$WORK/flip/summary.md" || fail "summary.md does not show XPASS"
  grep -q 'type="xpass"' "$WORK/flip/junit.xml" || fail "junit.xml does not fail the XPASS case"
  ;;
# Defects 3 and 4: SIGINT during a slow, correct case is INTERRUPTED (not a
# CRASH timeout), the report says incomplete, junit carries an error, exit 130;
# compare does not call the interrupted case a regression.
interrupt_is_not_a_crash)
  "$KVH" run cases/seed-pr.toml --filter 'batch_size=512' --report-dir "$WORK/int" --no-progress > "$WORK/out" 2>&1 &
  pid=$!
  sleep 3
  kill -INT $pid
  wait $pid; rc=$?
  [ $rc -eq 130 ] || fail "SIGINT: expected exit 130, got $rc; $(cat "$WORK/out")"
  r="$WORK/int/results.json"
  [ "$(json "$r" "j['complete']")" = False ] || fail "an interrupted run says complete"
  [ "$(json "$r" "j['interrupted_by']")" = 2 ] || fail "interrupted_by is not 2"
  [ "$(json "$r" "sum(c['verdict']=='CRASH' for c in j['cases'])")" = 0 ] || fail "the case in flight became a CRASH"
  [ "$(json "$r" "j['cases'][-1]['verdict']")" = INTERRUPTED ] || fail "the case in flight is not INTERRUPTED"
  grep -q '<error type="incomplete"' "$WORK/int/junit.xml" || fail "junit.xml of an interrupted run has no error"
  # The same run, finished, with that case judged (running it again would take minutes on two cores).
  mkdir -p "$WORK/full"
  python3 -c "import json,sys; j=json.load(open(sys.argv[1])); j['complete']=True; j['cases'][-1]['verdict']='FAIL'
j['cases'][-1]['reason']='mismatch'; j['cases'][-1]['expected_failure']=True; json.dump(j, open(sys.argv[2],'w'))" \
    "$r" "$WORK/full/results.json"
  "$KVH" compare "$WORK/full" "$WORK/int" > "$WORK/cmp" 2>&1 || fail "compare gates on an interrupted case: $(cat "$WORK/cmp")"
  # SIGTERM (a CI cancel) is 143.
  "$KVH" run cases/seed-pr.toml --filter 'batch_size=512' --report-dir "$WORK/term" --no-progress > /dev/null 2>&1 &
  pid=$!
  sleep 2
  kill -TERM $pid
  wait $pid; rc=$?
  [ $rc -eq 143 ] || fail "SIGTERM: expected exit 143, got $rc"
  ;;
# Defect 5: after an input error (exit 2) or an empty selection (exit 125) the
# previous run's green reports do not stay behind.
no_stale_reports)
  "$KVH" run cases/seed-pr.toml --filter 'batch_size=4,variant=pa_v1*' --report-dir "$WORK/r" --no-progress >/dev/null \
    || fail "the green run failed"
  [ "$(json "$WORK/r/results.json" "j['exit_code']")" = 0 ] || fail "results.json lacks exit_code 0"
  printf '[[write]]\nmodels = ["nope"]\n' > "$WORK/bad.toml"
  "$KVH" run "$WORK/bad.toml" --report-dir "$WORK/r" --no-progress >/dev/null 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "bad case file: expected exit 2, got $rc"
  [ "$(json "$WORK/r/results.json" "j['complete']")" = False ] || fail "stale results.json after an input error"
  json "$WORK/r/results.json" "j['error']" | grep -q "bad.toml:2" || fail "results.json does not carry the error"
  grep -q 'type="input_error"' "$WORK/r/junit.xml" || fail "stale junit.xml after an input error"
  "$KVH" run cases/seed-pr.toml --filter 'batch_size=3' --report-dir "$WORK/r" --no-progress >/dev/null 2>&1; rc=$?
  [ $rc -eq 125 ] || fail "empty selection: expected 125, got $rc"
  [ "$(json "$WORK/r/results.json" "len(j['cases'])")" = 0 ] || fail "stale cases after an empty selection"
  grep -q 'name="run complete"' "$WORK/r/junit.xml" || fail "junit.xml of an empty selection is green"
  # The report directory is replaced as a whole: a foreign file there is refused, not deleted.
  mkdir -p "$WORK/mine" && echo keep > "$WORK/mine/notes.txt"
  "$KVH" run cases/seed-pr.toml --filter 'batch_size=4,variant=pa_v1*' --report-dir "$WORK/mine" --no-progress \
    > "$WORK/out" 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "a report dir holding foreign files: expected exit 2 (an input error, before any case), got $rc"
  grep -q "notes.txt" "$WORK/out" || fail "the refusal does not name the foreign file"
  [ -f "$WORK/mine/notes.txt" ] || fail "the foreign file was deleted"
  ;;
# Defect 6: bisect-safe exit codes. A reader named where a writer is expected
# is an input error, not a silent UNSUPPORTED skip; --bisect turns input
# errors into 125 (skip), never 1 (bad).
bisect_exit_codes)
  cat > "$WORK/role.toml" <<'T'
[[write]]
models = ["Qwen3-235B-A22B"]
tp = 8
layouts = ["kv_first"]
num_tokens = [4]
block_sizes = [16]
dtypes = ["fp16"]
writers = ["paged_attention_v1"]
T
  "$KVH" run "$WORK/role.toml" --report-dir "$WORK/r" --no-progress > "$WORK/out" 2>&1; rc=$?
  [ $rc -eq 2 ] || fail "a reader as writer: expected exit 2, got $rc"
  grep -q "a reader kernel, not a writer" "$WORK/out" || fail "the error does not say the kernel is a reader"
  "$KVH" run "$WORK/role.toml" --bisect --report-dir "$WORK/r" --no-progress >/dev/null 2>&1; rc=$?
  [ $rc -eq 125 ] || fail "--bisect input error: expected 125, got $rc"
  "$KVH" run --provider "$WORK/none.so" cases/seed-pr.toml --report-dir "$WORK/r" --no-progress >/dev/null 2>&1; rc=$?
  [ $rc -eq 125 ] || fail "a provider that does not load: expected 125, got $rc"
  ;;
# Defect 1 (harness side): a host allocation failure in a case whose router
# policy is a regression fixture is a harness failure: never expected, exit 128.
host_allocation_failure_is_the_harness)
  cat > "$WORK/big.toml" <<'T'
[[pipeline]]
models = ["Qwen3.5-397B-A17B"]
tp = 8
layouts = ["kv_first"]
batch_sizes = [512]
context_lens = [60000, 60000]
block_sizes = [16]
dtypes = ["bf16"]
target = "MI355X"
[[pipeline.variants]]
name = "after fix (shuffle=1)"
writer = "reshape_and_cache_shuffle"
router = "aiter-v0.1.10.post3"
T
  # KVH_TEST_HOST_MEMORY: past the up-front memory refusal (exit 2, issue 11), so that the allocation fails inside the case.
  (ulimit -v 6000000; KVH_TEST_HOST_MEMORY=1125899906842624 "$KVH" run "$WORK/big.toml" --report-dir "$WORK/r" --no-progress > "$WORK/out" 2>&1); rc=$?
  [ $rc -eq 128 ] || fail "host allocation failure: expected exit 128, got $rc; $(tail -3 "$WORK/out")"
  r="$WORK/r/results.json"
  [ "$(json "$r" "j['cases'][0]['component']")" = harness ] || fail "not attributed to the harness"
  [ "$(json "$r" "j['cases'][0]['expected_failure']")" = False ] || fail "a harness failure counted as expected"
  grep -q 'failures="1"' "$WORK/r/junit.xml" || fail "junit.xml does not count it"
  ;;
# `git bisect run` over a kernel repository's history: commits good, good, a
# broken case file, good, a kernel regression, good-looking. Each commit's
# provider (a v1 provider in plain C: the cpu backend's device memory is host
# memory) is built from that checkout. The bisect must name the regression,
# skipping the broken case file (exit 125), never blaming it.
bisect_names_the_kernel_regression)
  cd "$WORK" && git init -q repo && cd repo
  git config user.email t@example.com && git config user.name test
  cat > provider.c <<'C'
#include <stdint.h>
#include "kvharness/provider.h"
/* reshape_and_cache_flash in plain C (ABI 2): K, V [T, H, D] -> caches [NB, BS, H, D], any strides. */
static int write_nhd(void* context, const kvh_write_args* a, void* stream) {
  (void)context, (void)stream;
  const int64_t T = a->key.shape[0], H = a->key.shape[1], D = a->key.shape[2];
  const int64_t* slots = (const int64_t*)a->slot_mapping.data;
  for (int64_t t = 0; t < T /*LIMIT*/; ++t) {
    const int64_t s = slots[t];
    if (s < 0) continue;
    const int64_t b = s / a->block_size, o = s % a->block_size;
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < D; ++d) {
        const kvh_tensor* src[2] = {&a->key, &a->value};
        const kvh_tensor* dst[2] = {&a->key_cache, &a->value_cache};
        for (int i = 0; i < 2; ++i)
          ((uint16_t*)dst[i]->data)[b * dst[i]->stride[0] + o * dst[i]->stride[1] + h * dst[i]->stride[2] +
                                    d * dst[i]->stride[3]] =
              ((const uint16_t*)src[i]->data)[t * src[i]->stride[0] + h * src[i]->stride[1] + d * src[i]->stride[2]];
      }
  }
  return 0;
}
static kvh_kernel_desc k[1];
int kvh_provider_open(const kvh_open_args* args, kvh_provider* out) {
  (void)args;
  k[0].struct_size = sizeof(kvh_kernel_desc);
  k[0].abi_version = KVH_ABI_VERSION;
  k[0].name = "c_reshape_and_cache_flash";
  k[0].description = "plain C NHD writer";
  k[0].role = KVH_ROLE_WRITER;
  k[0].cache_format = KVH_CACHE_NHD;
  k[0].fixture = 0 /*FIXTURE*/;
  k[0].write = write_nhd;
  out->num_kernels = 1;
  out->kernels = k;
  return 0;
}
C
  cat > cases.toml <<'T'
[[write]]
models = ["Qwen3-235B-A22B"]
tp = 2
layouts = ["separate", "interleaved", "padded"]
num_tokens = [4, 67]
block_sizes = [16]
dtypes = ["bf16"]
writers = ["c_reshape_and_cache_flash"]
T
  cat > test.sh <<T
#!/bin/sh
# The bisect step: build this commit's provider (125 if it does not build), then judge it.
cc -shared -fPIC -O1 -I"$SRC/include" provider.c -o provider.so || exit 125
exec "$KVH" run cases.toml --bisect --provider ./provider.so --report-dir "$WORK/reports" --no-progress
T
  chmod +x test.sh
  echo "provider.so" > .gitignore
  git add -A && git commit -qm "1 good" && first=$(git rev-parse HEAD)
  echo "# notes" > NOTES && git add -A && git commit -qm "2 good"
  sed -i 's/^tp = 2/tp = two/' cases.toml && git commit -qam "3 broken case file"
  sed -i 's/^tp = two/tp = 2/' cases.toml && git commit -qam "4 good"
  sed -i 's|t < T /\*LIMIT\*/|t < T - 1|' provider.c && git commit -qam "5 kernel regression: the last token is never written"
  grep -q 't < T - 1' provider.c || fail "the regression was not planted"
  echo "more" >> NOTES && git commit -qam "6 good-looking"
  ./test.sh >/dev/null 2>&1; [ $? -eq 1 ] || fail "HEAD should be bad (exit 1)"
  git checkout -q HEAD~3 && { ./test.sh >/dev/null 2>&1; rc=$?; } && git checkout -q -
  [ $rc -eq 125 ] || fail "the broken case file commit should be untestable (125), got $rc"
  git bisect start HEAD "$first" >/dev/null
  git bisect run ./test.sh > "$WORK/bisect.log" 2>&1
  grep -q "is the first bad commit" "$WORK/bisect.log" || fail "bisect did not converge: $(tail -5 "$WORK/bisect.log")"
  grep -A8 "is the first bad commit" "$WORK/bisect.log" | grep -q "5 kernel regression" \
    || fail "bisect blamed another commit: $(grep -A4 'is the first bad commit' "$WORK/bisect.log")"
  git bisect reset -q
  ;;
# ---- Adversarial tests (the attack branch): each fails on the landed gate. ----
# A declaration that covers no case of an unfiltered run is stale (the fixture
# row was removed or flipped, a writer renamed): the bug it names is no longer
# checked, yet the run is green. Without --filter it must not exit 0.
attack_stale_declaration_is_not_green)
  cat > "$WORK/stale.toml" <<'EOF'
seeds = [1]
[[write]]
models = ["Qwen3.5-397B-A17B"]
tp = 8
layouts = ["interleaved"]
head_sizes = [128]
num_tokens = [4]
block_sizes = [16]
dtypes = ["fp16"]
writers = ["reshape_and_cache_shuffle"]

[[write.expected_failure]]
filter = "writer=fixture_shuffle_contiguous"
component = "writer"
reasons = ["mismatch", "out_of_view_write"]
why = "the fixture must fail on interleaved caches"
EOF
  "$KVH" run "$WORK/stale.toml" --report-dir "$WORK/r" --no-progress > "$WORK/out" 2>&1
  rc=$?
  [ $rc -ne 0 ] || fail "a declaration that covers no case (stale.toml:12) left the run green (exit 0)"
  grep -q 'stale.toml:12' "$WORK/out" || fail "the message does not name the stale declaration: $(cat "$WORK/out")"
  ;;
# A declared failure whose case became UNSUPPORTED (the kernel now refuses it,
# its cache format changed) shows no failure: strictness must not let it pass.
attack_declared_case_unsupported_is_not_green)
  cat > "$WORK/unsup.toml" <<'EOF'
seeds = [1]
[[pipeline]]
models = ["Qwen3.5-397B-A17B"]
tp = 8
layouts = ["interleaved"]
batch_sizes = [4]
context_lens = [700, 1300]
block_sizes = [16]
dtypes = ["bf16"]
target = "MI355X"

[[pipeline.variants]]
name = "fixed"
writer = "reshape_and_cache_shuffle"
router = "aiter-v0.1.12"

[[pipeline.variants]]
name = "my kernel"
writer = "reshape_and_cache_shuffle"
reader = "paged_attention_v1"

[[pipeline.variants.expected_failure]]
component = "reader"
why = "my reader's known bug"
EOF
  "$KVH" run "$WORK/unsup.toml" --report-dir "$WORK/r" --no-progress > "$WORK/out" 2>&1
  rc=$?
  [ "$(json "$WORK/r/results.json" "sum(c['verdict'] in ('UNSUPPORTED', 'XPASS') for c in j['cases'])")" = 1 ] \
    || fail "the setup changed: the declared case should be UNSUPPORTED (now XPASS)"
  [ $rc -ne 0 ] || fail "the only case declared to fail was UNSUPPORTED and the run exited 0"
  ;;
# --report-dir through a symlink (CI: reports/latest -> an artifact directory):
# the set must land where the link points, and the link must survive; today the
# link is swapped for a directory and the target keeps the previous (green) set.
attack_symlink_report_dir)
  printf '[[write]]\ntp = two\n' > "$WORK/bad.toml"
  "$KVH" run cases/default.toml --filter 'kind=write,layout=interleaved,head_size=128,block_size=16,dtype=fp16' \
    --report-dir "$WORK/artifacts" --no-progress > /dev/null 2>&1 || fail "setup: the green run failed"
  ln -s artifacts "$WORK/latest"
  "$KVH" run "$WORK/bad.toml" --report-dir "$WORK/latest" --no-progress > /dev/null 2>&1
  [ -L "$WORK/latest" ] || fail "--report-dir through a symlink replaced the link with a directory"
  [ "$(json "$WORK/artifacts/results.json" "j['exit_code']")" = 2 ] \
    || fail "the symlink's target still holds the previous run's report set (exit_code $(json "$WORK/artifacts/results.json" "j['exit_code']"))"
  ;;
# With --bisect a usage error must be 125 (skip), never 2 ("bad" to git bisect).
attack_bisect_usage_error)
  "$KVH" run --bisect --seed not-a-number --report-dir "$WORK/r" > "$WORK/out" 2>&1
  rc=$?
  [ $rc -eq 125 ] || fail "run --bisect with a bad option value: expected 125, got $rc"
  ;;
# A string that is not UTF-8 (here --label; also a case-file path or a provider
# kernel name) makes results.json unserialisable: exit 128 after every case ran,
# and the previous green report set stays in the directory for CI to upload.
attack_non_utf8_label_keeps_stale_reports)
  F='kind=write,layout=interleaved,head_size=128,block_size=16,dtype=fp16'
  "$KVH" run cases/default.toml --filter "$F" --report-dir "$WORK/r" --no-progress > /dev/null 2>&1 \
    || fail "setup: the green run failed"
  "$KVH" run cases/default.toml --filter "$F,writer=fixture_shuffle_contiguous" --report-dir "$WORK/r" \
    --no-progress --label "$(printf 'runner-\377')" > "$WORK/out" 2>&1
  [ "$(json "$WORK/r/results.json" "len(j['cases'])")" != 16 ] \
    || fail "the previous run's report set outlived this run: $(cat "$WORK/out")"
  ls -a "$WORK" | grep -q staging && fail "a staging directory was left behind: $(ls -a "$WORK")"
  python3 -c "import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])" "$WORK/r/junit.xml" \
    || fail "junit.xml is not well-formed"
  ;;
# A run where every case is UNSUPPORTED tested nothing: exit 125, and the
# "nothing selected" run's junit.xml carries an <error>; this one's says
# failures="0" errors="0" (all skipped), so a CI that reads only junit is green.
attack_nothing_ran_junit_is_not_green)
  printf 'seeds = [1]\n[[pipeline]]\nmodels = ["Qwen3.5-397B-A17B"]\ntp = 8\nlayouts = ["interleaved"]\nbatch_sizes = [4]\ncontext_lens = [700, 1300]\nblock_sizes = [16]\ndtypes = ["bf16"]\nwriters = ["reshape_and_cache_shuffle"]\nreaders = ["paged_attention_v1"]\n' \
    > "$WORK/unsup.toml"
  "$KVH" run "$WORK/unsup.toml" --report-dir "$WORK/r" --no-progress > "$WORK/out" 2>&1
  rc=$?
  [ $rc -eq 125 ] || fail "setup: a run of UNSUPPORTED cases only should exit 125, got $rc: $(cat "$WORK/out")"
  grep -q '<error' "$WORK/r/junit.xml" || fail "junit.xml of a run that tested nothing (exit 125) has no error: $(head -2 "$WORK/r/junit.xml" | tail -1)"
  ;;
# A provider's kernel that sets kvh_kernel_desc.fixture (a positional
# initializer off by one field, uninitialised memory in a generated table)
# exempts all its own non-CRASH failures without any declaration: a regressed
# kernel under test (the last token never written) exits 0, junit failures="0".
attack_provider_fixture_flag_exempts_itself)
  cd "$WORK"
  # The bisect test's provider, with the last token dropped and flagged as a fixture.
  awk '/^  cat > provider.c <<.C.$/{n++; next} n==1 && /^C$/{exit} n==1' "$SRC/harness/check/gate_e2e_test.sh" \
    | sed 's|t < T /\*LIMIT\*/|t < T - 1|; s|0 /\*FIXTURE\*/|1|' > provider.c
  grep -q 'fixture = 1;' provider.c && grep -q 't < T - 1' provider.c || fail "setup: provider not planted"
  cc -shared -fPIC -O1 -I"$SRC/include" provider.c -o provider.so || fail "setup: provider does not build"
  printf '[[write]]\nmodels = ["Qwen3-235B-A22B"]\ntp = 2\nlayouts = ["separate", "interleaved"]\nnum_tokens = [4, 67]\nblock_sizes = [16]\ndtypes = ["bf16"]\nwriters = ["c_reshape_and_cache_flash"]\n' > cases.toml
  "$KVH" run cases.toml --provider ./provider.so --report-dir "$WORK/r" --no-progress > "$WORK/out" 2>&1
  rc=$?
  # A kernel flagged fixture must say so in its name (every report then shows it is known-bad):
  # a production kernel flagged by mistake does not load, so it cannot exempt its own failures.
  [ $rc -eq 125 ] || fail "a provider kernel flagged fixture without 'fixture' in its name: expected 125, got $rc"
  grep -q "name must contain 'fixture'" "$WORK/out" || fail "the refusal does not say why: $(cat "$WORK/out")"
  ;;
# Wrong blame: a pipeline's writer that faults (a wild write: SIGSEGV on the cpu
# backend) is reported as CRASH of component "reader", the kernel that never ran.
attack_pipeline_writer_segfault_blames_reader)
  cd "$WORK"
  cat > provider.c <<'C'
#include <stdint.h>
#include "kvharness/provider.h"
/* An ABI 1 provider (the frozen layout still loads). */
static int write_wild(const kvh_write_args_v1* a, void* stream) {
  (void)a; (void)stream;
  *(volatile uint16_t*)(uintptr_t)16 = 1;  /* a wild write */
  return 0;
}
static const kvh_kernel_desc_v1 k[] = {{1, "c_wild_writer", "writes through a bad pointer",
                                        KVH_ROLE_WRITER, KVH_CACHE_PA_V1, 0, write_wild, 0, 0, 0, 0, {0}}};
const kvh_kernel_desc_v1* kvh_provider_kernels(int32_t* n) { *n = 1; return k; }
C
  cc -shared -fPIC -O1 -I"$SRC/include" provider.c -o provider.so || fail "setup: provider does not build"
  printf 'seeds = [1]\n[[pipeline]]\nmodels = ["Qwen3.5-397B-A17B"]\ntp = 8\nlayouts = ["kv_first"]\nbatch_sizes = [4]\ncontext_lens = [700, 1300]\nblock_sizes = [16]\ndtypes = ["bf16"]\nwriters = ["c_wild_writer"]\nreaders = ["paged_attention_v1"]\n' > cases.toml
  "$KVH" run cases.toml --provider ./provider.so --report-dir "$WORK/r" --no-progress > "$WORK/out" 2>&1
  rc=$?
  [ $rc -eq 1 ] || fail "setup: a segfaulting writer should exit 1, got $rc"
  [ "$(json "$WORK/r/results.json" "j['cases'][0]['verdict']")" = CRASH ] || fail "setup: not a CRASH"
  comp=$(json "$WORK/r/results.json" "j['cases'][0]['component']")
  [ "$comp" = writer ] || fail "the writer faulted, the report blames component '$comp'"
  ;;
# A top-level [[expected_failure]] of one case file covers the cases of every
# other case file of the run: `kvharness run cases/default.toml mine.toml`
# lets mine.toml excuse (reasons omitted: any FAIL) default.toml's kernels.
attack_declaration_leaks_into_other_case_files)
  printf 'seeds = [1]\n[[write]]\nmodels = ["Qwen3.5-397B-A17B"]\ntp = 8\nlayouts = ["interleaved"]\nhead_sizes = [128]\nnum_tokens = [4]\nblock_sizes = [16]\ndtypes = ["fp16"]\nwriters = ["reshape_and_cache_flash"]\n\n[[expected_failure]]\nfilter = "writer=reshape_and_cache_flash"\nwhy = "my own bug"\n' \
    > "$WORK/mine.toml"
  "$KVH" run cases/default.toml "$WORK/mine.toml" --filter 'kind=write,layout=interleaved,head_size=128,block_size=16,dtype=fp16' \
    --report-dir "$WORK/r" --no-progress > "$WORK/out" 2>&1
  n=$(json "$WORK/r/results.json" "sum(1 for c in j['cases'] if 'default.toml' in c['source'] and any('mine.toml' in e for e in c['expectations']))")
  [ "$n" = 0 ] || fail "mine.toml's top-level declaration covers $n case(s) of cases/default.toml"
  ;;
*) fail "unknown test $TEST" ;;
esac
echo "ok: $TEST"
