from collections.abc import Callable, Iterable, Mapping
from types import GenericAlias
from typing import Any, Generic, final

from typing_extensions import Buffer, TypeVar

from bytewright.errors import Incomplete

__all__ = [
    "Codec",
    "__version__",
    "check_align",
    "checksum_names",
    "graph_configure",
    "graph_record_len",
    "legacy_check",
    "legacy_configure",
    "loads_pickle",
    "loads_pickle_at",
    "pickle_dumps",
    "pickle_loads",
    "suggest",
]
__version__: str

_T = TypeVar("_T", default=Any)

# --- wire codecs (crates/python/src/wire) ---
def checksum_names() -> list[str]: ...
def suggest(name: str, options: Iterable[str]) -> str | None: ...
def check_align(value: object, at: str) -> int: ...

@final
class Codec(Generic[_T]):
    """A compiled codec; ``T`` is what it unpacks (a Struct class's instances, or a dict)."""

    def __new__(cls, schema: str, structs: list[Any], typed: bool = False) -> Codec[Any]: ...
    def __class_getitem__(cls, item: Any) -> GenericAlias: ...
    def __reduce__(self) -> tuple[type[Codec[Any]], tuple[Any, ...]]: ...
    @property
    def static_size(self) -> int | None: ...
    @property
    def min_size(self) -> int: ...
    @property
    def typed(self) -> bool: ...
    @property
    def schema(self) -> str: ...
    def derived_fields(self, sink_id: int) -> list[str]: ...
    def to_bytes(self) -> bytes: ...
    @staticmethod
    def from_bytes(data: bytes | bytearray | memoryview) -> Codec[dict[str, Any]]: ...
    def pack(self, value: Any) -> bytes: ...
    def pack_into(self, buffer: Buffer, value: Any, offset: int = 0) -> int: ...
    def pack_many(self, items: Iterable[Any]) -> bytes: ...
    def unpack(self, data: Buffer) -> _T: ...
    def unpack_from(self, data: Buffer, offset: int = 0) -> tuple[_T, int]: ...
    def parse(self, data: Buffer, offset: int = 0) -> tuple[_T, int] | Incomplete: ...
    def iter_unpack(self, data: Buffer) -> list[_T]: ...

# --- bytewright.pickle (crates/python/src/graph) ---
def pickle_dumps(
    obj: Any,
    protocol: int | None = None,
    *,
    hmac_key: bytes | bytearray | memoryview | None = None,
    deterministic: bool = False,
) -> bytes: ...
def pickle_loads(
    data: bytes | bytearray | memoryview,
    *,
    classes: Iterable[type] | Mapping[str, type] | None = None,
    hmac_key: bytes | bytearray | memoryview | None = None,
    limits: Any = None,
) -> Any: ...
def graph_configure(
    errors: tuple[type, type, type, type],
    describe: Callable[[type], Any],
    reducers: dict[type, tuple[int, Callable[[Any], tuple[Any, ...]]]],
    builders: dict[int, Callable[..., Any]],
    factories: tuple[Any, ...],
    collections: tuple[type, type, type, type],
    limits_type: type,
    class_map: Callable[[Any], dict[str, type]],
) -> None: ...
def graph_record_len(prefix: bytes) -> int: ...

# --- bytewright.pickle.loads_pickle (crates/python/src/graph/legacy.rs) ---
def loads_pickle(
    data: bytes | bytearray | memoryview,
    *,
    classes: Iterable[type] | Mapping[str, type] | None = None,
    allow: Iterable[Callable[..., Any]] | Mapping[str, Callable[..., Any]] | None = None,
    limits: Any = None,
) -> Any: ...
def legacy_check(
    data: bytes | bytearray | memoryview,
    *,
    classes: Iterable[type] | Mapping[str, type] | None = None,
    allow: Iterable[Callable[..., Any]] | Mapping[str, Callable[..., Any]] | None = None,
    limits: Any = None,
) -> str | None: ...
def legacy_configure(
    objects: dict[str, Any],
    enum_member: Callable[[type, Any], Any],
    set_state: Callable[[Any, Any, Any], None],
    uuid_state: Callable[[Any, Any], None],
    new_tuple: Callable[[Any, type, Any], Any],
    allow_map: Callable[[Any], dict[str, Any] | None],
) -> None: ...
def loads_pickle_at(
    data: bytes | bytearray | memoryview,
    *,
    classes: Iterable[type] | Mapping[str, type] | None = None,
    allow: Iterable[Callable[..., Any]] | Mapping[str, Callable[..., Any]] | None = None,
    limits: Any = None,
) -> tuple[Any, int]: ...
