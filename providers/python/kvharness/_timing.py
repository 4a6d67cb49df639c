"""Private: the device time of a Python provider's call (Handle.time: kvh_time_fn, kvharness 0.5).

What is measured, for one call exactly as the harness made it (the verdict's arguments):
  host_us     median host wall time of one eager call through the bridge: the harness's capsules
              made and converted, the provider's Python, its launcher and allocations. The device
              is idle before each timed call (synchronized), so an asynchronous launch is not
              charged for earlier work; a provider that synchronizes is charged its device time.
  kernel_us   device time of one call, by the first method that works:
    graph         (KVH_TIMING_GRAPH) CALLS_PER_GRAPH calls captured into one torch.cuda.CUDAGraph
                  on a side stream (torch captures only there), replayed `reps` times between
                  device events on the harness's stream; median replay / CALLS_PER_GRAPH. The
                  host is out of it: what the device spends, the provider's own copies included.
    events_batch  (KVH_TIMING_EVENTS_BATCH) when capture fails (a call that synchronizes, copies
                  to the host, or launches on the legacy default stream): device events around
                  `reps` back-to-back eager calls, total / reps. Where the launcher is slower than
                  the kernel the device waits for it, so this is an upper bound of device time.
    host_clock    (KVH_TIMING_HOST) the cpu backend: calls are synchronous, kernel_us = host_us.
Calls repeat freely: the harness times only PASS cases, whose calls are idempotent (timing.h).
A failed capture is ended and the device synchronized, so the process and stream stay usable.
"""

from __future__ import annotations

import inspect
import statistics
import time

GRAPH, EVENTS_BATCH, HOST = 1, 2, 3  # kvh_timing_method (provider.h)
CALLS_PER_GRAPH = 20  # per captured graph: spreads a replay's own launch cost (10 left 0.3 us on a 1.5 us kernel, H200)


def _failed(err) -> str:
    """Handle.call's failure as text: its error text, or a refusal (a tuple, kvharness.Unsupported)."""
    return err if isinstance(err, str) else f"the kernel refused a call while timed: {err!r}"


def measure(handle, index: int, make_kwargs, stream: int, warmup: int, reps: int):
    """(kernel_us, host_us, method) of kernel `index`, or the error text of a call that failed."""
    for _ in range(warmup):
        err = handle.call(index, make_kwargs(), stream)
        if err is not None:
            return _failed(err)
    gpu = handle._device_type != 1  # DEVICE_CPU
    sync = _synchronizer(handle) if gpu else (lambda: None)
    host = []
    for _ in range(reps):
        sync()
        t0 = time.perf_counter()
        err = handle.call(index, make_kwargs(), stream)
        host.append((time.perf_counter() - t0) * 1e6)
        if err is not None:
            return _failed(err)
    sync()
    host_us = statistics.median(host)
    if not gpu:
        return host_us, host_us, HOST
    k = handle._kernels[index]
    args = handle._args(index, make_kwargs())
    with handle._stream(stream):
        us = graph_us(lambda: k.fn(**args), reps)
        if us is not None:
            return us, host_us, GRAPH
        return events_batch_us(lambda: k.fn(**args), reps), host_us, EVENTS_BATCH


def _synchronizer(handle):
    import torch

    device = handle._device_id
    return lambda: torch.cuda.synchronize(device)


def _capture_kwargs(graph_capture_begin) -> dict:
    """thread_local capture where torch has the mode (2.1+): another thread's CUDA calls cannot spoil it."""
    try:
        params = inspect.signature(graph_capture_begin).parameters
    except (TypeError, ValueError):
        return {}
    return {"capture_error_mode": "thread_local"} if "capture_error_mode" in params else {}


def graph_us(fn, reps: int, calls: int = CALLS_PER_GRAPH):
    """Median device µs of fn() from replays of a graph capturing `calls` calls; None when capture fails."""
    import torch

    current = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    side.wait_stream(current)
    graph = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.stream(side):
            graph.capture_begin(**_capture_kwargs(graph.capture_begin))
            try:
                for _ in range(calls):
                    fn()
            finally:
                graph.capture_end()  # ends the capture even when fn raised (and raises if it was invalidated)
    except Exception:  # noqa: BLE001 -- any refusal of capture: the caller falls back to eager calls
        _recover(side)
        return None
    current.wait_stream(side)
    graph.replay()  # first replay uploads the graph
    pairs = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        pairs.append((start, end))
    torch.cuda.synchronize()
    us = statistics.median(s.elapsed_time(e) for s, e in pairs) * 1000.0 / calls
    del graph
    return us


def _recover(side):
    """After a refused capture: no work pending, and torch's CUDA generator out of capture mode (a
    capture_end that raises leaves it there, and every later random op on the device would raise
    "Offset increment outside graph capture"): its state is replaced by a copy, which is not capturing."""
    import torch

    for wait in (side.synchronize, torch.cuda.synchronize):
        try:
            wait()
        except Exception:  # noqa: BLE001 -- the capture's own error again
            pass
    gen = torch.cuda.default_generators[torch.cuda.current_device()]
    if hasattr(gen, "graphsafe_set_state") and hasattr(gen, "clone_state"):  # torch 2.4+
        gen.graphsafe_set_state(gen.clone_state())


def events_batch_us(fn, reps: int) -> float:
    """Device µs of fn() from events around `reps` back-to-back calls (total / reps)."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) * 1000.0 / reps
