"""Safe, fast object-graph serialization: a drop-in for the parts of `pickle` you need.

Nothing in a payload can import, look up or call code: only the types listed in
docs/pickle.md and the classes you pass as `classes=` can come back.
"""

from bytewright.pickle._api import Pickler, Unpickler, dump, dumps, load, loads
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

__all__ = [
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
    "load",
    "load_pickle",
    "loads",
    "loads_pickle",
    "migrate",
]
