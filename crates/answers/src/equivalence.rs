//! Whether two answers are the same mathematically: `\frac{1}{2}` and `0.5`, `x = 5` and `5`,
//! `[0,1)` and `[0, 1)`, `\tan^2 y + 1` and `\sec^2 y`. Asymmetric: the key (gold) comes first.
//!
//! Expressions are compared by value: numbers at the precision the writer gave, expressions in
//! variables at several pseudo-random points. Every comparison is bounded in size, so none can
//! hang.

use crate::expr::{Expr, RelOp};
use crate::extract;
use crate::parse;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::collections::BTreeSet;

const MAX_NODES: usize = 4000;
const POINTS: usize = 6;

/// The outcome, with what each side was read as (for people debugging a verdict).
#[derive(Debug, Clone, PartialEq)]
pub struct Check {
    pub equal: bool,
    pub gold: String,
    pub pred: String,
}

/// The answer inside a text: a boxed answer, else the last maths segment, else an answer
/// phrase, else the whole text if it reads as maths, else its last number.
pub fn answer_of(s: &str) -> String {
    if let Some(b) = extract::last_boxed(s) {
        return b;
    }
    if let Some(a) = extract::after_answer_phrase(s) {
        if let Some(m) = extract::math_segments(&a).pop() {
            return m;
        }
        if let Some(n) = extract::last_number(&a) {
            return n;
        }
    }
    if let Some(m) = extract::math_segments(s).pop() {
        if !m.trim().is_empty() {
            return m;
        }
    }
    let bare = s.trim().trim_matches('$').trim();
    if parse::parse(bare).is_ok_and(|e| !has_text(&e)) {
        return bare.to_string();
    }
    extract::last_number(s).unwrap_or_else(|| bare.to_string())
}

fn has_text(e: &Expr) -> bool {
    match e {
        Expr::Text(_) => true,
        Expr::Mul(v) => v.iter().filter(|x| !matches!(x, Expr::Text(_))).count() == 0,
        _ => false,
    }
}

/// Compares a key with a candidate answer, each given as free text.
pub fn check(gold: &str, pred: &str) -> Check {
    let (g, p) = (answer_of(gold), answer_of(pred));
    let equal = match (parse::parse(&g), parse::parse(&p)) {
        (Ok(ge), Ok(pe)) if ge.size() + pe.size() <= MAX_NODES => eq(&canon(ge), &canon(pe)),
        _ => norm_text(&g) == norm_text(&p) && !norm_text(&g).is_empty(),
    };
    Check { equal, gold: g.trim().to_string(), pred: p.trim().to_string() }
}

pub fn equivalent(gold: &str, pred: &str) -> bool {
    check(gold, pred).equal
}

fn norm_text(s: &str) -> String {
    s.chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '$' | '.' | '(' | ')' | '{' | '}'))
        .flat_map(char::to_lowercase)
        .collect::<String>()
        .replace("\\text", "")
        .replace("\\mathrm", "")
}

/// The value an answer states: units dropped, `x = 5` read as `5`, `x \approx 1.3` as its
/// exact part, `x \in S` as `S`.
fn canon(e: Expr) -> Expr {
    match e {
        Expr::Mul(v) => {
            let kept: Vec<Expr> = v.into_iter().filter(|x| !matches!(x, Expr::Text(_))).map(canon).collect();
            match kept.len() {
                0 => Expr::Text(String::new()),
                1 => kept.into_iter().next().unwrap(),
                _ => Expr::Mul(kept),
            }
        }
        Expr::Rel(mut operands, mut ops) => {
            if ops.first() == Some(&RelOp::In) && ops.len() == 1 {
                return canon(operands.pop().unwrap());
            }
            // Keep what precedes an approximation: `x = 1/3 \approx 0.33` states 1/3.
            if let Some(i) = ops.iter().position(|o| *o == RelOp::Approx) {
                if i > 0 {
                    ops.truncate(i);
                    operands.truncate(i + 1);
                } else {
                    ops[0] = RelOp::Eq;
                }
            }
            if !ops.is_empty() && ops.iter().all(|o| *o == RelOp::Eq) {
                let constant = |e: &Expr| symbols(&[e]).is_empty();
                // `x = 5 + 5 = 10`, `\frac{1}{2} = 0.5` and `k = 1` state a value; `y = 2x + 1`
                // and `7 = 11a + c` are equations.
                let last = operands.last().unwrap();
                let names_a_value = ops.len() >= 2
                    || (constant(&operands[0]) && constant(last))
                    || (matches!(operands[0], Expr::Sym(_) | Expr::Text(_)) && constant(last));
                if names_a_value {
                    return canon(operands.pop().unwrap());
                }
            }
            // a ≤ x ≤ b is the interval [a, b]
            if ops.len() == 2 && matches!(operands[1], Expr::Sym(_)) {
                let lower = |o: RelOp| matches!(o, RelOp::Lt | RelOp::Le);
                if lower(ops[0]) && lower(ops[1]) {
                    let open = if ops[0] == RelOp::Le { '[' } else { '(' };
                    let close = if ops[1] == RelOp::Le { ']' } else { ')' };
                    let b = operands.pop().unwrap();
                    operands.pop();
                    let a = operands.pop().unwrap();
                    return Expr::Seq { open, close, items: vec![canon(a), canon(b)] };
                }
            }
            Expr::Rel(operands.into_iter().map(canon).collect(), ops)
        }
        Expr::Seq { open, close, items } => Expr::Seq { open, close, items: items.into_iter().map(canon).collect() },
        Expr::Set(items) => Expr::Set(items.into_iter().map(canon).collect()),
        Expr::Percent(a) => Expr::Percent(Box::new(canon(*a))),
        other => other,
    }
}

fn bare(e: &Expr) -> bool {
    matches!(e, Expr::Seq { open: ' ', .. })
}

fn items(e: &Expr) -> Option<&Vec<Expr>> {
    match e {
        Expr::Seq { items, .. } | Expr::Set(items) => Some(items),
        _ => None,
    }
}

/// `a ± b` as its two values.
fn expand_pm(e: &Expr) -> Vec<Expr> {
    match e {
        Expr::PlusMinus(a, b) => {
            vec![Expr::Add(vec![(**a).clone(), (**b).clone()]), Expr::Add(vec![(**a).clone(), Expr::Neg(b.clone())])]
        }
        other => vec![other.clone()],
    }
}

fn unordered_eq(g: &[Expr], p: &[Expr]) -> bool {
    let g: Vec<Expr> = g.iter().flat_map(expand_pm).collect();
    let p: Vec<Expr> = p.iter().flat_map(expand_pm).collect();
    if g.len() != p.len() {
        return false;
    }
    let mut used = vec![false; p.len()];
    g.iter().all(|x| {
        if let Some(j) = (0..p.len()).find(|&j| !used[j] && eq(x, &p[j])) {
            used[j] = true;
            true
        } else {
            false
        }
    })
}

fn eq(g: &Expr, p: &Expr) -> bool {
    match (g, p) {
        (Expr::Percent(a), Expr::Percent(b)) => eq(a, b),
        // A key of 28% accepts 28 and 0.28.
        (Expr::Percent(a), b) => eq(a, b) || scalar_eq(g, b),
        (a, Expr::Percent(b)) => eq(a, b),
        (Expr::PlusMinus(..), _) | (_, Expr::PlusMinus(..)) => unordered_eq(&expand_pm(g), &expand_pm(p)),
        (Expr::Set(_), _) | (_, Expr::Set(_)) if items(g).is_some() && items(p).is_some() => {
            unordered_eq(items(g).unwrap(), items(p).unwrap())
        }
        (Expr::Seq { open: o1, close: c1, items: a }, Expr::Seq { open: o2, close: c2, items: b }) => {
            if bare(g) && bare(p) {
                unordered_eq(a, b)
            } else if bare(g) || bare(p) || (o1 == o2 && c1 == c2) {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| eq(x, y))
            } else {
                false
            }
        }
        (Expr::Union(a), Expr::Union(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| eq(x, y)),
        (Expr::Matrix(a), Expr::Matrix(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(r, s)| r.len() == s.len() && r.iter().zip(s).all(|(x, y)| eq(x, y)))
        }
        // A one-element matrix or tuple wrapped in parentheses is its content.
        (Expr::Seq { items, .. }, Expr::Matrix(_)) if items.len() == 1 => eq(&items[0], p),
        (Expr::Matrix(_), Expr::Seq { items, .. }) if items.len() == 1 => eq(g, &items[0]),
        (Expr::Rel(a, oa), Expr::Rel(b, ob)) => rel_eq(a, oa, b, ob),
        // `y = 2x + 1` against `2x + 1`: the named side is the answer.
        (Expr::Rel(a, o), other) | (other, Expr::Rel(a, o))
            if o.as_slice() == [RelOp::Eq] && matches!(a[0], Expr::Sym(_)) && !matches!(other, Expr::Rel(..)) =>
        {
            eq(&a[1], other)
        }
        (Expr::Text(a), Expr::Text(b)) => !a.is_empty() && a.to_lowercase() == b.to_lowercase(),
        (Expr::Text(_), _) | (_, Expr::Text(_)) => false,
        (Expr::Seq { .. } | Expr::Set(_) | Expr::Union(_) | Expr::Matrix(_) | Expr::Rel(..), _) => false,
        (_, Expr::Seq { .. } | Expr::Set(_) | Expr::Union(_) | Expr::Matrix(_) | Expr::Rel(..)) => false,
        _ => scalar_eq(g, p),
    }
}

fn symbols(es: &[&Expr]) -> BTreeSet<String> {
    let mut s = BTreeSet::new();
    for e in es {
        e.symbols(&mut s);
    }
    s
}

/// Evaluation points: the same for both sides, fixed per comparison so verdicts are repeatable.
fn points(syms: &BTreeSet<String>) -> Vec<Vec<(String, f64)>> {
    let mut rng = StdRng::seed_from_u64(0x5eed);
    (0..POINTS).map(|_| syms.iter().map(|s| (s.clone(), rng.random_range(0.31..1.97))).collect()).collect()
}

fn eval_at(e: &Expr, pt: &[(String, f64)]) -> Option<f64> {
    e.eval(&|name| pt.iter().find(|(n, _)| n == name).map(|(_, v)| *v))
}

fn decimals(e: &Expr) -> Option<u32> {
    match e {
        Expr::Num { decimals, .. } => *decimals,
        Expr::Neg(a) => decimals(a),
        _ => None,
    }
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    if a.is_infinite() || b.is_infinite() {
        return a == b;
    }
    (a - b).abs() <= tol * a.abs().max(b.abs()).max(1.0)
}

fn scalar_eq(g: &Expr, p: &Expr) -> bool {
    if let (Expr::Sym(a), Expr::Sym(b)) = (g, p) {
        return a == b;
    }
    let syms = symbols(&[g, p]);
    if syms.is_empty() {
        let (Some(a), Some(b)) = (g.eval(&|_| None), p.eval(&|_| None)) else {
            return format!("{g:?}") == format!("{p:?}");
        };
        // A number written with d decimals matches what rounds to it.
        if let Some(d) = decimals(p).or(decimals(g)) {
            let half = 0.5 * 10f64.powi(-(d as i32));
            return (a - b).abs() <= half * (1.0 + 1e-9);
        }
        return close(a, b, 1e-9);
    }
    let mut valid = 0;
    for pt in points(&syms) {
        match (eval_at(g, &pt), eval_at(p, &pt)) {
            (Some(a), Some(b)) => {
                if !close(a, b, 1e-7) {
                    return false;
                }
                valid += 1;
            }
            (None, None) => {}
            _ => return false,
        }
    }
    valid >= 2 || (valid == 0 && format!("{g:?}") == format!("{p:?}"))
}

/// `f op 0` with `op` one of =, ≠, <, ≤ (so `a > b` becomes `b - a < 0`).
fn as_zero_form(l: &Expr, op: RelOp, r: &Expr) -> (Expr, RelOp) {
    let diff = |a: &Expr, b: &Expr| Expr::Add(vec![a.clone(), Expr::Neg(Box::new(b.clone()))]);
    match op {
        RelOp::Gt => (diff(r, l), RelOp::Lt),
        RelOp::Ge => (diff(r, l), RelOp::Le),
        o => (diff(l, r), o),
    }
}

fn rel_eq(a: &[Expr], oa: &[RelOp], b: &[Expr], ob: &[RelOp]) -> bool {
    if oa.len() != 1 || ob.len() != 1 {
        // Chains (`a < b < c`): the same operators between equal operands, read either way.
        let same = oa == ob && a.len() == b.len() && a.iter().zip(b).all(|(x, y)| eq(x, y));
        let flipped: Vec<RelOp> = ob.iter().rev().map(|o| o.flipped()).collect();
        let rev = oa == flipped.as_slice() && a.len() == b.len() && a.iter().zip(b.iter().rev()).all(|(x, y)| eq(x, y));
        return same || rev;
    }
    let (fg, og) = as_zero_form(&a[0], oa[0], &a[1]);
    let (fp, op) = as_zero_form(&b[0], ob[0], &b[1]);
    if og != op {
        return false;
    }
    // The two sides describe the same set when one is a constant multiple of the other:
    // any non-zero multiple for = and ≠, a positive one for inequalities.
    let syms = symbols(&[&fg, &fp]);
    let mut ratio: Option<f64> = None;
    let mut valid = 0;
    for pt in points(&syms) {
        let (Some(x), Some(y)) = (eval_at(&fg, &pt), eval_at(&fp, &pt)) else { continue };
        if x.abs() < 1e-12 && y.abs() < 1e-12 {
            continue;
        }
        if y.abs() < 1e-12 || x.abs() < 1e-12 {
            return false;
        }
        let r = x / y;
        match ratio {
            None => ratio = Some(r),
            Some(r0) if !close(r0, r, 1e-7) => return false,
            _ => {}
        }
        valid += 1;
    }
    match ratio {
        Some(r) if valid >= 2 || syms.is_empty() => matches!(og, RelOp::Eq | RelOp::Ne) || r > 0.0,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basic_equivalences() {
        for (g, p) in [
            ("0.5", "\\frac{1}{2}"),
            ("\\frac{1}{2}", "1/2"),
            ("x = 5", "5"),
            ("5", "x=5"),
            ("18", "\\$18"),
            ("1,000", "1000"),
            ("25\\%", "25"),
            ("25\\%", "0.25"),
            ("\\frac{\\sqrt{3}}{2}", "\\sqrt{3}/2"),
            ("2\\pi", "\\pi \\cdot 2"),
            ("(1, 2)", "(1,2)"),
            ("\\{2, 1\\}", "\\{1, 2\\}"),
            ("x^2+2x+1", "(x+1)^2"),
            ("B", "\\text{(B)}"),
            ("90^\\circ", "90"),
            ("3\\frac{1}{2}", "3.5"),
        ] {
            assert!(equivalent(g, p), "{g} vs {p}: {:?}", check(g, p));
        }
    }

    #[test]
    fn basic_differences() {
        for (g, p) in [("0.5", "0.6"), ("[0,1)", "[0,1]"), ("(1,2)", "(2,1)"), ("x+1", "x+2"), ("B", "C"), ("x > 5", "x < 5")] {
            assert!(!equivalent(g, p), "{g} vs {p}");
        }
    }
}
