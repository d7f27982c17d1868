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

    /// Free symbols, for choosing evaluation points.
    pub fn symbols(&self, out: &mut BTreeSet<String>) {
        match self {
            Expr::Sym(s) => {
                out.insert(s.clone());
            }
            Expr::Num { .. } | Expr::Const(_) | Expr::Text(_) => {}
            Expr::Add(v) | Expr::Mul(v) | Expr::Set(v) | Expr::Union(v) => v.iter().for_each(|e| e.symbols(out)),
            Expr::Seq { items, .. } => items.iter().for_each(|e| e.symbols(out)),
            Expr::Rel(v, _) => v.iter().for_each(|e| e.symbols(out)),
            Expr::Matrix(rows) => rows.iter().flatten().for_each(|e| e.symbols(out)),
            Expr::Neg(a) | Expr::Func(_, a) | Expr::Percent(a) | Expr::Factorial(a) => a.symbols(out),
            Expr::Div(a, b) | Expr::Pow(a, b) | Expr::PlusMinus(a, b) => {
                a.symbols(out);
                b.symbols(out);
            }
        }
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
        1 + match self {
            Expr::Add(v) | Expr::Mul(v) | Expr::Set(v) | Expr::Union(v) => v.iter().map(Expr::size).sum(),
            Expr::Seq { items, .. } => items.iter().map(Expr::size).sum(),
            Expr::Rel(v, _) => v.iter().map(Expr::size).sum(),
            Expr::Matrix(rows) => rows.iter().flatten().map(Expr::size).sum(),
            Expr::Neg(a) | Expr::Func(_, a) | Expr::Percent(a) | Expr::Factorial(a) => a.size(),
            Expr::Div(a, b) | Expr::Pow(a, b) | Expr::PlusMinus(a, b) => a.size() + b.size(),
            _ => 0,
        }
    }
}
