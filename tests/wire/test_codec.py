"""Codec objects: pickling, sizes, dict vs typed, thread use; typed ==/repr; the README."""

import pickle
import threading

import bytewright as bw
import pytest
from conftest import Envelope, Frame, Record, make_envelope


def test_readme_example(telemetry):
    assert len(telemetry) == 3066
    back = Envelope.unpack(telemetry)
    assert back.frame.record_count == 64 and back.frame_size == 3062
    assert back.pack() == telemetry
    assert back == make_envelope()
    codec = bw.compile(Envelope)
    assert codec.pack(codec.unpack(telemetry)) == telemetry
    obj, end = Envelope.unpack_from(telemetry + b"tail")
    assert end == 3066 and obj == back


def test_codec_pickle_roundtrip(telemetry):
    codec = bw.compile(Envelope)
    clone = pickle.loads(pickle.dumps(codec))
    assert isinstance(clone, bw.Codec)
    value = codec.unpack(telemetry)
    assert clone.unpack(telemetry) == value
    assert clone.pack(value) == telemetry
    assert clone.static_size == codec.static_size and clone.min_size == codec.min_size


def test_typed_codec_pickle_roundtrip(telemetry):
    typed = Envelope.__bw__.codec
    clone = pickle.loads(pickle.dumps(typed))
    back = clone.unpack(telemetry)
    assert isinstance(back, Envelope) and back.pack() == telemetry


def test_limited_codec_pickle_keeps_limits():
    class C(bw.Struct):
        n: bw.U8
        xs: list[bw.U8] = bw.field(count="n")

    codec = pickle.loads(pickle.dumps(bw.compile(C, limits=bw.Limits(max_count=1))))
    assert codec.unpack(b"\x01\x05") == {"n": 1, "xs": [5]}
    with pytest.raises(bw.DecodeError):
        codec.unpack(b"\x02\x05\x06")


def test_struct_instances_pickle():
    r = Record(record_id=1, kind=2, status=3, code=4, x=-1, y=1, reading=5, payload=b"p")
    assert pickle.loads(pickle.dumps(r)) == r


def test_static_and_min_size():
    assert bw.compile(Record).static_size is None
    assert bw.compile(Record).min_size == 26
    assert bw.compile(Frame).min_size == 54 - 15
    assert bw.compile(Envelope).min_size == 58 - 15

    class Fixed(bw.Struct):
        a: bw.U8
        b: bw.U64
        c: bytes = bw.field(len=3)
        _p: None = bw.pad(2)
        d: list[bw.U16] = bw.field(count=4)

    c = bw.compile(Fixed)
    assert c.static_size == 1 + 8 + 3 + 2 + 8 == c.min_size

    class Cond(bw.Struct):
        f: bw.U8
        g: bw.U32 = bw.field(when="f", default=0)

    assert bw.compile(Cond).static_size is None and bw.compile(Cond).min_size == 1


def test_codec_immutable():
    codec = bw.compile(Record)
    with pytest.raises(AttributeError):
        codec.static_size = 3  # type: ignore[misc]
    with pytest.raises((AttributeError, TypeError)):
        codec.foo = 1  # type: ignore[attr-defined]


def test_dict_vs_typed(telemetry):
    codec = bw.compile(Envelope)
    d = codec.unpack(telemetry)
    assert isinstance(d, dict) and isinstance(d["frame"]["records"], list)
    assert d["frame"]["records"][0] == {
        "record_id": 10_000,
        "kind": 0,
        "status": 2,
        "code": 11,
        "x": -5,
        "y": 7,
        "reading": 2**64 - 1,
        "payload_len": 12,
        "payload": bytes(12),
    }
    # The dict codec also packs typed instances (attributes) and typed packs the same bytes.
    assert codec.pack(Envelope.unpack(telemetry)) == telemetry


def test_compile_rejects_non_struct():
    with pytest.raises(bw.SchemaError):
        bw.compile(int)  # type: ignore[arg-type]
    with pytest.raises(bw.SchemaError):
        bw.compile(bw.Struct)


def test_threads(telemetry):
    codec = bw.compile(Envelope)
    expected = codec.unpack(telemetry)
    errors: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(30):
                v = codec.unpack(telemetry)
                assert v == expected
                assert codec.pack(v) == telemetry
                assert Envelope.unpack(telemetry).pack() == telemetry
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_typed_eq_and_repr():
    a = Record(record_id=1, kind=2, status=3, code=4, x=-1, y=1, reading=5, payload=b"p")
    b = Record(record_id=1, kind=2, status=3, code=4, x=-1, y=1, reading=5, payload=b"p")
    c = Record(record_id=2, kind=2, status=3, code=4, x=-1, y=1, reading=5, payload=b"p")
    assert a == b and a != c
    assert a != "Record" and (a == 1) is False
    assert repr(a) == (
        "Record(record_id=1, kind=2, status=3, code=4, x=-1, y=1, reading=5, "
        "payload_len=None, payload=b'p')"
    )
    back = Record.unpack(a.pack())
    assert "payload_len=1" in repr(back)
    assert back == a


def test_init_is_keyword_only_and_requires_fields():
    with pytest.raises(TypeError):
        Record(1, 2, 3, 4, 5, 6, 7, None, b"")  # type: ignore[misc]
    with pytest.raises(TypeError):
        Record(record_id=1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Record(record_id=1, kind=2, status=3, code=4, x=-1, y=1, reading=5, payload=b"", z=1)  # type: ignore[call-arg]


def test_defaults():
    class D(bw.Struct):
        a: bw.U8 = 7
        b: bw.U16 = bw.field(default=0x0102)

    assert D().pack() == b"\x07\x01\x02"
    assert D(a=1).a == 1


def test_slots_no_dict():
    r = Record.unpack(
        Record(record_id=1, kind=2, status=3, code=4, x=-1, y=1, reading=5, payload=b"").pack()
    )
    with pytest.raises(AttributeError):
        r.nonexistent = 1  # type: ignore[attr-defined]


class FwdOuter(bw.Struct):
    inner: "FwdLater"
    n: bw.U8


class FwdLater(bw.Struct):
    v: bw.U8


def test_forward_reference():
    assert FwdOuter(inner=FwdLater(v=3), n=4).pack() == b"\x03\x04"
    assert FwdOuter.unpack(b"\x03\x04") == FwdOuter(inner=FwdLater(v=3), n=4)


def test_dict_codec_rejects_non_mappings():
    codec = bw.compile(Record)
    with pytest.raises(bw.PackError):
        codec.pack([1, 2, 3])
    with pytest.raises(bw.PackError) as ei:
        codec.pack({"record_id": 1})
    assert ei.value.path == "kind"
    with pytest.raises(TypeError):
        codec.unpack(None)


def test_eq_is_struct_eq_on_the_compared_fields():
    class One(bw.Struct):
        a: bw.U8

    class Empty(bw.Struct):
        pass

    nan = float("nan")
    assert One.__eq__ is bw.Struct.__eq__
    assert One(a=1) == One(a=1) and One(a=1) != One(a=2)
    # One field compares as a 1-tuple: identity first, as for NaN in a tuple.
    odd = One.__new__(One)
    odd.a = nan
    same = One.__new__(One)
    same.a = nan
    assert odd == same
    assert Empty() == Empty() and Empty().__eq__(One(a=1)) is NotImplemented
    assert One.__match_args__ == ("a",)


def test_eq_of_an_instance_made_before_its_class_compiled():
    class Early(bw.Struct):
        inner: "Later"  # defined below: compiled on first use

    first = Early.__new__(Early)
    second = Early.__new__(Early)

    class Later(bw.Struct):
        v: bw.U8

    globals()["Later"] = Later
    try:
        first.inner = Later(v=1)
        second.inner = Later(v=1)
        assert first == second  # compiles Early, then compares
        second.inner = Later(v=2)
        assert first != second
    finally:
        del globals()["Later"]


def test_a_class_body_eq_is_kept():
    class Loose(bw.Struct):
        a: bw.U8

        def __eq__(self, other: object) -> bool:
            return True

    assert Loose(a=1) == Loose(a=2)
