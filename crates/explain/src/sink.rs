//! The sink that records the field tree while the host's sink builds the values.

use std::sync::Arc;

use bytewright_wire::host::Sink;
use bytewright_wire::program::{Node as Prog, Program};
use bytewright_wire::{Error, Seg};

use crate::describe::{describe_node, fields_of, show_tag, FieldMeta};
use crate::tree::{Explained, Failure, Mark, Name, Node};

/// What `explain` needs from the host's sink beyond [`Sink`]: the value a field is stored
/// as (a host may convert it, e.g. an integer to an enum member), so a node shows exactly
/// the value `unpack` gives. The defaults suit a host that converts nothing.
pub trait Host: Sink {
    /// The value that `set_field` would store for `field` (converted, if the host converts).
    fn field_value(
        &mut self,
        _s: &Self::Struct,
        _field: u16,
        v: Self::Value,
    ) -> Result<Self::Value, Self::Error> {
        Ok(v)
    }
    /// Stores a value that [`Host::field_value`] already converted.
    fn store_field(
        &mut self,
        s: &mut Self::Struct,
        field: u16,
        v: Self::Value,
    ) -> Result<(), Self::Error> {
        self.set_field(s, field, v)
    }
    /// The value an absent conditional field takes, if the host can tell.
    fn absent_value(&mut self, _s: &Self::Struct, _field: u16) -> Option<Self::Value> {
        None
    }
}

/// What the value being decoded into an open node is, as far as the program says.
#[derive(Clone, Copy)]
enum Expect<'p> {
    Node(&'p Prog),
    /// A fixed-size scalar: nothing inside.
    Leaf,
}

struct Open<'p> {
    node: usize,
    expect: Expect<'p>,
}

/// A struct being built: the host's, and the tree node whose children are its fields.
pub struct XStruct<T> {
    inner: T,
    index: u32,
    node: usize,
    /// The field node entered last (`set_field` stores its value).
    last: usize,
    /// Where the struct's bytes have been read up to (an absent field sits there).
    cursor: usize,
}

/// A list being built. Lists that a field kind builds inside its value (MessagePack arrays)
/// have no node of their own: the kind's field is one opaque node.
pub struct XList<'p, T> {
    inner: T,
    node: Option<usize>,
    item: Option<&'p Prog>,
    last: usize,
}

/// A [`Sink`] that passes every value to the host's sink and records the field tree.
pub struct ExplainSink<'p, H: Host> {
    prog: &'p Program,
    fields: Vec<Vec<FieldMeta<'p>>>,
    host: H,
    nodes: Vec<Node<H::Value>>,
    open: Vec<Open<'p>>,
}

impl<'p, H: Host> ExplainSink<'p, H> {
    /// A sink for one message of `prog` starting at `offset`.
    pub fn new(prog: &'p Program, host: H, offset: usize) -> Self {
        let mut root = Node::new(None, Name::Root, describe_node(prog, &prog.root), offset);
        if let Prog::Kind(_) = prog.root {
            root.mark(Mark::Opaque);
        }
        if let Prog::Struct(i) = prog.root {
            root.struct_name = prog.structs.get(i as usize).map(|s| s.name.clone());
        }
        ExplainSink {
            prog,
            fields: fields_of(prog),
            host,
            nodes: vec![root],
            open: vec![Open {
                node: 0,
                expect: Expect::Node(&prog.root),
            }],
        }
    }

    fn top(&self) -> &Open<'p> {
        self.open.last().unwrap_or(&ROOT_OPEN)
    }

    fn child(&mut self, parent: usize, node: Node<H::Value>) -> usize {
        let i = self.nodes.len();
        self.nodes.push(node);
        self.nodes[parent].children.push(i);
        i
    }

    fn close(&mut self, end: usize) -> Option<usize> {
        // The root stays open: `finish` closes it with the VM's end offset.
        if self.open.len() <= 1 {
            return None;
        }
        let o = self.open.pop()?;
        self.nodes[o.node].end = Some(end);
        Some(o.node)
    }

    /// The tree, given what the VM returned.
    pub fn finish(
        mut self,
        r: bytewright_wire::error::Result<(H::Value, usize), H::Error>,
        len: usize,
        whole: bool,
    ) -> Explained<H::Value, H::Error> {
        match r {
            Ok((v, end)) => {
                self.nodes[0].value = Some(v);
                self.nodes[0].end = Some(end);
                let mut ex = Explained {
                    nodes: self.nodes,
                    end: Some(end),
                    failure: None,
                    rest: None,
                };
                if whole && end < len {
                    ex.failure = Some(Failure::Trailing { end });
                    let r = push_rest(&mut ex.nodes, end, len);
                    ex.nodes[r].mark(Mark::Failed);
                    ex.rest = Some(r);
                }
                ex
            }
            Err(error) => {
                let node = attach(self.prog, &self.fields, &mut self.nodes, &error);
                let decoded = self
                    .nodes
                    .iter()
                    .filter_map(|n| n.end)
                    .max()
                    .unwrap_or(self.nodes[0].start);
                let from = decoded.max(self.nodes[node].start).min(len);
                let mut ex = Explained {
                    nodes: self.nodes,
                    end: None,
                    failure: Some(Failure::Decode { error, node }),
                    rest: None,
                };
                if from < len {
                    ex.rest = Some(push_rest(&mut ex.nodes, from, len));
                }
                ex
            }
        }
    }
}

static ROOT_OPEN: Open<'static> = Open {
    node: 0,
    expect: Expect::Leaf,
};

fn push_rest<V>(nodes: &mut Vec<Node<V>>, from: usize, to: usize) -> usize {
    let mut n = Node::new(Some(0), Name::Rest, "bytes".into(), from);
    n.end = Some(to);
    n.mark(Mark::Rest);
    let i = nodes.len();
    nodes.push(n);
    nodes[0].children.push(i);
    i
}

/// The declared kind of a node that decoding failed before making: a field of the struct
/// `parent` decoded as, or an item like its siblings.
fn kind_of<V>(
    prog: &Program,
    fields: &[Vec<FieldMeta<'_>>],
    parent: &Node<V>,
    seg: &Seg,
    nodes: &[Node<V>],
) -> String {
    match seg {
        Seg::Field(f) => parent
            .struct_name
            .as_ref()
            .and_then(|name| prog.structs.iter().position(|s| s.name == *name))
            .and_then(|i| {
                let sp = &prog.structs[i];
                let k = sp.fields.iter().position(|x| x == f)?;
                Some(fields[i][k].kind.clone())
            })
            .unwrap_or_default(),
        Seg::Index(_) => match parent.children.last() {
            Some(&c) => nodes[c].kind.clone(),
            None => parent
                .kind
                .strip_prefix("list[")
                .and_then(|k| k.strip_suffix(']'))
                .map(|k| k.split("; ").next().unwrap_or(k).to_string())
                .unwrap_or_default(),
        },
    }
}

/// Marks the node the error's path names as failed (making it when decoding failed before
/// the node began: a field of a run that did not fit, a constant that did not match).
fn attach<V, E>(
    prog: &Program,
    fields: &[Vec<FieldMeta<'_>>],
    nodes: &mut Vec<Node<V>>,
    e: &Error<E>,
) -> usize {
    let mut at = 0usize;
    for seg in e.rev_path.iter().rev() {
        if nodes[at].has(Mark::Opaque) {
            break;
        }
        let found =
            nodes[at]
                .children
                .iter()
                .rev()
                .copied()
                .find(|&c| match (&nodes[c].name, seg) {
                    (Name::Field(a), Seg::Field(b)) => a == b,
                    (Name::Index(a), Seg::Index(b)) => a == b,
                    _ => false,
                });
        at = match found {
            Some(c) => c,
            None => {
                let name = match seg {
                    Seg::Field(f) => Name::Field(f.clone()),
                    Seg::Index(i) => Name::Index(*i),
                };
                let kind = kind_of(prog, fields, &nodes[at], seg, nodes);
                let n = Node::new(Some(at), name, kind, e.offset);
                let i = nodes.len();
                nodes.push(n);
                nodes[at].children.push(i);
                i
            }
        };
    }
    nodes[at].mark(Mark::Failed);
    at
}

impl<'p, H: Host> Sink for ExplainSink<'p, H>
where
    H::Value: Clone,
{
    type Value = H::Value;
    type Struct = XStruct<H::Struct>;
    type List = XList<'p, H::List>;
    type Map = H::Map;
    type Error = H::Error;
    const KEEPS_VALUES: bool = true;

    fn uint(&mut self, v: u64) -> Result<H::Value, H::Error> {
        self.host.uint(v)
    }
    fn int(&mut self, v: i64) -> Result<H::Value, H::Error> {
        self.host.int(v)
    }
    fn float(&mut self, v: f64) -> Result<H::Value, H::Error> {
        self.host.float(v)
    }
    fn bool(&mut self, v: bool) -> Result<H::Value, H::Error> {
        self.host.bool(v)
    }
    fn bytes(&mut self, v: &[u8]) -> Result<H::Value, H::Error> {
        self.host.bytes(v)
    }
    fn str(&mut self, v: &str, ascii: bool) -> Result<H::Value, H::Error> {
        self.host.str(v, ascii)
    }
    fn latin1(&mut self, v: &[u8]) -> Result<H::Value, H::Error> {
        self.host.latin1(v)
    }

    fn begin_struct(&mut self, sink_id: u32) -> Result<Self::Struct, H::Error> {
        let (node, expect) = {
            let t = self.top();
            (t.node, t.expect)
        };
        let index = match expect {
            Expect::Node(Prog::Struct(i)) => *i,
            // Not reached by the VM (a struct is always a field's, an item's or the root's
            // value); the sink id still names it.
            _ => self
                .prog
                .structs
                .iter()
                .position(|s| s.sink_id == sink_id)
                .unwrap_or(0) as u32,
        };
        let name: Option<Arc<str>> = self
            .prog
            .structs
            .get(index as usize)
            .map(|s| s.name.clone());
        self.nodes[node].struct_name = name;
        let inner = self.host.begin_struct(sink_id)?;
        Ok(XStruct {
            inner,
            index,
            node,
            last: node,
            cursor: self.nodes[node].start,
        })
    }

    fn set_field(&mut self, s: &mut Self::Struct, field: u16, v: H::Value) -> Result<(), H::Error> {
        let v = self.host.field_value(&s.inner, field, v)?;
        if s.last != s.node {
            self.nodes[s.last].value = Some(v.clone());
        }
        self.host.store_field(&mut s.inner, field, v)
    }

    fn absent_field(&mut self, s: &mut Self::Struct, field: u16) -> Result<(), H::Error> {
        let meta = &self.fields[s.index as usize][field as usize];
        let mut n = Node::new(
            Some(s.node),
            Name::Field(self.prog.structs[s.index as usize].fields[field as usize].clone()),
            meta.kind.clone(),
            s.cursor,
        );
        n.end = Some(s.cursor);
        n.marks = meta.marks.clone();
        n.notes = meta.notes.clone();
        n.mark(Mark::Absent);
        n.value = self.host.absent_value(&s.inner, field);
        self.child(s.node, n);
        self.host.absent_field(&mut s.inner, field)
    }

    fn end_struct(&mut self, s: Self::Struct) -> Result<H::Value, H::Error> {
        self.host.end_struct(s.inner)
    }

    fn none(&mut self) -> Result<H::Value, H::Error> {
        self.host.none()
    }
    fn ext(&mut self, code: i8, data: &[u8]) -> Result<H::Value, H::Error> {
        self.host.ext(code, data)
    }
    fn begin_map(&mut self, cap: usize) -> Result<H::Map, H::Error> {
        self.host.begin_map(cap)
    }
    fn map_insert(&mut self, m: &mut H::Map, k: H::Value, v: H::Value) -> Result<(), H::Error> {
        self.host.map_insert(m, k, v)
    }
    fn end_map(&mut self, m: H::Map) -> Result<H::Value, H::Error> {
        self.host.end_map(m)
    }

    fn begin_list(&mut self, cap: usize) -> Result<Self::List, H::Error> {
        let (top, expect) = {
            let t = self.top();
            (t.node, t.expect)
        };
        let (node, item) = match expect {
            Expect::Node(Prog::Array { item, .. }) if !self.nodes[top].has(Mark::Opaque) => {
                (Some(top), Some(&**item))
            }
            _ => (None, None),
        };
        let inner = self.host.begin_list(cap)?;
        Ok(XList {
            inner,
            node,
            item,
            last: 0,
        })
    }
    fn push(&mut self, l: &mut Self::List, v: H::Value) -> Result<(), H::Error> {
        if l.node.is_some() && l.last != 0 {
            self.nodes[l.last].value = Some(v.clone());
        }
        self.host.push(&mut l.inner, v)
    }
    fn end_list(&mut self, l: Self::List) -> Result<H::Value, H::Error> {
        self.host.end_list(l.inner)
    }

    fn enter_field(&mut self, s: &mut Self::Struct, field: u16, at: usize) {
        let meta = &self.fields[s.index as usize][field as usize];
        let mut n = Node::new(
            Some(s.node),
            Name::Field(self.prog.structs[s.index as usize].fields[field as usize].clone()),
            meta.kind.clone(),
            at + meta.bits.map_or(0, |b| b.bytes().0),
        );
        n.bits = meta.bits;
        n.marks = meta.marks.clone();
        n.notes = meta.notes.clone();
        let expect = match meta.node {
            Some(p) => Expect::Node(p),
            None => Expect::Leaf,
        };
        let i = self.child(s.node, n);
        s.last = i;
        self.open.push(Open { node: i, expect });
        self.host.enter_field(&mut s.inner, field, at);
    }

    fn leave_field(&mut self, s: &mut Self::Struct, field: u16, end: usize) {
        match self.fields[s.index as usize][field as usize].bits {
            // The bytes its bits are in, not the whole group.
            Some(b) => {
                self.close(end - b.group as usize + b.bytes().1);
            }
            None => {
                self.close(end);
            }
        }
        s.cursor = end;
        self.host.leave_field(&mut s.inner, field, end);
    }

    fn enter_item(&mut self, l: &mut Self::List, index: usize, at: usize) {
        if let (Some(parent), Some(item)) = (l.node, l.item) {
            let mut n = Node::new(
                Some(parent),
                Name::Index(index),
                describe_node(self.prog, item),
                at,
            );
            if let Prog::Kind(_) = item {
                n.mark(Mark::Opaque);
            }
            let i = self.child(parent, n);
            l.last = i;
            self.open.push(Open {
                node: i,
                expect: Expect::Node(item),
            });
        }
        self.host.enter_item(&mut l.inner, index, at);
    }

    fn leave_item(&mut self, l: &mut Self::List, index: usize, end: usize) {
        if l.node.is_some() {
            self.close(end);
        }
        self.host.leave_item(&mut l.inner, index, end);
    }

    fn choose(&mut self, case: usize, at: usize) {
        let prog = self.prog;
        if let Some(top) = self.open.last_mut() {
            let chosen: Option<(String, &'p Prog)> = match top.expect {
                Expect::Node(Prog::Union { cases, default, .. }) => match cases.get(case) {
                    Some((v, n)) => Some((format!("case {}", show_tag(v)), n)),
                    None => default.as_deref().map(|n| ("default case".to_string(), n)),
                },
                Expect::Node(Prog::Registry { cases, default, .. }) => match cases.get(case) {
                    Some((v, n, _)) => Some((format!("tag {}", show_tag(v)), n)),
                    None => default.as_deref().map(|n| ("default case".to_string(), n)),
                },
                _ => None,
            };
            if let Some((text, n)) = chosen {
                top.expect = Expect::Node(n);
                let node = &mut self.nodes[top.node];
                node.notes
                    .push(format!("{text}: {}", describe_node(prog, n)));
                if let Prog::Kind(_) = n {
                    node.mark(Mark::Opaque);
                }
            }
        }
        self.host.choose(case, at);
    }

    fn padding(&mut self, s: &mut Self::Struct, at: usize, n: usize) {
        let mut node = Node::new(Some(s.node), Name::Padding, format!("padding[{n}]"), at);
        node.end = Some(at + n);
        node.mark(Mark::Padding);
        self.child(s.node, node);
        s.cursor = at + n;
        self.host.padding(&mut s.inner, at, n);
    }
}
