"""Probe readers for bridge_abi_test.cpp (CTest python_bridge_abi_ragged): they assert, in Python,
what the bridge handed over from a kvh_attention_args that bridge_abi_test.cpp filled (or left
short of the kvharness 0.4 fields), and write marks into the harness's buffers that the C++ side
checks. Never a real provider."""

import torch

import kvharness
from kvharness import reader

#: What bridge_abi_test.cpp puts in a ragged call: 3 sequences, q = 2, 1, 4 of L = 5, 1, 9 tokens.
RAGGED = dict(query_start_loc=[0, 2, 3, 7], seq_lens=[5, 1, 9], max_query_len=4, num_query_tokens=7, causal=False)


def _check(what, got, want):
    if got != want:
        raise AssertionError(f"{what}: got {got!r}, want {want!r}")


@reader("probe_ragged", cache_format="flash", max_query_len=64, modifiers=("non_causal", "sinks"))
def ragged(out, query, context_lens, query_start_loc, seq_lens, max_query_len, num_query_tokens, causal,
           k_scale_tensor, v_scale_tensor, k_scale, sinks):
    """Expects the call bridge_abi_test.cpp describes by out[0, 0, 0]: 1 ragged, 0 decode (an older
    or unfilled struct). Writes 100 + num_query_tokens into out[-1, -1, -1]."""
    ragged_call = float(out[0, 0, 0]) == 1.0
    want = RAGGED if ragged_call else dict(query_start_loc=list(range(context_lens.shape[0] + 1)),
                                            seq_lens=context_lens.tolist(), max_query_len=1,
                                            num_query_tokens=query.shape[0], causal=True)
    got = dict(query_start_loc=query_start_loc.tolist(), seq_lens=seq_lens.tolist(), max_query_len=max_query_len,
               num_query_tokens=num_query_tokens, causal=causal)
    _check("ragged arguments", got, want)
    _check("causal type", type(causal), bool)
    _check("query_start_loc dtype", query_start_loc.dtype, torch.int32)
    _check("k_scale_tensor", k_scale_tensor.tolist(), [k_scale])
    _check("v_scale_tensor", (v_scale_tensor.dtype, tuple(v_scale_tensor.shape)), (torch.float32, (1,)))
    _check("sinks", sinks.tolist(), [0.5] * query.shape[1])
    out[-1, -1, -1] = 100 + num_query_tokens


def _fixed(out, query, key_cache, value_cache, block_tables, context_lens, block_size, max_context_len, scale,
           k_scale, v_scale, partition_size, workspace):
    out[-1, -1, -1] = 42


@reader("probe_old_forwarder", cache_format="flash")
def old_forwarder(**kwargs):
    """A reader written before kvharness 0.4: forwards **kwargs to a fixed argument list."""
    _fixed(**kwargs)


def _specs(query, num_query_tokens, max_query_len, **_):
    n, h, d = query.shape
    return [("segm_max", (num_query_tokens, h, 3), torch.float32), ("segm_output", (n, h, 3, d), "float16"),
            ("seq_idx", max_query_len, "int32")]


@reader("probe_typed_workspaces", cache_format="flash", max_query_len=64, modifiers=("non_causal",),
        workspaces=_specs)
def typed(out, workspaces, seq_idx, num_query_tokens, max_query_len):
    got = {n: (str(t.dtype), tuple(t.shape)) for n, t in workspaces.items()}
    _check("workspaces", got, {"segm_max": ("torch.float32", (num_query_tokens, out.shape[1], 3)),
                               "segm_output": ("torch.float16", (out.shape[0], out.shape[1], 3, out.shape[2])),
                               "seq_idx": ("torch.int32", (max_query_len,))})
    _check("seq_idx by name", seq_idx.data_ptr(), workspaces["seq_idx"].data_ptr())
    if not torch.isnan(workspaces["segm_max"]).all():
        raise AssertionError("segm_max: not the NaN the caller filled it with")
    workspaces["segm_max"].fill_(-1.0)   # in place: the C++ side reads these back
    seq_idx.copy_(torch.arange(max_query_len, dtype=torch.int32))


def _bad(query, **_):
    return [("a", (query.shape[0],), "float32"), ("b", (2, 3), "float8_e4m3fn")]


@reader("probe_bad_workspaces", cache_format="flash", workspaces=_bad)
def bad(**_):
    raise AssertionError("never called")


@reader("probe_many_workspaces", cache_format="flash",
        workspaces=lambda **_: [("w%d" % i, 1, "int64") for i in range(9)])
def many(**_):
    raise AssertionError("never called")


# kvharness 0.5: call-time refusals reach the C side as KVH_UNSUPPORTED with the reason as last_error.
@reader("probe_refuses", cache_format="flash")
def refuses(query, **_):
    raise kvharness.Unsupported(f"head_size {query.shape[2]}: planted refusal")


def _refuse_size(**_):
    raise kvharness.Unsupported("no split-K plan for this batch")


@reader("probe_workspace_refuses", cache_format="flash", workspace_bytes=_refuse_size)
def workspace_refuses(**_):
    raise AssertionError("never called: its sizing refused")


@reader("probe_workspaces_refuse", cache_format="flash", workspaces=_refuse_size)
def workspaces_refuse(**_):
    raise AssertionError("never called: its sizing refused")


assert kvharness.ANY_QUERY_LEN == 2 ** 31 - 1
