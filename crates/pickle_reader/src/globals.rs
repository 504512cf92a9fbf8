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
    /// `copyreg.__newobj__(cls, *args)`: `cls.__new__(cls, *args)` (protocols 0-1 write it).
    NewObjFn,
    /// `copyreg.__newobj_ex__(cls, args, kwargs)`.
    NewObjExFn,
    /// `builtins.type`: a value, and `type(x)` of one value (`type(None)` and friends).
    Type,
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
    /// A struct sequence of the standard library (`time.struct_time`, `os.stat_result`,
    /// ...), made from its tuple and dict: by its index among [`STRUCT_SEQUENCES`].
    StructSeq(u8),
    SimpleNamespace,
    Array,
    /// `array._array_reconstructor(array.array, typecode, mformat_code, bytes)`.
    ArrayReconstructor,
    UserDict,
    UserList,
    UserString,
    /// A class from `classes=`, by its index in the resolver.
    Class(u32, ClassKind),
    /// A constructor from `allow=`, by its index in the resolver.
    Extra(u32),
    /// A builtins name that is only ever a value, by its index in [`CONSTANTS`].
    Constant(u16),
    /// A builtin exception class, by its index in [`EXCEPTIONS`]: a value, and called
    /// with plain values to make an instance (as pickle writes exceptions).
    Exception(u16),
}

/// Every builtin exception class.
pub const EXCEPTIONS: &[&str] = &[
    "ArithmeticError",
    "AssertionError",
    "AttributeError",
    "BaseException",
    "BaseExceptionGroup",
    "BlockingIOError",
    "BrokenPipeError",
    "BufferError",
    "BytesWarning",
    "ChildProcessError",
    "ConnectionAbortedError",
    "ConnectionError",
    "ConnectionRefusedError",
    "ConnectionResetError",
    "DeprecationWarning",
    "EOFError",
    "EncodingWarning",
    "EnvironmentError",
    "Exception",
    "ExceptionGroup",
    "FileExistsError",
    "FileNotFoundError",
    "FloatingPointError",
    "FutureWarning",
    "GeneratorExit",
    "IOError",
    "ImportError",
    "ImportWarning",
    "IndentationError",
    "IndexError",
    "InterruptedError",
    "IsADirectoryError",
    "KeyError",
    "KeyboardInterrupt",
    "LookupError",
    "MemoryError",
    "ModuleNotFoundError",
    "NameError",
    "NotADirectoryError",
    "NotImplementedError",
    "OSError",
    "OverflowError",
    "PendingDeprecationWarning",
    "PermissionError",
    "ProcessLookupError",
    "RecursionError",
    "ReferenceError",
    "ResourceWarning",
    "RuntimeError",
    "RuntimeWarning",
    "StopAsyncIteration",
    "StopIteration",
    "SyntaxError",
    "SyntaxWarning",
    "SystemError",
    "SystemExit",
    "TabError",
    "TimeoutError",
    "TypeError",
    "UnboundLocalError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
    "UnicodeError",
    "UnicodeTranslateError",
    "UnicodeWarning",
    "UserWarning",
    "ValueError",
    "Warning",
    "ZeroDivisionError",
];

/// Builtins names that pickles hold as plain values, never called by the reader:
/// `NotImplemented` and type objects (`pickle.dumps(type)`).
pub const CONSTANTS: &[&str] = &[
    "NotImplemented",
    "classmethod",
    "enumerate",
    "filter",
    "map",
    "memoryview",
    "property",
    "reversed",
    "staticmethod",
    "super",
    "zip",
];

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
    ("copyreg", "__newobj__", Global::NewObjFn),
    ("copyreg", "__newobj_ex__", Global::NewObjExFn),
    ("builtins", "type", Global::Type),
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
    ("collections", "UserDict", Global::UserDict),
    ("collections", "UserList", Global::UserList),
    ("collections", "UserString", Global::UserString),
    ("time", "struct_time", Global::StructSeq(0)),
    ("os", "stat_result", Global::StructSeq(1)),
    ("os", "statvfs_result", Global::StructSeq(2)),
    ("os", "terminal_size", Global::StructSeq(3)),
    ("posix", "times_result", Global::StructSeq(4)),
    ("posix", "uname_result", Global::StructSeq(5)),
    ("resource", "struct_rusage", Global::StructSeq(6)),
    ("pwd", "struct_passwd", Global::StructSeq(7)),
    ("grp", "struct_group", Global::StructSeq(8)),
    ("types", "SimpleNamespace", Global::SimpleNamespace),
    ("array", "array", Global::Array),
    ("array", "_array_reconstructor", Global::ArrayReconstructor),
];

/// The struct sequence types in [`TABLE`], by the names their pickles use: each is made
/// from a tuple of its fields (and a dict of the extra ones), which runs no code.
pub const STRUCT_SEQUENCES: &[(&str, &str)] = &[
    ("time", "struct_time"),
    ("os", "stat_result"),
    ("os", "statvfs_result"),
    ("os", "terminal_size"),
    ("posix", "times_result"),
    ("posix", "uname_result"),
    ("resource", "struct_rusage"),
    ("pwd", "struct_passwd"),
    ("grp", "struct_group"),
];

/// Every module [`TABLE`] names: a name from any other module (a user class) is not
/// looked for entry by entry.
const TABLE_MODULES: &[&str] = &[
    "builtins",
    "collections",
    "datetime",
    "copyreg",
    "_codecs",
    "zoneinfo",
    "decimal",
    "_decimal",
    "_pydecimal",
    "fractions",
    "uuid",
    "pathlib",
    "pathlib._local",
    "ipaddress",
    "time",
    "os",
    "posix",
    "resource",
    "pwd",
    "grp",
    "types",
    "array",
];

/// The built-in meaning of `module.name` (a Python 3 name: see [`python3_name`]).
pub fn lookup(module: &str, name: &str) -> Option<Global> {
    if !TABLE_MODULES.contains(&module) {
        return None;
    }
    TABLE
        .iter()
        .find(|(m, n, _)| *m == module && *n == name)
        .map(|(_, _, g)| *g)
        .or_else(|| {
            if module != "builtins" {
                return None;
            }
            if let Some(i) = CONSTANTS.iter().position(|c| *c == name) {
                return Some(Global::Constant(i as u16));
            }
            let i = EXCEPTIONS.iter().position(|c| *c == name)?;
            Some(Global::Exception(i as u16))
        })
}

/// True for the globals whose object is a plain value as well as callable: the classes
/// (builtin types, the table's classes, registered classes), which pickles also hold as
/// values (`pickle.dumps(int)`, `pickle.dumps(MyClass)`). Functions are only ever called.
#[inline(always)]
pub fn is_value(g: Global) -> bool {
    !matches!(
        g,
        Global::Getattr
            | Global::CodecsEncode
            | Global::Reconstructor
            | Global::NewObjFn
            | Global::NewObjExFn
            | Global::ZoneInfoUnpickle
            | Global::ArrayReconstructor
            | Global::Extra(_)
    )
}

/// Python 2 modules that protocols 0-2 name, and their Python 3 names (as `pickle`'s
/// `fix_imports` maps them).
const PYTHON2_MODULES: &[(&str, &str)] = &[
    ("__builtin__", "builtins"),
    ("copy_reg", "copyreg"),
    ("exceptions", "builtins"),
    ("UserDict", "collections"),
    ("UserList", "collections"),
    ("UserString", "collections"),
    ("Queue", "queue"),
    ("SocketServer", "socketserver"),
    ("ConfigParser", "configparser"),
    ("repr", "reprlib"),
    ("cPickle", "pickle"),
    ("cStringIO", "io"),
    ("StringIO", "io"),
    ("thread", "_thread"),
    ("httplib", "http.client"),
    ("urllib2", "urllib.request"),
    ("urlparse", "urllib.parse"),
    ("cookielib", "http.cookiejar"),
    ("HTMLParser", "html.parser"),
    ("xmlrpclib", "xmlrpc.client"),
    ("anydbm", "dbm"),
    ("whichdb", "dbm"),
    ("dbhash", "dbm.bsd"),
    ("dumbdbm", "dbm.dumb"),
    ("gdbm", "dbm.gnu"),
    ("_winreg", "winreg"),
];

/// A `(module, name)` pair.
type Name = (&'static str, &'static str);

/// Python 2 names whose Python 3 name differs by more than the module.
const PYTHON2_NAMES: &[(Name, Name)] = &[
    (("__builtin__", "xrange"), ("builtins", "range")),
    (("__builtin__", "unicode"), ("builtins", "str")),
    (("__builtin__", "basestring"), ("builtins", "str")),
    (("__builtin__", "long"), ("builtins", "int")),
    (("__builtin__", "unichr"), ("builtins", "chr")),
    (("__builtin__", "raw_input"), ("builtins", "input")),
    (("__builtin__", "reduce"), ("functools", "reduce")),
    (("__builtin__", "intern"), ("sys", "intern")),
    (("exceptions", "StandardError"), ("builtins", "Exception")),
    (("itertools", "izip"), ("builtins", "zip")),
    (("itertools", "imap"), ("builtins", "map")),
    (("itertools", "ifilter"), ("builtins", "filter")),
    (
        ("UserDict", "IterableUserDict"),
        ("collections", "UserDict"),
    ),
];

/// The Python 3 name of a Python 2 `module.name` (`None` when it is not a Python 2 name).
pub fn python3_name(module: &str, name: &str) -> Option<(&'static str, String)> {
    if let Some((_, (m, n))) = PYTHON2_NAMES.iter().find(|(k, _)| *k == (module, name)) {
        return Some((m, (*n).to_string()));
    }
    PYTHON2_MODULES
        .iter()
        .find(|(py2, _)| *py2 == module)
        .map(|(_, py3)| (*py3, name.to_string()))
}

/// Builtins that run code or import when called.
const RUNS_CODE: &[&str] = &[
    "eval",
    "exec",
    "compile",
    "__import__",
    "getattr",
    "setattr",
    "delattr",
    "breakpoint",
    "help",
];

/// Builtins that reach files, the terminal or the interpreter's namespaces when called.
const REACHES_OUT: &[&str] = &[
    "open",
    "globals",
    "locals",
    "vars",
    "input",
    "exit",
    "quit",
    "print",
    "copyright",
    "credits",
    "license",
];

/// Why `module.name` (its Python 3 name), outside the table and not resolved through
/// `classes=`/`allow=`, is refused, and what the user may do about it.
pub fn refusal(module: &str, name: &str, python2: Option<&str>) -> String {
    let full = format!("{module}.{name}");
    let spelled = match python2 {
        Some(old) => format!("{full} (written as Python 2's {old})"),
        None => full.clone(),
    };
    let builtin = |names: &[&str]| module == "builtins" && names.contains(&name);
    if builtin(RUNS_CODE) || builtin(REACHES_OUT) || (is_dangerous(module) && module != "builtins")
    {
        let why = if builtin(RUNS_CODE) {
            "it can run code"
        } else if builtin(REACHES_OUT) {
            "it reaches files, the terminal or the interpreter's namespaces"
        } else {
            "its module can run code"
        };
        return format!("global {spelled} is not allowed; {why} and is never allowed");
    }
    if module == "builtins" || is_dangerous(module) || name.starts_with("__") {
        return format!("global {spelled} is not allowed (not in the table of allowed globals)");
    }
    format!(
        "global {spelled} is not allowed; if it is your class, pass classes=[{full}]; for a constructor you trust, allow=[{full}]"
    )
}

/// Where the adapter finds the Python object of a table global: its canonical name.
pub fn canonical(global: Global) -> Option<(&'static str, &'static str)> {
    match global {
        Global::Constant(i) => return CONSTANTS.get(usize::from(i)).map(|n| ("builtins", *n)),
        Global::Exception(i) => return EXCEPTIONS.get(usize::from(i)).map(|n| ("builtins", *n)),
        _ => {}
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_say_what_the_builtin_does() {
        assert!(refusal("builtins", "eval", None).contains("it can run code"));
        let print = refusal("builtins", "print", None);
        assert!(
            print.contains("reaches files") && !print.contains("run code"),
            "{print}"
        );
    }

    #[test]
    fn struct_sequences_are_in_the_table_in_order() {
        for (i, (module, name)) in STRUCT_SEQUENCES.iter().enumerate() {
            assert_eq!(lookup(module, name), Some(Global::StructSeq(i as u8)));
        }
    }

    #[test]
    fn every_table_module_is_listed() {
        for (module, name, _) in TABLE {
            assert!(TABLE_MODULES.contains(module), "{module}.{name}");
        }
    }
}
