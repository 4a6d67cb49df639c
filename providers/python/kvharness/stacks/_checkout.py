"""The source-checkout loader: a stack's kernel files, at any commit, without installing or importing the stack.

A checkout is a folder holding the stack's top-level package at one of its known places (vLLM:
PATH/vllm; SGLang: PATH/python/sglang). Once activated, a meta-path finder serves every import of
that package, and only three things come out of it:

  (a) the real file of the checkout, for modules the adapter loads (Checkout.load) or allows
      (Checkout(allow=...): module names, or prefixes ending in '.');
  (b) a stub module from the stack's stub layer (Stack.stubs: module name -> function filling the
      module), for the stack's platform queries, Triton re-exports, logging and env flags;
  (c) an ImportError for anything else, naming the importing FILE:LINE, the module and the stubs:
      the kernel file would import the whole stack.

Packages on the way to (a) or (b) are empty package modules: their __init__.py is never run (it
imports half the stack). Kernels defined inside modules that import un-stubbed modules (or define
the kernel only under `if current_platform.is_rocm():`) are loaded with Checkout.extract: the named
functions, the module-level names they use, transitively, and nothing else, exec'd with the stubs.

One process, one copy of a stack: activating a checkout when the stack is already imported from
elsewhere (an installed package, another checkout) raises ImportError, as does installed() while a
checkout of the stack is active.
"""

from __future__ import annotations

import ast
import collections
import dataclasses
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import logging
import os
import sys
import types
from typing import Callable, Dict, Iterable, Optional, Sequence

__all__ = ["Stack", "Checkout", "installed", "installed_extract", "extract_file", "stub_logger", "stub_triton_utils", "stub_platform", "stub_envs",
           "StubPlatform"]


@dataclasses.dataclass(frozen=True)
class Stack:
    """What a checkout of one serving stack looks like, and its stub layer.

    name:         the stack's name in messages ("vllm")
    package:      its top-level import name ("vllm")
    package_dirs: where that package's folder may sit in a checkout, relative to its root, first
                  match wins (("vllm",); SGLang: ("python/sglang",))
    stubs:        module name -> function(module) that fills a fresh module (see stub_* below); a
                  stub whose name is a parent of another module is made a package
    """

    name: str
    package: str
    package_dirs: Sequence[str]
    stubs: Dict[str, Callable[[types.ModuleType], None]] = dataclasses.field(default_factory=dict)


#: package name -> the active Checkout (one per stack and process).
_ACTIVE: Dict[str, "Checkout"] = {}


class Checkout:
    """A source checkout of `stack` at `root`, its kernel files loadable one by one.

    Raises FileNotFoundError when root is not a folder, ValueError when it does not hold the stack's
    package folder (naming the places looked at)."""

    def __init__(self, stack: Stack, root: str, allow: Iterable[str] = ()):
        self.stack = stack
        self.root = os.path.abspath(os.path.expanduser(root))
        if not os.path.isdir(self.root):
            raise FileNotFoundError(f"{stack.name} source checkout {root!r}: no such folder")
        self.package_dir = next((os.path.join(self.root, d) for d in stack.package_dirs
                                 if os.path.isdir(os.path.join(self.root, d))), None)
        if self.package_dir is None:
            where = " or ".join(os.path.join(root, d) + "/" for d in stack.package_dirs)
            raise ValueError(f"{root!r} is not a {stack.name} source checkout: expected the {stack.package} "
                             f"package folder at {where}")
        self.allow = set(allow)
        self._real: set = set()  # modules loaded as real files on the adapter's request
        self._finder = _Finder(self)

    # ---- where things are ----

    def path_of(self, module: str) -> Optional[str]:
        """The file of `module` (a dotted name inside the stack) in this checkout, or None."""
        parts = module.split(".")
        if parts[0] != self.stack.package:
            raise ValueError(f"{module!r} is not a module of {self.stack.package}")
        base = os.path.join(self.package_dir, *parts[1:])
        for candidate in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(candidate):
                return candidate
        return None

    def first(self, *modules: str) -> str:
        """The first of `modules` that exists in this checkout (a kernel file moves between commits).
        Raises ModuleNotFoundError naming every path looked at."""
        for m in modules:
            if self.path_of(m):
                return m
        looked = ", ".join(os.path.relpath(os.path.join(self.package_dir, *m.split(".")[1:]) + ".py", self.root)
                           for m in modules)
        raise ModuleNotFoundError(f"{self.stack.name} checkout {self.root}: none of {looked}")

    # ---- loading ----

    def activate(self) -> "Checkout":
        """Puts the finder first on sys.meta_path (idempotent). Raises ImportError when the stack is already
        imported from elsewhere (an installed copy) or another checkout of it is active."""
        pkg = self.stack.package
        other = _ACTIVE.get(pkg)
        if other is self:
            return self
        if other is not None:
            raise ImportError(f"a {self.stack.name} source checkout ({other.root}) is already loaded in this "
                              f"process; one checkout per process ({self.root} asked for)")
        loaded = sys.modules.get(pkg)
        if loaded is not None:
            raise ImportError(f"{pkg} is already imported from {getattr(loaded, '__file__', None) or repr(loaded)} "
                              f"(an installed copy); a source checkout ({self.root}) cannot be loaded beside it "
                              "in one process")
        sys.meta_path.insert(0, self._finder)
        _ACTIVE[pkg] = self
        _placeholder_triton()
        return self

    def load(self, module: str) -> types.ModuleType:
        """Imports the real file of `module` from the checkout (its imports go through the finder).
        Raises ModuleNotFoundError when the file is absent, ImportError for an import it may not make."""
        self.activate()
        if not self.path_of(module):
            self.first(module)  # raises, naming the path
        self._real.add(module)
        return importlib.import_module(module)

    def extract(self, module: str, names: Sequence[str]) -> types.ModuleType:
        """Only `names` of `module`'s file (functions, classes, constants; found at module level or inside
        module-level if/try/with blocks, the first definition winning), with every module-level name they
        use, transitively (imports included, served by the finder), exec'd in a new module object with the
        file's own path and line numbers (tracebacks, inspect and Triton's source lookup see the real file).
        Raises LookupError for a name the file does not define, ImportError as load() does."""
        self.activate()
        return extract_file(self.path_of(module) or self.first(module), module, names, self.root)

    def _kind(self, fullname: str) -> Optional[str]:
        """'stub', 'real', 'package' or None (refused) for a module of the stack."""
        if fullname in self.stack.stubs:
            return "stub"
        if fullname in self._real:
            return "real"
        if fullname in self.allow or any(a.endswith(".") and fullname.startswith(a) for a in self.allow):
            path = self.path_of(fullname)
            if path and path.endswith("__init__.py"):
                return "package"  # an allowed package: empty, its __init__.py (registries, plugins) never run
            return "real" if path else None
        prefix = fullname + "."
        if fullname == self.stack.package or any(
                m.startswith(prefix) for m in (*self.stack.stubs, *self._real, *self.allow)):
            return "package"
        return None

    def _refusal(self, fullname: str) -> ImportError:
        who, wanted = _importer(self.root, fullname)
        stubs = ", ".join(sorted(self.stack.stubs)) or "none"
        return ImportError(f"{who + ' imports' if who else 'import of'} {wanted}, which the kvharness source "
                           f"loader does not stub (stubs: {stubs}); it would import the whole {self.stack.name} "
                           "stack", name=fullname)


def installed(stack: Stack, module: str) -> types.ModuleType:
    """Imports `module` of the installed `stack`. Raises ImportError while a source checkout of it is active
    (one copy of a stack per process)."""
    active = _ACTIVE.get(stack.package)
    if active is not None:
        raise ImportError(f"a {stack.name} source checkout ({active.root}) is loaded in this process; the installed "
                          f"{stack.package} cannot be imported beside it")
    return importlib.import_module(module)


def extract_file(path: str, module: str, names: Sequence[str], root: str = "") -> types.ModuleType:
    """Checkout.extract's work on the file at `path` (also for an installed package's file, whose imports
    then go to the installed stack): a new module `module` holding only `names` and what they use.
    Raises LookupError naming the file (relative to root) for a name it does not define."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    binds = _bindings(tree.body)
    missing = [n for n in names if n not in binds]
    if missing:
        shown = os.path.relpath(path, root) if root else path
        raise LookupError(f"{shown} defines no module-level {missing[0]!r} (looked inside if/try/with blocks too)")
    chosen, todo = {}, list(names)
    while todo:
        node = binds.get(todo.pop())
        if node is None or id(node) in chosen:
            continue
        chosen[id(node)] = node
        todo.extend(_used_names(node))
    body = sorted(chosen.values(), key=lambda s: (s.lineno, s.col_offset))
    code = compile(ast.Module(body=body, type_ignores=[]), path, "exec")
    mod = types.ModuleType(module)
    mod.__file__ = path
    mod.__kvharness_extracted__ = tuple(names)
    sys.modules[module] = mod
    try:
        exec(code, mod.__dict__)
    except BaseException:
        del sys.modules[module]
        raise
    return mod


def installed_extract(stack: Stack, module: str, names: Sequence[str]) -> types.ModuleType:
    """extract_file on the installed stack's file of `module`, without importing that module (its other
    imports resolve against the installed stack). Raises ImportError while a checkout of the stack is active,
    ModuleNotFoundError when the installed stack has no such file."""
    active = _ACTIVE.get(stack.package)
    if active is not None:
        raise ImportError(f"a {stack.name} source checkout ({active.root}) is loaded in this process; the installed "
                          f"{stack.package} cannot be used beside it")
    spec = importlib.util.find_spec(module.rpartition(".")[0])
    path = None
    if spec is not None and spec.submodule_search_locations:
        for d in spec.submodule_search_locations:
            candidate = os.path.join(d, module.rpartition(".")[2] + ".py")
            if os.path.isfile(candidate):
                path = candidate
    if path is None:
        raise ModuleNotFoundError(f"the installed {stack.package} has no {module}")
    return extract_file(path, module + "<extracted>", names)


class _Finder(importlib.abc.MetaPathFinder):
    """Serves every import of one stack's package from its Checkout (module docstring: a, b, c)."""

    def __init__(self, checkout: Checkout):
        self.checkout = checkout

    def find_spec(self, fullname, path=None, target=None):
        co = self.checkout
        pkg = co.stack.package
        if fullname != pkg and not fullname.startswith(pkg + "."):
            return None
        kind = co._kind(fullname)
        if kind is None:
            raise co._refusal(fullname)
        if kind == "real":
            file = co.path_of(fullname)
            return importlib.util.spec_from_file_location(
                fullname, file, submodule_search_locations=[os.path.dirname(file)]
                if file.endswith("__init__.py") else None)
        folder = os.path.join(co.package_dir, *fullname.split(".")[1:])
        is_pkg = kind == "package" or any(m.startswith(fullname + ".") for m in co.stack.stubs)
        spec = importlib.machinery.ModuleSpec(fullname, _StubLoader(co, kind), is_package=is_pkg)
        if is_pkg:
            spec.submodule_search_locations = [folder] if os.path.isdir(folder) else []
        return spec


class _StubLoader(importlib.abc.Loader):
    def __init__(self, checkout: Checkout, kind: str):
        self.checkout, self.kind = checkout, kind

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        module.__kvharness_stub__ = self.kind  # "stub" or "package" (an empty package: __init__.py not run)
        if self.kind == "stub":
            self.checkout.stack.stubs[module.__name__](module)


def _importer(root: str, fullname: str):
    """(FILE:LINE, module) of the innermost frame inside the checkout (the refused import statement) and the
    module that statement names (importing a.b.c refuses a.b first: the message names a.b.c)."""
    frame = sys._getframe(1)
    while frame is not None:
        f = os.path.abspath(frame.f_code.co_filename)
        if f.startswith(root + os.sep):
            return f"{os.path.relpath(f, root)}:{frame.f_lineno}", _imported(f, frame.f_lineno, fullname)
        frame = frame.f_back
    return "", fullname


def _imported(path: str, line: int, fullname: str) -> str:
    """The module the import statement at path:line names that lies under `fullname` (else fullname)."""
    try:
        stmt = ast.parse(linecache.getline(path, line).strip())
    except SyntaxError:  # a statement over several lines
        return fullname
    for node in ast.walk(stmt):
        names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                 [node.module] if isinstance(node, ast.ImportFrom) and node.module else [])
        for n in names:
            if n == fullname or n.startswith(fullname + "."):
                return n
    return fullname


def _targets(node) -> list:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return [n for e in node.elts for n in _targets(e)]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    return []


def _bindings(body, out=None) -> dict:
    """name -> the first module-level statement binding it (inside if/try/with blocks too)."""
    out = {} if out is None else out
    for s in body:
        names = []
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [s.name]
        elif isinstance(s, ast.Assign):
            names = [n for t in s.targets for n in _targets(t)]
        elif isinstance(s, (ast.AnnAssign, ast.AugAssign)):
            names = _targets(s.target)
        elif isinstance(s, (ast.Import, ast.ImportFrom)):
            names = [a.asname or a.name.split(".")[0] for a in s.names if a.name != "*"]
        elif isinstance(s, ast.If):
            _bindings(s.body, out)
            _bindings(s.orelse, out)
        elif isinstance(s, ast.Try):
            _bindings(s.body, out)
            for h in s.handlers:
                _bindings(h.body, out)
            _bindings(s.orelse, out)
            _bindings(s.finalbody, out)
        elif isinstance(s, ast.With):
            _bindings(s.body, out)
        for n in names:
            out.setdefault(n, s)
    return out


def _used_names(node) -> set:
    """Every name a statement reads (its body, decorators, defaults, annotations)."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return set()
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


# ---- the shared stub layer: fillers a Stack's stubs map names to ----

def stub_logger(module: types.ModuleType) -> None:
    """`init_logger(name)` -> logging.getLogger(name) (vllm.logger, sglang's logging helpers)."""
    module.init_logger = logging.getLogger
    module.logger = logging.getLogger(module.__name__)


def stub_triton_utils(module: types.ModuleType) -> None:
    """The stack's re-export of Triton (vllm.triton_utils): `triton`, `tl`, `tldevice`, `HAS_TRITON`. Without
    Triton (a CPU machine) `triton` and `tl` are placeholders, as vLLM's own are: a file's @triton.jit
    kernels load, and launching one raises RuntimeError naming the missing Triton."""
    has = _has_triton()

    def __getattr__(name):
        if name == "HAS_TRITON":
            return has
        if name in ("triton", "tl"):
            return importlib.import_module("triton" if name == "triton" else "triton.language") if has \
                else _NoTriton(name)
        if name == "tldevice":
            for m in ("triton.language.extra.libdevice", "triton.language.math"):
                try:
                    return importlib.import_module(m)
                except ImportError:
                    pass
            return _NoTriton(name)
        raise AttributeError(f"{module.__name__}.{name} is not in the kvharness stub (triton, tl, tldevice, "
                             "HAS_TRITON)")
    module.__getattr__ = __getattr__


def _has_triton() -> bool:
    """Triton is importable (and is not our placeholder)."""
    m = sys.modules.get("triton")
    if m is not None:
        return not hasattr(m, "__kvharness_stub__")
    return importlib.util.find_spec("triton") is not None


def _placeholder_triton() -> None:
    """Without Triton (a CPU machine), `import triton` / `triton.language` in a checkout's kernel files get
    placeholders (their kernels load; launching one raises RuntimeError), so the CPU tests can load files
    that import Triton directly. With Triton installed this does nothing."""
    if "triton" in sys.modules or _has_triton():
        return
    triton = types.ModuleType("triton")
    triton.__kvharness_stub__ = "no triton"
    triton.__getattr__ = lambda name: getattr(_NoTriton("triton"), name)
    tl = types.ModuleType("triton.language")
    tl.__getattr__ = lambda name: getattr(_NoTriton("triton.language"), name)
    triton.language = tl
    sys.modules["triton"], sys.modules["triton.language"] = triton, tl


class _NoTriton:
    """Stands in for triton / tl without Triton: decorators return a kernel that refuses to launch."""

    def __init__(self, name):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):  # __file__, __path__, __spec__: a module's own, which a placeholder has not
            raise AttributeError(attr)
        if attr in ("jit", "autotune", "heuristics"):
            def deco(fn=None, **_):
                return _Unlaunchable(fn) if callable(fn) else (lambda f: _Unlaunchable(f))
            return deco
        return _NoTriton(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        return _NoTriton(self._name)


class _Unlaunchable:
    def __init__(self, fn):
        self.fn = fn

    def __getitem__(self, grid):
        raise RuntimeError(f"Triton is not installed: cannot launch {getattr(self.fn, '__name__', '?')}")


_DeviceCapability = collections.namedtuple("_DeviceCapability", "major minor")


class StubPlatform:
    """`current_platform` from torch alone: is_rocm() (torch.version.hip), is_cuda(), is_cuda_alike(), is_cpu(),
    is_xpu() and is_tpu() (False),
    fp8_dtype() (float8_e4m3fnuz on gfx94x, MI300's native fp8, else float8_e4m3fn: vLLM's ROCm rule),
    is_fp8_fnuz(), get_device_capability(), has_device_capability(), device_type. Any other query raises
    AttributeError naming it."""

    def _torch(self):
        import torch
        return torch

    def is_rocm(self) -> bool:
        return getattr(self._torch().version, "hip", None) is not None

    def is_cuda(self) -> bool:
        return not self.is_rocm() and self._torch().cuda.is_available()

    def is_cuda_alike(self) -> bool:
        return self._torch().cuda.is_available()

    def is_cpu(self) -> bool:
        return not self._torch().cuda.is_available()

    def is_xpu(self) -> bool:
        return False

    def is_tpu(self) -> bool:
        return False

    def is_fp8_fnuz(self) -> bool:
        if not self.is_rocm():
            return False
        torch = self._torch()
        return "gfx94" in torch.cuda.get_device_properties(0).gcnArchName

    def fp8_dtype(self):
        torch = self._torch()
        return torch.float8_e4m3fnuz if self.is_fp8_fnuz() else torch.float8_e4m3fn

    def get_device_capability(self, device_id: int = 0):
        """(major, minor) as vLLM's DeviceCapability named tuple compares, or None without a GPU."""
        torch = self._torch()
        if not torch.cuda.is_available():
            return None
        return _DeviceCapability(*torch.cuda.get_device_capability(device_id))

    def has_device_capability(self, capability, device_id: int = 0) -> bool:
        """vLLM's rule: capability (major, minor) or major * 10 + minor, at most the device's."""
        have = self.get_device_capability(device_id)
        if have is None:
            return False
        want = capability[0] * 10 + capability[1] if isinstance(capability, tuple) else int(capability)
        return have.major * 10 + have.minor >= want

    @property
    def device_type(self) -> str:
        return "cuda" if self.is_cuda_alike() else "cpu"

    def __getattr__(self, name):
        raise AttributeError(f"current_platform.{name} is not in the kvharness stub platform (is_rocm, is_cuda, "
                             "is_cuda_alike, is_cpu, is_xpu, is_tpu, is_fp8_fnuz, fp8_dtype, get_device_capability, "
                             "has_device_capability, device_type)")


def stub_compiled_ops(module: types.ModuleType) -> None:
    """A module of compiled ops (vllm._custom_ops): importable, but every op raises RuntimeError naming it,
    since a source checkout has no built extension. Files that import it for a path they do not take load."""
    def __getattr__(name):
        if name.startswith("__"):
            raise AttributeError(name)

        def op(*args, **kwargs):
            raise RuntimeError(f"{module.__name__}.{name} is a compiled op of the stack; the kvharness source "
                               "loader serves none (use the installed package for compiled ops)")
        return op
    module.__getattr__ = __getattr__


def stub_platform(module: types.ModuleType) -> None:
    """`current_platform` (a StubPlatform) for vllm.platforms-like modules."""
    module.current_platform = StubPlatform()


def stub_envs(defaults: Dict[str, object]) -> Callable[[types.ModuleType], None]:
    """An env-flag module (vllm.envs): attribute NAME is $NAME parsed like its default's type (bool: '1'/'true'),
    else the default; a name outside `defaults` raises AttributeError naming it."""
    def fill(module: types.ModuleType) -> None:
        def __getattr__(name):
            if name not in defaults:
                raise AttributeError(f"{module.__name__}.{name} is not in the kvharness stub (flags: "
                                     f"{', '.join(sorted(defaults))})")
            default, raw = defaults[name], os.environ.get(name)
            if raw is None:
                return default
            if isinstance(default, bool):
                return raw.strip().lower() in ("1", "true", "yes")
            return type(default)(raw) if default is not None else raw
        module.__getattr__ = __getattr__
    return fill
