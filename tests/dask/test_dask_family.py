"""The family through distributed's own serialize/deserialize, without a cluster."""

from __future__ import annotations

import pickle as std_pickle
from collections.abc import Iterator
from typing import Any

import bytewright.dask
import numpy as np
import pytest
from bytewright import pickle
from dask_shapes import CLASSES, KEY, Box, NotAllowed, person, reading, same
from distributed.protocol.serialize import deserialize, families, serialize

SAFE = ["bytewright", "error"]


@pytest.fixture(autouse=True)
def family() -> Iterator[None]:
    """Each test registers what it needs; the cluster's settings come back afterwards."""
    before = families.get(bytewright.dask.FAMILY)
    bytewright.dask.register(classes=CLASSES, hmac_key=KEY)
    yield
    if before is not None:
        families[bytewright.dask.FAMILY] = before


def through(value: Any) -> Any:
    header, frames = serialize(value, serializers=["bytewright"], on_error="raise")
    assert header["serializer"] == "bytewright"
    return deserialize(header, frames, deserializers=SAFE)


def test_values_round_trip_through_distributed_serialize() -> None:
    for value in (person(), reading(), Box([np.arange(10), np.float32(2.5)]), b"x" * 100):
        assert same(through(value), value)


def test_the_header_holds_nothing_the_reader_trusts() -> None:
    header, frames = serialize(np.arange(100_000), serializers=["bytewright"])
    assert header == {"serializer": "bytewright"}
    assert len(frames) == 2 and type(frames[0]) is bytes


def test_large_buffers_are_frames_that_view_the_value() -> None:
    array = np.arange(1 << 20, dtype=np.float64)
    payload = bytes(1 << 20)
    header, frames = serialize([array], serializers=["bytewright"])
    assert np.shares_memory(np.frombuffer(frames[1], np.uint8), array)
    received = [frames[0], bytearray(frames[1])]  # as distributed hands them over
    back = deserialize(header, received, deserializers=SAFE)
    assert np.shares_memory(back[0], np.frombuffer(received[1], np.uint8))
    header, frames = serialize(payload, serializers=["bytewright"])
    assert frames[1].obj is payload  # type: ignore[union-attr]
    assert deserialize(header, [frames[0], payload], deserializers=SAFE) is payload


def test_other_families_are_refused_by_the_safe_deserializers() -> None:
    for name in ("pickle", "dask"):
        header, frames = serialize(np.arange(3), serializers=[name])
        with pytest.raises(TypeError, match=f"Data serialized with {name} but only able"):
            deserialize(header, frames, deserializers=SAFE)


def test_a_value_it_cannot_write_raises_and_never_falls_back() -> None:
    with pytest.raises(TypeError, match="Could not serialize object of type") as info:
        serialize([1, print], serializers=["bytewright", "pickle"], on_error="raise")
    assert isinstance(info.value.__cause__, pickle.PicklingError)
    assert "(at $[1])" in str(info.value.__cause__)


def test_classes_outside_the_allowlist_are_refused() -> None:
    with pytest.raises(pickle.UnpicklingError, match="NotAllowed' is not allowed"):
        through(NotAllowed(1))
    bytewright.dask.register(classes={"dask_shapes.NotAllowed": NotAllowed}, hmac_key=KEY)
    assert through(NotAllowed(1)).x == 1


def test_limits_apply_to_every_value() -> None:
    bytewright.dask.register(classes=CLASSES, hmac_key=KEY, limits=pickle.Limits(max_items=100))
    assert through(list(range(50))) == list(range(50))
    with pytest.raises(pickle.LimitError):
        through(Box(list(range(500))))


def test_the_key_signs_and_verifies() -> None:
    header, frames = serialize(person(), serializers=["bytewright"])
    bytewright.dask.register(classes=CLASSES, hmac_key=b"another key")
    with pytest.raises(pickle.IntegrityError, match="HMAC check failed"):
        deserialize(header, frames, deserializers=SAFE)
    bytewright.dask.register(classes=CLASSES)
    with pytest.raises(pickle.IntegrityError, match="signed"):
        deserialize(header, frames, deserializers=SAFE)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"hmac_key": "text"}, TypeError, "hmac_key must be bytes"),
        ({"hmac_key": b""}, ValueError, "must not be empty"),
        ({"limits": {"max_items": 1}}, TypeError, "limits must be a pickle.Limits"),
        ({"classes": [1]}, TypeError, "classes= must hold classes"),
    ],
)
def test_bad_settings_are_refused_where_they_are_given(
    kwargs: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        bytewright.dask.register(**kwargs)
    with pytest.raises(error, match=message):
        bytewright.dask.FamilyPlugin(**kwargs)


def test_the_plugin_travels_to_workers_with_its_settings() -> None:
    plugin = bytewright.dask.FamilyPlugin(
        classes=CLASSES, hmac_key=bytearray(KEY), limits=pickle.Limits(max_depth=10)
    )
    copy = std_pickle.loads(std_pickle.dumps(plugin))
    assert copy.hmac_key == KEY and copy.limits == pickle.Limits(max_depth=10)
    assert copy.classes == {f"{c.__module__}.{c.__qualname__}": c for c in CLASSES}
    assert copy.name == "bytewright-family" and copy.transfers
