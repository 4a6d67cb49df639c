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

Allocation-shaped containers: a function that names `key_cache_container` /
`value_cache_container` also gets the cache as the stack allocated it, over the
same storage as the views (kvharness/_containers.py). What the stacks pass, per format:
  shuffle   [num_blocks, block_size, num_kv_heads, head_size], which the stack's
            launcher reinterprets as the 5-D views (vLLM ROCM_AITER_FA: kv_cache.unbind(0));
            None for a layout with no such tensor (head_interleaved)
  flash, hnd, pa_v1   None: the stacks pass the views themselves.
Stack adapters (kvharness.stacks.vllm, .sglang) and the source-checkout loader are in
kvharness/stacks/ (providers/python/README.md "Stacks").
"""

from __future__ import annotations

import dataclasses
import re
import sys
from typing import Callable, Optional, Sequence

__all__ = ["writer", "reader", "router", "Unsupported", "Kernel", "CACHE_FORMATS", "DTYPES", "CACHE_DTYPES", "KV_SCALES", "MODIFIERS",
           "WORKSPACE_DTYPES", "ANY_QUERY_LEN", "READER_ARGS"]

#: Cache format names (case files, reports) -> kvh_cache_format.
CACHE_FORMATS = {"flash": 0, "pa_v1": 1, "shuffle": 2, "hnd": 3,
                 "mla": 4}  # kvharness 0.6: MLA's latent cache (provider.h KVH_CACHE_MLA)
#: K/V/query dtype names -> kvh_dtype.
DTYPES = {"fp16": 1, "bf16": 2}
#: KV-cache element type names -> kvh_dtype. An fp8 cache reaches the kernel as a
#: uint8 tensor (a torch float8 view where torch has the dtype) with the keyword
#: kv_cache_dtype naming the format; an int8 cache (kvharness 0.6) as a torch.int8 tensor.
CACHE_DTYPES = {"fp16": 1, "bf16": 2, "fp8_e4m3fn": 6, "fp8_e4m3fnuz": 7, "int8": 8}
#: fp8/int8 scale granularity names -> kvh_scale_granularity (k_scales/v_scales shapes in provider.h).
KV_SCALES = {"none": 0, "tensor": 1, "head": 2, "block": 3, "token": 4, "slot": 5}
#: Score modifiers a reader may declare (kvh_modifier bits of provider.h).
MODIFIERS = {"sliding_window": 1, "sinks": 2, "softcap": 4, "alibi": 8, "non_causal": 16}
#: The score modifiers proper (what a reader's sliding_window/softcap/head_offset/sinks/alibi_slopes serve).
SCORE_MODIFIERS = ("sliding_window", "sinks", "softcap", "alibi")
#: Element types of typed workspaces (kvh_workspace_spec.dtype): names -> kvh_dtype. A declaration
#: may also give the torch dtype (torch.float32) or its name with the "torch." prefix.
WORKSPACE_DTYPES = {"float16": 1, "half": 1, "fp16": 1, "bfloat16": 2, "bf16": 2, "int64": 3, "long": 3,
                    "float32": 4, "float": 4, "fp32": 4, "int32": 5, "int": 5}
#: max_query_len for a reader with no limit on the query tokens per sequence (INT32_MAX).
ANY_QUERY_LEN = 2 ** 31 - 1
#: kvh_workspace_spec limits (provider.h): KVH_MAX_WORKSPACES entries, KVH_MAX_DIMS dims, names of
#: at most 31 bytes (UTF-8; char name[32] holds the NUL), each dim at most 2^40 elements.
MAX_WORKSPACES, MAX_DIMS, MAX_WORKSPACE_NAME, MAX_WORKSPACE_DIM = 8, 6, 31, 1 << 40
#: The keyword arguments a reader may get (provider.h's kvh_attention_args, by its field names).
#: A typed workspace may not take one of these names (workspaces are also passed by name).
READER_ARGS = frozenset((
    "out", "query", "key_cache", "value_cache", "block_tables", "context_lens", "block_size", "max_context_len",
    "scale", "k_scale", "v_scale", "partition_size", "workspace", "cache_block_size",
    "sliding_window", "softcap", "head_offset", "sinks", "alibi_slopes",
    "kv_cache_dtype", "kv_scales", "k_scales", "v_scales",
    "query_start_loc", "seq_lens", "max_query_len", "num_query_tokens", "causal", "k_scale_tensor",
    "v_scale_tensor", "workspaces"))
#: The kvharness 0.4 (ragged query) arguments: a reader gets them when it names them, or takes
#: **kwargs and declares max_query_len > 1, "non_causal" or typed workspaces.
RAGGED_ARGS = ("query_start_loc", "seq_lens", "max_query_len", "num_query_tokens", "causal", "k_scale_tensor",
               "v_scale_tensor")

#: Keywords a function may name to get the allocation-shaped cache containers (kvharness/_containers.py);
#: passed only to functions that name them, never through **kwargs.
CONTAINER_ARGS = ("key_cache_container", "value_cache_container")

ROLE_WRITER, ROLE_READER, ROLE_ROUTER = 1, 2, 3
#: The keyword arguments a router gets (provider.h's kvh_route_args; names for dtypes, formats and
#: granularities as case files spell them; cache_format None: the router picks the cache format).
ROUTE_ARGS = ("num_seqs", "num_heads", "num_kv_heads", "head_size", "block_size", "num_query_tokens",
              "max_query_len", "max_context_len", "compute_units", "dtype", "cache_dtype", "kv_scales",
              "cache_format", "high_precision", "causal", "target",
              "kv_lora_rank")  # kvharness 0.6: > 0 for an MLA step


class Unsupported(Exception):
    """Raised by a kernel (or its workspace_bytes / workspaces function) to decline a case at call
    time, for a limit its declared capabilities cannot express (kvharness 0.5; provider.h
    KVH_UNSUPPORTED)::

        if head_size & (head_size - 1):
            raise kvharness.Unsupported(f"head_size {head_size} is not a power of two")

    The case is UNSUPPORTED with the reason "NAME refused the case at call time: REASON", or a
    misroute when a router picked the kernel, as a case outside the declaration is. Raised anywhere
    below the kernel (inside the stack it calls) it counts the same."""

    def __init__(self, reason: str = ""):
        super().__init__(reason)
        self.reason = str(reason)


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
    max_query_len: int = 1  # largest query tokens per sequence; 0 or 1: decode only
    # Typed workspaces: a callable (keyword arguments as workspace_bytes gets) returning
    # [(name, shape, dtype), ...], or such a list; None: none (see reader()).
    workspaces: Optional[object] = None
    # workspaces validated at registration when it is a list: [(name, kvh_dtype, shape), ...]
    workspace_specs: Optional[list] = None
    # routers: the library's kernel names -> the harness readers they run as (None: names pass as they are)
    kernel_names: Optional[dict] = None
    # issue 23 (D): declared launch configurations, [(name, params "k=v,...", {keyword: value}), ...]
    launch_configs: Optional[list] = None


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
    mql = fields.get("max_query_len", 1)
    if isinstance(mql, bool) or not isinstance(mql, int) or not 0 <= mql <= ANY_QUERY_LEN:
        raise ValueError(f"kernel {name!r}: max_query_len {mql!r}; expected an int in 0..{ANY_QUERY_LEN} "
                         "(0 or 1: decode only; kvharness.ANY_QUERY_LEN: no limit)")
    ws = fields.get("workspaces")
    if ws is not None:
        if fields.get("workspace_bytes") is not None:
            raise ValueError(f"kernel {name!r}: declare workspace_bytes or workspaces, not both")
        if not callable(ws):
            fields["workspace_specs"] = workspace_specs(name, ws)
    fields["launch_configs"] = launch_configs(name, fields.get("launch_configs"), fn,
                                              READER_ARGS if fields["role"] == ROLE_READER else WRITER_ARGS)
    fields["head_sizes"] = _int_tuple(fields.get("head_sizes"), "head_sizes", name)
    fields["block_sizes"] = _int_tuple(fields.get("block_sizes"), "block_sizes", name)
    _KERNELS.append(Kernel(fn=fn, module=_registering_module(), **fields))
    return fn


def _dtype_code(dtype):
    """kvh_dtype of a workspace dtype (a WORKSPACE_DTYPES name, "torch.NAME" or a torch dtype), else None."""
    text = dtype if isinstance(dtype, str) else str(dtype) if type(dtype).__name__ == "dtype" else None
    if text is None:
        return None
    return WORKSPACE_DTYPES.get(text[len("torch."):] if text.startswith("torch.") else text)


def workspace_specs(kernel: str, declared) -> list:
    """Checks a typed workspace declaration of reader `kernel`: a list of (name, shape, dtype)
    (shape an int or a sequence of ints). Returns [(name, kvh_dtype, shape tuple), ...]; raises
    ValueError/TypeError naming the reader and the entry for anything kvh_workspace_spec cannot
    carry (provider.h): more than 8 entries, a name that is not a non-empty str of at most 31
    UTF-8 bytes, repeated, or one of READER_ARGS, 0 or more than 6 dims, a negative dim (or one
    over 2^40), a dtype that is not float16, bfloat16, float32, int32 or int64."""
    where = f"reader {kernel!r}: workspaces"
    if isinstance(declared, (str, bytes, dict)) or not isinstance(declared, (list, tuple)):
        raise TypeError(f"{where}: expected a list of (name, shape, dtype), got {type(declared).__name__}")
    if len(declared) > MAX_WORKSPACES:
        raise ValueError(f"{where}: {len(declared)} entries, at most {MAX_WORKSPACES} (KVH_MAX_WORKSPACES)")
    out, seen = [], set()
    for i, entry in enumerate(declared):
        at = f"{where} entry {i}"
        if not isinstance(entry, (list, tuple)) or len(entry) != 3:
            raise TypeError(f"{at}: {entry!r}; expected a (name, shape, dtype) tuple")
        wname, shape, dtype = entry
        if not isinstance(wname, str) or not wname:
            raise TypeError(f"{at}: name {wname!r}; expected a non-empty str")
        at = f"{at} ({wname!r})"
        if "\0" in wname:
            raise ValueError(f"{at}: the name contains a NUL character")
        if len(wname.encode("utf-8")) > MAX_WORKSPACE_NAME:
            raise ValueError(f"{at}: name of {len(wname.encode('utf-8'))} bytes; at most {MAX_WORKSPACE_NAME} "
                             "(kvh_workspace_spec.name holds 32 with the NUL)")
        if wname in seen:
            raise ValueError(f"{at}: the name is used twice")
        if wname in READER_ARGS:
            raise ValueError(f"{at}: the name is a reader argument; workspaces are also passed by name")
        seen.add(wname)
        dims = (shape,) if isinstance(shape, int) else shape
        try:
            dims = tuple(dims)
        except TypeError:
            raise TypeError(f"{at}: shape {shape!r}; expected an int or a sequence of ints") from None
        if any(isinstance(n, bool) or not hasattr(n, "__index__") for n in dims):
            raise TypeError(f"{at}: shape {shape!r}; expected ints")
        dims = tuple(int(n.__index__()) for n in dims)
        if not 1 <= len(dims) <= MAX_DIMS:
            raise ValueError(f"{at}: shape {dims} has {len(dims)} dims; expected 1..{MAX_DIMS}")
        if any(not 0 <= n <= MAX_WORKSPACE_DIM for n in dims):
            raise ValueError(f"{at}: shape {dims}; every dim must be in 0..2^40 (no negative dims)")
        code = _dtype_code(dtype)
        if code is None:
            raise ValueError(f"{at}: dtype {dtype!r}; expected float16, bfloat16, float32, int32 or int64 "
                             "(a torch dtype or its name)")
        out.append((wname, code, dims))
    return out


# ---- issue 23 (D): launch configurations (provider.h kvh_launch_config) ----
#: The keyword arguments a writer may get (provider.h's kvh_write_args, by its field names).
WRITER_ARGS = frozenset(("key", "value", "key_cache", "value_cache", "slot_mapping", "block_size",
                         "kv_cache_dtype", "kv_scales", "k_scales", "v_scales"))
_CONFIG_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")
_CONFIG_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def launch_configs(kernel: str, configs, fn=None, reserved=frozenset()) -> Optional[list]:
    """Checks the launch configurations `configs` of `kernel`: None, or a non-empty list of dicts
    of keyword arguments (int, float, bool or str values; a str without ','), each optionally
    naming itself with the key "name" (1..64 characters of [A-Za-z0-9_.-]; default: its keys and
    values run together, "num_warps2_num_stages1"). Returns [(name, "key=value,...", kwargs), ...]
    or None; raises ValueError/TypeError naming the kernel and the entry for a repeated name, a
    keyword that is not an identifier, is one of the harness's own arguments (`reserved`) or that
    fn does not accept."""
    if configs is None:
        return None
    where = f"kernel {kernel!r}: configs"
    if isinstance(configs, (str, bytes, dict)) or not isinstance(configs, (list, tuple)) or not configs:
        raise TypeError(f"{where}: expected a non-empty list of dicts of keyword arguments, got {configs!r}")
    accepts = None
    if fn is not None:
        import inspect
        try:
            params = inspect.signature(fn).parameters.values()
            if not any(p.kind == p.VAR_KEYWORD for p in params):
                accepts = {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
        except (TypeError, ValueError):
            pass
    out, seen = [], set()
    for i, entry in enumerate(configs):
        if not isinstance(entry, dict) or not entry:
            raise TypeError(f"{where}[{i}]: {entry!r}; expected a non-empty dict of keyword arguments")
        kwargs = {k: v for k, v in entry.items() if k != "name"}
        for key, value in kwargs.items():
            at = f"{where}[{i}] {key!r}"
            if not isinstance(key, str) or not _CONFIG_KEY.match(key):
                raise ValueError(f"{at}: a keyword must be an identifier ([A-Za-z_][A-Za-z0-9_]*)")
            if key in reserved:
                raise ValueError(f"{at}: the harness passes that argument itself")
            if accepts is not None and key not in accepts:
                raise TypeError(f"{at}: the function does not take that keyword argument")
            if not isinstance(value, (int, float, str)) or (isinstance(value, str) and ("," in value or not value)):
                raise TypeError(f"{at}: value {value!r}; expected an int, float, bool or a non-empty str without ','")
        name = entry.get("name", "_".join(f"{k}{v}" for k, v in kwargs.items()))
        if not isinstance(name, str) or not _CONFIG_NAME.match(name):
            raise ValueError(f"{where}[{i}]: name {name!r}; expected 1..64 characters of [A-Za-z0-9_.-] "
                             "(give the configuration a \"name\")")
        if name in seen:
            raise ValueError(f"{where}[{i}]: the name {name!r} is used twice")
        seen.add(name)
        out.append((name, ",".join(f"{k}={v}" for k, v in kwargs.items()), kwargs))
    return out
# ---- end issue 23 (D) ----


def _registering_module() -> str:
    """The module whose code applied the decorator (not fn.__module__: a module
    may register functions defined elsewhere under its own names)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__") == __name__:
        frame = frame.f_back
    return frame.f_globals.get("__name__", "?") if frame is not None else "?"


def writer(name: str, cache_format: str, fixture: bool = False, description: str = "",
           dtypes: Sequence[str] = ("fp16", "bf16"), head_sizes=None, block_sizes=None,
           cache_dtypes: Sequence[str] = (), kv_scales: Sequence[str] = ("none",), configs=None):
    """Registers a cache writer: fn(key, value, key_cache, value_cache, slot_mapping, block_size),
    plus kv_cache_dtype, kv_scales, k_scales, v_scales on fp8 cases (a function gets only the ones it names).

    cache_format: "flash" (NHD), "pa_v1", "shuffle" or "hnd". fixture=True marks a
    known-bad kernel kept on purpose (its failures are expected). cache_dtypes
    (() = the K/V dtype only) and kv_scales declare fp8 support (CACHE_DTYPES,
    KV_SCALES). configs: launch configurations, as for reader(). Raises ValueError/TypeError at
    import for a bad declaration.
    """
    def deco(fn):
        return _register(fn, name=name, role=ROLE_WRITER, cache_format=cache_format, fixture=bool(fixture),
                         description=description, dtypes=tuple(dtypes), head_sizes=head_sizes,
                         block_sizes=block_sizes, cache_dtypes=tuple(cache_dtypes), kv_scales=tuple(kv_scales),
                         launch_configs=configs)
    return deco


def reader(name: str, cache_format: str, head_sizes=None, block_sizes=None,
           dtypes: Sequence[str] = ("fp16", "bf16"), max_gqa_ratio: int = 0, fixture: bool = False,
           description: str = "", workspace_bytes: Optional[Callable[..., int]] = None,
           modifiers: Sequence[str] = (), cache_dtypes: Sequence[str] = (), kv_scales: Sequence[str] = ("none",),
           max_query_len: int = 1, workspaces=None, configs=None):
    """Registers an attention reader: fn(out, query, key_cache, value_cache, block_tables,
    context_lens, block_size, max_context_len, scale, k_scale, v_scale, partition_size, workspace),
    plus cache_block_size in kernel_pages cases only, plus the ragged-query arguments below.

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

    Ragged queries (kvharness 0.4): max_query_len (default 1, decode only; ANY_QUERY_LEN: no
    limit) is the largest number of query tokens per sequence the reader takes, and modifier
    "non_causal" declares support for causal=False. query and out are then [num_query_tokens,
    num_heads, head_size], sequence s owning rows query_start_loc[s] .. query_start_loc[s+1]
    (provider.h gives the positions and masks). The reader gets, when its signature names them
    (or it takes **kwargs and declares max_query_len > 1, "non_causal" or workspaces):
    query_start_loc (int32 [num_seqs + 1], cu_seqlens_q), seq_lens (int32 [num_seqs]),
    max_query_len (int), num_query_tokens (int), causal (bool), k_scale_tensor and
    v_scale_tensor (float32 [1]). On a decode call they describe one token per sequence.

    workspaces: typed workspaces instead of workspace_bytes: a list of (name, shape, dtype), or a
    callable that gets the keyword arguments workspace_bytes would and returns one (shape an int
    or a sequence of ints, dtype a torch dtype or a WORKSPACE_DTYPES name such as "float32"; at
    most 8 entries, names of at most 31 bytes; a bad entry raises ValueError/TypeError naming
    the reader and the entry: at import for a list, as a CRASH launch_error for a callable). The
    harness allocates each one dense, NaN-filled (integers: 0x7FC0DEAD words), in guarded memory,
    and the reader gets them as `workspaces`, a dict name -> tensor, and each by its own name
    when its signature names that parameter.

    configs (issue 23, kvharness 0.7): the kernel's launch configurations, e.g.
    ``configs=[dict(num_warps=2), dict(name="w4s2", num_warps=4, num_stages=2)]``: each a dict of
    keyword arguments the function takes (a Triton kernel's num_warps, num_stages, block
    constants), named by its "name" key or by its keys and values run together ("num_warps2"). A
    case file's ``launch_configs = "all"`` (or a list of names) runs one case per configuration,
    and the call gets that configuration's keyword arguments on top of the harness's (its
    workspace_bytes / workspaces callable too, where it takes them); without it the function runs
    with its own defaults. Checked by launch_configs() at import.
    """
    def deco(fn):
        if workspace_bytes is not None and not callable(workspace_bytes):
            raise TypeError(f"kernel {name!r}: workspace_bytes must be None or callable")
        return _register(fn, name=name, role=ROLE_READER, cache_format=cache_format, fixture=bool(fixture),
                         description=description, dtypes=tuple(dtypes), head_sizes=head_sizes,
                         block_sizes=block_sizes, max_gqa_ratio=int(max_gqa_ratio),
                         workspace_bytes=workspace_bytes, cache_dtypes=tuple(cache_dtypes),
                         kv_scales=tuple(kv_scales), modifiers=tuple(modifiers), max_query_len=max_query_len,
                         workspaces=workspaces, launch_configs=configs)
    return deco


def router(name: str, description: str = "", kernel_names: Optional[dict] = None, fixture: bool = False):
    """Registers a router (kvharness 0.5): fn(**routing inputs) -> kernel name, or (name, reason).

    A router is a routing policy: case files name it as `routers = [NAME]` beside the built-in
    policies, `expect_routed_to` and route boundary cases are judged by it, and `kvharness run
    --replace-router BUILTIN=NAME` routes a built-in policy's cases with it. It gets the ROUTE_ARGS
    keywords its signature names (all of them with **kwargs): num_seqs, num_heads, num_kv_heads
    (per rank), head_size, block_size, num_query_tokens, max_query_len, max_context_len,
    compute_units, dtype ("fp16" | "bf16"), cache_dtype ("fp16", "bf16", "fp8_e4m3fn",
    "fp8_e4m3fnuz"), kv_scales ("none", "tensor", ...), cache_format (None: not fixed by the case),
    high_precision (0..2), causal (bool), target ("MI355X", or "" for the device / cus=N).

    kernel_names maps the names the router returns (the library's kernels) to the registered
    readers that run them, e.g. {"pa_fwd_asm": "pa_fwd_asm", "paged_attention_rocm":
    "paged_attention_rocm"}; a name it lacks passes unchanged, and a name no reader has is FAIL
    misroute naming it. An exception raised by fn is the case's CRASH (component router) with
    its message. fixture=True marks a known-misrouting router (its name must contain "fixture").
    Raises ValueError/TypeError at import for a bad declaration.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"a router name must be a non-empty string, got {name!r}")
    if kernel_names is not None and (not isinstance(kernel_names, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and k and v for k, v in kernel_names.items())):
        raise TypeError(f"router {name!r}: kernel_names must be a dict of non-empty str -> str, got {kernel_names!r}")

    def deco(fn):
        if not callable(fn):
            raise TypeError(f"router {name!r}: the decorated object is not callable")
        _KERNELS.append(Kernel(name=name, role=ROLE_ROUTER, cache_format="flash", fn=fn, module=_registering_module(),
                               fixture=bool(fixture), description=description,
                               kernel_names=dict(kernel_names) if kernel_names else None))
        return fn
    return deco
