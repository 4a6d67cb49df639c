#!/usr/bin/env python3
"""The seed PR's experiment (cases/seed-pr.toml: 12 pipeline cells) as a plain
torch script, for comparing time to verdict with `kvharness run
cases/seed-pr.toml` on the same GPU (issue 9). It does fewer checks than the
harness: no guard bytes, no sentinels, no poisoned outputs, no stale-slot
explanation; per cell it writes the cache with the cell's writer, compares it
with a correct placement, routes, runs a gather-based reader in float32 and
compares it with a float64 reference. Times include `import torch` and CUDA
start-up, as a user's script pays them.

    /opt/torch/.venv/bin/python ci/seed_pr_torch.py
"""
import time

T0 = time.time()
import torch  # noqa: E402

DEV = "cuda" if torch.cuda.is_available() else "cpu"
BS, X = 16, 8  # block_size, x (16 bytes of bf16)
CUS = 256  # MI355X compute units: the router's target


def route(policy, num_seqs, num_heads, head_size):
    """aiter's decode router as cases/seed-pr.toml names it (kernels/router/router.cpp has the rules and their sources)."""
    asm = num_seqs * num_heads > 2 * CUS
    if policy == "aiter-v0.1.12":
        asm = asm and head_size == 128
    return "pa_fwd_asm" if asm else "paged_attention_rocm"


def cache_views(buf, layout, nb, hd, shuffle):
    """K [nb, 1, hd/x, bs, x] and V ([nb, 1, bs/x, hd, x] shuffled, else [nb, 1, hd, bs]) views of one buffer."""
    page = BS * hd
    pages = buf.view(nb, 2, page) if layout == "interleaved" else buf.view(2, nb, page).transpose(0, 1)
    k = pages[:, 0].view(nb, 1, hd // X, BS, X)
    v = pages[:, 1].view(nb, 1, BS // X, hd, X) if shuffle else pages[:, 1].view(nb, 1, hd, BS)
    return k, v


def write(buf, layout, nb, hd, shuffle, key, value, slots, contiguous_bug=False):
    """The writers: reshape_and_cache(_shuffle), and the fixture that takes block_id * page as the block base."""
    blk, off = slots // BS, slots % BS
    if contiguous_bug:  # the vLLM PR thread's bug: block base as if K pages were contiguous
        page = BS * hd
        d = torch.arange(hd, device=DEV)
        kidx = blk[:, None] * page + (d // X)[None] * BS * X + off[:, None] * X + (d % X)[None]
        vidx = (blk[:, None] * page + (off // X)[:, None] * hd * X + d[None] * X + (off % X)[:, None]) if shuffle \
            else blk[:, None] * page + d[None] * BS + off[:, None]
        flat = buf.view(-1)
        vbase = page if layout == "interleaved" else nb * page  # where the V view starts; K starts at 0
        flat[kidx] = key[:, 0]
        flat[vbase + vidx] = value[:, 0]
        return
    k, v = cache_views(buf, layout, nb, hd, shuffle)
    k[blk, 0, :, off, :] = key[:, 0].view(-1, hd // X, X)
    if shuffle:
        v[blk, 0, off // X, :, off % X] = value[:, 0]
    else:
        v[blk, 0, :, off] = value[:, 0]


def read(buf, layout, nb, hd, shuffle, query, block_tables, lens, scale):
    """A decode reader by gathering pages: float32 math, bf16 output."""
    k, v = cache_views(buf, layout, nb, hd, shuffle)
    kt = k[block_tables].permute(0, 2, 1, 4, 3, 5).reshape(len(lens), 1, -1, hd)  # [S, 1, maxb*bs, hd]
    vt = (v[block_tables].permute(0, 2, 1, 3, 5, 4).reshape(len(lens), 1, -1, hd) if shuffle
          else v[block_tables].permute(0, 2, 1, 4, 3).reshape(len(lens), 1, -1, hd))
    s = torch.einsum("shd,sktd->sht", query.float(), kt.float()) * scale
    mask = torch.arange(s.shape[-1], device=DEV)[None, None] >= lens[:, None, None]
    p = torch.softmax(s.masked_fill(mask, float("-inf")), -1)
    return torch.einsum("sht,sktd->shd", p, vt.float()).to(torch.bfloat16)


def reference(query, key, value, lens, scale):
    """float64 attention from the logical tensors (no cache)."""
    S, maxl = len(lens), int(lens.max())
    starts = torch.cumsum(lens, 0) - lens
    idx = (starts[:, None] + torch.arange(maxl, device=DEV)[None]).clamp(max=key.shape[0] - 1)
    kp, vp = key[idx][:, :, 0].double(), value[idx][:, :, 0].double()  # [S, maxl, hd]
    s = torch.einsum("shd,std->sht", query.double(), kp) * scale
    s = s.masked_fill(torch.arange(maxl, device=DEV)[None, None] >= lens[:, None, None], float("-inf"))
    return torch.einsum("sht,std->shd", torch.softmax(s, -1), vp)


def cell(g, heads, hd, layout, batch, writer, reader=None, router=None):
    lens = torch.randint(700, 1301, (batch,), generator=g, device=DEV)
    lens[0], lens[-1] = 700, 1300
    blocks = (lens + BS - 1) // BS
    nb = int(1 + blocks.sum() + blocks.sum() // 8 + 1)
    T = int(lens.sum())
    rand = lambda *s: (torch.rand(*s, generator=g, device=DEV) * 4 - 2).to(torch.bfloat16)  # noqa: E731
    key, value, query = rand(T, 1, hd), rand(T, 1, hd), rand(batch, heads, hd)
    ids = 1 + torch.randperm(nb - 1, generator=g, device=DEV)
    maxb = int(blocks.max())
    block_tables = torch.zeros(batch, maxb, dtype=torch.long, device=DEV)
    ar = torch.arange(maxb, device=DEV)
    block_tables[ar[None] < blocks[:, None]] = ids[: int(blocks.sum())]
    tok = torch.arange(T, device=DEV) - torch.repeat_interleave(torch.cumsum(lens, 0) - lens, lens)
    seq = torch.repeat_interleave(torch.arange(batch, device=DEV), lens)
    slots = block_tables[seq, tok // BS] * BS + tok % BS
    shuffle = writer != "reshape_and_cache"
    page = BS * hd
    buf = rand(2 * nb * page)  # old tokens
    want = buf.clone()
    write(want, layout, nb, hd, shuffle, key, value, slots)
    write(buf, layout, nb, hd, shuffle, key, value, slots, contiguous_bug=writer == "fixture_shuffle_contiguous")
    verdicts = []
    if not torch.equal(buf, want):
        verdicts.append("writer mismatch")
    name = reader or route(router, batch, heads, hd)
    if name == "pa_fwd_asm" and hd != 128:
        verdicts.append("router misroute")
        return verdicts
    out = read(buf, layout, nb, hd, shuffle, query, block_tables, lens, hd ** -0.5)
    ref = reference(query, key, value, lens, hd ** -0.5)
    if not torch.allclose(out.double(), ref, atol=2e-2, rtol=2e-2) and not verdicts:
        verdicts.append("reader mismatch")
    return verdicts


def main():
    g = torch.Generator(device=DEV)
    g.manual_seed(1)
    rows = [("before fix (shuffle=1)", "fixture_shuffle_contiguous", None, "aiter-v0.1.10.post3"),
            ("after fix (shuffle=1)", "reshape_and_cache_shuffle", None, "aiter-v0.1.10.post3"),
            ("after fix + router fix (shuffle=1)", "reshape_and_cache_shuffle", None, "aiter-v0.1.12"),
            ("pa_v1 (shuffle=0)", "reshape_and_cache", "paged_attention_v1", None)]
    n = 0
    for model, heads, hd, layout, variants in (("Qwen3.5-397B-A17B", 4, 256, "interleaved", rows),
                                               ("Qwen3-235B-A22B", 8, 128, "kv_first", rows[1:3])):
        for batch in (4, 512):
            for name, writer, reader, router in variants:
                v = cell(g, heads, hd, layout, batch, writer, reader, router)
                n += 1
                print(f"{model:18} n{batch:<4} {name:36} {'PASS' if not v else ', '.join(v)}")
    if DEV == "cuda":
        torch.cuda.synchronize()
    print(f"{n} cells in {time.time() - T0:.2f} s wall (import torch and CUDA start-up included), device {DEV}")


main()
