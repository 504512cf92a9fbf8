from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import GenericAlias
from typing import Any, Generic, final

from typing_extensions import Buffer, TypeVar

from bytewright.errors import DecodeError, Incomplete

__all__ = [
    "KIND_DICT",
    "KIND_ENUM",
    "KIND_SLOTS",
    "KIND_TUPLE",
    "Codec",
    "Column",
    "Decoder",
    "Fragment",
    "StructInit",
    "Table",
    "TableReader",
    "TableSchema",
    "__version__",
    "check_align",
    "check_pickle",
    "checksum_names",
    "class_layout",
    "classes_from_spec",
    "compile_info",
    "compile_struct",
    "declare",
    "fast_paths",
    "graph_record_len",
    "loads_pickle",
    "loads_pickle_at",
    "loads_pickle_carrying",
    "new_class",
    "new_info",
    "new_spec",
    "pickle_dumps",
    "pickle_extent",
    "pickle_loads",
    "suggest",
]
__version__: str

_T = TypeVar("_T", default=Any)

# --- CPython fast paths and their portable fallbacks (crates/python/src/cpython.rs) ---
def fast_paths() -> dict[str, bool]: ...
def new_class(meta: type[_T], name: str, bases: tuple[type, ...], ns: dict[str, Any]) -> _T: ...
def class_layout(cls: type) -> dict[str, Any]: ...
def classes_from_spec() -> int: ...

# --- wire codecs (crates/python/src/wire) ---
def checksum_names() -> list[str]: ...
def suggest(name: str, options: Iterable[str]) -> str | None: ...
def check_align(value: object, at: str) -> int: ...
def new_info(
    ctx: tuple[Any, ...],
    cls: type,
    declared: tuple[Any, ...],
    byteorder: str | None,
    bitorder: str | None,
    align: int | None,
    limits: Any,
    registry: str | None,
    tag: Any,
    localns: dict[str, Any] | None,
    codec: Any = None,
) -> Any: ...
def new_spec(ctx: tuple[Any, ...], options: dict[str, Any]) -> Any: ...
def declare(
    name: str,
    bases: tuple[type, ...],
    ns: dict[str, Any],
    class_var: object,
    ctx: tuple[Any, ...],
) -> tuple[tuple[Any, ...], bool]: ...
def compile_info(compile: Any, ctx: tuple[Any, ...], info: Any) -> Any: ...

@final
class StructInit:
    """The keyword ``__init__`` of a Struct class (field names, defaults; native)."""

    def __new__(
        cls, qualname: str, names: tuple[str, ...], defaults: dict[str, Any]
    ) -> StructInit: ...
    def __call__(self, *args: Any, **kwargs: Any) -> None: ...
    def __get__(self, instance: Any, owner: Any = None, /) -> Any: ...
    def derive(self, names: Iterable[str]) -> None: ...
    @property
    def names(self) -> tuple[str, ...]: ...
    @property
    def __kwdefaults__(self) -> dict[str, Any]: ...
    @property
    def __signature__(self) -> Any: ...

@final
class Fragment:
    """A class's described struct, kept in its ``StructInfo._cache`` (opaque)."""

def compile_struct(
    cls: type,
    typed: bool,
    limits: Any,
    registries: list[type] | None = None,
    parts: list[Codec[Any]] | None = None,
) -> Codec[Any]: ...

@final
class Codec(Generic[_T]):
    """A compiled codec; ``T`` is what it unpacks (a Struct class's instances, or a dict).

    Every Struct class has its typed codec (``cls.__bw__.codec``, what its classmethods
    call); ``bw.compile(cls)`` gives a codec of dicts and lists. Codecs are immutable,
    thread-safe and picklable.

    >>> import bytewright as bw
    >>> class Point(bw.Struct):
    ...     x: bw.U8
    ...     y: bw.U8
    >>> codec = bw.compile(Point)
    >>> codec.unpack_from(b"\\x00\\x01\\x02", 1)
    ({'x': 1, 'y': 2}, 3)
    >>> (codec.static_size, codec.typed)
    (2, False)
    """

    def __new__(
        cls,
        schema: str,
        structs: list[Any],
        typed: bool = False,
    ) -> Codec[Any]: ...
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
    def pack(self, value: Any) -> bytes:
        """Packs a value (an instance, a mapping or an object with the fields) into bytes."""
    def pack_into(self, buffer: Buffer, value: Any, offset: int = 0) -> int:
        """Packs straight into a writable buffer at ``offset``; returns the end offset."""
    def pack_many(self, items: Iterable[Any]) -> bytes:
        """Packs many values back to back (instances, mappings or tuples in field order)."""
    def unpack(self, data: Buffer) -> _T:
        """Unpacks exactly one value; trailing bytes are a ``DecodeError``."""
    def unpack_from(self, data: Buffer, offset: int = 0) -> tuple[_T, int]:
        """Unpacks one value at ``offset``; returns ``(value, end_offset)``."""
    def parse(self, data: Buffer, offset: int = 0) -> tuple[_T, int] | Incomplete:
        """Like ``unpack_from``, but a falsy ``Incomplete`` (with ``needed``) on short data."""
    def _explain(
        self, data: Buffer, offset: int = 0, whole: bool = True
    ) -> tuple[
        list[
            tuple[
                int | None,
                str | int | None,
                str,
                int,
                int | None,
                tuple[int, int, int, bool] | None,
                tuple[str, ...],
                tuple[str, ...],
                str | None,
                bool,
                Any,
            ]
        ],
        int | None,
        DecodeError | None,
        int | None,
        int | None,
        int | None,
    ]:
        """The field tree of one message as plain tuples (``bw.explain`` wraps them; use
        it): with ``whole``, bytes after the message are the error ``unpack`` raises."""
    def iter_unpack(self, data: Buffer) -> list[_T]:
        """Unpacks a buffer of back-to-back messages into a list, in one call."""
    def unpack_table(
        self,
        data: Buffer,
        *,
        count: int | None = None,
        offset: int = 0,
        threads: int | None = None,
        enum_names: bool = False,
        verify_checksums: bool = True,
    ) -> Table: ...
    def iter_tables(
        self,
        source: Any,
        *,
        rows: int = 65536,
        threads: int | None = None,
        enum_names: bool = False,
    ) -> TableReader: ...
    def scan_messages(
        self, data: Buffer, *, offset: int = 0, stop: int | None = None
    ) -> tuple[int, int]: ...
    @property
    def table_schema(self) -> TableSchema: ...
    def pack_table(self, table: Any) -> bytes: ...
    def pack_table_into(self, buffer: Buffer, offset: int, table: Any) -> int: ...

# --- columns (crates/python/src/columns) ---
@final
class Table:
    """A decoded table: one column per field, immutable, cheap to pass around.

    Made by ``unpack_table`` and ``iter_tables``; hands its columns to pyarrow, polars,
    pandas and NumPy without copying where their formats allow (docs/columns.md).

    >>> import bytewright as bw
    >>> class Reading(bw.Struct):
    ...     sensor: bw.U8
    ...     value: bw.I16
    >>> table = Reading.unpack_table(Reading.pack_many([(1, -5), (2, 7)]))
    >>> (table.num_rows, table.column_names)
    (2, ['sensor', 'value'])
    >>> table.to_pylist()
    [{'sensor': 1, 'value': -5}, {'sensor': 2, 'value': 7}]
    """

    def __len__(self) -> int: ...
    @property
    def num_rows(self) -> int: ...
    @property
    def num_columns(self) -> int: ...
    @property
    def num_chunks(self) -> int: ...
    @property
    def column_names(self) -> list[str]: ...
    @property
    def schema(self) -> TableSchema: ...
    def __getitem__(self, key: str | int, /) -> Column: ...
    def __contains__(self, key: str, /) -> bool: ...
    def __iter__(self) -> Iterator[str]: ...
    def __arrow_c_stream__(self, requested_schema: object | None = None) -> object: ...
    def __arrow_c_schema__(self) -> object: ...
    @staticmethod
    def concat(tables: Sequence[Table]) -> Table: ...
    def to_pydict(self) -> dict[str, list[Any]]: ...
    def to_pylist(self) -> list[dict[str, Any]]: ...
    def to_arrow(self) -> Any: ...
    def to_polars(self) -> Any: ...
    def to_pandas(self, **options: Any) -> Any: ...
    def to_numpy(self) -> Any: ...

@final
class TableSchema:
    """A table's Arrow schema: ``pyarrow.schema(s)`` and polars take it through the Arrow
    PyCapsule interface; ``names`` and ``types`` read it without them.

    >>> import bytewright as bw
    >>> class Reading(bw.Struct):
    ...     sensor: bw.U8
    ...     value: bw.I16
    >>> schema = Reading.table_schema()
    >>> (schema.names, schema.types)
    (['sensor', 'value'], {'sensor': 'uint8', 'value': 'int16'})
    """

    @property
    def names(self) -> list[str]: ...
    @property
    def types(self) -> dict[str, str]: ...
    def __len__(self) -> int: ...
    def __eq__(self, value: object, /) -> bool: ...
    def __arrow_c_schema__(self) -> object: ...

@final
class Column:
    """One column of a table: its chunks (one per decoding thread), a NumPy-ready buffer
    when its type allows, and the Arrow C data interface.

    >>> import bytewright as bw
    >>> class Reading(bw.Struct):
    ...     sensor: bw.U8
    ...     value: bw.I16
    >>> column = Reading.unpack_table(Reading.pack_many([(1, -5), (2, 7)]))["value"]
    >>> (column.name, column.type, column.to_pylist())
    ('value', 'int16', [-5, 7])
    """

    def __len__(self) -> int: ...
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def null_count(self) -> int: ...
    @property
    def num_chunks(self) -> int: ...
    def __getitem__(self, key: int, /) -> Any: ...
    def to_pylist(self) -> list[Any]: ...
    def __arrow_c_array__(
        self, requested_schema: object | None = None
    ) -> tuple[object, object]: ...
    def __array__(self, dtype: Any = None, copy: bool | None = None) -> Any: ...

@final
class TableReader:
    def __iter__(self) -> TableReader: ...
    def __next__(self) -> Table: ...
    def close_source(self) -> None: ...

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
) -> bytes:
    """Serialize ``obj`` to one record (``bytewright.pickle.dumps``).

    ``protocol`` is accepted for call-shape compatibility with ``pickle.dumps``; with
    ``hmac_key`` the record is signed; ``deterministic`` orders sets and frozensets so
    equal values give equal bytes.

    >>> from bytewright import pickle as bwp
    >>> bwp.dumps([1, "a", None])
    b'BW\\x01\\x00\\x05c\\x01Aa\\x90'
    """

def pickle_loads(
    data: bytes | bytearray | memoryview,
    *,
    classes: Iterable[type] | Mapping[str, type] | None = None,
    hmac_key: bytes | bytearray | memoryview | None = None,
    limits: Any = None,
) -> Any:
    """Rebuild the object graph of one record (``bytewright.pickle.loads``); only
    ``classes`` may be instantiated, and nothing in the record can import or call code.

    >>> from bytewright import pickle as bwp
    >>> bwp.loads(b"BW\\x01\\x00\\x05c\\x01Aa\\x90")
    [1, 'a', None]
    """

@final
class Decoder:
    """``bytewright.pickle.loads`` with its options checked once, for many records.

    >>> from bytewright import pickle as bwp
    >>> bwp.Decoder().loads(b"BW\\x01\\x00\\x05c\\x01Aa\\x90")
    [1, 'a', None]
    """

    def __new__(
        cls,
        *,
        classes: Iterable[type] | Mapping[str, type] | None = None,
        hmac_key: bytes | bytearray | memoryview | None = None,
        limits: Any = None,
    ) -> Decoder: ...
    def loads(self, data: bytes | bytearray | memoryview, /) -> Any:
        """Rebuild the object graph of one record, as ``loads`` does with these options."""
    def _kept(self) -> list[tuple[str, type]]:
        """The classes resolved when the decoder was made, by record name (for the tests)."""

def graph_record_len(prefix: bytes) -> int: ...

# --- bytewright.pickle.loads_pickle (crates/python/src/pickle_reader) ---
def loads_pickle(
    data: bytes | bytearray | memoryview,
    *,
    classes: Iterable[type] | Mapping[str, type] | None = None,
    allow: Iterable[Callable[..., Any]] | Mapping[str, Callable[..., Any]] | None = None,
    limits: Any = None,
    encoding: str = "ASCII",
    errors: str = "strict",
) -> Any:
    """Read a standard pickle (protocols 0-5) without running code from it
    (``bytewright.pickle.loads_pickle``): it builds what ``pickle.loads`` would for the
    types ``bytewright.pickle`` supports and for ``classes``; anything else raises
    ``UnpicklingError`` before any code runs.

    >>> import pickle
    >>> from bytewright import pickle as bwp
    >>> bwp.loads_pickle(pickle.dumps({"a": (1, 2.5)}))
    {'a': (1, 2.5)}
    >>> bwp.loads_pickle(b"cos\\nsystem\\n(S'true'\\ntR.")
    Traceback (most recent call last):
    bytewright.pickle._errors.UnpicklingError: global os.system is not allowed; its module can run code and is never allowed (at byte 0)
    """

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
    encoding: str | None = None,
    errors: str | None = None,
) -> tuple[Any, int]: ...
def loads_pickle_carrying(
    data: bytes | bytearray | memoryview,
    memo: dict[int, Any],
    *,
    classes: Iterable[type] | Mapping[str, type] | None = None,
    allow: Iterable[Callable[..., Any]] | Mapping[str, Callable[..., Any]] | None = None,
    limits: Any = None,
    encoding: str | None = None,
    errors: str | None = None,
) -> tuple[Any, int]: ...
def pickle_extent(data: bytes | bytearray | memoryview, pos: int) -> tuple[int, int, int]: ...
