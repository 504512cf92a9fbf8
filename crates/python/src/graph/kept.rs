//! The classes a `Decoder` keeps: each class of its `classes=` that declares its fields,
//! resolved once when the decoder is made, against the definition `dumps` writes for it.
//!
//! A record whose class definition has exactly those bytes (the same name, version and
//! fields, in order) takes the kept class with one comparison, with no name lookup, no
//! `describe` and no per-thread cache; any other definition is resolved as `loads` resolves
//! it. A decoder's `classes=` never changes (a tuple, or a dict of its own), and the
//! `ClassInfo` `describe` gives is kept for the class's lifetime (see `infocache`), so a kept
//! class is exactly what resolving the definition again would give.

use std::sync::Arc;

use bytewright_graph::tags::{NONE, OBJECT};
use bytewright_graph::writer::class_definition;
use bytewright_graph::{Limits, Reader};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyType};

use super::builder::Builder;
use super::classes::AllowedClasses;
use super::config::Config;
use super::infocache::{self, KIND_DICT};
use super::resolved::Resolved;

/// One kept class.
pub struct KeptClass {
    /// Its definition as `dumps` writes it (name, version, fields).
    pub encoded: Box<[u8]>,
    pub resolved: Arc<Resolved>,
    /// The one-pass builder may make its instances (see `small`): a plain record of a
    /// class keeping its state in its instance dict, with the declared fields in order and
    /// no `__setstate__`.
    pub small: bool,
}

/// The kept classes of one decoder.
#[derive(Default)]
pub struct Kept {
    classes: Vec<KeptClass>,
}

impl Kept {
    /// Resolves each class of `map` (the decoder's `classes=` as a name -> class dict) that
    /// declares its fields, against `classes` (as the decoder passes it to the builder). A
    /// class that cannot be kept (no declared fields, a definition the reader refuses, an
    /// error resolving it) is left out: records of it resolve it per call, with the error
    /// there if any.
    pub fn new(
        py: Python<'_>,
        cfg: &'static Config,
        classes: &Bound<'_, PyAny>,
        map: &Bound<'_, PyDict>,
    ) -> Self {
        let mut kept = Vec::new();
        for (name, cls) in map.iter() {
            let (Ok(name), Ok(cls)) = (name.extract::<String>(), cls.cast_into::<PyType>()) else {
                continue;
            };
            if let Some(k) = keep(py, cfg, classes, &name, &cls) {
                kept.push(k);
            }
        }
        // Errors met while resolving are the calls' to raise, not the constructor's.
        drop(PyErr::take(py));
        Self { classes: kept }
    }

    /// The kept class whose definition is `encoded`.
    #[inline(always)]
    pub fn get(&self, encoded: &[u8]) -> Option<&Arc<Resolved>> {
        self.classes
            .iter()
            .find(|k| *k.encoded == *encoded)
            .map(|k| &k.resolved)
    }

    /// The kept class whose definition starts `rest`, and its length.
    #[inline(always)]
    pub fn starting(&self, rest: &[u8]) -> Option<&KeptClass> {
        self.classes.iter().find(|k| rest.starts_with(&k.encoded))
    }

    pub fn is_empty(&self) -> bool {
        self.classes.is_empty()
    }

    /// The kept classes (each `Resolved` has the name its records give).
    pub fn classes(&self) -> impl Iterator<Item = &Resolved> {
        self.classes.iter().map(|k| &*k.resolved)
    }
}

/// `cls`, kept under `name`, if it declares its fields and resolves.
fn keep(
    py: Python<'_>,
    cfg: &'static Config,
    classes: &Bound<'_, PyAny>,
    name: &str,
    cls: &Bound<'_, PyType>,
) -> Option<KeptClass> {
    let described = infocache::describe(cfg, cls).ok()?;
    let declared = described.declared?;
    let fields: Vec<&str> = declared
        .iter()
        .map(|f| f.to_str().ok())
        .collect::<Option<_>>()?;
    let encoded = class_definition(
        name.as_bytes(),
        described.version,
        fields.iter().map(|f| f.as_bytes()),
    );
    let encoded = encoded.as_bytes();
    // A record of one instance (every field None): the reader checks the definition as it
    // checks a record's, and the builder resolves it as it resolves a record's.
    let mut body = vec![OBJECT, 0];
    body.extend_from_slice(encoded);
    body.extend(std::iter::repeat_n(NONE, fields.len()));
    let limits = Limits::default();
    Reader::new(&body, limits).validate().ok()?;
    let builder = Builder::new(py, cfg, &body, limits, AllowedClasses::new(classes.clone()));
    let resolved = builder.resolve_first().ok()?;
    let small = resolved.fast
        && resolved.kind == KIND_DICT
        && resolved.builtin_base.is_none()
        && !resolved.setstate;
    Some(KeptClass {
        encoded: encoded.into(),
        resolved,
        small,
    })
}
