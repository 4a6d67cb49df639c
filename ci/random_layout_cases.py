#!/usr/bin/env python3
"""Writes a case file of N random decode-attention cases over the issue-12
layouts and formats: the NHD/HND readers and the x-split ones on
head_interleaved, degenerate_strides and kernel_pages caches (and the older
layouts for the NHD/HND readers), random GQA, head and block sizes, lengths
and dtypes. Every case must PASS (or be UNSUPPORTED with a reason: e.g.
head_interleaved of the NHD cache); compare two builds' verdicts with
`kvharness compare`.

    python3 ci/random_layout_cases.py 1000 1212 > /tmp/random-layouts.toml
"""
import random
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
seed = int(sys.argv[2]) if len(sys.argv) > 2 else 1212
rng = random.Random(seed)
readers = ["paged_attention_nhd", "paged_attention_hnd", "paged_attention_v1", "paged_attention_rocm"]
layouts = ["head_interleaved", "degenerate_strides", "kernel_pages", "kv_first", "interleaved", "padded", "offset"]
print(f"# {n} random decode-attention cases over the issue-12 layouts (ci/random_layout_cases.py {n} {seed})")
print("seeds = [1]\n")
models, tables = {}, []
for i in range(n):
    reader = rng.choice(readers)
    layout = rng.choice(layouts)
    kv = rng.choice([1, 1, 2, 4])
    heads = kv * rng.choice([1, 2, 4, 8, 16])
    page = rng.choice([8, 16, 32, 64])
    extra = ""
    if layout == "degenerate_strides":
        if kv > 1 and reader != "paged_attention_rocm" and rng.random() < 0.5:
            page = 1  # the size-1 dim is the block (the shuffled V needs block_size % 8 == 0)
        else:
            kv, heads = 1, rng.choice([1, 4, 8])
        extra = f"degenerate_strides = [{rng.choice([0, 1, 2147483648])}]\n"
    block = page
    if layout == "kernel_pages":
        block = page * rng.choice([2, 4, 34])
        extra = f"kernel_block_size = {page}\n"
    name = f"random-h{heads}-kv{kv}"
    models[name] = (heads, kv)
    lo = 1 + rng.randrange(600)
    tables.append(
        f"[[attention]]\nmodels = [\"{name}\"]\ntp = 1\nlayouts = [\"{layout}\"]\n{extra}"
        f"head_sizes = [{rng.choice([64, 80, 128, 256])}]\nbatch_sizes = [{1 + rng.randrange(5)}]\n"
        f"context_lens = [{lo}, {lo + rng.randrange(900)}]\nblock_sizes = [{block}]\n"
        f"dtypes = [\"{rng.choice(['fp16', 'bf16'])}\"]\nreaders = [\"{reader}\"]\n"
    )
for name, (heads, kv) in sorted(models.items()):
    print(f"[[model]]\nname = \"{name}\"\nnum_heads = {heads}\nnum_kv_heads = {kv}\nhead_size = 128\n")
print("\n".join(tables))
