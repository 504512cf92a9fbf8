"""How an Arrow-backed pandas column (`pandas.ArrowDtype`) is pickled in a process that reads
with `read_records`: its Arrow chunks as they are, instead of joined into a new array.

pandas pickles such a column by joining its chunks first (`combine_chunks`), which copies
every buffer even when there is one chunk, so that a slice does not drag its whole parent
buffer along (pyarrow pickles the buffers an array refers to, not the part it uses). A
partition of `read_records` holds one chunk per column that uses all of its buffers: sent
to the client it paid one full copy for nothing. The reduction registered here (with
`copyreg`, for the exact type `ArrowExtensionArray` only, so `StringDtype` columns and
other subclasses keep pandas' own) keeps the chunks when every one of them is tight and the
column is not many small chunks; otherwise it joins them, as pandas does. What it writes is
an ordinary pickle: `ArrowExtensionArray(pyarrow.chunked_array(chunks))`, read by any
process with pandas and pyarrow, bytewright or not.
"""

from __future__ import annotations

import copyreg
from typing import Any

import pyarrow as pa
from pandas.core.arrays.arrow.array import ArrowExtensionArray

# Chunks smaller than this on average are joined: each buffer of a chunk travels as a frame
# of its own, which costs more than copying a small one.
MIN_CHUNK_BYTES = 64 * 1024

# A chunk whose buffers hold more than this (or 1/64 of its values, if more) beyond its
# values, as a slice does, is joined: that copies only its values.
MAX_SLACK_BYTES = 1024


def tight(chunk: pa.Array) -> bool:
    """Whether `chunk`'s buffers hold its values and (almost) nothing else."""
    used: int = chunk.nbytes
    held: int = chunk.get_total_buffer_size()
    return held <= used + max(MAX_SLACK_BYTES, used >> 6)


def _reduce(array: ArrowExtensionArray) -> tuple[Any, tuple[Any, ...]]:
    data: pa.ChunkedArray = array.__arrow_array__()
    chunks = data.num_chunks
    keep = (chunks == 1 or (chunks > 1 and data.nbytes >= MIN_CHUNK_BYTES * chunks)) and all(
        tight(c) for c in data.iterchunks()
    )
    return ArrowExtensionArray, (data if keep else data.combine_chunks(),)


def register() -> None:
    """Use `_reduce` for every `ArrowExtensionArray` this process pickles (idempotent)."""
    copyreg.pickle(ArrowExtensionArray, _reduce)
