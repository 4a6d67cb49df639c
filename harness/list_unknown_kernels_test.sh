#!/usr/bin/env bash
# `kvharness list --allow-unknown-kernels` (CTest): a case file naming a provider's writer (or router,
# and every shipped cases/stacks/ file) checks without the provider; plain `list` keeps refusing it with its message; a registered kernel of the
# wrong role, and a bad value elsewhere, are still errors under the flag.
# Usage: list_unknown_kernels_test.sh KVHARNESS WORKDIR
set -u
KVH=$1
WORK=$2
rm -rf "$WORK" && mkdir -p "$WORK"
FAILS=0
check() {  # check WHAT CONDITION...
  local what=$1
  shift
  if "$@"; then echo "ok   $what"; else echo "FAIL $what"; FAILS=$((FAILS + 1)); fi
}
table() {  # table WRITERS [EXTRA_LINE]
  printf 'seeds = [1]\n[[write]]\nmodels = ["Qwen3-235B-A22B"]\ntp = 8\nlayouts = ["separate"]\nhead_sizes = [128]\n'
  printf 'num_tokens = [16]\nblock_sizes = [16]\ndtypes = ["fp16"]\nwriters = %s\n%s' "$1" "${2:-}"
}
table '["vllm_reshape_and_cache_flash", "reshape_and_cache_flash"]' > "$WORK/stack.toml"
table '["paged_attention_rocm"]' > "$WORK/role.toml"
table '["vllm_reshape_and_cache_flash"]' 'kv_cache_dtype = ["fp8"]' > "$WORK/dtype.toml"

"$KVH" list "$WORK/stack.toml" > "$WORK/plain.out" 2> "$WORK/plain.err"
rc=$?
check "plain list: exit 2 (got $rc)" test $rc -eq 2
check "plain list: the existing message" grep -q "writer 'vllm_reshape_and_cache_flash': no kernel of that name is registered" "$WORK/plain.err"

"$KVH" list "$WORK/stack.toml" --allow-unknown-kernels > "$WORK/allow.out" 2> "$WORK/allow.err"
rc=$?
check "--allow-unknown-kernels: exit 0 (got $rc)" test $rc -eq 0
check "--allow-unknown-kernels: both case ids listed" test "$(grep -c '^write/' "$WORK/allow.out")" -eq 2
check "--allow-unknown-kernels: the unknown kernel named" \
  grep -qx "kvharness: unknown kernel (not loaded): writer vllm_reshape_and_cache_flash" "$WORK/allow.err"

"$KVH" list "$WORK/role.toml" --allow-unknown-kernels > /dev/null 2> "$WORK/role.err"
rc=$?
check "a registered reader as writer: still exit 2 (got $rc)" test $rc -eq 2
check "a registered reader as writer: named" grep -q "a reader kernel, not a writer" "$WORK/role.err"

"$KVH" list "$WORK/dtype.toml" --allow-unknown-kernels > /dev/null 2> "$WORK/dtype.err"
rc=$?
check "a bad kv_cache_dtype: still exit 2 (got $rc)" test $rc -eq 2
check "a bad kv_cache_dtype: named with its kvharness name" grep -q "'fp8' is vLLM's kv_cache_dtype" "$WORK/dtype.err"
# The shipped stack case files (cases/stacks/) check without their stacks: provider kernels and routers.
SRC=$(cd "$(dirname "$0")/.." && pwd)
for f in "$SRC"/cases/stacks/*.toml; do
  n=$("$KVH" list "$f" --allow-unknown-kernels 2> "$WORK/stacks.err" | grep -c '/')
  rc=${PIPESTATUS[0]}
  check "$(basename "$f"): lists $n cases without its stack (exit $rc)" test "$rc" -eq 0 -a "$n" -gt 0
done
check "aiter.toml: its router named as not loaded" \
  sh -c "'$KVH' list '$SRC/cases/stacks/aiter.toml' --allow-unknown-kernels 2>&1 >/dev/null | grep -qx 'kvharness: unknown kernel (not loaded): router aiter_paged_attention_common'"
printf 'seeds = [1]\n[[attention]]\nmodels = ["Qwen3-235B-A22B"]\ntp = 8\nlayouts = ["separate"]\nhead_sizes = [128]\nbatch_sizes = [2]\ncontext_lens = [1, 40]\nblock_sizes = [16]\ndtypes = ["fp16"]\nrouters = ["no_such_router"]\n' > "$WORK/router.toml"
"$KVH" list "$WORK/router.toml" > /dev/null 2> "$WORK/router.err"
rc=$?
check "plain list: an unknown router is still exit 2 (got $rc)" test $rc -eq 2
check "plain list: the unknown router named" grep -q "router 'no_such_router': unknown policy" "$WORK/router.err"
echo "$FAILS check(s) failed"
exit $((FAILS > 0))
