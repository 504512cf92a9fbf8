//! The test host shared by the integration tests: a plain Rust value tree as the VM's sink
//! and source, and schema-building helpers.
#![allow(dead_code)]

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

pub use bytewright_wire::error::{Error, Kind};
pub use bytewright_wire::host::{Dyn, Sink, Source, SourceError};
pub use bytewright_wire::program::Encoding;
pub use bytewright_wire::{compile, pack, unpack, Program, Schema};
pub use serde_json::{json, Value as J};

#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Int(i128),
    Float(f64),
    Bool(bool),
    Bytes(Vec<u8>),
    Str(String),
    List(Vec<Val>),
    Map(Vec<(String, Val)>),
    None,
}

pub fn map(entries: &[(&str, Val)]) -> Val {
    Val::Map(
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect(),
    )
}

pub fn int(i: i128) -> Val {
    Val::Int(i)
}

pub fn bytes(b: &[u8]) -> Val {
    Val::Bytes(b.to_vec())
}

/// Field names by struct sink id, from the compiled program.
pub struct Host {
    pub names: HashMap<u32, Vec<Arc<str>>>,
    pub max_cap: std::cell::Cell<usize>,
}

impl Host {
    pub fn new(p: &Program) -> Host {
        Host {
            names: p
                .structs
                .iter()
                .map(|s| (s.sink_id, s.fields.clone()))
                .collect(),
            max_cap: std::cell::Cell::new(0),
        }
    }
}

impl Sink for Host {
    type Value = Val;
    type Struct = (u32, Vec<(String, Val)>);
    type List = Vec<Val>;
    type Map = Vec<(String, Val)>;
    type Error = String;

    fn uint(&mut self, v: u64) -> Result<Val, String> {
        Ok(Val::Int(v.into()))
    }
    fn int(&mut self, v: i64) -> Result<Val, String> {
        Ok(Val::Int(v.into()))
    }
    fn float(&mut self, v: f64) -> Result<Val, String> {
        Ok(Val::Float(v))
    }
    fn bool(&mut self, v: bool) -> Result<Val, String> {
        Ok(Val::Bool(v))
    }
    fn bytes(&mut self, v: &[u8]) -> Result<Val, String> {
        Ok(Val::Bytes(v.to_vec()))
    }
    fn str(&mut self, v: &str, ascii: bool) -> Result<Val, String> {
        assert_eq!(ascii, v.is_ascii());
        Ok(Val::Str(v.to_string()))
    }
    fn latin1(&mut self, v: &[u8]) -> Result<Val, String> {
        Ok(Val::Str(v.iter().map(|&b| char::from(b)).collect()))
    }
    fn begin_struct(&mut self, sink_id: u32) -> Result<Self::Struct, String> {
        Ok((sink_id, Vec::new()))
    }
    fn set_field(&mut self, s: &mut Self::Struct, field: u16, v: Val) -> Result<(), String> {
        let name = self.names[&s.0][field as usize].to_string();
        s.1.push((name, v));
        Ok(())
    }
    fn absent_field(&mut self, s: &mut Self::Struct, field: u16) -> Result<(), String> {
        self.set_field(s, field, Val::None)
    }
    fn end_struct(&mut self, s: Self::Struct) -> Result<Val, String> {
        Ok(Val::Map(s.1))
    }
    fn none(&mut self) -> Result<Val, String> {
        Ok(Val::None)
    }
    fn ext(&mut self, code: i8, data: &[u8]) -> Result<Val, String> {
        Ok(Val::List(vec![
            Val::Int(code.into()),
            Val::Bytes(data.to_vec()),
        ]))
    }
    fn begin_map(&mut self, cap: usize) -> Result<Vec<(String, Val)>, String> {
        Ok(Vec::with_capacity(cap))
    }
    fn map_insert(&mut self, m: &mut Vec<(String, Val)>, k: Val, v: Val) -> Result<(), String> {
        let k = match k {
            Val::Str(s) => s,
            other => format!("{other:?}"),
        };
        m.push((k, v));
        Ok(())
    }
    fn end_map(&mut self, m: Vec<(String, Val)>) -> Result<Val, String> {
        Ok(Val::Map(m))
    }
    fn begin_list(&mut self, cap: usize) -> Result<Vec<Val>, String> {
        self.max_cap.set(self.max_cap.get().max(cap));
        Ok(Vec::with_capacity(cap))
    }
    fn push(&mut self, l: &mut Vec<Val>, v: Val) -> Result<(), String> {
        l.push(v);
        Ok(())
    }
    fn end_list(&mut self, l: Vec<Val>) -> Result<Val, String> {
        Ok(Val::List(l))
    }
}

pub type SRes<T> = Result<T, SourceError<String>>;

pub fn wrong<T>(what: &str, v: &Val) -> SRes<T> {
    Err(SourceError::Type(format!("expected {what}, got {v:?}")))
}

impl Source for Host {
    type Value = Val;
    type Error = String;

    fn field(&self, obj: &Val, sink_id: u32, field: u16) -> SRes<Option<Val>> {
        let Val::Map(m) = obj else {
            return wrong("a map", obj);
        };
        let name = &self.names[&sink_id][field as usize];
        Ok(m.iter()
            .find(|(k, _)| **k == **name)
            .map(|(_, v)| v.clone())
            .filter(|v| *v != Val::None))
    }
    fn int(&self, v: &Val) -> SRes<i128> {
        match v {
            Val::Int(i) => Ok(*i),
            Val::Bool(b) => Ok(i128::from(*b)),
            _ => wrong("int", v),
        }
    }
    fn float(&self, v: &Val) -> SRes<f64> {
        match v {
            Val::Float(f) => Ok(*f),
            Val::Int(i) => Ok(*i as f64),
            _ => wrong("float", v),
        }
    }
    fn bool(&self, v: &Val) -> SRes<bool> {
        match v {
            Val::Bool(b) => Ok(*b),
            _ => wrong("bool", v),
        }
    }
    fn bytes<'a>(&self, v: &'a Val) -> SRes<&'a [u8]> {
        match v {
            Val::Bytes(b) => Ok(b),
            _ => wrong("bytes", v),
        }
    }
    fn text<'a>(&self, v: &'a Val, enc: Encoding) -> SRes<Cow<'a, [u8]>> {
        let Val::Str(s) = v else {
            return wrong("str", v);
        };
        match enc {
            Encoding::Utf8 => Ok(Cow::Borrowed(s.as_bytes())),
            Encoding::Ascii if s.is_ascii() => Ok(Cow::Borrowed(s.as_bytes())),
            Encoding::Ascii => wrong("ascii text", v),
            Encoding::Latin1 => s
                .chars()
                .map(|c| u8::try_from(u32::from(c)).ok())
                .collect::<Option<Vec<u8>>>()
                .map(Cow::Owned)
                .ok_or_else(|| SourceError::Type("not latin-1".into())),
        }
    }
    fn len(&self, v: &Val) -> SRes<usize> {
        match v {
            Val::List(l) => Ok(l.len()),
            _ => wrong("list", v),
        }
    }
    fn item(&self, v: &Val, i: usize) -> SRes<Val> {
        match v {
            Val::List(l) => Ok(l[i].clone()),
            _ => wrong("list", v),
        }
    }
    fn is_struct(&self, _v: &Val, _sink_id: u32) -> Option<bool> {
        None
    }
    fn kind(&self, v: &Val) -> SRes<Dyn> {
        Ok(match v {
            Val::None => Dyn::None,
            Val::Bool(b) => Dyn::Bool(*b),
            Val::Int(i) => Dyn::Int(*i),
            Val::Float(f) => Dyn::Float(*f),
            Val::Str(_) => Dyn::Str,
            Val::Bytes(_) => Dyn::Bytes,
            Val::List(_) => Dyn::List,
            Val::Map(_) => Dyn::Map,
        })
    }
    fn entries(&self, v: &Val) -> SRes<Vec<(Val, Val)>> {
        match v {
            Val::Map(m) => Ok(m
                .iter()
                .map(|(k, v)| (Val::Str(k.clone()), v.clone()))
                .collect()),
            other => wrong("map", other),
        }
    }
    fn ext(&self, v: &Val) -> SRes<(i8, Val)> {
        wrong("ext", v)
    }
}

// ---- schema helpers ----

pub fn i(width: u8, signed: bool) -> J {
    json!({"t": "int", "width": width, "signed": signed})
}
pub fn u8t() -> J {
    i(1, false)
}
pub fn u16t() -> J {
    i(2, false)
}
pub fn u32t() -> J {
    i(4, false)
}
pub fn f(name: &str, ty: J) -> J {
    json!({"name": name, "type": ty})
}
pub fn st(id: u32, name: &str, order: Option<&str>, fields: Vec<J>) -> J {
    json!({"t": "struct", "id": id, "name": name, "order": order, "fields": fields})
}
pub fn name(n: &str) -> J {
    json!({"expr": ["name", n]})
}
pub fn schema(root: J) -> Schema {
    Schema::from_json(&json!({ "root": root }).to_string()).expect("valid description")
}
pub fn prog(root: J) -> Program {
    compile(&schema(root)).expect("compiles")
}
pub fn compile_err(root: J) -> String {
    compile(&schema(root))
        .expect_err("must not compile")
        .to_string()
}

pub fn do_pack(p: &Program, v: &Val) -> Result<Vec<u8>, Box<Error<String>>> {
    let h = Host::new(p);
    let mut out = Vec::new();
    pack::pack(p, &h, &mut out, v)?;
    Ok(out)
}

pub fn do_unpack(p: &Program, buf: &[u8]) -> Result<(Val, usize), Box<Error<String>>> {
    let mut h = Host::new(p);
    unpack::unpack(p, &mut h, buf, 0)
}

pub fn round_trip(p: &Program, v: &Val) -> Vec<u8> {
    let data = do_pack(p, v).expect("packs");
    let (back, end) = do_unpack(p, &data).expect("unpacks");
    assert_eq!(end, data.len());
    assert_eq!(do_pack(p, &back).expect("re-packs"), data);
    data
}
