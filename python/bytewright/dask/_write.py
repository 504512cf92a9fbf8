"""`to_records`: a Dask DataFrame written as files of back-to-back messages, one a partition."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, overload

import dask.dataframe as dd
import pandas as pd
import pyarrow as pa
from dask.base import normalize_token, tokenize
from dask.delayed import Delayed, delayed
from fsspec.core import get_fs_token_paths

import bytewright as bw
from bytewright.dask._codec import Format, PortableCodec, codec_for
from bytewright.dask._read import UrlPath, check_compression, fspaths

Buffer = bytes | bytearray | memoryview


class WritePart:
    """Packs one partition with `pack_table` and writes it, after the header, to its file."""

    def __init__(
        self, fs: Any, fs_token: str, codec: PortableCodec, header: bytes, compression: str | None
    ) -> None:
        self.fs = fs
        self.fs_token = fs_token
        self.codec = codec
        self.header = header
        self.compression = compression

    def __dask_tokenize__(self) -> object:
        return (
            "bytewright-write-part",
            self.fs_token,
            normalize_token(self.codec),
            self.header,
            self.compression,
        )

    def __call__(self, part: pd.DataFrame, path: str) -> str:
        table = pa.Table.from_pandas(part, preserve_index=False)
        try:
            data = self.codec.codec.pack_table(table)
        except bw.PackError as e:
            raise bw.PackError(f"{path}: {e}", e.path) from None
        with self.fs.open(path, "wb", compression=self.compression) as f:
            f.write(self.header)
            f.write(data)
        return path


@overload
def to_records(
    df: dd.DataFrame,
    X: Format,
    urlpath: UrlPath,
    *,
    name_function: Callable[[int], str] | None = ...,
    header: Buffer = ...,
    compression: str | None = ...,
    storage_options: dict[str, Any] | None = ...,
    compute: Literal[True] = ...,
    compute_kwargs: dict[str, Any] | None = ...,
) -> list[str]: ...


@overload
def to_records(
    df: dd.DataFrame,
    X: Format,
    urlpath: UrlPath,
    *,
    name_function: Callable[[int], str] | None = ...,
    header: Buffer = ...,
    compression: str | None = ...,
    storage_options: dict[str, Any] | None = ...,
    compute: Literal[False],
    compute_kwargs: dict[str, Any] | None = ...,
) -> Delayed: ...


def to_records(
    df: dd.DataFrame,
    X: Format,
    urlpath: UrlPath,
    *,
    name_function: Callable[[int], str] | None = None,
    header: Buffer = b"",
    compression: str | None = None,
    storage_options: dict[str, Any] | None = None,
    compute: bool = True,
    compute_kwargs: dict[str, Any] | None = None,
) -> list[str] | Delayed:
    """Writes each partition of `df` as one file of back-to-back messages of `X`, packed
    with `pack_table` after `header`. The index is not written.

    `urlpath` is a directory (files `part.0.bin`, `part.1.bin`, ... or
    `name_function(i)`), a path with one `*` (replaced by `name_function(i)`), or a list
    of one path per partition, on any fsspec filesystem. Returns the paths written, or
    with `compute=False` a `Delayed` that writes them and returns them.

    >>> import pathlib, tempfile
    >>> import dask.dataframe as dd
    >>> import pandas as pd
    >>> import bytewright as bw
    >>> from bytewright.dask import to_records
    >>> class Tick(bw.Struct, byteorder="little"):
    ...     ts: bw.U64
    ...     qty: bw.I32
    >>> df = dd.from_pandas(pd.DataFrame({"ts": [1, 2, 3], "qty": [5, -6, 7]}), npartitions=2)
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> paths = to_records(df, Tick, folder, compute_kwargs={"scheduler": "sync"})
    >>> [pathlib.Path(p).name for p in paths]
    ['part.0.bin', 'part.1.bin']
    >>> pathlib.Path(paths[1]).read_bytes() == Tick(ts=3, qty=7).pack()
    True
    """
    codec = codec_for(X)
    check_compression(compression)
    if not isinstance(header, bytes | bytearray | memoryview):
        raise TypeError(f"header must be bytes, not {type(header).__name__}")
    names = codec.table_schema.names
    unknown = [c for c in df.columns if c not in names]
    if unknown:
        raise ValueError(
            f"to_records: {unknown} are not fields of X ({names}); drop them, e.g. "
            f"df.drop(columns={unknown!r})"
        )
    n = df.npartitions
    where = fspaths(urlpath)
    if isinstance(where, list):
        if len(where) != n:
            raise ValueError(f"urlpath lists {len(where)} paths for {n} partitions")
        fs, fs_token, paths = get_fs_token_paths(
            where, mode="wb", num=n, storage_options=storage_options
        )
    elif "*" in where:
        fs, fs_token, paths = get_fs_token_paths(
            where, mode="wb", num=n, name_function=name_function, storage_options=storage_options
        )
    else:
        fs, fs_token, [folder] = get_fs_token_paths(
            where, mode="wb", expand=False, storage_options=storage_options
        )
        name = name_function or (lambda i: f"part.{i}.bin")
        paths = [f"{folder.rstrip('/')}/{name(i)}" for i in range(n)]
    for parent in sorted({p.rsplit("/", 1)[0] for p in paths if "/" in p} - {""}):
        fs.makedirs(parent, exist_ok=True)
    write = WritePart(fs, fs_token, PortableCodec(codec), bytes(header), compression)
    token = tokenize(write, df, paths)
    parts = df.to_delayed()
    written = [
        delayed(write, pure=True)(part, path, dask_key_name=(f"to-records-{token}", i))
        for i, (part, path) in enumerate(zip(parts, paths, strict=True))
    ]
    result: Delayed = delayed(list, pure=True)(written, dask_key_name=f"to-records-done-{token}")
    if not compute:
        return result
    paths_written: list[str] = result.compute(**(compute_kwargs or {}))
    return paths_written
