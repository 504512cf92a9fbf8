"""Decoding limits, checked before anything is allocated."""

from dataclasses import astuple, dataclass


@dataclass(frozen=True)
class Limits:
    """Upper bounds applied by `loads` and `Unpickler.load` to one record.

    `max_items` counts every object in the payload, containers and atoms alike.
    """

    max_bytes: int = 1 << 30
    max_depth: int = 2_000
    max_items: int = 1 << 30
    max_container_len: int = 1 << 30
    max_str_len: int = 1 << 30
    max_bytes_len: int = 1 << 30
    max_int_digits: int = 2_500_000_000

    def __post_init__(self) -> None:
        for name, value in zip(self.__dataclass_fields__, astuple(self), strict=True):
            if type(value) is not int or value < 0:
                raise ValueError(f"Limits.{name} must be a non-negative int, not {value!r}")
            if value >= 1 << 63:
                raise ValueError(f"Limits.{name} must be below 2**63")

    def _as_tuple(self) -> tuple[int, ...]:
        return astuple(self)


DEFAULT_LIMITS = Limits()
