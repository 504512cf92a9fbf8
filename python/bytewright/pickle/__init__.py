"""Safe, fast object-graph serialization: a drop-in for the parts of `pickle` you need.

Nothing in a payload can import, look up or call code: only the types listed in
docs/pickle.md and the classes you pass as `classes=` can come back.
"""

from bytewright.pickle._api import Decoder, Pickler, Unpickler, dump, dumps, load, loads
from bytewright.pickle._errors import (
    IntegrityError,
    LimitError,
    PicklingError,
    TruncatedError,
    UnpicklingError,
    UnpicklingOverflowError,
    UnpicklingTypeError,
    UnpicklingValueError,
)
from bytewright.pickle._limits import Limits
from bytewright.pickle._migrations import migrate
from bytewright.pickle._pickle_reader import PickleUnpickler, load_pickle, loads_pickle

TYPE_CHECKING = False  # typing.TYPE_CHECKING, without importing typing
if TYPE_CHECKING:
    from bytewright.pickle._inspect import explain
else:

    def __getattr__(name):
        # The tree view (bytewright._explain and pickletools) loads on first use.
        if name == "explain":
            from bytewright.pickle._inspect import explain

            globals()["explain"] = explain
            return explain
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Decoder",
    "IntegrityError",
    "LimitError",
    "Limits",
    "PickleUnpickler",
    "Pickler",
    "PicklingError",
    "TruncatedError",
    "Unpickler",
    "UnpicklingError",
    "UnpicklingOverflowError",
    "UnpicklingTypeError",
    "UnpicklingValueError",
    "dump",
    "dumps",
    "explain",
    "load",
    "load_pickle",
    "loads",
    "loads_pickle",
    "migrate",
]
