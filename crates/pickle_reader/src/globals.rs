//! The fixed table of globals a standard pickle may name, and what each one may do.

/// A builtin type that pickles name as a value (defaultdict factories) or call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Builtin {
    List,
    Dict,
    Set,
    FrozenSet,
    Int,
    Float,
    Str,
    Bytes,
    Tuple,
    Bool,
    Complex,
    ByteArray,
    Object,
}

/// How a registered class (`classes=`) is rebuilt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClassKind {
    /// Fields in `__dict__` or slots, set from `BUILD` state.
    Object,
    /// namedtuple / NamedTuple, made from its field tuple.
    Tuple,
    /// Enum members, looked up by value.
    Enum,
}

/// Everything a `GLOBAL`/`STACK_GLOBAL` may resolve to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Global {
    Ellipsis,
    Builtin(Builtin),
    Range,
    Slice,
    /// `builtins.getattr`, only as `getattr(zoneinfo.ZoneInfo, "_unpickle")`.
    Getattr,
    /// `_codecs.encode(str, "latin1")`, protocol 0-2 bytes.
    CodecsEncode,
    /// `copyreg._reconstructor(cls, base, state)`.
    Reconstructor,
    Date,
    Time,
    DateTime,
    TimeDelta,
    TimeZone,
    ZoneInfo,
    /// `ZoneInfo._unpickle`, the result of the one allowed `getattr`.
    ZoneInfoUnpickle,
    Decimal,
    Fraction,
    Uuid,
    PurePosixPath,
    PureWindowsPath,
    PosixPath,
    WindowsPath,
    IPv4Address,
    IPv6Address,
    IPv4Network,
    IPv6Network,
    IPv4Interface,
    IPv6Interface,
    OrderedDict,
    Counter,
    DefaultDict,
    Deque,
    /// A class from `classes=`, by its index in the resolver.
    Class(u32, ClassKind),
    /// A constructor from `allow=`, by its index in the resolver.
    Extra(u32),
}

/// (module, name, global); `__builtin__`, `copy_reg` and `xrange` are protocol 0-2 spellings.
/// The first entry of a global is its canonical name (see [`canonical`]).
pub const TABLE: &[(&str, &str, Global)] = &[
    ("builtins", "Ellipsis", Global::Ellipsis),
    ("builtins", "list", Global::Builtin(Builtin::List)),
    ("builtins", "dict", Global::Builtin(Builtin::Dict)),
    ("builtins", "set", Global::Builtin(Builtin::Set)),
    ("builtins", "frozenset", Global::Builtin(Builtin::FrozenSet)),
    ("builtins", "int", Global::Builtin(Builtin::Int)),
    ("builtins", "long", Global::Builtin(Builtin::Int)),
    ("builtins", "float", Global::Builtin(Builtin::Float)),
    ("builtins", "str", Global::Builtin(Builtin::Str)),
    ("builtins", "unicode", Global::Builtin(Builtin::Str)),
    ("builtins", "bytes", Global::Builtin(Builtin::Bytes)),
    ("builtins", "tuple", Global::Builtin(Builtin::Tuple)),
    ("builtins", "bool", Global::Builtin(Builtin::Bool)),
    ("builtins", "complex", Global::Builtin(Builtin::Complex)),
    ("builtins", "bytearray", Global::Builtin(Builtin::ByteArray)),
    ("builtins", "object", Global::Builtin(Builtin::Object)),
    ("builtins", "range", Global::Range),
    ("builtins", "xrange", Global::Range),
    ("builtins", "slice", Global::Slice),
    ("builtins", "getattr", Global::Getattr),
    ("_codecs", "encode", Global::CodecsEncode),
    ("copyreg", "_reconstructor", Global::Reconstructor),
    ("datetime", "date", Global::Date),
    ("datetime", "time", Global::Time),
    ("datetime", "datetime", Global::DateTime),
    ("datetime", "timedelta", Global::TimeDelta),
    ("datetime", "timezone", Global::TimeZone),
    ("zoneinfo", "ZoneInfo", Global::ZoneInfo),
    ("decimal", "Decimal", Global::Decimal),
    ("_decimal", "Decimal", Global::Decimal),
    ("_pydecimal", "Decimal", Global::Decimal),
    ("fractions", "Fraction", Global::Fraction),
    ("uuid", "UUID", Global::Uuid),
    ("pathlib", "PurePosixPath", Global::PurePosixPath),
    ("pathlib", "PureWindowsPath", Global::PureWindowsPath),
    ("pathlib", "PosixPath", Global::PosixPath),
    ("pathlib", "WindowsPath", Global::WindowsPath),
    // Where CPython 3.13+ defines them (and so names them in its pickles).
    ("pathlib._local", "PurePosixPath", Global::PurePosixPath),
    ("pathlib._local", "PureWindowsPath", Global::PureWindowsPath),
    ("pathlib._local", "PosixPath", Global::PosixPath),
    ("pathlib._local", "WindowsPath", Global::WindowsPath),
    ("ipaddress", "IPv4Address", Global::IPv4Address),
    ("ipaddress", "IPv6Address", Global::IPv6Address),
    ("ipaddress", "IPv4Network", Global::IPv4Network),
    ("ipaddress", "IPv6Network", Global::IPv6Network),
    ("ipaddress", "IPv4Interface", Global::IPv4Interface),
    ("ipaddress", "IPv6Interface", Global::IPv6Interface),
    ("collections", "OrderedDict", Global::OrderedDict),
    ("collections", "Counter", Global::Counter),
    ("collections", "defaultdict", Global::DefaultDict),
    ("collections", "deque", Global::Deque),
];

/// The built-in meaning of `module.name`, with the protocol 0-2 module spellings mapped.
pub fn lookup(module: &str, name: &str) -> Option<Global> {
    let module = match module {
        "__builtin__" => "builtins",
        "copy_reg" => "copyreg",
        other => other,
    };
    TABLE
        .iter()
        .find(|(m, n, _)| *m == module && *n == name)
        .map(|(_, _, g)| *g)
}

/// Where the adapter finds the Python object of a table global: its canonical name.
pub fn canonical(global: Global) -> Option<(&'static str, &'static str)> {
    TABLE
        .iter()
        .find(|(_, _, g)| *g == global)
        .map(|(m, n, _)| (*m, *n))
}

/// Modules whose names never become allowed through `classes=` (they can run code).
pub const DANGEROUS_MODULES: &[&str] = &[
    "builtins",
    "__builtin__",
    "os",
    "posix",
    "nt",
    "subprocess",
    "sys",
    "importlib",
    "operator",
    "functools",
    "pdb",
    "pickle",
    "_pickle",
    "codecs",
    "_codecs",
    "copyreg",
    "copy_reg",
    "runpy",
    "shutil",
    "socket",
    "ctypes",
    "types",
    "code",
    "marshal",
    "io",
    "_io",
    "webbrowser",
    "pty",
    "commands",
    "platform",
    "posixpath",
    "ntpath",
    "inspect",
    "gc",
    "threading",
    "multiprocessing",
    "asyncio",
    "shelve",
    "dbm",
    "tempfile",
    "glob",
    "signal",
    "site",
    "zipimport",
    "_posixsubprocess",
    "_operator",
    "_functools",
    "_thread",
    "_ctypes",
    "_imp",
    "zoneinfo",
    "datetime",
    "collections",
];

/// True when `module` or a parent package of it is in [`DANGEROUS_MODULES`].
pub fn is_dangerous(module: &str) -> bool {
    DANGEROUS_MODULES.iter().any(|d| {
        module == *d || (module.starts_with(d) && module.as_bytes().get(d.len()) == Some(&b'.'))
    })
}
