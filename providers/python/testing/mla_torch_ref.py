"""Absorbed MLA decode in torch (float64), the body of the torch MLA test readers
(kvharness_mla_torch.py, and kvharness_triton_names.py's triton_mla_decode stand-in). No kernel is
registered here, so that importing it adds none to a provider."""

import torch


def _latent_rows(key_cache, block_tables, s, length, block_size):
    """The sequence's latent rows [length, R + P] in float64, read through its block table."""
    t = torch.arange(length, dtype=torch.int64)
    pages = block_tables[s].to(torch.int64)[t // block_size]
    return key_cache[pages, t % block_size].to(torch.float64)


def mla(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale, query_start_loc,
        seq_lens, causal, rope):
    if value_cache is not None and value_cache.data_ptr() != key_cache.data_ptr():
        raise ValueError("value_cache: expected the latent cache itself (key_cache's view)")
    r = out.shape[2]
    seq_lens = context_lens if seq_lens is None else seq_lens
    num_seqs = block_tables.shape[0]
    if query_start_loc is None:
        query_start_loc = torch.arange(num_seqs + 1, dtype=torch.int32)
    for s in range(num_seqs):
        q0, q1, length = int(query_start_loc[s]), int(query_start_loc[s + 1]), int(seq_lens[s])
        rows = _latent_rows(key_cache, block_tables, s, length, int(block_size))      # [L, R + P]
        q = query[q0:q1].to(torch.float64)                                             # [q, H, R + P]
        keys = rows if rope else rows[:, :r]
        scores = torch.einsum("qhd,td->qht", q[..., :keys.shape[1]], keys) * float(scale)
        if causal:
            pos = length - (q1 - q0) + torch.arange(q1 - q0).view(-1, 1, 1)
            scores = scores.masked_fill(torch.arange(length).view(1, 1, -1) > pos, float("-inf"))
        out[q0:q1] = torch.einsum("qht,tr->qhr", torch.softmax(scores, dim=-1), rows[:, :r]).to(out.dtype)
