//! The native describe: a `bw.Struct` class (its `StructInfo` in `cls.__bw__`: fields with
//! their annotations and `FieldSpec`s, byte and bit order, alignment, limits, registry, tag)
//! -> the wire crate's `Schema`, built directly, then compiled into a `Codec`.
//!
//! Rare paths call back into Python (`bytewright.schema`): evaluating a forward reference,
//! a field's converters (IntEnum, `convert=`), parsing a non-trivial expression, and the
//! error for an unsupported annotation. A struct's description depends only on the struct
//! and the byte order given by the field holding it, so it is kept per class (a `Fragment`
//! in `info._cache`) and reused, its struct ids moved, by every schema that contains it;
//! and a nested class's compiled program is copied rather than compiled again when it was
//! compiled in the same context.

use std::sync::{Arc, Mutex};

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType,
};
use pyo3::{intern, IntoPyObjectExt};
use pyo3::{PyTraverseError, PyVisit};

use bytewright_wire::digest::CrcParams;
use bytewright_wire::schema::{
    AlgoDesc, BitOrder, CaseDesc, ChecksumDesc, ConstDesc, Encoding, FieldDesc, LenDesc,
    LimitsDesc, Order, StructDesc, TypeDesc,
};
use bytewright_wire::Schema;

use super::errors;
use super::structs::Converters;

/// One struct's adapter info as described: (class, field names, defaults, decoders,
/// encoders); the codec keeps what its mode (typed or dict) needs. Shared by reference
/// count between a class's cached description and every schema that reuses it.
pub(crate) struct Arg {
    pub cls: Py<PyType>,
    pub names: Vec<Py<PyString>>,
    pub defaults: Vec<Py<PyAny>>,
    pub decoders: Converters,
    pub encoders: Converters,
}

/// A class's described struct, kept in its `info._cache` by byte order: its type with ids
/// from `sid`, and the adapter info of each struct in it.
#[pyclass(frozen, module = "bytewright._native")]
pub(crate) struct Fragment {
    ty: Held,
    sid: u32,
    infos: Vec<Arc<Arg>>,
}

/// Where a fragment's type is: its own copy (a struct described inside another), or the
/// root of a schema a codec holds (a class described for its own codec: no copy).
enum Held {
    Own(TypeDesc),
    Root(Arc<Schema>),
}

#[pymethods]
impl Fragment {
    /// The objects of the fragment's own struct (`infos[0]`, made for this fragment alone):
    /// a class keeps its fragment, whose info refers back to the class. The other infos are
    /// those of nested structs, each visited by its own fragment: an object reported twice
    /// for one reference could be freed while still in use, and one not reported at all
    /// only stays alive.
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        if let Some(a) = self.infos.first() {
            visit.call(&a.cls)?;
            for n in &a.names {
                visit.call(n)?;
            }
            for d in &a.defaults {
                visit.call(d)?;
            }
            super::structs::traverse_converters(&a.decoders, &visit)?;
            super::structs::traverse_converters(&a.encoders, &visit)?;
        }
        Ok(())
    }
}

impl Fragment {
    fn ty(&self) -> &TypeDesc {
        match &self.ty {
            Held::Own(t) => t,
            Held::Root(s) => &s.root,
        }
    }
}

/// What describing a class gives: the schema, the adapter infos by struct id, the registry
/// bases it embeds, and the compiled codecs whose programs it may copy (by struct id).
pub(crate) struct Described<'py> {
    pub schema: Arc<Schema>,
    pub infos: Vec<Arc<Arg>>,
    pub registries: Vec<Bound<'py, PyType>>,
    pub parts: Vec<(u32, Bound<'py, super::Codec>)>,
}

/// Reads the member slots (`__slots__`) of one exact class by their offsets: what getattr
/// gives, without an attribute lookup per option. An instance of another class (a subclass
/// may define properties) and an unset slot take getattr (its AttributeError).
struct Slots {
    ty: Py<PyType>,
    names: Vec<Py<PyString>>,
    offsets: Vec<isize>,
}

// From CPython's structmember.h (stable since 3.0; Py_T_OBJECT_EX in 3.12+).
const T_OBJECT_EX: i32 = 16;

impl Slots {
    fn new(cls: Bound<'_, PyType>, names: &[&str]) -> PyResult<Slots> {
        let py = cls.py();
        let mut offsets = Vec::with_capacity(names.len());
        let mut interned = Vec::with_capacity(names.len());
        for n in names {
            let name = PyString::intern(py, n);
            let descr = cls.getattr(&name)?;
            // SAFETY: the descriptor's fields are read after checking its type; the offset
            // is used only on instances whose type is exactly `cls` (see `get`), whose
            // layout holds the slot (the descriptor's owner is `cls` or a base of it).
            let offset = unsafe {
                if ffi::Py_TYPE(descr.as_ptr()) != std::ptr::addr_of_mut!(ffi::PyMemberDescr_Type) {
                    return Err(PyTypeError::new_err(format!("{n} is not a slot")));
                }
                let d = descr.as_ptr().cast::<ffi::PyMemberDescrObject>();
                let m = &*(*d).d_member;
                if m.type_code != T_OBJECT_EX
                    || ffi::PyType_IsSubtype(cls.as_ptr().cast(), (*d).d_common.d_type) == 0
                {
                    return Err(PyTypeError::new_err(format!("{n} is not an object slot")));
                }
                m.offset
            };
            offsets.push(offset);
            interned.push(name.unbind());
        }
        Ok(Slots {
            ty: cls.unbind(),
            names: interned,
            offsets,
        })
    }

    /// `obj.<names[i]>`.
    #[inline]
    fn get<'py>(&self, obj: &Bound<'py, PyAny>, i: usize) -> PyResult<Bound<'py, PyAny>> {
        let py = obj.py();
        // SAFETY: `obj`'s type is exactly the class the offsets were read from, so the
        // slot is a `PyObject*` inside the object (NULL when unset); a non-NULL one is a
        // borrowed reference, owned by `obj`, which we hold.
        unsafe {
            if ffi::Py_TYPE(obj.as_ptr()) == self.ty.as_ptr().cast() {
                let p = *obj
                    .as_ptr()
                    .cast::<u8>()
                    .offset(self.offsets[i])
                    .cast::<*mut ffi::PyObject>();
                if !p.is_null() {
                    return Ok(Bound::from_borrowed_ptr(py, p));
                }
            }
        }
        obj.getattr(self.names[i].bind(py))
    }
}

/// The `FieldSpec` options describe reads, in `Refs::spec`'s order.
mod opt {
    pub const TYPE: usize = 0;
    pub const CASES: usize = 1;
    pub const TAG: usize = 2;
    pub const BYTEORDER: usize = 3;
    pub const LEN: usize = 4;
    pub const CONST: usize = 5;
    pub const CHECKSUM: usize = 6;
    pub const MAX_LEN: usize = 7;
    pub const NUL_TERMINATED: usize = 8;
    pub const ENCODING: usize = 9;
    pub const ITEM: usize = 10;
    pub const COUNT: usize = 11;
    pub const SIZE: usize = 12;
    pub const MAX_COUNT: usize = 13;
    pub const DEFAULT_CASE: usize = 14;
    pub const IS_PAD: usize = 15;
    pub const PAD_SIZE: usize = 16;
    pub const DEFAULT: usize = 17;
    pub const CONVERT: usize = 18;
    pub const ALIGN: usize = 19;
    pub const WHEN: usize = 20;
    pub const NAMES: [&str; 21] = [
        "type",
        "cases",
        "tag",
        "byteorder",
        "len",
        "const",
        "checksum",
        "max_len",
        "nul_terminated",
        "encoding",
        "item",
        "count",
        "size",
        "max_count",
        "default_case",
        "is_pad",
        "pad_size",
        "default",
        "convert",
        "align",
        "when",
    ];
}

/// The `StructInfo` attributes describe reads, in `Refs::info`'s order.
mod inf {
    pub const BYTEORDER: usize = 0;
    pub const REGISTRY: usize = 1;
    pub const CACHE: usize = 2;
    pub const TAG: usize = 3;
    pub const BITORDER: usize = 4;
    pub const ALIGN: usize = 5;
    pub const TAG_FIELD: usize = 6;
    pub const CODEC: usize = 7;
    pub const LIMITS: usize = 8;
    pub const FIELDS: usize = 9;
    pub const CLS: usize = 10;
    pub const NAMES: [&str; 11] = [
        "byteorder",
        "registry",
        "_cache",
        "tag",
        "bitorder",
        "align",
        "tag_field",
        "codec",
        "limits",
        "_fields",
        "cls",
    ];
}

/// Python objects the builder compares against, looked up once.
struct Refs {
    scalar: Py<PyType>,
    bits: Py<PyType>,
    varint: Py<PyType>,
    kind: Py<PyType>,
    bytes_t: Py<PyType>,
    str_t: Py<PyType>,
    cstr_t: Py<PyType>,
    array_t: Py<PyType>,
    rest: Py<PyAny>,
    missing: Py<PyAny>,
    plain: Py<PyAny>,
    generic_alias: Py<PyType>,
    schema_meta: Py<PyType>,
    /// `FieldSpec`'s options (`opt`), `StructInfo`'s attributes (`inf`), `StructField`'s
    /// name, annotation and spec.
    spec: Slots,
    info: Slots,
    field: Slots,
}

static REFS: PyOnceLock<Refs> = PyOnceLock::new();

fn refs(py: Python<'_>) -> PyResult<&Refs> {
    REFS.get_or_try_init(py, || {
        let types = py.import("bytewright.types")?;
        let ty = |n: &str| -> PyResult<Py<PyType>> { Ok(types.getattr(n)?.cast_into()?.unbind()) };
        let fields = py.import("bytewright.fields")?;
        let generic = py
            .eval(c"type(list[int])", None, None)?
            .cast_into::<PyType>()?
            .unbind();
        let info_mod = py.import("bytewright._info")?;
        fn cls_of<'py>(m: &Bound<'py, PyModule>, n: &str) -> PyResult<Bound<'py, PyType>> {
            Ok(m.getattr(n)?.cast_into::<PyType>()?)
        }
        Ok(Refs {
            spec: Slots::new(cls_of(&fields, "FieldSpec")?, &opt::NAMES)?,
            info: Slots::new(cls_of(&info_mod, "StructInfo")?, &inf::NAMES)?,
            field: Slots::new(
                cls_of(&info_mod, "StructField")?,
                &["name", "annotation", "spec"],
            )?,
            schema_meta: cls_of(&info_mod, "SchemaMeta")?.unbind(),
            scalar: ty("Scalar")?,
            bits: ty("Bits")?,
            varint: ty("Varint")?,
            kind: ty("Kind")?,
            bytes_t: ty("Bytes")?,
            str_t: ty("Str")?,
            cstr_t: ty("CStr")?,
            array_t: ty("Array")?,
            rest: types.getattr("REST")?.unbind(),
            missing: fields.getattr("MISSING")?.unbind(),
            plain: fields.getattr("PLAIN")?.unbind(),
            generic_alias: generic,
        })
    })
}

/// `bytewright.schema`, the Python half (rare paths), imported on first need.
fn helper<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    static MODULE: PyOnceLock<Py<PyModule>> = PyOnceLock::new();
    MODULE
        .get_or_try_init(py, || {
            Ok::<_, PyErr>(py.import("bytewright.schema")?.unbind())
        })?
        .bind(py)
        .getattr(name)
}

/// `where: detail` as a SchemaError with `where` as its path.
fn schema_error(py: Python<'_>, at: &str, detail: impl AsRef<str>) -> PyErr {
    match py
        .import("bytewright.errors")
        .and_then(|m| m.getattr("schema_error"))
        .and_then(|f| f.call1((at, detail.as_ref())))
    {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

/// A value the core's description cannot hold (what reading it as JSON would have said).
fn invalid(py: Python<'_>, at: &str, what: &str, value: &Bound<'_, PyAny>) -> PyErr {
    let shown = value.repr().map(|r| r.to_string()).unwrap_or_default();
    errors::schema_error(
        py,
        format!("invalid schema description: {at}: {what} {shown} is out of range"),
    )
}

fn uint<T: for<'a, 'py> FromPyObject<'a, 'py>>(
    v: &Bound<'_, PyAny>,
    at: &str,
    what: &str,
) -> PyResult<T> {
    if v.is_instance_of::<PyBool>() {
        return Err(invalid(v.py(), at, what, v));
    }
    v.extract::<T>().map_err(|_| invalid(v.py(), at, what, v))
}

fn order_of(v: &Bound<'_, PyAny>) -> PyResult<Option<Order>> {
    if v.is_none() {
        return Ok(None);
    }
    let s = v.cast::<PyString>()?.to_str()?;
    Ok(Some(if s == "little" {
        Order::Little
    } else {
        Order::Big
    }))
}

fn order_key<'py>(py: Python<'py>, order: Option<Order>) -> Bound<'py, PyAny> {
    match order {
        None => py.None().into_bound(py),
        Some(Order::Big) => intern!(py, "big").clone().into_any(),
        Some(Order::Little) => intern!(py, "little").clone().into_any(),
    }
}

/// A Python expression tree (nested lists of names, operators and numbers) as JSON.
fn json_of(v: &Bound<'_, PyAny>) -> PyResult<serde_json::Value> {
    use serde_json::Value;
    Ok(if v.is_none() {
        Value::Null
    } else if let Ok(b) = v.cast::<PyBool>() {
        Value::Bool(b.is_true())
    } else if v.is_instance_of::<PyInt>() {
        if let Ok(i) = v.extract::<i64>() {
            Value::from(i)
        } else if let Ok(u) = v.extract::<u64>() {
            Value::from(u)
        } else {
            Value::from(v.extract::<f64>()?)
        }
    } else if let Ok(f) = v.cast::<PyFloat>() {
        Value::from(f.value())
    } else if let Ok(s) = v.cast::<PyString>() {
        Value::String(s.to_str()?.to_owned())
    } else if v.is_instance_of::<PyList>() || v.is_instance_of::<PyTuple>() {
        Value::Array(
            v.try_iter()?
                .map(|x| json_of(&x?))
                .collect::<PyResult<_>>()?,
        )
    } else {
        return Err(PyTypeError::new_err(format!(
            "not an expression tree: {}",
            v.repr()?
        )));
    })
}

/// The pieces joined (a field's path for messages: cheaper than `format!`, and describing
/// makes one per field that has options).
fn concat(parts: &[&str]) -> String {
    let mut s = String::with_capacity(parts.iter().map(|p| p.len()).sum());
    for p in parts {
        s.push_str(p);
    }
    s
}

/// The struct being described has a tag constant to write in its tag field, or the class's
/// own tag applies (`Missing`).
enum Tag<'py> {
    Missing,
    Given(Option<Bound<'py, PyAny>>),
}

struct Builder<'py> {
    py: Python<'py>,
    r: &'py Refs,
    limits: Bound<'py, PyAny>,
    infos: Vec<Option<Arc<Arg>>>,
    active: Vec<(Bound<'py, PyAny>, u32)>,
    owner: Option<Bound<'py, PyAny>>,
    registries: Vec<Bound<'py, PyType>>,
    /// Struct ids referred to by "ref" (recursion), so far.
    refs: Vec<u32>,
    /// The byte order the fields of the struct being described inherit.
    order: Order,
    parts: Vec<(u32, Bound<'py, super::Codec>)>,
    /// The root class, when its description is to be cached (as the schema's root).
    root_cache: Option<Bound<'py, PyAny>>,
}

/// Describes `cls` (a Struct class) for a codec under `limits` (None: the defaults).
pub(crate) fn describe<'py>(
    cls: &Bound<'py, PyAny>,
    limits: &Bound<'py, PyAny>,
) -> PyResult<Described<'py>> {
    let py = cls.py();
    // SAFETY of the lifetime: REFS lives as long as the interpreter.
    let r: &'py Refs = unsafe { &*(refs(py)? as *const Refs) };
    let Some(info) = info_of(r, cls)? else {
        return Err(errors::schema_error(
            py,
            format!("{} is not a bw.Struct subclass with fields", cls.repr()?),
        ));
    };
    let mut b = Builder {
        py,
        r,
        limits: limits.clone(),
        infos: Vec::new(),
        active: Vec::new(),
        owner: Some(cls.clone()),
        registries: Vec::new(),
        refs: Vec::new(),
        order: Order::Big,
        parts: Vec::new(),
        root_cache: None,
    };
    let name = cls.getattr(intern!(py, "__name__"))?;
    let root = b.structure(
        cls,
        &info,
        name.cast::<PyString>()?.to_str()?,
        None,
        Tag::Missing,
    )?;
    let limits = if limits.is_none() {
        LimitsDesc::default()
    } else {
        LimitsDesc {
            max_count: uint(
                &limits.getattr(intern!(py, "max_count"))?,
                "limits",
                "max_count",
            )?,
            max_len: uint(
                &limits.getattr(intern!(py, "max_len"))?,
                "limits",
                "max_len",
            )?,
            max_depth: uint(
                &limits.getattr(intern!(py, "max_depth"))?,
                "limits",
                "max_depth",
            )?,
        }
    };
    let infos: Vec<Arc<Arg>> = b
        .infos
        .into_iter()
        .map(|i| i.expect("every struct is described"))
        .collect();
    let schema = Arc::new(Schema { root, limits });
    if let Some(info) = b.root_cache {
        // The root's description is kept as the schema's root, shared with the codec.
        let frag = Fragment {
            ty: Held::Root(schema.clone()),
            sid: 0,
            infos: infos.clone(),
        };
        r.info
            .get(&info, inf::CACHE)?
            .set_item(py.None(), Bound::new(py, frag)?)?;
    }
    Ok(Described {
        schema,
        infos,
        registries: b.registries,
        parts: b.parts,
    })
}

impl<'py> Builder<'py> {
    /// `isinstance(v, t)` for the declaration classes (no `__instancecheck__` of their own).
    fn is(&self, v: &Bound<'py, PyAny>, t: &Py<PyType>) -> bool {
        is_subtype(v, t)
    }

    fn info_of(&self, v: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        info_of(self.r, v)
    }

    /// `info.fields()`, without the call once they are known (from the start when nothing
    /// is inherited and no annotation is a string: see `classbuild::new_info`).
    fn struct_fields(&self, info: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        let resolved = self.r.info.get(info, inf::FIELDS)?;
        if !resolved.is_none() {
            return Ok(resolved);
        }
        info.call_method0(intern!(self.py, "fields"))
    }

    fn structure(
        &mut self,
        cls: &Bound<'py, PyAny>,
        info: &Bound<'py, PyAny>,
        at: &str,
        order: Option<Order>,
        tag: Tag<'py>,
    ) -> PyResult<TypeDesc> {
        let py = self.py;
        if let Some((_, sid)) = self.active.iter().find(|(a, _)| a.is(cls)) {
            // Recursion; a registry variant included (its tag is its class's).
            let sid = *sid;
            self.refs.push(sid);
            return Ok(TypeDesc::Ref { id: sid });
        }
        let byteorder = order_of(&self.r.info.get(info, inf::BYTEORDER)?)?;
        let (tag, cacheable) = match tag {
            Tag::Missing => {
                let registry = self.r.info.get(info, inf::REGISTRY)?;
                if !registry.is_none() {
                    return self.registry(cls, &registry, at, order);
                }
                let cache = self.r.info.get(info, inf::CACHE)?;
                let cache = cache.cast::<PyDict>()?;
                if let Some(cached) = cache.get_item(order_key(py, order))? {
                    if let Ok(frag) = cached.cast::<Fragment>() {
                        return self.reuse(frag.get(), info, byteorder, order);
                    }
                }
                let tag = self.r.info.get(info, inf::TAG)?;
                let tag = if tag.is(self.r.missing.bind(py)) || tag.is_none() {
                    None
                } else {
                    Some(tag)
                };
                (tag, true)
            }
            Tag::Given(tag) => (tag.filter(|t| !t.is_none()), false),
        };
        let sid = self.infos.len() as u32;
        let refs = self.refs.len();
        let registries = self.registries.len();
        self.active.push((cls.clone(), sid));
        self.infos.push(None);
        let o = byteorder.or(order);
        let class_name = cls.getattr(intern!(py, "__name__"))?;
        let class_name = class_name.cast::<PyString>()?.to_str()?;
        let bitorder = self.r.info.get(info, inf::BITORDER)?;
        let bitorder = if !bitorder.is_none() && bitorder.cast::<PyString>()?.to_str()? == "lsb" {
            BitOrder::Lsb
        } else {
            BitOrder::Msb
        };
        let align = self.r.info.get(info, inf::ALIGN)?;
        let align = if align.is_truthy()? {
            Some(uint::<u64>(&align, at, "align")?)
        } else {
            None
        };
        let tag_field = self.r.info.get(info, inf::TAG_FIELD)?;
        let owner = self.owner.replace(cls.clone());
        let inherited = self.order;
        self.order = o.unwrap_or(inherited);
        let result = self.fields(info, class_name, &tag_field, tag.as_ref());
        self.owner = owner;
        self.order = inherited;
        let (fields, arg) = result?;
        self.infos[sid as usize] = Some(Arc::new(Arg {
            cls: cls.cast::<PyType>()?.clone().unbind(),
            ..arg
        }));
        self.active.pop();
        let ty = TypeDesc::Struct(StructDesc {
            id: sid,
            name: class_name.into(),
            order: o,
            bitorder,
            align,
            fields: Arc::new(fields),
        });
        // Kept for reuse unless it refers to a struct outside it (recursion through an
        // enclosing struct) or embeds a registry (which may gain variants).
        if cacheable
            && self.registries.len() == registries
            && self.refs[refs..].iter().all(|r| *r >= sid)
        {
            if self.active.is_empty() && order.is_none() {
                // The root: cached once the schema is built, without a copy.
                self.root_cache = Some(info.clone());
                return Ok(ty);
            }
            let frag = Fragment {
                ty: Held::Own(ty.clone()),
                sid,
                infos: self.infos[sid as usize..]
                    .iter()
                    .map(|i| i.as_ref().expect("described").clone())
                    .collect(),
            };
            self.r
                .info
                .get(info, inf::CACHE)?
                .set_item(order_key(py, order), Bound::new(py, frag)?)?;
        }
        Ok(ty)
    }

    /// The fields of a struct and its adapter info (the class filled in by the caller).
    fn fields(
        &mut self,
        info: &Bound<'py, PyAny>,
        class_name: &str,
        tag_field: &Bound<'py, PyAny>,
        tag: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<(Vec<FieldDesc>, Arg)> {
        let py = self.py;
        let plain = self.r.plain.bind(py);
        let missing = self.r.missing.bind(py).clone();
        let all = self.struct_fields(info)?;
        let n = all.len().unwrap_or(0);
        let mut fields = Vec::with_capacity(n);
        let mut names: Vec<Py<PyString>> = Vec::with_capacity(n);
        let mut defaults: Vec<Py<PyAny>> = Vec::with_capacity(n);
        let mut convs: Vec<(usize, Bound<'py, PyAny>, Bound<'py, PyAny>)> = Vec::new();
        for f in all.try_iter()? {
            let f = f?;
            let name = self.r.field.get(&f, 0)?.cast_into::<PyString>()?;
            let ann = self.r.field.get(&f, 1)?;
            let spec = self.r.field.get(&f, 2)?;
            let is_tag_field = !tag_field.is_none() && name.as_any().eq(tag_field)?;
            if spec.is(plain) && !is_tag_field {
                // The common case: a plain scalar (no options, no converter).
                if let Some(ty) = self.scalar_alias(&ann, None)? {
                    fields.push(FieldDesc {
                        name: Some(name.to_str()?.into()),
                        ty,
                        konst: None,
                        when: None,
                        size: None,
                        align: None,
                        checksum: None,
                    });
                    names.push(name.unbind());
                    defaults.push(py.None());
                    continue;
                }
            }
            if self.r.spec.get(&spec, opt::IS_PAD)?.is_truthy()? {
                let n = self.r.spec.get(&spec, opt::PAD_SIZE)?;
                fields.push(FieldDesc {
                    name: None,
                    ty: TypeDesc::Pad {
                        n: uint(&n, class_name, "pad")?,
                    },
                    konst: None,
                    when: None,
                    size: None,
                    align: None,
                    checksum: None,
                });
                continue;
            }
            let at = concat(&[class_name, ".", name.to_str()?]);
            let tag_const = match tag {
                Some(t) if is_tag_field => Some(self.konst(t, &at)?),
                _ => None,
            };
            let is_tag = tag_const.is_some();
            fields.push(self.field(&name, &ann, &spec, &at, tag_const)?);
            let default = if is_tag {
                tag.expect("a tag").clone()
            } else {
                let d = self.r.spec.get(&spec, opt::DEFAULT)?;
                if !d.is(&missing) {
                    d
                } else {
                    let c = self.r.spec.get(&spec, opt::CONST)?;
                    if !c.is(&missing) {
                        c
                    } else {
                        py.None().into_bound(py)
                    }
                }
            };
            if let Some((dec, enc)) = self.converter(&ann, &spec, &at)? {
                convs.push((names.len(), dec, enc));
            }
            names.push(name.unbind());
            defaults.push(default.unbind());
        }
        let (decoders, encoders) = if convs.is_empty() {
            (None, None)
        } else {
            let mut dec: Vec<Option<Py<PyAny>>> = (0..names.len()).map(|_| None).collect();
            let mut enc: Vec<Option<Py<PyAny>>> = (0..names.len()).map(|_| None).collect();
            for (i, d, e) in convs {
                dec[i] = Some(d.unbind());
                enc[i] = Some(e.unbind());
            }
            (Some(dec), Some(enc))
        };
        Ok((
            fields,
            Arg {
                cls: PyType::new::<PyAny>(py).unbind(), // replaced by the caller
                names,
                defaults,
                decoders,
                encoders,
            },
        ))
    }

    /// A struct's cached description at the next struct ids.
    fn reuse(
        &mut self,
        frag: &Fragment,
        info: &Bound<'py, PyAny>,
        byteorder: Option<Order>,
        order: Option<Order>,
    ) -> PyResult<TypeDesc> {
        let sid = self.infos.len() as u32;
        let mut ty = frag.ty().clone();
        if sid != frag.sid {
            ty.shift_ids(sid.wrapping_sub(frag.sid));
        }
        self.infos
            .extend(frag.infos.iter().map(|a| Some(a.clone())));
        // Its codec's program is this part's when compiled in the same context: the same
        // limits, and the same byte order for fields that do not say theirs.
        let codec = self.r.info.get(info, inf::CODEC)?;
        if let Ok(codec) = codec.cast_into::<super::Codec>() {
            let here = byteorder.or(order).unwrap_or(self.order);
            if here == byteorder.unwrap_or(Order::Big) {
                let limits = self.r.info.get(info, inf::LIMITS)?;
                if limits.is(&self.limits) || limits.eq(&self.limits)? {
                    self.parts.push((sid, codec));
                }
            }
        }
        Ok(ty)
    }

    fn registry(
        &mut self,
        cls: &Bound<'py, PyAny>,
        reg: &Bound<'py, PyAny>,
        at: &str,
        order: Option<Order>,
    ) -> PyResult<TypeDesc> {
        let py = self.py;
        self.registries.push(cls.cast::<PyType>()?.clone());
        let cases = reg.getattr(intern!(py, "cases"))?.cast_into::<PyDict>()?;
        let default = reg.getattr(intern!(py, "default"))?;
        if cases.is_empty() && default.is_none() {
            return Err(schema_error(
                py,
                at,
                format!(
                    "registry {} has no variants yet (declare subclasses with a tag= class keyword)",
                    cls.getattr(intern!(py, "__name__"))?
                ),
            ));
        }
        let field = reg.getattr(intern!(py, "field"))?.extract::<String>()?;
        let mut out = Vec::with_capacity(cases.len());
        for (tag, sub) in cases.iter() {
            let sub_info = self
                .info_of(&sub)?
                .ok_or_else(|| PyTypeError::new_err("a registry variant is not a Struct class"))?;
            let konst = self.konst(&tag, at)?;
            let where_ = format!("{at}[{}]", tag.repr()?);
            let ty = self.structure(&sub, &sub_info, &where_, order, Tag::Given(Some(tag)))?;
            out.push(CaseDesc { tag: konst, ty });
        }
        let default = if default.is_none() {
            None
        } else {
            let default_info = self
                .info_of(&default)?
                .ok_or_else(|| PyTypeError::new_err("a registry default is not a Struct class"))?;
            let where_ = format!("{at}[default]");
            Some(Box::new(self.structure(
                &default,
                &default_info,
                &where_,
                order,
                Tag::Given(None),
            )?))
        };
        Ok(TypeDesc::Registry {
            field,
            cases: out,
            default,
        })
    }

    fn field(
        &mut self,
        name: &Bound<'py, PyString>,
        ann: &Bound<'py, PyAny>,
        spec: &Bound<'py, PyAny>,
        at: &str,
        tag_const: Option<ConstDesc>,
    ) -> PyResult<FieldDesc> {
        let py = self.py;
        let ty = self.ty(ann, spec, at)?;
        let align = self.r.spec.get(spec, opt::ALIGN)?;
        let align = if align.is_none() {
            None
        } else {
            Some(errors::check_align_py(py, &align, at)?)
        };
        let konst = match tag_const {
            Some(c) => Some(c),
            None => {
                let c = self.r.spec.get(spec, opt::CONST)?;
                if c.is(self.r.missing.bind(py)) {
                    None
                } else {
                    Some(self.konst(&c, at)?)
                }
            }
        };
        let checksum = self.r.spec.get(spec, opt::CHECKSUM)?;
        let checksum = if checksum.is_none() {
            None
        } else {
            Some(self.checksum(&checksum, at)?)
        };
        let when = self.r.spec.get(spec, opt::WHEN)?;
        let when = if when.is_none() {
            None
        } else {
            let Ok(s) = when.cast::<PyString>() else {
                return Err(schema_error(py, at, "when= must be an expression string"));
            };
            Some(self.expr(s, at)?)
        };
        let size = self.r.spec.get(spec, opt::SIZE)?;
        let size = if size.is_none() {
            None
        } else if let Ok(s) = size.cast::<PyString>() {
            Some(self.expr(s, at)?)
        } else if size.is_instance_of::<PyInt>() && !size.is_instance_of::<PyBool>() {
            Some(serde_json::json!(["int", json_of(&size)?]))
        } else {
            return Err(schema_error(
                py,
                at,
                "size= must be an int or an expression string",
            ));
        };
        Ok(FieldDesc {
            name: Some(name.to_str()?.into()),
            ty,
            konst: konst.map(Box::new),
            when: when.map(Box::new),
            size: size.map(Box::new),
            align,
            checksum: checksum.map(Box::new),
        })
    }

    fn checksum(&self, c: &Bound<'py, PyAny>, at: &str) -> PyResult<ChecksumDesc> {
        let py = self.py;
        let (algo, over, verify): (Bound<'py, PyAny>, Bound<'py, PyAny>, Bound<'py, PyAny>) =
            c.extract()?;
        let algo = if let Ok(s) = algo.cast::<PyString>() {
            AlgoDesc::Name(s.to_str()?.to_owned())
        } else {
            let get = |n: &Bound<'py, PyString>| algo.getattr(n);
            AlgoDesc::Crc(CrcParams {
                width: uint(&get(intern!(py, "width"))?, at, "width")?,
                poly: uint(&get(intern!(py, "poly"))?, at, "poly")?,
                init: uint(&get(intern!(py, "init"))?, at, "init")?,
                refin: get(intern!(py, "refin"))?.is_truthy()?,
                refout: get(intern!(py, "refout"))?.is_truthy()?,
                xorout: uint(&get(intern!(py, "xorout"))?, at, "xorout")?,
            })
        };
        let over = if over.is_truthy()? {
            Some(over.extract::<Vec<String>>()?)
        } else {
            None
        };
        Ok(ChecksumDesc {
            algo,
            over,
            verify: verify.is_truthy()?,
        })
    }

    /// The common case of an expression, a field name, without parsing.
    fn expr(&self, source: &Bound<'py, PyString>, at: &str) -> PyResult<serde_json::Value> {
        let text = source.to_str()?;
        let name = text.trim();
        if is_identifier(name) && !KEYWORDS.contains(&name) {
            return Ok(serde_json::json!(["name", name]));
        }
        let tree = self
            .py
            .import("bytewright.expr")?
            .getattr("parse_expr")?
            .call1((source, at))?;
        json_of(&tree)
    }

    fn konst(&self, v: &Bound<'py, PyAny>, at: &str) -> PyResult<ConstDesc> {
        if v.is_instance_of::<PyInt>() {
            return match v.extract::<i128>() {
                Ok(i) => Ok(ConstDesc::Int(i)),
                Err(_) => Err(errors::schema_error(
                    self.py,
                    format!("invalid schema description: invalid integer constant {v}"),
                )),
            };
        }
        if let Ok(b) = v.cast::<PyBytes>() {
            return Ok(ConstDesc::Bytes(b.as_bytes().to_vec()));
        }
        if let Ok(b) = v.cast::<PyByteArray>() {
            return Ok(ConstDesc::Bytes(b.to_vec()));
        }
        Err(schema_error(
            self.py,
            at,
            format!("a constant must be an int or bytes, got {}", v.repr()?),
        ))
    }

    /// A scalar alias (`Annotated[int, Scalar(...)]`) as the type of a field that does not
    /// set its byte order, or None.
    fn scalar_alias(
        &self,
        ann: &Bound<'py, PyAny>,
        order: Option<Order>,
    ) -> PyResult<Option<TypeDesc>> {
        // The aliases met so far, held (so an address stays its alias) with their type: the
        // common annotations (bw.U16 ...) cost a pointer comparison.
        static ALIASES: Mutex<Vec<(Py<PyAny>, TypeDesc)>> = Mutex::new(Vec::new());
        const MAX_ALIASES: usize = 64;
        if ann.is_instance_of::<PyType>() {
            return Ok(None);
        }
        let known = |aliases: &[(Py<PyAny>, TypeDesc)]| {
            aliases
                .iter()
                .find(|(a, _)| a.as_ptr() == ann.as_ptr())
                .map(|(_, t)| t.clone())
        };
        if order.is_none() {
            if let Some(ty) = known(&ALIASES.lock().unwrap_or_else(|e| e.into_inner())) {
                return Ok(Some(ty));
            }
        }
        let Some(meta) = ann.getattr_opt(intern!(self.py, "__metadata__"))? else {
            return Ok(None);
        };
        let Ok(meta) = meta.cast::<PyTuple>() else {
            return Ok(None);
        };
        let ty = match meta.iter().next() {
            Some(m) if self.is(&m, &self.r.scalar) => self.scalar(&m, order)?,
            _ => return Ok(None),
        };
        if order.is_none() {
            let mut aliases = ALIASES.lock().unwrap_or_else(|e| e.into_inner());
            if aliases.len() < MAX_ALIASES && known(&aliases).is_none() {
                aliases.push((ann.clone().unbind(), ty.clone()));
            }
        }
        Ok(Some(ty))
    }

    fn scalar(&self, s: &Bound<'py, PyAny>, order: Option<Order>) -> PyResult<TypeDesc> {
        let py = self.py;
        let kind = s.getattr(intern!(py, "kind"))?;
        let kind = kind.cast::<PyString>()?.to_str()?;
        let width: u8 = uint(&s.getattr(intern!(py, "width"))?, "scalar", "width")?;
        Ok(match kind {
            "bool" => TypeDesc::Bool,
            "float" => TypeDesc::Float { width, order },
            _ => TypeDesc::Int {
                width,
                signed: s.getattr(intern!(py, "signed"))?.is_truthy()?,
                order,
            },
        })
    }

    /// A declaration object of a type with no parameters from the field (Varint, Bits, a
    /// field kind), or None.
    fn leaf(&self, m: &Bound<'py, PyAny>) -> PyResult<Option<TypeDesc>> {
        let py = self.py;
        if self.is(m, &self.r.varint) {
            return Ok(Some(TypeDesc::Varint {
                zigzag: m.getattr(intern!(py, "zigzag"))?.is_truthy()?,
            }));
        }
        if self.is(m, &self.r.bits) {
            return Ok(Some(TypeDesc::Bits {
                width: uint(&m.getattr(intern!(py, "width"))?, "bits", "width")?,
                signed: m.getattr(intern!(py, "signed"))?.is_truthy()?,
                boolean: m.getattr(intern!(py, "boolean"))?.is_truthy()?,
            }));
        }
        if self.is(m, &self.r.kind) {
            // A kind's declaration gives its description as JSON (see types.Kind).
            let text: String = m.call_method0(intern!(py, "describe"))?.extract()?;
            let ty: TypeDesc = serde_json::from_str(&text).map_err(|e| {
                errors::schema_error(py, format!("invalid schema description: {e}"))
            })?;
            return Ok(Some(ty));
        }
        Ok(None)
    }

    fn ty(
        &mut self,
        ann: &Bound<'py, PyAny>,
        spec: &Bound<'py, PyAny>,
        at: &str,
    ) -> PyResult<TypeDesc> {
        let py = self.py;
        let r = self.r;
        let mut ann = ann.clone();
        let given = self.r.spec.get(spec, opt::TYPE)?;
        if !given.is_none() {
            ann = given;
        }
        let mut is_class = ann.is_instance_of::<PyType>();
        if !is_class && (ann.is_instance_of::<PyString>() || is_forward_ref(&ann)?) {
            ann = self.resolve(&ann, at)?;
            is_class = ann.is_instance_of::<PyType>();
        }
        let cases = self.r.spec.get(spec, opt::CASES)?;
        let tag = self.r.spec.get(spec, opt::TAG)?;
        if !cases.is_none() || !tag.is_none() {
            return self.union(spec, &tag, &cases, at);
        }
        let byteorder = self.r.spec.get(spec, opt::BYTEORDER)?;
        let order = if byteorder.is_none() {
            None
        } else {
            let o = py
                .import("bytewright.fields")?
                .getattr("normalize_byteorder")?
                .call1((&byteorder, at))?;
            order_of(&o)?
        };
        // Only Annotated[...] has metadata (a failed lookup on a class or list[...] would
        // build an AttributeError).
        if !is_class && !ann.get_type().is(r.generic_alias.bind(py)) {
            if let Some(meta) = ann.getattr_opt(intern!(py, "__metadata__"))? {
                if let Ok(meta) = meta.cast::<PyTuple>() {
                    for m in meta.iter() {
                        if self.is(&m, &r.scalar) {
                            return self.scalar(&m, order);
                        }
                        if let Some(ty) = self.leaf(&m)? {
                            return Ok(ty);
                        }
                    }
                    let origin = ann.getattr(intern!(py, "__origin__"))?;
                    return self.ty(&origin, spec, at);
                }
            }
        }
        if self.is(&ann, &r.scalar) {
            return self.scalar(&ann, order);
        }
        if let Some(ty) = self.leaf(&ann)? {
            return Ok(ty);
        }
        let missing = r.missing.bind(py);
        let is_bytes_t = self.is(&ann, &r.bytes_t);
        if is_bytes_t || ann.is(py.get_type::<PyBytes>()) {
            let mut length = if is_bytes_t {
                ann.getattr(intern!(py, "len"))?
            } else {
                self.r.spec.get(spec, opt::LEN)?
            };
            if length.is_none() {
                let c = self.r.spec.get(spec, opt::CONST)?;
                if !c.is(missing)
                    && (c.is_instance_of::<PyBytes>() || c.is_instance_of::<PyByteArray>())
                {
                    length = c.len()?.into_bound_py_any(py)?;
                }
            }
            if length.is_none() {
                let checksum = self.r.spec.get(spec, opt::CHECKSUM)?;
                if !checksum.is_none() {
                    length = py
                        .import("bytewright.fields")?
                        .getattr("digest_size")?
                        .call1((checksum.get_item(0)?,))?;
                }
            }
            let len = self.length(&length, at, "len")?;
            return Ok(TypeDesc::Bytes {
                len,
                max: self.max(spec, opt::MAX_LEN, at)?,
            });
        }
        let is_str_t = self.is(&ann, &r.str_t);
        let is_cstr_t = self.is(&ann, &r.cstr_t);
        if is_str_t || is_cstr_t || ann.is(py.get_type::<PyString>()) {
            if is_cstr_t || self.r.spec.get(spec, opt::NUL_TERMINATED)?.is_truthy()? {
                let (max_len, enc) = if is_cstr_t {
                    (
                        ann.getattr(intern!(py, "max_len"))?,
                        ann.getattr(intern!(py, "encoding"))?,
                    )
                } else {
                    (
                        self.r.spec.get(spec, opt::MAX_LEN)?,
                        self.r.spec.get(spec, opt::ENCODING)?,
                    )
                };
                let max =
                    if max_len.is_instance_of::<PyInt>() && !max_len.is_instance_of::<PyBool>() {
                        max_len.extract::<u64>().ok()
                    } else {
                        None
                    };
                let Some(max) = max else {
                    return Err(schema_error(
                        py,
                        at,
                        "NUL-terminated text needs max_len= (an int)",
                    ));
                };
                let encoding = self.encoding(&enc, at)?;
                return Ok(TypeDesc::Cstr { max, encoding });
            }
            let (length, enc) = if is_str_t {
                (
                    ann.getattr(intern!(py, "len"))?,
                    ann.getattr(intern!(py, "encoding"))?,
                )
            } else {
                (
                    self.r.spec.get(spec, opt::LEN)?,
                    self.r.spec.get(spec, opt::ENCODING)?,
                )
            };
            let len = self.length(&length, at, "len")?;
            let encoding = self.encoding(&enc, at)?;
            return Ok(TypeDesc::Str {
                len,
                encoding,
                max: self.max(spec, opt::MAX_LEN, at)?,
            });
        }
        if ann.is(py.get_type::<PyBool>()) {
            return Ok(TypeDesc::Bool);
        }
        if let Some(info) = self.info_of(&ann)? {
            return self.structure(&ann, &info, at, order, Tag::Missing);
        }
        let is_array = self.is(&ann, &r.array_t);
        let origin = if is_array {
            None
        } else {
            ann.getattr_opt(intern!(py, "__origin__"))?
        };
        if is_array || origin.is_some_and(|o| o.is(py.get_type::<PyList>())) {
            let (item, count) = if is_array {
                (
                    ann.getattr(intern!(py, "item"))?,
                    ann.getattr(intern!(py, "count"))?,
                )
            } else {
                let item = self.r.spec.get(spec, opt::ITEM)?;
                let item = if !item.is_none() {
                    item
                } else {
                    match ann.getattr_opt(intern!(py, "__args__"))? {
                        Some(args) if args.is_truthy()? => args.get_item(0)?,
                        _ => py.None().into_bound(py),
                    }
                };
                let mut count = self.r.spec.get(spec, opt::COUNT)?;
                if count.is_none() && !self.r.spec.get(spec, opt::SIZE)?.is_none() {
                    count = r.rest.bind(py).clone();
                }
                (item, count)
            };
            if item.is_none() {
                return Err(schema_error(
                    py,
                    at,
                    "a list needs an item type, e.g. list[bw.U16]",
                ));
            }
            let item_spec = if byteorder.is_truthy()? {
                let kwargs = PyDict::new(py);
                kwargs.set_item("byteorder", &byteorder)?;
                py.import("bytewright.fields")?
                    .getattr("FieldSpec")?
                    .call((), Some(&kwargs))?
            } else {
                r.plain.bind(py).clone()
            };
            let item = self.ty(&item, &item_spec, &concat(&[at, "[]"]))?;
            let count = self.length(&count, at, "count")?;
            return Ok(TypeDesc::Array {
                item: Box::new(item),
                count,
                max: self.max(spec, opt::MAX_COUNT, at)?,
            });
        }
        Err(PyErr::from_value(
            helper(py, "unsupported")?.call1((&ann, at))?,
        ))
    }

    /// The `max_len` or `max_count` option (`opt::MAX_LEN`, `opt::MAX_COUNT`).
    fn max(&self, spec: &Bound<'py, PyAny>, option: usize, at: &str) -> PyResult<Option<u64>> {
        let v = self.r.spec.get(spec, option)?;
        if v.is_none() {
            Ok(None)
        } else {
            uint(&v, at, opt::NAMES[option]).map(Some)
        }
    }

    fn length(&self, v: &Bound<'py, PyAny>, at: &str, what: &str) -> PyResult<LenDesc> {
        let py = self.py;
        if v.is_none() {
            return Err(schema_error(
                py,
                at,
                format!(
                    "needs {what}= (a constant, an expression over earlier fields, or bw.REST)"
                ),
            ));
        }
        if v.is(self.r.rest.bind(py)) {
            return Ok(LenDesc::Rest);
        }
        if let Ok(s) = v.cast::<PyString>() {
            return Ok(LenDesc::Expr(self.expr(s, at)?));
        }
        if v.is_instance_of::<PyBool>() || !v.is_instance_of::<PyInt>() {
            return Err(schema_error(
                py,
                at,
                format!(
                    "{what}= must be an int, an expression string or bw.REST, got {}",
                    v.repr()?
                ),
            ));
        }
        if v.lt(0)? {
            return Err(schema_error(
                py,
                at,
                format!("{what}= must not be negative"),
            ));
        }
        Ok(LenDesc::Fixed(uint(v, at, what)?))
    }

    fn encoding(&self, value: &Bound<'py, PyAny>, at: &str) -> PyResult<Encoding> {
        const NAMES: [(&str, Encoding); 7] = [
            ("utf-8", Encoding::Utf8),
            ("utf8", Encoding::Utf8),
            ("ascii", Encoding::Ascii),
            ("us-ascii", Encoding::Ascii),
            ("latin-1", Encoding::Latin1),
            ("latin1", Encoding::Latin1),
            ("iso-8859-1", Encoding::Latin1),
        ];
        let name = if value.is_truthy()? {
            value.str()?.to_str()?.to_lowercase().replace('_', "-")
        } else {
            "utf-8".to_owned()
        };
        if let Some((_, e)) = NAMES.iter().find(|(n, _)| *n == name) {
            return Ok(*e);
        }
        let py = self.py;
        let kwargs = PyDict::new(py);
        kwargs.set_item("where", at)?;
        kwargs.set_item("match", &name)?;
        let options: Vec<&str> = NAMES.iter().map(|(n, _)| *n).collect();
        let e = py.import("bytewright.errors")?.getattr("unknown")?.call(
            (
                format!("unsupported encoding {}", value.repr()?),
                value,
                options,
            ),
            Some(&kwargs),
        )?;
        Err(PyErr::from_value(e))
    }

    fn union(
        &mut self,
        spec: &Bound<'py, PyAny>,
        tag: &Bound<'py, PyAny>,
        cases: &Bound<'py, PyAny>,
        at: &str,
    ) -> PyResult<TypeDesc> {
        let py = self.py;
        let Ok(tag) = tag.cast::<PyString>() else {
            return Err(schema_error(
                py,
                at,
                "a tagged union needs tag= (an expression string, usually a field name)",
            ));
        };
        let cases = match cases.cast::<PyDict>() {
            Ok(c) if !c.is_empty() => c,
            _ => {
                return Err(schema_error(
                    py,
                    at,
                    "a tagged union needs cases= (a dict from tag value to type)",
                ))
            }
        };
        let tag = self.expr(tag, at)?;
        let plain = self.r.plain.bind(py).clone();
        let mut out = Vec::with_capacity(cases.len());
        for (k, v) in cases.iter() {
            let konst = self.konst(&k, at)?;
            let ty = self.ty(&v, &plain, &format!("{at}[{}]", k.repr()?))?;
            out.push(CaseDesc { tag: konst, ty });
        }
        let default = self.r.spec.get(spec, opt::DEFAULT_CASE)?;
        let default = if default.is_none() {
            None
        } else {
            Some(Box::new(self.ty(
                &default,
                &plain,
                &format!("{at}[default]"),
            )?))
        };
        Ok(TypeDesc::Union {
            tag,
            cases: out,
            default,
        })
    }

    /// Evaluates a forward reference (a string, or `list["Node"]`'s item).
    fn resolve(&self, ann: &Bound<'py, PyAny>, at: &str) -> PyResult<Bound<'py, PyAny>> {
        let active = PyList::new(py_of(ann), self.active.iter().map(|(c, _)| c))?;
        helper(self.py, "resolve")?.call1((ann, &self.owner, active, at))
    }

    /// The (decode, encode) callables of a field, or None.
    fn converter(
        &self,
        ann: &Bound<'py, PyAny>,
        spec: &Bound<'py, PyAny>,
        at: &str,
    ) -> PyResult<Option<(Bound<'py, PyAny>, Bound<'py, PyAny>)>> {
        let py = self.py;
        let conv = self.r.spec.get(spec, opt::CONVERT)?;
        if conv.is_none() {
            // The common case: a scalar alias, a list, bytes, str, bool, a Struct class...
            if !ann.is_instance_of::<PyType>()
                || ann.is(py.get_type::<PyBytes>())
                || ann.is(py.get_type::<PyString>())
                || ann.is(py.get_type::<PyBool>())
                || self.info_of(ann)?.is_some()
            {
                return Ok(None);
            }
        }
        let pair = helper(py, "converter")?.call1((ann, spec, at))?;
        if pair.is_none() {
            return Ok(None);
        }
        Ok(Some(pair.extract()?))
    }
}

/// `isinstance(v, t)` for a class `t` whose metaclass does not define `__instancecheck__`.
fn is_subtype(v: &Bound<'_, PyAny>, t: &Py<PyType>) -> bool {
    // SAFETY: both are live type objects (a held object's type, a class we hold).
    unsafe { ffi::PyType_IsSubtype(ffi::Py_TYPE(v.as_ptr()), t.as_ptr().cast()) != 0 }
}

/// `bytewright._info.info_of(v)`: the `StructInfo` of a Struct class, or None.
fn info_of<'py>(r: &Refs, v: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
    if !is_subtype(v, &r.schema_meta) {
        return Ok(None);
    }
    let info = v.getattr(intern!(v.py(), "__bw__"))?;
    if info.is_none() || !r.info.get(&info, inf::CLS)?.is(v) {
        return Ok(None);
    }
    Ok(Some(info))
}

fn py_of<'py>(v: &Bound<'py, PyAny>) -> Python<'py> {
    v.py()
}

/// Whether `ann` is a `typing.ForwardRef` (typing is loaded when one exists).
fn is_forward_ref(ann: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = ann.py();
    static FORWARD_REF: PyOnceLock<Py<PyType>> = PyOnceLock::new();
    if let Some(t) = FORWARD_REF.get(py) {
        return ann.is_instance(t.bind(py));
    }
    let modules = py.import("sys")?.getattr("modules")?;
    let Some(typing) = modules.cast::<PyDict>()?.get_item("typing")? else {
        return Ok(false);
    };
    let t = typing.getattr("ForwardRef")?.cast_into::<PyType>()?;
    let _ = FORWARD_REF.set(py, t.clone().unbind());
    ann.is_instance(&t)
}

/// Python's keywords (`keyword.kwlist`): never a field name in an expression.
const KEYWORDS: [&str; 35] = [
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// Python's `str.isidentifier` for the names of expressions (ASCII letters, digits and `_`,
/// or any non-ASCII text, which Python then judges).
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c == '_' || c.is_ascii_alphabetic() => {}
        _ => return false,
    }
    chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
}
