"""The exceptions of `bytewright.pickle`, subclassing the standard library's."""

import pickle as _std_pickle


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

    >>> from bytewright import pickle as bwp
    >>> try:
    ...     bwp.loads(b"not a record")
    ... except bwp.UnpicklingError as e:
    ...     print(isinstance(e, __import__("pickle").UnpicklingError))
    True
    """


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
