"""`read_records`: files of back-to-back messages as a Dask DataFrame, one block a partition.

Planning happens where `read_records` is called. It needs only the file sizes, except to
split files whose block boundaries depend on their content (a `scan` for message starts,
or a header function before fixed-size blocks): those files are read once by planning
tasks on the current scheduler. Each partition then reads its block through fsspec and
decodes it with `unpack_table`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any

import dask.dataframe as dd
import numpy as np
import pandas as pd
import pyarrow as pa
from dask import config
from dask.base import compute, normalize_token, tokenize
from dask.delayed import delayed
from dask.utils import natural_sort_key, parse_bytes
from fsspec.compression import available_compressions
from fsspec.core import get_fs_token_paths
from fsspec.utils import infer_compression

import bytewright as bw
from bytewright.dask import _columns
from bytewright.dask._codec import FileDecodeError, Format, PortableCodec, codec_for, in_file

Header = int | Callable[[IO[bytes]], int]
UrlPath = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]

# Partitions reach the client without their columns being copied once more (see _columns).
_columns.register()

# The scan reads files in pieces of this size (a message may span pieces).
SCAN_PIECE = 8 << 20


@dataclass(frozen=True)
class Block:
    """One partition's messages: `path[start:stop]` (`stop` None: to the end of the file),
    whose first message is message number `row` of the file. `start` is None when the
    header function finds it, on the worker; `compression` is the file's, if any."""

    path: str
    start: int | None
    stop: int | None
    row: int
    compression: str | None = None


class Source:
    """The files' filesystem and how to read them: what planning and partitions share."""

    def __init__(
        self, fs: Any, fs_token: str, codec: PortableCodec, header: Header, threads: int | None
    ) -> None:
        self.fs = fs
        self.fs_token = fs_token
        self.codec = codec
        self.header = header
        self.threads = threads

    def __dask_tokenize__(self) -> object:
        return (
            "bytewright-source",
            self.fs_token,
            normalize_token(self.codec),
            normalize_token(self.header),
            self.threads,
        )

    def name(self, path: str) -> str:
        """The path as errors show it: with its protocol unless it is a local file."""
        protocol = self.fs.protocol
        local = "file" in protocol if isinstance(protocol, tuple) else protocol == "file"
        return path if local else str(self.fs.unstrip_protocol(path))

    def header_size(self, path: str, f: IO[bytes]) -> int:
        """The header's size, from the header function given the file open at its start."""
        if isinstance(self.header, int):
            return self.header
        try:
            n = self.header(f)
        except Exception as e:
            e.add_note(f"in the header function of read_records, on {self.name(path)}")
            raise
        if type(n) is not int or n < 0:
            raise TypeError(
                f"the header function of read_records must return a non-negative int, "
                f"not {n!r} (on {self.name(path)})"
            )
        return n

    def short(self, path: str, size: int, header: int) -> FileDecodeError:
        name = self.name(path)
        return FileDecodeError(
            f"{name}: the file ends inside its {header}-byte header ({size} bytes)",
            "",
            size,
            file=name,
        )


class Planner:
    """Splits files into blocks: from their sizes alone where possible (`local`), else by
    reading them (`read`, run as tasks)."""

    def __init__(
        self, source: Source, blocksize: int | None, scan: bool, compression: str | None
    ) -> None:
        self.source = source
        self.blocksize = blocksize
        self.scan = scan
        self.compression = compression
        self.static_size = source.codec.codec.static_size or None

    def __dask_tokenize__(self) -> object:
        return (
            "bytewright-planner",
            normalize_token(self.source),
            self.blocksize,
            self.scan,
            self.compression,
        )

    def compression_of(self, path: str) -> str | None:
        if self.compression == "infer":
            inferred: str | None = infer_compression(path)
            return inferred
        return self.compression

    def local(self, path: str, size: int) -> list[Block] | None:
        """The file's blocks, or None when only reading it tells them."""
        header = self.source.header
        compression = self.compression_of(path)
        if compression is not None:  # a compressed stream cannot be entered midway
            return [Block(path, header if isinstance(header, int) else None, None, 0, compression)]
        if isinstance(header, int) and size < header:
            raise self.source.short(path, size, header)
        split = self.blocksize is not None and (self.static_size is not None or self.scan)
        if not split:
            return [Block(path, header if isinstance(header, int) else None, None, 0)]
        if not isinstance(header, int):
            return None
        if self.static_size is not None:
            return self.fixed(path, size, header)
        return None

    def fixed(self, path: str, size: int, header: int) -> list[Block]:
        """Blocks of whole messages: a multiple of the message size, near `blocksize`."""
        assert self.static_size is not None and self.blocksize is not None
        each = max(1, self.blocksize // self.static_size) * self.static_size
        starts = range(header, size, each) or range(header, header + 1)
        return [
            Block(path, s, min(s + each, size), (s - header) // self.static_size) for s in starts
        ]

    def read(self, path: str, size: int) -> list[Block]:
        """The file's blocks, reading its header and, with `scan`, every message size."""
        source = self.source
        with source.fs.open(path, "rb") as f:
            header = source.header_size(path, f)
            if size < header:
                raise source.short(path, size, header)
            if self.static_size is not None:
                return self.fixed(path, size, header)
            f.seek(header)
            return self.scanned(path, f, header, size)

    def scanned(self, path: str, f: IO[bytes], header: int, size: int) -> list[Block]:
        """Blocks of at least `blocksize` bytes that start where messages start, found by
        walking the message sizes from the header on (`Codec.scan_messages`)."""
        assert self.blocksize is not None
        codec = self.source.codec.codec
        starts = [(header, 0)]
        buf, base = b"", header  # `buf` holds the file from offset `base`
        pos, rows = header, 0
        while pos < size:
            target = pos + self.blocksize
            while True:
                try:
                    n, end = codec.scan_messages(buf, offset=pos - base, stop=target - base)
                except bw.DecodeError as e:
                    raise in_file(e, self.source.name(path), base, rows) from None
                rows, pos = rows + n, base + end
                if pos >= target:
                    break
                piece = f.read(SCAN_PIECE)
                if not piece:  # the end of the file, or a message it cuts off: the
                    pos = size  # partition that decodes it reports it
                    break
                buf, base = buf[pos - base :] + piece, pos
            if pos < size:
                starts.append((pos, rows))
        ends = [s for s, _ in starts[1:]] + [None]
        return [Block(path, s, e, r) for (s, r), e in zip(starts, ends, strict=True)]


class ReadBlock:
    """One partition: a block of one file decoded into a pandas DataFrame with Arrow-backed
    dtypes (the `func` of `dd.from_map`; `columns` lets Dask prune columns)."""

    def __init__(
        self,
        source: Source,
        schema: pa.Schema,
        path_column: tuple[str, list[str]] | None,
        token: str = "",
    ) -> None:
        self.source = source
        self.schema = schema
        self.path_column = path_column
        self.token = token  # of the files as they were planned, and the options

    def __dask_tokenize__(self) -> object:
        return ("bytewright-read-block", self.token, self.schema.to_string(), self.path_column)

    def __call__(self, block: Block, columns: list[str] | None = None) -> pd.DataFrame:
        data, base, offset = self.load(block)
        source = self.source
        try:
            table = source.codec.codec.unpack_table(data, offset=offset, threads=source.threads)
        except bw.DecodeError as e:
            raise in_file(e, source.name(block.path), base, block.row) from None
        arrow = pa.table(table)
        if not arrow.schema.equals(self.schema):  # 64-bit offsets past 2 GiB in a column
            arrow = arrow.cast(self.schema)
        return self.frame(arrow, len(arrow), block.path, columns)

    def load(self, block: Block) -> tuple[bytes, int, int]:
        """`(data, base, offset)`: bytes of the file from `base`, the first message at
        `offset` in them."""
        source = self.source
        if block.start is not None and block.compression is None:
            return source.fs.cat_file(block.path, start=block.start, end=block.stop), block.start, 0
        with source.fs.open(block.path, "rb", compression=block.compression) as f:
            header = source.header_size(block.path, f)
            f.seek(0)
            data = f.read()
        if len(data) < header:
            raise source.short(block.path, len(data), header)
        return data, 0, header

    def frame(
        self, arrow: pa.Table, rows: int, path: str, columns: list[str] | None
    ) -> pd.DataFrame:
        names = self.schema.names
        wanted = names if columns is None else [c for c in columns if c in names]
        df = arrow.select(wanted).to_pandas(types_mapper=pd.ArrowDtype)
        if self.path_column is not None:
            column, paths = self.path_column
            if columns is None or column in columns:
                dtype = pd.CategoricalDtype(paths)
                codes = np.full(rows, paths.index(path), dtype=np.int32)
                df[column] = pd.Categorical.from_codes(codes, dtype=dtype)
        if columns is not None:
            df = df[list(columns)]
        return df


def _files(fs: Any, paths: list[str]) -> list[tuple[str, int, str]]:
    """`(path, size, version)` of every file (the version tells a changed file from the
    same one). Globs (`*`, `?`, `[...]`) give the files they match; directories give the
    files under them, leaving out names that start with "." or "_"; both in natural order
    (`part.2` before `part.10`), as `read_parquet` does."""
    out = []
    for pattern in paths:
        if any(c in pattern for c in "*?[") and not fs.exists(pattern):
            for path in sorted(fs.glob(pattern), key=natural_sort_key):
                info = fs.info(path)
                if info["type"] != "directory":
                    out.append((path, int(info["size"]), tokenize(info)))
            continue
        path = pattern
        info = fs.info(path)
        if info["type"] == "directory":
            found = fs.find(path, detail=True)
            for sub in sorted(found, key=natural_sort_key):
                parts = sub[len(path.rstrip("/")) + 1 :].split("/")
                if not any(p.startswith((".", "_")) for p in parts):
                    out.append((sub, int(found[sub]["size"]), tokenize(found[sub])))
        else:
            out.append((path, int(info["size"]), tokenize(info)))
    return out


def read_records(
    urlpath: UrlPath,
    X: Format,
    *,
    blocksize: int | str | None = "64 MiB",
    header: Header = 0,
    scan: bool = False,
    columns: Sequence[str] | None = None,
    include_path_column: bool | str = False,
    compression: str | None = "infer",
    storage_options: dict[str, Any] | None = None,
    threads: int | None = 1,
) -> dd.DataFrame:
    """Files of back-to-back messages of `X` (a `bw.Struct` class or a `bw.Codec`) as a
    Dask DataFrame with one column per field, in Arrow-backed pandas dtypes.

    `urlpath` is a path, a directory, a glob, a list of paths, or any fsspec URL (with
    `storage_options`). Files of fixed-size messages are split into blocks of whole
    messages of about `blocksize` bytes; files of variable-size messages are one partition
    each, unless `scan=True`, which walks their message sizes once, when `read_records` is
    called, to split them too. `header` is how many bytes at the start of each file are not
    messages, or a function given the open file that returns it. See docs/dask.md.

    >>> import pathlib, tempfile
    >>> import bytewright as bw
    >>> from bytewright.dask import read_records
    >>> class Tick(bw.Struct, byteorder="little"):
    ...     ts: bw.U64
    ...     qty: bw.I32
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> ticks = Tick.pack_many(Tick(ts=i, qty=-i) for i in range(1000))  # 12 bytes each
    >>> _ = (folder / "0.bin").write_bytes(ticks)
    >>> df = read_records(str(folder / "*.bin"), Tick, blocksize="4 KiB")
    >>> df.npartitions  # blocks of 341 whole messages
    3
    >>> int(df["qty"].sum().compute(scheduler="sync"))
    -499500
    """
    codec = codec_for(X)
    size = _blocksize(blocksize)
    if not (type(header) is int and header >= 0) and not callable(header):
        raise TypeError(f"header must be a non-negative int or a function, not {header!r}")
    if threads is not None and (type(threads) is not int or threads < 1):
        raise ValueError(f"threads must be a positive int or None, not {threads!r}")
    check_compression(compression, "infer")
    where = fspaths(urlpath)
    fs, fs_token, paths = get_fs_token_paths(where, mode="rb", storage_options=storage_options)
    if isinstance(where, str) and "*" in where:  # fsspec expanded the glob, sorted as text
        paths = sorted(paths, key=natural_sort_key)
    files = _files(fs, paths)
    if not files:
        raise FileNotFoundError(f"{urlpath!r} resolved to no files")
    source = Source(fs, fs_token, PortableCodec(codec), header, threads)
    schema = pa.schema(codec.table_schema)
    path_column = None
    if include_path_column:
        column = "path" if include_path_column is True else str(include_path_column)
        if column in schema.names:
            raise ValueError(f"include_path_column: {column!r} is already a column of X")
        path_column = (column, [p for p, _, _ in files])
    meta = ReadBlock(source, schema, path_column).frame(schema.empty_table(), 0, files[0][0], None)
    if columns is not None:
        columns = list(columns)
        unknown = [c for c in columns if c not in meta.columns]
        if unknown:
            raise ValueError(f"columns: {unknown} are not columns of X ({list(meta.columns)})")
    planner = Planner(source, size, scan, compression)
    token = tokenize(planner, files)
    plans: list[list[Block] | None] = [planner.local(path, n) for path, n, _ in files]
    todo = [i for i, plan in enumerate(plans) if plan is None]
    if todo:
        tasks = [
            delayed(planner.read, pure=True)(
                *files[i][:2], dask_key_name=(f"read-records-scan-{token}", i)
            )
            for i in todo
        ]
        for i, plan in zip(todo, compute(*tasks), strict=True):
            plans[i] = plan
    blocks = [block for plan in plans if plan is not None for block in plan]
    # The columns are Arrow-backed already: no string conversion step (and no such tasks).
    with config.set({"dataframe.convert-string": False}):
        frame: dd.DataFrame = dd.from_map(
            ReadBlock(source, schema, path_column, token),
            blocks,
            meta=meta,
            label="read-records",
            enforce_metadata=False,
            columns=columns,
        )
    return frame


def fspaths(urlpath: UrlPath) -> str | list[str]:
    """A path, or a list of them, as strings."""
    if isinstance(urlpath, str | os.PathLike):
        return os.fspath(urlpath)
    return [os.fspath(p) for p in urlpath]


def check_compression(compression: str | None, *also: str) -> None:
    names = [c for c in available_compressions() if c]
    if compression is not None and compression not in (*also, *names):
        options = ", ".join(repr(c) for c in (None, *also, *names))
        raise ValueError(f"compression must be one of {options}, not {compression!r}")


def _blocksize(blocksize: int | str | None) -> int | None:
    if blocksize is None:
        return None
    n = parse_bytes(blocksize) if isinstance(blocksize, str) else blocksize
    if type(n) is not int or n < 1:
        raise ValueError(f"blocksize must be a positive number of bytes or None, not {blocksize!r}")
    return n
