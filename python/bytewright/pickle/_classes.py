"""How user classes are described, written and rebuilt (without calling their code)."""

from __future__ import annotations

import sys
import weakref
from collections.abc import Iterable, Mapping

# Where a class keeps its state (ClassInfo.kind): defined once, by the native code that
# reads it. KIND_DICT: the instance __dict__; KIND_SLOTS: slots (and maybe a __dict__
# too); KIND_TUPLE: namedtuple / typing.NamedTuple; KIND_ENUM: enum members, by name.
from bytewright._native import KIND_DICT, KIND_ENUM, KIND_SLOTS, KIND_TUPLE
from bytewright.pickle._errors import UnpicklingError
from bytewright.pickle._migrations import upgrade

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from typing import Any

_HEAPTYPE = 1 << 9

_MISSING = object()


def class_name(cls: type) -> str:
    """The module-qualified name that keys a class's records."""
    return f"{cls.__module__}.{cls.__qualname__}"


def _hook(cls: type, name: str, *, generated: bool) -> bool:
    """True when a class of `cls`'s MRO other than `object` defines the hook `name`
    (looked up in the class dicts, so no metaclass code runs). `generated=False` leaves
    out those `dataclasses` writes for frozen slotted dataclasses: they only move the
    fields, which bytewright.pickle writes and sets itself."""
    for klass in cls.__mro__:
        if klass is object:
            return False
        hook = vars(klass).get(name)
        if hook is not None:
            return generated or getattr(hook, "__module__", None) != "dataclasses"
    return False


def _is_dunder(name: str) -> bool:
    return len(name) >= 4 and name.startswith("__") and name.endswith("__")


def _slot_names(cls: type) -> tuple[str, ...]:
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        slots = klass.__dict__.get("__slots__", ())
        if isinstance(slots, str):
            slots = (slots,)
        for slot in slots:
            if slot in ("__dict__", "__weakref__"):
                continue
            if slot.startswith("__") and not slot.endswith("__"):
                slot = f"_{klass.__name__.lstrip('_')}{slot}"
            if slot not in names:
                names.append(slot)
    return tuple(names)


class ClassInfo:
    """What the native code needs to know about one class; built once per class."""

    __slots__ = (
        "__weakref__",
        "allow_extra",
        "builtin_base",
        "cls",
        "defaults",
        "factories",
        "field_set",
        "fields",
        "getstate",
        "has_dict",
        "kind",
        "name",
        "required",
        "restores",
        "setstate",
        "slot_names",
        "version",
    )

    def __init__(self, cls: type) -> None:
        self.cls = cls
        self.name = class_name(cls)
        version = getattr(cls, "__bytewright_version__", 1)
        if type(version) is not int or version < 0:
            raise TypeError(f"{self.name}.__bytewright_version__ must be a non-negative int")
        self.version = version
        self.allow_extra = bool(getattr(cls, "__bytewright_allow_extra__", False))
        self.defaults: dict[str, Any] = {}
        self.factories: dict[str, Any] = {}
        self.required: tuple[str, ...] = ()
        self.has_dict = False
        # The pickling hooks the class defines. loads_pickle calls any `__setstate__`, as
        # pickle does; bytewright.pickle writes what a `__getstate__` of the user's returns
        # and restores it through the matching `__setstate__`.
        self.setstate = _hook(cls, "__setstate__", generated=True)
        self.getstate = _hook(cls, "__getstate__", generated=False)
        self.restores = _hook(cls, "__setstate__", generated=False)
        # The builtin type it subclasses (dict, list, int, ...), or None: loads_pickle
        # rebuilds such classes through their hooks; bytewright.pickle writes DERIVED
        # records for subclasses of dict, list, set, frozenset, tuple, str, bytes,
        # bytearray, int, float, complex, OrderedDict, defaultdict, deque and the builtin
        # exceptions, and refuses the others.
        self.builtin_base: type | None = None
        self.slot_names: tuple[str, ...] = ()
        fields: tuple[str, ...] | None
        enum = sys.modules.get("enum")  # not imported yet: no class can be an Enum
        if enum is not None and isinstance(cls, enum.EnumMeta):
            self.kind = KIND_ENUM
            fields = ()
        elif issubclass(cls, tuple) and isinstance(getattr(cls, "_fields", None), tuple):
            self.kind = KIND_TUPLE
            fields = tuple(cls._fields)  # type: ignore[attr-defined]
            self.defaults = dict(getattr(cls, "_field_defaults", {}))
            self.required = tuple(f for f in fields if f not in self.defaults)
        else:
            for base in cls.__mro__[1:]:
                if base is not object and not base.__flags__ & _HEAPTYPE:
                    self.builtin_base = base
                    break
            if not cls.__flags__ & _HEAPTYPE:
                raise TypeError(f"{self.name} is not a class defined in Python")
            self.has_dict = cls.__dictoffset__ != 0
            slots = _slot_names(cls)
            self.slot_names = slots
            self.kind = KIND_DICT if self.has_dict and not slots else KIND_SLOTS
            # A dataclass means dataclasses is loaded already.
            dataclasses = sys.modules.get("dataclasses")
            if dataclasses is not None and dataclasses.is_dataclass(cls):
                dc_fields = dataclasses.fields(cls)
                fields = tuple(f.name for f in dc_fields)
                for f in dc_fields:
                    if f.default is not dataclasses.MISSING:
                        self.defaults[f.name] = f.default
                    elif f.default_factory is not dataclasses.MISSING:
                        self.factories[f.name] = f.default_factory
                self.required = tuple(
                    f for f in fields if f not in self.defaults and f not in self.factories
                )
            elif self.has_dict:
                fields = None  # any attribute is a field
            else:
                fields = slots
        if fields is not None:
            for field in fields:
                if _is_dunder(field):
                    raise TypeError(f"{self.name} has the dunder field {field!r}")
        self.fields = fields
        self.field_set = frozenset(fields) if fields is not None else None

    def build(self, obj: Any, state: dict[str, Any], version: int) -> Any:
        """Finish a record that needs more than the native fast path.

        Runs migrations, drops or rejects unknown fields, fills defaults, then sets the
        fields on `obj` (or makes the tuple for tuple-like classes).
        """
        if version != self.version:
            state = upgrade(self.cls, self.name, state, version, self.version)
        for key in state:
            if type(key) is not str or _is_dunder(key):
                raise UnpicklingError(f"record of class {self.name!r} has the bad field {key!r}")
        if self.field_set is not None:
            extra = [k for k in state if k not in self.field_set]
            if extra:
                if not self.allow_extra:
                    raise UnpicklingError(
                        f"record of class {self.name!r} has unknown fields {extra}; set "
                        "__bytewright_allow_extra__ = True on the class to ignore them"
                    )
                for key in extra:
                    del state[key]
            for field in self.fields or ():
                if field in state:
                    continue
                if field in self.defaults:
                    state[field] = self.defaults[field]
                elif field in self.factories:
                    state[field] = self.factories[field]()
                elif field in self.required:
                    raise UnpicklingError(
                        f"record of class {self.name!r} lacks the field {field!r}, "
                        "which has no default"
                    )
        if self.kind == KIND_TUPLE:
            return tuple.__new__(self.cls, [state[f] for f in self.fields or ()])
        if self.kind == KIND_DICT:
            # Straight into the instance dict, never through descriptors (as pickle does).
            # Names interned, as pickle's BUILD interns them.
            object.__getattribute__(obj, "__dict__").update(
                {sys.intern(k) if type(k) is str else k: v for k, v in state.items()}
            )
        else:
            for key, value in state.items():
                object.__setattr__(obj, key, value)
        return obj

    def restore(self, obj: Any, fields: dict[str, Any], version: int) -> None:
        """Give an instance its state through the class's `__setstate__`, as pickle does.

        The state is what the class's `__getstate__` returned (its fields), or for a class
        without one, what `object.__getstate__` gives: the instance dict, or for a class
        with slots the pair `(dict or None, slots)`. An empty state is not set, as pickle
        sets no state for `None`.
        """
        if version != self.version:
            fields = upgrade(self.cls, self.name, fields, version, self.version)
        state: Any = fields
        if not self.getstate and self.slot_names:
            slot_set = set(self.slot_names)
            slots = {k: v for k, v in fields.items() if k in slot_set}
            rest = {k: v for k, v in fields.items() if k not in slot_set} or None
            state = (rest, slots) if slots else rest
        if not state:
            return
        obj.__setstate__(state)

    def derived_state(self, obj: Any) -> dict[str, Any]:
        """The state a DERIVED record (an instance of a builtin subclass) holds beside its
        items: what the class's `__getstate__` returns (`None`: nothing), else its instance
        dict and slots."""
        if self.getstate:
            state = obj.__getstate__()
            if state is None:
                return {}
            if type(state) is not dict:
                raise TypeError(
                    f"cannot pickle a {self.name}: its __getstate__ must return a dict of "
                    "fields (or None)"
                )
            return state
        out: dict[str, Any] = {}
        if self.has_dict:
            out.update(object.__getattribute__(obj, "__dict__"))
        for name in self.slot_names:
            try:
                out[name] = object.__getattribute__(obj, name)
            except AttributeError:
                continue
        return out

    def exception_reduction(self, exc: BaseException) -> tuple[Any, Any]:
        """What a DERIVED record of an exception of this class holds: `(args, (state,
        cause, context, suppress_context))`, `args` and `state` being what the exception's
        `__reduce_ex__` gives pickle (its class called with `args`, then given `state`)."""
        import pickle

        reduced = exc.__reduce_ex__(pickle.DEFAULT_PROTOCOL)
        ok = (
            type(reduced) is tuple
            and 2 <= len(reduced) <= 6
            and reduced[0] is type(exc)
            and type(reduced[1]) is tuple
            and all(part is None for part in reduced[3:])
        )
        if not ok:
            raise TypeError(
                f"cannot pickle a {self.name}: its __reduce_ex__ must give (its class, an "
                f"argument tuple[, state]), not {reduced!r}"
            )
        state = reduced[2] if len(reduced) > 2 else None
        return reduced[1], (state, exc.__cause__, exc.__context__, exc.__suppress_context__)

    def _own_setstate(self) -> bool:
        """Whether a class of yours, not a builtin exception, defines `__setstate__`."""
        for klass in self.cls.__mro__:
            if "__setstate__" in vars(klass):
                return bool(klass.__flags__ & _HEAPTYPE)
        return False

    def check_exception_state(self, parts: Any) -> None:
        """Checks the state of an exception of this class before anything of it runs: a
        tuple `(state, cause, context, suppress_context)`. Without a `__setstate__` of
        yours, the state goes to `BaseException.__setstate__`, so it must be None or a dict
        of attribute names (not dunders, but `__notes__`)."""
        if type(parts) is not tuple or len(parts) != 4:
            raise UnpicklingError("an exception's state must be a tuple of 4 values")
        state, cause, context, suppress = parts
        if not self._own_setstate():
            _exception_attributes(state)
        for what, value in (("cause", cause), ("context", context)):
            if value is not None and not isinstance(value, BaseException):
                raise UnpicklingError(f"an exception's {what} must be an exception or None")
        if type(suppress) is not bool:
            raise UnpicklingError("an exception's suppress_context must be a bool")

    def restore_exception(self, exc: BaseException, payload: Any, version: int) -> None:
        """Gives an exception of this class (made by its builtin base's `__new__(cls,
        *args)`) what `pickle.loads` would: `__init__(*args)`, then `__setstate__(state)`
        unless the state is None; then its cause, context and `__suppress_context__`."""
        args, (state, cause, context, suppress) = payload
        type(exc).__init__(exc, *args)
        if state is not None:
            if version != self.version and type(state) is dict:
                state = upgrade(self.cls, self.name, state, version, self.version)
                if not self._own_setstate():
                    _exception_attributes(state)
            exc.__setstate__(state)
        exc.__cause__ = cause
        exc.__context__ = context
        exc.__suppress_context__ = suppress

    def member(self, name: object) -> Any:
        """The enum member called `name`."""
        member = self.cls.__members__.get(name) if type(name) is str else None  # type: ignore[attr-defined]
        if member is None:
            raise UnpicklingError(f"enum {self.name!r} has no member {name!r}")
        return member

    def new(self) -> Any:
        """A blank instance: `object.__new__`, no `__new__` or `__init__` of the class."""
        return object.__new__(self.cls)


def _exception_attributes(state: Any) -> None:
    """Checks the state `BaseException.__setstate__` is given: None, or a dict of attribute
    names that are not dunders (but `__notes__`)."""
    if state is None:
        return
    if type(state) is not dict:
        raise UnpicklingError("an exception's attributes must be a dict or None")
    for key in state:
        if type(key) is not str or (key != "__notes__" and _is_dunder(key)):
            raise UnpicklingError(f"exception attribute {key!r} is not allowed")


_INFOS: weakref.WeakKeyDictionary[type, ClassInfo] = weakref.WeakKeyDictionary()


def describe(cls: type) -> ClassInfo:
    """The ClassInfo of `cls`, kept as long as the class lives (keyed by your classes only)."""
    info = _INFOS.get(cls)
    if info is None:
        info = ClassInfo(cls)
        _INFOS[cls] = info
    return info


def class_map(classes: Iterable[type] | Mapping[str, type]) -> dict[str, type]:
    """Normalise `classes=` to a name -> class dict."""
    if isinstance(classes, Mapping):
        out = dict(classes)
        for name, cls in out.items():
            if type(name) is not str or not isinstance(cls, type):
                raise TypeError("classes= mapping must map str names to classes")
        return out
    out = {}
    for cls in classes:
        if not isinstance(cls, type):
            raise TypeError(f"classes= must hold classes, not {cls!r}")
        out[class_name(cls)] = cls
    return out
