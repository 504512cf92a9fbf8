"""Out-of-band frames: NumPy arrays and memoryviews travel beside the record, without a copy."""

from __future__ import annotations

import hashlib
import pickle as std_pickle
import threading
from typing import Any

import numpy as np
import pytest
from bytewright import pickle
from bytewright.pickle import _buffers, _stdlib
from bytewright.pickle._buffers import KIND, MIN_FRAME_BYTES, OutOfBand, dumps_frames, loads_frames
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

KEY = b"a key of the cluster"
BIG = MIN_FRAME_BYTES  # elements of uint8: exactly one frame's worth


def roundtrip(value: Any, **kw: Any) -> Any:
    return loads_frames(dumps_frames(value, **kw), hmac_key=kw.get("hmac_key"))


def same_array(a: Any, b: Any) -> bool:
    """Same type, dtype, shape, flags and bytes (so NaN payloads compare too)."""
    return (
        type(a) is type(b)
        and a.dtype == b.dtype
        and a.shape == b.shape
        and a.tobytes() == b.tobytes()
        and a.flags.writeable == b.flags.writeable
    )


ARRAYS = [
    np.arange(BIG, dtype=np.uint8),
    np.arange(100_000, dtype="<f8").reshape(1000, 100),
    np.asfortranarray(np.arange(60_000, dtype=">i4").reshape(300, 200)),
    np.arange(200_000, dtype=np.int16).reshape(400, 500)[:, ::3],  # not contiguous
    np.zeros(20_000, dtype=[("x", "<i4"), ("y", ">f8", (2,)), ("s", "S3")]),
    np.zeros(9_000, dtype=np.dtype([("a", "u1"), ("b", "<f8")], align=True)),
    np.array(["héllo", "wörld"] * 10_000),
    np.arange(20_000).astype("M8[ns]"),
    np.arange(20_000).astype("m8[s]"),
    np.full(30_000, np.nan, dtype=np.float32),
    np.arange(40_000, dtype=np.complex64),
    np.ones(80_000, dtype=np.bool_),
    np.zeros((0, 3)),
    np.zeros((4, 0, 2), dtype=np.int8),
    np.array(5),
    np.arange(3),
    np.array([1.5, -0.0], dtype=np.float16),
]


@pytest.mark.parametrize("array", ARRAYS, ids=lambda a: f"{a.dtype}{a.shape}")
@pytest.mark.parametrize("key", [None, KEY], ids=["unsigned", "signed"])
def test_arrays_round_trip(array: Any, key: bytes | None) -> None:
    back = roundtrip({"a": [array]}, hmac_key=key)["a"][0]
    assert same_array(back, array)
    assert back.flags.f_contiguous == array.flags.f_contiguous or array.ndim < 2
    # The standard library's pickle, an independent implementation, agrees.
    assert same_array(back, std_pickle.loads(std_pickle.dumps(array, protocol=5)))


def test_large_arrays_are_frames_that_view_the_array_memory() -> None:
    a = np.arange(BIG // 8, dtype=np.float64)
    b = np.arange(BIG, dtype=np.uint8).reshape(256, -1)
    frames = dumps_frames([a, {"b": b}, "text"])
    assert len(frames) == 3 and type(frames[0]) is bytes
    assert np.shares_memory(np.frombuffer(frames[1], np.uint8), a)
    assert np.shares_memory(np.frombuffer(frames[2], np.uint8), b)
    # Reading views the frames too, when they are writeable (as Dask receives them).
    received: list[bytes | bytearray] = [bytes(frames[0]), *(bytearray(f) for f in frames[1:])]
    back = loads_frames(received)
    assert np.shares_memory(back[0], np.frombuffer(received[1], np.uint8))
    assert np.shares_memory(back[1]["b"], np.frombuffer(received[2], np.uint8))
    assert back[0].flags.writeable and back[1]["b"].flags.writeable


def test_read_only_frames_give_writeable_arrays_by_copying() -> None:
    a = np.arange(BIG, dtype=np.uint8)
    frames = dumps_frames(a)
    back = loads_frames([frames[0], bytes(frames[1])])
    assert back.flags.writeable and np.array_equal(back, a)
    back[0] = 7  # the frame is not written through


def test_read_only_arrays_stay_read_only() -> None:
    a = np.arange(BIG, dtype=np.uint8)
    a.flags.writeable = False
    back = roundtrip([a, a[:10]])
    assert not back[0].flags.writeable and not back[1].flags.writeable


def test_small_arrays_stay_in_the_record() -> None:
    small = np.arange(BIG - 1, dtype=np.uint8)
    frames = dumps_frames({"x": small})
    assert len(frames) == 1
    assert same_array(loads_frames(frames)["x"], small)
    assert len(dumps_frames({"x": small}, min_frame_bytes=0)) == 2


def test_shared_arrays_are_one_frame_and_stay_shared() -> None:
    a = np.arange(BIG, dtype=np.uint8)
    m = memoryview(bytearray(BIG))
    frames = dumps_frames({"a": a, "again": [a, a], "m": m, "m2": m})
    assert len(frames) == 3
    back = loads_frames(frames)
    assert back["a"] is back["again"][0] is back["again"][1]
    assert back["m"] is back["m2"]


@pytest.mark.parametrize(
    "view",
    [
        memoryview(bytearray(range(256)) * 300),
        memoryview(bytes(range(256)) * 300),
        memoryview(bytearray(BIG * 4)).cast("i", (BIG // 8, 8)),
        memoryview(bytearray(BIG * 8)).cast("d"),
        memoryview(bytearray(BIG * 2))[::2],  # not contiguous: one copy
        memoryview(b"small"),
        memoryview(b""),
    ],
    ids=lambda v: f"{v.format}{v.shape}{'ro' if v.readonly else 'rw'}",
)
def test_memoryviews_keep_format_shape_and_read_only_flag(view: memoryview) -> None:
    back = roundtrip([view], hmac_key=KEY)[0]
    assert type(back) is memoryview
    assert (back.format, back.shape, back.readonly) == (view.format, view.shape, view.readonly)
    assert back.tobytes() == view.tobytes()


@pytest.mark.parametrize(
    "view",
    [np.zeros(3, ">i4").data, np.zeros((2, 0), "i4").data],
    ids=["big-endian", "empty-2d"],
)
def test_memoryviews_that_cannot_be_rebuilt_exactly_are_refused(view: memoryview) -> None:
    with pytest.raises(pickle.PicklingError, match=r"memoryview.*\$\[0\]|\$\[0\].*memoryview"):
        dumps_frames([view])


SCALARS = [
    np.bool_(True),
    np.int8(-3),
    np.uint64(2**64 - 1),
    np.float16(0.5),
    np.float32(np.nan),
    np.float64(-0.0),
    np.longdouble("1.5"),
    np.complex64(1 - 2j),
    np.clongdouble(3j),
    np.str_("héllo"),
    np.bytes_(b"\x00ab"),
    np.datetime64("2024-02-29T12:00", "ns"),
    np.timedelta64(-5, "D"),
    np.zeros(1, dtype=[("x", "<i4"), ("y", "f8")])[0],
]


@pytest.mark.parametrize("scalar", SCALARS, ids=lambda s: type(s).__name__)
def test_numpy_scalars_round_trip(scalar: Any) -> None:
    back = roundtrip([scalar])[0]
    assert type(back) is type(scalar) and back.dtype == scalar.dtype
    if scalar.dtype.kind in "fc" and scalar.dtype.itemsize > 8:  # x87 padding bytes are noise
        assert back == scalar
    else:
        assert np.asarray(back).tobytes() == np.asarray(scalar).tobytes()


def test_a_large_bytes_or_bytearray_root_is_its_own_frame() -> None:
    for value in (bytes(range(256)) * 400, bytearray(b"x" * BIG)):
        frames = dumps_frames(value, hmac_key=KEY)
        assert len(frames) == 2 and frames[1].obj is value  # type: ignore[union-attr]
        back = loads_frames(frames, hmac_key=KEY)
        assert type(back) is type(value) and back == value
    # A bytes frame is returned as it is; nested bytes stay inside the record.
    payload = bytes(BIG)
    frames = dumps_frames(payload)
    assert loads_frames([frames[0], payload]) is payload
    assert len(dumps_frames([payload])) == 1


def test_plain_pickle_does_not_write_or_read_out_of_band_values() -> None:
    for value in (np.arange(3), np.float64(1.0), memoryview(b"x"), OutOfBand(b"x")):
        with pytest.raises(pickle.PicklingError, match=r'cannot pickle .*\$\["k"\]') as info:
            pickle.dumps({"k": value})
        assert "only by the bytewright.dask serialization family" in str(info.value.__cause__)
    record = dumps_frames([np.arange(BIG, dtype=np.uint8)])[0]
    with pytest.raises(pickle.UnpicklingError, match="out-of-band frames"):
        pickle.loads(record)


def test_object_arrays_and_scalars_are_refused() -> None:
    with pytest.raises(pickle.PicklingError, match=r"\$\[1\].*holds Python objects"):
        dumps_frames([1, np.array([1, "a"], dtype=object)])
    with pytest.raises(pickle.PicklingError, match="holds Python objects"):
        dumps_frames(np.zeros(2, dtype=[("a", "i4"), ("o", "O")])[0])


# --- integrity -------------------------------------------------------------------------


def test_each_frame_digest_is_covered_by_the_record_hmac() -> None:
    a = np.arange(BIG, dtype=np.uint8)
    frames = dumps_frames([a], hmac_key=KEY)
    assert hashlib.sha256(a.data).digest() in bytes(frames[0])
    assert hashlib.sha256(a.data).digest() not in bytes(dumps_frames([a])[0])  # no key, no digest


def test_every_flipped_byte_of_every_frame_is_refused() -> None:
    a = np.arange(BIG, dtype=np.uint8)
    frames = dumps_frames({"a": a, "b": bytearray(b"y" * 10)}, hmac_key=KEY)
    record = frames[0]
    for i in range(5, len(record)):
        tampered = bytearray(record)
        tampered[i] ^= 0x01
        with pytest.raises(pickle.IntegrityError):
            loads_frames([bytes(tampered), frames[1]], hmac_key=KEY)
    for i in (0, 1, BIG // 2, BIG - 1):
        buffer = bytearray(frames[1])
        buffer[i] ^= 0x80
        with pytest.raises(pickle.IntegrityError, match="frame 1 does not match its digest"):
            loads_frames([record, buffer], hmac_key=KEY)


def test_missing_wrong_and_unexpected_keys_are_refused() -> None:
    a = np.arange(BIG, dtype=np.uint8)
    signed, unsigned = dumps_frames([a], hmac_key=KEY), dumps_frames([a])
    with pytest.raises(pickle.IntegrityError, match="HMAC check failed"):
        loads_frames(signed, hmac_key=b"another key")
    with pytest.raises(pickle.IntegrityError, match="signed"):
        loads_frames(signed)
    with pytest.raises(pickle.IntegrityError, match="not signed"):
        loads_frames(unsigned, hmac_key=KEY)


def test_missing_extra_and_swapped_frames_are_refused() -> None:
    a, b = np.zeros(BIG, np.uint8), np.ones(BIG, np.uint8)
    record, fa, fb = dumps_frames([a, b], hmac_key=KEY)
    with pytest.raises(pickle.UnpicklingError, match="refers to frame 2, but 2 frames"):
        loads_frames([record, fa], hmac_key=KEY)
    with pytest.raises(pickle.UnpicklingError, match=r"frames \[3\] are not referred to"):
        loads_frames([record, fa, fb, b"extra"], hmac_key=KEY)
    with pytest.raises(pickle.IntegrityError, match="does not match its digest"):
        loads_frames([record, fb, fa], hmac_key=KEY)
    with pytest.raises(pickle.UnpicklingError, match="no frames"):
        loads_frames([], hmac_key=KEY)
    assert same_array(loads_frames([record, fa, fb], hmac_key=KEY)[1], b)


def test_frames_are_bounded_by_max_bytes_len() -> None:
    frames = dumps_frames([np.zeros(BIG, np.uint8)])
    with pytest.raises(pickle.LimitError, match="max_bytes_len"):
        loads_frames(frames, limits=pickle.Limits(max_bytes_len=BIG - 1))
    assert len(loads_frames(frames, limits=pickle.Limits(max_bytes_len=BIG))[0]) == BIG


# --- crafted records: every check of the reader -----------------------------------------


class Crafted:
    """Writes kind 20 with arbitrary arguments, as a hostile writer could."""

    def __init__(self, *args: Any) -> None:
        self.args = args


@pytest.fixture
def craft() -> Any:
    _stdlib.REDUCERS[Crafted] = (KIND, lambda c: c.args)
    yield lambda *args: pickle.dumps([Crafted(*args)])
    del _stdlib.REDUCERS[Crafted]


DIGEST = bytes(32)


@pytest.mark.parametrize(
    ("args", "frames", "message"),
    [
        (("ndarray",), [], "takes 4 arguments"),
        ((1, (), b"", None), [], "type has the wrong type"),
        (("pickle", (), b"", None), [], "unknown out-of-band value type 'pickle'"),
        (("bytes", [], b"", None), [], "metadata has the wrong type"),
        (("bytes", (), 1.5, None), [], "data has the wrong type"),
        (("bytes", (), b"", b"short"), [], "digest must have 32 bytes"),
        (("bytes", (), 5, None), [b"x"], "refers to frame 5, but 2 frames"),
        (("bytes", (), 0, None), [b"x"], "refers to frame 0"),
        (("bytes", (1,), b"", None), [], "take no metadata"),
        (("ndarray", ("<f8", (2,), False, True), b"\x00" * 15, None), [], "15 bytes cannot"),
        (("ndarray", ("|O", (1,), False, True), b"\x00" * 8, None), [], "Python objects"),
        (("ndarray", ([("a", "|O")], (1,), False, True), b"\x00" * 8, None), [], "Python objects"),
        (("ndarray", ({"names": []}, (1,), False, True), b"", None), [], "only str, int"),
        (("ndarray", ("<f8", (-1,), False, True), b"", None), [], "bad out-of-band shape"),
        (("ndarray", ("<f8", [1], False, True), b"", None), [], "shape has the wrong type"),
        (("ndarray", ("<f8", (1,) * 65, False, True), b"", None), [], "bad out-of-band shape"),
        (("ndarray", ("no such dtype", (1,), False, True), b"", None), [], "bad NumPy dtype"),
        (("ndarray", ("<f8", (1,), 0, True), b"", None), [], "order flag"),
        (("memoryview", ("i", (3,), False), b"\x00" * 5, None), [], "cannot rebuild"),
        (("memoryview", ("<i", (1,), False), b"\x00" * 4, None), [], "cannot rebuild"),
        (("memoryview", ("B", (3,)), b"abc", None), [], "3 metadata items"),
        (("scalar", ("<f8",), 0, None), [b"x"], "in-record bytes"),
        (("scalar", ("<f8",), b"\x00", None), [], "1 bytes cannot hold"),
    ],
)
def test_crafted_out_of_band_values_are_refused(
    craft: Any, args: tuple[Any, ...], frames: list[bytes], message: str
) -> None:
    with pytest.raises(pickle.UnpicklingError, match=message):
        loads_frames([craft(*args), *frames])


def test_a_frame_referred_to_twice_is_refused(craft: Any) -> None:
    record = pickle.dumps([Crafted("bytes", (), 1, None), Crafted("bytes", (), 1, None)])
    with pytest.raises(pickle.UnpicklingError, match="refers to frame 1 twice"):
        loads_frames([record, b"x"])


def test_a_signed_reader_requires_a_digest_per_frame(craft: Any) -> None:
    _stdlib.REDUCERS[Crafted] = (KIND, lambda c: c.args)
    record = pickle.dumps([Crafted("bytes", (), 1, None)], hmac_key=KEY)
    with pytest.raises(pickle.UnpicklingError, match="no digest for frame 1"):
        loads_frames([record, b"x"], hmac_key=KEY)
    record = pickle.dumps([Crafted("bytes", (), 1, DIGEST)], hmac_key=KEY)
    with pytest.raises(pickle.IntegrityError, match="does not match its digest"):
        loads_frames([record, b"x"], hmac_key=KEY)


# --- properties ------------------------------------------------------------------------

DTYPES = (
    hnp.boolean_dtypes()
    | hnp.integer_dtypes(endianness="=")
    | hnp.unsigned_integer_dtypes(endianness=">")
    | hnp.floating_dtypes(endianness="<")
    | hnp.complex_number_dtypes()
    | hnp.datetime64_dtypes()
    | hnp.byte_string_dtypes()
    | hnp.unicode_string_dtypes()
)


@settings(max_examples=150, deadline=None)
@given(
    array=hnp.arrays(DTYPES, hnp.array_shapes(min_dims=0, max_dims=4, min_side=0, max_side=6)),
    order=st.sampled_from(["C", "F", "strided"]),
    min_frame_bytes=st.sampled_from([0, 16, MIN_FRAME_BYTES]),
    key=st.sampled_from([None, KEY]),
)
def test_any_array_round_trips_bit_for_bit(
    array: Any, order: str, min_frame_bytes: int, key: bytes | None
) -> None:
    if order == "F":
        array = np.asfortranarray(array)
    elif order == "strided" and array.ndim:
        array = array[..., ::2]
    frames = dumps_frames([array, array], hmac_key=key, min_frame_bytes=min_frame_bytes)
    back = loads_frames([frames[0], *map(bytearray, frames[1:])], hmac_key=key)
    assert back[0] is back[1]
    assert same_array(back[0], array)


def test_threads_write_and_read_their_own_frames() -> None:
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        try:
            for i in range(30):
                value = {"n": seed, "a": np.full(BIG, (seed + i) % 256, dtype=np.uint8)}
                back = loads_frames(dumps_frames(value, hmac_key=KEY), hmac_key=KEY)
                assert back["n"] == seed and int(back["a"][-1]) == (seed + i) % 256
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_the_module_installs_kind_20_reducers_for_its_types() -> None:
    assert _stdlib.REDUCERS[np.ndarray][0] == _stdlib.REDUCERS[memoryview][0] == KIND
    assert _stdlib.BUILDERS[KIND] is _buffers._build
