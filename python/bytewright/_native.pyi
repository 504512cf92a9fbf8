from collections.abc import Callable, Iterable, Mapping
from typing import Any, final

__all__ = [
    "KIND_DICT",
    "KIND_ENUM",
    "KIND_SLOTS",
    "KIND_TUPLE",
    "Codec",
    "__version__",
    "check_pickle",
    "checksum_names",
    "fast_paths",
    "graph_record_len",
    "loads_pickle",
    "loads_pickle_at",
    "pickle_dumps",
    "pickle_extent",
    "pickle_loads",
]
__version__: str

# --- CPython fast paths and their portable fallbacks (crates/python/src/cpython.rs) ---
def fast_paths() -> dict[str, bool]: ...

# --- wire codecs (crates/python/src/wire) ---
def checksum_names() -> list[str]: ...

@final
class Codec:
    def __new__(cls, schema: str, structs: list[Any], typed: bool = False) -> Codec: ...
    def __reduce__(self) -> tuple[type[Codec], tuple[Any, ...]]: ...
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
    def from_bytes(data: bytes | bytearray | memoryview) -> Codec: ...
    def pack(self, value: Any) -> bytes: ...
    def pack_into(self, buffer: Any, value: Any, offset: int = 0) -> int: ...
    def pack_many(self, items: Iterable[Any]) -> bytes: ...
    def unpack(self, data: Any) -> Any: ...
    def unpack_from(self, data: Any, offset: int = 0) -> tuple[Any, int]: ...
    def parse(self, data: Any, offset: int = 0) -> Any: ...
    def iter_unpack(self, data: Any) -> list[Any]: ...

# --- bytewright.pickle (crates/python/src/graph) ---
# Where a class keeps its state (ClassInfo.kind).
KIND_DICT: int
KIND_SLOTS: int
KIND_TUPLE: int
KIND_ENUM: int

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
def graph_record_len(prefix: bytes) -> int: ...

# --- bytewright.pickle.loads_pickle (crates/python/src/pickle_reader) ---
def loads_pickle(
    data: bytes | bytearray | memoryview,
    *,
    classes: Iterable[type] | Mapping[str, type] | None = None,
    allow: Iterable[Callable[..., Any]] | Mapping[str, Callable[..., Any]] | None = None,
    limits: Any = None,
) -> Any: ...
def check_pickle(
    data: bytes | bytearray | memoryview,
    *,
    classes: Iterable[type] | Mapping[str, type] | None = None,
    allow: Iterable[Callable[..., Any]] | Mapping[str, Callable[..., Any]] | None = None,
    limits: Any = None,
) -> str | None: ...
def loads_pickle_at(
    data: bytes | bytearray | memoryview,
    *,
    classes: Iterable[type] | Mapping[str, type] | None = None,
    allow: Iterable[Callable[..., Any]] | Mapping[str, Callable[..., Any]] | None = None,
    limits: Any = None,
) -> tuple[Any, int]: ...
def pickle_extent(data: bytes | bytearray | memoryview, pos: int) -> tuple[int, int, int]: ...
