"""Absorbed MLA decode in torch (float64), the body of the torch MLA test readers
(kvharness_mla_torch.py, and kvharness_triton_names.py's triton_mla_decode stand-in). No kernel is
registered here, so that importing it adds none to a provider."""

import torch


def fp8_decode(codes, fmt):
    """float64 values of fp8 codes (a uint8 tensor: torch 1.13 has no fp8 dtype): e4m3fn (bias 7,
    0x7F/0xFF NaN) or e4m3fnuz (bias 8, 0x80 NaN, no negative zero). Exact."""
    c = codes.to(torch.int64)
    sign = torch.where(c >= 128, -1.0, 1.0).to(torch.float64)
    e, m = (c >> 3) & 15, (c & 7).to(torch.float64)
    bias = 7 if fmt == "fp8_e4m3fn" else 8
    normal = torch.pow(2.0, (e - bias).to(torch.float64)) * (1 + m / 8)
    sub = (2.0 ** (1 - bias)) * (m / 8)
    v = sign * torch.where(e > 0, normal, sub)
    nan = (c & 127) == 127 if fmt == "fp8_e4m3fn" else c == 128
    return torch.where(nan, torch.full_like(v, float("nan")), v)


def _latent_rows(key_cache, block_tables, s, length, block_size, kv_cache_dtype, k_scale):
    """The sequence's latent rows [length, R + P] in float64, read through its block table (fp8:
    the codes decoded and times the per-tensor k_scale)."""
    t = torch.arange(length, dtype=torch.int64)
    pages = block_tables[s].to(torch.int64)[t // block_size]
    rows = key_cache[pages, t % block_size]
    if kv_cache_dtype in ("fp8_e4m3fn", "fp8_e4m3fnuz"):
        return fp8_decode(rows, kv_cache_dtype) * float(k_scale)
    return rows.to(torch.float64)


def mla(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale, query_start_loc,
        seq_lens, causal, rope, kv_cache_dtype=None, k_scales=None, k_scale=1.0):
    """out [rows, H, R] = absorbed MLA over the latent cache (provider.h KVH_CACHE_MLA); rope=False drops the
    rope part from the score (a known-bad variant). fp8 caches: kv_cache_dtype names the format, the scale is
    k_scales[0] (kv_scales "tensor") or k_scale."""
    ks = float(k_scales.reshape(-1)[0]) if k_scales is not None else float(k_scale)
    if value_cache is not None and value_cache.data_ptr() != key_cache.data_ptr():
        raise ValueError("value_cache: expected the latent cache itself (key_cache's view)")
    r = out.shape[2]
    seq_lens = context_lens if seq_lens is None else seq_lens
    num_seqs = block_tables.shape[0]
    if query_start_loc is None:
        query_start_loc = torch.arange(num_seqs + 1, dtype=torch.int32)
    for s in range(num_seqs):
        q0, q1, length = int(query_start_loc[s]), int(query_start_loc[s + 1]), int(seq_lens[s])
        rows = _latent_rows(key_cache, block_tables, s, length, int(block_size), kv_cache_dtype, ks)      # [L, R + P]
        q = query[q0:q1].to(torch.float64)                                             # [q, H, R + P]
        keys = rows if rope else rows[:, :r]
        scores = torch.einsum("qhd,td->qht", q[..., :keys.shape[1]], keys) * float(scale)
        if causal:
            pos = length - (q1 - q0) + torch.arange(q1 - q0).view(-1, 1, 1)
            scores = scores.masked_fill(torch.arange(length).view(1, 1, -1) > pos, float("-inf"))
        out[q0:q1] = torch.einsum("qht,tr->qhr", torch.softmax(scores, dim=-1), rows[:, :r]).to(out.dtype)
