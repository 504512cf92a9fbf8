"""Out-of-band buffers: large binary values written beside a record, as frames of their own.

`dumps_frames` returns a record followed by the buffers it refers to, which are views of
the original memory (no copy); `loads_frames` rebuilds the value from such frames. In the
record each of these values is the standard-library kind 20 (docs/format.md), whose
arguments are `(type, meta, data, digest)`: `data` is the index of its frame (or, for a
small value, the bytes themselves) and `digest` is the SHA-256 of the frame when the
record is signed, so the record's HMAC covers every frame.

Only these two functions write or read out-of-band frames: the reducers below refuse to
work outside them, so `bytewright.pickle.dumps` never writes a record that needs frames.
NumPy is imported only if it is installed, and only arrays and scalars whose dtype holds
no Python objects are written.
"""

from __future__ import annotations

import hashlib
import hmac
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from bytewright import _native
from bytewright.pickle import _stdlib
from bytewright.pickle._errors import IntegrityError, LimitError, PicklingError, UnpicklingError
from bytewright.pickle._limits import DEFAULT_LIMITS, Limits

KIND = 20  # the standard-library kind of an out-of-band value; frozen by the format

# Values smaller than this are copied into the record: a frame of its own costs more.
MIN_FRAME_BYTES = 64 * 1024

Buffer = bytes | bytearray | memoryview
Frame = bytes | bytearray | memoryview


class OutOfBand:
    """Marks a bytes or bytearray root value to be written as a frame of its own.

    Nested bytes and bytearray values are written by the native encoder, inside the record.
    """

    __slots__ = ("value",)

    def __init__(self, value: bytes | bytearray) -> None:
        self.value = value


class _Writing:
    """The frames of one `dumps_frames` call, per thread."""

    __slots__ = ("frames", "min_size", "seen", "signed")

    def __init__(self, signed: bool, min_size: int) -> None:
        self.signed = signed
        self.min_size = min_size
        self.frames: list[Frame] = []
        # id -> arguments: the encoder calls a reducer before it looks at its memo,
        # so an object met twice must give the same frame, not a second one.
        self.seen: dict[int, tuple[Any, ...]] = {}

    def frame(self, view: memoryview) -> tuple[int, bytes | None]:
        self.frames.append(view)
        digest = hashlib.sha256(view).digest() if self.signed else None
        return len(self.frames), digest  # frame 0 is the record


class _Reading:
    """The frames given to one `loads_frames` call, per thread."""

    __slots__ = ("frames", "limits", "signed", "used")

    def __init__(self, frames: Sequence[Frame], signed: bool, limits: Limits) -> None:
        self.frames = frames
        self.signed = signed
        self.limits = limits
        self.used: set[int] = set()

    def take(self, index: int, digest: bytes | None) -> memoryview:
        if not 1 <= index < len(self.frames):
            raise UnpicklingError(
                f"the record refers to frame {index}, but {len(self.frames)} frames were given"
            )
        if index in self.used:
            raise UnpicklingError(f"the record refers to frame {index} twice")
        self.used.add(index)
        view = memoryview(self.frames[index])
        if view.nbytes > self.limits.max_bytes_len:
            raise LimitError(
                f"frame {index} has {view.nbytes} bytes, over the limit of "
                f"{self.limits.max_bytes_len} (Limits.max_bytes_len)"
            )
        if self.signed:
            if digest is None:
                raise UnpicklingError(f"the signed record has no digest for frame {index}")
            if not view.c_contiguous:
                view = memoryview(view.tobytes())
            if not hmac.compare_digest(hashlib.sha256(view).digest(), digest):
                raise IntegrityError(f"frame {index} does not match its digest")
        return view


# The reading state of a record given alone: every frame it refers to is out of range, so
# `take` raises before it changes anything, and one instance serves every thread.
_RECORD_ONLY = _Reading((b"",), False, DEFAULT_LIMITS)


class _State(threading.local):
    writing: _Writing | None = None
    reading: _Reading | None = None


_state = _State()


def _writing(obj: object) -> _Writing:
    writing = _state.writing
    if writing is None:
        raise TypeError(
            f"{type(obj).__module__}.{type(obj).__qualname__} values are written only "
            "by the bytewright.dask serialization family (as out-of-band frames)"
        )
    return writing


def _flat(view: memoryview) -> memoryview:
    """A C-contiguous byte view of `view`'s memory (a copy only if it is not contiguous)."""
    if not view.c_contiguous:
        view = memoryview(view.tobytes())
    return view.cast("B") if view.ndim != 1 or view.format != "B" else view


def _data(writing: _Writing, flat: memoryview) -> tuple[int | bytes, bytes | None]:
    if flat.nbytes < writing.min_size:
        return flat.tobytes(), None
    return writing.frame(flat)


def _reduce_out_of_band(obj: OutOfBand) -> tuple[Any, ...]:
    writing = _writing(obj)
    value = obj.value
    kind = type(value)
    if kind is not bytes and kind is not bytearray:
        raise TypeError("OutOfBand holds bytes or bytearray")
    index, digest = writing.frame(memoryview(value))
    return (kind.__name__, (), index, digest)


def _reduce_memoryview(view: memoryview) -> tuple[Any, ...]:
    writing = _writing(view)
    cached = writing.seen.get(id(view))
    if cached is not None:
        return cached
    fmt, shape = view.format, tuple(view.shape or ())
    flat = _flat(view)
    _check_cast(flat, fmt, shape)  # the reader must be able to rebuild exactly this view
    data, digest = _data(writing, flat)
    args = ("memoryview", (fmt, shape, view.readonly), data, digest)
    writing.seen[id(view)] = args
    return args


def _check_cast(flat: memoryview, fmt: str, shape: tuple[int, ...]) -> None:
    if fmt == "B" and len(shape) == 1:
        return
    if 0 in shape:
        raise TypeError(f"cannot write an empty memoryview of format {fmt!r} and shape {shape}")
    try:
        flat.cast(fmt, shape)  # type: ignore[call-overload]
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"cannot write a memoryview of format {fmt!r}: only native single-character "
            "formats can be rebuilt; cast it to 'B' or use a NumPy array"
        ) from exc


def _view_of(flat: memoryview, fmt: str, shape: tuple[int, ...]) -> memoryview:
    if fmt == "B" and len(shape) == 1:
        if flat.nbytes != shape[0]:
            raise ValueError(f"{flat.nbytes} bytes do not fill shape {shape}")
        return flat
    view: memoryview = flat.cast(fmt, shape)  # type: ignore[call-overload]
    return view


# --- NumPy ---------------------------------------------------------------------------


def _descr(dtype: Any) -> Any:
    from numpy.lib import format as npy_format

    if dtype.hasobject:
        raise TypeError(f"cannot write a NumPy value of dtype {dtype}: it holds Python objects")
    return npy_format.dtype_to_descr(dtype)


def _reduce_ndarray(array: Any) -> tuple[Any, ...]:
    import numpy as np

    writing = _writing(array)
    key = id(array)
    cached = writing.seen.get(key)
    if cached is not None:
        return cached
    descr = _descr(array.dtype)
    fortran = bool(array.ndim > 1 and array.flags.f_contiguous and not array.flags.c_contiguous)
    if not (fortran or array.flags.c_contiguous):
        array = np.ascontiguousarray(array)  # one copy, as pickle makes
    source = array.T if fortran else array
    flat = memoryview(source.reshape(-1).view(np.uint8)) if array.nbytes else memoryview(b"")
    data, digest = _data(writing, flat)
    meta = (descr, tuple(array.shape), fortran, bool(array.flags.writeable))
    args = ("ndarray", meta, data, digest)
    writing.seen[key] = args
    return args


def _reduce_scalar(scalar: Any) -> tuple[Any, ...]:
    import numpy as np

    _writing(scalar)
    array = np.asarray(scalar)
    return ("scalar", (_descr(array.dtype),), array.tobytes(), None)


def _plain(value: Any, depth: int = 0) -> bool:
    """A dtype description holds only str, int, tuples and lists of them."""
    if depth > 32:
        return False
    if type(value) in (str, int):
        return True
    if type(value) in (tuple, list):
        return all(_plain(item, depth + 1) for item in value)
    return False


def _dtype(descr: Any) -> Any:
    from numpy.lib import format as npy_format

    if not _plain(descr):
        raise UnpicklingError("a NumPy dtype description must hold only str, int, tuple, list")
    try:
        dtype = npy_format.descr_to_dtype(descr)
    except (TypeError, ValueError, KeyError, IndexError) as exc:
        raise UnpicklingError(f"bad NumPy dtype description {descr!r}: {exc}") from None
    if dtype.hasobject:
        raise UnpicklingError(f"a NumPy dtype holding Python objects is refused: {descr!r}")
    return dtype


# --- rebuilding ------------------------------------------------------------------------


def _expect(label: str, value: Any, *types: type) -> None:
    if type(value) not in types:
        raise UnpicklingError(f"out-of-band {label} has the wrong type {type(value).__name__}")


def _shape(value: Any) -> tuple[int, ...]:
    _expect("shape", value, tuple)
    if len(value) > 64 or any(type(n) is not int or n < 0 for n in value):
        raise UnpicklingError(f"bad out-of-band shape {value!r}")
    return value  # type: ignore[no-any-return]


def _source(data: int | bytes, digest: bytes | None) -> tuple[memoryview, bool]:
    """The bytes of a value and whether they are a frame (not a copy taken from the record)."""
    if type(data) is bytes:
        return memoryview(data), False
    reading = _state.reading
    if reading is None:
        raise UnpicklingError(
            "the record refers to out-of-band frames; read it with the bytewright.dask family"
        )
    return reading.take(data, digest), True  # type: ignore[arg-type]


def _writeable(view: memoryview, writeable: bool) -> memoryview:
    if writeable and view.readonly:
        return memoryview(bytearray(view))  # a read-only frame: one copy
    return view if writeable else view.toreadonly()


def _build(*args: Any) -> Any:
    if len(args) != 4:
        raise UnpicklingError(f"an out-of-band value takes 4 arguments, the record has {len(args)}")
    kind, meta, data, digest = args
    _expect("type", kind, str)
    _expect("metadata", meta, tuple)
    _expect("data", data, int, bytes)
    _expect("digest", digest, bytes, type(None))
    if digest is not None and len(digest) != 32:
        raise UnpicklingError("an out-of-band digest must have 32 bytes")
    builder = _BUILDERS.get(kind)
    if builder is None:
        raise UnpicklingError(f"unknown out-of-band value type {kind!r}")
    try:
        return builder(meta, data, digest)
    except (TypeError, ValueError) as exc:
        raise UnpicklingError(f"cannot rebuild out-of-band {kind}: {exc}") from None


def _build_bytes(meta: tuple[Any, ...], data: int | bytes, digest: bytes | None) -> bytes:
    if meta != ():
        raise UnpicklingError("out-of-band bytes take no metadata")
    view, framed = _source(data, digest)
    frame = view.obj
    if framed and type(frame) is bytes and len(frame) == view.nbytes:
        return frame  # the frame itself: no copy
    return view.tobytes()


def _build_bytearray(meta: tuple[Any, ...], data: int | bytes, digest: bytes | None) -> bytearray:
    if meta != ():
        raise UnpicklingError("an out-of-band bytearray takes no metadata")
    return bytearray(_source(data, digest)[0])


def _build_memoryview(meta: tuple[Any, ...], data: int | bytes, digest: bytes | None) -> memoryview:
    if len(meta) != 3:
        raise UnpicklingError("an out-of-band memoryview takes 3 metadata items")
    fmt, shape, readonly = meta
    _expect("format", fmt, str)
    _expect("read-only flag", readonly, bool)
    view, framed = _source(data, digest)
    view = _writeable(view, not readonly) if framed else memoryview(bytearray(view))
    if readonly:
        view = view.toreadonly()
    return _view_of(view.cast("B") if view.format != "B" else view, fmt, _shape(shape))


def _build_ndarray(meta: tuple[Any, ...], data: int | bytes, digest: bytes | None) -> Any:
    import numpy as np

    if len(meta) != 4:
        raise UnpicklingError("an out-of-band NumPy array takes 4 metadata items")
    descr, shape, fortran, writeable = meta
    shape = _shape(shape)
    _expect("order flag", fortran, bool)
    _expect("writeable flag", writeable, bool)
    dtype = _dtype(descr)
    count = 1
    for n in shape:
        count *= n
    view, framed = _source(data, digest)
    if view.nbytes != count * dtype.itemsize:
        raise UnpicklingError(
            f"{view.nbytes} bytes cannot hold a NumPy array of shape {shape} and dtype {dtype}"
        )
    view = _writeable(view, writeable) if framed else memoryview(bytearray(view))
    if count == 0 or dtype.itemsize == 0:
        array = np.zeros(shape, dtype=dtype, order="F" if fortran else "C")
    else:
        flat = np.frombuffer(view, dtype=dtype)
        array = flat.reshape(shape[::-1]).T if fortran else flat.reshape(shape)
    if not writeable:
        array.flags.writeable = False
    return array


def _build_scalar(meta: tuple[Any, ...], data: int | bytes, digest: bytes | None) -> Any:
    import numpy as np

    if len(meta) != 1 or type(data) is not bytes:
        raise UnpicklingError("a NumPy scalar takes 1 metadata item and in-record bytes")
    dtype = _dtype(meta[0])
    if len(data) != dtype.itemsize:
        raise UnpicklingError(f"{len(data)} bytes cannot hold a NumPy {dtype} scalar")
    return np.frombuffer(data, dtype=dtype)[0]


_BUILDERS: dict[str, Callable[[tuple[Any, ...], int | bytes, bytes | None], Any]] = {
    "bytes": _build_bytes,
    "bytearray": _build_bytearray,
    "memoryview": _build_memoryview,
    "ndarray": _build_ndarray,
    "scalar": _build_scalar,
}


def _install() -> None:
    reducers: dict[type, tuple[int, _stdlib.Reducer]] = {
        OutOfBand: (KIND, _reduce_out_of_band),
        memoryview: (KIND, _reduce_memoryview),
    }
    try:
        import numpy as np
    except ImportError:
        pass
    else:
        reducers[np.ndarray] = (KIND, _reduce_ndarray)
        for scalar in set(np.sctypeDict.values()):
            if scalar is not np.object_:
                reducers[scalar] = (KIND, _reduce_scalar)
    _stdlib.REDUCERS.update(reducers)
    _stdlib.BUILDERS[KIND] = _build


_install()


# --- the two entry points --------------------------------------------------------------


def dumps_frames(
    obj: Any,
    *,
    hmac_key: Buffer | None = None,
    deterministic: bool = False,
    min_frame_bytes: int = MIN_FRAME_BYTES,
) -> list[Frame]:
    """A record for `obj`, followed by the out-of-band frames it refers to.

    NumPy arrays and memoryviews of at least `min_frame_bytes` bytes, and a bytes or
    bytearray `obj` of that size, become frames that view their memory without a copy.
    """
    writing = _Writing(hmac_key is not None, min_frame_bytes)
    root = OutOfBand(obj) if _is_big_root(obj, min_frame_bytes) else obj
    _state.writing = writing
    try:
        record = _native.pickle_dumps(root, hmac_key=hmac_key, deterministic=deterministic)
    except PicklingError as exc:
        if isinstance(exc.__cause__, TypeError):  # a reducer above says why
            raise PicklingError(f"{exc}: {exc.__cause__}") from exc.__cause__
        raise
    finally:
        _state.writing = None
    return [record, *writing.frames]


def _is_big_root(obj: Any, min_frame_bytes: int) -> bool:
    return (type(obj) is bytes or type(obj) is bytearray) and len(obj) >= min_frame_bytes


def loads_frames(
    frames: Sequence[Frame],
    *,
    classes: Iterable[type] | Mapping[str, type] = (),
    hmac_key: Buffer | None = None,
    limits: Limits | None = None,
) -> Any:
    """The value written by `dumps_frames`; every frame must be used exactly once."""
    if not frames:
        raise UnpicklingError("no frames: the record is missing")
    if len(frames) == 1:  # the record alone (most values): nothing to hand out, or to count
        reading = _RECORD_ONLY
    else:
        reading = _Reading(
            frames, hmac_key is not None, DEFAULT_LIMITS if limits is None else limits
        )
    previous = _state.reading
    _state.reading = reading
    try:
        # `limits=None` is the native default: only given limits are read on every call.
        value = _native.pickle_loads(frames[0], classes=classes, hmac_key=hmac_key, limits=limits)
    finally:
        _state.reading = previous
    # `take` refuses an index out of range or used twice, so all are used when counts agree.
    if len(reading.used) != len(frames) - 1:
        unused = sorted(set(range(1, len(frames))) - reading.used)
        raise UnpicklingError(f"frames {unused} are not referred to by the record")
    return value
