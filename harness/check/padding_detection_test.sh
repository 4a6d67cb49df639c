#!/usr/bin/env bash
# A writer that drops the last token is caught by the default suite (issue 25, item 5).
# Issue 23 drew each write case's padding tokens per case (harness/case/padding.h); before,
# token i % 8 == 3 was always padding, so such a writer passed every 4-token case. Runs
# planted_skips_last_token in place of reshape_and_cache_flash over the default suite's write
# cases of that writer and requires:
#   - exit 1, with FAILs among the 4-token cases (the old gap) and at two num_tokens at least;
#   - each judged case FAILs exactly when its last token is real (results.json padding_tokens):
#     a PASS is a case whose last token is padding, nothing else.
#
#   padding_detection_test.sh KVHARNESS_PLANTED CASE_FILE OUT_DIR
set -u
bin=$1 cases=$2 out=$3
rm -rf "$out"
mkdir -p "$(dirname "$out")"
"$bin" run "$cases" --filter "kind=write,writer=reshape_and_cache_flash" --report-dir "$out" --no-progress \
  --heartbeat 0 --replace-kernel reshape_and_cache_flash=planted_skips_last_token >"$out.log" 2>&1
rc=$?
[[ $rc == 1 ]] || { echo "FAIL: the run exits $rc, expected 1 (a failure; $out.log)"; exit 1; }
python3 - "$out/results.json" <<'PY'
import collections, json, sys
cases = json.load(open(sys.argv[1]))["cases"]
judged = [c for c in cases if c["verdict"] in ("PASS", "FAIL")]
bad, by_n = [], collections.defaultdict(collections.Counter)
for c in judged:
    n = c["batch_size"]
    last_real = (n - 1) not in (c.get("padding_tokens") or [])
    by_n[n][c["verdict"]] += 1
    if (c["verdict"] == "FAIL") != last_real:
        bad.append(f"{c['id']}: {c['verdict']} with padding_tokens {c.get('padding_tokens')} of {n}")
print(f"{len(cases)} write cases, {len(judged)} judged; by num_tokens: "
      + ", ".join(f"{n}: {dict(v)}" for n, v in sorted(by_n.items())))
ok = True
if bad:
    print("FAIL: the verdict does not follow the last token:\n  " + "\n  ".join(bad[:10]))
    ok = False
if not by_n[4]["FAIL"]:
    print("FAIL: no 4-token case fails (the gap of a fixed padding position)")
    ok = False
# Each case catches the writer with probability ~0.6-0.7 (its last token real), so a size with few
# cases may catch nothing (the default suite's three 64-token cases of this writer all pad it): noted.
missing = [n for n, v in by_n.items() if not v["FAIL"] and n > 1]
if missing:
    print(f"note: no case of num_tokens {missing} has its last token real")
if sum(1 for v in by_n.values() if v["FAIL"]) < 2:
    print("FAIL: fewer than two num_tokens values catch the writer")
    ok = False
sys.exit(0 if ok else 1)
PY
