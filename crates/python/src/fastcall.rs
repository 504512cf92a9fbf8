//! Functions called with one positional argument and a few optional ones (the first
//! `also_positional` of them may be passed by position too), taken straight from the
//! vectorcall convention (`METH_FASTCALL | METH_KEYWORDS`).
//!
//! pyo3's general argument extraction costs about 240 instructions for a call with one
//! keyword, which is a tenth of loading a small record; matching the caller's (interned)
//! keyword names by pointer costs a few.

use std::ffi::CStr;
use std::panic::AssertUnwindSafe;

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyString;
use pyo3::Borrowed;

/// The positional parameter and the keywords together, at most.
const MAX_PARAMS: usize = 8;

/// The body of a fast function: the positional argument and the keyword values by
/// position in the function's keyword list (`None` when not given).
pub type Body<const N: usize> = for<'py> fn(
    Python<'py>,
    &Bound<'py, PyAny>,
    [Option<&Bound<'py, PyAny>>; N],
) -> PyResult<Bound<'py, PyAny>>;

/// One fast function: its name, optional parameters (each defaulting to None), docstring
/// (with a `__text_signature__` line) and body.
pub struct FastFunction<const N: usize> {
    pub name: &'static CStr,
    /// The one required parameter (also accepted as a keyword).
    pub positional: &'static str,
    pub keywords: [&'static str; N],
    /// How many of `keywords`, from the first, may also be passed by position.
    pub also_positional: usize,
    pub doc: &'static CStr,
    pub body: Body<N>,
    /// The parameter names, interned once, so a caller's keywords match by pointer.
    pub interned: PyOnceLock<Vec<Py<PyString>>>,
}

impl<const N: usize> FastFunction<N> {
    fn fname(&self) -> &'static str {
        self.name.to_str().unwrap_or("function")
    }

    /// Parses the vectorcall arguments and runs the body.
    ///
    /// # Safety
    /// `args` holds `nargs` positional arguments followed by one value per name in
    /// `kwnames` (a tuple of str, or NULL), all live for the call, as CPython passes them.
    pub unsafe fn call<'py>(
        &self,
        py: Python<'py>,
        args: *const *mut ffi::PyObject,
        nargs: ffi::Py_ssize_t,
        kwnames: *mut ffi::PyObject,
    ) -> PyResult<Bound<'py, PyAny>> {
        let nargs = ffi::PyVectorcall_NARGS(nargs as usize);
        if kwnames.is_null() && nargs == 1 {
            // The commonest call, `f(x)`: nothing to match.
            let data = Borrowed::from_ptr(py, *args);
            return (self.body)(py, &data, [None; N]);
        }
        let names = self.interned.get_or_init(py, || {
            std::iter::once(self.positional)
                .chain(self.keywords)
                .map(|n| PyString::intern(py, n).unbind())
                .collect()
        });
        let most = 1 + self.also_positional as isize;
        if nargs > most {
            let takes = match most {
                1 => "1 positional argument".to_string(),
                _ => format!("from 1 to {most} positional arguments"),
            };
            return Err(PyTypeError::new_err(format!(
                "{}() takes {takes} but {nargs} were given",
                self.fname()
            )));
        }
        const { assert!(N < MAX_PARAMS) };
        // Slot 0: the positional parameter; slots 1..: the keywords.
        let mut slots = [std::ptr::null_mut::<ffi::PyObject>(); MAX_PARAMS];
        for (i, slot) in slots.iter_mut().take(nargs as usize).enumerate() {
            *slot = *args.add(i);
        }
        if !kwnames.is_null() {
            let nkw = ffi::PyTuple_GET_SIZE(kwnames);
            for i in 0..nkw {
                let name = ffi::PyTuple_GET_ITEM(kwnames, i);
                let value = *args.offset(nargs + i);
                let mut at = names.iter().position(|n| n.as_ptr() == name);
                if at.is_none() {
                    // Not interned (a name built at run time): compare the text.
                    let text = Bound::from_borrowed_ptr(py, name);
                    let text = text.cast::<PyString>().ok().and_then(|s| s.to_str().ok());
                    at = text.and_then(|t| {
                        std::iter::once(self.positional)
                            .chain(self.keywords)
                            .position(|n| n == t)
                    });
                }
                let Some(at) = at else {
                    let shown = Bound::from_borrowed_ptr(py, name).repr()?;
                    return Err(PyTypeError::new_err(format!(
                        "{}() got an unexpected keyword argument {shown}",
                        self.fname()
                    )));
                };
                if !slots[at].is_null() {
                    let which = if at == 0 {
                        self.positional
                    } else {
                        self.keywords[at - 1]
                    };
                    return Err(PyTypeError::new_err(format!(
                        "{}() got multiple values for argument '{which}'",
                        self.fname()
                    )));
                }
                slots[at] = value;
            }
        }
        if slots[0].is_null() {
            return Err(PyTypeError::new_err(format!(
                "{}() missing required argument '{}' (pos 1)",
                self.fname(),
                self.positional
            )));
        }
        // Borrowed for the call: CPython keeps every argument alive until we return. A
        // keyword given as None means the same as one left out (every keyword here
        // defaults to None).
        let none = ffi::Py_None();
        let bound: [Option<Borrowed<'_, 'py, PyAny>>; N] = std::array::from_fn(|i| {
            let p = slots[i + 1];
            (!p.is_null() && p != none).then(|| Borrowed::from_ptr(py, p))
        });
        let data = Borrowed::from_ptr(py, slots[0]);
        (self.body)(py, &data, bound.each_ref().map(|b| b.as_deref()))
    }

    /// Adds the function to `module` under its name.
    pub fn add_to(
        &'static self,
        module: &Bound<'_, PyModule>,
        trampoline: ffi::PyCFunctionFastWithKeywords,
    ) -> PyResult<()> {
        let py = module.py();
        let def = Box::leak(Box::new(ffi::PyMethodDef {
            ml_name: self.name.as_ptr(),
            ml_meth: ffi::PyMethodDefPointer {
                PyCFunctionFastWithKeywords: trampoline,
            },
            ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
            ml_doc: self.doc.as_ptr(),
        }));
        let module_name = module.name()?;
        // SAFETY: `def` lives for the rest of the process; the module name is a live str.
        let function = unsafe {
            Bound::from_owned_ptr_or_err(
                py,
                ffi::PyCFunction_NewEx(def, std::ptr::null_mut(), module_name.as_ptr()),
            )?
        };
        module.add(self.name.to_str().unwrap_or("function"), function)
    }
}

/// The C entry point of a fast function: attaches the interpreter token, runs the
/// function, and turns errors (and, defensively, panics) into a raised exception.
///
/// # Safety
/// Called by CPython with the GIL held and vectorcall arguments (see [`FastFunction::call`]).
pub unsafe fn enter<const N: usize>(
    function: &FastFunction<N>,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls us with the GIL held.
    let py = Python::assume_attached();
    run(
        py,
        || function.call(py, args, nargs, kwnames),
        || function.fname(),
    )
}

/// The unwind payload of memory that ran out where no error can be returned (a writer
/// growing its bytes object or its own buffer): every entry point here ([`run`],
/// [`enter_one`]) raises MemoryError for it.
pub use bytewright_graph::OutOfMemory;

/// [`enter`] with a body of its own for the plain positional call `f(x)`, called by name
/// (so it can be inlined): `one` takes the argument and returns the result as [`enter`]
/// does (a new reference, or NULL with the error raised), so that call builds no argument
/// array and moves no `PyResult`. Any other call shape goes through
/// [`FastFunction::call`].
///
/// # Safety
/// As [`enter`]; `one(py, x)` does what `function.body` does for the positional `x` alone.
#[inline(always)]
pub unsafe fn enter_one<const N: usize>(
    function: &FastFunction<N>,
    one: for<'py> fn(Python<'py>, *mut ffi::PyObject) -> *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls us with the GIL held.
    let py = Python::assume_attached();
    let guarded = AssertUnwindSafe(|| {
        // SAFETY: vectorcall arguments as CPython passes them (see `FastFunction::call`).
        unsafe {
            if kwnames.is_null() && ffi::PyVectorcall_NARGS(nargs as usize) == 1 {
                return one(py, *args);
            }
            match function.call(py, args, nargs, kwnames) {
                Ok(value) => value.into_ptr(),
                Err(err) => {
                    err.restore(py);
                    std::ptr::null_mut()
                }
            }
        }
    });
    match std::panic::catch_unwind(guarded) {
        Ok(p) => p,
        Err(payload) => unwound(py, payload, || function.fname()),
    }
}

/// Runs the body of a C entry point: its value as a new reference, or NULL with its error
/// (and, defensively, a panic, as a `RuntimeError` naming `fname()`) raised.
#[inline(always)]
pub fn run<'py, F: std::fmt::Display>(
    py: Python<'py>,
    body: impl FnOnce() -> PyResult<Bound<'py, PyAny>>,
    fname: impl FnOnce() -> F,
) -> *mut ffi::PyObject {
    match std::panic::catch_unwind(AssertUnwindSafe(body)) {
        Ok(Ok(value)) => value.into_ptr(),
        Ok(Err(err)) => {
            err.restore(py);
            std::ptr::null_mut()
        }
        Err(payload) => unwound(py, payload, fname),
    }
}

/// NULL with the error of an unwind caught at an entry point raised: MemoryError for
/// [`OutOfMemory`] (normally set already by the allocation that failed), else a
/// `RuntimeError` naming `fname()` (a panic: a bug).
#[cold]
#[inline(never)]
fn unwound<F: std::fmt::Display>(
    py: Python<'_>,
    payload: Box<dyn std::any::Any + Send>,
    fname: impl FnOnce() -> F,
) -> *mut ffi::PyObject {
    if payload.is::<OutOfMemory>() {
        // SAFETY: the GIL is held.
        unsafe {
            if ffi::PyErr_Occurred().is_null() {
                ffi::PyErr_NoMemory();
            }
        }
    } else {
        PyRuntimeError::new_err(format!("internal error in {}(): please report it", fname()))
            .restore(py);
    }
    std::ptr::null_mut()
}

/// Puts a `METH_O` method (one positional argument, no argument parsing) named `name` into
/// the dict of `ty`, a type of this module being set up, before any instance exists.
pub fn add_method_o(
    ty: &Bound<'_, pyo3::types::PyType>,
    name: &'static CStr,
    doc: &'static CStr,
    meth: ffi::PyCFunction,
) -> PyResult<()> {
    let py = ty.py();
    let def = Box::leak(Box::new(ffi::PyMethodDef {
        ml_name: name.as_ptr(),
        ml_meth: ffi::PyMethodDefPointer { PyCFunction: meth },
        ml_flags: ffi::METH_O,
        ml_doc: doc.as_ptr(),
    }));
    // SAFETY: a method descriptor of a PyMethodDef that lives for the rest of the process,
    // for a live type; its dict is written before any instance exists and its method cache
    // is told.
    unsafe {
        let descr =
            Bound::from_owned_ptr_or_err(py, ffi::PyDescr_NewMethod(ty.as_type_ptr(), def))?;
        ty.setattr(name.to_str().unwrap_or("method"), descr)?;
        ffi::PyType_Modified(ty.as_type_ptr());
    }
    Ok(())
}

/// Defines a `FastFunction` static and its C trampoline: `trampoline` parses every call
/// through [`enter`]; `[direct = one] trampoline` calls `one` by name for the plain
/// positional call ([`enter_one`]).
macro_rules! fast_function {
    (
        $vis:vis static $static_name:ident: [$n:literal] = {
            name: $name:literal,
            positional: $pos:literal,
            $(also_positional: $also:literal,)?
            keywords: [$($kw:literal),* $(,)?],
            doc: $doc:expr,
            body: $body:path $(,)?
        };
        $([direct = $one:path])? trampoline $tramp:ident;
    ) => {
        $vis static $static_name: $crate::fastcall::FastFunction<$n> =
            $crate::fastcall::FastFunction {
                name: $name,
                positional: $pos,
                keywords: [$($kw),*],
                also_positional: 0 $(+ $also)?,
                doc: $doc,
                body: $body,
                interned: pyo3::sync::PyOnceLock::new(),
            };

        $vis unsafe extern "C" fn $tramp(
            _module: *mut pyo3::ffi::PyObject,
            args: *const *mut pyo3::ffi::PyObject,
            nargs: pyo3::ffi::Py_ssize_t,
            kwnames: *mut pyo3::ffi::PyObject,
        ) -> *mut pyo3::ffi::PyObject {
            // SAFETY: CPython calls this with the GIL held and vectorcall arguments.
            unsafe {
                $crate::fastcall::fast_function!(@enter $($one,)? $static_name, $body, args, nargs, kwnames)
            }
        }
    };
    (@enter $static_name:ident, $body:path, $args:ident, $nargs:ident, $kw:ident) => {
        $crate::fastcall::enter(&$static_name, $args, $nargs, $kw)
    };
    (@enter $one:path, $static_name:ident, $body:path, $args:ident, $nargs:ident, $kw:ident) => {
        $crate::fastcall::enter_one(&$static_name, $one, $args, $nargs, $kw)
    };
}
pub(crate) use fast_function;
