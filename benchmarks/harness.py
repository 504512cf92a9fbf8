"""Timing and gating: the rules every part follows.

1. Correctness gate before timing: an arm whose output is wrong is reported, never timed.
2. The arms compared with each other are timed together: each is warmed up and calibrated
   on its own, then round r of every arm runs before round r+1 of any, so a burst of load
   from elsewhere hits all arms alike. Each arm keeps its best round.
3. The garbage collector is paused during a round, as `timeit` does.
4. Calls go through `DirectCall`, a compiled loop that calls the library function itself.
"""

from __future__ import annotations

import functools
import gc
import importlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

K = TypeVar("K")


class Unavailable(Exception):
    """The arm's library or the API it needs is missing: reported, never timed."""


class NotApplicable(Exception):
    """The library cannot express this workload (e.g. ctypes and a counted vector)."""


class Incorrect(Exception):
    """The arm ran but its output differs from the reference: reported, never timed."""


def describe(exc: BaseException) -> str:
    """One line for a report cell: the exception's type and first message line."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = re.sub(r" \(/[^)]*\)", "", text)  # drop file paths from import errors
    text = text if len(text) <= 160 else text[:157] + "..."
    if isinstance(exc, Unavailable | NotApplicable | Incorrect):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def status(exc: BaseException) -> str:
    """`unavailable: ...`, `n/a: ...` or `incorrect: ...` for an arm that was not timed."""
    kind = {NotApplicable: "n/a", Incorrect: "incorrect"}.get(type(exc), "unavailable")
    return f"{kind}: {describe(exc)}"


@functools.cache
def need(module: str, *attributes: str) -> Any:
    """Imports `module` and checks its (dotted) `attributes`, or raises Unavailable.

    Remembered once found: arms call it inside timed code too (the build cost defines its
    classes from nothing on every call), where checking nine attributes of one library and
    none of another's would charge the harness's checks to the first.
    """
    try:
        found = importlib.import_module(module)
    except ImportError as exc:
        raise Unavailable(describe(exc)) from exc
    for name in attributes:
        try:
            functools.reduce(getattr, name.split("."), found)
        except AttributeError as exc:
            raise Unavailable(f"{module} has no {name} yet") from exc
    return found


@dataclass(frozen=True)
class Sampling:
    budget_ns: int  # a timed round lasts at least this long
    rounds: int  # best of this many rounds at the calibrated count


class DirectCall:
    """`fn(*args, **kwargs)` timed as the user writes it: one call per iteration, no wrapper.

    A `functools.partial` with keywords goes through CPython's slow `tp_call` path with a
    fresh kwargs dict on every call (about 200 ns here): that would charge the arm that needs
    a keyword (`classes=`) for the harness's convenience. Like `timeit`, the loop is compiled
    source that calls `fn` directly with the arguments as locals.
    """

    def __init__(self, fn: Callable[..., object], *args: Any, **kwargs: Any) -> None:
        while isinstance(fn, functools.partial):  # time the library call itself
            args, kwargs, fn = (*fn.args, *args), {**fn.keywords, **kwargs}, fn.func
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

    def loop(self, iterations: int) -> int:
        start = time.perf_counter_ns()
        self._run(range(iterations), self.fn, *self.args, *self.kwargs.values())
        return time.perf_counter_ns() - start


def _round(call: DirectCall, iterations: int) -> int:
    enabled = gc.isenabled()
    gc.disable()  # a collection landing in one arm's round is noise
    try:
        return call.loop(iterations)
    finally:
        if enabled:
            gc.enable()


def _calibrate(call: DirectCall, sampling: Sampling) -> int:
    """The smallest iteration count (growing geometrically) whose round meets the budget."""
    iterations = 1
    while (elapsed := _round(call, iterations)) < sampling.budget_ns:
        if elapsed <= 0:
            iterations *= 10
            continue
        # Aim 20% past the budget so the next round usually meets it; at most x10 per step.
        wanted = int(iterations * 1.2 * sampling.budget_ns / elapsed) + 1
        iterations = max(iterations + 1, min(wanted, iterations * 10))
    return iterations


def measure(calls: dict[K, Callable[[], object]], sampling: Sampling) -> dict[K, float]:
    """Nanoseconds per call of every arm: warm-up, calibration, then interleaved rounds."""
    direct = {k: c if isinstance(c, DirectCall) else DirectCall(c) for k, c in calls.items()}
    iterations = {}
    for key, call in direct.items():
        call()  # warm-up
        iterations[key] = _calibrate(call, sampling)
    best: dict[K, int] = {}
    for _ in range(sampling.rounds):
        for key, call in direct.items():
            elapsed = _round(call, iterations[key])
            best[key] = min(best.get(key, elapsed), elapsed)
    return {key: best[key] / iterations[key] for key in direct}


def gate(
    prepare: Callable[[], Callable[[], object]], check: Callable[[Any], None]
) -> tuple[Callable[[], object] | None, str]:
    """(the call to time, "ok") if `prepare()` works and `check` accepts one call's result.

    `prepare` raises Unavailable or NotApplicable; `check` raises Incorrect. Anything else
    raised while preparing means unavailable, and while calling means incorrect.
    """
    try:
        call = prepare()
    except Exception as exc:
        return None, status(exc)
    try:
        check(call())
    except (Unavailable, NotApplicable) as exc:  # found out only when called
        return None, status(exc)
    except Incorrect as exc:
        return None, f"incorrect: {describe(exc)}"
    except Exception as exc:
        return None, f"incorrect: raised {describe(exc)}"
    return call, "ok"


def race(
    arms: dict[K, Callable[[], Callable[[], object]]],
    check: Callable[[K, Any], None],
    sampling: Sampling,
) -> tuple[dict[K, float], dict[K, str]]:
    """Gate every arm, then time the ones that passed together: (ns per call, statuses)."""
    ready, statuses = {}, {}
    for key, prepare in arms.items():
        call, statuses[key] = gate(prepare, functools.partial(check, key))
        if call is not None:
            ready[key] = call
    return measure(ready, sampling), statuses
