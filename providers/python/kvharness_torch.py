"""kvharness_torch: cache writers, decode readers and ragged (varlen) readers in plain torch operations.

Every kernel works in place on the views the harness passes (zero-copy views
of its guarded storage, any strides): advanced-index assignment on a view is
index_put_ on that view, so it writes through to the storage; nothing copies
the cache (no .contiguous()). Runs wherever torch does: the CPU backend in CI
(Debian's torch 1.13) and GPUs (torch 2.x), on the tensors' own device.

Shapes (outermost first, elements), x = key_cache.shape[-1] (8 for fp16/bf16):
  key, value    [num_tokens, num_kv_heads, head_size]
  flash (NHD)   key_cache, value_cache [num_blocks, block_size, num_kv_heads, head_size]
  pa_v1         key_cache [num_blocks, num_kv_heads, head_size/x, block_size, x]
                value_cache [num_blocks, num_kv_heads, head_size, block_size]
  shuffle       key_cache as pa_v1; value_cache [num_blocks, num_kv_heads, block_size/x, head_size, x]
  hnd           key_cache, value_cache [num_blocks, num_kv_heads, block_size, head_size]

The ragged readers (torch_unified_attention_nhd/_hnd) take any number of query tokens per
sequence (query/out [num_query_tokens, num_heads, head_size], query_start_loc/seq_lens as in
include/kvharness/provider.h), causal or not, with every score modifier: the definition written
out per sequence, a slow but plain reference for kernels in that family.
"""

import torch

import kvharness
from kvharness import reader, writer


def _valid_slots(key, value, slot_mapping, block_size):
    """(key rows, value rows, block ids, offsets) of the tokens whose slot is >= 0 (negative = padding)."""
    valid = slot_mapping >= 0
    slots = slot_mapping[valid]
    return key[valid], value[valid], torch.div(slots, block_size, rounding_mode="floor"), slots % block_size


def _split_x(t, x):
    """[n, num_kv_heads, head_size] -> [n, num_kv_heads, head_size/x, x] (the x-split of the key cache)."""
    n, h, d = t.shape
    return t.reshape(n, h, d // x, x)


@writer("torch_reshape_and_cache_flash", cache_format="flash",
        description="torch: NHD cache writer, index_put_ on the views")
def reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, block_size):
    k, v, blk, off = _valid_slots(key, value, slot_mapping, block_size)
    key_cache[blk, off] = k
    value_cache[blk, off] = v


@writer("torch_reshape_and_cache_flash_hnd", cache_format="hnd",
        description="torch: the NHD writer on the HND cache's transposed view (a view, written through)")
def reshape_and_cache_flash_hnd(key, value, key_cache, value_cache, slot_mapping, block_size):
    reshape_and_cache_flash(key, value, key_cache.transpose(1, 2), value_cache.transpose(1, 2), slot_mapping,
                            block_size)


@writer("torch_reshape_and_cache", cache_format="pa_v1",
        description="torch: pa_v1 (shuffle=0) cache writer, index_put_ on the views")
def reshape_and_cache(key, value, key_cache, value_cache, slot_mapping, block_size):
    x = key_cache.shape[4]
    k, v, blk, off = _valid_slots(key, value, slot_mapping, block_size)
    key_cache[blk, :, :, off, :] = _split_x(k, x)   # indexed dims first: [n, num_kv_heads, head_size/x, x]
    value_cache[blk, :, :, off] = v                 # [n, num_kv_heads, head_size]


@writer("torch_reshape_and_cache_shuffle", cache_format="shuffle",
        description="torch: shuffle=1 cache writer, index_put_ on the views")
def reshape_and_cache_shuffle(key, value, key_cache, value_cache, slot_mapping, block_size):
    x = key_cache.shape[4]
    k, v, blk, off = _valid_slots(key, value, slot_mapping, block_size)
    key_cache[blk, :, :, off, :] = _split_x(k, x)
    value_cache[blk, :, torch.div(off, x, rounding_mode="floor"), :, off % x] = v  # [n, num_kv_heads, head_size]


def _flat(t):
    """The storage t's view spans, as a 1-D view starting at t's element [0,...,0]."""
    extent = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))
    return t.as_strided((extent,), (1,))


@writer("torch_fixture_shuffle_contiguous", cache_format="shuffle", fixture=True,
        description="REGRESSION FIXTURE (torch): shuffle=1 writer that assumes a contiguous cache "
                    "(block base = block_id * num_kv_heads * head_size * block_size)")
def fixture_shuffle_contiguous(key, value, key_cache, value_cache, slot_mapping, block_size):
    x = key_cache.shape[4]
    k, v, blk, off = _valid_slots(key, value, slot_mapping, block_size)
    n, h, d = k.shape
    dev = k.device
    heads = torch.arange(h, device=dev).view(1, h, 1)
    dims = torch.arange(d, device=dev).view(1, 1, d)
    head_base = (blk * h * d * block_size).view(n, 1, 1) + heads * d * block_size  # the bug: strides ignored
    o = off.view(n, 1, 1)
    k_idx = head_base + torch.div(dims, x, rounding_mode="floor") * block_size * x + o * x + dims % x
    v_idx = head_base + torch.div(o, x, rounding_mode="floor") * d * x + dims * x + o % x
    _flat(key_cache)[k_idx.reshape(-1)] = k.reshape(-1)
    _flat(value_cache)[v_idx.reshape(-1)] = v.reshape(-1)


def _attend(out, query, key_cache, block_tables, context_lens, block_size, scale, k_scale, v_scale, gather_v):
    """Decode attention, float32 accumulation, one sequence at a time; gather_v(blk, off) -> [n, kv_heads, hd]."""
    num_seqs, num_heads, head_size = query.shape
    num_kv_heads = key_cache.shape[1]
    group = num_heads // num_kv_heads  # query head h reads kv head h // group
    lens = context_lens.tolist()
    for i in range(num_seqs):
        n = lens[i]
        pos = torch.arange(n, device=query.device)
        blk = block_tables[i].long()[torch.div(pos, block_size, rounding_mode="floor")]
        off = pos % block_size
        keys = key_cache[blk, :, :, off, :].reshape(n, num_kv_heads, head_size).float() * k_scale
        values = gather_v(blk, off).float() * v_scale
        q = query[i].float().reshape(num_kv_heads, group, head_size)
        scores = torch.einsum("kgd,nkd->kgn", q, keys) * scale
        probs = torch.softmax(scores, dim=-1)
        out[i] = torch.einsum("kgn,nkd->kgd", probs, values).reshape(num_heads, head_size).to(out.dtype)


@reader("torch_paged_attention_v1", cache_format="pa_v1",
        description="torch: paged decode attention, pa_v1 V layout, float32 accumulation")
def paged_attention_v1(out, query, key_cache, value_cache, block_tables, context_lens, block_size,
                       max_context_len, scale, k_scale, v_scale, partition_size, workspace):
    _attend(out, query, key_cache, block_tables, context_lens, block_size, scale, k_scale, v_scale,
            lambda blk, off: value_cache[blk, :, :, off])


@reader("torch_paged_attention_shuffle", cache_format="shuffle",
        description="torch: paged decode attention, shuffle V layout, float32 accumulation")
def paged_attention_shuffle(out, query, key_cache, value_cache, block_tables, context_lens, block_size,
                            max_context_len, scale, k_scale, v_scale, partition_size, workspace):
    x = value_cache.shape[4]
    _attend(out, query, key_cache, block_tables, context_lens, block_size, scale, k_scale, v_scale,
            lambda blk, off: value_cache[blk, :, torch.div(off, x, rounding_mode="floor"), :, off % x])


def _attend_tokens(out, query, block_tables, context_lens, block_size, scale, k_scale, v_scale, num_kv_heads,
                   gather_k, gather_v):
    """Decode attention over caches whose gather_k/gather_v(blk, off) give [n, num_kv_heads, head_size]."""
    num_seqs, num_heads, head_size = query.shape
    group = num_heads // num_kv_heads  # query head h reads kv head h // group
    lens = context_lens.tolist()
    for i in range(num_seqs):
        n = lens[i]
        pos = torch.arange(n, device=query.device)
        blk = block_tables[i].long()[torch.div(pos, block_size, rounding_mode="floor")]  # tables in kernel pages
        off = pos % block_size
        keys = gather_k(blk, off).float() * k_scale
        values = gather_v(blk, off).float() * v_scale
        q = query[i].float().reshape(num_kv_heads, group, head_size)
        probs = torch.softmax(torch.einsum("kgd,nkd->kgn", q, keys) * scale, dim=-1)
        out[i] = torch.einsum("kgn,nkd->kgd", probs, values).reshape(num_heads, head_size).to(out.dtype)


@reader("torch_paged_attention_nhd", cache_format="flash",
        description="torch: paged decode attention, NHD K and V, float32 accumulation")
def paged_attention_nhd(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale, k_scale,
                        v_scale, **_):
    _attend_tokens(out, query, block_tables, context_lens, block_size, scale, k_scale, v_scale, key_cache.shape[2],
                   lambda blk, off: key_cache[blk, off], lambda blk, off: value_cache[blk, off])


@reader("torch_paged_attention_hnd", cache_format="hnd",
        description="torch: paged decode attention, HND K and V, float32 accumulation")
def paged_attention_hnd(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale, k_scale,
                        v_scale, **_):
    # key_cache[blk, :, off]: the two index tensors are apart, so their dim leads: [n, num_kv_heads, head_size].
    _attend_tokens(out, query, block_tables, context_lens, block_size, scale, k_scale, v_scale, key_cache.shape[1],
                   lambda blk, off: key_cache[blk, :, off], lambda blk, off: value_cache[blk, :, off])


# ---- ragged (varlen) attention: chunked prefill, speculative decode, decode, in one call ----

#: Scores of one sequence are computed for this many (query token x head x key) elements at a
#: time at most (query rows in chunks), so a long prefill chunk does not take O(q * L * heads) memory at once.
_SCORE_ELEMENTS = 1 << 24


def _masked(rel, causal, sliding_window):
    """Which keys a query token does not see, from rel = t - p ([rows, L]): provider.h's masks."""
    masked = torch.zeros_like(rel, dtype=torch.bool)
    if causal:
        masked |= rel > 0
    if sliding_window > 0:
        masked |= rel <= -sliding_window
    return masked


def _attend_ragged(out, query, block_tables, block_size, scale, k_scale, v_scale, num_kv_heads, gather_k, gather_v,
                   query_start_loc, seq_lens, causal, sliding_window, softcap, sinks, alibi_slopes, masked_fn=_masked):
    """provider.h's ragged attention, float32, one sequence at a time, from the definition:
    sequence s owns query rows query_start_loc[s] .. query_start_loc[s+1] (q_s of them) and
    L_s = seq_lens[s] tokens; its query token j sits at p = L_s - q_s + j and sees keys t < L_s with
    t <= p when causal and t > p - sliding_window when a window is set; score
    s = softcap * tanh(scale * q.k / softcap) (when softcap > 0) + alibi_slopes[h] * (t - p);
    softmax over the visible keys plus, with sinks, the logit sinks[h] in the denominator once.
    gather_k/gather_v(blk, off) -> [n, num_kv_heads, head_size] for physical blocks and offsets;
    masked_fn(rel, causal, sliding_window) -> the keys each row does not see (planted variants swap it)."""
    num_heads, head_size = query.shape[1], query.shape[2]
    group = num_heads // num_kv_heads  # query head h reads kv head h // group
    starts = query_start_loc.tolist()
    lens = seq_lens.tolist()
    dev = query.device
    slopes = alibi_slopes.float().reshape(1, num_kv_heads, group, 1) if alibi_slopes is not None else None
    sink = sinks.float().reshape(1, num_kv_heads, group, 1) if sinks is not None else None
    for s, L in enumerate(lens):
        q0, q1 = starts[s], starts[s + 1]
        n_q = q1 - q0
        if n_q <= 0:
            continue
        pos = torch.arange(L, device=dev)
        blk = block_tables[s].long()[torch.div(pos, block_size, rounding_mode="floor")]  # tables in kernel pages
        off = pos % block_size
        keys = gather_k(blk, off).float() * k_scale      # [L, num_kv_heads, head_size]
        values = gather_v(blk, off).float() * v_scale
        rows = max(1, _SCORE_ELEMENTS // max(1, num_heads * L))
        for r0 in range(0, n_q, rows):
            r1 = min(n_q, r0 + rows)
            q = query[q0 + r0:q0 + r1].float().reshape(r1 - r0, num_kv_heads, group, head_size)
            scores = torch.einsum("rkgd,nkd->rkgn", q, keys) * scale  # [rows, kv heads, group, L]
            if softcap > 0:
                scores = softcap * torch.tanh(scores / softcap)
            p = L - n_q + torch.arange(r0, r1, device=dev)  # the rows' positions
            rel = pos.view(1, L) - p.view(-1, 1)              # t - p, [rows, L]
            if slopes is not None:
                scores = scores + slopes * rel.view(r1 - r0, 1, 1, L).float()
            masked = masked_fn(rel, causal, sliding_window)
            scores = scores.masked_fill(masked.view(r1 - r0, 1, 1, L), float("-inf"))
            if sink is not None:  # one more logit in the denominator, carrying no value
                scores = torch.cat([scores, sink.expand(r1 - r0, -1, -1, 1)], dim=-1)
                probs = torch.softmax(scores, dim=-1)[..., :L]
            else:
                probs = torch.softmax(scores, dim=-1)
            o = torch.einsum("rkgn,nkd->rkgd", probs, values)
            out[q0 + r0:q0 + r1] = o.reshape(r1 - r0, num_heads, head_size).to(out.dtype)


def _ragged_args(query, context_lens, query_start_loc, seq_lens):
    """Decode values for arguments not given (a direct call): one query token per sequence."""
    if query_start_loc is None:
        query_start_loc = torch.arange(query.shape[0] + 1, dtype=torch.int32, device=query.device)
    return query_start_loc, context_lens if seq_lens is None else seq_lens


_RAGGED = dict(max_query_len=kvharness.ANY_QUERY_LEN,
               modifiers=("sliding_window", "sinks", "softcap", "alibi", "non_causal"))


@reader("torch_unified_attention_nhd", cache_format="flash", **_RAGGED,
        description="torch: ragged (varlen) paged attention over NHD K and V from query_start_loc/seq_lens, "
                    "causal or not, every score modifier, float32 accumulation")
def unified_attention_nhd(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale, k_scale,
                          v_scale, query_start_loc=None, seq_lens=None, causal=True, sliding_window=0, softcap=0.0,
                          sinks=None, alibi_slopes=None, **_):
    qsl, lens = _ragged_args(query, context_lens, query_start_loc, seq_lens)
    _attend_ragged(out, query, block_tables, block_size, scale, k_scale, v_scale, key_cache.shape[2],
                   lambda blk, off: key_cache[blk, off], lambda blk, off: value_cache[blk, off],
                   qsl, lens, causal, sliding_window, softcap, sinks, alibi_slopes)


@reader("torch_unified_attention_hnd", cache_format="hnd", **_RAGGED,
        description="torch: ragged (varlen) paged attention over HND K and V from query_start_loc/seq_lens, "
                    "causal or not, every score modifier, float32 accumulation")
def unified_attention_hnd(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale, k_scale,
                          v_scale, query_start_loc=None, seq_lens=None, causal=True, sliding_window=0, softcap=0.0,
                          sinks=None, alibi_slopes=None, **_):
    qsl, lens = _ragged_args(query, context_lens, query_start_loc, seq_lens)
    _attend_ragged(out, query, block_tables, block_size, scale, k_scale, v_scale, key_cache.shape[1],
                   lambda blk, off: key_cache[blk, :, off], lambda blk, off: value_cache[blk, :, off],
                   qsl, lens, causal, sliding_window, softcap, sinks, alibi_slopes)
