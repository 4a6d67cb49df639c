"""Stack adapters: the cache writers and attention readers of serving stacks, called as the stacks call them.

    kvharness run cases/stacks/vllm.toml --provider python:kvharness.stacks.vllm              # installed vllm
    kvharness run cases/stacks/vllm.toml --provider "python:kvharness.stacks.vllm?src=PATH"   # a source checkout

A provider spec may carry query parameters (`MODULE?key=value&key=value`, no %-decoding: a path is
taken as written). The bridge stores them here before it imports MODULE; the module reads and
validates them with options() while it imports. A module given parameters that never asks for them
is an import error (the bridge checks unclaimed()).

`?src=PATH` loads chosen kernel files of a checkout without installing or importing the stack:
see _checkout.py (the loader and its stub layer) and providers/python/README.md "Stacks".

kvharness.stacks.aiter is a router (kvharness.router): aiter's paged_attention_common, judged by
intercepting which kernel it calls (_intercept.py; its stub layer: _aiter_stubs.py).
"""

from __future__ import annotations

__all__ = ["options", "set_options", "unclaimed", "parse_spec", "unsupported"]

#: module name -> {key: value} of the spec's query parameters, set by the bridge before the import.
_OPTIONS: dict = {}
#: module names whose options were read (validated) by the module.
_CLAIMED: set = set()


def parse_spec(spec: str):
    """'MODULE?k=v&k2=v2' -> ('MODULE', {'k': 'v', 'k2': 'v2'}); no '?' -> (spec, {}).

    Raises ValueError for a parameter without '=', an empty key or a key given twice."""
    if "?" not in spec:
        return spec, {}
    module, _, query = spec.partition("?")
    params = {}
    for item in query.split("&") if query else ():
        key, eq, value = item.partition("=")
        if not eq or not key:
            raise ValueError(f"provider spec {spec!r}: parameter {item!r}; expected key=value")
        if key in params:
            raise ValueError(f"provider spec {spec!r}: parameter {key!r} given twice")
        params[key] = value
    return module, params


def set_options(module: str, params: dict) -> None:
    """The bridge: the parameters of `module`'s spec, visible to it while it imports."""
    _OPTIONS[module] = dict(params)
    _CLAIMED.discard(module)


def options(module: str, keys=()) -> dict:
    """The spec parameters of stack module `module` (e.g. 'kvharness.stacks.vllm'); {} when none.

    keys: the parameter names the module accepts. Raises ValueError naming an unknown key and
    the accepted ones."""
    params = _OPTIONS.get(module, {})
    _CLAIMED.add(module)
    unknown = sorted(set(params) - set(keys))
    if unknown:
        accepted = ", ".join(sorted(keys)) or "none"
        raise ValueError(f"python:{module}: unknown parameter {unknown[0]!r} (accepted: {accepted})")
    return dict(params)


def unclaimed(module: str) -> dict:
    """The parameters given to `module` that it never read (a module that takes none): {} if fine."""
    return {} if module in _CLAIMED else dict(_OPTIONS.get(module, {}))


def unsupported(reason: str) -> BaseException:
    """The exception a stack adapter raises for a call the stack never makes (a view it never produces):
    kvharness.Unsupported (UNSUPPORTED with the reason)."""
    import kvharness
    return kvharness.Unsupported(reason)


def findable(module: str) -> bool:
    """The installed packages have `module` (False, not an exception, when a parent package is missing)."""
    import importlib.util
    try:
        return importlib.util.find_spec(module) is not None
    except ImportError:
        return False


def require(stack: str, checkout) -> None:
    """Stops the import of adapter kvharness.stacks.STACK (exit 125, before any case) when neither a
    checkout was given nor the stack is installed: a run of only UNSUPPORTED cases tests nothing.
    Raises ImportError naming the Python and the ?src= alternative."""
    if checkout is None and not findable(stack):
        import sys
        raise ImportError(f"{stack} is not installed for {sys.executable}; install it, or give a checkout: "
                          f"python:kvharness.stacks.{stack}?src=PATH")
