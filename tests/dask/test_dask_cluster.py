"""The family on a real LocalCluster: two worker processes on loopback, one thread each."""

from __future__ import annotations

import hashlib
from collections import Counter
from typing import Any

import family_hook
import numpy as np
import pytest
from bytewright import pickle
from dask_shapes import (
    BIG,
    Box,
    NotAllowed,
    large_array,
    person,
    received,
    same,
    shared_graph,
    values,
)
from distributed import Client

TIMEOUT = 60


def identity(value: Any) -> Any:
    return value


def sha256(value: Any) -> str:
    return hashlib.sha256(value).hexdigest()


def identities_kept(box: Box) -> bool:
    graph = box.value
    shared = graph["list1"]
    arrays = graph["arrays"]
    return (
        graph["list2"] is shared
        and graph["nested"]["a"] is shared
        and graph["nested"]["b"][0] is shared
        and graph["nested"]["b"][1] is shared
        and graph["cyclic"][0][0] is graph["cyclic"]
        and arrays[0] is arrays[2]
        and arrays[1] is not arrays[0]
    )


def workers(client: Client) -> list[str]:
    return sorted(client.scheduler_info()["workers"])


def worker_events(client: Client) -> dict[str, Counter[tuple[str, str]]]:
    return client.run(family_hook.stop)  # type: ignore[no-any-return]


def test_every_shape_round_trips_through_scatter_and_gather(wire: Client) -> None:
    named = values()
    originals = [v for _, v in named]
    futures = wire.scatter(originals, hash=False)
    # Each worker compares what it decoded with the same value sent the other way,
    # as a task argument that Dask pickles: an independent decoder.
    checks = wire.map(received, futures, originals, pure=False)
    assert wire.gather(checks) == [True] * len(named)
    back = wire.gather(futures)
    wrong = [name for (name, v), b in zip(named, back, strict=True) if not same(b, v)]
    assert wrong == []
    # Every value crossed in the family, both ways: what one side wrote, the other read.
    here = family_hook.stop()
    there = sum(worker_events(wire).values(), Counter[tuple[str, str]]())
    for (direction, name), count in here.items():
        if name != "NoneType":  # the workers' answers to client.run(family_hook.start)
            other = "loads" if direction == "dumps" else "dumps"
            assert there[other, name] == count, (direction, name)
    split = (list, tuple, set, dict)  # distributed sends their items one by one
    assert {type(v).__name__ for v in originals if type(v) not in split} <= {n for _, n in here}
    assert here["dumps", "Box"] == here["loads", "Box"] == 17  # 16 benchmark shapes, a graph


def test_scatter_results_and_worker_transfers_cross_in_the_family(wire: Client) -> None:
    value = person()
    [scattered] = wire.scatter([value], hash=False)
    [a] = wire.who_has(scattered)[scattered.key]
    [b] = set(workers(wire)) - {a}
    assert same(scattered.result(timeout=TIMEOUT), value)  # before b holds a copy too
    copy = wire.submit(identity, scattered, workers=[b], pure=False)  # b fetches it from a
    assert same(copy.result(timeout=TIMEOUT), value)
    here = family_hook.stop()
    there = worker_events(wire)
    assert here["dumps", "Person"] == 1  # the scatter
    assert here["loads", "Person"] == 2  # the two results
    assert there[a]["loads", "Person"] == 1  # the scatter
    assert there[a]["dumps", "Person"] == 2  # to b, and to the client
    assert there[b]["loads", "Person"] == 1  # from a
    assert there[b]["dumps", "Person"] == 1  # its result, to the client


def test_task_arguments_are_pickled_by_dask_not_written_by_the_family(wire: Client) -> None:
    value = person()
    assert same(wire.submit(identity, value, pure=False).result(timeout=TIMEOUT), value)
    here = family_hook.stop()
    assert here["dumps", "Person"] == 0  # the argument went inside the pickled task
    assert here["loads", "Person"] == 1  # the result came back in the family


def test_a_large_numpy_buffer_round_trips(wire: Client) -> None:
    array = large_array()
    assert array.nbytes >= BIG
    [future] = wire.scatter([array], hash=False)
    assert wire.submit(sha256, future, pure=False).result(timeout=TIMEOUT) == sha256(array)
    back = future.result(timeout=TIMEOUT)
    assert same(back, array) and back.flags.writeable


def test_shared_references_inside_one_value_are_kept(wire: Client) -> None:
    boxed = Box(shared_graph())
    assert identities_kept(boxed)
    [future] = wire.scatter([boxed], hash=False)
    assert wire.submit(identities_kept, future, pure=False).result(timeout=TIMEOUT)
    assert identities_kept(future.result(timeout=TIMEOUT))


def test_distributed_splits_a_top_level_dict_into_records(wire: Client) -> None:
    shared = [1, 2]
    [future] = wire.scatter([{"a": shared, "b": shared}], hash=False)
    back = future.result(timeout=TIMEOUT)
    assert back == {"a": [1, 2], "b": [1, 2]}
    assert back["a"] is not back["b"]  # two records: Dask does this with every family


@pytest.mark.parametrize(
    ("frame", "message"),
    [(0, "HMAC check failed"), (1, "frame 1 does not match its digest")],
    ids=["record", "buffer"],
)
def test_a_result_tampered_in_transit_is_refused_at_the_client(
    wire: Client, frame: int, message: str
) -> None:
    wire.run(family_hook.start, {"ndarray": frame})
    future = wire.submit(np.arange, 100_000, pure=False)
    with pytest.raises(pickle.IntegrityError, match=message):
        future.result(timeout=TIMEOUT)


def test_scattered_data_tampered_in_transit_is_refused(wire: Client) -> None:
    family_hook.start({"ndarray": 1})
    with pytest.raises(Exception, match="frame 1 does not match its digest"):
        wire.scatter([np.arange(100_000)], hash=False)


def test_a_worker_refusing_a_direct_scatter_answers_in_a_format_the_client_refuses(
    wire: Client,
) -> None:
    # The worker fails before it has read which families the client accepts, so it
    # reports the error in Dask's default format: the client refuses that in turn.
    family_hook.start({"ndarray": 1})
    with pytest.raises(TypeError, match="Data serialized with dask but only able to"):
        wire.scatter([np.arange(100_000)], hash=False, direct=True)


def test_unsigned_results_are_refused_at_the_client(wire: Client) -> None:
    with pytest.raises(pickle.IntegrityError, match="not signed"):
        wire.run(family_hook.register, None)  # the workers' own answers are refused already
    future = wire.submit(person, pure=False)
    with pytest.raises(pickle.IntegrityError, match="not signed"):
        future.result(timeout=TIMEOUT)


def test_signed_results_are_refused_by_a_client_without_the_key(wire: Client) -> None:
    family_hook.register(None)
    future = wire.submit(person, pure=False)
    with pytest.raises(pickle.IntegrityError, match="signed"):
        future.result(timeout=TIMEOUT)


def test_unsigned_scatter_is_refused_by_the_workers(wire: Client) -> None:
    family_hook.register(None)
    with pytest.raises(Exception, match="not signed"):
        wire.scatter([person()], hash=False)


def test_a_class_outside_the_allowlist_is_refused(wire: Client) -> None:
    future = wire.submit(NotAllowed, 1, pure=False)
    with pytest.raises(pickle.UnpicklingError, match="NotAllowed' is not allowed"):
        future.result(timeout=TIMEOUT)
    with pytest.raises(Exception, match="NotAllowed' is not allowed"):
        wire.scatter([NotAllowed(2)], hash=False)


def test_a_value_the_family_cannot_write_fails_with_its_reason(wire: Client) -> None:
    future = wire.submit(lambda: [1, {"f": print}], pure=False)
    with pytest.raises(TypeError, match="Could not serialize object of type dict") as info:
        future.result(timeout=TIMEOUT)
    assert """cannot pickle 'builtin_function_or_method' object (at $["f"])""" in str(info.value)


def test_the_cluster_is_healthy_after_refusals(wire: Client) -> None:
    futures = wire.map(lambda i: np.full(10_000, i), range(8), pure=False)
    total = wire.submit(lambda xs: int(sum(x.sum() for x in xs)), futures, pure=False)
    assert total.result(timeout=TIMEOUT) == 10_000 * sum(range(8))
