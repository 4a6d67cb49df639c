"""kvharness provider API: register Python callables as kernels the harness tests.

A provider module decorates plain functions::

    from kvharness import writer, reader

    @writer("my_reshape_and_cache_flash", cache_format="flash")
    def write(key, value, key_cache, value_cache, slot_mapping, block_size):
        ...  # write key/value into key_cache/value_cache in place

and is run with ``kvharness run CASES --provider python:MODULE``. Functions
are called with keyword arguments named as in include/kvharness/provider.h;
tensors are torch.Tensor views of the harness's guarded storage (zero-copy,
DLPack), on the case's device. The decorators register the kernel and return
the function unchanged, so tests can call it directly. The full contract is in
providers/python/README.md.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Callable, Optional, Sequence

__all__ = ["writer", "reader", "Kernel", "CACHE_FORMATS", "DTYPES", "CACHE_DTYPES", "KV_SCALES"]

#: Cache format names (case files, reports) -> kvh_cache_format.
CACHE_FORMATS = {"flash": 0, "pa_v1": 1, "shuffle": 2, "hnd": 3}
#: K/V/query dtype names -> kvh_dtype.
DTYPES = {"fp16": 1, "bf16": 2}
#: KV-cache element type names -> kvh_dtype. An fp8 cache reaches the kernel as a
#: uint8 tensor (a torch float8 view where torch has the dtype) with the keyword
#: kv_cache_dtype naming the format.
CACHE_DTYPES = {"fp16": 1, "bf16": 2, "fp8_e4m3fn": 6, "fp8_e4m3fnuz": 7}
#: fp8 scale granularity names -> kvh_scale_granularity (k_scales/v_scales shapes in provider.h).
KV_SCALES = {"none": 0, "tensor": 1, "head": 2, "block": 3, "token": 4}
#: Score modifiers a reader may declare (kvh_modifier bits of provider.h).
MODIFIERS = {"sliding_window": 1, "sinks": 2, "softcap": 4, "alibi": 8}

ROLE_WRITER, ROLE_READER = 1, 2


@dataclasses.dataclass
class Kernel:
    """One registered kernel (what the bridge hands to the harness)."""

    name: str
    role: int
    cache_format: str
    fn: Callable
    module: str
    fixture: bool = False
    description: str = ""
    dtypes: Sequence[str] = ("fp16", "bf16")
    head_sizes: Optional[Sequence[int]] = None  # None: any multiple of 8 up to 256
    block_sizes: Optional[Sequence[int]] = None  # None: any
    max_gqa_ratio: int = 0  # 0: any
    cache_dtypes: Sequence[str] = ()  # (): the K/V dtype only
    kv_scales: Sequence[str] = ("none",)
    modifiers: Sequence[str] = ()  # score modifiers the reader applies (MODIFIERS keys)
    workspace_bytes: Optional[Callable[..., int]] = None


#: Every kernel any imported module registered, in definition order.
_KERNELS: list = []


def _int_tuple(value, what: str, name: str):
    if value is None:
        return None
    try:
        out = tuple(int(v) for v in value)
    except TypeError:
        raise TypeError(f"kernel {name!r}: {what} must be None or a sequence of ints, got {value!r}") from None
    if not out or any(v <= 0 for v in out):
        raise ValueError(f"kernel {name!r}: {what} must be None or positive ints, got {value!r}")
    return out


def _register(fn, **fields):
    name = fields["name"]
    if not isinstance(name, str) or not name:
        raise ValueError(f"a kernel name must be a non-empty string, got {name!r}")
    if fields["cache_format"] not in CACHE_FORMATS:
        raise ValueError(f"kernel {name!r}: cache_format {fields['cache_format']!r}; expected one of {sorted(CACHE_FORMATS)}")
    bad = [d for d in fields["dtypes"] if d not in DTYPES]
    if bad or not fields["dtypes"]:
        raise ValueError(f"kernel {name!r}: dtypes {tuple(fields['dtypes'])!r}; expected a non-empty subset of {sorted(DTYPES)}")
    bad = [d for d in fields.get("cache_dtypes", ()) if d not in CACHE_DTYPES]
    if bad:
        raise ValueError(f"kernel {name!r}: cache_dtypes {tuple(fields['cache_dtypes'])!r}; expected a subset of {sorted(CACHE_DTYPES)}")
    bad = [g for g in fields.get("kv_scales", ("none",)) if g not in KV_SCALES]
    if bad:
        raise ValueError(f"kernel {name!r}: kv_scales {tuple(fields['kv_scales'])!r}; expected a subset of {sorted(KV_SCALES)}")
    if not callable(fn):
        raise TypeError(f"kernel {name!r}: the decorated object is not callable")
    bad = [m for m in fields.get("modifiers", ()) if m not in MODIFIERS]
    if bad or isinstance(fields.get("modifiers", ()), str):
        raise ValueError(f"kernel {name!r}: modifiers {fields.get('modifiers')!r}; expected a sequence of {sorted(MODIFIERS)}")
    if int(fields.get("max_gqa_ratio", 0)) < 0:
        raise ValueError(f"kernel {name!r}: max_gqa_ratio must be >= 0")
    fields["head_sizes"] = _int_tuple(fields.get("head_sizes"), "head_sizes", name)
    fields["block_sizes"] = _int_tuple(fields.get("block_sizes"), "block_sizes", name)
    _KERNELS.append(Kernel(fn=fn, module=_registering_module(), **fields))
    return fn


def _registering_module() -> str:
    """The module whose code applied the decorator (not fn.__module__: a module
    may register functions defined elsewhere under its own names)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    return frame.f_globals.get("__name__", "?") if frame is not None else "?"


def writer(name: str, cache_format: str, fixture: bool = False, description: str = "",
           dtypes: Sequence[str] = ("fp16", "bf16"), head_sizes=None, block_sizes=None,
           cache_dtypes: Sequence[str] = (), kv_scales: Sequence[str] = ("none",)):
    """Registers a cache writer: fn(key, value, key_cache, value_cache, slot_mapping, block_size),
    plus kv_cache_dtype, kv_scales, k_scales, v_scales on fp8 cases (a function gets only the ones it names).

    cache_format: "flash" (NHD), "pa_v1", "shuffle" or "hnd". fixture=True marks a
    known-bad kernel kept on purpose (its failures are expected). cache_dtypes
    (() = the K/V dtype only) and kv_scales declare fp8 support (CACHE_DTYPES,
    KV_SCALES). Raises ValueError/TypeError at import for a bad declaration.
    """
    def deco(fn):
        return _register(fn, name=name, role=ROLE_WRITER, cache_format=cache_format, fixture=bool(fixture),
                         description=description, dtypes=tuple(dtypes), head_sizes=head_sizes,
                         block_sizes=block_sizes, cache_dtypes=tuple(cache_dtypes), kv_scales=tuple(kv_scales))
    return deco


def reader(name: str, cache_format: str, head_sizes=None, block_sizes=None,
           dtypes: Sequence[str] = ("fp16", "bf16"), max_gqa_ratio: int = 0, fixture: bool = False,
           description: str = "", workspace_bytes: Optional[Callable[..., int]] = None,
           modifiers: Sequence[str] = (), cache_dtypes: Sequence[str] = (), kv_scales: Sequence[str] = ("none",)):
    """Registers a decode-attention reader: fn(out, query, key_cache, value_cache, block_tables,
    context_lens, block_size, max_context_len, scale, k_scale, v_scale, partition_size, workspace),
    plus cache_block_size in kernel_pages cases only.

    cache_format: "flash" (NHD: key_cache and value_cache [num_blocks, block_size,
    num_kv_heads, head_size]), "hnd" ([num_blocks, num_kv_heads, block_size,
    head_size]), "pa_v1" or "shuffle". cache_block_size, when passed, is the
    cache manager's block, holding several of the kernel's pages (block_tables
    are in kernel pages of block_size tokens).

    head_sizes/block_sizes (None: any), dtypes and max_gqa_ratio (0: any) are
    the declared capabilities: a case outside them is UNSUPPORTED, or misroute
    when a router picked the kernel. workspace_bytes, when given, is called with
    the same keyword arguments minus out and workspace and returns the bytes
    of device workspace the kernel needs (passed as `workspace`, a uint8 tensor).
    cache_dtypes/kv_scales declare fp8 caches as for writer(); on an fp8 case such a reader also
    gets kv_cache_dtype, kv_scales, k_scales and v_scales (f32 tensors, None under "none").
    modifiers: the score modifiers the reader applies, a subset of "sliding_window",
    "sinks", "softcap", "alibi" (provider.h gives their exact semantics); a case
    using another one is UNSUPPORTED (misroute when routed). The reader receives
    sliding_window (int, 0 = off), softcap (float, 0 = off), head_offset (int),
    sinks and alibi_slopes (float32 [num_heads] tensors, or None = off) when it
    declares any modifier and its signature names them (a keyword a signature
    lacks is never passed; a reader that declares none never gets them).
    """
    def deco(fn):
        if workspace_bytes is not None and not callable(workspace_bytes):
            raise TypeError(f"kernel {name!r}: workspace_bytes must be None or callable")
        return _register(fn, name=name, role=ROLE_READER, cache_format=cache_format, fixture=bool(fixture),
                         description=description, dtypes=tuple(dtypes), head_sizes=head_sizes,
                         block_sizes=block_sizes, max_gqa_ratio=int(max_gqa_ratio),
                         workspace_bytes=workspace_bytes, cache_dtypes=tuple(cache_dtypes),
                         kv_scales=tuple(kv_scales), modifiers=tuple(modifiers))
    return deco
