"""kvharness_torch: cache writers and decode readers in plain torch operations.

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
"""

import torch

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
