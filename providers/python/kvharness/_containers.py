"""Allocation-shaped containers: the 4-D cache tensor a stack allocates, beside the harness's views.

A stack that keeps the shuffle format allocates K and V as NHD-shaped tensors and reinterprets them
(vLLM's ROCm AITER FA backend: `key_cache, value_cache = kv_cache.unbind(0)`, each
[num_blocks, block_size, num_kv_heads, head_size], then `.view_as` the 5-D shuffle shape inside
reshape_and_cache_shuffle_triton; checked at vLLM 002d0eb6). A provider that names
`key_cache_container`/`value_cache_container` gets that tensor over the same storage as the views.

Per format (what the stacks pass):
  shuffle  K [num_blocks, num_kv_heads, head_size/x, block_size, x] and
           V [num_blocks, num_kv_heads, block_size/x, head_size, x] views;
           container [num_blocks, block_size, num_kv_heads, head_size] (vLLM ROCM_AITER_FA)
  flash, hnd, pa_v1: the stacks pass the views themselves (vLLM: kv_cache.unbind/split, then the
           views; PagedAttention.split_kv_cache for pa_v1): no container (None)
The container exists when each view is dense inside a block (any block stride and storage offset:
separate, kv_first, interleaved, padded, offset, large, kernel_pages, degenerate size-1 strides);
head_interleaved views are not, and get None (container_problem says why).
"""

from __future__ import annotations

from typing import Optional, Tuple

from kvharness import CONTAINER_ARGS  # noqa: F401 -- the keywords a provider function may name


def _dense_strides(shape) -> list:
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= n
    return out[::-1]


def container_problem(view, cache_format: str) -> Optional[str]:
    """Why `view` (a K or V cache view of `cache_format`) has no allocation-shaped container, or None."""
    if cache_format != "shuffle":
        return f"the {cache_format} format has no allocation-shaped container (stacks pass its views)"
    if view.dim() != 5:
        return f"a shuffle cache view has 5 dims, got {tuple(view.shape)}"
    inner, strides = list(view.shape[1:]), list(view.stride()[1:])
    want = _dense_strides(inner)
    bad = [i + 1 for i, (n, s, w) in enumerate(zip(inner, strides, want)) if n != 1 and s != w]
    if bad:
        return (f"view {tuple(view.shape)}:{tuple(view.stride())} is not dense inside a block (dim {bad[0]} "
                f"stride {view.stride()[bad[0]]}, dense {want[bad[0] - 1]}), so no "
                "[num_blocks, block_size, num_kv_heads, head_size] tensor covers the same elements")
    return None


def allocation_container(view, cache_format: str, which: str):
    """The NHD-shaped container [num_blocks, block_size, num_kv_heads, head_size] over `view`'s storage
    (which: "key" or "value"), or None when container_problem(view) is not None."""
    if container_problem(view, cache_format) is not None:
        return None
    nb, nkv = view.shape[0], view.shape[1]
    if which == "key":  # [nb, nkv, hs/x, bs, x]
        hs, bs = view.shape[2] * view.shape[4], view.shape[3]
    else:  # [nb, nkv, bs/x, hs, x]
        hs, bs = view.shape[3], view.shape[2] * view.shape[4]
    return view.as_strided((nb, bs, nkv, hs), (view.stride(0), nkv * hs, hs, 1), view.storage_offset())


def containers(cache_format: str, args: dict, named) -> dict:
    """{name: container} for the container keywords in `named` (a function's parameter names)."""
    out = {}
    for name, which in zip(CONTAINER_ARGS, ("key", "value")):
        view = args.get(which + "_cache")
        if name in named and view is not None:
            out[name] = allocation_container(view, cache_format, which)
    return out
