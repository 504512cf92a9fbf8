"""A hostile corpus: exploit pickles are rejected before any effect.

Each payload is assembled by hand from opcodes. For each one: `UnpicklingError`, the
canary file is not created, and no module is imported (sys.modules is unchanged).
"""

import io
import pickle
import pickletools
import struct
import sys

import pytest
from bytewright.pickle import UnpicklingError, loads_pickle

CANARY = "/tmp/bytewright-reader-canary"


class Registered:
    """A class the tests register: trusted, so its hooks may run, but only once the whole
    stream has passed; every payload here ends badly, so they never do."""

    def __init__(self, *args):
        open(CANARY, "w").close()

    def __setstate__(self, state):
        open(CANARY, "w").close()

    def __reduce__(self):
        return (open, (CANARY, "w"))


REG = f"{Registered.__module__}\n{Registered.__qualname__}\n".encode()


class Unregistered:
    pass


UNREG = f"{Unregistered.__module__}\n{Unregistered.__qualname__}\n".encode()


def g(module: str, name: str) -> bytes:
    """GLOBAL (protocol 0)."""
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def u(text: str) -> bytes:
    """BINUNICODE."""
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def su(text: str) -> bytes:
    """SHORT_BINUNICODE."""
    raw = text.encode()
    return b"\x8c" + bytes([len(raw)]) + raw


def sg(module: str, name: str) -> bytes:
    """STACK_GLOBAL (protocol 4)."""
    return su(module) + su(name) + b"\x93"


def call(fn: bytes, *args: bytes) -> bytes:
    """fn(*args) through MARK ... TUPLE REDUCE."""
    return fn + b"(" + b"".join(args) + b"tR"


P2 = b"\x80\x02"
P4 = b"\x80\x04"
TOUCH = u(f"touch {CANARY}")
OPEN_CANARY = f"open({CANARY!r}, 'w')"


def then_exploit(payload: bytes) -> bytes:
    """`payload`'s value and an exploit after it, in one list: rejected as a whole."""
    proto = payload[:2] if payload.startswith(b"\x80") else b""
    body = payload[len(proto) : -1]
    return proto + b"(" + body + call(g("os", "system"), TOUCH) + b"l."


CORPUS = {
    # os and friends
    "os.system": call(g("os", "system"), TOUCH) + b".",
    "posix.system": call(g("posix", "system"), TOUCH) + b".",
    "nt.system": call(g("nt", "system"), TOUCH) + b".",
    "os.popen": call(g("os", "popen"), TOUCH) + b".",
    "os.execv": call(g("os", "execv"), u("/bin/sh"), b"(" + u("sh") + b"l") + b".",
    "os.system-stack-global": P4 + sg("os", "system") + TOUCH + b"\x85R.",
    "subprocess.Popen": call(g("subprocess", "Popen"), b"(" + u("touch") + u(CANARY) + b"l") + b".",
    "subprocess.call": call(g("subprocess", "call"), TOUCH) + b".",
    "subprocess.check_output": call(g("subprocess", "check_output"), b"(" + u("id") + b"l") + b".",
    "subprocess.run": P4 + sg("subprocess", "run") + TOUCH + b"\x85R.",
    # builtins
    "builtins.eval": call(g("builtins", "eval"), u(OPEN_CANARY)) + b".",
    "builtins.exec": call(g("builtins", "exec"), u(OPEN_CANARY)) + b".",
    "__builtin__.eval": call(g("__builtin__", "eval"), u(OPEN_CANARY)) + b".",
    "builtins.compile": call(g("builtins", "compile"), u("1"), u("x"), u("eval")) + b".",
    "builtins.open": call(g("builtins", "open"), u(CANARY), u("w")) + b".",
    "builtins.__import__": call(g("builtins", "__import__"), u("antigravity")) + b".",
    "builtins.getattr-os": call(
        g("builtins", "getattr"), call(g("builtins", "__import__"), u("os")), u("system")
    )
    + b".",
    "getattr-zoneinfo-other-attr": call(
        g("builtins", "getattr"), g("zoneinfo", "ZoneInfo"), u("clear_cache")
    )
    + b")R.",
    "getattr-on-allowed-type": call(g("builtins", "getattr"), g("pathlib", "Path"), u("write_text"))
    + b".",
    "builtins.breakpoint": call(g("builtins", "breakpoint")) + b".",
    # importlib, operator, functools, pdb, runpy
    "importlib.import_module": call(g("importlib", "import_module"), u("antigravity")) + b".",
    "operator.attrgetter": call(call(g("operator", "attrgetter"), u("system")), g("os", "path"))
    + b".",
    "operator.methodcaller": call(
        call(g("operator", "methodcaller"), u("system"), TOUCH), g("os", "path")
    )
    + b".",
    "_operator.attrgetter": call(g("_operator", "attrgetter"), u("x")) + b".",
    "functools.partial": call(call(g("functools", "partial"), g("os", "system"), TOUCH)) + b".",
    "functools.reduce": call(g("functools", "reduce"), g("os", "system"), b"(" + TOUCH + b"l")
    + b".",
    "pdb.run": call(g("pdb", "run"), u(OPEN_CANARY)) + b".",
    "runpy._run_code": call(g("runpy", "_run_code"), u(OPEN_CANARY), b"}") + b".",
    "webbrowser.open": call(g("webbrowser", "open"), u("http://example.invalid")) + b".",
    "shutil.rmtree": call(g("shutil", "rmtree"), u("/nonexistent-bytewright")) + b".",
    "types.FunctionType": call(g("types", "FunctionType"), b"N", b"}") + b".",
    "sys.modules-as-value": g("sys", "modules") + b".",
    # nested pickle and codecs
    "pickle.loads": call(g("pickle", "loads"), b"C\x05N.abc") + b".",
    "_pickle.loads": call(g("_pickle", "loads"), b"C\x02N.") + b".",
    "nested-pickle-of-os.system": call(
        g("pickle", "loads"), b"B" + struct.pack("<I", 32) + call(g("os", "system"), TOUCH)[:32]
    )
    + b".",
    "codecs.decode": call(g("codecs", "decode"), u("x"), u("rot13")) + b".",
    "_codecs.encode-other-encoding": call(g("_codecs", "encode"), u("x"), u("utf-16")) + b".",
    "_codecs.encode-three-args": call(g("_codecs", "encode"), u("x"), u("latin1"), u("strict"))
    + b".",
    "_codecs.decode": call(g("_codecs", "decode"), b"C\x01x", u("hex")) + b".",
    # memo tricks
    "memo-global-then-reduce": g("os", "system") + b"p0\n0g0\n(" + TOUCH + b"tR.",
    "memo-strings-for-stack-global": P4 + su("os") + b"\x94" + su("system") + b"\x94" + b"00"
    b"h\x00h\x01\x93" + TOUCH + b"\x85R.",
    "memo-get-unwritten": P2 + b"h\x07.",
    "memo-long-binget-huge": P2 + b"j\xff\xff\xff\xff.",
    "memo-overwrite-allowed-with-global": P2
    + g("datetime", "date")
    + b"q\x00"
    + g("os", "system")
    + b"q\x00h\x00"
    + TOUCH
    + b"\x85R.",
    "global-smuggled-as-value": b"(" + g("builtins", "getattr") + b"l.",
    "function-global-in-dict": b"}" + u("k") + g("copyreg", "_reconstructor") + b"s.",
    "allowed-global-bad-args": call(g("datetime", "date"), g("builtins", "list")) + b".",
    "defaultdict-factory-not-builtin": call(g("collections", "defaultdict"), g("datetime", "date"))
    + b".",
    # BUILD on things that are not registered instances
    "build-on-dict": b"}" + b"}" + u("__setstate__") + g("os", "system") + b"sb.",
    "build-on-list": b"]}" + u("append") + b"Nsb.",
    "build-on-global": g("os", "path") + b"}b.",
    "build-on-allowed-global": g("collections", "OrderedDict") + b"}" + u("x") + b"K\x01sb.",
    "build-on-stdlib-value": call(g("decimal", "Decimal"), u("1")) + b"}" + u("x") + b"K\x01sb.",
    "build-on-enum-value": call(g("datetime", "timedelta"), b"K\x01K\x00K\x00") + b"Nb.",
    # __setstate__ / dunder gadgets on a registered class
    "setstate-dunder-class": then_exploit(
        P2 + g(*REG.decode().split()) + b")\x81}" + u("__class__") + g("os", "system") + b"sb."
    ),
    "setstate-dunder-dict": then_exploit(
        P2 + g(*REG.decode().split()) + b")\x81}" + u("__dict__") + b"}sb."
    ),
    "setstate-slots-dunder": then_exploit(
        P2 + g(*REG.decode().split()) + b")\x81N}" + u("__reduce__") + b"N" + b"s\x86b."
    ),
    "registered-class-reduce": then_exploit(call(g(*REG.decode().split()), TOUCH) + b"."),
    "registered-newobj-ex-kwargs": then_exploit(
        P4 + g(*REG.decode().split()) + b")}" + u("a") + b"K\x01s\x92."
    ),
    "registered-newobj-with-args": then_exploit(
        P2 + g(*REG.decode().split()) + TOUCH + b"\x85\x81."
    ),
    # INST / OBJ
    "inst-os.system": b"(" + TOUCH + b"ios\nsystem\n.",
    "inst-registered-with-args": b"(" + TOUCH + b"i" + REG + b".",
    "inst-unregistered": b"(i" + UNREG + b".",
    "obj-builtins.eval": b"(" + g("builtins", "eval") + u(OPEN_CANARY) + b"o.",
    "obj-registered-with-args": b"(" + g(*REG.decode().split()) + TOUCH + b"o.",
    "obj-unregistered": b"(" + g(*UNREG.decode().split()) + b"o.",
    "newobj-unregistered": P2 + g(*UNREG.decode().split()) + b")\x81.",
    "newobj-builtin-type": P2 + g("builtins", "object") + b")\x81.",
    "reconstructor-unregistered": call(
        g("copy_reg", "_reconstructor"),
        g(*UNREG.decode().split()),
        g("__builtin__", "object"),
        b"N",
    )
    + b".",
    "reconstructor-bad-base": call(
        g("copyreg", "_reconstructor"), g(*REG.decode().split()), g("builtins", "list"), b"]"
    )
    + b".",
    "copyreg.__newobj__": call(g("copyreg", "__newobj__"), g(*UNREG.decode().split())) + b".",
    # other opcodes
    "persid": b"P" + TOUCH[5:] + b"\n.",
    "binpersid": u("x") + b"Q.",
    "ext1": P2 + b"\x82\x01.",
    "ext4": P2 + b"\x84\x01\x00\x00\x00.",
    "next-buffer": b"\x80\x05\x97.",
    # an exploit after plenty of valid data is still rejected before anything is built
    "exploit-at-the-end": P2
    + b"]("
    + b"".join(call(g("datetime", "timedelta"), b"K\x01K\x02K\x03") for _ in range(50))
    + b"e"
    + call(g("os", "system"), TOUCH)
    + b"a.",
    "zoneinfo-path-traversal": call(g("zoneinfo", "ZoneInfo"), u("../../../../etc/passwd")) + b".",
    "numpy-reconstruct": call(g("numpy.core.multiarray", "_reconstruct"), b"N") + b".",
    "torch-rebuild-tensor": P4 + sg("torch._utils", "_rebuild_tensor_v2") + b")R.",
}


@pytest.fixture(autouse=True)
def no_canary():
    import os

    if os.path.exists(CANARY):
        os.remove(CANARY)
    yield
    assert not os.path.exists(CANARY), "a payload had an effect"


def test_corpus_is_large_and_structurally_pickle():
    assert len(CORPUS) >= 40
    for name, payload in CORPUS.items():
        if name.startswith("memo-get") or name.startswith("memo-long") or "overwrite" in name:
            continue
        try:
            pickletools.dis(payload, out=io.StringIO())
        except Exception as exc:  # pragma: no cover - a broken payload is a broken test
            raise AssertionError(f"{name} is not a well-formed pickle: {exc}") from exc


@pytest.mark.parametrize("name", sorted(CORPUS))
@pytest.mark.parametrize("registered", [False, True], ids=["plain", "with-classes"])
def test_rejected_before_any_effect(name, registered):
    payload = CORPUS[name]
    before = set(sys.modules)
    classes = [Registered] if registered else []
    with pytest.raises(UnpicklingError) as info:
        loads_pickle(payload, classes=classes)
    assert set(sys.modules) == before
    assert type(info.value).__mro__[1:].count(pickle.UnpicklingError) == 1


@pytest.mark.parametrize(
    ("name", "needle"),
    [
        ("os.system", "os.system is not allowed"),
        ("builtins.eval", "builtins.eval is not allowed; it can run code"),
        ("numpy-reconstruct", "numpy.core.multiarray._reconstruct is not allowed"),
        ("persid", "persistent ids"),
        ("build-on-list", "BUILD on a list"),
        ("inst-unregistered", "classes=["),
        ("getattr-zoneinfo-other-attr", "REDUCE of builtins.getattr"),
    ],
)
def test_messages_name_the_global_or_opcode(name, needle):
    with pytest.raises(UnpicklingError) as info:
        loads_pickle(CORPUS[name])
    assert needle in str(info.value)


def test_message_suggests_classes_for_an_unknown_class():
    with pytest.raises(UnpicklingError) as info:
        loads_pickle(pickle.dumps(Unregistered(), 2))
    name = f"{Unregistered.__module__}.{Unregistered.__qualname__}"
    assert f"classes=[{name}]" in str(info.value)


def test_registered_class_hooks_wait_for_the_whole_stream():
    payload = P2 + g(*REG.decode().split()) + b")\x81}" + u("x") + b"K\x01sb."
    with pytest.raises(UnpicklingError, match=r"os\.system"):
        loads_pickle(then_exploit(payload), classes=[Registered])


def test_messages_name_the_registered_class():
    payload = call(g(*REG.decode().split()), g("copyreg", "_reconstructor")) + b"."
    with pytest.raises(UnpicklingError) as info:
        loads_pickle(payload, classes=[Registered])
    assert f"REDUCE of {Registered.__module__}.Registered" in str(info.value)
    assert "only with values" in str(info.value)


# Plain values are built while the stream is checked; anything that could run code waits
# until the whole stream has passed. These payloads put such code before an exploit.

EVENTS: list[str] = []


class Finalized:
    """A registered class whose instances run code when they are dropped."""

    def __del__(self):
        EVENTS.append("del")


class HashedKey:
    """A registered class whose instances run code when hashed (as a dict or set key)."""

    def __hash__(self):
        EVENTS.append("hash")
        return 1

    def __eq__(self, other):
        EVENTS.append("eq")
        return self is other


def traced(value):
    """An `allow=` constructor."""
    EVENTS.append("called")
    return value


def blank(cls: type) -> bytes:
    return g(cls.__module__, cls.__qualname__) + b")\x81"


EXPLOIT = call(g("os", "system"), TOUCH)


@pytest.fixture()
def events():
    import gc

    EVENTS.clear()
    yield EVENTS
    gc.collect()
    EVENTS.clear()


def traced_global() -> bytes:
    return g(traced.__module__, traced.__qualname__)


def test_allow_constructor_not_called_before_a_later_exploit(events):
    payload = P2 + b"](" + call(traced_global(), b"K\x01") + EXPLOIT + b"e."
    with pytest.raises(UnpicklingError, match=r"os\.system"):
        loads_pickle(payload, allow=[traced])
    assert events == []
    assert loads_pickle(P2 + b"](" + call(traced_global(), b"K\x01") + b"e.", allow=[traced]) == [1]
    assert events == ["called"]


def test_instance_with_del_not_made_before_a_later_exploit(events):
    import gc

    with pytest.raises(UnpicklingError, match=r"os\.system"):
        loads_pickle(P2 + b"](" + blank(Finalized) + EXPLOIT + b"e.", classes=[Finalized])
    gc.collect()
    assert events == []
    got = loads_pickle(
        P2 + b"](" + blank(Finalized) + blank(Finalized) + b"e.", classes=[Finalized]
    )
    assert [type(x) for x in got] == [Finalized, Finalized]
    del got
    gc.collect()
    assert events == ["del", "del"]


@pytest.mark.parametrize(
    "container",
    [
        pytest.param(lambda key: b"}(" + key + b"K\x01u", id="setitems"),
        pytest.param(lambda key: b"(" + key + b"K\x01d", id="dict"),
        pytest.param(lambda key: b"\x8f(" + key + b"\x90", id="additems"),
        pytest.param(lambda key: b"(" + key + b"\x91", id="frozenset"),
        pytest.param(lambda key: b"}(" + key + b"\x85K\x01u", id="tuple-key"),
    ],
)
def test_keys_that_run_code_not_hashed_before_a_later_exploit(events, container):
    body = container(blank(HashedKey))
    with pytest.raises(UnpicklingError, match=r"os\.system"):
        loads_pickle(P4 + b"](" + body + EXPLOIT + b"e.", classes=[HashedKey])
    assert events == []
    (got,) = loads_pickle(P4 + b"](" + body + b"e.", classes=[HashedKey])
    assert "hash" in events
    assert len(got) == 1 and type(next(iter(got))) in (HashedKey, tuple)


def test_plain_values_before_an_exploit_are_simply_dropped():
    plain = b"".join(su(f"s{i}") + b"\x94" for i in range(200))
    payload = P4 + b"](" + plain + b"}(" + su("k") + b"K\x01u" + EXPLOIT + b"e."
    with pytest.raises(UnpicklingError, match=r"os\.system"):
        loads_pickle(payload)
    assert loads_pickle(P4 + b"](" + plain + b"e.") == [f"s{i}" for i in range(200)]
