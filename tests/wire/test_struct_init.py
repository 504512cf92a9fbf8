"""A Struct class's keyword ``__init__`` (native): binding and errors as a Python function's."""

from __future__ import annotations

import inspect
from typing import Any

import bytewright as bw
import pytest


class P(bw.Struct):
    n: bw.U8
    s: bw.U16
    x: bw.U8 = 5


def reference(self: Any, *, n: Any, s: Any, x: Any = 5) -> None:
    """What ``P.__init__`` is, written in Python (its errors are CPython's own)."""


reference.__qualname__ = "P.__init__"


CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((), {}),
    ((), {"n": 1}),
    ((), {"s": 1}),
    ((), {"x": 1}),
    ((1,), {}),
    ((1, 2), {}),
    ((1,), {"n": 1, "s": 2}),
    ((1,), {"n": 1}),
    ((1, 2), {"n": 1, "s": 2, "x": 3}),
    ((), {"n": 1, "s": 2, "z": 3}),
    ((1,), {"z": 3}),
    ((), {"z": 3, "y": 4}),
]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_errors_are_a_python_functions(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError) as ours:
        P(*args, **kwargs)
    with pytest.raises(TypeError) as theirs:
        reference(object(), *args, **kwargs)
    assert str(ours.value) == str(theirs.value)


def test_missing_self_when_called_from_the_class() -> None:
    with pytest.raises(TypeError) as ours:
        P.__init__(n=1, s=2)  # type: ignore[call-arg]
    assert str(ours.value) == "P.__init__() missing 1 required positional argument: 'self'"


def test_binds_defaults_and_stores_every_field() -> None:
    p = P(n=1, s=2)
    assert (p.n, p.s, p.x) == (1, 2, 5)
    assert P(s=2, x=9, n=1) == P(n=1, s=2, x=9)
    assert P(**{"n": 1, "s": 2}).pack() == bytes([1, 0, 2, 5])  # big-endian by default


def test_a_failed_call_stores_nothing() -> None:
    p = P(n=1, s=2)
    with pytest.raises(TypeError):
        p.__init__(n=7, s=8, z=9)  # type: ignore[misc, call-arg]
    assert (p.n, p.s, p.x) == (1, 2, 5)


def test_called_again_and_bound() -> None:
    p = P(n=1, s=2)
    p.__init__(n=3, s=4)  # type: ignore[misc]
    assert (p.n, p.s, p.x) == (3, 4, 5)
    init = p.__init__  # type: ignore[misc]
    init(n=5, s=6, x=7)
    assert (p.n, p.s, p.x) == (5, 6, 7)
    assert type(P).__call__(P, n=1, s=1) == P(n=1, s=1)


def test_signature() -> None:
    assert str(inspect.signature(P)) == "(*, n, s, x=5)"

    class Q(bw.Struct):
        n: bw.U8 = bw.derived()
        data: bytes = bw.field(len="n")

    # A derived field is optional: pack computes it.
    assert str(inspect.signature(Q)) == "(*, n=None, data)"
    assert Q(data=b"abc").pack() == b"\x03abc"


def test_a_class_with_its_own_setattr_gets_every_field_through_it() -> None:
    seen: list[tuple[str, Any]] = []

    class Logged(bw.Struct):
        a: bw.U8
        b: bw.U8 = 2

        def __setattr__(self, name: str, value: Any) -> None:
            seen.append((name, value))
            object.__setattr__(self, name, value)

    v = Logged(a=1)
    assert seen == [("a", 1), ("b", 2)]
    assert v.pack() == b"\x01\x02"


def test_keywords_equal_but_not_identical_to_the_field_names() -> None:
    name = "".join(["n"])  # a fresh str, not the interned field name
    assert P(**{name: 1, "s": 2}).n == 1


def test_an_init_written_in_the_class_body_is_kept() -> None:
    class Own(bw.Struct):
        a: bw.U8
        b: bw.U16

        def __init__(self, a: int) -> None:
            self.a, self.b = a, a * 256

    assert Own(2).pack() == b"\x02\x02\x00"
    assert Own.unpack(b"\x02\x02\x00") == Own(2)  # unpack does not call it
    assert Own.__match_args__ == ("a", "b")

    class Sub(Own):  # no __init__ of its own: the keyword one over every field
        c: bw.U8

    assert Sub(a=1, b=2, c=3).pack() == b"\x01\x00\x02\x03"

    class SubOwn(Own):
        c: bw.U8

        def __init__(self, c: int) -> None:
            super().__init__(c)
            self.c = c

    assert SubOwn(4).pack() == b"\x04\x04\x00\x04"


def test_an_own_init_is_kept_when_compiling_waits_for_a_later_class() -> None:
    class Outer(bw.Struct):
        inner: Later  # type: ignore[name-defined]

        def __init__(self, v: int) -> None:
            self.inner = Later(v=v)

    class Later(bw.Struct):
        v: bw.U8

    globals()["Later"] = Later
    try:
        assert Outer(7).pack() == b"\x07"
    finally:
        del globals()["Later"]
