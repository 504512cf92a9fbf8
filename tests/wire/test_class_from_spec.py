"""Struct classes made from a spec (`new_class` in crates/python/src/cpython.rs).

On CPython 3.11 a Struct class whose namespace defines no special method is made with
`PyType_FromSpecWithBases` instead of `type.__new__`. Each class defined here is also made
by `type.__new__` from the same namespace, and the two must be the same type in every
respect a program can see: metaclass, flags, sizes, offsets, every slot function, the
slot tables, the members, `__slots__` and the namespace in the same order. Under
`BYTEWRIGHT_PORTABLE=1` every class comes from `type.__new__` and the comparison holds
trivially; the behaviour tests run either way.
"""

import gc
import os
import struct
import sys
import weakref

import bytewright as bw
import bytewright.struct as bw_struct
import pytest
from bytewright import _native

FAST = _native.fast_paths()["class_from_spec"]


@pytest.fixture
def made(monkeypatch):
    """Records (name, from a spec?, differences from type.__new__'s class) per class."""
    seen = []
    real = bw_struct.new_class

    def new_class(mcls, name, bases, ns):
        reference = type.__new__(mcls, name, bases, dict(ns))
        before = _native.classes_from_spec()
        cls = real(mcls, name, bases, ns)
        spec = _native.classes_from_spec() == before + 1
        ours, theirs = _native.class_layout(cls), _native.class_layout(reference)
        diff = {k: (ours[k], theirs[k]) for k in ours if ours[k] != theirs[k]}
        mine, ref = list(cls.__dict__.items()), list(reference.__dict__.items())
        if [k for k, _ in mine] != [k for k, _ in ref]:
            diff["__dict__ order"] = ([k for k, _ in mine], [k for k, _ in ref])
        for (k, v), (_, w) in zip(mine, ref, strict=False):  # the order is compared above
            if type(v).__name__ == "member_descriptor":
                if (type(w).__name__, v.__name__) != ("member_descriptor", w.__name__):
                    diff[k] = (v, w)
            elif isinstance(v, classmethod | staticmethod):  # made afresh by type.__new__
                if type(v) is not type(w) or v.__func__ is not w.__func__:
                    diff[k] = (v, w)
            elif v is not w:
                diff[k] = (v, w)
        seen.append((name, spec, diff))
        return cls

    monkeypatch.setattr(bw_struct, "new_class", new_class)
    return seen


def test_struct_classes_match_type_new(made):
    class Record(bw.Struct):
        """A record."""

        zeta: bw.U8
        alpha: bw.U16 = 5
        mid: bw.U32
        payload_len: bw.U16
        payload: bytes = bw.field(len="payload_len")

        def total(self) -> int:
            return self.zeta + self.alpha

        @property
        def doubled(self) -> int:
            return 2 * self.mid

        LIMIT = 10

    class Frame(bw.Struct, byteorder="little"):
        count: bw.U8
        records: list[Record] = bw.field(count="count")

    class Empty(bw.Struct):
        pass

    class Flags(bw.Struct):
        a: int = bw.bits(3)
        b: int = bw.bits(5)

    class Sub(Record):
        extra: bw.U8

    assert [m[0] for m in made] == ["Record", "Frame", "Empty", "Flags", "Sub"]
    for name, spec, diff in made:
        assert diff == {}, name
        assert spec == FAST, name
    # They work as Struct classes.
    r = Record(zeta=1, mid=7, payload=b"xy")
    assert r.total() == 6 and r.doubled == 14 and Record.LIMIT == 10
    assert Record.__doc__ == "A record." and Frame.__doc__ is None
    f = Frame(records=[r, r])
    assert Frame.unpack(f.pack()) == f
    # The nested records take the frame's byte order.
    assert f.pack() == b"\x02" + 2 * (struct.pack("<BHIH", 1, 5, 7, 2) + b"xy")
    assert Flags.unpack(Flags(a=5, b=17).pack()) == Flags(a=5, b=17)
    s = Sub(zeta=1, mid=2, payload=b"", extra=9)
    assert Sub.unpack(s.pack()) == s and isinstance(s, Record)
    assert type(Record) is bw_struct.StructMeta
    assert Record.__qualname__.endswith("<locals>.Record") and Record.__module__ == __name__
    assert Record.__slots__ == ("zeta", "alpha", "mid", "payload_len", "payload")
    with pytest.raises(AttributeError):
        r.not_a_field = 1
    with pytest.raises(TypeError, match="unhashable"):
        hash(r)


def test_classes_that_define_special_methods_come_from_type_new(made):
    class Shown(bw.Struct):
        a: bw.U8

        def __repr__(self) -> str:
            return "shown"

    children = []

    class Parent(bw.Struct):
        def __init_subclass__(cls, **kw):
            super().__init_subclass__(**kw)
            children.append(cls.__name__)

    class Child(Parent):
        b: bw.U8

    class UsesSuper(bw.Struct):
        c: bw.U8

        def total(self) -> int:
            return super().__sizeof__() * 0 + self.c

    assert repr(Shown(a=1)) == "shown"
    assert children == ["Child", "Child"]  # the fixture's reference class is one
    assert UsesSuper(c=4).total() == 4
    spec = {name: s for name, s, _ in made}
    assert spec == {"Shown": False, "Parent": False, "Child": False, "UsesSuper": False}
    assert [(name, diff) for name, _, diff in made if diff] == []


def test_instances_and_classes_are_collected():
    class Witness:
        died = 0

        def __del__(self):
            Witness.died += 1

    class Node(bw.Struct):
        a: bw.U8
        b: bw.U8

    n = Node(a=1, b=2)
    n.a = [n, Witness()]  # a cycle through a slot: only the collector frees it
    del n
    gc.collect()
    assert Witness.died == 1
    # Classes die too, and give back their reference to the metaclass.
    meta = bw_struct.StructMeta
    gc.collect()
    before = sys.getrefcount(meta)
    refs = []
    for _ in range(200):

        class Temp(bw.Struct):
            x: bw.U16

        refs.append(weakref.ref(Temp))
        del Temp
    gc.collect()
    assert all(r() is None for r in refs)
    assert sys.getrefcount(meta) == before


@pytest.mark.skipif(
    os.environ.get("BYTEWRIGHT_PORTABLE") == "1",
    reason="the portable run makes no class from a spec",
)
def test_the_fast_path_is_taken_on_cpython_311():
    if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11):
        assert not FAST
        return
    assert FAST
    before = _native.classes_from_spec()

    class P(bw.Struct):
        x: bw.U8

    assert _native.classes_from_spec() == before + 1
    assert P(x=3).pack() == b"\x03"


def test_a_name_no_utf8_holds_is_left_to_type_new(made):
    namespace = {"\ud800": 1}

    class Odd(bw.Struct):
        a: bw.U8
        vars().update(namespace)

    assert getattr(Odd, "\ud800") == 1
    assert Odd(a=2).pack() == b"\x02"
    assert made == [("Odd", False, {})]


def test_a_docstring_no_utf8_holds_fails_as_type_new_fails():
    with pytest.raises(UnicodeEncodeError):
        type.__new__(bw_struct.StructMeta, "T", (), {"__doc__": "\ud800"})
    with pytest.raises(UnicodeEncodeError):

        class Bad(bw.Struct):
            """\ud800"""

            a: bw.U8


def test_a_docstring_with_a_nul_is_kept(made):
    class Nul(bw.Struct):
        """a\0b"""

        a: bw.U8

    assert Nul.__doc__ == "a\0b" and Nul(a=1).pack() == b"\x01"
    assert made == [("Nul", False, {})]
