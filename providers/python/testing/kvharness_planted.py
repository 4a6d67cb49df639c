"""PLANTED BUGS for the bridge's own tests (never a real provider): each one
shows that a failure in Python reaches the report as it should. Lines marked
`# PLANTED:` are found by the tests to check the reported file:line."""

import torch

import kvharness
from kvharness import reader, writer

import kvharness_torch


@writer("planted_torch_writes_past_page", cache_format="flash", fixture=True,
        description="PLANTED: correct NHD writes, plus one element just past the V page of each written block "
                    "(the page padding of a padded cache)")
def writes_past_page(key, value, key_cache, value_cache, slot_mapping, block_size):
    kvharness_torch.reshape_and_cache_flash(key, value, key_cache, value_cache, slot_mapping, block_size)
    page = 1 + sum((s - 1) * st for s, st in zip(value_cache.shape[1:], value_cache.stride()[1:]))
    for b in torch.unique(slot_mapping[slot_mapping >= 0] // block_size).tolist():
        if b + 1 < value_cache.shape[0]:  # torch's storage ends where the view's last element does
            # Through the view's own storage: in place only if the bridge copied nothing.
            value_cache.as_strided((1,), (1,), b * value_cache.stride(0) + page).fill_(1.0)  # PLANTED: past the page


@writer("planted_torch_raises", cache_format="flash", fixture=True, description="PLANTED: raises ValueError")
def raises(key, value, key_cache, value_cache, slot_mapping, block_size):
    raise ValueError(f"planted failure at {key.shape[0]} tokens")  # PLANTED: writer raises


def _check_lengths(context_lens):
    if int(context_lens.max()) > 0:
        raise RuntimeError("planted reader failure")  # PLANTED: reader raises


@reader("planted_torch_reader_raises", cache_format="pa_v1", fixture=True,
        description="PLANTED: raises RuntimeError in a helper")
def reader_raises(out, query, key_cache, value_cache, block_tables, context_lens, block_size, max_context_len,
                  scale, k_scale, v_scale, partition_size, workspace):
    _check_lengths(context_lens)


@reader("planted_torch_hd128_only", cache_format="pa_v1", head_sizes=(128,), block_sizes=(16,), dtypes=("fp16",),
        description="the torch pa_v1 reader, declaring head_size 128, block_size 16 and fp16 only")
def hd128_only(**kwargs):
    kvharness_torch.paged_attention_v1(**kwargs)


def _workspace_raises(block_size, **kwargs):
    raise OverflowError(f"planted workspace failure at block_size {block_size}")  # PLANTED: workspace raises


@reader("planted_torch_workspace_raises", cache_format="pa_v1", fixture=True, workspace_bytes=_workspace_raises,
        description="PLANTED: its workspace_bytes raises")
def workspace_raises(**kwargs):
    kvharness_torch.paged_attention_v1(**kwargs)


@reader("torch_checks_workspace", cache_format="pa_v1",
        workspace_bytes=lambda query, max_context_len, **kw: query.shape[0] * query.shape[1] * max_context_len * 4,
        description="not a bug: asserts it got a uint8 workspace of the size it asked for, fills it, then reads")
def checks_workspace(workspace, query, max_context_len, **kwargs):
    want = query.shape[0] * query.shape[1] * max_context_len * 4
    if workspace is None or workspace.dtype != torch.uint8 or workspace.shape != (want,):
        raise AssertionError(f"workspace {None if workspace is None else (workspace.dtype, tuple(workspace.shape))}, "
                             f"want uint8 ({want},)")
    workspace.fill_(0)  # in place on the harness's workspace buffer
    kvharness_torch.paged_attention_v1(query=query, max_context_len=max_context_len, workspace=workspace, **kwargs)


def _masked_causal_off_by_one(rel, causal, sliding_window):
    masked = kvharness_torch._masked(rel, False, sliding_window)
    if causal:
        masked |= rel > 1  # PLANTED: causal mask off by one (each query token sees the next one)
    return masked


@reader("planted_torch_ragged_causal_off_by_one", cache_format="flash", fixture=True,
        max_query_len=kvharness.ANY_QUERY_LEN, modifiers=("sliding_window", "sinks", "softcap", "alibi", "non_causal"),
        description="PLANTED: torch_unified_attention_nhd whose causal mask lets each query token see the next "
                    "token of its chunk (right on decode, wrong on every causal chunk of 2+ tokens)")
def ragged_causal_off_by_one(out, query, key_cache, value_cache, block_tables, context_lens, block_size, scale,
                             k_scale, v_scale, query_start_loc=None, seq_lens=None, causal=True, sliding_window=0,
                             softcap=0.0, sinks=None, alibi_slopes=None, **_):
    qsl, lens = kvharness_torch._ragged_args(query, context_lens, query_start_loc, seq_lens)
    kvharness_torch._attend_ragged(out, query, block_tables, block_size, scale, k_scale, v_scale, key_cache.shape[2],
                                   lambda blk, off: key_cache[blk, off], lambda blk, off: value_cache[blk, off],
                                   qsl, lens, causal, sliding_window, softcap, sinks, alibi_slopes,
                                   masked_fn=_masked_causal_off_by_one)
