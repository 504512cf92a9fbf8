//! The column layout of a compiled program: which Arrow column each field becomes.
//!
//! The layout is a tree of nodes (an arena indexed by [`NodeId`]), one per column and nested
//! column, built once per codec. The decoder appends to the nodes, the finisher turns them
//! into Arrow arrays, and the encoder reads Arrow arrays back through the same tree.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields};
use bytewright_wire::expr::Value;
use bytewright_wire::kinds::Column as KindColumn;
use bytewright_wire::program::{Len, Node, Program, Scalar, Step};

pub type NodeId = u32;

/// The name of the first child of a union column: which variant each row holds.
pub const VARIANT: &str = "variant";

/// What a column holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Shape {
    /// Integers of `bytes` bytes (1, 2, 4 or 8).
    Int {
        bytes: u8,
        signed: bool,
    },
    /// IEEE floats of `bytes` bytes (2, 4 or 8).
    Float {
        bytes: u8,
    },
    Bool,
    /// Bytes of one length.
    FixedBinary(usize),
    /// Bytes of any length.
    Binary,
    /// UTF-8 text.
    Text,
    /// One child per named field of a struct, in declaration order.
    Struct {
        sink_id: u32,
        struct_index: u32,
    },
    /// A list of `item`; `fixed` when the count is a constant.
    List {
        item: NodeId,
        fixed: Option<usize>,
    },
    /// A tagged union or registry: one nullable child per case (the default last), plus the
    /// variant column.
    Union {
        names: Vec<Arc<str>>,
    },
    /// A value stored as its own wire bytes (recursive types, self-describing kinds).
    Raw,
}

#[derive(Debug, Clone)]
pub struct LNode {
    pub shape: Shape,
    /// Children: a struct's fields, a union's variants, a list's item.
    pub children: Vec<NodeId>,
    /// Child names (structs and unions).
    pub names: Vec<Arc<str>>,
    /// Whether rows may be null (conditional fields, union variants, and what they hold).
    pub nullable: bool,
    /// Whether the node holds values only for some rows of its parent, recording which
    /// (a union's variants, and conditional fields that hold structs, unions or fixed-size
    /// lists): a row that does not reach it costs nothing, and its nulls are laid out when
    /// the table is finished (see [`crate::builders::Cols::finish`]).
    pub sparse: bool,
    /// Whether the sink may append a null row to this column: a conditional field that is
    /// not sparse, or a column that holds a value in every row of such a node (a struct's
    /// fields, a fixed-size list's items). Rows of the other columns are all values their
    /// parent decoded, so a struct without null rows may keep its runs' rows aside and
    /// move them to its columns later (see [`crate::sink`]).
    pub null_rows: bool,
}

/// The most nodes (columns, nested ones included) a layout may have before its deepest
/// unions are laid out as raw bytes.
pub const MAX_NODES: usize = 1024;

/// The layout of a whole program.
#[derive(Debug, Clone)]
pub struct Layout {
    pub nodes: Vec<LNode>,
    pub root: NodeId,
}

/// One named field of a struct as the layout sees it.
struct FieldInfo<'p> {
    scalar: Option<Scalar>,
    node: Option<&'p Node>,
    conditional: bool,
}

impl Layout {
    pub fn new(prog: &Program) -> Layout {
        Layout::within(prog, MAX_NODES)
    }

    /// The layout with unions nested no deeper than fits `max_nodes` nodes.
    pub fn within(prog: &Program, max_nodes: usize) -> Layout {
        // Unions nested in unions multiply: an IPv6 extension header's payload is a union of
        // the other extension headers, so every order of headers would become columns of
        // every row (7,450 of them for a pcap). Unions stay columns down to the deepest
        // nesting whose layout fits; deeper ones hold their wire bytes.
        let mut depth = usize::MAX;
        loop {
            let mut b = Builder {
                prog,
                nodes: Vec::new(),
                active: Vec::new(),
                union_depth: 0,
                max_union_depth: depth,
                max_nodes,
                deepest: 0,
            };
            let root = b.node(&prog.root, false);
            if b.nodes.len() <= max_nodes || depth == 0 {
                let mut layout = Layout {
                    nodes: b.nodes,
                    root,
                };
                layout.mark_null_rows(root, false);
                return layout;
            }
            // One level shallower than the deepest union this attempt laid out.
            depth = b.deepest.min(depth).saturating_sub(1);
        }
    }

    pub fn node(&self, id: NodeId) -> &LNode {
        &self.nodes[id as usize]
    }

    /// Sets [`LNode::null_rows`] of `id` and what it holds: `nulls` when its parent may get
    /// a null row that reaches it; a conditional field that is not sparse (marked so by the
    /// builder) gets null rows of its own when absent.
    fn mark_null_rows(&mut self, id: NodeId, nulls: bool) {
        let node = &mut self.nodes[id as usize];
        let nulls = !node.sparse && (nulls || node.null_rows);
        node.null_rows = nulls;
        // A variable-size list's null is an empty list: its items get no row.
        let down = nulls && !matches!(node.shape, Shape::List { fixed: None, .. });
        for c in node.children.clone() {
            self.mark_null_rows(c, down);
        }
    }

    /// The nodes that are the table's columns: the root struct's fields, or a root union's
    /// variant column and variants.
    pub fn columns(&self) -> (&[Arc<str>], &[NodeId]) {
        let root = self.node(self.root);
        (&root.names, &root.children)
    }

    /// The Arrow type of a node (`large`: which variable-size nodes need 64-bit offsets).
    pub fn data_type(&self, id: NodeId, large: &[bool]) -> DataType {
        let n = self.node(id);
        match &n.shape {
            Shape::Int { bytes, signed } => match (bytes, signed) {
                (1, true) => DataType::Int8,
                (2, true) => DataType::Int16,
                (4, true) => DataType::Int32,
                (8, true) => DataType::Int64,
                (1, false) => DataType::UInt8,
                (2, false) => DataType::UInt16,
                (4, false) => DataType::UInt32,
                _ => DataType::UInt64,
            },
            Shape::Float { bytes: 2 } => DataType::Float16,
            Shape::Float { bytes: 4 } => DataType::Float32,
            Shape::Float { .. } => DataType::Float64,
            Shape::Bool => DataType::Boolean,
            Shape::FixedBinary(n) => DataType::FixedSizeBinary(*n as i32),
            Shape::Binary | Shape::Raw if large[id as usize] => DataType::LargeBinary,
            Shape::Binary | Shape::Raw => DataType::Binary,
            Shape::Text if large[id as usize] => DataType::LargeUtf8,
            Shape::Text => DataType::Utf8,
            Shape::Struct { .. } | Shape::Union { .. } => DataType::Struct(self.fields(id, large)),
            Shape::List { item, fixed } => {
                let f = Arc::new(self.field("item", *item, large));
                match fixed {
                    Some(k) => DataType::FixedSizeList(f, *k as i32),
                    None if large[id as usize] => DataType::LargeList(f),
                    None => DataType::List(f),
                }
            }
        }
    }

    /// The Arrow field of a node under a name.
    pub fn field(&self, name: &str, id: NodeId, large: &[bool]) -> Field {
        Field::new(name, self.data_type(id, large), self.node(id).nullable)
    }

    /// The child fields of a struct or union node.
    pub fn fields(&self, id: NodeId, large: &[bool]) -> Fields {
        let n = self.node(id);
        let union = matches!(n.shape, Shape::Union { .. });
        n.names
            .iter()
            .zip(&n.children)
            .enumerate()
            .map(|(i, (name, &c))| {
                Arc::new(if union && i == 0 {
                    Field::new(VARIANT, variant_type(), self.node(c).nullable)
                } else {
                    self.field(name, c, large)
                })
            })
            .collect()
    }
}

/// The dictionary type of a union's variant column.
pub fn variant_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int8), Box::new(DataType::Utf8))
}

struct Builder<'p> {
    prog: &'p Program,
    nodes: Vec<LNode>,
    /// Structs being laid out (recursion becomes a raw column).
    active: Vec<u32>,
    /// Unions enclosing the node being laid out.
    union_depth: usize,
    /// Unions nested deeper than this are raw columns.
    max_union_depth: usize,
    max_nodes: usize,
    /// The deepest union nesting laid out as columns.
    deepest: usize,
}

impl<'p> Builder<'p> {
    fn push(&mut self, shape: Shape, nullable: bool) -> NodeId {
        self.nodes.push(LNode {
            shape,
            children: Vec::new(),
            names: Vec::new(),
            nullable,
            sparse: false,
            null_rows: false,
        });
        (self.nodes.len() - 1) as NodeId
    }

    fn scalar(&mut self, s: &Scalar, nullable: bool) -> NodeId {
        let shape = match *s {
            Scalar::Int { width, signed, .. } => Shape::Int {
                bytes: width.next_power_of_two(),
                signed,
            },
            Scalar::Float { width, .. } => Shape::Float { bytes: width },
            Scalar::Bool | Scalar::Bits { boolean: true, .. } => Shape::Bool,
            Scalar::Bytes(n) | Scalar::Pad(n) => Shape::FixedBinary(n),
            Scalar::Bits { width, signed, .. } => Shape::Int {
                bytes: (width.div_ceil(8)).next_power_of_two(),
                signed,
            },
        };
        self.push(shape, nullable)
    }

    fn node(&mut self, node: &'p Node, nullable: bool) -> NodeId {
        match node {
            Node::Scalar(s) => self.scalar(s, nullable),
            Node::Bytes { .. } => self.push(Shape::Binary, nullable),
            Node::Str { .. } | Node::Cstr { .. } => self.push(Shape::Text, nullable),
            Node::Varint { zigzag } => self.push(
                Shape::Int {
                    bytes: 8,
                    signed: *zigzag,
                },
                nullable,
            ),
            Node::Kind(k) => match k.column() {
                KindColumn::Text => self.push(Shape::Text, nullable),
                KindColumn::Raw => self.push(Shape::Raw, nullable),
            },
            Node::Struct(i) => self.structure(*i, nullable),
            Node::Array { item, count, .. } => {
                let fixed = match count {
                    Len::Fixed(n) => Some(*n as usize),
                    _ => None,
                };
                let id = self.push(Shape::List { item: 0, fixed }, nullable);
                // A null fixed-size list holds null items; a null variable list holds none.
                let item = self.node(item, nullable && fixed.is_some());
                self.nodes[id as usize].shape = Shape::List { item, fixed };
                self.nodes[id as usize].children = vec![item];
                id
            }
            Node::Union { cases, default, .. } => {
                let nodes: Vec<(String, &'p Node)> = cases
                    .iter()
                    .map(|(tag, n)| (self.case_name(n, tag), n))
                    .chain(
                        default
                            .as_deref()
                            .map(|n| (self.case_name(n, &Value::Absent), n)),
                    )
                    .collect();
                self.union(nodes, nullable)
            }
            Node::Registry { cases, default, .. } => {
                let nodes: Vec<(String, &'p Node)> = cases
                    .iter()
                    .map(|(tag, n, _)| (self.case_name(n, tag), n))
                    .chain(
                        default
                            .as_deref()
                            .map(|n| (self.case_name(n, &Value::Absent), n)),
                    )
                    .collect();
                self.union(nodes, nullable)
            }
        }
    }

    /// A variant's column name: its struct's name, else its tag (`default` for the default).
    fn case_name(&self, n: &Node, tag: &Value) -> String {
        match n {
            Node::Struct(i) => self.prog.structs[*i as usize].name.to_string(),
            _ => match tag {
                Value::Int(i) => i.to_string(),
                Value::Bytes(b) => bytewright_wire::show_bytes(b),
                _ => "default".into(),
            },
        }
    }

    fn union(&mut self, cases: Vec<(String, &'p Node)>, nullable: bool) -> NodeId {
        // Past the budget already, this attempt is thrown away: stop growing it.
        if self.union_depth >= self.max_union_depth || self.nodes.len() > self.max_nodes {
            return self.push(Shape::Raw, nullable);
        }
        self.union_depth += 1;
        self.deepest = self.deepest.max(self.union_depth);
        let id = self.union_columns(cases, nullable);
        self.union_depth -= 1;
        id
    }

    fn union_columns(&mut self, cases: Vec<(String, &'p Node)>, nullable: bool) -> NodeId {
        let mut names: Vec<Arc<str>> = Vec::with_capacity(cases.len() + 1);
        for (name, _) in &cases {
            // Two cases of one struct (or a struct named like the variant column) keep
            // distinct names.
            let mut unique = name.clone();
            let mut k = 2;
            while unique == VARIANT || names.iter().any(|n| **n == *unique) {
                unique = format!("{name}_{k}");
                k += 1;
            }
            names.push(unique.into());
        }
        let id = self.push(
            Shape::Union {
                names: names.clone(),
            },
            nullable,
        );
        let variant = self.push(
            Shape::Int {
                bytes: 1,
                signed: true,
            },
            nullable,
        );
        let mut children = vec![variant];
        for (_, n) in &cases {
            let c = self.node(n, true);
            self.nodes[c as usize].sparse = true;
            children.push(c);
        }
        let node = &mut self.nodes[id as usize];
        node.children = children;
        node.names = std::iter::once(Arc::from(VARIANT)).chain(names).collect();
        id
    }

    fn structure(&mut self, index: u32, nullable: bool) -> NodeId {
        if self.active.contains(&index) {
            return self.push(Shape::Raw, nullable);
        }
        let sp = &self.prog.structs[index as usize];
        let id = self.push(
            Shape::Struct {
                sink_id: sp.sink_id,
                struct_index: index,
            },
            nullable,
        );
        self.active.push(index);
        let mut infos: Vec<FieldInfo<'p>> = (0..sp.fields.len())
            .map(|_| FieldInfo {
                scalar: None,
                node: None,
                conditional: false,
            })
            .collect();
        for step in &sp.steps {
            match step {
                Step::Run(run) => {
                    for it in &run.items {
                        if let Some(f) = it.field {
                            infos[f as usize].scalar = Some(it.scalar);
                        }
                    }
                }
                Step::Field(fs) => {
                    let info = &mut infos[fs.field as usize];
                    info.node = Some(&fs.node);
                    info.conditional = fs.when.is_some();
                }
                Step::Align(_) => {}
            }
        }
        let mut children = Vec::with_capacity(infos.len());
        for info in &infos {
            let null = nullable || info.conditional;
            let c = match (&info.scalar, info.node) {
                (Some(s), _) => self.scalar(s, null),
                (None, Some(n)) => self.node(n, null),
                (None, None) => self.push(Shape::Binary, true),
            };
            // An absent conditional struct, union or fixed-size list leaves its children
            // untouched (a null scalar or variable-size value is one append, kept dense).
            let node = &mut self.nodes[c as usize];
            if info.conditional
                && matches!(
                    node.shape,
                    Shape::Struct { .. } | Shape::Union { .. } | Shape::List { fixed: Some(_), .. }
                )
            {
                node.sparse = true;
            }
            // Absent, it is a null row (see `Layout::mark_null_rows`).
            node.null_rows |= info.conditional;
            children.push(c);
        }
        self.active.pop();
        let node = &mut self.nodes[id as usize];
        node.children = children;
        node.names = sp.fields.clone();
        id
    }
}
