"""Pickler/Unpickler, dump/load: framed records, one per call, then EOFError."""

import io

import pytest
from bytewright import pickle


def test_many_records_then_eof():
    buf = io.BytesIO()
    p = pickle.Pickler(buf)
    values = [1, "two", [3], {"four": 4}, None, b"x" * 100_000]
    for v in values:
        p.dump(v)
    buf.seek(0)
    u = pickle.Unpickler(buf)
    assert [u.load() for _ in values] == values
    with pytest.raises(EOFError):
        u.load()


def test_load_reads_exactly_one_record():
    buf = io.BytesIO()
    pickle.dump([1, 2], buf)
    first_end = buf.tell()
    pickle.dump("next", buf)
    buf.write(b"unrelated tail")
    buf.seek(0)
    assert pickle.load(buf) == [1, 2]
    assert buf.tell() == first_end
    assert pickle.load(buf) == "next"
    assert buf.read() == b"unrelated tail"


class Trickle(io.RawIOBase):
    """A stream that returns at most one byte per read."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        chunk = self.data[self.pos : self.pos + 1]
        self.pos += len(chunk)
        return chunk


def test_short_reads_are_completed():
    data = pickle.dumps({"a": list(range(300))}) * 2
    u = pickle.Unpickler(Trickle(data))
    assert u.load() == u.load() == {"a": list(range(300))}
    with pytest.raises(EOFError):
        u.load()


def test_signed_streams_and_classes():
    import dataclasses

    @dataclasses.dataclass
    class P:
        x: int

    buf = io.BytesIO()
    p = pickle.Pickler(buf, hmac_key=b"k")
    p.dump(P(1))
    p.dump(P(2))
    buf.seek(0)
    u = pickle.Unpickler(buf, classes=[P], hmac_key=b"k")
    assert [u.load(), u.load()] == [P(1), P(2)]


def test_errors_name_the_record():
    buf = io.BytesIO()
    pickle.dump(1, buf)
    pickle.dump(2, buf, hmac_key=b"k")
    buf.seek(0)
    u = pickle.Unpickler(buf)
    assert u.load() == 1
    with pytest.raises(pickle.IntegrityError, match="record 2"):
        u.load()


def test_truncated_stream():
    data = pickle.dumps(list(range(100)))
    u = pickle.Unpickler(io.BytesIO(data[:-3]))
    with pytest.raises(pickle.TruncatedError, match="truncated"):
        u.load()
    u = pickle.Unpickler(io.BytesIO(data[:2]))
    with pytest.raises(pickle.TruncatedError) as info:
        u.load()
    assert isinstance(info.value, EOFError) and info.value.offset == 2


def test_stream_limit_is_checked_before_reading():
    class Huge(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, b) -> int:
            raise AssertionError("the body must not be read")

    header = b"BW\x01\x00" + b"\xff\xff\xff\xff\x0f"
    stream = io.BytesIO(header)
    with pytest.raises(pickle.LimitError, match="record 1"):
        pickle.Unpickler(stream, limits=pickle.Limits(max_bytes=1000)).load()


def test_foreign_stream():
    import pickle as std_pickle

    buf = io.BytesIO(std_pickle.dumps([1]))
    with pytest.raises(pickle.UnpicklingError, match="standard pickle"):
        pickle.load(buf)
