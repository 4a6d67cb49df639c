"""Private: what libkvh_python (bridge.cpp) calls. Not an API for provider modules.

load(spec, device_type, device_id) -> (Handle | None, error text | None)
Handle.kernels: one dict per kernel for the C side; Handle.call(index, kwargs,
stream) and Handle.workspace_bytes(index, kwargs) return None/an int on
success and the error text (exception type, message, provider file:line) on
failure: no Python exception crosses into C++.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import inspect
import os
import site
import sys
import traceback

import kvharness

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


def _import_error(spec: str, e: BaseException) -> str:
    """'import failed: TYPE: message (file:line)', the last traceback line that is real source."""
    text = traceback.format_exception_only(type(e), e)[-1].strip()
    where = ""
    if isinstance(e, SyntaxError) and e.filename:
        where = _where(e.filename, e.lineno or 0)
    else:
        # The module's own lines, not importlib's nor ours: none when the module itself is not found.
        skip = (os.path.dirname(importlib.__file__), os.path.abspath(__file__))
        frames = [f for f in traceback.extract_tb(e.__traceback__)
                  if not f.filename.startswith("<") and not os.path.abspath(f.filename).startswith(skip)]
        if frames:
            where = _where(frames[-1].filename, frames[-1].lineno)
    return f"import failed: {text}" + (f" ({where})" if where else "")


def _describe(e: BaseException, kernel) -> str:
    """'TYPE: message (file:line)': the last traceback frame inside the provider's file."""
    text = traceback.format_exception_only(type(e), e)[-1].strip()
    code = getattr(kernel.fn, "__code__", None)
    home = os.path.abspath(code.co_filename) if code else None
    frames = traceback.extract_tb(e.__traceback__)
    mine = [f for f in frames if home and os.path.abspath(f.filename) == home]
    if mine:
        where = _where(mine[-1].filename, mine[-1].lineno)
    elif code:
        where = _where(code.co_filename, code.co_firstlineno)  # e.g. a bad argument list: the def line
    else:
        where = "?"
    return f"{text} ({where})"


def _accepted(fn):
    """The keyword names fn accepts, or None for all (**kwargs)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params):
        return None
    return {p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}


class Handle:
    """The kernels one module registered, callable by index."""

    def __init__(self, kernels, device_type: int, device_id: int):
        self._kernels = kernels
        self._device_type = device_type
        self._device_id = device_id
        self._accepts = [_accepted(k.fn) for k in kernels]
        self._ws_accepts = [_accepted(k.workspace_bytes) if k.workspace_bytes else None for k in kernels]
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
                 modifiers_mask=sum(kvharness.MODIFIERS[m] for m in k.modifiers))
            for k in kernels]

    def _tensors(self, kwargs, accepts):
        import torch
        out = {}
        for name, v in kwargs.items():
            if accepts is not None and name not in accepts:
                continue  # a field this function does not take (added to the ABI after it was written)
            out[name] = torch.from_dlpack(v) if type(v).__name__ == "PyCapsule" else v
        # fp8 caches arrive as uint8 (see bridge.cpp dl_dtype): torch's float8 view where torch has the dtype.
        fp8 = {"fp8_e4m3fn": "float8_e4m3fn", "fp8_e4m3fnuz": "float8_e4m3fnuz"}.get(kwargs.get("kv_cache_dtype"))
        if fp8 and hasattr(torch, fp8):
            for name in ("key_cache", "value_cache"):
                if name in out:
                    out[name] = out[name].view(getattr(torch, fp8))
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

    def call(self, index: int, kwargs: dict, stream: int):
        k = self._kernels[index]
        try:
            args = self._tensors(kwargs, self._accepts[index])
            with self._stream(stream):
                k.fn(**args)
            return None
        except BaseException as e:  # noqa: B902 -- nothing may cross into C++
            return _describe(e, k)

    def workspace_bytes(self, index: int, kwargs: dict):
        k = self._kernels[index]
        try:
            n = k.workspace_bytes(**self._tensors(kwargs, self._ws_accepts[index]))
            if not isinstance(n, int):
                return f"TypeError: workspace_bytes of {k.name} returned {type(n).__name__}, expected int"
            return n
        except BaseException as e:  # noqa: B902
            return _describe(e, k)


def load(spec: str, device_type: int, device_id: int):
    """Imports module `spec` (a name on sys.path or a .py path) and returns (Handle, None) or (None, error text)."""
    try:
        mod = _import(spec)
    except BaseException as e:  # noqa: B902
        return None, _import_error(spec, e)
    kernels = [k for k in kvharness._KERNELS if k.module == mod.__name__]
    if not kernels:
        return None, (f"module {mod.__name__} ({getattr(mod, '__file__', '?')}) registers no kernel: decorate "
                      "functions with kvharness.writer / kvharness.reader")
    return Handle(kernels, device_type, device_id), None
