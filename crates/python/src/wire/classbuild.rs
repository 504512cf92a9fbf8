//! The class-creation step of ``bw.Struct`` classes that runs for every class statement:
//! the pass over a class body's annotations (``bytewright.struct._declare``), done here in
//! one call rather than a Python loop of a few thousand instructions per field.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple, PyType};
use pyo3::{ffi, intern};

/// What ``_declare`` needs from the Python side, fixed once at import: the scalar aliases
/// (id -> Scalar), ``FieldSpec``, ``StructField``, ``PLAIN``, ``MISSING``, the set of field
/// names already checked, and the check for a name not seen yet (it raises for a reserved
/// name, else records it).
struct Ctx<'a, 'py> {
    aliases: Bound<'py, PyDict>,
    field_spec: Bound<'py, PyType>,
    struct_field: Bound<'py, PyType>,
    plain: &'a Bound<'py, PyAny>,
    missing: &'a Bound<'py, PyAny>,
    known: &'a Bound<'py, PyAny>,
    check_name: &'a Bound<'py, PyAny>,
}

/// ``declare(name, ns, class_var, ctx)``: the fields of a class body's annotations (as
/// ``StructField``s), whether any annotation is a string, and the defaults of its
/// ``__init__`` before anything is derived. Each field's value (options or a default)
/// leaves the namespace, which gets ``__slots__``: the field names in order.
#[pyfunction]
#[pyo3(signature = (name, ns, class_var, ctx))]
pub(crate) fn declare<'py>(
    name: &Bound<'py, PyAny>,
    ns: &Bound<'py, PyDict>,
    class_var: &Bound<'py, PyAny>,
    ctx: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyTuple>> {
    let py = ns.py();
    let items: [Bound<'py, PyAny>; 7] = [
        ctx.get_item(0)?,
        ctx.get_item(1)?,
        ctx.get_item(2)?,
        ctx.get_item(3)?,
        ctx.get_item(4)?,
        ctx.get_item(5)?,
        ctx.get_item(6)?,
    ];
    let c = Ctx {
        aliases: items[0].cast::<PyDict>()?.clone(),
        field_spec: items[1].cast::<PyType>()?.clone(),
        struct_field: items[2].cast::<PyType>()?.clone(),
        plain: &items[3],
        missing: &items[4],
        known: &items[5],
        check_name: &items[6],
    };
    let declared = PyList::empty(py);
    let defaults = PyDict::new(py);
    let slots = PyList::empty(py);
    let mut strings = false;
    let mut field = |fname: &Bound<'py, PyAny>, ann: &Bound<'py, PyAny>| {
        one_field(
            &c,
            name,
            ns,
            class_var,
            fname,
            ann,
            &declared,
            &defaults,
            &slots,
            &mut strings,
        )
    };
    if let Some(annotations) = ns.get_item(intern!(py, "__annotations__"))? {
        if let Ok(annotations) = annotations.cast::<PyDict>() {
            for (fname, ann) in annotations.iter() {
                field(&fname, &ann)?;
            }
        } else {
            for item in annotations.call_method0(intern!(py, "items"))?.try_iter()? {
                let (fname, ann): (Bound<'py, PyAny>, Bound<'py, PyAny>) = item?.extract()?;
                field(&fname, &ann)?;
            }
        }
    }
    ns.set_item(intern!(py, "__slots__"), PyTuple::new(py, slots.iter())?)?;
    PyTuple::new(
        py,
        [
            PyTuple::new(py, declared.iter())?.into_any(),
            PyBool::new(py, strings).to_owned().into_any(),
            defaults.into_any(),
        ],
    )
}

#[allow(clippy::too_many_arguments)]
fn one_field<'py>(
    c: &Ctx<'_, 'py>,
    name: &Bound<'py, PyAny>,
    ns: &Bound<'py, PyDict>,
    class_var: &Bound<'py, PyAny>,
    fname: &Bound<'py, PyAny>,
    ann: &Bound<'py, PyAny>,
    declared: &Bound<'py, PyList>,
    defaults: &Bound<'py, PyDict>,
    slots: &Bound<'py, PyList>,
    strings: &mut bool,
) -> PyResult<()> {
    let py = ns.py();
    let id = ann.as_ptr() as usize;
    if c.aliases.contains(id)? {
        // bw.U16 and the like: neither a string nor a ClassVar.
    } else if let Ok(s) = ann.cast_exact::<PyString>() {
        if s.to_cow()?.starts_with("ClassVar") {
            return Ok(());
        }
        *strings = true;
    } else if !class_var.is_none()
        && !ann.is_instance_of::<PyType>() // a class has no __origin__: no failed lookup
        && ann
            .getattr_opt(intern!(py, "__origin__"))?
            .is_some_and(|o| o.is(class_var))
    {
        return Ok(());
    }
    // The field's value leaves the namespace (ns.pop(fname, MISSING)).
    let value = match ns.get_item(fname)? {
        Some(v) => {
            ns.del_item(fname)?;
            v
        }
        None => c.missing.clone(),
    };
    let spec = if value.is_instance(&c.field_spec)? {
        value
    } else if value.is(c.missing) {
        c.plain.clone()
    } else {
        let kwargs = PyDict::new(py);
        kwargs.set_item(intern!(py, "default"), value)?;
        c.field_spec.call((), Some(&kwargs))?.into_any()
    };
    // A StructField without a call of its __init__ (three slot stores, no frame).
    let sf = new_object(&c.struct_field)?;
    set_slot(&sf, intern!(py, "name"), fname)?;
    set_slot(&sf, intern!(py, "annotation"), ann)?;
    set_slot(&sf, intern!(py, "spec"), &spec)?;
    declared.append(sf)?;
    if !spec.is(c.plain) {
        if spec.getattr(intern!(py, "is_pad"))?.is_truthy()? {
            return Ok(());
        }
        let default = spec.getattr(intern!(py, "default"))?;
        if !default.is(c.missing) {
            defaults.set_item(fname, default)?;
        } else {
            let konst = spec.getattr(intern!(py, "const"))?;
            if !konst.is(c.missing) {
                defaults.set_item(fname, konst)?;
            } else if !spec.getattr(intern!(py, "when"))?.is_none() {
                defaults.set_item(fname, py.None())?;
            }
        }
    }
    if !c.known.contains(fname)? {
        // Not seen yet: the reserved-name check (raises, or remembers the name).
        c.check_name.call1((name, fname))?;
    }
    slots.append(fname)
}

/// ``new_info(ctx, cls, declared, byteorder, bitorder, align, limits, registry, tag, localns,
/// codec)``: the frozen ``StructInfo`` of a new class (see ``StructInfo.__new__``), its slots
/// stored past its ``__setattr__``. ``ctx`` is ``(StructInfo, Registry, frozenset(),
/// SchemaMeta)``.
#[pyfunction]
#[pyo3(signature = (ctx, cls, declared, byteorder, bitorder, align, limits, registry, tag, localns, codec))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn new_info<'py>(
    ctx: &Bound<'py, PyTuple>,
    cls: &Bound<'py, PyType>,
    declared: &Bound<'py, PyAny>,
    byteorder: &Bound<'py, PyAny>,
    bitorder: &Bound<'py, PyAny>,
    align: &Bound<'py, PyAny>,
    limits: &Bound<'py, PyAny>,
    registry: &Bound<'py, PyAny>,
    tag: &Bound<'py, PyAny>,
    localns: &Bound<'py, PyAny>,
    codec: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = cls.py();
    let info_type = ctx.get_item(0)?.cast_into::<PyType>()?;
    let registry_type = ctx.get_item(1)?;
    let nothing = ctx.get_item(2)?;
    let schema_meta = ctx.get_item(3)?;
    // The infos of the Struct classes it derives from, nearest first (``object`` ends every
    // MRO and is never a Struct class).
    let mro = cls
        .getattr(intern!(py, "__mro__"))?
        .cast_into::<PyTuple>()?;
    let mut bases: Vec<Bound<'py, PyAny>> = Vec::new();
    for b in mro.iter().skip(1).take(mro.len().saturating_sub(2)) {
        if b.is_instance(&schema_meta)? {
            let bw = b.getattr(intern!(py, "__bw__"))?;
            if !bw.is_none() && bw.getattr(intern!(py, "cls"))?.is(&b) {
                bases.push(bw);
            }
        }
    }
    let base = bases.first();
    // ``given or base.attr``: a value not given (or falsy) is the nearest base's.
    let inherit =
        |given: &Bound<'py, PyAny>, attr: &Bound<'py, PyString>| -> PyResult<Bound<'py, PyAny>> {
            if given.is_truthy()? {
                return Ok(given.clone());
            }
            match base {
                Some(b) => b.getattr(attr),
                None => Ok(py.None().into_bound(py)),
            }
        };
    let info = new_object(&info_type)?;
    let none = py.None().into_bound(py);
    let reg = if registry.is_none() {
        none.clone()
    } else {
        registry_type.call1((registry,))?
    };
    set_slot(&info, intern!(py, "cls"), cls.as_any())?;
    set_slot(
        &info,
        intern!(py, "name"),
        &cls.getattr(intern!(py, "__name__"))?,
    )?;
    set_slot(&info, intern!(py, "declared"), declared)?;
    set_slot(
        &info,
        intern!(py, "byteorder"),
        &inherit(byteorder, intern!(py, "byteorder"))?,
    )?;
    set_slot(
        &info,
        intern!(py, "bitorder"),
        &inherit(bitorder, intern!(py, "bitorder"))?,
    )?;
    set_slot(&info, intern!(py, "align"), align)?;
    set_slot(
        &info,
        intern!(py, "limits"),
        &inherit(limits, intern!(py, "limits"))?,
    )?;
    set_slot(&info, intern!(py, "registry"), &reg)?;
    set_slot(
        &info,
        intern!(py, "tag_field"),
        &inherit(registry, intern!(py, "tag_field"))?,
    )?;
    set_slot(&info, intern!(py, "tag"), tag)?;
    set_slot(&info, intern!(py, "localns"), localns)?;
    set_slot(&info, intern!(py, "codec"), codec)?;
    set_slot(&info, intern!(py, "derived"), &nothing)?;
    set_slot(&info, intern!(py, "compare"), &none)?;
    // Nothing inherited and no annotation to evaluate: the fields are the declared ones as
    // they are, known now (``fields()`` resolves the others when first asked).
    let mut resolved = bases.is_empty() && declared.is_instance_of::<PyTuple>();
    if resolved {
        for d in declared.try_iter()? {
            if d?
                .getattr(intern!(py, "annotation"))?
                .is_instance_of::<PyString>()
            {
                resolved = false;
                break;
            }
        }
    }
    set_slot(
        &info,
        intern!(py, "_fields"),
        if resolved { declared } else { &none },
    )?;
    set_slot(&info, intern!(py, "_cache"), PyDict::new(py).as_any())?;
    set_slot(
        &info,
        intern!(py, "_bases"),
        PyTuple::new(py, bases)?.as_any(),
    )?;
    Ok(info)
}

/// ``new_spec(ctx, options)``: ``FieldSpec(**options)`` for ``bw.field``, its slots stored past
/// its ``__setattr__``. ``ctx`` is ``(FieldSpec, {option: slot index}, the slot values of
/// FieldSpec())``; None for ``nul_terminated`` is False. An unknown option gives None: the
/// caller's ``FieldSpec(**options)`` reports it.
#[pyfunction]
#[pyo3(signature = (ctx, options))]
pub(crate) fn new_spec<'py>(
    ctx: &Bound<'py, PyTuple>,
    options: &Bound<'py, PyDict>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = ctx.py();
    let spec_type = ctx.get_item(0)?.cast_into::<PyType>()?;
    let index = ctx.get_item(1)?.cast_into::<PyDict>()?;
    let plain = ctx.get_item(2)?.cast_into::<PyTuple>()?;
    let names = spec_type
        .getattr(intern!(py, "__slots__"))?
        .cast_into::<PyTuple>()?;
    let mut values: Vec<Bound<'py, PyAny>> = plain.iter().collect();
    if values.len() != names.len() {
        return Ok(None);
    }
    for (k, v) in options.iter() {
        let Some(i) = index.get_item(&k)? else {
            return Ok(None);
        };
        let i: usize = i.extract()?;
        if i >= values.len() {
            return Ok(None);
        }
        values[i] = if v.is_none() && k.cast::<PyString>()?.to_cow()? == "nul_terminated" {
            PyBool::new(py, false).to_owned().into_any()
        } else {
            v
        };
    }
    let spec = new_object(&spec_type)?;
    for (name, v) in names.iter().zip(values.iter()) {
        set_slot(&spec, name.cast::<PyString>()?, v)?;
    }
    Ok(Some(spec))
}

/// A new instance of a slotted Python class, its slots empty, without calling its
/// ``__new__`` or ``__init__`` (as ``object.__new__(cls)``).
pub(crate) fn new_object<'py>(cls: &Bound<'py, PyType>) -> PyResult<Bound<'py, PyAny>> {
    let tp = cls.as_ptr().cast::<ffi::PyTypeObject>();
    // SAFETY: `tp` is a live type object (borrowed through `cls`); its tp_alloc gives a new
    // reference to a zero-filled instance (or NULL with an exception set), which
    // `from_owned_ptr_or_err` takes over.
    unsafe {
        let alloc = (*tp).tp_alloc.unwrap_or(ffi::PyType_GenericAlloc);
        Bound::from_owned_ptr_or_err(cls.py(), alloc(tp, 0))
    }
}

/// Stores a slot through its descriptor, past the class's own ``__setattr__`` (which a
/// frozen class makes refuse every write).
pub(crate) fn set_slot(
    obj: &Bound<'_, PyAny>,
    name: &Bound<'_, PyString>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    // SAFETY: the three pointers are live objects borrowed for the call; the function
    // borrows them and returns -1 with an exception set on failure.
    let rc = unsafe { ffi::PyObject_GenericSetAttr(obj.as_ptr(), name.as_ptr(), value.as_ptr()) };
    if rc < 0 {
        return Err(PyErr::fetch(obj.py()));
    }
    Ok(())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(declare, m)?)?;
    m.add_function(wrap_pyfunction!(new_info, m)?)?;
    m.add_function(wrap_pyfunction!(new_spec, m)?)?;
    Ok(())
}
