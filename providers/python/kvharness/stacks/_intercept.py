"""Which kernel a stack's dispatch function calls, found without running any kernel.

A dispatch function (aiter's paged_attention_common) looks its kernel entry points up in its
module's globals at call time. intercept() swaps recorders in for the duration of one call: the
first entry point called records its name and stops the call (no kernel runs), and the module's
globals are restored afterwards, always. One interception at a time per process (a lock): the
harness routes cases one after another, and a swapped global must not leak into another call.
"""

from __future__ import annotations

import threading

_LOCK = threading.RLock()


class _Routed(BaseException):
    """Raised by a recorder to stop the dispatch once it has chosen (BaseException: the dispatch's
    own `except Exception` handlers must not swallow it)."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


def _recorder(name: str):
    def record(*args, **kwargs):
        raise _Routed(name)
    record.__name__ = name
    return record


def intercept(module, entry_points, call, overrides=None):
    """Calls call() with module.<entry> replaced by a recorder for every name in entry_points
    (and module.<name> = value for each overrides item, e.g. a torch stand-in). Returns the name
    of the entry point the dispatch called first. Raises LookupError naming the module when an
    entry point is not a global of it, RuntimeError when the dispatch returned without calling
    any of them; exceptions of the dispatch itself propagate (the router's CRASH)."""
    missing = [n for n in entry_points if not hasattr(module, n)]
    if missing:
        raise LookupError(f"{module.__name__} ({getattr(module, '__file__', '?')}) has no {', '.join(missing)}: "
                          "the dispatch's kernel entry points moved (check the adapter against this commit)")
    swaps = {n: _recorder(n) for n in entry_points}
    swaps.update(overrides or {})
    with _LOCK:
        saved = {n: module.__dict__[n] for n in swaps if n in module.__dict__}
        try:
            module.__dict__.update(swaps)
            call()
        except _Routed as r:
            return r.name
        finally:
            for n in swaps:
                if n in saved:
                    module.__dict__[n] = saved[n]
                else:
                    module.__dict__.pop(n, None)
    raise RuntimeError(f"{module.__name__}: the dispatch returned without calling any of {', '.join(entry_points)}")
