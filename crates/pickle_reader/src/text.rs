//! The text arguments of protocol 0 (`INT`, `LONG`, `FLOAT`, `GET`, `PUT`), parsed exactly
//! as CPython's unpickler parses them, with the same exception classes.
//!
//! CPython copies each line with its `\n` into a NUL-terminated buffer and hands that to C
//! parsers: `INT` tries `strtol(s, 0)` (so `0x10` and the octal `010` are accepted) and
//! falls back to `int(s, 0)`; `LONG` drops one trailing `L` and uses `int(s, 0)`; `FLOAT`
//! uses `float`'s own parser with no surrounding whitespace allowed; `GET`/`PUT` use
//! `int(s, 10)`. Anything after an embedded NUL is never seen by those parsers.

use crate::{ErrorKind, ReadError};

/// A parsed integer: small enough for an `i64`, or text that `int(text, 0)` reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntText<'a> {
    Small(i64),
    /// Valid base-0 int text (sign, prefix, underscores, spaces) too large for an `i64`.
    Big(&'a [u8], u64),
    Bool(bool),
}

/// C's `isspace` and Python's `Py_ISSPACE` (the same six bytes).
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// The C string the parsers see: the line up to its first NUL.
fn c_string(line: &[u8]) -> &[u8] {
    match line.iter().position(|&b| b == 0) {
        Some(n) => &line[..n],
        None => line,
    }
}

fn digit(b: u8) -> u32 {
    match b {
        b'0'..=b'9' => u32::from(b - b'0'),
        b'a'..=b'z' => u32::from(b - b'a') + 10,
        b'A'..=b'Z' => u32::from(b - b'A') + 10,
        _ => u32::MAX,
    }
}

/// `strtol(s, &end, 0)` on the line followed by `\n`: `Some(value)` when it parsed a
/// `long` and stopped at the `\n` or a NUL; `None` when CPython falls back to `int()`.
fn strtol(s: &[u8]) -> Option<i64> {
    let at = |i: usize| s.get(i).copied().unwrap_or(b'\n');
    let mut i = 0;
    while i < s.len() && is_space(s[i]) {
        i += 1;
    }
    let negative = at(i) == b'-';
    if matches!(at(i), b'+' | b'-') {
        i += 1;
    }
    let base = if at(i) == b'0' && (at(i + 1) | 0x20) == b'x' && digit(at(i + 2)) < 16 {
        i += 2;
        16
    } else if at(i) == b'0' {
        8
    } else {
        10
    };
    let start = i;
    let mut value: u64 = 0;
    let mut overflow = false;
    while i < s.len() && digit(s[i]) < base {
        let d = u64::from(digit(s[i]));
        match value
            .checked_mul(u64::from(base))
            .and_then(|v| v.checked_add(d))
        {
            Some(v) => value = v,
            None => overflow = true,
        }
        i += 1;
    }
    // No digits: strtol stops at the very start, which is the `\n` only for a NUL line.
    let end = if i == start { 0 } else { i };
    if !matches!(s.get(end), None | Some(b'\n')) {
        return None;
    }
    let limit = if negative {
        1u64 << 63
    } else {
        (1u64 << 63) - 1
    };
    if overflow || value > limit {
        return None;
    }
    Some(if negative {
        (value as i64).wrapping_neg()
    } else {
        value as i64
    })
}

/// `int(s, base)` as `PyLong_FromString` reads a C string (`base` 0 or 10): the number of
/// digits and the value when it fits an `i64`; `None` when `int()` raises `ValueError`.
fn py_int(s: &[u8], base: u32) -> Option<(u64, Option<i64>)> {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    let mut i = 0;
    while i < s.len() && is_space(s[i]) {
        i += 1;
    }
    let negative = at(i) == b'-';
    if matches!(at(i), b'+' | b'-') {
        i += 1;
    }
    let mut base = base;
    let mut zero_only = false;
    if base == 0 {
        base = match (at(i), at(i + 1) | 0x20) {
            (b'0', b'x') => 16,
            (b'0', b'o') => 8,
            (b'0', b'b') => 2,
            (b'0', _) => {
                // An old octal literal: only zeros are still valid.
                zero_only = true;
                10
            }
            _ => 10,
        };
        if base != 10 {
            i += 2;
            if at(i) == b'_' {
                i += 1;
            }
        }
    }
    let (mut digits, mut value, mut fits) = (0u64, 0i64, true);
    let mut previous_underscore = true;
    while i < s.len() {
        let b = s[i];
        if b == b'_' {
            if previous_underscore {
                return None;
            }
            previous_underscore = true;
        } else if digit(b) < base {
            let d = i64::from(digit(b));
            digits += 1;
            previous_underscore = false;
            match value
                .checked_mul(i64::from(base))
                .and_then(|v| v.checked_add(d))
            {
                Some(v) => value = v,
                None => fits = false,
            }
        } else {
            break;
        }
        i += 1;
    }
    if digits == 0 || previous_underscore || (zero_only && (value != 0 || !fits)) {
        return None;
    }
    while i < s.len() && is_space(s[i]) {
        i += 1;
    }
    if i != s.len() {
        return None;
    }
    Some((
        digits,
        fits.then_some(if negative { -value } else { value }),
    ))
}

fn truncated(at: usize, op: &str) -> ReadError {
    ReadError::malformed(at, format!("truncated pickle: {op} has an empty argument"))
}

/// The argument of `INT` (`line` without its `\n`), as CPython reads it.
pub fn int(line: &[u8], at: usize) -> Result<IntText<'_>, ReadError> {
    if line.is_empty() {
        return Err(truncated(at, "INT"));
    }
    let s = c_string(line);
    if let Some(v) = strtol(s) {
        // Protocol 0 writes True and False as `I01`/`I00`: any 2-byte 0 or 1.
        if line.len() == 2 && (v == 0 || v == 1) {
            return Ok(IntText::Bool(v == 1));
        }
        return Ok(IntText::Small(v));
    }
    match py_int(s, 0) {
        Some((_, Some(v))) => Ok(IntText::Small(v)),
        Some((digits, None)) => Ok(IntText::Big(s, digits)),
        None => Err(ReadError::of(
            ErrorKind::Value,
            at,
            "INT: could not convert string to int",
        )),
    }
}

/// The argument of `LONG` (`line` without its `\n`): one trailing `L` is dropped.
pub fn long(line: &[u8], at: usize) -> Result<IntText<'_>, ReadError> {
    if line.is_empty() {
        return Err(truncated(at, "LONG"));
    }
    let s = c_string(line.strip_suffix(b"L").unwrap_or(line));
    match py_int(s, 0) {
        Some((_, Some(v))) => Ok(IntText::Small(v)),
        Some((digits, None)) => Ok(IntText::Big(s, digits)),
        None => Err(ReadError::of(
            ErrorKind::Value,
            at,
            format!(
                "LONG: invalid literal for int() with base 0: {:?}",
                String::from_utf8_lossy(s)
            ),
        )),
    }
}

/// The length of the longest float literal at the start of `s`, as `float()`'s parser
/// reads one (no whitespace, no underscores; `inf`, `infinity` and `nan` in any case).
fn float_prefix(s: &[u8]) -> usize {
    let mut i = usize::from(matches!(s.first(), Some(b'+' | b'-')));
    let lower: Vec<u8> = s[i..s.len().min(i + 8)].to_ascii_lowercase();
    if lower.starts_with(b"infinity") {
        return i + 8;
    }
    if lower.starts_with(b"inf") || lower.starts_with(b"nan") {
        return i + 3;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while s.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    let mut n = digits(&mut i);
    if s.get(i) == Some(&b'.') {
        i += 1;
        n += digits(&mut i);
    }
    if n == 0 {
        return 0;
    }
    if matches!(s.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(s.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        if digits(&mut j) > 0 {
            i = j;
        }
    }
    i
}

/// The argument of `FLOAT` (`line` without its `\n`), as CPython reads it.
pub fn float(line: &[u8], at: usize) -> Result<f64, ReadError> {
    if line.is_empty() {
        return Err(truncated(at, "FLOAT"));
    }
    let s = c_string(line);
    let n = float_prefix(s);
    let bad = || {
        ReadError::of(
            ErrorKind::Value,
            at,
            format!(
                "FLOAT: could not convert string to float: {:?}",
                String::from_utf8_lossy(s)
            ),
        )
    };
    if n == 0 {
        return Err(bad());
    }
    // The prefix is ASCII and a literal Rust's parser reads the same way.
    let text = std::str::from_utf8(&s[..n]).map_err(|_| bad())?;
    let v: f64 = text.parse().map_err(|_| bad())?;
    if v.is_infinite() && !text.to_ascii_lowercase().contains("inf") {
        return Err(ReadError::of(
            ErrorKind::Overflow,
            at,
            format!("FLOAT: value too large to convert to float: {text:?}"),
        ));
    }
    if n != s.len() {
        return Err(bad());
    }
    Ok(v)
}

/// The memo key of a text `GET` or `PUT`, as `int(s, 10)` then a C `ssize_t`.
pub fn memo_key(line: &[u8], at: usize, op: &str) -> Result<u64, ReadError> {
    if line.is_empty() {
        return Err(truncated(at, op));
    }
    let s = c_string(line);
    let Some((_, value)) = py_int(s, 10) else {
        return Err(ReadError::of(
            ErrorKind::Value,
            at,
            format!(
                "{op}: invalid literal for int() with base 10: {:?}",
                String::from_utf8_lossy(s)
            ),
        ));
    };
    let Some(value) = value else {
        return Err(ReadError::of(
            ErrorKind::Overflow,
            at,
            format!("{op}: memo key too large"),
        ));
    };
    match u64::try_from(value) {
        Ok(key) => Ok(key),
        Err(_) if op == "PUT" => Err(ReadError::of(ErrorKind::Value, at, "negative PUT argument")),
        // Never written, as pickle finds it.
        Err(_) => Err(ReadError::malformed(
            at,
            format!("memo key {value} read before it was written"),
        )),
    }
}

/// The argument of `STRING` (`line` without its `\n`), a quoted Python 2 str literal,
/// decoded as CPython's unpickler decodes it: the outer quotes (both `'` or both `"`) are
/// stripped, the rest goes through `PyBytes_DecodeEscape`, and the bytes must be ASCII
/// (pickle's default `encoding`).
///
/// Escapes are C's (`\n`, `\x41`, octal `\101`, whose value is kept modulo 256, ...); an
/// unknown escape keeps its backslash; a lone trailing backslash or a bad `\x` raise
/// `ValueError`, as in CPython.
pub fn string_literal(line: &[u8], at: usize) -> Result<Vec<u8>, ReadError> {
    let out = string_literal_bytes(line, at)?;
    if let Some(n) = out.iter().position(|b| !b.is_ascii()) {
        return Err(ReadError::of(
            ErrorKind::Value,
            at,
            format!(
                "STRING: 'ascii' codec can't decode byte 0x{:02x} in position {n} (pickle.loads needs an encoding=)",
                out[n]
            ),
        ));
    }
    Ok(out)
}

/// The bytes of a `STRING` argument, as [`string_literal`] unescapes them, whatever they
/// are (for `encoding="bytes"` and the other encodings of pickle's `encoding=`).
pub fn string_literal_bytes(line: &[u8], at: usize) -> Result<Vec<u8>, ReadError> {
    let inner = match line {
        [q @ (b'\'' | b'"'), inner @ .., last] if last == q => inner,
        _ => {
            return Err(ReadError::malformed(
                at,
                "the STRING opcode argument must be quoted",
            ))
        }
    };
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        let b = inner[i];
        i += 1;
        if b != b'\\' {
            out.push(b);
            continue;
        }
        let Some(&e) = inner.get(i) else {
            return Err(ReadError::of(
                ErrorKind::Value,
                at,
                "STRING: Trailing \\ in string",
            ));
        };
        i += 1;
        match e {
            b'\n' => {}
            b'\\' | b'\'' | b'"' => out.push(e),
            b'b' => out.push(0x08),
            b'f' => out.push(0x0c),
            b't' => out.push(b'\t'),
            b'n' => out.push(b'\n'),
            b'r' => out.push(b'\r'),
            b'v' => out.push(0x0b),
            b'a' => out.push(0x07),
            b'0'..=b'7' => {
                let mut c = u32::from(e - b'0');
                for _ in 0..2 {
                    match inner.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            c = (c << 3) + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                out.push(c as u8); // C stores the value in a char: modulo 256
            }
            b'x' => {
                let hex = |j: usize| inner.get(j).map_or(u32::MAX, |&h| digit(h));
                let (high, low) = (hex(i), hex(i + 1));
                if high >= 16 || low >= 16 {
                    return Err(ReadError::of(
                        ErrorKind::Value,
                        at,
                        format!("STRING: invalid \\x escape at position {}", i - 2),
                    ));
                }
                out.push((high * 16 + low) as u8);
                i += 2;
            }
            // An unknown escape is kept as it is; the character after the backslash is
            // read again as an ordinary one.
            _ => {
                out.push(b'\\');
                i -= 1;
            }
        }
    }
    Ok(out)
}

/// True when `s` is UTF-8 with surrogates allowed (as `surrogatepass` decodes it).
pub fn utf8_surrogatepass(mut s: &[u8]) -> bool {
    loop {
        match std::str::from_utf8(s) {
            Ok(_) => return true,
            Err(e) => {
                let rest = &s[e.valid_up_to()..];
                // An encoded surrogate: ED A0..BF 80..BF.
                match rest {
                    [0xed, 0xa0..=0xbf, 0x80..=0xbf, ..] => s = &rest[3..],
                    _ => return false,
                }
            }
        }
    }
}

/// True when `raw_unicode_escape` decodes `s`: each `\u`/`\U` after an odd number of
/// backslashes needs 4/8 hex digits, and a code point of at most U+10FFFF.
pub fn raw_unicode_escape(s: &[u8]) -> bool {
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'\\' {
            i += 1;
            continue;
        }
        let start = i;
        while i < s.len() && s[i] == b'\\' {
            i += 1;
        }
        if (i - start) % 2 == 0 || i >= s.len() || !matches!(s[i], b'u' | b'U') {
            continue;
        }
        let count = if s[i] == b'u' { 4 } else { 8 };
        i += 1;
        let Some(hex) = s.get(i..i + count) else {
            return false;
        };
        if !hex.iter().all(u8::is_ascii_hexdigit) {
            return false;
        }
        let code = hex.iter().fold(0u32, |n, &h| n * 16 + digit(h));
        if code > 0x10ffff {
            return false;
        }
        i += count;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_text_as_cpython() {
        fn ok(s: &[u8]) -> IntText<'_> {
            int(s, 0).unwrap()
        }
        assert_eq!(ok(b"01"), IntText::Bool(true));
        assert_eq!(ok(b" 1"), IntText::Bool(true));
        assert_eq!(ok(b"-0"), IntText::Bool(false));
        assert_eq!(ok(b"1"), IntText::Small(1));
        assert_eq!(ok(b"0x10"), IntText::Small(16));
        assert_eq!(ok(b"010"), IntText::Small(8));
        assert_eq!(ok(b"1_0"), IntText::Small(10));
        assert_eq!(ok(b"0b11"), IntText::Small(3));
        assert_eq!(ok(b"1 "), IntText::Small(1));
        assert_eq!(ok(b"1\0x"), IntText::Small(1));
        assert!(matches!(ok(b"99999999999999999999"), IntText::Big(..)));
        assert_eq!(int(b"09", 0).unwrap_err().kind, ErrorKind::Value);
        assert_eq!(int(b"x", 0).unwrap_err().kind, ErrorKind::Value);
        assert_eq!(int(b"", 0).unwrap_err().kind, ErrorKind::Malformed);
    }

    #[test]
    fn long_and_float_text_as_cpython() {
        assert_eq!(long(b"0x10L", 0).unwrap(), IntText::Small(16));
        assert_eq!(long(b" 1 L", 0).unwrap(), IntText::Small(1));
        assert_eq!(long(b"1LL", 0).unwrap_err().kind, ErrorKind::Value);
        assert_eq!(long(b"007", 0).unwrap_err().kind, ErrorKind::Value);
        assert_eq!(long(b"00", 0).unwrap(), IntText::Small(0));
        assert_eq!(float(b"1.5\0x", 0).unwrap(), 1.5);
        assert_eq!(float(b"-Infinity", 0).unwrap(), f64::NEG_INFINITY);
        assert_eq!(float(b"1e500", 0).unwrap_err().kind, ErrorKind::Overflow);
        assert_eq!(float(b"1e500x", 0).unwrap_err().kind, ErrorKind::Overflow);
        assert_eq!(float(b" 1.5", 0).unwrap_err().kind, ErrorKind::Value);
        assert_eq!(float(b"1_0", 0).unwrap_err().kind, ErrorKind::Value);
        assert_eq!(float(b"1e-500", 0).unwrap(), 0.0);
    }

    #[test]
    fn string_literals_as_cpython() {
        let ok = |s: &[u8]| string_literal(s, 0).unwrap();
        let kind = |s: &[u8]| string_literal(s, 0).unwrap_err().kind;
        assert_eq!(ok(b"''"), b"");
        assert_eq!(ok(b"\"a'b\""), b"a'b");
        assert_eq!(ok(b"'\\x41\\101\\0\\400\\n\\''"), b"AA\0\0\n'");
        assert_eq!(ok(b"'\\q\\\\'"), b"\\q\\");
        assert_eq!(ok(b"'\\1234'"), b"S4");
        assert_eq!(kind(b"'"), ErrorKind::Malformed);
        assert_eq!(kind(b"'a\""), ErrorKind::Malformed);
        assert_eq!(kind(b"a"), ErrorKind::Malformed);
        assert_eq!(kind(b"'\\'"), ErrorKind::Value);
        assert_eq!(kind(b"'\\x4'"), ErrorKind::Value);
        assert_eq!(kind(b"'\\xg0'"), ErrorKind::Value);
        assert_eq!(kind(b"'\\xe9'"), ErrorKind::Value);
        assert_eq!(kind(b"'\xe9'"), ErrorKind::Value);
    }

    #[test]
    fn text_checks_as_the_codecs() {
        assert!(utf8_surrogatepass("a\u{e9}".as_bytes()));
        assert!(utf8_surrogatepass(b"\xed\xa0\x80x"));
        assert!(!utf8_surrogatepass(b"\xff"));
        assert!(raw_unicode_escape(b"a\\u00e9 \\\\u"));
        assert!(!raw_unicode_escape(b"\\u12"));
        assert!(!raw_unicode_escape(b"\\U00110000"));
    }

    #[test]
    fn memo_keys_as_cpython() {
        assert_eq!(memo_key(b" 1_0 ", 0, "GET").unwrap(), 10);
        assert_eq!(memo_key(b"007", 0, "PUT").unwrap(), 7);
        assert_eq!(
            memo_key(b"-1", 0, "PUT").unwrap_err().kind,
            ErrorKind::Value
        );
        assert_eq!(
            memo_key(b"99999999999999999999", 0, "PUT")
                .unwrap_err()
                .kind,
            ErrorKind::Overflow
        );
    }
}
