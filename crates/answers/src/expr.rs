//! Mathematical answers as trees, and their numeric evaluation.

use std::collections::BTreeSet;

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// A number; `decimals` is how many digits the writer gave after the point (for comparing
    /// `0.3333` with `1/3` at the precision the writer used).
    Num {
        value: f64,
        decimals: Option<u32>,
    },
    Sym(String),
    Const(Constant),
    Add(Vec<Expr>),
    Mul(Vec<Expr>),
    Neg(Box<Expr>),
    Div(Box<Expr>, Box<Expr>),
    Pow(Box<Expr>, Box<Expr>),
    Func(Func, Box<Expr>),
    /// `a ± b`
    PlusMinus(Box<Expr>, Box<Expr>),
    Percent(Box<Expr>),
    Factorial(Box<Expr>),
    /// Tuples, intervals and bare lists: the brackets tell which.
    Seq {
        open: char,
        close: char,
        items: Vec<Expr>,
    },
    Set(Vec<Expr>),
    Union(Vec<Expr>),
    Matrix(Vec<Vec<Expr>>),
    /// `a < b <= c`: operands and the operators between them.
    Rel(Vec<Expr>, Vec<RelOp>),
    Text(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Constant {
    Pi,
    Infinity,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Sqrt,
    Sin,
    Cos,
    Tan,
    Sec,
    Csc,
    Cot,
    Asin,
    Acos,
    Atan,
    Ln,
    Log,
    Exp,
    Abs,
    Sinh,
    Cosh,
    Tanh,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    Approx,
    In,
}

impl RelOp {
    /// The operator seen from the other side (`a < b` is `b > a`).
    pub fn flipped(self) -> RelOp {
        match self {
            RelOp::Lt => RelOp::Gt,
            RelOp::Gt => RelOp::Lt,
            RelOp::Le => RelOp::Ge,
            RelOp::Ge => RelOp::Le,
            o => o,
        }
    }
}

impl Expr {
    pub fn num(v: f64) -> Expr {
        Expr::Num { value: v, decimals: None }
    }

    /// The direct sub-expressions.
    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Num { .. } | Expr::Sym(_) | Expr::Const(_) | Expr::Text(_) => vec![],
            Expr::Add(v) | Expr::Mul(v) | Expr::Set(v) | Expr::Union(v) | Expr::Rel(v, _) => v.iter().collect(),
            Expr::Seq { items, .. } => items.iter().collect(),
            Expr::Matrix(rows) => rows.iter().flatten().collect(),
            Expr::Neg(a) | Expr::Func(_, a) | Expr::Percent(a) | Expr::Factorial(a) => vec![a],
            Expr::Div(a, b) | Expr::Pow(a, b) | Expr::PlusMinus(a, b) => vec![a, b],
        }
    }

    /// Calls `f` on this expression and every one inside it.
    pub fn visit(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        for c in self.children() {
            c.visit(f);
        }
    }

    /// The same expression with the symbol `from` called `to`.
    pub fn rename(&self, from: &str, to: &str) -> Expr {
        let all = |v: &[Expr]| v.iter().map(|e| e.rename(from, to)).collect::<Vec<_>>();
        let one = |e: &Expr| Box::new(e.rename(from, to));
        match self {
            Expr::Sym(s) if s == from => Expr::Sym(to.to_string()),
            Expr::Num { .. } | Expr::Sym(_) | Expr::Const(_) | Expr::Text(_) => self.clone(),
            Expr::Add(v) => Expr::Add(all(v)),
            Expr::Mul(v) => Expr::Mul(all(v)),
            Expr::Set(v) => Expr::Set(all(v)),
            Expr::Union(v) => Expr::Union(all(v)),
            Expr::Rel(v, ops) => Expr::Rel(all(v), ops.clone()),
            Expr::Seq { open, close, items } => Expr::Seq { open: *open, close: *close, items: all(items) },
            Expr::Matrix(rows) => Expr::Matrix(rows.iter().map(|r| all(r)).collect()),
            Expr::Neg(a) => Expr::Neg(one(a)),
            Expr::Func(f, a) => Expr::Func(*f, one(a)),
            Expr::Percent(a) => Expr::Percent(one(a)),
            Expr::Factorial(a) => Expr::Factorial(one(a)),
            Expr::Div(a, b) => Expr::Div(one(a), one(b)),
            Expr::Pow(a, b) => Expr::Pow(one(a), one(b)),
            Expr::PlusMinus(a, b) => Expr::PlusMinus(one(a), one(b)),
        }
    }

    /// Free symbols, for choosing evaluation points.
    pub fn symbols(&self, out: &mut BTreeSet<String>) {
        self.visit(&mut |e| {
            if let Expr::Sym(s) = e {
                out.insert(s.clone());
            }
        });
    }

    /// The value at a point, `None` where undefined or not a scalar.
    pub fn eval(&self, env: &dyn Fn(&str) -> Option<f64>) -> Option<f64> {
        let v = match self {
            Expr::Num { value, .. } => *value,
            Expr::Sym(s) => env(s)?,
            Expr::Const(Constant::Pi) => std::f64::consts::PI,
            Expr::Const(Constant::Infinity) => f64::INFINITY,
            Expr::Add(v) => v.iter().map(|e| e.eval(env)).sum::<Option<f64>>()?,
            Expr::Mul(v) => v.iter().map(|e| e.eval(env)).product::<Option<f64>>()?,
            Expr::Neg(a) => -a.eval(env)?,
            Expr::Div(a, b) => {
                let d = b.eval(env)?;
                if d == 0.0 {
                    return None;
                }
                a.eval(env)? / d
            }
            Expr::Pow(a, b) => {
                let (x, y) = (a.eval(env)?, b.eval(env)?);
                // Odd roots of negatives, as people write them: (-8)^(1/3) = -2.
                if x < 0.0 && y.fract() != 0.0 {
                    let inv = 1.0 / y;
                    if (inv - inv.round()).abs() < 1e-9 && (inv.round() as i64) % 2 != 0 {
                        return Some(-(-x).powf(y));
                    }
                }
                x.powf(y)
            }
            Expr::Func(f, a) => {
                let x = a.eval(env)?;
                match f {
                    Func::Sqrt => x.sqrt(),
                    Func::Sin => x.sin(),
                    Func::Cos => x.cos(),
                    Func::Tan => x.tan(),
                    Func::Sec => 1.0 / x.cos(),
                    Func::Csc => 1.0 / x.sin(),
                    Func::Cot => 1.0 / x.tan(),
                    Func::Asin => x.asin(),
                    Func::Acos => x.acos(),
                    Func::Atan => x.atan(),
                    Func::Ln => x.ln(),
                    Func::Log => x.log10(),
                    Func::Exp => x.exp(),
                    Func::Abs => x.abs(),
                    Func::Sinh => x.sinh(),
                    Func::Cosh => x.cosh(),
                    Func::Tanh => x.tanh(),
                }
            }
            Expr::Percent(a) => a.eval(env)? / 100.0,
            Expr::Factorial(a) => {
                let n = a.eval(env)?;
                if n < 0.0 || n.fract() != 0.0 || n > 170.0 {
                    return None;
                }
                (1..=n as u64).map(|k| k as f64).product()
            }
            _ => return None,
        };
        if v.is_nan() {
            None
        } else {
            Some(v)
        }
    }

    /// Number of nodes, to cap the work spent on one answer.
    pub fn size(&self) -> usize {
        1 + self.children().into_iter().map(Expr::size).sum::<usize>()
    }
}

/// Plain maths notation, for showing how an answer was read (`(3 + 1/4)`, `(-∞, 2] ∪ [5, ∞)`).
impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let join = |f: &mut std::fmt::Formatter<'_>, v: &[Expr], sep: &str| -> std::fmt::Result {
            for (i, e) in v.iter().enumerate() {
                if i > 0 {
                    f.write_str(sep)?;
                }
                write!(f, "{e}")?;
            }
            Ok(())
        };
        match self {
            Expr::Num { value, .. } => write!(f, "{value}"),
            Expr::Sym(s) => f.write_str(s),
            Expr::Const(Constant::Pi) => f.write_str("π"),
            Expr::Const(Constant::Infinity) => f.write_str("∞"),
            Expr::Add(v) => {
                f.write_str("(")?;
                for (i, e) in v.iter().enumerate() {
                    match (i, e) {
                        (0, e) => write!(f, "{e}")?,
                        (_, Expr::Neg(a)) => write!(f, " - {a}")?,
                        (_, e) => write!(f, " + {e}")?,
                    }
                }
                f.write_str(")")
            }
            Expr::Mul(v) => join(f, v, "·"),
            Expr::Neg(a) => write!(f, "-{a}"),
            Expr::Div(a, b) => write!(f, "{a}/{b}"),
            Expr::Pow(a, b) => write!(f, "{a}^{b}"),
            Expr::Func(func, a) => write!(f, "{}({a})", format!("{func:?}").to_lowercase()),
            Expr::PlusMinus(a, b) => write!(f, "{a} ± {b}"),
            Expr::Percent(a) => write!(f, "{a}%"),
            Expr::Factorial(a) => write!(f, "{a}!"),
            Expr::Seq { open: ' ', items, .. } => join(f, items, ", "),
            Expr::Seq { open: ':', items, .. } => join(f, items, " : "),
            Expr::Seq { open, close, items } => {
                write!(f, "{open}")?;
                join(f, items, ", ")?;
                write!(f, "{close}")
            }
            Expr::Set(v) => {
                f.write_str("{")?;
                join(f, v, ", ")?;
                f.write_str("}")
            }
            Expr::Union(v) => join(f, v, " ∪ "),
            Expr::Matrix(rows) => {
                f.write_str("[")?;
                for (i, r) in rows.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    join(f, r, ", ")?;
                }
                f.write_str("]")
            }
            Expr::Rel(v, ops) => {
                write!(f, "{}", v[0])?;
                for (op, e) in ops.iter().zip(&v[1..]) {
                    let sym = match op {
                        RelOp::Eq => "=",
                        RelOp::Ne => "≠",
                        RelOp::Lt => "<",
                        RelOp::Le => "≤",
                        RelOp::Gt => ">",
                        RelOp::Ge => "≥",
                        RelOp::Approx => "≈",
                        RelOp::In => "∈",
                    };
                    write!(f, " {sym} {e}")?;
                }
                Ok(())
            }
            Expr::Text(t) => write!(f, "\"{t}\""),
        }
    }
}
