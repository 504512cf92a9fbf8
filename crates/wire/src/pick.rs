//! A union's case chosen without evaluating its tag: the tag expression's decision, built
//! once at compile time, over the integer fields it reads.
//!
//! Most tags are a field (`next_header`), a field with a few values mapped to one case
//! (`33024 if type == 34984 or type == 37120 else type`), a choice on flags
//! (`-1 if fragment_offset else (273 if mf and protocol == 17 else protocol)`) or a
//! comparison scaled by a constant (`(captured_length == original_length) * 1`). For these
//! [`Pick::of`] builds a tree of tests on fields whose leaves are case indexes, and a field
//! compared with several constants becomes one table of `i64` keys. [`Pick::choose`] gives
//! exactly the case the tag's value selects, or `None` when some field it reads is not an
//! integer that fits an `i64` (absent, bytes, wider), or when the value selects no case:
//! then the VM evaluates the tag as before, which gives the same case or the error.

use crate::expr::{BinOp, Env, Expr, SlotRef, UnOp, Value};

/// No case: the caller evaluates the tag (an unknown tag is an error said there).
const NONE: u32 = u32::MAX;

/// An operand of a test: a field, or a constant that fits an `i64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operand {
    Slot(SlotRef),
    Int(i64),
}

impl Operand {
    fn of(e: &Expr) -> Option<Operand> {
        match e {
            Expr::Slot(s, _) => Some(Operand::Slot(*s)),
            e => i64::try_from(constant(e)?).ok().map(Operand::Int),
        }
    }

    #[inline(always)]
    fn get<E: Env + ?Sized>(self, env: &E) -> Option<i64> {
        match self {
            Operand::Int(v) => Some(v),
            Operand::Slot(s) => read(env, s),
        }
    }
}

#[inline(always)]
fn read<E: Env + ?Sized>(env: &E, s: SlotRef) -> Option<i64> {
    match env.get(s) {
        Value::Int(v) => i64::try_from(*v).ok(),
        _ => None,
    }
}

/// An integer constant, with negation and inversion folded (`-1` parses as the negation
/// of 1).
fn constant(e: &Expr) -> Option<i128> {
    match e {
        Expr::Const(Value::Int(v)) => Some(*v),
        Expr::Un(UnOp::Neg, a) => constant(a)?.checked_neg(),
        Expr::Un(UnOp::Invert, a) => Some(!constant(a)?),
        _ => None,
    }
}

/// An expression read for its truth (Python's: nonzero), on integers.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Test {
    Truthy(Operand),
    /// A comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`).
    Cmp(BinOp, Operand, Operand),
    Not(Box<Test>),
    And(Box<Test>, Box<Test>),
    Or(Box<Test>, Box<Test>),
}

fn is_comparison(op: BinOp) -> bool {
    use BinOp::*;
    matches!(op, Eq | Ne | Lt | Le | Gt | Ge)
}

impl Test {
    fn of(e: &Expr) -> Option<Test> {
        if let Some(o) = Operand::of(e) {
            return Some(Test::Truthy(o));
        }
        let b = |e: &Expr| Test::of(e).map(Box::new);
        Some(match e {
            Expr::Bin(op, x, y) if is_comparison(*op) => {
                Test::Cmp(*op, Operand::of(x)?, Operand::of(y)?)
            }
            Expr::Un(UnOp::Not, x) => Test::Not(b(x)?),
            // The truth of `a and b` (of `a or b`) is both operands' (either's): Python
            // returns an operand, whose truth is what is tested.
            Expr::LogicAnd(x, y) => Test::And(b(x)?, b(y)?),
            Expr::LogicOr(x, y) => Test::Or(b(x)?, b(y)?),
            _ => return None,
        })
    }

    /// The test is `field == c1 or field == c2 ...`: the field and the constants.
    fn one_of(&self) -> Option<(SlotRef, Vec<i64>)> {
        match self {
            Test::Cmp(BinOp::Eq, Operand::Slot(s), Operand::Int(c))
            | Test::Cmp(BinOp::Eq, Operand::Int(c), Operand::Slot(s)) => Some((*s, vec![*c])),
            Test::Or(a, b) => {
                let (s, mut cs) = a.one_of()?;
                let (t, more) = b.one_of()?;
                if s != t {
                    return None;
                }
                cs.extend(more);
                Some((s, cs))
            }
            _ => None,
        }
    }

    #[inline]
    fn holds<E: Env + ?Sized>(&self, env: &E) -> Option<bool> {
        Some(match self {
            Test::Truthy(o) => o.get(env)? != 0,
            Test::Cmp(op, a, b) => {
                let (a, b) = (a.get(env)?, b.get(env)?);
                match op {
                    BinOp::Eq => a == b,
                    BinOp::Ne => a != b,
                    BinOp::Lt => a < b,
                    BinOp::Le => a <= b,
                    BinOp::Gt => a > b,
                    _ => a >= b,
                }
            }
            Test::Not(a) => !a.holds(env)?,
            Test::And(a, b) => a.holds(env)? && b.holds(env)?,
            Test::Or(a, b) => a.holds(env)? || b.holds(env)?,
        })
    }
}

/// How a union's case is chosen (see the module comment). Case indexes are those of
/// [`crate::program::Node::Union`]'s `cases`, the number of cases for the default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// This case, whatever the fields hold.
    Case(u32),
    /// The case of the field's value: the first key equal to it, else `other`.
    Map {
        slot: SlotRef,
        keys: Box<[(i64, u32)]>,
        other: u32,
    },
    If(Box<IfPick>),
}

/// A test and the choices when it holds and when it does not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IfPick {
    test: Test,
    then: Pick,
    other: Pick,
}

impl Pick {
    /// The decision of the tag `e` over `cases` (with or without a default), or `None` for
    /// a tag of another shape (it is then evaluated).
    pub fn of(e: &Expr, cases: &[(Value, impl Sized)], default: bool) -> Option<Pick> {
        let case_of = |v: &Value| -> u32 {
            match cases.iter().position(|(k, _)| k == v) {
                Some(i) => u32::try_from(i).unwrap_or(NONE),
                None if default => u32::try_from(cases.len()).unwrap_or(NONE),
                None => NONE,
            }
        };
        let of_int = |v: i128| case_of(&Value::Int(v));
        Self::build(e, &of_int, &|slot| {
            let keys: Vec<(i64, u32)> = cases
                .iter()
                .enumerate()
                .filter_map(|(i, (k, _))| match k {
                    Value::Int(v) => Some((i64::try_from(*v).ok()?, u32::try_from(i).ok()?)),
                    _ => None,
                })
                .collect();
            Pick::Map {
                slot,
                keys: keys.into(),
                // A value that fits an `i64` and is no key matches no case.
                other: if default {
                    u32::try_from(cases.len()).unwrap_or(NONE)
                } else {
                    NONE
                },
            }
        })
    }

    fn build(
        e: &Expr,
        of_int: &dyn Fn(i128) -> u32,
        field: &dyn Fn(SlotRef) -> Pick,
    ) -> Option<Pick> {
        if let Some(v) = constant(e) {
            return Some(Pick::Case(of_int(v)));
        }
        match e {
            Expr::Slot(s, _) => Some(field(*s)),
            Expr::Cond(c, a, b) => {
                let test = Test::of(c)?;
                let then = Self::build(a, of_int, field)?;
                let other = Self::build(b, of_int, field)?;
                Some(Self::branch(test, then, other))
            }
            // A comparison is 0 or 1; times a constant, that constant or 0.
            Expr::Bin(BinOp::Mul, x, y) => {
                let (t, k) = match (Test::of(x), constant(y), Test::of(y), constant(x)) {
                    (Some(t), Some(k), _, _) if boolean(x) => (t, k),
                    (_, _, Some(t), Some(k)) if boolean(y) => (t, k),
                    _ => return None,
                };
                Some(Self::branch(
                    t,
                    Pick::Case(of_int(k)),
                    Pick::Case(of_int(0)),
                ))
            }
            e if boolean(e) => {
                let t = Test::of(e)?;
                Some(Self::branch(
                    t,
                    Pick::Case(of_int(1)),
                    Pick::Case(of_int(0)),
                ))
            }
            _ => None,
        }
    }

    /// `then` if `test` holds, else `other`; a field compared with constants whose choice
    /// is one case becomes entries of the table of the same field (or a new table).
    fn branch(test: Test, then: Pick, other: Pick) -> Pick {
        if let (Some((slot, values)), Pick::Case(case)) = (test.one_of(), &then) {
            let table = match &other {
                Pick::Case(c) => Some((Vec::new(), *c)),
                Pick::Map {
                    slot: s,
                    keys,
                    other,
                } if *s == slot => Some((keys.to_vec(), *other)),
                _ => None,
            };
            if let Some((rest, other)) = table {
                // The test's values first: they take precedence over the table's.
                let mut keys: Vec<(i64, u32)> = values.iter().map(|&v| (v, *case)).collect();
                keys.extend(rest.into_iter().filter(|(k, _)| !values.contains(k)));
                return Pick::Map {
                    slot,
                    keys: keys.into(),
                    other,
                };
            }
        }
        Pick::If(Box::new(IfPick { test, then, other }))
    }

    /// The index of the case the tag selects (the number of cases for the default), or
    /// `None`: the tag is then evaluated.
    #[inline]
    pub fn choose<E: Env + ?Sized>(&self, env: &E) -> Option<usize> {
        let mut p = self;
        loop {
            let c = match p {
                Pick::Case(c) => *c,
                Pick::Map { slot, keys, other } => {
                    let v = read(env, *slot)?;
                    match keys.iter().find(|(k, _)| *k == v) {
                        Some((_, c)) => *c,
                        None => *other,
                    }
                }
                Pick::If(i) => {
                    p = if i.test.holds(env)? {
                        &i.then
                    } else {
                        &i.other
                    };
                    continue;
                }
            };
            return if c == NONE { None } else { Some(c as usize) };
        }
    }
}

/// The expression is 0 or 1 whenever its operands are integers.
fn boolean(e: &Expr) -> bool {
    matches!(e, Expr::Bin(op, ..) if is_comparison(*op)) || matches!(e, Expr::Un(UnOp::Not, _))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::testing::{parse_over, Slots};
    use std::sync::Arc;

    fn expr(v: serde_json::Value) -> Expr {
        parse_over(&v, &["a", "b", "c"])
    }

    /// Ethernet's tag: 0x8100 for either VLAN tag type, else the type itself.
    fn ether() -> Expr {
        expr(serde_json::json!([
            "if",
            [
                "or",
                ["bin", "==", ["name", "a"], ["int", 0x88a8]],
                ["bin", "==", ["name", "a"], ["int", 0x9100]]
            ],
            ["int", 0x8100],
            ["name", "a"]
        ]))
    }

    /// Every choice equals the evaluated tag's case, over values around the constants.
    fn agrees(e: &Expr, keys: &[i128], default: bool) {
        let cases: Vec<(Value, ())> = keys.iter().map(|&k| (Value::Int(k), ())).collect();
        let pick = Pick::of(e, &cases, default).expect("a closed form");
        let vals = [
            Value::Int(-1),
            Value::Int(0),
            Value::Int(1),
            Value::Int(6),
            Value::Int(17),
            Value::Int(273),
            Value::Int(0x8100),
            Value::Int(0x88a8),
            Value::Int(0x9100),
            Value::Int(1 << 70),
            Value::Absent,
            Value::Bytes(Arc::from(&b"x"[..])),
        ];
        for a in &vals {
            for b in &vals {
                for c in &vals {
                    let env = Slots(vec![a.clone(), b.clone(), c.clone()]);
                    let want = e.eval(&env).ok().and_then(|t| {
                        match cases.iter().position(|(k, _)| *k == t) {
                            Some(i) => Some(i),
                            None if default => Some(cases.len()),
                            None => None,
                        }
                    });
                    if let Some(got) = pick.choose(&env) {
                        assert_eq!(Some(got), want, "{e:?} at {a:?} {b:?} {c:?}");
                    } else if matches!((a, b, c), (Value::Int(x), Value::Int(y), Value::Int(z))
                        if [x, y, z].iter().all(|v| i64::try_from(**v).is_ok()))
                    {
                        // Integer fields that fit: only an unknown tag leaves the choice
                        // to the evaluation.
                        assert_eq!(want, None, "{e:?} at {a:?} {b:?} {c:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn choices_equal_the_evaluated_tags() {
        let ether = ether();
        let ip = expr(serde_json::json!([
            "if",
            ["name", "a"],
            ["un", "-", ["int", 1]],
            [
                "if",
                [
                    "and",
                    ["name", "b"],
                    ["bin", "==", ["name", "c"], ["int", 17]]
                ],
                ["int", 273],
                ["name", "c"]
            ]
        ]));
        let frame = expr(serde_json::json!([
            "bin",
            "*",
            ["bin", "==", ["name", "a"], ["name", "b"]],
            ["int", 6]
        ]));
        let plain = expr(serde_json::json!(["name", "c"]));
        let not = expr(serde_json::json!([
            "un",
            "not",
            ["bin", "<", ["name", "a"], ["name", "b"]]
        ]));
        for default in [true, false] {
            agrees(&ether, &[0x800, 0x86dd, 0x8100], default);
            agrees(&ip, &[17, 6, 1, 273], default);
            agrees(&ip, &[17, 6, 1, 273, -1], default);
            agrees(&frame, &[6, 1, 113], default);
            agrees(&frame, &[0, 6], default);
            agrees(&plain, &[17, 1 << 70, 6], default);
            agrees(&not, &[0, 1], default);
            agrees(&not, &[1], default);
        }
    }

    #[test]
    fn a_field_compared_with_constants_is_one_table() {
        let ether = ether();
        let cases: Vec<(Value, ())> = [0x800, 0x86dd, 0x8100]
            .iter()
            .map(|&k| (Value::Int(k), ()))
            .collect();
        assert_eq!(
            Pick::of(&ether, &cases, true),
            Some(Pick::Map {
                slot: SlotRef { up: 0, idx: 0 },
                keys: vec![
                    (0x88a8, 2),
                    (0x9100, 2),
                    (0x800, 0),
                    (0x86dd, 1),
                    (0x8100, 2)
                ]
                .into(),
                other: 3,
            })
        );
        // Arithmetic on a field is evaluated.
        let sum = expr(serde_json::json!(["bin", "+", ["name", "a"], ["int", 1]]));
        assert_eq!(Pick::of(&sum, &cases, true), None);
    }
}
