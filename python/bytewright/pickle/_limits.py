"""Decoding limits, checked before anything is allocated."""

from bytewright._value import Value


class Limits(Value):
    """Upper bounds applied by `loads` and `Unpickler.load` to one record.

    `max_items` counts every object in the payload, containers and atoms alike.

    >>> from bytewright import pickle as bwp
    >>> strict = bwp.Limits(max_depth=2)
    >>> bwp.loads(bwp.dumps([[1]]), limits=strict)
    [[1]]
    >>> try:
    ...     bwp.loads(bwp.dumps([[[1]]]), limits=strict)
    ... except bwp.LimitError:
    ...     print("too deep")
    too deep
    """

    __slots__ = (  # noqa: RUF023 (field order)
        "max_bytes",
        "max_depth",
        "max_items",
        "max_container_len",
        "max_str_len",
        "max_bytes_len",
        "max_int_digits",
    )
    max_bytes: int
    max_depth: int
    max_items: int
    max_container_len: int
    max_str_len: int
    max_bytes_len: int
    max_int_digits: int

    def __init__(
        self,
        max_bytes: int = 1 << 30,
        max_depth: int = 2_000,
        max_items: int = 1 << 30,
        max_container_len: int = 1 << 30,
        max_str_len: int = 1 << 30,
        max_bytes_len: int = 1 << 30,
        max_int_digits: int = 2_500_000_000,
    ) -> None:
        self._init(
            max_bytes,
            max_depth,
            max_items,
            max_container_len,
            max_str_len,
            max_bytes_len,
            max_int_digits,
        )
        for name, value in zip(self.__slots__, self._values(), strict=True):
            if type(value) is not int or value < 0:
                raise ValueError(f"Limits.{name} must be a non-negative int, not {value!r}")
            if value >= 1 << 63:
                raise ValueError(f"Limits.{name} must be below 2**63")

    def _as_tuple(self) -> tuple[int, ...]:
        return self._values()


DEFAULT_LIMITS = Limits()
