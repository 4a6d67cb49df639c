"""Private: what libkvh_python (bridge.cpp) calls. Not an API for provider modules.

load(spec, device_type, device_id) -> (Handle | None, error text | None)
Handle.kernels: one dict per kernel for the C side; Handle.call(index, kwargs,
stream), Handle.workspace_bytes(index, kwargs), Handle.workspaces(index,
kwargs) and Handle.time(index, make_kwargs, stream, warmup, reps) return
None / an int / a list of (name, kvh_dtype, shape) / (kernel_us, host_us,
method) on success, ("unsupported", reason) when the provider raised
kvharness.Unsupported (KVH_UNSUPPORTED, kvharness 0.5; not from time), and
the error text (exception type, message, provider file:line; the innermost
frame of the stack it called) on failure:
no Python exception crosses into C++.

Ragged-query arguments (kvharness 0.4) arrive from bridge.cpp as provider.h
names them; query_start_loc, seq_lens, k_scale_tensor and v_scale_tensor are
None when the harness did not fill them (an older harness, a decode call):
_tensors then makes the decode values (one query token per sequence) for a
reader that takes them. Typed workspaces arrive as `workspaces`, a list of
capsules in declaration order; the reader gets a dict name -> tensor.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import os
import site
import sys
import sysconfig
import traceback

import kvharness
from kvharness import _containers

DEVICE_CPU, DEVICE_CUDA, DEVICE_ROCM = 1, 2, 10


def _add_virtualenv():
    """An embedded interpreter ignores an activated virtualenv; honour $VIRTUAL_ENV."""
    venv = os.environ.get("VIRTUAL_ENV")
    if venv:
        sp = os.path.join(venv, "lib", f"python{sys.version_info.major}.{sys.version_info.minor}", "site-packages")
        if os.path.isdir(sp):
            site.addsitedir(sp)


_add_virtualenv()


def _where(path: str, line: int) -> str:
    rel = os.path.relpath(path) if os.path.isabs(path) else path
    return f"{rel if not rel.startswith('..') else path}:{line}"


def _import(spec: str):
    if spec.endswith(".py") or os.sep in spec:
        path = os.path.abspath(spec)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"no such file: {spec}")
        name = os.path.splitext(os.path.basename(path))[0]
        old = sys.modules.get(name)
        if old is not None:
            if os.path.abspath(getattr(old, "__file__", "") or "") == path:
                return old
            raise ImportError(f"a module named {name!r} is already loaded from {old.__file__}")
        d = os.path.dirname(path)
        if d not in sys.path:
            sys.path.insert(0, d)  # so that the module's sibling imports work
        mspec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(mspec)
        sys.modules[name] = mod
        try:
            mspec.loader.exec_module(mod)
        except BaseException:
            del sys.modules[name]
            raise
        return mod
    return importlib.import_module(spec)


def _module_name(spec: str) -> str:
    """The name `spec` is imported under (a .py path: its file name without .py)."""
    if spec.endswith(".py") or os.sep in spec:
        return os.path.splitext(os.path.basename(spec))[0]
    return spec


def _import_error(spec: str, e: BaseException) -> str:
    """'import failed: TYPE: message (file:line)', the last traceback line that is real source,
    outside the kvharness package when there is one (a bad decorator argument raises inside
    kvharness/__init__.py: the user's decorator line is the one to show); plus a hint when `spec`
    is a module name that is a file of the working directory, which is not on the module path."""
    text = traceback.format_exception_only(type(e), e)[-1].strip()
    where = ""
    if isinstance(e, SyntaxError) and e.filename:
        where = _where(e.filename, e.lineno or 0)
    else:
        # The module's own lines, not importlib's nor ours: none when the module itself is not found.
        skip = (os.path.dirname(importlib.__file__), os.path.abspath(__file__))
        frames = [f for f in traceback.extract_tb(e.__traceback__)
                  if not f.filename.startswith("<") and not os.path.abspath(f.filename).startswith(skip)]
        package = os.path.dirname(os.path.abspath(kvharness.__file__)) + os.sep
        users = [f for f in frames if not os.path.abspath(f.filename).startswith(package)]
        frames = users or frames  # a kvharness.stacks adapter's own error stays in the package
        if frames:
            where = _where(frames[-1].filename, frames[-1].lineno)
    return f"import failed: {text}" + (f" ({where})" if where else "") + _file_hint(spec, e)


def _file_hint(spec: str, e: BaseException) -> str:
    """'; ... python:./NAME.py' when module `spec` is not found but is a .py file here: the
    embedded interpreter does not put the working directory on sys.path."""
    if not isinstance(e, ModuleNotFoundError) or spec.endswith(".py") or os.sep in spec:
        return ""
    path = spec.replace(".", os.sep) + ".py"
    if e.name not in (spec, spec.split(".")[0]) or not os.path.isfile(path):
        return ""
    return (f"; {path} is a file of the working directory, which is not on the module path: "
            f"give its path, --provider python:.{os.sep}{path}")


def _short(path: str) -> str:
    """`path` relative to the working directory when inside it (as _where), else to the innermost
    sys.path entry holding it (vllm/attention/ops/foo.py of an installed stack), else absolute."""
    path = os.path.abspath(path)
    rel = os.path.relpath(path)
    if not rel.startswith(".."):
        return rel
    best = path
    for entry in sys.path:
        root = os.path.abspath(entry or ".")
        if path.startswith(root + os.sep) and len(path) - len(root) - 1 < len(best):
            best = path[len(root) + 1:]
    return best


# Where frames of the stack under test are not: Python's own library, and the packages the stack
# raises through (torch, triton). A name in _LIBRARY_PACKAGES counts as installed when a path
# segment site-packages/dist-packages comes right before it, or where the loaded package lives.
_LIBRARY_PACKAGES = ("torch", "triton")


def _library_roots():
    roots = {os.path.abspath(sysconfig.get_paths()[k]) for k in ("stdlib", "platstdlib")}
    roots.add(os.path.dirname(os.path.abspath(importlib.__file__)))
    for name in _LIBRARY_PACKAGES:
        where = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(where, str) and where:  # a placeholder module (no Triton: stacks._checkout) has none
            roots.add(os.path.dirname(os.path.abspath(where)))
    return roots


def _is_library(path: str, roots) -> bool:
    """True for the standard library, the kvharness package, torch and triton."""
    if path.startswith("<"):
        return True  # <frozen ...>, <string>: no source to point at
    p = os.path.abspath(path)
    parts = p.split(os.sep)
    for i, part in enumerate(parts[:-1]):
        if part in ("site-packages", "dist-packages"):
            return parts[i + 1] in _LIBRARY_PACKAGES or parts[i + 1] == "kvharness"
    if p.startswith(os.path.dirname(os.path.abspath(kvharness.__file__)) + os.sep):
        return True
    return any(p.startswith(r + os.sep) for r in roots)


def _raised_in(frames, after: int, provider_frame) -> str:
    """'raised in FILE:LINE in FUNC': the innermost frame past index `after` that is the stack's (not the
    provider's file, not kvharness, the standard library, torch or triton); else the innermost frame
    when it is not the provider's own line; else ''."""
    roots = _library_roots()
    home = os.path.abspath(provider_frame.filename) if provider_frame else None
    inner = frames[after + 1:]
    stack = [f for f in inner if os.path.abspath(f.filename) != home and not _is_library(f.filename, roots)]
    pick = stack[-1] if stack else (frames[-1] if frames and frames[-1] is not provider_frame else None)
    if pick is None or (home and os.path.abspath(pick.filename) == home):
        return ""
    if pick.filename.startswith("<"):
        return ""
    return f"raised in {_short(pick.filename)}:{pick.lineno} in {pick.name}"


def _describe(e: BaseException, kernel, fn=None) -> str:
    """'TYPE: message (file:line; raised in STACKFILE:LINE in FUNC)': the last traceback frame inside the
    provider's file (that of `fn`, default the kernel's function; else fn's def line), and the innermost
    frame of the stack below it (_raised_in) when there is one."""
    text = traceback.format_exception_only(type(e), e)[-1].strip()
    code = getattr(fn or kernel.fn, "__code__", None)
    home = os.path.abspath(code.co_filename) if code else None
    frames = traceback.extract_tb(e.__traceback__)
    mine = [i for i, f in enumerate(frames) if home and os.path.abspath(f.filename) == home]
    if mine:
        where = _where(frames[mine[-1]].filename, frames[mine[-1]].lineno)
    elif code:
        where = _where(code.co_filename, code.co_firstlineno)  # e.g. a bad argument list: the def line
    else:
        where = "?"
    if mine:
        deeper = _raised_in(frames, mine[-1], frames[mine[-1]])
    else:  # a bad argument list raises in the call itself (nothing deeper); no source: any frame helps
        deeper = "" if code else _raised_in(frames, -1, None)
    return f"{text} ({where}{'; ' + deeper if deeper else ''})"


def _refusal(e) -> tuple:
    """What bridge.cpp turns into KVH_UNSUPPORTED: ("unsupported", the reason, never empty)."""
    reason = str(getattr(e, "reason", "") or e or "").strip()
    return ("unsupported", reason or "kvharness.Unsupported raised without a reason")


def _describe_def(fn) -> str:
    """file:line of fn's def."""
    code = getattr(fn, "__code__", None)
    return _where(code.co_filename, code.co_firstlineno) if code else "?"


def _named(fn):
    """The keyword names fn's signature lists (not counting **kwargs)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _accepted(fn):
    """The keyword names fn accepts, or None for all (**kwargs)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


def _declares_ragged(k) -> bool:
    """A reader written for kvharness 0.4's ragged calls: its **kwargs may get the new arguments."""
    return k.max_query_len > 1 or "non_causal" in k.modifiers or k.workspaces is not None


def _withheld(fn, k):
    """Ragged-query argument names a **kwargs function must not get: a reader written before them may
    forward **kwargs to a function with a fixed argument list (as the score modifiers, bridge.cpp)."""
    if k.role != kvharness.ROLE_READER or _declares_ragged(k):
        return frozenset()
    return frozenset(set(kvharness.RAGGED_ARGS) - _named(fn))


_TORCH_DTYPES = {1: "float16", 2: "bfloat16", 3: "int64", 4: "float32", 5: "int32"}


class Handle:
    """The kernels one module registered, callable by index."""

    def __init__(self, kernels, device_type: int, device_id: int):
        self._kernels = kernels
        self._device_type = device_type
        self._device_id = device_id
        self._accepts = [_accepted(k.fn) for k in kernels]
        self._ws_fn = [k.workspace_bytes or (k.workspaces if callable(k.workspaces) else None) for k in kernels]
        self._ws_accepts = [_accepted(f) if f else None for f in self._ws_fn]
        self._withheld = [_withheld(k.fn, k) for k in kernels]
        # Allocation-shaped containers (kvharness/_containers.py): only to functions that name them.
        self._containers = [set(_containers.CONTAINER_ARGS) & _named(k.fn) for k in kernels]
        self._ws_withheld = [_withheld(f, k) if f else frozenset() for f, k in zip(self._ws_fn, kernels)]
        self._ws_named = [_named(k.fn) if k.workspaces is not None else set() for k in kernels]
        self._last_specs = [k.workspace_specs for k in kernels]  # the typed workspaces of the latest sizing
        self._streams = {}
        self.kernels = [
            dict(name=k.name, description=k.description, role=k.role,
                 cache_format=kvharness.CACHE_FORMATS[k.cache_format], fixture=k.fixture,
                 head_sizes=list(k.head_sizes) if k.head_sizes else None,
                 block_sizes=list(k.block_sizes) if k.block_sizes else None,
                 dtypes_mask=sum(1 << kvharness.DTYPES[d] for d in k.dtypes),
                 cache_dtypes_mask=sum(1 << kvharness.CACHE_DTYPES[d] for d in k.cache_dtypes),
                 kv_scales_mask=sum(1 << kvharness.KV_SCALES[g] for g in k.kv_scales),
                 max_gqa_ratio=k.max_gqa_ratio, has_workspace=k.workspace_bytes is not None,
                 modifiers_mask=sum(kvharness.MODIFIERS[m] for m in k.modifiers),
                 # sliding_window, softcap, head_offset, sinks, alibi_slopes: for readers declaring a score modifier
                 modifier_kwargs=any(m in kvharness.SCORE_MODIFIERS for m in k.modifiers),
                 max_query_len=k.max_query_len, has_workspaces=k.workspaces is not None,
                 # the ragged-query arguments: for readers that declare ragged support or name one of them
                 ragged_kwargs=k.role == kvharness.ROLE_READER and (
                     _declares_ragged(k) or bool(set(kvharness.RAGGED_ARGS) & (
                         _named(k.fn) | (_named(self._ws_fn[i]) if self._ws_fn[i] else set())))),
                 # issue 23 (D): the declared launch configurations, [(name, "key=value,..."), ...]
                 launch_configs=[(n, p) for n, p, _ in k.launch_configs or ()])
            for i, k in enumerate(kernels)]
        self._configs = [{n: kw for n, _, kw in k.launch_configs or ()} for k in kernels]  # issue 23 (D)

    def _tensors(self, kwargs, accepts, withheld=frozenset(), index=None):
        import torch
        out = {}
        for name, v in kwargs.items():
            if name == "launch_config":  # issue 23 (D): the configuration's own keywords instead, below
                continue
            if (accepts is not None and name not in accepts) or name in withheld:
                continue  # a field this function does not take (added to the ABI after it was written)
            if name == "workspaces" and isinstance(v, list):
                v = [torch.from_dlpack(c) if type(c).__name__ == "PyCapsule" else c for c in v]
            out[name] = torch.from_dlpack(v) if type(v).__name__ == "PyCapsule" else v
        _decode_defaults(out, kwargs)
        # fp8 caches arrive as uint8 (see bridge.cpp dl_dtype): torch's float8 view where torch has the dtype.
        fp8 = {"fp8_e4m3fn": "float8_e4m3fn", "fp8_e4m3fnuz": "float8_e4m3fnuz"}.get(kwargs.get("kv_cache_dtype"))
        if fp8 and hasattr(torch, fp8):
            for name in ("key_cache", "value_cache"):
                if name in out:
                    out[name] = out[name].view(getattr(torch, fp8))
        chosen = kwargs.get("launch_config")
        if chosen is not None:  # issue 23 (D): the case runs this declared launch configuration
            declared = self._configs[index] if index is not None else {}
            if chosen not in declared:
                raise ValueError(f"launch configuration {chosen!r} is not one the kernel declares "
                                 f"({', '.join(declared) or 'none'})")
            out.update((n, v) for n, v in declared[chosen].items() if accepts is None or n in accepts)
        return out

    def _stream(self, stream: int):
        """torch's current stream for the call: the harness's stream (null: the default stream, which is torch's too)."""
        if self._device_type == DEVICE_CPU:
            return contextlib.nullcontext()
        import torch
        stack = contextlib.ExitStack()
        stack.enter_context(torch.cuda.device(self._device_id))
        if stream:
            s = self._streams.get(stream)
            if s is None:
                s = self._streams[stream] = torch.cuda.ExternalStream(stream)
            stack.enter_context(torch.cuda.stream(s))
        return stack

    def _args(self, index: int, kwargs: dict) -> dict:
        """The keyword arguments kernel `index` gets for the bridge's `kwargs` (capsules become tensors)."""
        k = self._kernels[index]
        if k.workspaces is not None:
            named = self._named_workspaces(index, kwargs)
            kwargs = dict(kwargs, workspaces=named)
            # Each also by its own name, to a reader that names that parameter.
            kwargs.update((n, t) for n, t in named.items() if n in self._ws_named[index])
        args = self._tensors(kwargs, self._accepts[index], self._withheld[index], index)
        if self._containers[index]:
            args.update(_containers.containers(k.cache_format, args, self._containers[index]))
        return args

    def call(self, index: int, kwargs: dict, stream: int):
        k = self._kernels[index]
        try:
            args = self._args(index, kwargs)
            with self._stream(stream):
                k.fn(**args)
            return None
        except kvharness.Unsupported as e:
            return _refusal(e)
        except BaseException as e:  # noqa: B902 -- nothing may cross into C++
            return _describe(e, k)

    def route(self, index: int, kwargs: dict):
        """kvh_route_fn: (kernel, reason) of router `index` for the routing inputs, or the error text.
        The router's name goes through its kernel_names; the reason then names the library's kernel."""
        k = self._kernels[index]
        try:
            accepts = self._accepts[index]
            r = k.fn(**{n: v for n, v in kwargs.items() if accepts is None or n in accepts})
            name, reason = (r, "") if isinstance(r, str) else tuple(r) if isinstance(r, (tuple, list)) else (r, None)
            if not isinstance(name, str) or not isinstance(reason, str) or not name:
                return (f"TypeError: router {k.name} returned {r!r}; expected a kernel name or "
                        f"(kernel name, reason) of str ({_describe_def(k.fn)})")
            mapped = (k.kernel_names or {}).get(name, name)
            if mapped != name:
                reason = f"{reason}; " if reason else ""
                reason += f"called {name}"
            return mapped, reason
        except BaseException as e:  # noqa: B902 -- nothing may cross into C++
            return _describe(e, k)

    def time(self, index: int, make_kwargs, stream: int, warmup: int, reps: int):
        """kvh_time_fn (kvharness 0.5): (kernel_us, host_us, method) for kernel `index`, or the error text.
        make_kwargs() returns fresh bridge kwargs for the call the verdict came from (bridge.cpp).
        See _timing.py for what is measured and how."""
        k = self._kernels[index]
        try:
            from kvharness import _timing
            return _timing.measure(self, index, make_kwargs, stream, max(0, warmup), max(1, reps))
        except BaseException as e:  # noqa: B902 -- nothing may cross into C++
            return _describe(e, k)

    def workspace_bytes(self, index: int, kwargs: dict):
        k = self._kernels[index]
        try:
            n = k.workspace_bytes(**self._tensors(kwargs, self._ws_accepts[index], self._ws_withheld[index], index))
            if not isinstance(n, int):
                return f"TypeError: workspace_bytes of {k.name} returned {type(n).__name__}, expected int"
            return n
        except kvharness.Unsupported as e:
            return _refusal(e)
        except BaseException as e:  # noqa: B902
            return _describe(e, k, k.workspace_bytes)

    def _declared_specs(self, index: int, kwargs: dict):
        """The typed workspaces reader `index` declares for these arguments: [(name, kvh_dtype, shape), ...]."""
        k = self._kernels[index]
        if k.workspace_specs is not None:
            return k.workspace_specs
        declared = k.workspaces(**self._tensors(kwargs, self._ws_accepts[index], self._ws_withheld[index], index))
        return kvharness.workspace_specs(k.name, declared)

    def workspaces(self, index: int, kwargs: dict):
        """kvh_workspaces_fn: the reader's typed workspaces for `kwargs`, or the error text."""
        k = self._kernels[index]
        try:
            specs = self._declared_specs(index, kwargs)
            self._last_specs[index] = specs
            return [(n, code, list(shape)) for n, code, shape in specs]
        except kvharness.Unsupported as e:
            return _refusal(e)
        except BaseException as e:  # noqa: B902
            return _describe(e, k, k.workspaces if callable(k.workspaces) else None)

    def _named_workspaces(self, index: int, kwargs: dict) -> dict:
        """name -> tensor of the typed workspaces the harness passed (a list, in declaration order).
        The names are those of the latest sizing when its shapes and dtypes match what arrived, else
        the declaration is asked again with the call's arguments."""
        import torch
        k = self._kernels[index]
        arrived = [torch.from_dlpack(c) if type(c).__name__ == "PyCapsule" else c
                   for c in (kwargs.get("workspaces") or [])]

        def matches(specs):
            return specs is not None and len(specs) == len(arrived) and all(
                str(t.dtype) == "torch." + _TORCH_DTYPES[code] and tuple(t.shape) == tuple(shape)
                for t, (_, code, shape) in zip(arrived, specs))
        specs = self._last_specs[index]
        if not matches(specs):
            try:
                specs = self._declared_specs(index, kwargs)
            except kvharness.Unsupported:
                raise  # a refusal, not a broken declaration
            except BaseException as e:  # noqa: B902
                raise RuntimeError(f"reader {k.name!r}: its workspaces declaration raised: "
                                   f"{_describe(e, k, k.workspaces if callable(k.workspaces) else None)}") from None
            if not matches(specs):
                got = [(str(t.dtype)[6:], tuple(t.shape)) for t in arrived]
                want = [(_TORCH_DTYPES[c], tuple(s)) for _, c, s in specs]
                raise RuntimeError(f"reader {k.name!r}: declares typed workspaces {want}, the harness passed {got}"
                                   + (" (a harness older than kvharness 0.4 passes none)" if not arrived else ""))
        return {n: t for (n, _, _), t in zip(specs, arrived)}


def _decode_defaults(out: dict, kwargs: dict):
    """The ragged-query arguments the harness left unfilled (None), as a decode call has them:
    query_start_loc = 0..num_seqs, seq_lens = context_lens, k_scale_tensor/v_scale_tensor = [k_scale]/[v_scale]."""
    missing = [n for n in ("query_start_loc", "seq_lens", "k_scale_tensor", "v_scale_tensor")
               if n in out and out[n] is None]
    if not missing:
        return
    import torch

    lens = out.get("context_lens", kwargs.get("context_lens"))  # a capsule is consumed once: out's tensor if there
    if type(lens).__name__ == "PyCapsule":
        lens = torch.from_dlpack(lens)
    device = lens.device if lens is not None else None
    for name in missing:
        if name == "query_start_loc" and lens is not None:
            out[name] = torch.arange(lens.shape[0] + 1, dtype=torch.int32, device=device)
        elif name == "seq_lens":
            out[name] = lens
        elif name in ("k_scale_tensor", "v_scale_tensor"):
            scale = kwargs.get(name[0] + "_scale", 1.0)
            out[name] = torch.full((1,), float(scale), dtype=torch.float32, device=device)


def load(spec: str, device_type: int, device_id: int):
    """Imports module `spec` (a name on sys.path or a .py path, optionally with `?key=value&...` parameters the
    module reads through kvharness.stacks.options) and returns (Handle, None) or (None, error text)."""
    import kvharness.stacks as stacks
    try:
        spec, params = stacks.parse_spec(spec)
        if params:
            stacks.set_options(_module_name(spec), params)
        mod = _import(spec)
        left = stacks.unclaimed(mod.__name__) if params else {}
        if left:
            raise ValueError(f"module {mod.__name__} takes no parameters (got {', '.join(sorted(left))}): "
                             "only kvharness.stacks adapters read them")
    except BaseException as e:  # noqa: B902
        return None, _import_error(spec, e)
    kernels = [k for k in kvharness._KERNELS if k.module == mod.__name__]
    if not kernels:
        return None, (f"module {mod.__name__} ({getattr(mod, '__file__', '?')}) registers no kernel: decorate "
                      "functions with kvharness.writer / kvharness.reader / kvharness.router")
    return Handle(kernels, device_type, device_id), None
