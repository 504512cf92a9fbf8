//! Columnar decode from Rust alone: values, nulls, unions, raw columns, threads and errors.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int16Type, Int32Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use bytewright_columns::{Columnar, Failure, Request};
use bytewright_wire::{compile, Schema};

fn columnar(json: &str) -> Columnar {
    let schema = Schema::from_json(json).expect("schema");
    Columnar::new(Arc::new(compile(&schema).expect("compiles")))
}

fn decode(c: &Columnar, data: &[u8], threads: usize) -> bytewright_columns::Table {
    match c.decode(
        data,
        Request {
            offset: 0,
            count: None,
            threads,
        },
    ) {
        Ok(t) => t,
        Err(Failure::Decode(e)) => panic!("decode failed: {} at {}", e.message(), e.offset),
        Err(Failure::Arrow(e)) => panic!("arrow: {e}"),
        Err(Failure::Bug(e)) => panic!("bug: {e}"),
    }
}

fn concat(t: &bytewright_columns::Table) -> RecordBatch {
    arrow_select_concat(&t.schema, &t.batches)
}

/// Concatenates batches without arrow-select: rebuild from row slices via `to_data`.
fn arrow_select_concat(schema: &arrow_schema::SchemaRef, batches: &[RecordBatch]) -> RecordBatch {
    if batches.len() == 1 {
        return batches[0].clone();
    }
    // Compare by flattening each column to debug strings per row.
    let _ = schema;
    panic!("use rows() for multi-batch tables")
}

/// Every cell of every row, for comparing tables across thread counts (ArrayData compares
/// logically, honouring slices).
fn rows(t: &bytewright_columns::Table) -> Vec<Vec<arrow_data::ArrayData>> {
    let mut out = Vec::new();
    for b in &t.batches {
        for r in 0..b.num_rows() {
            out.push(
                b.columns()
                    .iter()
                    .map(|c| c.slice(r, 1).to_data())
                    .collect(),
            );
        }
    }
    out
}

const IHHQ: &str = r#"{"root": {"t": "struct", "id": 0, "name": "Rec", "order": "little", "fields": [
    {"name": "a", "type": {"t": "int", "width": 4, "signed": false}},
    {"name": "b", "type": {"t": "int", "width": 2, "signed": false}},
    {"name": "c", "type": {"t": "int", "width": 2, "signed": true}},
    {"name": "d", "type": {"t": "int", "width": 8, "signed": false}}]}}"#;

fn ihhq(n: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for i in 0..n as u64 {
        v.extend_from_slice(&(i as u32 * 3).to_le_bytes());
        v.extend_from_slice(&(i as u16).to_le_bytes());
        v.extend_from_slice(&(-(i as i16)).to_le_bytes());
        v.extend_from_slice(&(i * 1_000_003).to_le_bytes());
    }
    v
}

#[test]
fn fixed_records_become_typed_columns() {
    let c = columnar(IHHQ);
    assert!(
        c.plan.is_some(),
        "plain fixed records take the strided path"
    );
    for threads in [1, 2, 3, 7] {
        let t = decode(&c, &ihhq(1000), threads);
        let b = concat(&t);
        assert_eq!(b.num_rows(), 1000);
        let a = b.column(0).as_primitive::<UInt32Type>();
        let bb = b.column(1).as_primitive::<UInt16Type>();
        let cc = b.column(2).as_primitive::<Int16Type>();
        let d = b.column(3).as_primitive::<UInt64Type>();
        for i in 0..1000usize {
            assert_eq!(a.value(i), i as u32 * 3);
            assert_eq!(bb.value(i), i as u16);
            assert_eq!(cc.value(i), -(i as i16));
            assert_eq!(d.value(i), i as u64 * 1_000_003);
        }
        assert_eq!(a.null_count(), 0);
    }
}

#[test]
fn big_endian_and_24_bit_fields() {
    let c = columnar(
        r#"{"root": {"t": "struct", "id": 0, "name": "R", "order": "big", "fields": [
        {"name": "u", "type": {"t": "int", "width": 3, "signed": false}},
        {"name": "s", "type": {"t": "int", "width": 3, "signed": true}},
        {"name": "w", "type": {"t": "int", "width": 4, "signed": true}}]}}"#,
    );
    let data = [0x01, 0x02, 0x03, 0xff, 0xff, 0xfe, 0x80, 0, 0, 1];
    let t = decode(&c, &data, 1);
    let b = concat(&t);
    assert_eq!(b.column(0).as_primitive::<UInt32Type>().value(0), 0x010203);
    assert_eq!(b.column(1).as_primitive::<Int32Type>().value(0), -2);
    assert_eq!(
        b.column(2).as_primitive::<Int32Type>().value(0),
        i32::from_be_bytes([0x80, 0, 0, 1])
    );
}

const VARYING: &str = r#"{"root": {"t": "struct", "id": 0, "name": "Msg", "order": "little", "fields": [
    {"name": "kind", "type": {"t": "int", "width": 1, "signed": false}},
    {"name": "n", "type": {"t": "int", "width": 1, "signed": false}},
    {"name": "name", "type": {"t": "str", "len": {"expr": ["name", "n"]}, "encoding": "utf-8"}},
    {"name": "extra", "type": {"t": "int", "width": 2, "signed": false},
        "when": ["bin", "==", ["name", "kind"], ["int", 1]]},
    {"name": "body", "type": {"t": "union", "tag": ["name", "kind"], "cases": [
        {"tag": {"int": 1}, "type": {"t": "int", "width": 2, "signed": false}},
        {"tag": {"int": 2}, "type": {"t": "struct", "id": 1, "name": "Pair", "fields": [
            {"name": "x", "type": {"t": "int", "width": 1, "signed": false}},
            {"name": "y", "type": {"t": "int", "width": 1, "signed": false}}]}}],
        "default": {"t": "bytes", "len": {"fixed": 1}}}},
    {"name": "count", "type": {"t": "int", "width": 1, "signed": false}},
    {"name": "items", "type": {"t": "array", "item": {"t": "int", "width": 1, "signed": false},
        "count": {"expr": ["name", "count"]}}}]}}"#;

fn varying_msg(i: usize) -> Vec<u8> {
    let kind = (i % 3 + 1) as u8;
    let name = "é".repeat(i % 4) + &"x".repeat(i % 5);
    let mut v = vec![kind, name.len() as u8];
    v.extend_from_slice(name.as_bytes());
    if kind == 1 {
        v.extend_from_slice(&(i as u16).to_le_bytes());
        v.extend_from_slice(&(i as u16).wrapping_add(1).to_le_bytes());
    } else if kind == 2 {
        v.extend_from_slice(&[i as u8, (i * 2) as u8]);
    } else {
        v.push(0xaa);
    }
    let count = (i % 6) as u8;
    v.push(count);
    v.extend((0..count).map(|k| k.wrapping_add(i as u8)));
    v
}

#[test]
fn varying_records_unions_conditionals_and_lists() {
    let c = columnar(VARYING);
    assert!(c.plan.is_none());
    let data: Vec<u8> = (0..50).flat_map(varying_msg).collect();
    let t = decode(&c, &data, 1);
    let b = concat(&t);
    assert_eq!(b.num_rows(), 50);
    let names = b.column(2).as_string::<i32>();
    let extra = b.column(3).as_primitive::<UInt16Type>();
    let body = b.column(4).as_struct();
    assert_eq!(body.column_names(), vec!["variant", "1", "Pair", "default"]);
    let items = b.column(6).as_list::<i32>();
    for i in 0..50usize {
        let name = "é".repeat(i % 4) + &"x".repeat(i % 5);
        assert_eq!(names.value(i), name);
        let kind = i % 3 + 1;
        assert_eq!(extra.is_valid(i), kind == 1, "row {i}");
        if kind == 1 {
            assert_eq!(extra.value(i), i as u16);
        }
        let variant = body
            .column(0)
            .as_dictionary::<arrow_array::types::Int8Type>();
        assert_eq!(variant.keys().value(i) as usize, kind - 1);
        assert_eq!(body.column(1).is_valid(i), kind == 1);
        assert_eq!(body.column(2).is_valid(i), kind == 2);
        assert_eq!(body.column(3).is_valid(i), kind == 3);
        if kind == 2 {
            let pair = body.column(2).as_struct();
            assert_eq!(pair.column(0).as_primitive::<UInt8Type>().value(i), i as u8);
        }
        let list = items.value(i);
        let list = list.as_primitive::<UInt8Type>();
        assert_eq!(list.len(), i % 6);
        for k in 0..list.len() {
            assert_eq!(list.value(k), (k + i) as u8);
        }
    }
}

#[test]
fn variants_no_row_holds_are_null_columns_of_every_row() {
    let c = columnar(VARYING);
    // Only `kind` 1: the `Pair` and `default` variants (and `Pair`'s fields) get no value.
    let data: Vec<u8> = (0..60_000)
        .filter(|i| i % 3 == 0)
        .flat_map(varying_msg)
        .collect();
    for threads in [1, 2] {
        let t = decode(&c, &data, threads);
        for b in &t.batches {
            let body = b.column(4).as_struct();
            assert_eq!(body.len(), b.num_rows());
            assert_eq!(body.column(1).null_count(), 0);
            for k in [2, 3] {
                let v = body.column(k);
                assert_eq!((v.len(), v.null_count()), (b.num_rows(), b.num_rows()));
                v.to_data()
                    .validate_full()
                    .expect("a valid all-null column");
            }
            let pair = body.column(2).as_struct();
            for f in pair.columns() {
                assert_eq!(f.len(), b.num_rows());
                assert_eq!(f.null_count(), b.num_rows());
            }
            b.column(4)
                .to_data()
                .validate_full()
                .expect("a valid union column");
        }
    }
}

#[test]
fn every_thread_count_gives_the_same_rows() {
    let c = columnar(VARYING);
    let data: Vec<u8> = (0..20_000).flat_map(varying_msg).collect();
    let one = rows(&decode(&c, &data, 1));
    assert_eq!(one.len(), 20_000);
    for threads in [2, 3, 5] {
        let t = decode(&c, &data, threads);
        assert!(t.batches.len() > 1, "{threads} threads split the rows");
        assert!(rows(&t) == one, "{threads} threads");
    }
}

#[test]
fn whole_before_finds_the_first_message_at_or_after_a_position() {
    let c = columnar(VARYING);
    let msgs: Vec<Vec<u8>> = (0..200).map(varying_msg).collect();
    let starts: Vec<usize> = msgs
        .iter()
        .scan(0, |pos, m| {
            let at = *pos;
            *pos += m.len();
            Some(at)
        })
        .collect();
    let data: Vec<u8> = msgs.concat();
    for stop in 0..=data.len() + 3 {
        // The first message that starts at or after `stop`, and how many start before it.
        let rows = starts.iter().take_while(|&&s| s < stop).count();
        let end = starts.get(rows).copied().unwrap_or(data.len());
        let got = c
            .whole_before(&data, 0, usize::MAX, stop)
            .unwrap_or_else(|_| panic!("stop {stop}"));
        assert_eq!(got, (rows, end), "stop {stop}");
    }
    // From a message start, with a row limit, and on input that ends inside a message.
    let (s5, s9) = (starts[5], starts[9]);
    assert_eq!(c.whole_before(&data, s5, 2, s9).ok(), Some((2, starts[7])));
    let cut = &data[..starts[9] + 1];
    assert_eq!(
        c.whole_before(cut, 0, usize::MAX, data.len()).ok(),
        Some((9, starts[9]))
    );
    // A length that runs past the input is a message cut short: it waits for more data.
    let mut long = data.clone();
    long[starts[199] + 1] = 250;
    assert_eq!(
        c.whole_before(&long, 0, usize::MAX, long.len()).ok(),
        Some((199, starts[199]))
    );
    let fixed = columnar(IHHQ);
    let data = ihhq(10);
    assert_eq!(
        fixed.whole_before(&data, 0, usize::MAX, 17).ok(),
        Some((2, 32))
    );
    assert_eq!(
        fixed.whole_before(&data, 16, usize::MAX, 16).ok(),
        Some((0, 16))
    );
    assert_eq!(
        fixed.whole_before(&data[..70], 0, usize::MAX, 99).ok(),
        Some((4, 64))
    );
    assert_eq!(fixed.whole_before(&data, 0, 3, 99).ok(), Some((3, 48)));
}

#[test]
fn errors_name_the_row_the_field_and_the_absolute_offset() {
    let c = columnar(VARYING);
    let mut data: Vec<u8> = (0..20_000).flat_map(varying_msg).collect();
    // Break the UTF-8 of message 15000's name (its name has an 'é' when 15000 % 4 != 0).
    let start: usize = (0..15_001).map(|i| varying_msg(i).len()).sum();
    data[start + 2] = 0xff;
    for threads in [1, 2, 3] {
        match c.decode(
            &data,
            Request {
                offset: 0,
                count: None,
                threads,
            },
        ) {
            Err(Failure::Decode(e)) => {
                assert_eq!(e.path(), "[15001].name");
                assert_eq!(e.offset, start + 2);
            }
            other => panic!("expected a decode error, got {other:?}"),
        }
    }
    // Truncation: the last message is short.
    let data: Vec<u8> = (0..100).flat_map(varying_msg).collect();
    let cut = &data[..data.len() - 1];
    match c.decode(
        cut,
        Request {
            offset: 0,
            count: None,
            threads: 1,
        },
    ) {
        Err(Failure::Decode(e)) => assert!(e.path().starts_with("[99]"), "{}", e.path()),
        other => panic!("expected a decode error, got {other:?}"),
    }
}

#[test]
fn count_and_offset() {
    let c = columnar(IHHQ);
    let data = ihhq(10);
    let t = c
        .decode(
            &data,
            Request {
                offset: 16,
                count: Some(3),
                threads: 1,
            },
        )
        .expect("decodes");
    let b = concat(&t);
    assert_eq!(b.num_rows(), 3);
    assert_eq!(b.column(0).as_primitive::<UInt32Type>().value(0), 3);
    match c.decode(
        &data,
        Request {
            offset: 0,
            count: Some(11),
            threads: 1,
        },
    ) {
        Err(Failure::Decode(e)) => {
            assert!(e.path().starts_with("[10]"), "{}", e.path());
            assert_eq!(e.offset, 160);
        }
        other => panic!("expected an error, got {other:?}"),
    }
    let empty = c
        .decode(
            &[],
            Request {
                offset: 0,
                count: None,
                threads: 4,
            },
        )
        .expect("empty input is an empty table");
    assert_eq!(empty.num_rows(), 0);
    assert_eq!(empty.schema.fields().len(), 4);
}

#[test]
fn recursive_and_self_describing_fields_are_raw_bytes() {
    let c = columnar(
        r#"{"root": {"t": "struct", "id": 0, "name": "Node", "fields": [
        {"name": "v", "type": {"t": "int", "width": 1, "signed": false}},
        {"name": "n", "type": {"t": "int", "width": 1, "signed": false}},
        {"name": "kids", "type": {"t": "array", "item": {"t": "ref", "id": 0},
            "count": {"expr": ["name", "n"]}}},
        {"name": "meta", "type": {"t": "msgpack"}}]}}"#,
    );
    // Node(v=1, kids=[Node(v=2, kids=[], meta=nil), Node(v=3, kids=[], meta=7)], meta=[1,2])
    let data = [1, 2, 2, 0, 0xc0, 3, 0, 0x07, 0x92, 1, 2];
    let t = decode(&c, &data, 1);
    let b = concat(&t);
    assert_eq!(b.num_rows(), 1);
    let kids = b.column(2).as_list::<i32>();
    let kids = kids.value(0);
    let kids = kids.as_binary::<i32>();
    assert_eq!(kids.value(0), &[2, 0, 0xc0]);
    assert_eq!(kids.value(1), &[3, 0, 0x07]);
    assert_eq!(b.column(3).as_binary::<i32>().value(0), &[0x92, 1, 2]);
    assert_eq!(*b.column(3).data_type(), DataType::Binary);
}

#[test]
fn constants_and_bools_are_checked_on_the_strided_path() {
    let c = columnar(
        r#"{"root": {"t": "struct", "id": 0, "name": "R", "fields": [
        {"name": "magic", "type": {"t": "int", "width": 2, "signed": false}, "const": {"int": 51966}},
        {"name": "ok", "type": {"t": "bool"}}]}}"#,
    );
    assert!(c.plan.is_some());
    let mut data: Vec<u8> = (0..500).flat_map(|i| [0xca, 0xfe, (i % 2) as u8]).collect();
    let t = decode(&c, &data, 2);
    assert_eq!(concat(&t).column(1).as_boolean().true_count(), 250);
    data[3 * 300 + 2] = 7;
    data[3 * 400] = 0;
    for threads in [1, 2, 3] {
        match c.decode(
            &data,
            Request {
                offset: 0,
                count: None,
                threads,
            },
        ) {
            Err(Failure::Decode(e)) => {
                assert_eq!(e.path(), "[300].ok");
                assert_eq!(e.offset, 902);
            }
            other => panic!("expected an error, got {other:?}"),
        }
    }
}

/// Every buffer of `data` and of its children: (capacity, length) in bytes. Columns no row
/// of a batch reached are left out: they are slices of one zeroed block the batch shares.
fn buffer_sizes(data: &arrow_data::ArrayData, out: &mut Vec<(usize, usize)>) {
    if !data.is_empty() && data.null_count() == data.len() {
        return;
    }
    for b in data.buffers() {
        out.push((b.capacity(), b.len()));
    }
    for c in data.child_data() {
        buffer_sizes(c, out);
    }
}

#[test]
fn column_buffers_are_sized_from_the_first_rows_and_never_twice_too_large() {
    // Columns are sized for the whole input from its first rows: rows that hold far more
    // (or far less) than the first ones still give buffers at most twice their contents
    // (past a few KiB, below which a buffer keeps its capacity).
    let c = columnar(VARYING);
    let short = |i: usize| {
        let mut m = varying_msg(i);
        let count_at = m.len() - 1 - i % 6;
        m.truncate(count_at);
        m.push(0);
        m
    };
    let long = |i: usize| varying_msg(i * 6 + 5);
    let inputs: [Vec<u8>; 2] = [
        (0..120_000)
            .flat_map(|i| if i < 3000 { long(i) } else { short(i) })
            .collect(),
        (0..120_000)
            .flat_map(|i| if i < 3000 { short(i) } else { long(i) })
            .collect(),
    ];
    for data in &inputs {
        let one = rows(&decode(&c, data, 1));
        assert_eq!(one.len(), 120_000);
        for threads in [1, 2, 3] {
            let t = decode(&c, data, threads);
            assert!(rows(&t) == one, "{threads} threads");
            let mut sizes = Vec::new();
            for b in &t.batches {
                for col in b.columns() {
                    buffer_sizes(&col.to_data(), &mut sizes);
                }
            }
            for (cap, len) in sizes {
                assert!(
                    cap <= (2 * len).max(1 << 16),
                    "a buffer of {len} bytes holds {cap} ({threads} threads)"
                );
            }
        }
    }
}

const STAGED: &str = r#"{"root": {"t": "struct", "id": 0, "name": "Staged", "order": "big", "fields": [
    {"name": "id", "type": {"t": "int", "width": 4, "signed": false}},
    {"name": "temp", "type": {"t": "float", "width": 8}},
    {"name": "tag", "type": {"t": "bytes", "len": {"fixed": 3}}},
    {"name": "flag", "type": {"t": "int", "width": 1, "signed": true}},
    {"name": "n", "type": {"t": "int", "width": 2, "signed": false}},
    {"name": "note", "type": {"t": "bytes", "len": {"expr": ["name", "n"]}}},
    {"name": "count", "type": {"t": "int", "width": 1, "signed": false}},
    {"name": "pts", "type": {"t": "array", "count": {"expr": ["name", "count"]},
        "item": {"t": "struct", "id": 1, "name": "Pt", "order": "little", "fields": [
            {"name": "x", "type": {"t": "int", "width": 2, "signed": true}},
            {"name": "y", "type": {"t": "int", "width": 4, "signed": false}}]}}},
    {"name": "extra", "type": {"t": "int", "width": 4, "signed": true},
        "when": ["bin", "==", ["name", "flag"], ["int", 1]]},
    {"name": "last", "type": {"t": "int", "width": 2, "signed": false}}]}}"#;

fn staged_msg(i: usize) -> Vec<u8> {
    let mut v = (i as u32 * 7).to_be_bytes().to_vec();
    v.extend_from_slice(&(i as f64 / 8.0).to_be_bytes());
    v.extend_from_slice(&[i as u8, (i >> 8) as u8, 0x5a]);
    let flag = (i % 3) as i8 - 1;
    v.push(flag as u8);
    let n = i % 7;
    v.extend_from_slice(&(n as u16).to_be_bytes());
    v.extend((0..n).map(|k| (k * 3 + i) as u8));
    let count = i % 4;
    v.push(count as u8);
    for k in 0..count {
        v.extend_from_slice(&(-((i + k) as i16)).to_le_bytes());
        v.extend_from_slice(&((i * 10 + k) as u32).to_le_bytes());
    }
    if flag == 1 {
        v.extend_from_slice(&(-(i as i32)).to_be_bytes());
    }
    v.extend_from_slice(&(i as u16 ^ 0xbeef).to_be_bytes());
    v
}

#[test]
fn runs_of_many_rows_reach_their_columns_in_order() {
    // 1,000 rows: runs wait in batches of rows before they go to their columns, so this
    // crosses several batches and ends inside one; the list's structs batch on their own.
    let c = columnar(STAGED);
    let data: Vec<u8> = (0..1000).flat_map(staged_msg).collect();
    let t = decode(&c, &data, 1);
    let b = concat(&t);
    assert_eq!(b.num_rows(), 1000);
    let id = b.column(0).as_primitive::<UInt32Type>();
    let temp = b
        .column(1)
        .as_primitive::<arrow_array::types::Float64Type>();
    let tag = b.column(2).as_fixed_size_binary();
    let flag = b.column(3).as_primitive::<arrow_array::types::Int8Type>();
    let note = b.column(5).as_binary::<i32>();
    let pts = b.column(7).as_list::<i32>();
    let extra = b.column(8).as_primitive::<Int32Type>();
    let last = b.column(9).as_primitive::<UInt16Type>();
    for i in 0..1000usize {
        assert_eq!(id.value(i), i as u32 * 7, "row {i}");
        assert_eq!(temp.value(i), i as f64 / 8.0);
        assert_eq!(tag.value(i), &[i as u8, (i >> 8) as u8, 0x5a]);
        assert_eq!(flag.value(i), (i % 3) as i8 - 1);
        let want: Vec<u8> = (0..i % 7).map(|k| (k * 3 + i) as u8).collect();
        assert_eq!(note.value(i), &want[..]);
        let p = pts.value(i);
        let p = p.as_struct();
        assert_eq!(p.len(), i % 4);
        for k in 0..p.len() {
            assert_eq!(
                p.column(0).as_primitive::<Int16Type>().value(k),
                -((i + k) as i16)
            );
            assert_eq!(
                p.column(1).as_primitive::<UInt32Type>().value(k),
                (i * 10 + k) as u32
            );
        }
        assert_eq!(extra.is_valid(i), i % 3 == 2, "row {i}");
        if i % 3 == 2 {
            assert_eq!(extra.value(i), -(i as i32));
        }
        assert_eq!(last.value(i), i as u16 ^ 0xbeef);
        assert!(b.columns().iter().all(|c| c.len() == 1000));
    }
    // Two threads: the second decodes from a guessed boundary; the same rows.
    assert_eq!(rows(&decode(&c, &data, 2)), rows(&t));
}
