"""read_records and to_records: generated files read on a real cluster equal the single-process
decode of the same files, and written files equal the bytes they were read from."""

from __future__ import annotations

import gzip
import itertools
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import bytewright as bw
import bytewright.dask
import dask
import fsspec
import pandas as pd
import pyarrow as pa
import pytest
from bytewright.dask import FileDecodeError, read_records, to_records
from bytewright.dask import _read as read_module
from bytewright.formats import pcap
from dask.delayed import Delayed
from dask_records import (
    SAMPLE_SIZE,
    Sample,
    Telemetry,
    capture,
    expected,
    note_offset,
    pcap_header,
    rows,
    samples,
    telemetry,
    write_files,
)
from distributed import Client, get_task_stream

TELEMETRY = [b"".join(telemetry(seed, 300 + 150 * seed)) for seed in range(4)]
SAMPLES = [samples(seed, 2000 + 700 * seed) for seed in range(3)]
CAPTURES = [capture(seed, 120 + 40 * seed) for seed in range(3)]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("records")
    write_files(root / "telemetry", "t", TELEMETRY)
    write_files(root / "samples", "s", SAMPLES)
    write_files(root / "pcap", "p", CAPTURES)
    return root


@pytest.fixture
def memory() -> Iterator[fsspec.AbstractFileSystem]:
    fs = fsspec.filesystem("memory")
    yield fs
    if fs.exists("/records"):
        fs.rm("/records", recursive=True)


def on_cluster(client: Client, df: Any) -> pd.DataFrame:
    result: pd.DataFrame = client.compute(df).result()
    return result


# ---- meta, names and partitions: no data read ----


def test_meta_is_the_schema_in_arrow_dtypes_and_nothing_is_read(memory: Any) -> None:
    memory.pipe("/records/garbage.bin", b"\xff" * 1000)
    df = read_records("memory://records/garbage.bin", Telemetry)  # builds: nothing decoded
    empty = pa.schema(Telemetry.table_schema()).empty_table()
    assert df._meta.dtypes.equals(empty.to_pandas(types_mapper=pd.ArrowDtype).dtypes)
    assert list(df.columns) == Telemetry.table_schema().names
    assert str(df.dtypes["note"]) == "string[pyarrow]"
    assert str(df.dtypes["samples"]) == "list<item: int16 not null>[pyarrow]"
    assert df.npartitions == 1
    with pytest.raises(FileDecodeError):
        df.compute(scheduler="sync")


def test_tasks_are_named_read_records_and_the_name_follows_the_files(data: Path) -> None:
    glob = str(data / "samples" / "*.bin")
    df = read_records(glob, Sample, blocksize=4096)
    assert df._name.startswith("read-records-")
    keys = dict(df.__dask_graph__()).keys()
    assert {k[0] for k in keys} == {df._name} and len(keys) == df.npartitions
    assert read_records(glob, Sample, blocksize=4096)._name == df._name
    assert read_records(glob, Sample, blocksize=8192)._name != df._name
    assert read_records(glob, Sample, blocksize=4096, threads=2)._name != df._name
    path = data / "samples" / "s-00.bin"
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # the file changed
    assert read_records(glob, Sample, blocksize=4096)._name != df._name


# ---- on the cluster: equal to the single-process decode ----


def test_variable_size_files_are_one_partition_each(data_client: Client, data: Path) -> None:
    df = read_records(str(data / "telemetry" / "*.bin"), Telemetry)
    assert df.npartitions == len(TELEMETRY)
    got = on_cluster(data_client, df)
    assert got.dtypes.equals(df._meta.dtypes)
    assert rows(got) == expected(Telemetry, TELEMETRY)


def test_scan_splits_variable_size_files_at_message_starts(data_client: Client, data: Path) -> None:
    glob = str(data / "telemetry" / "*.bin")
    with get_task_stream(data_client) as stream, dask.config.set(scheduler=data_client.get):
        df = read_records(glob, Telemetry, blocksize="4 KiB", scan=True)
    scans = [t["key"] for t in stream.data if "read-records-scan-" in str(t["key"])]
    assert len(scans) == len(TELEMETRY)  # the scan ran on the cluster, one task a file
    assert df.npartitions > 4 * len(TELEMETRY)
    lengths = on_cluster(data_client, df.map_partitions(len))
    assert all(n > 0 for n in lengths)
    assert rows(on_cluster(data_client, df)) == expected(Telemetry, TELEMETRY)


def test_fixed_size_files_split_at_message_aligned_blocks(data_client: Client, data: Path) -> None:
    df = read_records(str(data / "samples"), Sample, blocksize=1000)  # a directory
    block = 1000 // SAMPLE_SIZE * SAMPLE_SIZE
    assert df.npartitions == sum(math.ceil(len(d) / block) for d in SAMPLES)
    lengths = list(on_cluster(data_client, df.map_partitions(len)))
    for n in lengths:
        assert n == block // SAMPLE_SIZE or n == lengths[-1] or n < block // SAMPLE_SIZE
    assert sum(lengths) == sum(len(d) for d in SAMPLES) // SAMPLE_SIZE
    assert rows(on_cluster(data_client, df)) == expected(Sample, SAMPLES)


@pytest.mark.parametrize("header", [24, pcap_header], ids=["bytes", "function"])
def test_pcap_records_after_the_file_header(data_client: Client, data: Path, header: Any) -> None:
    glob = str(data / "pcap" / "*.bin")
    want = expected(pcap.RecordLE, CAPTURES, header=24)
    df = read_records(glob, pcap.RecordLE, header=header)
    assert df.npartitions == len(CAPTURES)
    assert rows(on_cluster(data_client, df)) == want
    split = read_records(glob, pcap.RecordLE, header=header, blocksize=2000, scan=True)
    assert split.npartitions > 2 * len(CAPTURES)
    assert rows(on_cluster(data_client, split)) == want


def test_a_class_the_workers_cannot_import(data_client: Client, data: Path) -> None:
    class Local(bw.Struct, byteorder="big"):  # a notebook's class: the codec goes as bytes
        ts: bw.U64
        sensor: bw.U16
        flags: bw.U8
        ok: bw.Bool
        value: bw.F32

    df = read_records(str(data / "samples" / "s-00.bin"), Local, blocksize=4096)
    assert rows(on_cluster(data_client, df)) == expected(Sample, SAMPLES[:1])


def test_a_decode_error_names_the_file_the_offset_and_the_row(
    data_client: Client, tmp_path: Path
) -> None:
    messages = telemetry(7, 400)
    bad = bytearray(b"".join(messages))
    at = note_offset(messages, 250)
    assert messages[250][at - sum(map(len, messages[:250])) - 1] > 0  # a note to break
    bad[at] = 0xFF  # invalid UTF-8
    paths = write_files(tmp_path, "t", [TELEMETRY[0], bytes(bad)])
    for scan in (False, True):
        df = read_records(paths, Telemetry, blocksize=2048, scan=scan)
        with pytest.raises(FileDecodeError) as caught:
            on_cluster(data_client, df)
        e = caught.value
        assert isinstance(e, bw.DecodeError)
        assert (e.file, e.path, e.offset) == (paths[1], "[250].note", at)
        assert str(e) == f"{paths[1]}: [250].note: invalid utf-8 at offset {at}"


def test_a_file_cut_inside_a_message(data_client: Client, tmp_path: Path) -> None:
    cut = SAMPLES[1][:-5]
    [path] = write_files(tmp_path, "s", [cut])
    last = len(cut) // SAMPLE_SIZE
    df = read_records(path, Sample, blocksize=4096)
    with pytest.raises(FileDecodeError) as caught:
        on_cluster(data_client, df)
    at = last * SAMPLE_SIZE + 11  # the file ends before `ok`, after ts, sensor and flags
    assert (caught.value.path, caught.value.offset) == (f"[{last}].ok", at)
    assert str(caught.value) == f"{path}: [{last}].ok: needs 1 bytes at offset {at}, 0 left"


def test_the_scan_refuses_a_malformed_message_when_it_plans(tmp_path: Path) -> None:
    messages = telemetry(3, 100)
    bad = bytearray(b"".join(messages))
    start = sum(map(len, messages[:60]))
    bad[start + 12] = 9  # an unknown union tag: message sizes depend on it
    [path] = write_files(tmp_path, "t", [bytes(bad)])
    with pytest.raises(FileDecodeError) as caught:
        read_records(path, Telemetry, blocksize=512, scan=True)
    assert (caught.value.path, caught.value.offset) == ("[60].body", start + 13)
    df = read_records(path, Telemetry)  # without the scan, the partition finds it
    with pytest.raises(FileDecodeError, match=rf"^{path}: \[60\]"):
        df.compute(scheduler="sync")


@pytest.mark.parametrize("piece", [1, 7, 100, 5000])
def test_the_scan_reads_in_pieces(data: Path, monkeypatch: pytest.MonkeyPatch, piece: int) -> None:
    monkeypatch.setattr(read_module, "SCAN_PIECE", piece)
    df = read_records(str(data / "telemetry" / "t-01.bin"), Telemetry, blocksize=3000, scan=True)
    starts = [0]
    for m in telemetry(1, 450):
        starts.append(starts[-1] + len(m))
    blocks = list(df._expr.operand("iterables")[0])
    assert blocks[0].start == 0
    for b in blocks:  # every block starts at a message, at least 3000 bytes after the last
        assert b.start in starts
    assert all(b2.start - b1.start >= 3000 for b1, b2 in itertools.pairwise(blocks))
    assert rows(df.compute(scheduler="sync")) == expected(Telemetry, TELEMETRY[1:2])


# ---- paths, filesystems and options ----


def test_globs_lists_and_directories(data: Path) -> None:
    folder = data / "telemetry"
    first_two = read_records(str(folder / "t-0[01].bin"), Telemetry)
    assert first_two.npartitions == 2
    listed = read_records([folder / "t-03.bin", str(folder / "t-01.bin")], Telemetry)
    assert rows(listed.compute(scheduler="sync")) == expected(
        Telemetry, [TELEMETRY[3], TELEMETRY[1]]
    )
    assert read_records(folder, Telemetry).npartitions == len(TELEMETRY)
    with pytest.raises(FileNotFoundError):
        read_records(str(folder / "nothing-*.bin"), Telemetry)


def test_the_memory_filesystem_both_ways(memory: Any) -> None:
    for i, content in enumerate(SAMPLES):
        memory.pipe(f"/records/in/s-{i}.bin", content)
    df = read_records("memory://records/in/*.bin", Sample, blocksize=5000)
    assert rows(df.compute(scheduler="threads")) == expected(Sample, SAMPLES)
    written = to_records(df, Sample, "memory://records/out", compute_kwargs={"scheduler": "sync"})
    assert len(written) == df.npartitions
    assert written[0] == "/records/out/part.0.bin"
    assert b"".join(memory.cat(p) for p in written) == b"".join(SAMPLES)


def test_include_path_column_and_columns(data: Path) -> None:
    glob = str(data / "samples" / "*.bin")
    df = read_records(glob, Sample, blocksize=8000, include_path_column=True)
    paths = sorted(str(p) for p in (data / "samples").glob("*.bin"))
    assert isinstance(df.dtypes["path"], pd.CategoricalDtype)
    assert list(df.dtypes["path"].categories) == paths
    got = df.compute(scheduler="sync")
    counts = got["path"].value_counts().sort_index()
    assert list(counts) == [len(d) // SAMPLE_SIZE for d in SAMPLES]
    named = read_records(glob, Sample, include_path_column="file", columns=["value", "file"])
    assert list(named.columns) == ["value", "file"]
    projected = read_records(glob, Sample, blocksize=8000)[["sensor", "ts"]]
    assert list(projected.compute(scheduler="sync").columns) == ["sensor", "ts"]
    with pytest.raises(ValueError, match="not columns"):
        read_records(glob, Sample, columns=["nope"])


def test_compressed_files_are_one_partition_each(tmp_path: Path) -> None:
    paths = write_files(tmp_path, "s", [gzip.compress(d) for d in SAMPLES])
    gz = [p + ".gz" for p in paths]
    for p, g in zip(paths, gz, strict=True):
        os.rename(p, g)
    df = read_records(gz, Sample, blocksize=1000)
    assert df.npartitions == len(SAMPLES)
    assert rows(df.compute(scheduler="sync")) == expected(Sample, SAMPLES)
    capture_gz = tmp_path / "c.pcap.gz"
    capture_gz.write_bytes(gzip.compress(CAPTURES[0]))
    df = read_records(str(capture_gz), pcap.RecordLE, header=pcap_header)
    assert rows(df.compute(scheduler="sync")) == expected(pcap.RecordLE, CAPTURES[:1], 24)


def test_a_codec_reads_like_its_class(data: Path) -> None:
    path = str(data / "telemetry" / "t-02.bin")
    df = read_records(path, bw.compile(Telemetry))
    assert rows(df.compute(scheduler="sync")) == expected(Telemetry, TELEMETRY[2:3])


def test_headers_that_do_not_fit(tmp_path: Path) -> None:
    [path] = write_files(tmp_path, "p", [CAPTURES[0][:20]])
    with pytest.raises(FileDecodeError, match="ends inside its 24-byte header"):
        read_records(path, pcap.RecordLE, header=24)
    with pytest.raises(FileDecodeError, match="ends inside its 24-byte header"):
        read_records(path, pcap.RecordLE, header=pcap_header).compute(scheduler="sync")
    [other] = write_files(tmp_path, "n", [b"\x0a\x0d\x0d\x0a" + CAPTURES[0][4:]])
    with pytest.raises(ValueError, match="not a little-endian pcap") as caught:
        read_records(other, pcap.RecordLE, header=pcap_header).compute(scheduler="sync")
    assert any(other in note for note in caught.value.__notes__)
    with pytest.raises(TypeError, match="non-negative int"):
        read_records(other, pcap.RecordLE, header=lambda f: -1).compute(scheduler="sync")


@pytest.mark.parametrize(
    ("options", "error"),
    [
        ({"blocksize": 0}, ValueError),
        ({"blocksize": "lots"}, ValueError),
        ({"header": -1}, TypeError),
        ({"header": "24"}, TypeError),
        ({"threads": 0}, ValueError),
        ({"include_path_column": "ts"}, ValueError),
        ({"compression": "gzipp"}, ValueError),
    ],
)
def test_bad_options(data: Path, options: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error):
        read_records(str(data / "samples"), Sample, **options)


def test_x_must_be_a_struct_class_or_a_codec(data: Path) -> None:
    with pytest.raises(TypeError, match=r"bw\.Struct class or a bw\.Codec"):
        read_records(str(data / "samples"), int)  # type: ignore[arg-type]


# ---- to_records ----


def test_to_records_round_trips_byte_for_byte(
    data_client: Client, data: Path, tmp_path: Path
) -> None:
    telemetry_df = read_records(str(data / "telemetry" / "*.bin"), Telemetry)
    written = data_client.compute(
        to_records(telemetry_df, Telemetry, tmp_path / "telemetry", compute=False)
    ).result()
    assert [Path(p).read_bytes() for p in written] == TELEMETRY
    header = CAPTURES[0][:24]
    captures = read_records(str(data / "pcap" / "*.bin"), pcap.RecordLE, header=24)
    written = to_records(
        captures,
        pcap.RecordLE,
        str(tmp_path / "pcap" / "capture-*.pcap"),
        header=header,
        name_function=lambda i: f"{i:03}",
        compute_kwargs={"scheduler": data_client.get},
    )
    assert written == [str(tmp_path / "pcap" / f"capture-{i:03}.pcap") for i in range(3)]
    assert [Path(p).read_bytes() for p in written] == CAPTURES
    assert pcap.read(written[2]).packets == pcap.read(data / "pcap" / "p-02.bin").packets


def test_to_records_split_fixed_files_and_edited_frames(tmp_path: Path, data: Path) -> None:
    df = read_records(str(data / "samples" / "*.bin"), Sample, blocksize=4096)
    paths = [tmp_path / f"s{i}.bin" for i in range(df.npartitions)]
    delayed = to_records(df, Sample, paths, compute=False)
    assert isinstance(delayed, Delayed) and delayed.key.startswith("to-records-done-")
    written = delayed.compute(scheduler="sync")
    assert written == [str(p) for p in paths]
    assert b"".join(p.read_bytes() for p in paths) == b"".join(SAMPLES)
    louder = df.assign(value=df["value"] * 2)
    written = to_records(louder, Sample, tmp_path / "louder", compute_kwargs={"scheduler": "sync"})
    back = read_records(written, Sample).compute(scheduler="sync")
    want = pd.DataFrame(expected(Sample, SAMPLES))["value"] * 2
    assert list(back["value"]) == list(want.astype("float32"))
    missing = df.drop(columns=["flags"])  # flags has no default
    with pytest.raises(bw.PackError, match=r"/part\.\d+\.bin: \[0\]\.flags: missing field"):
        to_records(missing, Sample, tmp_path / "missing", compute_kwargs={"scheduler": "sync"})


def test_to_records_refuses_columns_that_are_not_fields(data: Path, tmp_path: Path) -> None:
    df = read_records(str(data / "samples"), Sample, include_path_column=True)
    with pytest.raises(ValueError, match=r"\['path'\] are not fields"):
        to_records(df, Sample, tmp_path)
    with pytest.raises(ValueError, match="urlpath lists 2 paths for 3 partitions"):
        to_records(df.drop(columns="path"), Sample, [tmp_path / "a", tmp_path / "b"])
    with pytest.raises(ValueError, match="compression must be one of None, 'zip'"):
        to_records(df.drop(columns="path"), Sample, tmp_path, compression="gz")
    assert not list(tmp_path.iterdir())  # refused before anything ran


def test_bytewright_dask_exports() -> None:
    assert bytewright.dask.read_records is read_records
    assert set(bytewright.dask.__all__) >= {"read_records", "to_records", "FileDecodeError"}


def test_written_partitions_read_back_in_order(data: Path, tmp_path: Path) -> None:
    df = read_records(str(data / "samples" / "s-00.bin"), Sample, blocksize=2400)
    assert df.npartitions == 14  # part.10.bin sorts before part.2.bin as text
    to_records(df, Sample, tmp_path, compute_kwargs={"scheduler": "sync"})
    want = expected(Sample, SAMPLES[:1])
    for urlpath in (tmp_path, str(tmp_path / "part.*.bin")):
        assert rows(read_records(urlpath, Sample).compute(scheduler="sync")) == want
