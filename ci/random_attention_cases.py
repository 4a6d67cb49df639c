#!/usr/bin/env python3
"""Writes a case file of N random decode-attention cases (shapes, layouts,
block sizes, lengths, dtypes, both built-in general readers), the case-file
twin of harness/case/attention_case_test.cpp's ThousandRandomCases: for comparing
two builds' verdicts with `kvharness compare` (issue 9: a faster harness must
not change a verdict).

    python3 ci/random_attention_cases.py 1000 20261130 > /tmp/random.toml

With --features (issue 12) every case also draws the score modifiers and split
control: sliding_window, sinks, softcap, alibi, tensor parallelism with a
tp_rank, partition_size (half of them chosen to leave the last partition one or
a few tokens long), and pa_fwd_asm joins the readers at head_size 128; and
issue 11's axes: a stale-slot pattern (random, nan, inf), out-of-range
block-table padding, and in 30% of the cases an fp8 cache with a scale
granularity. Every case must PASS for the correct readers:

    python3 ci/random_attention_cases.py 1000 20261130 --features > /tmp/features.toml
"""
import random
import sys

args = [a for a in sys.argv[1:] if not a.startswith("--")]
features = "--features" in sys.argv[1:]
n = int(args[0]) if args else 1000
seed = int(args[1]) if len(args) > 1 else 20261130
rng = random.Random(seed)
layouts = ["separate", "kv_first", "interleaved", "padded", "offset"]
print(f"# {n} random decode-attention cases (ci/random_attention_cases.py {n} {seed}{' --features' if features else ''})")
print("seeds = [1]\n")
models = {}
tables = []


def feature_lines(hi):
    """The issue-12 axes of one case, as case-file lines; returns (lines, tp)."""
    tp = rng.choice([1, 1, 2, 4, 8])
    lines = [f"tp_rank = {rng.randrange(tp)}"]
    if rng.random() < 0.5:
        lines.append(f"sliding_window = {rng.choice([1, 2, 8, 128, 300, 1 + rng.randrange(1500)])}")
    if rng.random() < 0.35:
        lines.append("sinks = true")
    if rng.random() < 0.35:
        lines.append(f"softcap = {rng.choice([1.0, 5.0, 30.0, 50.0])}")
    if rng.random() < 0.35:
        lines.append("alibi = true")
    r = rng.random()
    if r < 0.3:
        pass  # the reader's default (256)
    elif r < 0.65:
        # a size that leaves the longest sequence's last partition 1 to 3 tokens long
        k = rng.randrange(1, 4)
        ps = next((p for p in range(16, 513) if (hi - k) % p == 0 and (hi - k) // p >= 1), 0)
        lines.append(f"partition_size = {ps or 16 + rng.randrange(497)}")
    else:
        lines.append(f"partition_size = {16 + rng.randrange(497)}")
    # Issue 11's axes: stale slots, out-of-range padding, fp8 caches with scales.
    lines.append(f"stale = [\"{rng.choice(['random', 'nan', 'inf'])}\"]")
    if rng.random() < 0.5:
        lines.append(f"block_table_padding = \"num_blocks+{rng.randrange(17)}\"")
    if rng.random() < 0.3:
        lines.append(f"kv_cache_dtype = [\"{rng.choice(['fp8_e4m3fn', 'fp8_e4m3fnuz'])}\"]")
        lines.append(f"kv_scales = [\"{rng.choice(['none', 'tensor', 'head', 'block', 'token'])}\"]")
    return lines, tp


for i in range(n):
    kv = rng.choice([1, 1, 2, 4])
    heads = kv * rng.choice([1, 2, 4, 8])
    if not features:  # the draws of the original generator, in its order: the same file for a seed
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
        continue
    lo = 1 + rng.randrange(600)
    hi = lo + rng.randrange(900)
    head_size = 128 if rng.random() < 0.3 else 8 * (1 + rng.randrange(32))
    readers = ["paged_attention_v1", "paged_attention_rocm"] + (["pa_fwd_asm"] if head_size == 128 else [])
    extra, tp = feature_lines(hi)
    fp8 = any(line.startswith("kv_cache_dtype") for line in extra)
    if fp8:  # x = 16 for one-byte elements: head_size and block_size multiples of 16
        head_size = 16 * ((head_size + 15) // 16)
    block_size = rng.choice([16, 32, 48, 64, 544] if fp8 else [8, 16, 32, 48, 64, 544])
    name = f"random-h{heads * tp}-kv{kv * tp}"
    models[name] = (heads * tp, kv * tp)
    tables.append(
        f"[[attention]]\nmodels = [\"{name}\"]\ntp = {tp}\nlayouts = [\"{rng.choice(layouts)}\"]\n"
        f"head_sizes = [{head_size}]\nbatch_sizes = [{1 + rng.randrange(6)}]\n"
        f"context_lens = [{lo}, {hi}]\nblock_sizes = [{block_size}]\n"
        f"dtypes = [\"{rng.choice(['fp16', 'bf16'])}\"]\n"
        f"readers = [\"{rng.choice(readers)}\"]\n" + "".join(line + "\n" for line in extra)
    )
for name, (heads, kv) in sorted(models.items()):
    print(f"[[model]]\nname = \"{name}\"\nnum_heads = {heads}\nnum_kv_heads = {kv}\nhead_size = 128\n")
print("\n".join(tables))
