"""How loads_pickle finds a pickle's class in a `classes=` list or tuple: by the class's
`module.qualname` as one text, compared in place (the first class of that name wins)."""

import pickle
import re
from dataclasses import dataclass

import pytest
from bytewright.pickle import UnpicklingError, loads_pickle


def make(module, qualname, base=object):
    cls = type(qualname.rsplit(".", 1)[-1], (base,), {"__module__": module})
    cls.__qualname__ = qualname
    return cls


def stack_global(module, name, proto=4):
    """A pickle of the global `module` `name` itself (no instance)."""
    m, n = module.encode(), name.encode()
    if proto < 4:
        return b"\x80\x02c" + m + b"\n" + n + b"\n."
    return b"\x80\x04\x8c" + bytes([len(m)]) + m + b"\x8c" + bytes([len(n)]) + n + b"\x93."


@dataclass
class Point:
    x: float
    y: float


MANY = tuple(make("lookup_many", f"C{i}") for i in range(64))


@pytest.mark.parametrize("container", [tuple, list])
@pytest.mark.parametrize("i", [0, 1, 37, 63])
def test_the_named_class_among_many(container, i):
    assert loads_pickle(stack_global("lookup_many", f"C{i}"), classes=container(MANY)) is MANY[i]


@pytest.mark.parametrize("container", [tuple, list])
def test_an_instance_among_many_registered_classes(container):
    classes = container((*MANY, Point, *MANY))
    got = loads_pickle(pickle.dumps([Point(1.0, 2.0), Point(3.0, 4.0)], 5), classes=classes)
    assert got == [Point(1.0, 2.0), Point(3.0, 4.0)] and type(got[1]) is Point


@pytest.mark.parametrize("container", [tuple, list])
def test_a_shadowed_name_is_the_first_class_of_that_name(container):
    first, second = make("lookup_shadow", "Same"), make("lookup_shadow", "Same")
    data = stack_global("lookup_shadow", "Same")
    assert loads_pickle(data, classes=container((first, second))) is first
    assert loads_pickle(data, classes=container((second, first))) is second


@pytest.mark.parametrize("container", [tuple, list])
def test_the_name_is_one_text_whatever_the_split(container):
    # `pkg.sub` + `Thing` and `pkg` + `sub.Thing` are the same name, as in a dict of names.
    cls = make("pkg.sub", "Thing")
    classes = container((cls,))
    assert loads_pickle(stack_global("pkg", "sub.Thing"), classes=classes) is cls
    assert loads_pickle(stack_global("pkg.sub", "Thing"), classes=classes) is cls
    nested = make("pkg", "Outer.Inner")
    assert loads_pickle(stack_global("pkg.Outer", "Inner"), classes=container((nested,))) is nested


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("pkg.su", "b.Thing"),  # same length, other text
        ("pkg.sub", "Thin"),
        ("pkg.sub", "hing"),
        ("pkg.subX", "Thing"),
        ("kg.sub", "Thing"),
        ("pkg", "subThing"),
        ("pkg.sub.Thing", "Thing"),
        ("sub", "Thing"),
    ],
)
@pytest.mark.parametrize("container", [tuple, list])
def test_a_near_name_is_not_the_class(module, name, container):
    refused = re.escape(f"global {module}.{name} is not allowed; if it is your class")
    with pytest.raises(UnpicklingError, match=refused):
        loads_pickle(stack_global(module, name), classes=container((make("pkg.sub", "Thing"),)))


@pytest.mark.parametrize("proto", [0, 1, 2])
def test_protocols_0_to_2_name_a_registered_class_with_global(proto):
    # GLOBAL (and, at protocols 0-1, GLOBAL again for the second instance) finds the class.
    value = [Point(1.0, 2.0), Point(5.0, 6.0)]
    got = loads_pickle(pickle.dumps(value, proto), classes=(*MANY, Point))
    assert got == value and all(type(p) is Point for p in got)


def test_python_2_module_names_are_not_registered_class_names():
    # `__builtin__.set` is Python 3's `builtins.set` (a table global), never a class of classes=.
    decoy = make("__builtin__", "set")
    assert loads_pickle(stack_global("__builtin__", "set", proto=2), classes=(decoy,)) is set


def test_a_non_class_before_the_match_is_a_type_error():
    with pytest.raises(TypeError, match="must hold classes"):
        loads_pickle(stack_global("lookup_many", "C1"), classes=(MANY[0], 5, MANY[1]))
