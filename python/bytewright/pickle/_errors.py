"""The exceptions of `bytewright.pickle`, subclassing the standard library's.

Where `pickle.loads` raises `EOFError`, `ValueError`, `TypeError` or `OverflowError`, the
readers raise a subclass of `UnpicklingError` that is also that class, so code written
against either module's exceptions keeps working.
"""

try:  # the C accelerator defines pickle's exceptions; importing it skips pickle.py's imports
    import _pickle as _std_pickle
except ImportError:  # pragma: no cover - interpreters without the accelerator
    import pickle as _std_pickle  # type: ignore[no-redef]


class PicklingError(_std_pickle.PicklingError):
    """An object (or something inside it) cannot be pickled.

    >>> from bytewright import pickle as bwp
    >>> try:
    ...     bwp.dumps({"callback": lambda: 0})
    ... except bwp.PicklingError as e:
    ...     print(e)
    cannot pickle 'function' object (at $["callback"])
    """


class UnpicklingError(_std_pickle.UnpicklingError):
    """The input is not a valid record, or names something that is not allowed.

    `offset` is the byte offset in the input where the reader noticed the problem
    (`None` when no single byte is at fault).

    >>> from bytewright import pickle as bwp
    >>> try:
    ...     bwp.loads(b"not a record")
    ... except bwp.UnpicklingError as e:
    ...     print(isinstance(e, __import__("pickle").UnpicklingError))
    True
    """

    offset: int | None = None


class IntegrityError(UnpicklingError):
    """The HMAC-SHA256 check failed, or signing and `hmac_key=` disagree.

    >>> from bytewright import pickle as bwp
    >>> signed = bwp.dumps([1], hmac_key=b"secret")
    >>> bwp.loads(signed, hmac_key=b"secret")
    [1]
    >>> try:
    ...     bwp.loads(signed, hmac_key=b"other")
    ... except bwp.IntegrityError:
    ...     print("refused")
    refused
    """


class LimitError(UnpicklingError):
    """The record exceeds one of the configured `Limits`.

    >>> from bytewright import pickle as bwp
    >>> try:
    ...     bwp.loads(bwp.dumps("x" * 100), limits=bwp.Limits(max_str_len=10))
    ... except bwp.LimitError:
    ...     print("too long")
    too long
    """


class TruncatedError(UnpicklingError, EOFError):
    """The input ends before the value does (empty input included): `pickle`'s `EOFError`.

    >>> import pickle
    >>> from bytewright import pickle as bwp
    >>> try:
    ...     bwp.loads_pickle(pickle.dumps([1, 2, 3], protocol=2)[:-1])
    ... except EOFError as e:
    ...     print(type(e).__name__)
    TruncatedError
    """


class UnpicklingValueError(UnpicklingError, ValueError):
    """A bad argument value (an int or float text, a memo index, the protocol number).

    >>> from bytewright import pickle as bwp
    >>> try:
    ...     bwp.loads_pickle(b"Ix\\n.")
    ... except ValueError as e:
    ...     print(type(e).__name__)
    UnpicklingValueError
    """


class UnpicklingTypeError(UnpicklingError, TypeError):
    """An operation on the wrong type, such as calling a value that is not callable.

    >>> from bytewright import pickle as bwp
    >>> try:
    ...     bwp.loads_pickle(b"K\\x01)R.")
    ... except TypeError as e:
    ...     print(type(e).__name__)
    UnpicklingTypeError
    """


class UnpicklingOverflowError(UnpicklingError, OverflowError):
    """A number too large (a float text beyond the float range, a huge memo index).

    >>> from bytewright import pickle as bwp
    >>> try:
    ...     bwp.loads_pickle(b"F1e500\\n.")
    ... except OverflowError as e:
    ...     print(type(e).__name__)
    UnpicklingOverflowError
    """
