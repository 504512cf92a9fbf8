"""The exceptions of `bytewright.pickle`, subclassing the standard library's.

Where `pickle.loads` raises `EOFError`, `ValueError`, `TypeError` or `OverflowError`, the
readers raise a subclass of `UnpicklingError` that is also that class, so code written
against either module's exceptions keeps working.
"""

import pickle as _std_pickle


class PicklingError(_std_pickle.PicklingError):
    """An object (or something inside it) cannot be pickled."""


class UnpicklingError(_std_pickle.UnpicklingError):
    """The input is not a valid record, or names something that is not allowed.

    `offset` is the byte offset in the input where the reader noticed the problem
    (`None` when no single byte is at fault).
    """

    offset: int | None = None


class IntegrityError(UnpicklingError):
    """The HMAC-SHA256 check failed, or signing and `hmac_key=` disagree."""


class LimitError(UnpicklingError):
    """The record exceeds one of the configured `Limits`."""


class TruncatedError(UnpicklingError, EOFError):
    """The input ends before the value does (empty input included): `pickle`'s `EOFError`."""


class UnpicklingValueError(UnpicklingError, ValueError):
    """A bad argument value (an int or float text, a memo index, the protocol number)."""


class UnpicklingTypeError(UnpicklingError, TypeError):
    """An operation on the wrong type, such as calling a value that is not callable."""


class UnpicklingOverflowError(UnpicklingError, OverflowError):
    """A number too large (a float text beyond the float range, a huge memo index)."""
