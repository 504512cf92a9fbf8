"""Timing: one warm-up call, calibrate the iteration count to a budget, keep the best round."""

from __future__ import annotations

import functools
import gc
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

K = TypeVar("K")


@dataclass(frozen=True)
class Sampling:
    """How one measurement is taken."""

    budget_ns: int  # a timed round lasts at least this long
    rounds: int  # best of this many rounds at the calibrated count
    min_iterations: int = 1


class DirectCall:
    """`fn(*args, **kwargs)` timed as the user writes it: one call per iteration, no wrapper.

    A `functools.partial` with keywords goes through the slow `tp_call` path with a fresh
    kwargs dict on every call (about 200 ns on this machine), which would charge the arm that
    needs a keyword (`classes=`) for the harness's convenience. Like `timeit`, the loop is
    compiled source that calls `fn` directly with the arguments as locals.
    """

    def __init__(self, fn: Callable[..., object], *args: Any, **kwargs: Any) -> None:
        while isinstance(fn, functools.partial):  # unwrap: time the library call itself
            args = (*fn.args, *args)
            kwargs = {**fn.keywords, **kwargs}
            fn = fn.func
        self.fn, self.args, self.kwargs = fn, args, kwargs
        params = [f"a{i}" for i in range(len(args))] + [f"k_{k}" for k in kwargs]
        call = ", ".join([f"a{i}" for i in range(len(args))] + [f"{k}=k_{k}" for k in kwargs])
        source = (
            f"def run(_loop, _fn, {', '.join(params)}):\n    for _ in _loop:\n        _fn({call})\n"
        )
        namespace: dict[str, Any] = {}
        exec(compile(source, "<DirectCall>", "exec"), namespace)
        self._run = namespace["run"]

    def __call__(self) -> object:
        return self.fn(*self.args, **self.kwargs)

    def run(self, loop: range) -> None:
        self._run(loop, self.fn, *self.args, *self.kwargs.values())


def _round(fn: Callable[[], object], iterations: int) -> int:
    loop = range(iterations)
    enabled = gc.isenabled()
    gc.disable()  # as timeit does: a collection landing in one arm's round is noise
    try:
        if isinstance(fn, DirectCall):
            start = time.perf_counter_ns()
            fn.run(loop)
            return time.perf_counter_ns() - start
        start = time.perf_counter_ns()
        for _ in loop:
            fn()
        return time.perf_counter_ns() - start
    finally:
        if enabled:
            gc.enable()


def calibrate(fn: Callable[[], object], sampling: Sampling) -> int:
    """The smallest iteration count (growing geometrically) whose round meets the budget."""
    iterations = sampling.min_iterations
    while True:
        elapsed = _round(fn, iterations)
        if elapsed >= sampling.budget_ns:
            return iterations
        if elapsed <= 0:
            iterations *= 10
            continue
        # Aim 20% past the budget so the next round usually meets it; at most x10 per step.
        wanted = int(iterations * 1.2 * sampling.budget_ns / elapsed) + 1
        iterations = max(iterations + 1, min(wanted, iterations * 10))


def measure_ns(fn: Callable[[], object], sampling: Sampling) -> float:
    """Nanoseconds per call of `fn`: the best of `sampling.rounds` calibrated rounds."""
    fn()  # warm-up
    iterations = calibrate(fn, sampling)
    best = min(_round(fn, iterations) for _ in range(sampling.rounds))
    return best / iterations


def measure_many(fns: dict[K, Callable[[], object]], sampling: Sampling) -> dict[K, float]:
    """`measure_ns` for several arms at once, with their timed rounds interleaved.

    Each arm gets its own warm-up and calibration, then round r of every arm runs before
    round r+1 of any: a burst of load from elsewhere on the machine hits all arms alike
    instead of skewing one arm's ratio to the others. Still the best of `rounds` per arm.
    """
    iterations: dict[K, int] = {}
    for key, fn in fns.items():
        fn()  # warm-up
        iterations[key] = calibrate(fn, sampling)
    best: dict[K, int] = {}
    for _ in range(sampling.rounds):
        for key, fn in fns.items():
            elapsed = _round(fn, iterations[key])
            best[key] = min(best.get(key, elapsed), elapsed)
    return {key: best[key] / iterations[key] for key in fns}
