"""The stub layer for aiter's dispatch module loaded from a source checkout (kvharness.stacks.aiter).

aiter/ops/attention.py imports aiter's JIT build machinery (aiter.jit.core.compile_ops, which builds
a HIP module on first call), its C++ interfaces (csrc.cpp_itfs.*), Triton and Gluon kernels. To read
its routing on any machine, load_dispatch() executes only that file, with every import under
`aiter`, `csrc` (and `triton` when Triton is not installed) served by stubs:
  - compile_ops(...) turns a declaration into a placeholder entry point that raises StubCalled
    (nothing is built; a routed call is intercepted before it reaches one);
  - any other name of a stubbed module is a Placeholder: attribute access, calls, subscripts and
    use as a decorator (returns the function unchanged) or base class all work.
An import outside those packages that is not installed raises ImportError naming the import and
the line of the file. torch must be installed (the dispatch builds tensors).
Stubs occupy the `aiter` and `csrc` module names of this interpreter: one source per process.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import traceback
import types

DISPATCH_FILE = os.path.join("aiter", "ops", "attention.py")
DISPATCH_MODULE = "aiter.ops.attention"


class StubCalled(RuntimeError):
    """A stubbed aiter entry point ran: nothing was built behind it."""


class Placeholder:
    """Stands for any name of a stubbed module."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Placeholder(f"{self._name}.{attr}")

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]) and not isinstance(args[0], Placeholder):
            return args[0]  # used as a decorator (@triton.jit, ...)
        return Placeholder(f"{self._name}(...)")

    def __getitem__(self, key):
        return self

    def _same(self, *other):
        return self

    # Annotations and module-level arithmetic on stubbed names (`Optional[QuantType] | None`, ...).
    __or__ = __ror__ = __and__ = __rand__ = __add__ = __radd__ = __mul__ = __rmul__ = _same

    def __mro_entries__(self, bases):
        return (object,)  # `class X(stubbed.Enum)` gets a plain class

    def __repr__(self):
        return f"<kvharness stub {self._name}>"


def compile_ops(*args, **kwargs):
    """Stub of aiter.jit.core.compile_ops: the declared function becomes a placeholder entry point."""
    def deco(fn):
        name = getattr(fn, "__name__", "?")

        def entry(*a, **k):
            raise StubCalled(f"aiter entry point {name} is a kvharness stub (aiter's JIT build is not loaded)")
        entry.__name__ = name
        entry.__wrapped__ = fn
        return entry
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return deco(args[0])
    return deco


def _stub_module(name: str) -> types.ModuleType:
    m = types.ModuleType(name)
    m.__path__ = []  # a package: submodules import too
    m.__kvharness_stub__ = True
    m.__getattr__ = lambda attr, _n=name: (_ for _ in ()).throw(AttributeError(attr)) if attr.startswith("__") \
        else Placeholder(f"{_n}.{attr}")
    if name == "aiter.jit.core":
        m.compile_ops = compile_ops
    return m


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def __init__(self, prefixes):
        self.prefixes = tuple(prefixes)

    def find_spec(self, fullname, path=None, target=None):
        if fullname == DISPATCH_MODULE or not fullname.split(".")[0] in self.prefixes:
            return None
        return importlib.machinery.ModuleSpec(fullname, self, is_package=True)

    def create_module(self, spec):
        return _stub_module(spec.name)

    def exec_module(self, module):
        pass


def stubbed_prefixes():
    """The top-level packages the stub layer serves: aiter, csrc, and triton when not installed."""
    for f in sys.meta_path:
        if isinstance(f, _StubFinder):
            return f.prefixes
    return ("aiter", "csrc") + (() if importlib.util.find_spec("triton") else ("triton",))


def load_dispatch(src: str):
    """aiter's dispatch module executed from checkout `src` with the stub layer. Raises
    FileNotFoundError when src has no aiter/ops/attention.py, ImportError naming the import and
    the file's line for an import the stub layer cannot satisfy."""
    path = os.path.join(os.path.abspath(src), DISPATCH_FILE)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"{src}: no {DISPATCH_FILE} (a checkout of github.com/ROCm/aiter, or a partial "
                                "one holding that file)")
    loaded = sys.modules.get(DISPATCH_MODULE)
    if loaded is not None:
        if os.path.abspath(getattr(loaded, "__file__", "")) == path:
            return loaded
        raise ImportError(f"{DISPATCH_MODULE} is already loaded from {loaded.__file__}: one aiter source per process")
    if not any(isinstance(f, _StubFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _StubFinder(stubbed_prefixes()))
    spec = importlib.util.spec_from_file_location(DISPATCH_MODULE, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[DISPATCH_MODULE] = module
    try:
        spec.loader.exec_module(module)
    except ImportError as e:
        del sys.modules[DISPATCH_MODULE]
        line = next((f.lineno for f in reversed(traceback.extract_tb(e.__traceback__))
                     if os.path.abspath(f.filename) == path), "?")
        raise ImportError(f"{path}:{line}: import of {e.name or e} is not installed and not in kvharness's aiter "
                          f"stub layer (stubbed: {', '.join(p + '.*' for p in stubbed_prefixes())})") from None
    except BaseException:
        del sys.modules[DISPATCH_MODULE]
        raise
    return module
