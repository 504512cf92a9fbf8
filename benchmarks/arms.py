"""What can happen to one arm before it is timed: it runs, is unavailable, or is incorrect."""

from __future__ import annotations

import re


class Unavailable(Exception):
    """The arm's library is missing or lacks the API; reported, never timed."""


class NotApplicable(Exception):
    """The implementation cannot express this workload (e.g. ctypes and a counted vector)."""


class Incorrect(Exception):
    """The arm ran but gave different bytes, values or checksum; reported, never timed."""


def describe(exc: BaseException) -> str:
    """One line for a report cell: the exception type and its first message line."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = re.sub(r" \(/[^)]*\)", "", text)  # drop file paths from import errors
    if len(text) > 160:
        text = text[:157] + "..."
    if isinstance(exc, Unavailable | Incorrect | NotApplicable):
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def unavailable_from(exc: BaseException) -> Unavailable:
    """Wrap whatever importing or building an arm raised."""
    return Unavailable(describe(exc))
