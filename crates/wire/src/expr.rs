//! Expressions over earlier fields: lengths, counts, window sizes, conditions and tags.
//!
//! Parsed once (from the frontend's JSON form) with names resolved to slots, evaluated with
//! Python semantics on `i128`, which holds every u64 and i64 value exactly.

use std::sync::Arc;

/// A runtime value of a referenced field or of an expression.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Value {
    Int(i128),
    Bytes(Arc<[u8]>),
    /// A conditional field that is not present.
    #[default]
    Absent,
    /// A derived window size that is written later (pack only).
    Pending,
}

impl Value {
    pub fn truthy(&self) -> bool {
        match self {
            Value::Int(v) => *v != 0,
            Value::Bytes(b) => !b.is_empty(),
            Value::Absent | Value::Pending => false,
        }
    }
}

/// Where a name lives: `up` frames out from the current struct, slot `idx` there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SlotRef {
    pub up: u16,
    pub idx: u16,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    FloorDiv,
    Mod,
    Shl,
    Shr,
    And,
    Or,
    Xor,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Invert,
    Not,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    Const(Value),
    Slot(SlotRef, Arc<str>),
    Un(UnOp, Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    /// Python `and`: the first falsy operand, else the last.
    LogicAnd(Box<Expr>, Box<Expr>),
    LogicOr(Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
}

/// Why an expression could not be evaluated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EvalError {
    Overflow,
    DivByZero,
    NegativeShift,
    TypeMismatch(&'static str),
    Absent(Arc<str>),
    Pending(Arc<str>),
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvalError::Overflow => write!(f, "integer overflow"),
            EvalError::DivByZero => write!(f, "division by zero"),
            EvalError::NegativeShift => write!(f, "negative or too large shift count"),
            EvalError::TypeMismatch(what) => write!(f, "{what}"),
            EvalError::Absent(name) => write!(f, "field '{name}' is not present"),
            EvalError::Pending(name) => write!(f, "field '{name}' is not known yet"),
        }
    }
}

/// Read access to slot values during evaluation.
pub trait Env {
    fn get(&self, slot: SlotRef) -> &Value;
}

fn int_of(v: &Value, name: Option<&Arc<str>>) -> Result<i128, EvalError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::Bytes(_) => Err(EvalError::TypeMismatch(
            "arithmetic on a bytes value is not supported",
        )),
        Value::Absent => Err(EvalError::Absent(
            name.cloned().unwrap_or_else(|| "?".into()),
        )),
        Value::Pending => Err(EvalError::Pending(
            name.cloned().unwrap_or_else(|| "?".into()),
        )),
    }
}

impl Expr {
    /// A bare field reference, the overwhelmingly common case.
    pub fn as_slot(&self) -> Option<SlotRef> {
        match self {
            Expr::Slot(s, _) => Some(*s),
            _ => None,
        }
    }

    pub fn eval<E: Env + ?Sized>(&self, env: &E) -> Result<Value, EvalError> {
        match self.eval_small(env) {
            Some(v) => Ok(Value::Int(i128::from(v))),
            None => self.eval_exact(env),
        }
    }

    /// The value when [`Expr::eval`] gives an integer that fits an `i64`, computed without
    /// `i128` or cloned values; `None` when the caller must take [`Expr::eval`] (which may
    /// still give an integer, or the error).
    #[inline]
    pub fn eval_i64<E: Env + ?Sized>(&self, env: &E) -> Option<i64> {
        self.small_operand(env)
    }

    /// Evaluates to an integer.
    #[inline]
    pub fn eval_int<E: Env + ?Sized>(&self, env: &E) -> Result<i128, EvalError> {
        if let Expr::Slot(s, name) = self {
            return int_of(env.get(*s), Some(name));
        }
        match self.eval_small(env) {
            Some(v) => Ok(i128::from(v)),
            None => int_of(&self.eval_exact(env)?, None),
        }
    }

    /// Whether the value is true (a condition).
    #[inline]
    pub fn eval_truthy<E: Env + ?Sized>(&self, env: &E) -> Result<bool, EvalError> {
        match self.eval_small(env) {
            Some(v) => Ok(v != 0),
            None => Ok(self.eval_exact(env)?.truthy()),
        }
    }

    /// The value when every operand and every intermediate result is an integer that fits
    /// an `i64`: then it equals [`Expr::eval`]'s, computed without `i128` or cloned values.
    /// `None` otherwise (bytes, an absent field, overflow, division by zero...), and the
    /// caller takes the exact path, which gives the same value or the error.
    fn eval_small<E: Env + ?Sized>(&self, env: &E) -> Option<i64> {
        Some(match self {
            Expr::Const(_) | Expr::Slot(..) => self.small_operand(env)?,
            Expr::Un(op, a) => {
                let v = a.small_operand(env)?;
                match op {
                    UnOp::Not => i64::from(v == 0),
                    UnOp::Neg => v.checked_neg()?,
                    UnOp::Invert => !v,
                }
            }
            Expr::LogicAnd(a, b) => {
                let l = a.small_operand(env)?;
                if l != 0 {
                    b.small_operand(env)?
                } else {
                    l
                }
            }
            Expr::LogicOr(a, b) => {
                let l = a.small_operand(env)?;
                if l != 0 {
                    l
                } else {
                    b.small_operand(env)?
                }
            }
            Expr::Cond(c, a, b) => {
                if c.small_operand(env)? != 0 {
                    a.small_operand(env)?
                } else {
                    b.small_operand(env)?
                }
            }
            Expr::Bin(op, a, b) => small_binop(*op, a.small_operand(env)?, b.small_operand(env)?)?,
        })
    }

    /// [`Expr::eval_small`] with constants and field references (most operands) read in
    /// place rather than through a call.
    #[inline(always)]
    fn small_operand<E: Env + ?Sized>(&self, env: &E) -> Option<i64> {
        match self {
            Expr::Const(Value::Int(v)) => i64::try_from(*v).ok(),
            Expr::Const(_) => None,
            Expr::Slot(s, _) => match env.get(*s) {
                Value::Int(v) => i64::try_from(*v).ok(),
                _ => None,
            },
            _ => self.eval_small(env),
        }
    }

    /// [`Expr::eval`] on `i128` and values: exact for every input.
    fn eval_exact<E: Env + ?Sized>(&self, env: &E) -> Result<Value, EvalError> {
        Ok(match self {
            Expr::Const(v) => v.clone(),
            Expr::Slot(s, name) => match env.get(*s) {
                Value::Absent => return Err(EvalError::Absent(name.clone())),
                Value::Pending => return Err(EvalError::Pending(name.clone())),
                v => v.clone(),
            },
            Expr::Un(op, a) => {
                let v = a.eval_exact(env)?;
                match op {
                    UnOp::Not => Value::Int(i128::from(!v.truthy())),
                    UnOp::Neg => {
                        Value::Int(int_of(&v, None)?.checked_neg().ok_or(EvalError::Overflow)?)
                    }
                    UnOp::Invert => Value::Int(!int_of(&v, None)?),
                }
            }
            Expr::LogicAnd(a, b) => {
                let l = a.eval_exact(env)?;
                if l.truthy() {
                    b.eval_exact(env)?
                } else {
                    l
                }
            }
            Expr::LogicOr(a, b) => {
                let l = a.eval_exact(env)?;
                if l.truthy() {
                    l
                } else {
                    b.eval_exact(env)?
                }
            }
            Expr::Cond(c, a, b) => {
                if c.eval_exact(env)?.truthy() {
                    a.eval_exact(env)?
                } else {
                    b.eval_exact(env)?
                }
            }
            Expr::Bin(op, a, b) => {
                let l = a.eval_exact(env)?;
                let r = b.eval_exact(env)?;
                binop(*op, &l, &r)?
            }
        })
    }

    /// Whether `target` occurs in this expression, and how often.
    pub fn count_refs(&self, target: SlotRef) -> usize {
        match self {
            Expr::Const(_) => 0,
            Expr::Slot(s, _) => usize::from(*s == target),
            Expr::Un(_, a) => a.count_refs(target),
            Expr::Bin(_, a, b) | Expr::LogicAnd(a, b) | Expr::LogicOr(a, b) => {
                a.count_refs(target) + b.count_refs(target)
            }
            Expr::Cond(c, a, b) => {
                c.count_refs(target) + a.count_refs(target) + b.count_refs(target)
            }
        }
    }

    /// Every slot the expression reads.
    pub fn visit_slots(&self, f: &mut dyn FnMut(SlotRef, &Arc<str>)) {
        match self {
            Expr::Const(_) => {}
            Expr::Slot(s, n) => f(*s, n),
            Expr::Un(_, a) => a.visit_slots(f),
            Expr::Bin(_, a, b) | Expr::LogicAnd(a, b) | Expr::LogicOr(a, b) => {
                a.visit_slots(f);
                b.visit_slots(f);
            }
            Expr::Cond(c, a, b) => {
                c.visit_slots(f);
                a.visit_slots(f);
                b.visit_slots(f);
            }
        }
    }

    /// Whether `self == result` can be solved for the single occurrence of `target`
    /// through `+ - * <<` and unary minus.
    pub fn invertible_in(&self, target: SlotRef) -> bool {
        if self.count_refs(target) != 1 {
            return false;
        }
        let mut e = self;
        loop {
            match e {
                Expr::Slot(s, _) => return *s == target,
                Expr::Un(UnOp::Neg, a) => e = a,
                Expr::Bin(op, a, b) => {
                    let in_a = a.count_refs(target) == 1;
                    match (op, in_a) {
                        (BinOp::Add | BinOp::Sub | BinOp::Mul, _) | (BinOp::Shl, true) => {
                            e = if in_a { a } else { b };
                        }
                        _ => return false,
                    }
                }
                _ => return false,
            }
        }
    }

    /// Solves `self == result` for `target`; `None` when no integer solution exists.
    /// Only call when [`Expr::invertible_in`] holds.
    pub fn solve(
        &self,
        target: SlotRef,
        result: i128,
        env: &dyn Env,
    ) -> Result<Option<i128>, EvalError> {
        let mut e = self;
        let mut want = result;
        loop {
            match e {
                Expr::Slot(..) => return Ok(Some(want)),
                Expr::Un(UnOp::Neg, a) => {
                    want = want.checked_neg().ok_or(EvalError::Overflow)?;
                    e = a;
                }
                Expr::Bin(op, a, b) => {
                    let in_a = a.count_refs(target) == 1;
                    let other = if in_a {
                        b.eval_int(env)?
                    } else {
                        a.eval_int(env)?
                    };
                    want = match (op, in_a) {
                        (BinOp::Add, _) => want.checked_sub(other).ok_or(EvalError::Overflow)?,
                        // x - other = want  |  other - x = want
                        (BinOp::Sub, true) => want.checked_add(other).ok_or(EvalError::Overflow)?,
                        (BinOp::Sub, false) => {
                            other.checked_sub(want).ok_or(EvalError::Overflow)?
                        }
                        (BinOp::Mul, _) => {
                            if other == 0 {
                                return Ok(if want == 0 { Some(0) } else { None });
                            }
                            if want % other != 0 {
                                return Ok(None);
                            }
                            want / other
                        }
                        (BinOp::Shl, true) => {
                            if !(0..127).contains(&other) {
                                return Err(EvalError::NegativeShift);
                            }
                            if want & ((1i128 << other) - 1) != 0 {
                                return Ok(None);
                            }
                            want >> other
                        }
                        _ => return Ok(None),
                    };
                    e = if in_a { a } else { b };
                }
                _ => return Ok(None),
            }
        }
    }
}

/// An operand the closed form reads in place: a field, or an integer constant that fits an
/// `i64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Leaf {
    Slot(SlotRef),
    Int(i64),
}

impl Leaf {
    fn of(e: &Expr) -> Option<Leaf> {
        match e {
            Expr::Const(Value::Int(v)) => i64::try_from(*v).ok().map(Leaf::Int),
            Expr::Slot(s, _) => Some(Leaf::Slot(*s)),
            _ => None,
        }
    }

    #[inline(always)]
    fn get<E: Env + ?Sized>(self, env: &E) -> Option<i64> {
        match self {
            Leaf::Int(v) => Some(v),
            Leaf::Slot(s) => match env.get(s) {
                Value::Int(v) => i64::try_from(*v).ok(),
                _ => None,
            },
        }
    }
}

/// An expression's closed form for the `i64` fast path, built once at compile time: the
/// common shapes (a field, a field and a constant, one operation inside another, a
/// condition on a comparison) are read without walking the tree. It computes exactly
/// [`Expr::eval_small`]: the same operands in the same order, each intermediate an `i64`.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Fast {
    Leaf(Leaf),
    /// `x * k + c` of a field `x` (`x + c`, `x - c`, `x * k - c`...: lengths and sizes):
    /// computed where it is read, without a call.
    Lin {
        x: SlotRef,
        k: i64,
        c: i64,
    },
    /// `a - b * k` of two fields (`total_length - ihl * 4`).
    SubMul {
        a: SlotRef,
        b: SlotRef,
        k: i64,
    },
    /// `a op b`.
    Bin(BinOp, Leaf, Leaf),
    /// `(a inner b) op c`.
    BinL(BinOp, BinOp, [Leaf; 3]),
    /// `a op (b inner c)`.
    BinR(BinOp, BinOp, [Leaf; 3]),
    Gen(BinOp, Box<Fast>, Box<Fast>),
    Un(UnOp, Box<Fast>),
    And(Box<Fast>, Box<Fast>),
    Or(Box<Fast>, Box<Fast>),
    Cond(Box<Fast>, Box<Fast>, Box<Fast>),
}

impl Fast {
    /// `None` when some constant is bytes or beyond an `i64` (then the tree is walked).
    fn of(e: &Expr) -> Option<Fast> {
        if let Some(l) = Leaf::of(e) {
            return Some(Fast::Leaf(l));
        }
        if let Some(f) = Fast::linear(e) {
            return Some(f);
        }
        let b = |e: &Expr| Fast::of(e).map(Box::new);
        Some(match e {
            Expr::Bin(op, a, c) => match (&**a, &**c) {
                (x, y) if Leaf::of(x).is_some() && Leaf::of(y).is_some() => {
                    Fast::Bin(*op, Leaf::of(x)?, Leaf::of(y)?)
                }
                (Expr::Bin(inner, x, y), z)
                    if Leaf::of(x).is_some() && Leaf::of(y).is_some() && Leaf::of(z).is_some() =>
                {
                    Fast::BinL(*op, *inner, [Leaf::of(x)?, Leaf::of(y)?, Leaf::of(z)?])
                }
                (x, Expr::Bin(inner, y, z))
                    if Leaf::of(x).is_some() && Leaf::of(y).is_some() && Leaf::of(z).is_some() =>
                {
                    Fast::BinR(*op, *inner, [Leaf::of(x)?, Leaf::of(y)?, Leaf::of(z)?])
                }
                _ => Fast::Gen(*op, b(a)?, b(c)?),
            },
            Expr::Un(op, a) => match Leaf::of(a) {
                // A negative constant (`-1` is the negation of 1): folded once here.
                Some(Leaf::Int(v)) => match un_small(*op, v) {
                    Some(r) => Fast::Leaf(Leaf::Int(r)),
                    None => Fast::Un(*op, b(a)?),
                },
                _ => Fast::Un(*op, b(a)?),
            },
            Expr::LogicAnd(x, y) => Fast::And(b(x)?, b(y)?),
            Expr::LogicOr(x, y) => Fast::Or(b(x)?, b(y)?),
            Expr::Cond(c, x, y) => Fast::Cond(b(c)?, b(x)?, b(y)?),
            Expr::Const(_) | Expr::Slot(..) => return None,
        })
    }

    /// The linear forms of a field ([`Fast::Lin`], [`Fast::SubMul`]). Each fails (gives
    /// `None`) exactly when the operations it stands for do: a field that is not an `i64`,
    /// or an intermediate that overflows one (`x - c` overflows just when `x + -c` does, so
    /// only `c == i64::MIN` is left to the general forms).
    fn linear(e: &Expr) -> Option<Fast> {
        let Expr::Bin(op, l, r) = e else {
            return None;
        };
        let slot = |e: &Expr| match e {
            Expr::Slot(s, _) => Some(*s),
            _ => None,
        };
        let int = |e: &Expr| match Leaf::of(e)? {
            Leaf::Int(v) => Some(v),
            Leaf::Slot(_) => None,
        };
        let add = |c: i64| match op {
            BinOp::Add => Some(c),
            BinOp::Sub => c.checked_neg(),
            _ => None,
        };
        match (&**l, &**r) {
            // `x * k + c`, `x * k - c`
            (Expr::Bin(BinOp::Mul, x, k), c) => Some(Fast::Lin {
                x: slot(x)?,
                k: int(k)?,
                c: add(int(c)?)?,
            }),
            // `a - b * k`
            (a, Expr::Bin(BinOp::Mul, b, k)) if *op == BinOp::Sub => Some(Fast::SubMul {
                a: slot(a)?,
                b: slot(b)?,
                k: int(k)?,
            }),
            // `x + c`, `x - c`
            (x, c) => Some(Fast::Lin {
                x: slot(x)?,
                k: 1,
                c: add(int(c)?)?,
            }),
        }
    }

    /// The value of the linear forms and of a field, computed in place; `Err` for the other
    /// forms.
    #[inline(always)]
    fn inline<E: Env + ?Sized>(&self, env: &E) -> Result<Option<i64>, ()> {
        Ok(match self {
            Fast::Leaf(l) => l.get(env),
            Fast::Lin { x, k, c } => {
                (|| Leaf::Slot(*x).get(env)?.checked_mul(*k)?.checked_add(*c))()
            }
            Fast::SubMul { a, b, k } => (|| {
                let a = Leaf::Slot(*a).get(env)?;
                a.checked_sub(Leaf::Slot(*b).get(env)?.checked_mul(*k)?)
            })(),
            _ => return Err(()),
        })
    }

    /// An operand of an enclosing form: a field, a constant or a closed form of two of
    /// them is computed in place, anything deeper by a call.
    #[inline(always)]
    fn sub<E: Env + ?Sized>(&self, env: &E) -> Option<i64> {
        match self {
            Fast::Bin(op, a, b) => small_binop(*op, a.get(env)?, b.get(env)?),
            _ => match self.inline(env) {
                Ok(v) => v,
                Err(()) => self.eval(env),
            },
        }
    }

    fn eval<E: Env + ?Sized>(&self, env: &E) -> Option<i64> {
        Some(match self {
            Fast::Leaf(_) | Fast::Lin { .. } | Fast::SubMul { .. } => {
                self.inline(env).unwrap_or(None)?
            }
            Fast::Bin(op, a, b) => small_binop(*op, a.get(env)?, b.get(env)?)?,
            Fast::BinL(op, inner, [a, b, c]) => {
                let l = small_binop(*inner, a.get(env)?, b.get(env)?)?;
                small_binop(*op, l, c.get(env)?)?
            }
            Fast::BinR(op, inner, [a, b, c]) => {
                let l = a.get(env)?;
                small_binop(*op, l, small_binop(*inner, b.get(env)?, c.get(env)?)?)?
            }
            Fast::Gen(op, a, b) => small_binop(*op, a.sub(env)?, b.sub(env)?)?,
            Fast::Un(op, a) => un_small(*op, a.sub(env)?)?,
            Fast::And(a, b) => {
                let l = a.sub(env)?;
                if l != 0 {
                    b.sub(env)?
                } else {
                    l
                }
            }
            Fast::Or(a, b) => {
                let l = a.sub(env)?;
                if l != 0 {
                    l
                } else {
                    b.sub(env)?
                }
            }
            Fast::Cond(c, a, b) => {
                if c.sub(env)? != 0 {
                    a.sub(env)?
                } else {
                    b.sub(env)?
                }
            }
        })
    }
}

/// An expression the unpack VM evaluates per record (a length, a union tag, a condition, a
/// window size), with its closed form for the `i64` fast path built once. It reads as the
/// [`Expr`] it holds; its `eval*` methods give exactly that expression's results.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compiled {
    pub expr: Expr,
    fast: Option<Fast>,
}

impl From<Expr> for Compiled {
    fn from(expr: Expr) -> Self {
        let fast = Fast::of(&expr);
        Compiled { expr, fast }
    }
}

impl std::ops::Deref for Compiled {
    type Target = Expr;
    fn deref(&self) -> &Expr {
        &self.expr
    }
}

impl Compiled {
    /// [`Expr::eval_i64`].
    #[inline]
    pub fn eval_i64<E: Env + ?Sized>(&self, env: &E) -> Option<i64> {
        match &self.fast {
            Some(f) => match f.inline(env) {
                Ok(v) => v,
                Err(()) => f.eval(env),
            },
            None => self.expr.eval_i64(env),
        }
    }

    /// [`Expr::eval`].
    pub fn eval<E: Env + ?Sized>(&self, env: &E) -> Result<Value, EvalError> {
        match self.eval_i64(env) {
            Some(v) => Ok(Value::Int(i128::from(v))),
            None => self.expr.eval(env),
        }
    }

    /// [`Expr::eval_int`].
    #[inline]
    pub fn eval_int<E: Env + ?Sized>(&self, env: &E) -> Result<i128, EvalError> {
        match self.eval_i64(env) {
            Some(v) => Ok(i128::from(v)),
            None => self.expr.eval_int(env),
        }
    }

    /// [`Expr::eval_truthy`].
    #[inline]
    pub fn eval_truthy<E: Env + ?Sized>(&self, env: &E) -> Result<bool, EvalError> {
        match self.eval_i64(env) {
            Some(v) => Ok(v != 0),
            None => self.expr.eval_truthy(env),
        }
    }
}

fn binop(op: BinOp, l: &Value, r: &Value) -> Result<Value, EvalError> {
    use BinOp::*;
    if let (Value::Bytes(a), Value::Bytes(b)) = (l, r) {
        return match op {
            Eq => Ok(Value::Int(i128::from(a == b))),
            Ne => Ok(Value::Int(i128::from(a != b))),
            Lt => Ok(Value::Int(i128::from(a < b))),
            Le => Ok(Value::Int(i128::from(a <= b))),
            Gt => Ok(Value::Int(i128::from(a > b))),
            Ge => Ok(Value::Int(i128::from(a >= b))),
            _ => Err(EvalError::TypeMismatch(
                "this operator is not supported on bytes",
            )),
        };
    }
    if matches!(
        (l, r),
        (Value::Bytes(_), Value::Int(_)) | (Value::Int(_), Value::Bytes(_))
    ) {
        return match op {
            Eq => Ok(Value::Int(0)),
            Ne => Ok(Value::Int(1)),
            _ => Err(EvalError::TypeMismatch(
                "cannot mix bytes and int in an expression",
            )),
        };
    }
    let a = int_of(l, None)?;
    let b = int_of(r, None)?;
    let v = match op {
        Add => a.checked_add(b).ok_or(EvalError::Overflow)?,
        Sub => a.checked_sub(b).ok_or(EvalError::Overflow)?,
        Mul => a.checked_mul(b).ok_or(EvalError::Overflow)?,
        FloorDiv => {
            if b == 0 {
                return Err(EvalError::DivByZero);
            }
            let q = a.checked_div(b).ok_or(EvalError::Overflow)?;
            if (a % b != 0) && ((a < 0) != (b < 0)) {
                q - 1
            } else {
                q
            }
        }
        Mod => {
            if b == 0 {
                return Err(EvalError::DivByZero);
            }
            let m = a.checked_rem(b).ok_or(EvalError::Overflow)?;
            if m != 0 && ((m < 0) != (b < 0)) {
                m + b
            } else {
                m
            }
        }
        Shl => {
            if !(0..128).contains(&b) {
                return Err(EvalError::NegativeShift);
            }
            let s = a << b;
            if s >> b != a {
                return Err(EvalError::Overflow);
            }
            s
        }
        Shr => {
            if b < 0 {
                return Err(EvalError::NegativeShift);
            }
            a >> b.min(127)
        }
        And => a & b,
        Or => a | b,
        Xor => a ^ b,
        Eq => i128::from(a == b),
        Ne => i128::from(a != b),
        Lt => i128::from(a < b),
        Le => i128::from(a <= b),
        Gt => i128::from(a > b),
        Ge => i128::from(a >= b),
    };
    Ok(Value::Int(v))
}

/// A unary operation on an `i64`; `None` on overflow.
#[inline(always)]
fn un_small(op: UnOp, v: i64) -> Option<i64> {
    Some(match op {
        UnOp::Not => i64::from(v == 0),
        UnOp::Neg => v.checked_neg()?,
        UnOp::Invert => !v,
    })
}

/// [`binop`] on integers that fit an `i64`, when the result does too (and is no error);
/// `None` sends the caller to the exact path.
#[inline(always)]
fn small_binop(op: BinOp, a: i64, b: i64) -> Option<i64> {
    use BinOp::*;
    Some(match op {
        Add => a.checked_add(b)?,
        Sub => a.checked_sub(b)?,
        Mul => a.checked_mul(b)?,
        FloorDiv => {
            let q = a.checked_div(b)?;
            if (a % b != 0) && ((a < 0) != (b < 0)) {
                q - 1
            } else {
                q
            }
        }
        Mod => {
            let m = a.checked_rem(b)?;
            if m != 0 && ((m < 0) != (b < 0)) {
                m + b
            } else {
                m
            }
        }
        Shl => {
            if !(0..64).contains(&b) {
                return None;
            }
            let s = a << b;
            if s >> b != a {
                return None;
            }
            s
        }
        Shr => {
            if b < 0 {
                return None;
            }
            a >> b.min(63)
        }
        And => a & b,
        Or => a | b,
        Xor => a ^ b,
        Eq => i64::from(a == b),
        Ne => i64::from(a != b),
        Lt => i64::from(a < b),
        Le => i64::from(a <= b),
        Gt => i64::from(a > b),
        Ge => i64::from(a >= b),
    })
}

/// Parses the frontend's JSON form, resolving each name with `resolve`.
///
/// Forms: `["name", s]`, `["int", i]` (i a number, or a decimal string beyond 64 bits), `["bytes", [..]]`, `["bin", op, a, b]`,
/// `["un", op, a]` (op: `-`, `~`, `not`), `["and", a, b]`, `["or", a, b]`, `["if", c, a, b]`.
pub fn parse(
    v: &serde_json::Value,
    resolve: &mut dyn FnMut(&str) -> Result<SlotRef, String>,
) -> Result<Expr, String> {
    let arr = v
        .as_array()
        .filter(|a| !a.is_empty())
        .ok_or_else(|| format!("malformed expression {v}"))?;
    let kind = arr[0]
        .as_str()
        .ok_or_else(|| format!("malformed expression {v}"))?;
    let arg = |i: usize| {
        arr.get(i)
            .ok_or_else(|| format!("malformed expression {v}"))
    };
    Ok(match kind {
        "name" => {
            let name = arg(1)?.as_str().ok_or("malformed name")?;
            Expr::Slot(resolve(name)?, Arc::from(name))
        }
        "int" => {
            let n = crate::schema::value_to_i128(arg(1)?)
                .ok_or_else(|| format!("malformed integer in {v}"))?;
            Expr::Const(Value::Int(n))
        }
        "bytes" => {
            let b: Vec<u8> = serde_json::from_value(arg(1)?.clone()).map_err(|e| e.to_string())?;
            Expr::Const(Value::Bytes(b.into()))
        }
        "un" => {
            let op = match arg(1)?.as_str() {
                Some("-") => UnOp::Neg,
                Some("~") => UnOp::Invert,
                Some("not") => UnOp::Not,
                other => return Err(format!("unsupported unary operator {other:?}")),
            };
            Expr::Un(op, Box::new(parse(arg(2)?, resolve)?))
        }
        "bin" => {
            let op = match arg(1)?.as_str().unwrap_or("") {
                "+" => BinOp::Add,
                "-" => BinOp::Sub,
                "*" => BinOp::Mul,
                "//" => BinOp::FloorDiv,
                "%" => BinOp::Mod,
                "<<" => BinOp::Shl,
                ">>" => BinOp::Shr,
                "&" => BinOp::And,
                "|" => BinOp::Or,
                "^" => BinOp::Xor,
                "==" => BinOp::Eq,
                "!=" => BinOp::Ne,
                "<" => BinOp::Lt,
                "<=" => BinOp::Le,
                ">" => BinOp::Gt,
                ">=" => BinOp::Ge,
                other => return Err(format!("unsupported operator {other:?}")),
            };
            Expr::Bin(
                op,
                Box::new(parse(arg(2)?, resolve)?),
                Box::new(parse(arg(3)?, resolve)?),
            )
        }
        "and" => Expr::LogicAnd(
            Box::new(parse(arg(1)?, resolve)?),
            Box::new(parse(arg(2)?, resolve)?),
        ),
        "or" => Expr::LogicOr(
            Box::new(parse(arg(1)?, resolve)?),
            Box::new(parse(arg(2)?, resolve)?),
        ),
        "if" => Expr::Cond(
            Box::new(parse(arg(1)?, resolve)?),
            Box::new(parse(arg(2)?, resolve)?),
            Box::new(parse(arg(3)?, resolve)?),
        ),
        other => return Err(format!("unsupported expression form {other:?}")),
    })
}

/// What the tests of expressions (here and in `pick`) evaluate them over.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;

    /// The values of slots `0..`, in the current frame.
    pub(crate) struct Slots(pub(crate) Vec<Value>);
    impl Env for Slots {
        fn get(&self, s: SlotRef) -> &Value {
            &self.0[s.idx as usize]
        }
    }

    /// `v` parsed, each of `names` the slot of its position.
    pub(crate) fn parse_over(v: &serde_json::Value, names: &[&str]) -> Expr {
        parse(v, &mut |n: &str| {
            names
                .iter()
                .position(|x| *x == n)
                .map(|i| SlotRef {
                    up: 0,
                    idx: i as u16,
                })
                .ok_or_else(|| format!("unknown name {n}"))
        })
        .expect("parses")
    }
}

#[cfg(test)]
mod tests {
    use super::testing::{parse_over, Slots};
    use super::*;
    use serde_json::json;

    fn p(v: serde_json::Value) -> Expr {
        parse_over(&v, &["a", "b"])
    }

    #[test]
    fn python_floor_division_and_modulo() {
        let env = Slots(vec![Value::Int(-7), Value::Int(2)]);
        assert_eq!(
            p(json!(["bin", "//", ["name", "a"], ["name", "b"]])).eval_int(&env),
            Ok(-4)
        );
        assert_eq!(
            p(json!(["bin", "%", ["name", "a"], ["name", "b"]])).eval_int(&env),
            Ok(1)
        );
        let env = Slots(vec![Value::Int(7), Value::Int(-2)]);
        assert_eq!(
            p(json!(["bin", "%", ["name", "a"], ["name", "b"]])).eval_int(&env),
            Ok(-1)
        );
    }

    #[test]
    fn full_u64_range_is_exact() {
        let max = u64::MAX as i128;
        let env = Slots(vec![Value::Int(max), Value::Int(max)]);
        let e = p(json!(["bin", "*", ["name", "a"], ["name", "b"]]));
        // (2**64 - 1)**2 does not fit an i128: an error value, never a wrapped result.
        assert_eq!(e.eval_int(&env), Err(EvalError::Overflow));
        let e2 = p(json!(["bin", "-", ["name", "a"], ["int", 1]]));
        assert_eq!(e2.eval_int(&env), Ok(max - 1));
        let env = Slots(vec![Value::Int(max), Value::Int(1 << 62)]);
        assert_eq!(e.eval_int(&env), Ok(max * (1 << 62)));
    }

    #[test]
    fn errors_are_values_not_panics() {
        let env = Slots(vec![Value::Int(1), Value::Int(0)]);
        assert_eq!(
            p(json!(["bin", "//", ["name", "a"], ["name", "b"]])).eval_int(&env),
            Err(EvalError::DivByZero)
        );
        assert_eq!(
            p(json!(["bin", "<<", ["name", "a"], ["int", 200]])).eval_int(&env),
            Err(EvalError::NegativeShift)
        );
        let big = Slots(vec![Value::Int(i128::MAX), Value::Int(2)]);
        assert_eq!(
            p(json!(["bin", "*", ["name", "a"], ["name", "b"]])).eval_int(&big),
            Err(EvalError::Overflow)
        );
    }

    #[test]
    fn logic_and_comparisons() {
        let env = Slots(vec![Value::Int(3), Value::Int(5)]);
        let e = p(json!([
            "and",
            ["bin", "<", ["name", "a"], ["name", "b"]],
            ["un", "not", ["int", 0]]
        ]));
        assert_eq!(e.eval_int(&env), Ok(1));
        let e = p(json!([
            "if",
            ["bin", "&", ["name", "a"], ["int", 4]],
            ["int", 10],
            ["int", 20]
        ]));
        assert_eq!(e.eval_int(&env), Ok(20));
    }

    /// The `i64` fast path gives exactly the exact path's value, or leaves it the work:
    /// random expressions over edge values (bytes and absent fields included).
    #[test]
    fn fast_path_agrees_with_exact_evaluation() {
        let values = [
            Value::Int(0),
            Value::Int(1),
            Value::Int(-1),
            Value::Int(2),
            Value::Int(-7),
            Value::Int(63),
            Value::Int(64),
            Value::Int(127),
            Value::Int(i128::from(i64::MAX)),
            Value::Int(i128::from(i64::MIN)),
            Value::Int(i128::from(u64::MAX)),
            Value::Int(i128::from(i64::MAX) + 1),
            Value::Int(i128::MIN),
            Value::Bytes(Arc::from(&b"ab"[..])),
            Value::Bytes(Arc::from(&b""[..])),
            Value::Absent,
        ];
        let ops = [
            BinOp::Add,
            BinOp::Sub,
            BinOp::Mul,
            BinOp::FloorDiv,
            BinOp::Mod,
            BinOp::Shl,
            BinOp::Shr,
            BinOp::And,
            BinOp::Or,
            BinOp::Xor,
            BinOp::Eq,
            BinOp::Ne,
            BinOp::Lt,
            BinOp::Le,
            BinOp::Gt,
            BinOp::Ge,
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        fn gen(
            depth: u32,
            next: &mut dyn FnMut(usize) -> usize,
            values: &[Value],
            ops: &[BinOp],
        ) -> Expr {
            let leaf = depth == 0 || next(4) == 0;
            if leaf {
                return if next(2) == 0 {
                    Expr::Const(values[next(values.len())].clone())
                } else {
                    let idx = next(2) as u16;
                    Expr::Slot(
                        SlotRef { up: 0, idx },
                        Arc::from(if idx == 0 { "a" } else { "b" }),
                    )
                };
            }
            let kind = next(6);
            let un = [UnOp::Neg, UnOp::Invert, UnOp::Not][next(3)];
            let op = ops[next(ops.len())];
            let mut sub = || Box::new(gen(depth - 1, next, values, ops));
            match kind {
                0 => Expr::Un(un, sub()),
                1 => Expr::LogicAnd(sub(), sub()),
                2 => Expr::LogicOr(sub(), sub()),
                3 => Expr::Cond(sub(), sub(), sub()),
                _ => Expr::Bin(op, sub(), sub()),
            }
        }
        for _ in 0..20_000 {
            let e = gen(3, &mut next, &values, &ops);
            let env = Slots(vec![
                values[next(values.len())].clone(),
                values[next(values.len())].clone(),
            ]);
            let exact = e.eval_exact(&env);
            assert_eq!(e.eval(&env), exact, "{e:?}");
            assert_eq!(
                e.eval_truthy(&env),
                exact.clone().map(|v| v.truthy()),
                "{e:?}"
            );
            let int = match &e {
                Expr::Slot(s, name) => int_of(env.get(*s), Some(name)),
                _ => exact.and_then(|v| int_of(&v, None)),
            };
            assert_eq!(e.eval_int(&env), int, "{e:?}");
            // The closed form computes the same, shape for shape.
            let c = Compiled::from(e.clone());
            assert_eq!(c.eval_i64(&env), e.eval_i64(&env), "{e:?}");
            assert_eq!(c.eval(&env), e.eval(&env), "{e:?}");
            assert_eq!(c.eval_int(&env), e.eval_int(&env), "{e:?}");
            assert_eq!(c.eval_truthy(&env), e.eval_truthy(&env), "{e:?}");
        }
    }

    /// The shapes of the common expressions get their closed forms.
    #[test]
    fn common_shapes_have_closed_forms() {
        let env = Slots(vec![Value::Int(5), Value::Int(40)]);
        for (e, want) in [
            (json!(["name", "a"]), 5),
            (json!(["bin", "-", ["name", "b"], ["int", 8]]), 32),
            (
                json!([
                    "bin",
                    "-",
                    ["bin", "*", ["name", "a"], ["int", 4]],
                    ["int", 20]
                ]),
                0,
            ),
            (
                json!([
                    "bin",
                    "-",
                    ["name", "b"],
                    ["bin", "*", ["name", "a"], ["int", 4]]
                ]),
                20,
            ),
            (
                json!([
                    "if",
                    ["bin", "==", ["name", "a"], ["int", 5]],
                    ["int", 7],
                    ["name", "b"]
                ]),
                7,
            ),
            (
                json!([
                    "if",
                    ["name", "a"],
                    ["un", "-", ["int", 1]],
                    [
                        "if",
                        [
                            "and",
                            ["name", "b"],
                            ["bin", "==", ["name", "a"], ["int", 17]]
                        ],
                        ["int", 273],
                        ["name", "a"]
                    ]
                ]),
                -1,
            ),
            (
                json!([
                    "if",
                    ["bin", "-", ["name", "a"], ["int", 5]],
                    ["un", "-", ["int", 1]],
                    [
                        "if",
                        [
                            "and",
                            ["name", "b"],
                            ["bin", "==", ["name", "b"], ["int", 40]]
                        ],
                        ["int", 273],
                        ["name", "a"]
                    ]
                ]),
                273,
            ),
        ] {
            let c = Compiled::from(p(e));
            assert!(c.fast.is_some(), "{c:?}");
            assert_eq!(c.eval_i64(&env), Some(want), "{c:?}");
        }
        // Lengths and sizes of a field are linear forms, read without a call.
        let a = SlotRef { up: 0, idx: 0 };
        let b = SlotRef { up: 0, idx: 1 };
        let lin = |e| Compiled::from(p(e)).fast;
        assert_eq!(
            lin(json!([
                "bin",
                "-",
                ["bin", "*", ["name", "a"], ["int", 4]],
                ["int", 20]
            ])),
            Some(Fast::Lin { x: a, k: 4, c: -20 })
        );
        assert_eq!(
            lin(json!(["bin", "-", ["name", "b"], ["int", 8]])),
            Some(Fast::Lin { x: b, k: 1, c: -8 })
        );
        assert_eq!(
            lin(json!([
                "bin",
                "-",
                ["name", "b"],
                ["bin", "*", ["name", "a"], ["int", 4]]
            ])),
            Some(Fast::SubMul { a: b, b: a, k: 4 })
        );
        // `x - i64::MIN` has no `x + c` form: the general one computes it.
        let min = json!(["bin", "-", ["name", "a"], ["int", i64::MIN.to_string()]]);
        assert!(matches!(lin(min.clone()), Some(Fast::Bin(BinOp::Sub, ..))));
        let c = Compiled::from(p(min));
        assert_eq!(c.eval_i64(&Slots(vec![Value::Int(-1)])), Some(i64::MAX));
        assert_eq!(c.eval_i64(&Slots(vec![Value::Int(0)])), None);
        // Overflow in either operation leaves the value to the exact path, as before.
        let big = Compiled::from(p(json!([
            "bin",
            "-",
            ["bin", "*", ["name", "a"], ["int", 4]],
            ["int", 20]
        ])));
        let huge = Slots(vec![Value::Int(i128::from(i64::MAX / 2))]);
        assert_eq!(big.eval_i64(&huge), None);
        assert_eq!(big.eval_int(&huge), Ok(i128::from(i64::MAX / 2) * 4 - 20));
        // A negated constant is folded once.
        let neg = Compiled::from(p(json!(["un", "-", ["int", 1]])));
        assert_eq!(neg.fast, Some(Fast::Leaf(Leaf::Int(-1))));
        // A constant beyond an i64 (or bytes) leaves the tree to be walked.
        let big = Compiled::from(p(json!([
            "bin",
            "+",
            ["name", "a"],
            ["int", "18446744073709551615"]
        ])));
        assert!(big.fast.is_none());
        assert_eq!(big.eval_int(&env), Ok(18_446_744_073_709_551_620));
    }

    #[test]
    fn solving_linear_relations() {
        let a = SlotRef { up: 0, idx: 0 };
        let env = Slots(vec![Value::Int(0), Value::Int(4)]);
        // a * 4 - 20 == 40  =>  a == 15
        let e = p(json!([
            "bin",
            "-",
            ["bin", "*", ["name", "a"], ["int", 4]],
            ["int", 20]
        ]));
        assert!(e.invertible_in(a));
        assert_eq!(e.solve(a, 40, &env), Ok(Some(15)));
        assert_eq!(e.solve(a, 41, &env), Ok(None));
        // a << b == 64 => a == 4
        let e = p(json!(["bin", "<<", ["name", "a"], ["name", "b"]]));
        assert_eq!(e.solve(a, 64, &env), Ok(Some(4)));
        // a * b is not invertible in b when b is also... it is: one occurrence
        let e = p(json!(["bin", "*", ["name", "a"], ["name", "a"]]));
        assert!(!e.invertible_in(a));
        let e = p(json!(["bin", "//", ["name", "a"], ["int", 2]]));
        assert!(!e.invertible_in(a));
    }
}
