//! MessagePack values (the `msgpack` kind): nil, bool, int, float, str, bin, ext, array and
//! map, nested up to the depth limit. Pack chooses the smallest formats, as the `msgpack`
//! package does by default, so the bytes are the same.

use serde::{Deserialize, Serialize};

use super::{Column, FieldKind};
use crate::error::{At, Error, Result};
use crate::host::{Dyn, Output, Sink, Source};
use crate::pack::Enc;
use crate::program::Encoding;
use crate::unpack::Dec;

/// A self-describing MessagePack value.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct Msgpack {}

impl FieldKind for Msgpack {
    const NAME: &'static str = "msgpack";

    fn min_size(&self) -> usize {
        1
    }

    fn column(&self) -> Column {
        Column::Raw
    }

    fn decode<S: Sink>(&self, d: &mut Dec<'_, '_, '_, S>) -> Result<S::Value, S::Error> {
        let base = d.depth;
        decode_value(d, base)
    }

    fn encode<S: Source, O: Output>(
        &self,
        e: &mut Enc<'_, '_, '_, '_, S, O>,
        v: &S::Value,
    ) -> Result<(), S::Error> {
        encode_value(e, v, 0)
    }
}

/// One value, recursively. `base` is the decoder's depth where the outermost value started:
/// the levels above it are this value's arrays and maps.
fn decode_value<S: Sink>(d: &mut Dec<'_, '_, '_, S>, base: u32) -> Result<S::Value, S::Error> {
    let at = d.pos;
    let head = d.take(1)?[0];
    let be = |b: &[u8]| b.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x));
    let r = match head {
        0x00..=0x7f => d.sink.uint(u64::from(head)),
        0xe0..=0xff => d.sink.int(i64::from(head as i8)),
        0xc0 => d.sink.none(),
        0xc2 => d.sink.bool(false),
        0xc3 => d.sink.bool(true),
        0xcc..=0xcf => {
            let n = 1usize << (head - 0xcc);
            let v = be(d.take(n)?);
            d.sink.uint(v)
        }
        0xd0..=0xd3 => {
            let n = 1usize << (head - 0xd0);
            let v = be(d.take(n)?);
            let shift = 64 - 8 * n as u32;
            d.sink.int(((v << shift) as i64) >> shift)
        }
        0xca => {
            let v = be(d.take(4)?) as u32;
            d.sink.float(f64::from(f32::from_bits(v)))
        }
        0xcb => {
            let v = be(d.take(8)?);
            d.sink.float(f64::from_bits(v))
        }
        0xa0..=0xbf | 0xd9..=0xdb => {
            let n = match head {
                0xa0..=0xbf => usize::from(head & 0x1f),
                _ => be(d.take(1usize << (head - 0xd9))?) as usize,
            };
            let start = d.pos;
            let b = d.take(n)?;
            return d.text(b, Encoding::Utf8, start);
        }
        0xc4..=0xc6 => {
            let n = be(d.take(1usize << (head - 0xc4))?) as usize;
            let b = d.take(n)?;
            d.sink.bytes(b)
        }
        0xd4..=0xd8 | 0xc7..=0xc9 => {
            let n = match head {
                0xd4..=0xd8 => 1usize << (head - 0xd4),
                _ => be(d.take(1usize << (head - 0xc7))?) as usize,
            };
            let code = d.take(1)?[0] as i8;
            let b = d.take(n)?;
            d.sink.ext(code, b)
        }
        0x90..=0x9f | 0xdc | 0xdd | 0x80..=0x8f | 0xde | 0xdf => {
            let is_map = matches!(head, 0x80..=0x8f | 0xde | 0xdf);
            let n = match head {
                0x80..=0x9f => u64::from(head & 0x0f),
                0xdc | 0xde => be(d.take(2)?),
                _ => be(d.take(4)?),
            };
            let max = d.p.limits.max_count;
            if n > max {
                return Err(Error::invalid(
                    format!("{n} items exceed the count limit {max}"),
                    at,
                ));
            }
            if d.depth >= d.p.limits.max_depth {
                // One message for the whole value: the path names the field, not every level.
                let levels = d.depth - base;
                let mut e = Error::invalid(
                    format!(
                        "the value nests deeper than {levels} arrays and maps (the depth limit)"
                    ),
                    at,
                );
                e.skip = u8::try_from(levels).unwrap_or(u8::MAX);
                return Err(e);
            }
            d.depth += 1;
            // Every item takes at least one byte (two per map entry): never preallocate more.
            let per = if is_map { 2 } else { 1 };
            let cap = (n as usize).min((d.end - d.pos) / per);
            let v = if is_map {
                let mut m = d.sink.begin_map(cap).map_err(|e| d.host(e))?;
                for i in 0..n as usize {
                    let kat = d.pos;
                    let key_head = d.buf.get(kat).copied().unwrap_or(0);
                    let k = decode_value(d, base).at_index(i)?;
                    if matches!(key_head, 0x80..=0x9f | 0xdc..=0xdf) {
                        return Err(Error::invalid("a map key cannot be an array or a map", kat))
                            .at_index(i);
                    }
                    let v = decode_value(d, base).at_index(i)?;
                    d.sink.map_insert(&mut m, k, v).map_err(|e| d.host(e))?;
                }
                d.sink.end_map(m)
            } else {
                let mut l = d.sink.begin_list(cap).map_err(|e| d.host(e))?;
                for i in 0..n as usize {
                    d.sink.enter_item(&mut l, i, d.pos);
                    let v = decode_value(d, base).at_index(i)?;
                    d.sink.leave_item(&mut l, i, d.pos);
                    d.sink.push(&mut l, v).map_err(|e| d.host(e))?;
                }
                d.sink.end_list(l)
            };
            d.depth -= 1;
            v
        }
        0xc1 => return Err(Error::invalid("0xc1 is not a MessagePack type", at)),
    };
    r.map_err(|e| d.host(e))
}

/// Writes a self-describing value with the smallest MessagePack formats, as the
/// `msgpack` package does by default.
fn encode_value<S: Source, O: Output>(
    e: &mut Enc<'_, '_, '_, '_, S, O>,
    v: &S::Value,
    depth: u32,
) -> Result<(), S::Error> {
    // `depth` counts enclosing arrays and maps; enclosing structs count too.
    if e.depth + depth > e.p.limits.max_depth {
        // One message for the whole value: the path names the field, not every level.
        let mut err = e.invalid(format!(
            "the value nests deeper than {} arrays and maps (the depth limit; is it cyclic?)",
            e.p.limits.max_depth.saturating_sub(e.depth)
        ));
        err.skip = u8::try_from(depth).unwrap_or(u8::MAX);
        return Err(err);
    }
    let kind = e.src.kind(v).map_err(|x| e.src_err(x))?;
    let head = |small: u8, base: u8, n: usize| -> Option<Vec<u8>> {
        if n < usize::from(small) {
            Some(vec![base | n as u8])
        } else {
            None
        }
    };
    let sized = |codes: [u8; 3], n: usize| -> Vec<u8> {
        if n <= 0xff {
            vec![codes[0], n as u8]
        } else if n <= 0xffff {
            let mut h = vec![codes[1]];
            h.extend_from_slice(&(n as u16).to_be_bytes());
            h
        } else {
            let mut h = vec![codes[2]];
            h.extend_from_slice(&(n as u32).to_be_bytes());
            h
        }
    };
    // Arrays and maps have no 8-bit length form.
    let wide = |c16: u8, c32: u8, n: usize| -> Vec<u8> {
        if n <= 0xffff {
            let mut h = vec![c16];
            h.extend_from_slice(&(n as u16).to_be_bytes());
            h
        } else {
            let mut h = vec![c32];
            h.extend_from_slice(&(n as u32).to_be_bytes());
            h
        }
    };
    match kind {
        Dyn::None => e.put(&[0xc0]),
        Dyn::Bool(b) => e.put(&[if b { 0xc3 } else { 0xc2 }]),
        Dyn::Int(i) => {
            let mut b = [0u8; 9];
            let n = if (0..128).contains(&i) {
                b[0] = i as u8;
                1
            } else if (-32..0).contains(&i) {
                b[0] = i as i8 as u8;
                1
            } else if i >= 0 {
                let (code, width) = match i {
                    _ if i <= 0xff => (0xcc, 1),
                    _ if i <= 0xffff => (0xcd, 2),
                    _ if i <= 0xffff_ffff => (0xce, 4),
                    _ if i <= i128::from(u64::MAX) => (0xcf, 8),
                    _ => return Err(e.invalid(format!("{i} is too large for MessagePack"))),
                };
                b[0] = code;
                b[1..=width].copy_from_slice(&(i as u64).to_be_bytes()[8 - width..]);
                1 + width
            } else {
                let (code, width) = match i {
                    _ if i >= -0x80 => (0xd0, 1),
                    _ if i >= -0x8000 => (0xd1, 2),
                    _ if i >= -0x8000_0000 => (0xd2, 4),
                    _ if i >= i128::from(i64::MIN) => (0xd3, 8),
                    _ => return Err(e.invalid(format!("{i} is too small for MessagePack"))),
                };
                b[0] = code;
                b[1..=width].copy_from_slice(&(i as i64).to_be_bytes()[8 - width..]);
                1 + width
            };
            e.put(&b[..n])
        }
        Dyn::Float(f) => {
            let mut b = [0xcbu8; 9];
            b[1..].copy_from_slice(&f.to_bits().to_be_bytes());
            e.put(&b)
        }
        Dyn::Str => {
            let t = e.src.text(v, Encoding::Utf8).map_err(|x| e.src_err(x))?;
            let h = head(32, 0xa0, t.len()).unwrap_or_else(|| sized([0xd9, 0xda, 0xdb], t.len()));
            e.put(&h)?;
            e.put(&t)
        }
        Dyn::Bytes => {
            let b = e.src.bytes(v).map_err(|x| e.src_err(x))?;
            e.put(&sized([0xc4, 0xc5, 0xc6], b.len()))?;
            e.put(b)
        }
        Dyn::List => {
            let n = e.src.len(v).map_err(|x| e.src_err(x))?;
            let h = head(16, 0x90, n).unwrap_or_else(|| wide(0xdc, 0xdd, n));
            e.put(&h)?;
            for i in 0..n {
                let it = e.src.item(v, i).map_err(|x| e.src_err(x)).at_index(i)?;
                encode_value(e, &it, depth + 1).at_index(i)?;
            }
            Ok(())
        }
        Dyn::Map => {
            let entries = e.src.entries(v).map_err(|x| e.src_err(x))?;
            let n = entries.len();
            let h = head(16, 0x80, n).unwrap_or_else(|| wide(0xde, 0xdf, n));
            e.put(&h)?;
            for (i, (k, val)) in entries.iter().enumerate() {
                encode_value(e, k, depth + 1).at_index(i)?;
                encode_value(e, val, depth + 1).at_index(i)?;
            }
            Ok(())
        }
        Dyn::Ext => {
            let (code, data) = e.src.ext(v).map_err(|x| e.src_err(x))?;
            let b = e.src.bytes(&data).map_err(|x| e.src_err(x))?;
            let fixed = match b.len() {
                1 => Some(0xd4),
                2 => Some(0xd5),
                4 => Some(0xd6),
                8 => Some(0xd7),
                16 => Some(0xd8),
                _ => None,
            };
            let mut h = match fixed {
                Some(c) => vec![c],
                None => sized([0xc7, 0xc8, 0xc9], b.len()),
            };
            h.push(code as u8);
            e.put(&h)?;
            e.put(b)
        }
    }
}
