"""`loads_pickle`: read existing standard pickle files safely.

A native, allowlist-only interpreter checks every opcode, memo index, global and call.
Plain values are built as they pass; every call, and anything else that could run
code, waits until the whole stream has passed. Nothing is imported, and only the fixed
table of reconstructors, your `classes=` (rebuilt field by field, or through their own
pickling hooks, which run as pickle runs them) and the constructors you name in
`allow=` can be reached.
"""

from __future__ import annotations

import copyreg
import io
import sys
from collections.abc import Mapping

from bytewright import _native
from bytewright._native import KIND_TUPLE
from bytewright.pickle._classes import ClassInfo, class_map, class_name
from bytewright.pickle._errors import LimitError, TruncatedError, UnpicklingError
from bytewright.pickle._limits import Limits

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    import enum
    import uuid
    from collections.abc import Callable, Iterable
    from typing import Any, BinaryIO, Protocol, TypeAlias

    class _Stream(Protocol):
        def read(self, n: int, /) -> bytes: ...
        def readline(self) -> bytes: ...

    Buffer: TypeAlias = bytes | bytearray | memoryview
    Classes: TypeAlias = Iterable[type] | Mapping[str, type]
    Allow: TypeAlias = Iterable[Callable[..., Any]] | Mapping[str, Callable[..., Any]]


def _enum_member(cls: type[enum.Enum], value: Any) -> Any:
    """The member of `cls` with `value`, without calling user hooks such as `_missing_`."""
    import enum  # loaded already: cls is an Enum

    try:
        member = cls._value2member_map_.get(value)
    except TypeError:  # unhashable value
        member = None
    if member is None:
        for candidate in cls.__members__.values():
            if candidate._value_ == value:
                return candidate
        is_flag = issubclass(cls, enum.Flag)
        flag_missing = getattr(enum.Flag._missing_, "__func__", None)
        if is_flag and getattr(cls._missing_, "__func__", None) is flag_missing:
            return cls(value)  # a combination of flags, made by enum's own code
        raise UnpicklingError(f"enum {class_name(cls)!r} has no member with value {value!r}")
    return member


def _set_state(info: ClassInfo, obj: Any, state: Any) -> None:
    """Apply a BUILD state (a dict, or pickle's (dict, slots) pair) field by field."""
    if type(state) is tuple:
        if len(state) != 2:
            raise UnpicklingError(f"state of {info.name!r} is a tuple of {len(state)} items")
        merged: dict[Any, Any] = {}
        for part in state:
            if part is None:
                continue
            if type(part) is not dict:
                raise UnpicklingError(f"state of {info.name!r} holds a {type(part).__name__}")
            merged.update(part)
        state = merged
    elif type(state) is dict:
        state = dict(state)
    else:
        raise UnpicklingError(f"state of {info.name!r} is a {type(state).__name__}, not a dict")
    info.build(obj, state, info.version)


def _uuid_state(obj: uuid.UUID, state: dict[Any, Any]) -> None:
    """What `UUID.__setstate__` does, for the two documented keys only."""
    import uuid  # loaded already: obj is a UUID

    value = state.get("int")
    if type(value) is not int or not 0 <= value < 1 << 128:
        raise UnpicklingError("uuid.UUID state needs an int between 0 and 2**128")
    if set(state) - {"int", "is_safe"}:
        raise UnpicklingError(f"uuid.UUID state has unknown keys {sorted(map(repr, state))}")
    is_safe = state.get("is_safe", uuid.SafeUUID.unknown.value)
    try:
        safe = uuid.SafeUUID(is_safe)
    except ValueError:
        raise UnpicklingError(f"uuid.UUID state has the bad is_safe {is_safe!r}") from None
    object.__setattr__(obj, "int", value)
    object.__setattr__(obj, "is_safe", safe)


# The exception attributes with dunder names that a pickled state may set (each a plain
# setter of the builtin class, or the instance dict).
_EXCEPTION_DUNDERS = frozenset({"__notes__", "__cause__", "__context__", "__suppress_context__"})


def _exception_state(obj: BaseException, state: dict[Any, Any]) -> None:
    """What `BaseException.__setstate__` does, for attribute names that run no code."""
    for key in state:
        if type(key) is not str or (key.startswith("__") and key not in _EXCEPTION_DUNDERS):
            raise UnpicklingError(f"exception state with the attribute {key!r} is not allowed")
    for key, value in state.items():
        setattr(obj, key, value)


def _attrs_state(obj: Any, state: dict[Any, Any]) -> None:
    """The attributes of a `SimpleNamespace` or `UserDict`/`UserList`/`UserString`, written
    into its `__dict__` as pickle does, under names that are not dunder names."""
    for key in state:
        if type(key) is not str or (key.startswith("__") and key.endswith("__")):
            raise UnpicklingError(
                f"state of {type(obj).__qualname__} with the attribute {key!r} is not allowed"
            )
    inst_dict = object.__getattribute__(obj, "__dict__")
    for key, value in state.items():
        inst_dict[sys.intern(key)] = value


def _build_state(obj: Any, state: Any) -> None:
    """pickle's own BUILD, for trusted objects: `__setstate__`, else `__dict__` and slots."""
    setstate = getattr(obj, "__setstate__", None)
    if setstate is not None:
        setstate(state)
        return
    slotstate = None
    if type(state) is tuple and len(state) == 2:
        state, slotstate = state
    if state:
        if not isinstance(state, dict):
            raise UnpicklingError("state is not a dictionary")
        inst_dict = obj.__dict__
        for key, value in state.items():
            inst_dict[sys.intern(key) if type(key) is str else key] = value
    if slotstate:
        if not isinstance(slotstate, dict):
            raise UnpicklingError("slot state is not a dictionary")
        for key, value in slotstate.items():
            setattr(obj, key, value)


def _append_items(obj: Any, items: list[Any]) -> None:
    """pickle's APPENDS on an object that is not a list: its `extend`, else `append`."""
    try:
        extend = obj.extend
    except AttributeError:
        append = obj.append
        for item in items:
            append(item)
    else:
        extend(items)


def _add_items(obj: Any, items: list[Any]) -> None:
    """pickle's ADDITEMS: `set.update` on a set (subclasses too), else the `add` method."""
    if isinstance(obj, set):
        set.update(obj, items)
    else:
        add = obj.add
        for item in items:
            add(item)


# copyreg's reconstructor of protocol 0-1 objects, for registered classes with a builtin base.
_reconstructor = copyreg._reconstructor  # type: ignore[attr-defined]


def _new_tuple(info: ClassInfo, cls: type, fields: Any) -> Any:
    """A registered named tuple from its field values (its `__new__` is not called)."""
    if info.kind != KIND_TUPLE or type(fields) is not tuple:
        raise UnpicklingError(f"{info.name!r} cannot be rebuilt from {type(fields).__name__}")
    if len(fields) != len(info.fields or ()):
        raise UnpicklingError(
            f"{info.name!r} has {len(info.fields or ())} fields, the pickle gives {len(fields)}"
        )
    return tuple.__new__(cls, fields)


# The error handlers Python ships; a handler registered with codecs.register_error is
# someone's code, never looked up.
_ERROR_HANDLERS = frozenset(
    {
        "strict",
        "ignore",
        "replace",
        "backslashreplace",
        "surrogateescape",
        "surrogatepass",
        "xmlcharrefreplace",
        "namereplace",
    }
)
_ASCII = bytes(range(128))


def _python2_codec(encoding: Any, errors: Any) -> tuple[int, str, str, bool]:
    """pickle's `encoding=`/`errors=` for Python 2 str: `(mode, codec, errors, ascii_text)`.

    Mode 0 is pickle's default (ASCII, strict), 1 is `encoding="bytes"`, 2 decodes with
    `codec`. Only the codecs of the standard library's `encodings` package are accepted:
    the name is looked up with `encodings.search_function`, which imports nothing but
    `encodings.<name>` and never asks the search functions others registered with
    `codecs.register` (their code is not run). `ascii_text` is true when ASCII bytes
    decode to the same text (the checks may then read such a str's text).
    """
    encoding = "ASCII" if encoding is None else encoding
    errors = "strict" if errors is None else errors
    if type(encoding) is not str:
        raise TypeError(f"encoding must be a str, not {type(encoding).__name__}")
    if type(errors) is not str:
        raise TypeError(f"errors must be a str, not {type(errors).__name__}")
    if encoding == "bytes":
        return 1, "", "", False
    found = _CODECS.get((encoding, errors))
    if found is None:
        found = _CODECS[encoding, errors] = _stdlib_codec(encoding, errors)
    return found


# (encoding, errors) -> what _python2_codec returns, for the ones accepted so far.
_CODECS: dict[tuple[str, str], tuple[int, str, str, bool]] = {}


def _stdlib_codec(encoding: str, errors: str) -> tuple[int, str, str, bool]:
    import encodings

    if errors not in _ERROR_HANDLERS:
        raise LookupError(
            f"errors={errors!r} is not an error handler Python ships "
            f"(one of {', '.join(sorted(_ERROR_HANDLERS))})"
        )
    # The interpreter's own lookup lowercases the name and turns spaces into hyphens first.
    search = encodings.search_function
    info = search(encoding.lower().replace(" ", "-"))
    if info is None:
        raise LookupError(
            f"encoding={encoding!r} is not a codec of Python's encodings package "
            "(codecs registered by other code are never looked up)"
        )
    if not getattr(info, "_is_text_encoding", True):
        raise LookupError(f"encoding={encoding!r} is not a text encoding")
    name = info.name
    if name == "ascii" and errors == "strict":
        return 0, "", "", True
    # The native decoder looks the codec up by this name: the encodings package's search
    # function, registered first, finds it before any other is asked.
    if search(name) is None:  # pragma: no cover - every codec of encodings knows its name
        raise LookupError(f"encoding={encoding!r} has no standard name")
    try:
        ascii_text = _ASCII.decode(name) == _ASCII.decode("ascii")
    except (UnicodeError, ValueError):
        ascii_text = False
    return 2, name, errors, ascii_text


def _allow_map(allow: Allow) -> dict[str, Any] | None:
    if not allow:
        return None
    if isinstance(allow, Mapping):
        out = dict(allow)
    else:
        out = {}
        for fn in allow:
            if isinstance(fn, str) or not callable(fn):
                raise TypeError(f"allow= must hold callables (or map names to them), not {fn!r}")
            out[f"{fn.__module__}.{fn.__qualname__}"] = fn
    for name, fn in out.items():
        if type(name) is not str or not callable(fn):
            raise TypeError("allow= mapping must map 'module.name' strings to callables")
    return out


# A native function; its signature is in bytewright/_native.pyi:
#   loads_pickle(data, *, classes=(), allow=(), limits=None, encoding="ASCII",
#                errors="strict") -> Any
# Read a standard pickle (protocols 0-5) without running code from it: builds what
# `pickle.loads` would for the types `bytewright.pickle` supports and for `classes=`;
# anything else raises `UnpicklingError` before any code runs.
loads_pickle = _native.loads_pickle


# The first read of a seekable file, doubled while the pickle goes on.
_CHUNK = 1 << 16


def _read_pickle(file: _Stream, cap: int) -> tuple[bytes, int]:
    """The bytes of the next pickle of `file` and where its STOP ends in them.

    A seekable file is read in growing chunks, then moved back to just after the STOP;
    any other file is read exactly: each opcode's bytes (a whole `FRAME` at once) or its
    line, never past the STOP. Input that cannot be a pickle is returned as it is, for the
    reader to say why.
    """
    seekable = False
    try:
        seekable = bool(file.seekable())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        pass
    buf = bytearray()
    pos = 0
    chunk = _CHUNK
    while True:
        state, at, need = _native.pickle_extent(memoryview(buf)[pos:], 0)
        at += pos
        if state == 0:  # the STOP is in
            end = at
            break
        if state == 3:  # cannot be read: the reader says why
            end = len(buf)
            break
        pos = at
        if len(buf) + max(need, 1) > cap:
            raise LimitError(f"the pickle holds more than {cap} bytes (max_bytes)")
        if seekable:
            data = file.read(min(chunk, cap + 1 - len(buf)))
            chunk *= 2
        elif state == 2:
            data = file.readline()
        else:
            data = _read_exactly(file, need)
        if not data:
            end = len(buf)
            break
        buf += data
    if seekable and len(buf) > end:
        file.seek(end - len(buf), io.SEEK_CUR)  # type: ignore[attr-defined]
    return bytes(buf), end


def _read_exactly(file: _Stream, n: int) -> bytes:
    chunks = []
    while n > 0:
        data = file.read(n)
        if not data:
            break
        chunks.append(data)
        n -= len(data)
    return b"".join(chunks)


def load_pickle(
    file: BinaryIO | _Stream,
    *,
    classes: Classes = (),
    allow: Allow = (),
    limits: Limits | None = None,
    encoding: str = "ASCII",
    errors: str = "strict",
) -> Any:
    """`loads_pickle` on the next pickle of a binary file, like `pickle.load`.

    Reads exactly that pickle and leaves the file just after its `STOP`, so repeated calls
    read consecutive pickles; `TruncatedError` (an `EOFError`) at the end of the file. Any
    object with `read` and `readline` works (a seekable one is read in larger chunks).
    `encoding=` and `errors=` say how Python 2 str is read, as for `pickle.load`.

    >>> import io
    >>> import pickle
    >>> from bytewright import pickle as bwp
    >>> f = io.BytesIO(pickle.dumps([1, 2]) + pickle.dumps("next"))
    >>> (bwp.load_pickle(f), bwp.load_pickle(f))
    ([1, 2], 'next')
    """
    return _load(file, classes, allow, limits, None, encoding, errors)


def _load(
    file: BinaryIO | _Stream,
    classes: Classes,
    allow: Allow,
    limits: Limits | None,
    memo: dict[int, Any] | None,
    encoding: str,
    errors: str,
) -> Any:
    cap = (limits or Limits()).max_bytes
    data, end = _read_pickle(file, cap)
    if not data:
        raise TruncatedError("no more pickles in the file: ran out of input")
    data = data if end == len(data) else data[:end]
    # pickle's default (ASCII, strict) needs no codec lookup.
    default = encoding == "ASCII" and errors == "strict"
    enc, err = (None, None) if default else (encoding, errors)
    if memo is None:
        value, _ = _native.loads_pickle_at(
            data, classes=classes, allow=allow, limits=limits, encoding=enc, errors=err
        )
    else:
        value, _ = _native.loads_pickle_carrying(
            data, memo, classes=classes, allow=allow, limits=limits, encoding=enc, errors=err
        )
    return value


class PickleUnpickler:
    """Reads standard pickles from a binary file, one per `load`, like `pickle.Unpickler`.

    The same checks as `loads_pickle`, with the `classes=`, `allow=`, `limits=`,
    `encoding=` and `errors=` given once. `load` raises `TruncatedError` (an `EOFError`) at the end of the file. As with
    `pickle.Unpickler`, the memo (`memo`, a `{key: value}` dict) persists from one `load`
    to the next, so a stream written by one `pickle.Pickler` with several `dump` calls
    loads with its shared references.

    >>> import io
    >>> import pickle
    >>> from bytewright import pickle as bwp
    >>> f = io.BytesIO(pickle.dumps({"a": 1}) + pickle.dumps([2]))
    >>> reader = bwp.PickleUnpickler(f)
    >>> (reader.load(), reader.load())
    ({'a': 1}, [2])
    >>> try:
    ...     reader.load()
    ... except EOFError:
    ...     print("end of file")
    end of file
    """

    def __init__(
        self,
        file: BinaryIO | _Stream,
        *,
        classes: Classes = (),
        allow: Allow = (),
        limits: Limits | None = None,
        encoding: str = "ASCII",
        errors: str = "strict",
    ) -> None:
        if not callable(getattr(file, "read", None)) or not callable(
            getattr(file, "readline", None)
        ):
            raise TypeError("PickleUnpickler needs a file with read() and readline()")
        if limits is not None and not isinstance(limits, Limits):
            raise TypeError(f"limits must be a pickle.Limits, not {type(limits).__name__}")
        self._file = file
        self._classes = class_map(classes) if classes else {}
        self._allow = _allow_map(allow) or {}
        self._limits = limits
        _python2_codec(encoding, errors)  # a codec Python ships, else LookupError now
        self._encoding = encoding
        self._errors = errors
        self.memo: dict[int, Any] = {}

    def load(self) -> Any:
        """Read the next pickle of the file."""
        try:
            file = self._file
        except AttributeError:
            raise UnpicklingError(
                f"PickleUnpickler.__init__() was not called by {type(self).__name__}.__init__()"
            ) from None
        if type(self.memo) is not dict:
            raise TypeError(f"memo must be a dict, not {type(self.memo).__name__}")
        return _load(
            file, self._classes, self._allow, self._limits, self.memo, self._encoding, self._errors
        )


def check_pickle(
    data: Buffer, *, classes: Classes = (), allow: Allow = (), limits: Limits | None = None
) -> str | None:
    """`None` if `loads_pickle` would accept the stream's structure, else why not."""
    return _native.check_pickle(data, classes=classes, allow=allow, limits=limits)
