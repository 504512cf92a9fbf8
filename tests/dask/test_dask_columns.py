"""How Arrow-backed pandas columns are pickled once `read_records` is loaded: a partition's
columns travel as the buffers the decoder made, without the copy pandas' own pickling takes,
and anything that pandas' join is for (slices, many small chunks) is still joined."""

from __future__ import annotations

import copyreg
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest
from bytewright.dask import _columns, read_records
from dask_records import Telemetry, telemetry
from distributed.protocol import deserialize, serialize
from pandas.core.arrays.arrow.array import ArrowExtensionArray


def dumps(value: Any) -> tuple[bytes, list[pickle.PickleBuffer]]:
    """Protocol 5 with out-of-band buffers, as distributed pickles a task's result."""
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(value, protocol=5, buffer_callback=buffers.append)
    return data, buffers


def round_trip(value: Any) -> Any:
    data, buffers = dumps(value)
    return pickle.loads(data, buffers=buffers)


def addresses(buffers: list[pickle.PickleBuffer]) -> dict[int, int]:
    """Address -> size of every non-empty out-of-band buffer."""
    sized = (pa.py_buffer(b.raw()) for b in buffers)
    return {b.address: b.size for b in sized if b.size}


def arrow_addresses(frame: pd.DataFrame) -> set[int]:
    out = set()
    for name in frame.columns:
        for chunk in frame[name].array.__arrow_array__().chunks:
            out |= {b.address for b in chunk.buffers() if b is not None and b.size}
    return out


@pytest.fixture(scope="module")
def partition(tmp_path_factory: pytest.TempPathFactory) -> pd.DataFrame:
    path = tmp_path_factory.mktemp("columns") / "t.bin"
    path.write_bytes(b"".join(telemetry(7, 3000)))
    frame: pd.DataFrame = read_records(str(path), Telemetry).compute(scheduler="sync")
    return frame


def test_loading_read_records_registers_the_reduction() -> None:
    assert copyreg.dispatch_table.get(ArrowExtensionArray) is _columns._reduce


def test_a_partition_is_pickled_without_copying_its_columns(partition: pd.DataFrame) -> None:
    data, buffers = dumps(partition)
    sent = addresses(buffers)
    decoded = arrow_addresses(partition)
    # Every buffer the decoder made is sent as it is; what else is sent is the few bytes of
    # the column labels and of the dictionary of the union's variant names, not a copy.
    assert decoded <= sent.keys()
    assert sum(size for at, size in sent.items() if at not in decoded) < 1024
    back = pickle.loads(data, buffers=buffers)
    assert back.equals(partition)
    assert list(back.dtypes) == list(partition.dtypes)


def test_distributed_round_trips_a_partition(partition: pd.DataFrame) -> None:
    header, frames = serialize(partition, serializers=("dask", "pickle"))
    assert header["serializer"] == "pickle"
    received = [bytearray(memoryview(f)) for f in frames]  # what a socket gives
    back = deserialize(header, received)
    assert back.equals(partition)
    assert back.reset_index(drop=True).equals(
        pa.table(Telemetry.unpack_table(b"".join(telemetry(7, 3000)))).to_pandas(
            types_mapper=pd.ArrowDtype
        )
    )


def test_large_chunks_are_kept_and_small_ones_joined() -> None:
    big = pa.chunked_array(
        [pa.array(range(i, i + 20_000), pa.int64()) for i in range(0, 60_000, 20_000)]
    )
    small = pa.chunked_array([pa.array(range(i, i + 10), pa.int64()) for i in range(0, 100, 10)])
    for data, chunks in ((big, 3), (small, 1)):
        series = pd.Series(data, dtype=pd.ArrowDtype(pa.int64()))
        back = round_trip(series)
        assert back.array.__arrow_array__().num_chunks == chunks
        assert back.equals(series)


def test_a_slice_sends_only_its_rows(partition: pd.DataFrame) -> None:
    head = partition.head(10)
    data, buffers = dumps(head)
    assert sum(b.raw().nbytes for b in buffers) + len(data) < 10_000
    assert pickle.loads(data, buffers=buffers).equals(head)
    tail = partition.iloc[-5:]
    data, buffers = dumps(tail)
    assert sum(b.raw().nbytes for b in buffers) + len(data) < 10_000
    assert pickle.loads(data, buffers=buffers).equals(tail)


@pytest.mark.parametrize("dtype", ["string[pyarrow]", pd.ArrowDtype(pa.string())])
def test_string_columns(dtype: Any) -> None:
    series = pd.Series(["a", None, "ccc"] * 1000, dtype=dtype)
    back = round_trip(series)
    assert back.equals(series) and back.dtype == series.dtype


def test_the_pickle_loads_without_bytewright(partition: pd.DataFrame, tmp_path: Path) -> None:
    path = tmp_path / "frame.pickle"
    path.write_bytes(pickle.dumps(partition, protocol=5))
    code = (
        "import pickle, sys\n"
        f"frame = pickle.loads(open({str(path)!r}, 'rb').read())\n"
        "assert not any(m.startswith('bytewright') for m in sys.modules), 'bytewright loaded'\n"
        "print(len(frame), frame['device'].astype('int64').sum())\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [str(len(partition)), str(int(partition["device"].sum()))]
