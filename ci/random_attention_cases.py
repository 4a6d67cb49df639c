#!/usr/bin/env python3
"""Writes a case file of N random decode-attention cases (shapes, layouts,
block sizes, lengths, dtypes, both built-in general readers), the case-file
twin of harness/attention_case_test.cpp's ThousandRandomCases: for comparing
two builds' verdicts with `kvharness compare` (issue 9: a faster harness must
not change a verdict).

    python3 ci/random_attention_cases.py 1000 20261130 > /tmp/random.toml
"""
import random
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 20261130)
layouts = ["separate", "kv_first", "interleaved", "padded", "offset"]
print(f"# {n} random decode-attention cases (ci/random_attention_cases.py {n} {sys.argv[2] if len(sys.argv) > 2 else 20261130})")
print("seeds = [1]\n")
models = {}
tables = []
for i in range(n):
    kv = rng.choice([1, 1, 2, 4])
    heads = kv * rng.choice([1, 2, 4, 8])
    name = f"random-h{heads}-kv{kv}"
    models[name] = (heads, kv)
    lo = 1 + rng.randrange(600)
    tables.append(
        f"[[attention]]\nmodels = [\"{name}\"]\ntp = 1\nlayouts = [\"{rng.choice(layouts)}\"]\n"
        f"head_sizes = [{8 * (1 + rng.randrange(32))}]\nbatch_sizes = [{1 + rng.randrange(6)}]\n"
        f"context_lens = [{lo}, {lo + rng.randrange(900)}]\nblock_sizes = [{rng.choice([8, 16, 32, 48, 64, 544])}]\n"
        f"dtypes = [\"{rng.choice(['fp16', 'bf16'])}\"]\n"
        f"readers = [\"{rng.choice(['paged_attention_v1', 'paged_attention_rocm'])}\"]\n"
    )
for name, (heads, kv) in sorted(models.items()):
    print(f"[[model]]\nname = \"{name}\"\nnum_heads = {heads}\nnum_kv_heads = {kv}\nhead_size = 128\n")
print("\n".join(tables))
