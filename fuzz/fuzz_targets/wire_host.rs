//! A plain value tree as the wire VM's sink and source, for fuzzing the pure-Rust core
//! (a copy of the test host in crates/wire/tests/common, faithful enough to re-pack what it
//! decoded: structs keep their sink id, maps their key values, ext values their code).

use std::borrow::Cow;
use std::collections::HashMap;

use bytewright_wire::host::{Dyn, Sink, Source, SourceError};
use bytewright_wire::program::Encoding;
use bytewright_wire::Program;

#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Int(i128),
    Float(f64),
    Bool(bool),
    Bytes(Vec<u8>),
    Str(String),
    List(Vec<Val>),
    Map(Vec<(Val, Val)>),
    Ext(i8, Vec<u8>),
    Struct(u32, Vec<Val>),
    None,
}

/// The number of fields of each struct, by sink id.
pub struct Host {
    widths: HashMap<u32, usize>,
}

impl Host {
    pub fn new(p: &Program) -> Host {
        Host {
            widths: p
                .structs
                .iter()
                .map(|s| (s.sink_id, s.fields.len()))
                .collect(),
        }
    }
}

/// `bw.explain`'s sink wraps this one; nothing is converted.
impl bytewright_explain::Host for Host {}

impl Sink for Host {
    type Value = Val;
    type Struct = (u32, Vec<Val>);
    type List = Vec<Val>;
    type Map = Vec<(Val, Val)>;
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
        assert_eq!(ascii, v.is_ascii(), "the VM's ascii flag is wrong");
        Ok(Val::Str(v.to_string()))
    }
    fn latin1(&mut self, v: &[u8]) -> Result<Val, String> {
        Ok(Val::Str(v.iter().map(|&b| char::from(b)).collect()))
    }
    fn begin_struct(&mut self, sink_id: u32) -> Result<Self::Struct, String> {
        let n = self.widths.get(&sink_id).copied().unwrap_or(0);
        Ok((sink_id, vec![Val::None; n]))
    }
    fn set_field(&mut self, s: &mut Self::Struct, field: u16, v: Val) -> Result<(), String> {
        let slot =
            s.1.get_mut(field as usize)
                .expect("field index within its struct");
        *slot = v;
        Ok(())
    }
    fn absent_field(&mut self, s: &mut Self::Struct, field: u16) -> Result<(), String> {
        self.set_field(s, field, Val::None)
    }
    fn end_struct(&mut self, s: Self::Struct) -> Result<Val, String> {
        Ok(Val::Struct(s.0, s.1))
    }
    fn none(&mut self) -> Result<Val, String> {
        Ok(Val::None)
    }
    fn ext(&mut self, code: i8, data: &[u8]) -> Result<Val, String> {
        Ok(Val::Ext(code, data.to_vec()))
    }
    fn begin_map(&mut self, cap: usize) -> Result<Self::Map, String> {
        Ok(Vec::with_capacity(cap))
    }
    fn map_insert(&mut self, m: &mut Self::Map, k: Val, v: Val) -> Result<(), String> {
        m.push((k, v));
        Ok(())
    }
    fn end_map(&mut self, m: Self::Map) -> Result<Val, String> {
        Ok(Val::Map(m))
    }
    fn begin_list(&mut self, cap: usize) -> Result<Vec<Val>, String> {
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

type SRes<T> = Result<T, SourceError<String>>;

fn wrong<T>(what: &str, v: &Val) -> SRes<T> {
    Err(SourceError::Type(format!("expected {what}, got {v:?}")))
}

impl Source for Host {
    type Value = Val;
    type Error = String;

    fn field(&self, obj: &Val, _sink_id: u32, field: u16) -> SRes<Option<Val>> {
        let Val::Struct(_, fields) = obj else {
            return wrong("a struct", obj);
        };
        Ok(fields
            .get(field as usize)
            .filter(|v| **v != Val::None)
            .cloned())
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
            Val::List(l) => l
                .get(i)
                .cloned()
                .ok_or_else(|| SourceError::Type(format!("no item {i}"))),
            _ => wrong("list", v),
        }
    }
    fn is_struct(&self, v: &Val, sink_id: u32) -> Option<bool> {
        match v {
            Val::Struct(id, _) => Some(*id == sink_id),
            _ => Some(false),
        }
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
            Val::Ext(..) => Dyn::Ext,
            Val::Struct(..) => return wrong("a self-describing value", v),
        })
    }
    fn entries(&self, v: &Val) -> SRes<Vec<(Val, Val)>> {
        match v {
            Val::Map(m) => Ok(m.clone()),
            other => wrong("map", other),
        }
    }
    fn ext(&self, v: &Val) -> SRes<(i8, Val)> {
        match v {
            Val::Ext(code, data) => Ok((*code, Val::Bytes(data.clone()))),
            other => wrong("ext", other),
        }
    }
}
