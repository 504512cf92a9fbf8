//! Reading small exact `int`s from their digits on CPython 3.11.
//!
//! `PyLong_AsLongLongAndOverflow` costs about 35 instructions for a one-digit int; most
//! values bytewright writes are one to three 30-bit digits, which the layout of 3.11 lets
//! us read directly. Later versions changed the layout, so this is only used when the
//! running interpreter is 3.11 with 30-bit digits (checked once at import).

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::ffi;
use pyo3::prelude::*;

static DIGITS_311: AtomicBool = AtomicBool::new(false);

/// Called once at module import: whether ints may be read from their digits.
pub fn init(py: Python<'_>) -> PyResult<()> {
    let ok = py.version_info() < (3, 12)
        && py
            .import("sys")?
            .getattr("int_info")?
            .getattr("bits_per_digit")?
            .extract::<u32>()?
            == 30;
    DIGITS_311.store(ok, Ordering::Relaxed);
    Ok(())
}

/// Whether [`small_int`] can read ints on this interpreter.
#[inline(always)]
pub fn digits_readable() -> bool {
    DIGITS_311.load(Ordering::Relaxed)
}

/// The value of an exact int of at most two 30-bit digits (magnitude below 2**60), read
/// from its digits; `None` for larger ints or when digits are not readable here.
///
/// # Safety
/// `p` is a live exact `int` and the GIL is held.
#[inline(always)]
pub unsafe fn small_i64(p: *mut ffi::PyObject) -> Option<i64> {
    if !digits_readable() {
        return None;
    }
    // On CPython 3.11 with 30-bit digits an int is a PyVarObject whose ob_size is
    // sign * digit count, followed by that many u32 digits; only digits that ob_size says
    // exist are read.
    let size = (*p.cast::<ffi::PyVarObject>()).ob_size;
    let digits = digits_of(p);
    let magnitude = match size.unsigned_abs() {
        0 => 0,
        1 => i64::from(*digits),
        2 => i64::from(*digits) | (i64::from(*digits.add(1)) << 30),
        _ => return None,
    };
    Some(if size < 0 { -magnitude } else { magnitude })
}

/// [`small_i64`] extended to three digits (magnitude below 2**90).
///
/// # Safety
/// `p` is a live exact `int` and the GIL is held.
#[inline(always)]
pub unsafe fn small_int(p: *mut ffi::PyObject) -> Option<i128> {
    if let Some(v) = small_i64(p) {
        return Some(i128::from(v));
    }
    if !digits_readable() {
        return None;
    }
    let size = (*p.cast::<ffi::PyVarObject>()).ob_size;
    if size.unsigned_abs() != 3 {
        return None;
    }
    let digits = digits_of(p);
    let d = |i: usize| i128::from(*digits.add(i));
    let magnitude = d(0) | (d(1) << 30) | (d(2) << 60);
    Some(if size < 0 { -magnitude } else { magnitude })
}

/// The digit array of a 3.11 int (right after its PyVarObject header).
#[inline(always)]
unsafe fn digits_of(p: *mut ffi::PyObject) -> *const u32 {
    p.cast::<u8>()
        .add(std::mem::size_of::<ffi::PyVarObject>())
        .cast::<u32>()
}
