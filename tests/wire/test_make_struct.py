"""bw.make_struct builds the same class as the class form."""

import bytewright as bw
import pytest
from conftest import Envelope, Frame, Record, make_envelope


def build_runtime():
    rec = bw.make_struct(
        "Record",
        [
            ("record_id", bw.U32),
            ("kind", bw.U8),
            ("status", bw.U8),
            ("code", bw.U16),
            ("x", bw.I32),
            ("y", bw.I32),
            ("reading", bw.U64),
            ("payload_len", bw.U16),
            ("payload", bytes, bw.field(len="payload_len")),
        ],
    )
    frame = bw.make_struct(
        "Frame",
        [
            ("version", bw.U8),
            ("flags", bw.U8),
            ("message_type", bw.U16),
            ("sequence", bw.U32),
            ("timestamp", bw.U64),
            ("session", bytes, bw.field(len=16)),
            ("source_id", bw.U32),
            ("source_len", bw.U8),
            ("source", str, bw.field(len="source_len", encoding="utf-8")),
            ("record_count", bw.U16),
            ("records", list[rec], bw.field(count="record_count")),
        ],
    )
    env = bw.make_struct(
        "Envelope",
        [("frame_size", bw.U32), ("frame", frame, bw.field(size="frame_size"))],
        byteorder="big",
    )
    return rec, frame, env


def test_same_bytes_as_class_form(telemetry):
    rec, frame, env = build_runtime()
    typed = make_envelope()
    value = env(
        frame=frame(
            **{
                k: getattr(typed.frame, k)
                for k in (
                    "version",
                    "flags",
                    "message_type",
                    "sequence",
                    "timestamp",
                    "session",
                    "source_id",
                    "source",
                )
            },
            records=[
                rec(**{k: getattr(r, k) for k in rec.__match_args__ if k != "payload_len"})
                for r in typed.frame.records
            ],
        )
    )
    assert value.pack() == telemetry
    back = env.unpack(telemetry)
    assert back.frame.record_count == 64
    assert bw.compile(env).unpack(telemetry) == bw.compile(Envelope).unpack(telemetry)
    assert env.__name__ == "Envelope" and isinstance(back, env)
    assert rec.__match_args__ == Record.__match_args__
    assert frame.__match_args__ == Frame.__match_args__


def test_byteorder_and_module():
    cls = bw.make_struct("L", [("a", bw.U16)], byteorder="little")
    assert cls(a=1).pack() == b"\x01\x00"
    assert cls.__module__ == __name__
    assert repr(cls(a=1)) == "L(a=1)"


def test_limits_keyword():
    cls = bw.make_struct(
        "C",
        [("n", bw.U8), ("xs", list[bw.U8], bw.field(count="n"))],
        limits=bw.Limits(max_count=1),
    )
    with pytest.raises(bw.DecodeError):
        cls.unpack(b"\x02\x01\x02")


@pytest.mark.parametrize(
    "fields",
    [
        [("a",)],
        ["a"],
        [(1, bw.U8)],
        [("a", bw.U8), ("a", bw.U16)],
        [("a", bw.U8, bw.field(), 4)],
    ],
)
def test_bad_field_lists(fields):
    with pytest.raises(bw.SchemaError):
        bw.make_struct("Bad", fields)


def test_byteorder_typo():
    with pytest.raises(bw.SchemaError, match="did you mean 'big'"):
        bw.make_struct("Bad", [("a", bw.U8)], byteorder="bog")
