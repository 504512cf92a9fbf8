"""The exceptions of `bytewright.pickle`, subclassing the standard library's."""

import pickle as _std_pickle


class PicklingError(_std_pickle.PicklingError):
    """An object (or something inside it) cannot be pickled."""


class UnpicklingError(_std_pickle.UnpicklingError):
    """The input is not a valid record, or names something that is not allowed."""


class IntegrityError(UnpicklingError):
    """The HMAC-SHA256 check failed, or signing and `hmac_key=` disagree."""


class LimitError(UnpicklingError):
    """The record exceeds one of the configured `Limits`."""
