"""Standard-library value types: how each is reduced to plain arguments and rebuilt.

The kind numbers are part of the format (docs/format.md, "STD kinds"). Builders check
the exact types of their arguments, so a crafted payload can only ever reach these
constructors with the argument types they are documented to take.
"""

from __future__ import annotations

import array
import builtins
import collections
import datetime as _dt
import decimal
import fractions
import ipaddress
import os
import pathlib
import time
import types
import uuid
import zoneinfo

from bytewright.pickle._errors import UnpicklingError

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeAlias

    Reducer: TypeAlias = Callable[[Any], tuple[Any, ...]]
    Builder: TypeAlias = Callable[..., Any]


def _expect(kind: str, args: tuple[Any, ...], *types: type | tuple[type, ...]) -> None:
    if len(args) != len(types):
        raise UnpicklingError(f"{kind} takes {len(types)} arguments, the record has {len(args)}")
    for arg, expected in zip(args, types, strict=True):
        exact = expected if isinstance(expected, tuple) else (expected,)
        if type(arg) not in exact:
            raise UnpicklingError(f"{kind} argument {arg!r} has the wrong type")


_TZ = (type(None), _dt.timezone, zoneinfo.ZoneInfo)


def _date(*a: Any) -> _dt.date:
    _expect("date", a, int, int, int)
    return _dt.date(*a)


def _time(*a: Any) -> _dt.time:
    _expect("time", a, int, int, int, int, _TZ, int)
    return _dt.time(*a[:5], fold=a[5])


def _datetime(*a: Any) -> _dt.datetime:
    _expect("datetime", a, int, int, int, int, int, int, int, _TZ, int)
    return _dt.datetime(*a[:8], fold=a[8])


def _timedelta(*a: Any) -> _dt.timedelta:
    _expect("timedelta", a, int, int, int)
    return _dt.timedelta(*a)


def _timezone(*a: Any) -> _dt.timezone:
    if len(a) == 1:
        _expect("timezone", a, _dt.timedelta)
    else:
        _expect("timezone", a, _dt.timedelta, str)
    return _dt.timezone(*a)


def _zoneinfo(*a: Any) -> zoneinfo.ZoneInfo:
    _expect("ZoneInfo", a, str)
    return zoneinfo.ZoneInfo(a[0])


def _reduce_zoneinfo(z: zoneinfo.ZoneInfo) -> tuple[Any, ...]:
    if z.key is None:
        raise TypeError("a ZoneInfo made from a file has no key to pickle")
    return (z.key,)


def _decimal(*a: Any) -> decimal.Decimal:
    _expect("Decimal", a, str)
    return decimal.Decimal(a[0])


def _fraction(*a: Any) -> fractions.Fraction:
    _expect("Fraction", a, int, int)
    return fractions.Fraction(*a)


def _uuid(*a: Any) -> uuid.UUID:
    _expect("UUID", a, int)
    return uuid.UUID(int=a[0])


def _from_str(cls: Callable[[str], Any], label: str) -> Builder:
    def build(*a: Any) -> Any:
        _expect(label, a, str)
        return cls(a[0])

    return build


def _str_arg(obj: Any) -> tuple[Any, ...]:
    return (str(obj),)


_NUMBER = (int, float, type(None))


def _struct_time(*a: Any) -> time.struct_time:
    _expect("struct_time", a, tuple, (str, type(None)), (int, type(None)))
    if len(a[0]) != time.struct_time.n_sequence_fields or any(type(v) is not int for v in a[0]):
        raise UnpicklingError("struct_time needs 9 ints")
    return time.struct_time(a[0], {"tm_zone": a[1], "tm_gmtoff": a[2]})


def _stat_result(*a: Any) -> os.stat_result:
    _expect("stat_result", a, tuple, dict)
    fields, extra = a
    if len(fields) != os.stat_result.n_sequence_fields or any(
        type(v) not in _NUMBER for v in fields
    ):
        raise UnpicklingError(f"stat_result needs {os.stat_result.n_sequence_fields} numbers")
    for key, value in extra.items():
        if type(key) is not str or not key.startswith("st_") or type(value) not in _NUMBER:
            raise UnpicklingError(f"stat_result field {key!r} is not allowed")
    return os.stat_result(fields, extra)


def _attributes(kind: str, state: Any) -> dict[str, Any]:
    """An instance's attributes: a dict of non-dunder str names."""
    if type(state) is not dict:
        raise UnpicklingError(f"{kind} attributes must be a dict")
    for key in state:
        if type(key) is not str or (key.startswith("__") and key.endswith("__")):
            raise UnpicklingError(f"{kind} attribute {key!r} is not allowed")
    return state


def _namespace(*a: Any) -> types.SimpleNamespace:
    _expect("SimpleNamespace", a, dict)
    return types.SimpleNamespace(**_attributes("SimpleNamespace", a[0]))


def _array(*a: Any) -> array.array[Any]:
    _expect("array", a, str, int, bytes)
    # The C reconstructor pickle uses: it checks the typecode, the machine format code
    # and the length itself (ValueError), and copies or converts the bytes.
    try:
        return array._array_reconstructor(array.array, *a)  # type: ignore[attr-defined, no-any-return]
    except (TypeError, ValueError) as exc:
        raise UnpicklingError(f"array: {exc}") from None


def _reduce_array(a: array.array[Any]) -> tuple[Any, ...]:
    return tuple(a.__reduce_ex__(3)[1][1:])


def _user(cls: type, label: str) -> Builder:
    """A `UserDict`/`UserList`/`UserString` from its attributes (its `data`)."""

    def build(*a: Any) -> Any:
        _expect(label, a, dict)
        obj: Any = object.__new__(cls)
        vars(obj).update(_attributes(label, a[0]))
        return obj

    return build


def _vars(obj: Any) -> tuple[Any, ...]:
    return (dict(vars(obj)),)


# kind -> (type, reducer, builder); the numbering is frozen by the format (kind 20 is an
# out-of-band value, registered by _buffers.py).
_TABLE: dict[int, tuple[type, Reducer, Builder]] = {
    1: (_dt.date, lambda d: (d.year, d.month, d.day), _date),
    2: (
        _dt.time,
        lambda t: (t.hour, t.minute, t.second, t.microsecond, t.tzinfo, t.fold),
        _time,
    ),
    3: (
        _dt.datetime,
        lambda d: (
            d.year,
            d.month,
            d.day,
            d.hour,
            d.minute,
            d.second,
            d.microsecond,
            d.tzinfo,
            d.fold,
        ),
        _datetime,
    ),
    4: (_dt.timedelta, lambda d: (d.days, d.seconds, d.microseconds), _timedelta),
    5: (_dt.timezone, lambda z: z.__getinitargs__(), _timezone),
    6: (zoneinfo.ZoneInfo, _reduce_zoneinfo, _zoneinfo),
    7: (decimal.Decimal, _str_arg, _decimal),
    8: (fractions.Fraction, lambda f: (f.numerator, f.denominator), _fraction),
    9: (uuid.UUID, lambda u: (u.int,), _uuid),
    10: (pathlib.PurePosixPath, _str_arg, _from_str(pathlib.PurePosixPath, "PurePosixPath")),
    11: (
        pathlib.PureWindowsPath,
        _str_arg,
        _from_str(pathlib.PureWindowsPath, "PureWindowsPath"),
    ),
    12: (pathlib.PosixPath, _str_arg, _from_str(pathlib.PosixPath, "PosixPath")),
    13: (pathlib.WindowsPath, _str_arg, _from_str(pathlib.WindowsPath, "WindowsPath")),
    14: (ipaddress.IPv4Address, _str_arg, _from_str(ipaddress.IPv4Address, "IPv4Address")),
    15: (ipaddress.IPv6Address, _str_arg, _from_str(ipaddress.IPv6Address, "IPv6Address")),
    16: (ipaddress.IPv4Network, _str_arg, _from_str(ipaddress.IPv4Network, "IPv4Network")),
    17: (ipaddress.IPv6Network, _str_arg, _from_str(ipaddress.IPv6Network, "IPv6Network")),
    18: (ipaddress.IPv4Interface, _str_arg, _from_str(ipaddress.IPv4Interface, "IPv4Interface")),
    19: (ipaddress.IPv6Interface, _str_arg, _from_str(ipaddress.IPv6Interface, "IPv6Interface")),
    21: (time.struct_time, lambda t: (tuple(t), t.tm_zone, t.tm_gmtoff), _struct_time),
    22: (os.stat_result, lambda s: tuple(s.__reduce__()[1]), _stat_result),
    23: (types.SimpleNamespace, _vars, _namespace),
    24: (array.array, _reduce_array, _array),
    25: (collections.UserDict, _vars, _user(collections.UserDict, "UserDict")),
    26: (collections.UserList, _vars, _user(collections.UserList, "UserList")),
    27: (collections.UserString, _vars, _user(collections.UserString, "UserString")),
}

# type -> (kind, reducer), for the encoder; kind -> builder, for the decoder.
REDUCERS: dict[type, tuple[int, Reducer]] = {t: (k, r) for k, (t, r, _) in _TABLE.items()}
BUILDERS: dict[int, Builder] = {k: b for k, (_, _, b) in _TABLE.items()}

# defaultdict default factories that may be written: index in this tuple is the format code.
DEFAULT_FACTORIES: tuple[Any, ...] = (
    None,
    list,
    dict,
    set,
    int,
    float,
    str,
    bytes,
    tuple,
    frozenset,
    bool,
    complex,
    bytearray,
    collections.OrderedDict,
    collections.Counter,
    collections.deque,
    collections.defaultdict,
)


# ---------------------------------------------------------------- the builtins table

# The values a BUILTIN record names (docs/format.md, "Builtins"): every class of
# `builtins` (its types and its exception classes), the types of None, NotImplemented and
# Ellipsis, and NotImplemented. Returning one runs nothing.
BUILTINS: dict[str, Any] = {
    name: value
    for name, value in vars(builtins).items()
    if isinstance(value, type) and not name.startswith("_")
}
BUILTINS.update(
    {
        "NoneType": type(None),
        "NotImplementedType": type(NotImplemented),
        "ellipsis": type(...),
        "NotImplemented": NotImplemented,
    }
)
# value -> name, for the encoder.
BUILTIN_NAMES: dict[Any, str] = {value: name for name, value in BUILTINS.items()}


def exception_state(exc: BaseException) -> tuple[Any, ...]:
    """What an EXCEPTION record holds: `(args, (attributes, cause, context,
    suppress_context))`. `args` and `attributes` are what the exception's own
    `__reduce__` gives pickle (the attributes are the instance dict, `__notes__` included,
    and the fields some classes add, such as ImportError's `name` and `path`)."""
    reduced = exc.__reduce__()
    if type(reduced) is not tuple or len(reduced) not in (2, 3) or reduced[0] is not type(exc):
        raise TypeError(f"cannot pickle the {type(exc).__name__}: unexpected __reduce__ result")
    args = reduced[1]
    attributes = reduced[2] if len(reduced) == 3 else None
    if type(args) is not tuple or (attributes is not None and type(attributes) is not dict):
        raise TypeError(f"cannot pickle the {type(exc).__name__}: unexpected __reduce__ result")
    return (
        args,
        (attributes or None, exc.__cause__, exc.__context__, exc.__suppress_context__),
    )


_EXCEPTION_STATE = ("attributes", "cause", "context", "suppress_context")


def restore_exception(exc: BaseException, state: Any) -> None:
    """Give a rebuilt builtin exception its state, checked first: attributes set as
    `BaseException.__setstate__` sets them (non-dunder names and `__notes__`), then the
    cause, the context and `__suppress_context__`. Only the builtin setters run."""
    if type(state) is not tuple or len(state) != len(_EXCEPTION_STATE):
        raise UnpicklingError("an exception's state must be a tuple of 4 values")
    attributes, cause, context, suppress = state
    if attributes is not None:
        if type(attributes) is not dict:
            raise UnpicklingError("an exception's attributes must be a dict or None")
        for key in attributes:
            if type(key) is not str or (
                key != "__notes__" and key.startswith("__") and key.endswith("__")
            ):
                raise UnpicklingError(f"exception attribute {key!r} is not allowed")
    for what, value in (("cause", cause), ("context", context)):
        if value is not None and not isinstance(value, BaseException):
            raise UnpicklingError(f"an exception's {what} must be an exception or None")
    if type(suppress) is not bool:
        raise UnpicklingError("an exception's suppress_context must be a bool")
    for key, value in (attributes or {}).items():
        setattr(exc, key, value)
    exc.__cause__ = cause
    exc.__context__ = context
    exc.__suppress_context__ = suppress
