//! Enum fields as dictionary-encoded names (`unpack_table(..., enum_names=True)`).
//!
//! A decoded table holds each enum field's wire integer. On request, the integer columns of
//! enum fields are replaced by dictionary columns of member names: the dictionary lists the
//! members in declaration order, then any other value met (a flag combination as its member
//! names joined by `|`, anything else as its decimal text), so no value is lost.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{
    Array, ArrayRef, DictionaryArray, FixedSizeListArray, GenericListArray, Int32Array,
    RecordBatch, StringArray, StructArray,
};
use arrow_schema::{ArrowError, DataType, Field, Fields, Schema};

use crate::decode::Table;
use crate::layout::{Layout, NodeId, Shape};

/// The members of one enum: flags decompose values that are no member.
#[derive(Debug, Clone)]
pub struct EnumNames {
    pub flag: bool,
    pub members: Vec<(i128, String)>,
}

impl EnumNames {
    fn name_of(&self, v: i128) -> String {
        if let Some((_, n)) = self.members.iter().find(|(m, _)| *m == v) {
            return n.clone();
        }
        if self.flag && v > 0 {
            let mut left = v;
            let mut parts = Vec::new();
            for (m, n) in &self.members {
                if *m > 0 && m & (m - 1) == 0 && left & m != 0 {
                    parts.push(n.clone());
                    left &= !m;
                }
            }
            if !parts.is_empty() {
                if left != 0 {
                    parts.push(left.to_string());
                }
                return parts.join("|");
            }
        }
        v.to_string()
    }
}

/// Replaces the enum columns of `table` (by layout node) with dictionaries of names.
pub fn name_enums(
    layout: &Layout,
    table: Table,
    enums: &HashMap<NodeId, EnumNames>,
) -> Result<Table, ArrowError> {
    if enums.is_empty() {
        return Ok(table);
    }
    let wanted = holds_enums(layout, enums);
    let (_, roots) = layout.columns();
    let mut batches = Vec::with_capacity(table.batches.len());
    let mut schema: Option<Arc<Schema>> = None;
    for b in &table.batches {
        let mut cols = Vec::with_capacity(b.num_columns());
        let mut fields = Vec::with_capacity(b.num_columns());
        for (i, (&node, f)) in roots.iter().zip(table.schema.fields()).enumerate() {
            let a = rewrite(layout, node, b.column(i), enums, &wanted)?;
            fields.push(Field::new(f.name(), a.data_type().clone(), f.is_nullable()));
            cols.push(a);
        }
        let s = schema
            .get_or_insert_with(|| Arc::new(Schema::new(fields)))
            .clone();
        batches.push(RecordBatch::try_new(s, cols)?);
    }
    Ok(Table {
        schema: schema.unwrap_or(table.schema),
        batches,
    })
}

/// Which nodes are enums or hold one (so other columns are kept as they are).
fn holds_enums(layout: &Layout, enums: &HashMap<NodeId, EnumNames>) -> Vec<bool> {
    fn visit(
        layout: &Layout,
        id: NodeId,
        enums: &HashMap<NodeId, EnumNames>,
        out: &mut [bool],
    ) -> bool {
        let mut any = enums.contains_key(&id);
        for &c in &layout.node(id).children {
            any |= visit(layout, c, enums, out);
        }
        out[id as usize] = any;
        any
    }
    let mut out = vec![false; layout.nodes.len()];
    visit(layout, layout.root, enums, &mut out);
    out
}

fn rewrite(
    layout: &Layout,
    id: NodeId,
    arr: &ArrayRef,
    enums: &HashMap<NodeId, EnumNames>,
    wanted: &[bool],
) -> Result<ArrayRef, ArrowError> {
    if !wanted[id as usize] {
        return Ok(arr.clone());
    }
    if let Some(e) = enums.get(&id) {
        return dictionary(arr, e);
    }
    let node = layout.node(id);
    match (&node.shape, arr.data_type()) {
        (Shape::Struct { .. } | Shape::Union { .. }, DataType::Struct(fields)) => {
            let s = arr.as_struct();
            let mut children = Vec::with_capacity(s.num_columns());
            let mut new_fields = Vec::with_capacity(s.num_columns());
            for ((&c, f), a) in node.children.iter().zip(fields).zip(s.columns()) {
                let a = rewrite(layout, c, a, enums, wanted)?;
                new_fields.push(Arc::new(Field::new(
                    f.name(),
                    a.data_type().clone(),
                    f.is_nullable(),
                )));
                children.push(a);
            }
            Ok(Arc::new(StructArray::try_new(
                Fields::from(new_fields),
                children,
                s.nulls().cloned(),
            )?))
        }
        (Shape::List { item, .. }, DataType::List(f)) => {
            let l = arr.as_list::<i32>();
            let values = rewrite(layout, *item, l.values(), enums, wanted)?;
            let f = Arc::new(Field::new(
                f.name(),
                values.data_type().clone(),
                f.is_nullable(),
            ));
            Ok(Arc::new(GenericListArray::<i32>::try_new(
                f,
                l.offsets().clone(),
                values,
                l.nulls().cloned(),
            )?))
        }
        (Shape::List { item, .. }, DataType::LargeList(f)) => {
            let l = arr.as_list::<i64>();
            let values = rewrite(layout, *item, l.values(), enums, wanted)?;
            let f = Arc::new(Field::new(
                f.name(),
                values.data_type().clone(),
                f.is_nullable(),
            ));
            Ok(Arc::new(GenericListArray::<i64>::try_new(
                f,
                l.offsets().clone(),
                values,
                l.nulls().cloned(),
            )?))
        }
        (Shape::List { item, .. }, DataType::FixedSizeList(f, n)) => {
            let l = arr.as_fixed_size_list();
            let values = rewrite(layout, *item, l.values(), enums, wanted)?;
            let f = Arc::new(Field::new(
                f.name(),
                values.data_type().clone(),
                f.is_nullable(),
            ));
            Ok(Arc::new(FixedSizeListArray::try_new(
                f,
                *n,
                values,
                l.nulls().cloned(),
            )?))
        }
        _ => Ok(arr.clone()),
    }
}

fn int_at(a: &dyn Array, i: usize) -> Option<i128> {
    Some(match a.data_type() {
        DataType::Int8 => a.as_primitive::<Int8Type>().value(i).into(),
        DataType::Int16 => a.as_primitive::<Int16Type>().value(i).into(),
        DataType::Int32 => a.as_primitive::<Int32Type>().value(i).into(),
        DataType::Int64 => a.as_primitive::<Int64Type>().value(i).into(),
        DataType::UInt8 => a.as_primitive::<UInt8Type>().value(i).into(),
        DataType::UInt16 => a.as_primitive::<UInt16Type>().value(i).into(),
        DataType::UInt32 => a.as_primitive::<UInt32Type>().value(i).into(),
        DataType::UInt64 => a.as_primitive::<UInt64Type>().value(i).into(),
        _ => return None,
    })
}

/// An integer column as a dictionary of names.
fn dictionary(arr: &ArrayRef, e: &EnumNames) -> Result<ArrayRef, ArrowError> {
    let mut names: Vec<String> = e.members.iter().map(|(_, n)| n.clone()).collect();
    let mut index: HashMap<i128, i32> = e
        .members
        .iter()
        .enumerate()
        .map(|(k, (v, _))| (*v, k as i32))
        .collect();
    let mut keys = Vec::with_capacity(arr.len());
    for i in 0..arr.len() {
        if arr.is_null(i) {
            keys.push(0);
            continue;
        }
        let Some(v) = int_at(arr.as_ref(), i) else {
            return Ok(arr.clone());
        };
        let k = *index.entry(v).or_insert_with(|| {
            names.push(e.name_of(v));
            (names.len() - 1) as i32
        });
        keys.push(k);
    }
    if names.is_empty() {
        names.push(String::new());
    }
    let keys = Int32Array::new(keys.into(), arr.nulls().cloned());
    let values: ArrayRef = Arc::new(StringArray::from(names));
    Ok(Arc::new(DictionaryArray::<Int32Type>::try_new(
        keys, values,
    )?))
}
