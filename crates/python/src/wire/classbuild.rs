//! The class-creation steps of ``bw.Struct`` classes that run for every class statement: the
//! pass over a class body's annotations (``declare``), its ``StructInfo`` (``new_info``), the
//! compile step (``compile_info``) and ``bw.field``'s ``FieldSpec`` (``new_spec``), each done
//! here in one call rather than Python loops of a few thousand instructions per field.

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFrozenSet, PyList, PyString, PyTuple, PyType};
use pyo3::{ffi, intern, PyTraverseError, PyVisit};

use crate::cpython;

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
    field_layout: Option<&'static Layout>,
}

/// ``declare(name, ns, class_var, ctx)``: the fields of a class body's annotations (as
/// ``StructField``s), whether any annotation is a string, and the defaults of its
/// ``__init__`` before anything is derived. Each field's value (options or a default)
/// leaves the namespace, which gets ``__slots__``: the field names in order.
#[pyfunction]
#[pyo3(signature = (name, bases, ns, class_var, ctx))]
pub(crate) fn declare<'py>(
    name: &Bound<'py, PyAny>,
    bases: &Bound<'py, PyTuple>,
    ns: &Bound<'py, PyDict>,
    class_var: &Bound<'py, PyAny>,
    ctx: &Bound<'py, PyTuple>,
) -> PyResult<Bound<'py, PyTuple>> {
    let py = ns.py();
    let schema_meta = ctx.get_item(7)?;
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
        field_layout: Layout::of(&FIELD_LAYOUT, items[2].cast::<PyType>()?)?,
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
    let slots = PyTuple::new(py, slots.iter())?;
    ns.set_item(intern!(py, "__slots__"), &slots)?;
    if !declared.is_empty() && ns.contains(intern!(py, "__module__"))? {
        // Its fields are all its own (no base has any): its __init__ goes in with the class
        // (setting it on the class later costs more than making it); pack's derived fields
        // join its defaults once compiled. Its keywords are its slots (what ``_init_args``
        // gives before anything is derived).
        let mut own = true;
        for b in bases.iter() {
            if info_of(&b, &schema_meta)?.is_some() {
                own = false;
                break;
            }
        }
        let qualname = match ns.get_item(intern!(py, "__qualname__"))? {
            Some(q) => q.cast_into::<PyString>().ok(),
            None => name.cast::<PyString>().ok().cloned(),
        };
        if let (true, Some(qualname)) = (own, qualname) {
            // An ``__init__`` written in the class body is kept (as dataclasses keep one).
            if !ns.contains(intern!(py, "__init__"))? {
                let init = StructInit::new(&qualname, slots.as_any(), &defaults)?;
                ns.set_item(intern!(py, "__init__"), Bound::new(py, init)?)?;
            }
            ns.set_item(intern!(py, "__match_args__"), &slots)?;
        }
    }
    PyTuple::new(
        py,
        [
            PyTuple::new(py, declared.iter())?.into_any(),
            PyBool::new(py, strings).to_owned().into_any(),
        ],
    )
}

/// The ``StructInfo`` of a Struct class (its own ``__bw__``: ``bw.Struct`` and a class
/// without fields have none), as ``bytewright._info.info_of``.
fn info_of<'py>(
    b: &Bound<'py, PyAny>,
    schema_meta: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyAny>>> {
    let py = b.py();
    if b.is_instance(schema_meta)? {
        let bw = b.getattr(intern!(py, "__bw__"))?;
        if !bw.is_none() && bw.getattr(intern!(py, "cls"))?.is(b) {
            return Ok(Some(bw));
        }
    }
    Ok(None)
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
    set_in(c.field_layout, &sf, intern!(py, "name"), fname)?;
    set_in(c.field_layout, &sf, intern!(py, "annotation"), ann)?;
    set_in(c.field_layout, &sf, intern!(py, "spec"), &spec)?;
    declared.append(sf)?;
    if !spec.is(c.plain) {
        if spec_attr(&spec, intern!(py, "is_pad"))?.is_truthy()? {
            return Ok(());
        }
        let default = spec_attr(&spec, intern!(py, "default"))?;
        if !default.is(c.missing) {
            defaults.set_item(fname, default)?;
        } else {
            let konst = spec_attr(&spec, intern!(py, "const"))?;
            if !konst.is(c.missing) {
                defaults.set_item(fname, konst)?;
            } else if !spec_attr(&spec, intern!(py, "when"))?.is_none() {
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

/// An option of a ``FieldSpec``, read straight from its slot where its layout is known.
fn spec_attr<'py>(
    spec: &Bound<'py, PyAny>,
    name: &Bound<'py, PyString>,
) -> PyResult<Bound<'py, PyAny>> {
    match SPEC_LAYOUT
        .get(spec.py())
        .and_then(Option::as_ref)
        .and_then(|l| l.get(spec, name))
    {
        Some(v) => Ok(v),
        None => spec.getattr(name),
    }
}

/// ``new_info(ctx, cls, declared, byteorder, bitorder, align, limits, registry, tag, localns,
/// codec)``: the frozen ``StructInfo`` of a new class (see ``StructInfo.__new__``), its slots
/// stored past its ``__setattr__``. ``ctx`` is ``(StructInfo, Registry, frozenset(),
/// SchemaMeta, Pending, codec_of)``. Without ``codec`` (the metaclass's call) the codec is a
/// ``Pending(cls, codec_of)`` and the info becomes the class's ``__bw__``.
#[pyfunction]
#[pyo3(signature = (ctx, cls, declared, byteorder, bitorder, align, limits, registry, tag, localns, codec=None))]
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
    codec: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = cls.py();
    let pending;
    let for_class = codec.is_none();
    let codec = match codec {
        Some(c) => c,
        None => {
            // Pending(cls, codec_of), its slots stored without a call of its __init__.
            pending = new_object(ctx.get_item(4)?.cast::<PyType>()?)?;
            set_slot(&pending, intern!(py, "_cls"), cls.as_any())?;
            set_slot(&pending, intern!(py, "_compile"), &ctx.get_item(5)?)?;
            &pending
        }
    };
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
        if let Some(bw) = info_of(&b, &schema_meta)? {
            bases.push(bw);
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
    let il = Layout::of(&INFO_LAYOUT, &info_type)?;
    let none = py.None().into_bound(py);
    let reg = if registry.is_none() {
        none.clone()
    } else {
        registry_type.call1((registry,))?
    };
    set_in(il, &info, intern!(py, "cls"), cls.as_any())?;
    set_in(
        il,
        &info,
        intern!(py, "name"),
        &cls.getattr(intern!(py, "__name__"))?,
    )?;
    set_in(il, &info, intern!(py, "declared"), declared)?;
    set_in(
        il,
        &info,
        intern!(py, "byteorder"),
        &inherit(byteorder, intern!(py, "byteorder"))?,
    )?;
    set_in(
        il,
        &info,
        intern!(py, "bitorder"),
        &inherit(bitorder, intern!(py, "bitorder"))?,
    )?;
    set_in(il, &info, intern!(py, "align"), align)?;
    set_in(
        il,
        &info,
        intern!(py, "limits"),
        &inherit(limits, intern!(py, "limits"))?,
    )?;
    set_in(il, &info, intern!(py, "registry"), &reg)?;
    set_in(
        il,
        &info,
        intern!(py, "tag_field"),
        &inherit(registry, intern!(py, "tag_field"))?,
    )?;
    set_in(il, &info, intern!(py, "tag"), tag)?;
    set_in(il, &info, intern!(py, "localns"), localns)?;
    set_in(il, &info, intern!(py, "codec"), codec)?;
    set_in(il, &info, intern!(py, "derived"), &nothing)?;
    set_in(il, &info, intern!(py, "compare"), &none)?;
    // Nothing inherited and no annotation to evaluate: the fields are the declared ones as
    // they are, known now (``fields()`` resolves the others when first asked).
    let mut resolved = bases.is_empty() && declared.is_instance_of::<PyTuple>();
    if resolved {
        let fl = FIELD_LAYOUT.get(py).and_then(Option::as_ref);
        for d in declared.cast::<PyTuple>()?.iter() {
            let ann = match fl.and_then(|l| l.get(&d, intern!(py, "annotation"))) {
                Some(a) => a,
                None => d.getattr(intern!(py, "annotation"))?,
            };
            if ann.is_instance_of::<PyString>() {
                resolved = false;
                break;
            }
        }
    }
    set_in(
        il,
        &info,
        intern!(py, "_fields"),
        if resolved { declared } else { &none },
    )?;
    set_in(il, &info, intern!(py, "_cache"), PyDict::new(py).as_any())?;
    set_in(
        il,
        &info,
        intern!(py, "_bases"),
        PyTuple::new(py, bases)?.as_any(),
    )?;
    if for_class {
        set_type_attr(cls, intern!(py, "__bw__"), &info)?;
    }
    Ok(info)
}

/// ``compile_info(compile, ctx, info)``: compiles the typed codec of a class (``compile`` is
/// ``_native.compile_struct``, as the module holds it when called),
/// records it and its derived fields in the class's ``StructInfo``, and makes ready what
/// ``__init__`` and ``==`` need; returns the codec. ``ctx`` is ``(None, attrgetter,
/// _no_fields, note_registries, install_methods)``: the registry bases the codec embeds go to
/// ``note_registries(info, bases)``; a class whose ``__init__`` was not made with it (one with
/// Struct bases, a user's own) goes to ``install_methods(info, derived)``.
#[pyfunction]
#[pyo3(signature = (compile, ctx, info))]
pub(crate) fn compile_info<'py>(
    compile: &Bound<'py, PyAny>,
    ctx: &Bound<'py, PyTuple>,
    info: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = info.py();
    let cls = info.getattr(intern!(py, "cls"))?;
    let used = PyList::empty(py);
    let codec = compile.call1((&cls, true, info.getattr(intern!(py, "limits"))?, &used))?;
    if !used.is_empty() {
        ctx.get_item(3)?.call1((info, &used))?;
    }
    let names: Vec<String> = codec
        .call_method1(intern!(py, "derived_fields"), (0,))?
        .extract()?;
    let derived = PyFrozenSet::new(py, &names)?;
    let il = Layout::of(&INFO_LAYOUT, &info.get_type())?;
    set_in(il, info, intern!(py, "codec"), &codec)?;
    set_in(il, info, intern!(py, "derived"), derived.as_any())?;
    // The class's own __init__, made with the class (``type(init) is StructInit``).
    let cls = cls.cast_into::<PyType>()?;
    let tp = cls.as_type_ptr();
    // SAFETY: `tp` is a live type (held by `cls`); PyDict_GetItemWithError returns a borrowed
    // reference or NULL (an exception set only on error), taken as a new reference at once.
    let init = unsafe {
        let dict = (*tp).tp_dict;
        if dict.is_null() {
            None
        } else {
            let v = ffi::PyDict_GetItemWithError(dict, intern!(py, "__init__").as_ptr());
            if v.is_null() {
                if let Some(e) = PyErr::take(py) {
                    return Err(e);
                }
                None
            } else {
                Some(Bound::from_borrowed_ptr(py, v))
            }
        }
    };
    let own = init.filter(|i| i.is_exact_instance_of::<StructInit>());
    let bases_empty = info
        .getattr(intern!(py, "_bases"))?
        .cast::<PyTuple>()
        .is_ok_and(|b| b.is_empty());
    let (Some(init), true) = (own, bases_empty) else {
        ctx.get_item(4)?.call1((info, &derived))?;
        return Ok(codec);
    };
    let init = init.cast_into::<StructInit>()?;
    let fields = init.get().names.bind(py).clone();
    if !names.is_empty() {
        init.get().derive(derived.as_any())?;
    }
    // What ``==`` compares: the fields pack does not compute, as a tuple.
    let compared: Vec<Bound<'py, PyAny>> = if names.is_empty() {
        fields.iter().collect()
    } else {
        let mut kept = Vec::new();
        for f in fields.iter() {
            if !derived.contains(&f)? {
                kept.push(f);
            }
        }
        kept
    };
    let attrgetter = ctx.get_item(1)?;
    let compare = match compared.as_slice() {
        [] => ctx.get_item(2)?,
        // A 1-tuple keeps tuple equality (identity first, as for NaN).
        [one] => attrgetter.call1((one, one))?,
        _ => attrgetter.call1(PyTuple::new(py, &compared)?)?,
    };
    set_in(il, info, intern!(py, "compare"), &compare)?;
    Ok(codec)
}

/// Sets an attribute of a class straight in its dict (a name no type slot is called by:
/// ``type.__setattr__`` would look for slots to update), then invalidates its lookup cache as
/// the C API asks after such a change.
fn set_type_attr(
    cls: &Bound<'_, PyType>,
    name: &Bound<'_, PyString>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let tp = cls.as_type_ptr();
    // SAFETY: `tp` is a live heap type (borrowed through `cls`) whose tp_dict is its dict;
    // PyDict_SetItem borrows the key and value and returns -1 with an exception set on
    // failure. PyType_Modified is what the C API asks for after changing a type's dict.
    unsafe {
        let dict = (*tp).tp_dict;
        if dict.is_null() {
            return cls.setattr(name, value);
        }
        if ffi::PyDict_SetItem(dict, name.as_ptr(), value.as_ptr()) < 0 {
            return Err(PyErr::fetch(cls.py()));
        }
        ffi::PyType_Modified(tp);
    }
    Ok(())
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
    if let Some(layout) = Layout::of(&SPEC_LAYOUT, &spec_type)? {
        if layout.slots.len() == values.len() {
            for ((_, off), v) in layout.slots.iter().zip(values.iter()) {
                // SAFETY: `spec` is a new instance of exactly the layout's type; `off` is
                // one of its object member slots (NULL until now).
                unsafe { store_at(&spec, *off, v.clone()) };
            }
            return Ok(Some(spec));
        }
    }
    for (name, v) in names.iter().zip(values.iter()) {
        set_slot(&spec, name.cast::<PyString>()?, v)?;
    }
    Ok(Some(spec))
}

/// Where the ``__slots__`` of one of bytewright's own slotted classes (``StructInfo``,
/// ``StructField``, ``FieldSpec``) sit in an instance, found once per process where CPython
/// internals are allowed: a store is then a pointer write, not a type lookup and a descriptor
/// call. The type is held, so its address stays its own.
pub(crate) struct Layout {
    ty: Py<PyType>,
    /// The slot names (interned, as a class's ``__slots__`` are) and their offsets, in order.
    slots: Vec<(Py<PyString>, isize)>,
}

impl Layout {
    /// The layout of `ty` (every name of its ``__slots__`` a writable object member), made on
    /// first use; None on the portable path or for a class it cannot describe.
    pub(crate) fn of<'a>(
        cell: &'a PyOnceLock<Option<Layout>>,
        ty: &Bound<'_, PyType>,
    ) -> PyResult<Option<&'a Layout>> {
        let py = ty.py();
        let layout = cell.get_or_try_init(py, || -> PyResult<Option<Layout>> {
            let names = ty.getattr(intern!(py, "__slots__"))?;
            let Ok(names) = names.cast::<PyTuple>() else {
                return Ok(None);
            };
            let mut slots = Vec::with_capacity(names.len());
            for n in names.iter() {
                let Ok(n) = n.cast_into_exact::<PyString>() else {
                    return Ok(None);
                };
                let n = PyString::intern(py, &n.to_cow()?);
                // SAFETY: `ty` is a live type, `n` a live exact str, the GIL held.
                let Some(off) = (unsafe { cpython::member_slot(ty.as_type_ptr(), n.as_ptr()) })
                else {
                    return Ok(None);
                };
                slots.push((n.unbind(), off));
            }
            Ok(Some(Layout {
                ty: ty.clone().unbind(),
                slots,
            }))
        })?;
        Ok(layout.as_ref().filter(|l| l.ty.as_ptr() == ty.as_ptr()))
    }

    /// The value in the slot `name` of `obj` (an instance of exactly this layout's type), or
    /// None (anything else, or an empty slot: read it as an attribute).
    pub(crate) fn get<'py>(
        &self,
        obj: &Bound<'py, PyAny>,
        name: &Bound<'_, PyString>,
    ) -> Option<Bound<'py, PyAny>> {
        if obj.get_type_ptr() != self.ty.as_ptr().cast::<ffi::PyTypeObject>() {
            return None;
        }
        let (_, off) = self
            .slots
            .iter()
            .find(|(n, _)| n.as_ptr() == name.as_ptr())?;
        // SAFETY: `obj`'s type is exactly the one whose member slot sits at `off` (the type
        // held since); the slot holds a strong reference or NULL, taken as a new reference.
        unsafe {
            let v = *obj
                .as_ptr()
                .cast::<u8>()
                .offset(*off)
                .cast::<*mut ffi::PyObject>();
            Bound::from_borrowed_ptr_or_opt(obj.py(), v)
        }
    }

    /// Stores `value` in the slot `name` of `obj` (an instance of exactly this layout's type;
    /// anything else goes through ``set_slot``).
    pub(crate) fn set(
        &self,
        obj: &Bound<'_, PyAny>,
        name: &Bound<'_, PyString>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        if obj.get_type_ptr() == self.ty.as_ptr().cast::<ffi::PyTypeObject>() {
            if let Some((_, off)) = self.slots.iter().find(|(n, _)| n.as_ptr() == name.as_ptr()) {
                // SAFETY: `obj`'s type is exactly the one whose member slot sits at `off`
                // (found when the layout was made, the type held since); the slot holds a
                // strong reference or NULL. The new value's reference moves in before the old
                // one is released (which may run code).
                unsafe { store_at(obj, *off, value.clone()) };
                return Ok(());
            }
        }
        set_slot(obj, name, value)
    }
}

/// Moves `value` into the object member slot at byte offset `off` of `obj`, then releases
/// the value it held (which may run code).
///
/// # Safety
/// `off` is the offset of an object member slot of `obj`'s layout, holding a strong
/// reference or NULL; the GIL is held.
unsafe fn store_at(obj: &Bound<'_, PyAny>, off: isize, value: Bound<'_, PyAny>) {
    let slot = obj
        .as_ptr()
        .cast::<u8>()
        .offset(off)
        .cast::<*mut ffi::PyObject>();
    let old = *slot;
    *slot = value.into_ptr();
    ffi::Py_XDECREF(old);
}

/// ``layout.set`` with a layout, else ``set_slot``.
fn set_in(
    layout: Option<&Layout>,
    obj: &Bound<'_, PyAny>,
    name: &Bound<'_, PyString>,
    value: &Bound<'_, PyAny>,
) -> PyResult<()> {
    match layout {
        Some(l) => l.set(obj, name, value),
        None => set_slot(obj, name, value),
    }
}

static SPEC_LAYOUT: PyOnceLock<Option<Layout>> = PyOnceLock::new();
static FIELD_LAYOUT: PyOnceLock<Option<Layout>> = PyOnceLock::new();
static INFO_LAYOUT: PyOnceLock<Option<Layout>> = PyOnceLock::new();

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
    let tp = obj.get_type_ptr();
    // SAFETY: `tp` is the live type of `obj`, `name` a live str, the GIL held.
    if let Some(off) = unsafe { cpython::member_slot(tp, name.as_ptr()) } {
        // SAFETY: `off` is the offset of an object member slot of `obj`'s layout (found on
        // its type's MRO, owned by the type or a base); the slot holds a strong reference or
        // NULL. The new value's reference moves in before the old one is released (which may
        // run code), as member_set does.
        unsafe { store_at(obj, off, value.clone()) };
        return Ok(());
    }
    // SAFETY: the three pointers are live objects borrowed for the call; the function
    // borrows them and returns -1 with an exception set on failure.
    let rc = unsafe { ffi::PyObject_GenericSetAttr(obj.as_ptr(), name.as_ptr(), value.as_ptr()) };
    if rc < 0 {
        return Err(PyErr::fetch(obj.py()));
    }
    Ok(())
}

/// The keyword ``__init__`` of a Struct class: ``def __init__(self, *, a, b=default, ...)``
/// storing each keyword in its attribute, in one native call. It knows the field names and
/// their defaults; ``derive`` adds the fields pack computes to the defaults (``None``) once the
/// class is compiled. Called through the class it binds like a function (its type is a
/// method descriptor: ``self`` comes first).
#[pyclass(frozen, module = "bytewright", name = "StructInit")]
pub(crate) struct StructInit {
    qualname: Py<PyString>,
    names: Py<PyTuple>,
    defaults: Py<PyDict>,
}

#[pymethods]
impl StructInit {
    /// Its name, field names and defaults (a default may refer back to the class).
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.qualname)?;
        visit.call(&self.names)?;
        visit.call(&self.defaults)
    }

    #[new]
    #[pyo3(signature = (qualname, names, defaults))]
    fn new(
        qualname: &Bound<'_, PyString>,
        names: &Bound<'_, PyAny>,
        defaults: &Bound<'_, PyDict>,
    ) -> PyResult<Self> {
        let py = qualname.py();
        let names = match names.cast::<PyTuple>() {
            Ok(t) => t.clone(),
            Err(_) => PyTuple::new(py, names.try_iter()?.collect::<PyResult<Vec<_>>>()?)?,
        };
        // Exact strs (the member lookup wants them): a str subclass becomes its str value.
        let names = if names.iter().all(|n| n.is_exact_instance_of::<PyString>()) {
            names
        } else {
            let exact = names
                .iter()
                .map(|n| Ok(PyString::new(py, &n.cast::<PyString>()?.to_cow()?)))
                .collect::<PyResult<Vec<_>>>()?;
            PyTuple::new(py, exact)?
        };
        Ok(StructInit {
            qualname: qualname.clone().unbind(),
            names: names.unbind(),
            defaults: defaults.copy()?.unbind(),
        })
    }

    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<()> {
        let py = args.py();
        let defaults = self.defaults.bind(py);
        let names = self.names.bind(py);
        let n = names.len();
        // Every keyword matched to its field first (by identity, else by equality), as a
        // Python function binds its arguments: nothing is stored unless all are right.
        let mut values: Vec<Option<Bound<'_, PyAny>>> = vec![None; n];
        if let Some(kw) = kwargs {
            for (k, v) in kw.iter() {
                let mut at = None;
                for (i, name) in names.iter_borrowed().enumerate() {
                    if name.is(&k) {
                        at = Some(i);
                        break;
                    }
                }
                if at.is_none() {
                    for (i, name) in names.iter_borrowed().enumerate() {
                        if name.eq(&k)? {
                            at = Some(i);
                            break;
                        }
                    }
                }
                let Some(i) = at else {
                    return Err(PyTypeError::new_err(format!(
                        "{}.__init__() got an unexpected keyword argument {}",
                        self.qualname.bind(py),
                        k.repr()?
                    )));
                };
                values[i] = Some(v);
            }
        }
        // CPython's order: an unexpected keyword first, then the positional arguments,
        // then the missing keywords, with its messages.
        if args.len() != 1 {
            let given = args.len();
            let kwonly = values.iter().filter(|v| v.is_some()).count();
            let plural = |n: usize| if n == 1 { "" } else { "s" };
            return Err(PyTypeError::new_err(if given == 0 {
                format!(
                    "{}.__init__() missing 1 required positional argument: 'self'",
                    self.qualname.bind(py)
                )
            } else if kwonly > 0 {
                format!(
                    "{}.__init__() takes 1 positional argument but {given} positional \
                     argument{} (and {kwonly} keyword-only argument{}) were given",
                    self.qualname.bind(py),
                    plural(given),
                    plural(kwonly)
                )
            } else {
                format!(
                    "{}.__init__() takes 1 positional argument but {given} were given",
                    self.qualname.bind(py)
                )
            }));
        }
        let obj = args.get_item(0)?;
        let mut missing: Vec<Bound<'_, PyAny>> = Vec::new();
        for (i, name) in names.iter_borrowed().enumerate() {
            if values[i].is_none() {
                match defaults.get_item(&*name)? {
                    Some(d) => values[i] = Some(d),
                    None => missing.push(name.to_owned()),
                }
            }
        }
        if !missing.is_empty() {
            let quoted = missing
                .iter()
                .map(|n| n.repr().map(|r| r.to_string()))
                .collect::<PyResult<Vec<_>>>()?;
            let list = match quoted.as_slice() {
                [one] => one.clone(),
                [a, b] => format!("{a} and {b}"),
                [rest @ .., last] => format!("{}, and {last}", rest.join(", ")),
                [] => String::new(),
            };
            let n = quoted.len();
            return Err(PyTypeError::new_err(format!(
                "{}.__init__() missing {n} required keyword-only argument{}: {list}",
                self.qualname.bind(py),
                if n == 1 { "" } else { "s" }
            )));
        }
        for (name, value) in names.iter_borrowed().zip(values) {
            let Some(value) = value else { continue };
            // Read for each field: releasing an old value may run code (a __del__ that
            // assigns __class__, say).
            let tp = obj.get_type_ptr();
            // SAFETY: `tp` is the live type of `obj`; reading its setattr slot runs no code.
            let generic = unsafe { (*tp).tp_setattro }.is_some_and(|f| {
                std::ptr::fn_addr_eq(f, ffi::PyObject_GenericSetAttr as ffi::setattrofunc)
            });
            if generic {
                // SAFETY: `tp` is live, `name` an exact str (checked when made), the GIL held.
                if let Some(off) = unsafe { cpython::member_slot(tp, name.as_ptr()) } {
                    // SAFETY: `off` is the offset of an object member slot of `obj`'s layout
                    // (found on its type's MRO, owned by the type or a base); the slot holds
                    // a strong reference or NULL. The new value's reference moves in before
                    // the old one is released (which may run code), as member_set does.
                    unsafe { store_at(&obj, off, value) };
                    continue;
                }
            }
            obj.setattr(name.cast::<PyString>()?, value)?;
        }
        Ok(())
    }

    /// As a function: from the class itself, unbound; from an instance, a bound method.
    fn __get__<'py>(
        slf: &Bound<'py, Self>,
        obj: &Bound<'py, PyAny>,
        _owner: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if obj.is_none() {
            return Ok(slf.clone().into_any());
        }
        // SAFETY: both pointers are live objects borrowed for the call; PyMethod_New returns
        // a new reference (or NULL with an exception set).
        unsafe { Bound::from_owned_ptr_or_err(slf.py(), PyMethod_New(slf.as_ptr(), obj.as_ptr())) }
    }

    /// ``derive(names)``: these fields (computed by pack) become optional, ``None`` by default.
    fn derive(&self, names: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = names.py();
        let defaults = self.defaults.bind(py);
        for n in names.try_iter()? {
            let n = n?;
            if !defaults.contains(&n)? {
                defaults.set_item(n, py.None())?;
            }
        }
        Ok(())
    }

    /// The keyword names, in field order.
    #[getter]
    fn names<'py>(&self, py: Python<'py>) -> Bound<'py, PyTuple> {
        self.names.bind(py).clone()
    }

    /// A copy of the keyword defaults.
    #[getter]
    fn __kwdefaults__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.defaults.bind(py).copy()
    }

    /// ``(self, *, a, b=default, ...)``, made when asked (``inspect.signature(cls)``).
    #[getter]
    fn __signature__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let inspect = py.import("inspect")?;
        let param = inspect.getattr("Parameter")?;
        let kw_only = param.getattr("KEYWORD_ONLY")?;
        let mut params = vec![param.call1(("self", param.getattr("POSITIONAL_OR_KEYWORD")?))?];
        let defaults = self.defaults.bind(py);
        for name in self.names.bind(py).iter() {
            let kwargs = PyDict::new(py);
            if let Some(d) = defaults.get_item(&name)? {
                kwargs.set_item("default", d)?;
            }
            params.push(param.call((name, &kw_only), Some(&kwargs))?);
        }
        inspect.getattr("Signature")?.call1((params,))
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("<bytewright __init__ of {}>", self.qualname.bind(py))
    }
}

unsafe extern "C" {
    /// CPython's bound method constructor (``types.MethodType(func, obj)``; part of the
    /// stable C API, not wrapped by pyo3-ffi).
    fn PyMethod_New(func: *mut ffi::PyObject, obj: *mut ffi::PyObject) -> *mut ffi::PyObject;
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let init = m.py().get_type::<StructInit>();
    // SAFETY: the type object is live (held by `init`) and not yet used by any call; the flag
    // tells CPython that calling it with the instance first is what binding does (as for a
    // function), so ``cls(...)`` and ``obj.__init__(...)`` call it without a bound method. Its
    // __call__ takes the instance first and its __get__ binds.
    unsafe {
        let tp = init.as_ptr().cast::<ffi::PyTypeObject>();
        (*tp).tp_flags |= ffi::Py_TPFLAGS_METHOD_DESCRIPTOR;
    }
    m.add_class::<StructInit>()?;
    m.add_function(wrap_pyfunction!(declare, m)?)?;
    m.add_function(wrap_pyfunction!(new_info, m)?)?;
    m.add_function(wrap_pyfunction!(new_spec, m)?)?;
    m.add_function(wrap_pyfunction!(compile_info, m)?)?;
    Ok(())
}
