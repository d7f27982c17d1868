//! Whether two answers are the same mathematically: `\frac{1}{2}` and `0.5`, `x = 5` and `5`,
//! `[0,1)` and `[0, 1)`, `\tan^2 y + 1` and `\sec^2 y`. Asymmetric: the key (gold) comes first.
//!
//! Expressions are compared by value: numbers at the precision the writer gave, expressions in
//! variables at several pseudo-random points. Every comparison is bounded in size, so none can
//! hang.
//!
//! The rules, in the order they apply (`ponder check --explain` names the one that decided):
//! - **Several answers** ("3 and 7", "2, 5 or 9", `\boxed{3}` and `\boxed{7}`, `\{3, 7\}`,
//!   `\pm 4`) are an unordered collection; a tuple's own order still matters. Semicolons group
//!   the values of one solution: `a = 2, b = 3; a = 5, b = 1` is `(2, 3), (5, 1)`.
//! - **Labels.** `name = value` states the value when the value is a constant and the name only
//!   names (`AB`, `|PQ|`, `g(x)`, `S_1 : S_2`, `\frac{AM}{MB}`, `(x, y)`). A name that computes
//!   (`2x = 6`, `x^2 = 9`) makes an equation, compared as one. Decided deliberately: `y = 2x + 1`
//!   against `2x + 1` is equal, since a lone unknown on the left names the formula on the right.
//! - **Units and words.** A word after a number is its unit and is dropped (`35 cm`, `12 元`),
//!   but two different units (`35 cm`, `35 mm`) are different answers. `\text{even}` is `even`.
//! - **Relations against sets.** A relation of one unknown with constants is the set it
//!   describes: `2 < x < 5` is `(2, 5)`, "x ≤ -1 or x ≥ 3" is `(-∞, -1] ∪ [3, ∞)`, and
//!   `1 ≤ |t| ≤ 2` is `[-2, -1] ∪ [1, 2]`.
//! - **Variables.** The same function in another variable is the same answer (`h(s) = s^2 + 1`
//!   against `h(t) = t^2 + 1`): the checker does not see the question, so it cannot tell when the
//!   question names the variable. A lone letter is never renamed: choices `A` and `B` differ.
//! - **Mixed numbers** (`3 1/4`, `3\frac14`) need a proper fraction on the same line.
//! - **Percentages**: a key of 28% accepts 28 and 0.28.

use crate::expr::{Constant, Expr, Func, RelOp};
use crate::extract::{self, Found};
use crate::parse;
use rand::{rngs::StdRng, Rng, SeedableRng};
use std::cell::Cell;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

const MAX_NODES: usize = 4000;
const POINTS: usize = 6;
/// Past this, a comparison gives up: "too slow to compare", which a verdict reads as unsure.
/// Sizes are bounded already; this is the backstop that keeps any input from hanging a report.
const TIME_LIMIT: Duration = Duration::from_millis(1000);

thread_local! {
    /// When the comparison running on this thread must stop.
    static DEADLINE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// Whether the running comparison is out of time; every value comparison and every pairing of
/// a collection asks first.
fn out_of_time() -> bool {
    DEADLINE.with(|d| d.get().is_some_and(|t| Instant::now() >= t))
}

/// Runs `f` with a deadline `limit` from now (a comparison inside one keeps the outer deadline).
fn with_deadline<T>(limit: Duration, f: impl FnOnce() -> T) -> T {
    let outer = DEADLINE.with(|d| d.get());
    if outer.is_none() {
        DEADLINE.with(|d| d.set(Some(Instant::now() + limit)));
    }
    let out = f();
    if outer.is_none() {
        DEADLINE.with(|d| d.set(None));
    }
    out
}

/// The rule that decided a comparison: a stable code (the window translates it) and an English
/// description.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    Percent,
    PercentAsNumber,
    PlusMinus,
    Intervals,
    Sets,
    Several,
    Tuples,
    Brackets,
    Unions,
    Matrices,
    OneElement,
    Relations,
    Formula,
    Words,
    WordAgainstMaths,
    Kinds,
    Values,
    Units,
    Text,
    TooLarge,
    TimedOut,
}

impl Rule {
    pub fn describe(self) -> &'static str {
        match self {
            Rule::Percent => "percentages",
            Rule::PercentAsNumber => "a percentage as its number or its fraction",
            Rule::PlusMinus => "± as its two values",
            Rule::Intervals => "sets of numbers, interval by interval",
            Rule::Sets => "sets, in any order",
            Rule::Several => "several answers, in any order",
            Rule::Tuples => "tuples, in order",
            Rule::Brackets => "different brackets",
            Rule::Unions => "unions, part by part",
            Rule::Matrices => "matrices, entry by entry",
            Rule::OneElement => "a one-element matrix",
            Rule::Relations => "relations with the same solutions",
            Rule::Formula => "an unknown's formula against the formula",
            Rule::Words => "words",
            Rule::WordAgainstMaths => "a word against maths",
            Rule::Kinds => "different kinds",
            Rule::Values => "values (numbers at the precision given, formulas at sample points)",
            Rule::Units => "different units",
            Rule::Text => "compared as text (not maths)",
            Rule::TooLarge => "too large to compare",
            Rule::TimedOut => "too slow to compare (gave up after a second)",
        }
    }
}

/// The outcome, with how each side was read and the rule that decided (what `ponder check
/// --explain` prints and the app shows next to a disputed key).
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Check {
    pub equal: bool,
    /// The answer found in the key, and where it was found.
    pub gold: String,
    pub gold_found: Found,
    pub pred: String,
    pub pred_found: Found,
    /// Each side as read, after labels and units are dropped (`None`: not maths, so compared as
    /// text).
    pub gold_read: Option<String>,
    pub pred_read: Option<String>,
    /// The rule that decided.
    pub rule: Rule,
}

/// The answer inside a text: what it states as its answer (boxed, or after an answer phrase),
/// else its last maths segment, else the whole text if it reads as maths, else its last number.
pub fn answer_of(s: &str) -> (String, Found) {
    if let Some((a, how)) = extract::stated_answer(s) {
        if how == Found::Boxed {
            return (a, how);
        }
        if let Some(m) = extract::phrase_maths(&a) {
            return (m, how);
        }
        // "The answer is 12 apples": the number, unless the phrase reads as maths throughout.
        if parse::parse(&a).is_ok_and(|e| !mentions_text(&e)) {
            return (a, how);
        }
        return (extract::last_number(&a).unwrap_or(a), how);
    }
    if let Some(m) = extract::math_segments(s).pop().filter(|m| !m.trim().is_empty()) {
        return (m, Found::LastMath);
    }
    let bare = s.trim().trim_matches('$').trim();
    if parse::parse(bare).is_ok_and(|e| !has_text(&e)) {
        return (bare.to_string(), Found::Whole);
    }
    match extract::last_number(s) {
        Some(n) => (n, Found::LastNumber),
        None => (bare.to_string(), Found::Whole),
    }
}

fn has_text(e: &Expr) -> bool {
    match e {
        Expr::Text(_) => true,
        Expr::Mul(v) => v.iter().filter(|x| !matches!(x, Expr::Text(_))).count() == 0,
        _ => false,
    }
}

/// The words written next to a number (`35 cm`, `12 \text{ m}`, `15 元`), singular and lower-case.
fn units(e: &Expr) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    e.visit(&mut |x| {
        if let Expr::Mul(v) = x {
            if v.iter().any(|f| matches!(f, Expr::Num { .. })) {
                for f in v {
                    let Expr::Text(t) = f else { continue };
                    let word = t.trim().to_lowercase();
                    let word = word.trim_end_matches('.');
                    let singular = if word.len() > 2 { word.strip_suffix('s').unwrap_or(word) } else { word };
                    if !singular.is_empty() {
                        out.insert(singular.to_string());
                    }
                }
            }
        }
    });
    out
}

/// Whether a word (not a unit or a letter) appears anywhere in it.
fn mentions_text(e: &Expr) -> bool {
    let mut found = false;
    e.visit(&mut |x| found |= matches!(x, Expr::Text(t) if !t.trim().is_empty()));
    found
}

/// Compares a key with a candidate answer, each given as free text.
pub fn check(gold: &str, pred: &str) -> Check {
    with_deadline(TIME_LIMIT, || check_within_deadline(gold, pred))
}

fn check_within_deadline(gold: &str, pred: &str) -> Check {
    let ((g, gold_found), (p, pred_found)) = (answer_of(gold), answer_of(pred));
    let (equal, rule, gold_read, pred_read) = match (parse::parse(&g), parse::parse(&p)) {
        (Ok(ge), Ok(pe)) if ge.size() + pe.size() <= MAX_NODES => {
            // `35 cm` against `35 mm`: a unit on both sides must be the same one.
            let (gu, pu) = (units(&ge), units(&pe));
            let (ge, pe) = (canon(ge), canon(pe));
            let pe = in_keys_variable(&ge, pe);
            let (equal, rule) = if !gu.is_empty() && !pu.is_empty() && gu != pu {
                (false, Rule::Units)
            } else {
                match decide(&ge, &pe) {
                    _ if out_of_time() => (false, Rule::TimedOut),
                    decided => decided,
                }
            };
            (equal, rule, Some(ge.to_string()), Some(pe.to_string()))
        }
        (Ok(_), Ok(_)) => (false, Rule::TooLarge, None, None),
        _ => (norm_text(&g) == norm_text(&p) && !norm_text(&g).is_empty(), Rule::Text, None, None),
    };
    Check { equal, gold: g.trim().to_string(), gold_found, pred: p.trim().to_string(), pred_found, gold_read, pred_read, rule }
}

/// `Some(equal)`, or `None` when the comparison ran out of time (neither equal nor different).
pub fn decided(gold: &str, pred: &str) -> Option<bool> {
    let c = check(gold, pred);
    (c.rule != Rule::TimedOut).then_some(c.equal)
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
                // `x = 5 + 5 = 10`, `\frac{1}{2} = 0.5`, `k = 1`, `AB = 6`, `|PQ| = 2`,
                // `f(3) = 7`, `(x, y) = (2, 5)` and `\frac{AM}{MB} = \frac23` state a value;
                // `y = 2x + 1`, `2x = 6` and `7 = 11a + c` are equations.
                let last = operands.last().unwrap();
                let names_a_value = ops.len() >= 2 || (constant(last) && (constant(&operands[0]) || is_label(&operands[0])));
                if names_a_value {
                    return canon(operands.pop().unwrap());
                }
            }
            // a ≤ |x| ≤ b (0 ≤ a) is [-b, -a] ∪ [a, b]
            if ops.len() == 2 && matches!(&operands[1], Expr::Func(Func::Abs, x) if matches!(**x, Expr::Sym(_))) {
                let lower = |o: RelOp| matches!(o, RelOp::Lt | RelOp::Le);
                let nonneg = operands[0].eval(&|_| None).is_some_and(|a| a >= 0.0);
                if lower(ops[0]) && lower(ops[1]) && nonneg && symbols(&[&operands[0], &operands[2]]).is_empty() {
                    let (inner_closed, outer_closed) = (ops[0] == RelOp::Le, ops[1] == RelOp::Le);
                    let b = canon(operands.pop().unwrap());
                    operands.pop();
                    let a = canon(operands.pop().unwrap());
                    let neg = |e: &Expr| Expr::Neg(Box::new(e.clone()));
                    let left = Expr::Seq {
                        open: if outer_closed { '[' } else { '(' },
                        close: if inner_closed { ']' } else { ')' },
                        items: vec![neg(&b), neg(&a)],
                    };
                    let right = Expr::Seq {
                        open: if inner_closed { '[' } else { '(' },
                        close: if outer_closed { ']' } else { ')' },
                        items: vec![a, b],
                    };
                    return Expr::Union(vec![left, right]);
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

/// The same function in another variable is the same answer: `h(s) = s^2 + 1` against a key of
/// `h(t) = t^2 + 1` is read with `t` for `s`. Only when one symbol differs on each side, and
/// never for a lone symbol (choices `A` and `B` stay different).
fn in_keys_variable(key: &Expr, answer: Expr) -> Expr {
    let (ks, als) = (symbols(&[key]), symbols(&[&answer]));
    let only_key: Vec<&String> = ks.difference(&als).collect();
    let only_answer: Vec<&String> = als.difference(&ks).collect();
    let lone = |e: &Expr| matches!(e, Expr::Sym(_));
    match (only_key.as_slice(), only_answer.as_slice()) {
        ([k], [a]) if !lone(key) && !lone(&answer) => answer.rename(a, k),
        _ => answer,
    }
}

/// What names a value rather than computes one: `x`, `AB`, `S_1`, `|PQ|`, `f(3)`, `\frac{AM}{MB}`,
/// `(x, y)`, `S_1 : S_2`. A number at the front (`2x`) or a power (`x^2`) makes it a formula.
fn is_label(e: &Expr) -> bool {
    match e {
        Expr::Sym(_) | Expr::Text(_) => true,
        Expr::Mul(v) => matches!(v.first(), Some(Expr::Sym(_))) && v.iter().all(|x| is_label(x) || matches!(x, Expr::Num { .. })),
        Expr::Div(a, b) => is_label(a) && is_label(b),
        Expr::Func(Func::Abs, a) => is_label(a),
        Expr::Seq { items, .. } => !items.is_empty() && items.iter().all(is_label),
        _ => false,
    }
}

/// `x < 3` as the interval (-∞, 3), `x ≥ 1` as [1, ∞): a relation of one unknown with a constant.
fn as_interval(e: &Expr) -> Option<Expr> {
    let Expr::Rel(operands, ops) = e else { return None };
    if ops.len() != 1 {
        return None;
    }
    let (op, bound) = match (&operands[0], &operands[1]) {
        (Expr::Sym(_), c) if symbols(&[c]).is_empty() => (ops[0], c),
        (c, Expr::Sym(_)) if symbols(&[c]).is_empty() => (ops[0].flipped(), c),
        _ => return None,
    };
    let inf = Expr::Const(Constant::Infinity);
    let (open, close, items) = match op {
        RelOp::Lt => ('(', ')', vec![Expr::Neg(Box::new(inf)), bound.clone()]),
        RelOp::Le => ('(', ']', vec![Expr::Neg(Box::new(inf)), bound.clone()]),
        RelOp::Gt => ('(', ')', vec![bound.clone(), inf]),
        RelOp::Ge => ('[', ')', vec![bound.clone(), inf]),
        _ => return None,
    };
    Some(Expr::Seq { open, close, items })
}

fn is_interval(e: &Expr) -> bool {
    matches!(e, Expr::Seq { open: '(' | '[', close: ')' | ']', items } if items.len() == 2)
}

/// A set of reals as its intervals: a union, an interval, a relation of one unknown, or a list
/// of those ("x ≤ -1 or x ≥ 3").
fn as_intervals(e: &Expr) -> Option<Vec<Expr>> {
    match e {
        Expr::Union(parts) => parts.iter().all(is_interval).then(|| parts.clone()),
        Expr::Rel(..) => as_interval(e).map(|i| vec![i]),
        Expr::Seq { open: ' ', items, .. } => items.iter().map(as_interval).collect(),
        e if is_interval(e) => Some(vec![e.clone()]),
        _ => None,
    }
}

/// The letters of a word read as a product of one-letter symbols (`odd` is o·d·d).
fn spelled(e: &Expr) -> Option<String> {
    match e {
        Expr::Sym(s) => Some(s.to_lowercase()),
        Expr::Mul(v) => v
            .iter()
            .map(|x| match x {
                Expr::Sym(s) if s.chars().count() == 1 => Some(s.to_lowercase()),
                _ => None,
            })
            .collect(),
        _ => None,
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

/// The values of a list, a set or `a ± b`.
fn values(e: &Expr) -> Vec<Expr> {
    match e {
        Expr::Seq { open: ' ', items, .. } | Expr::Set(items) => items.iter().flat_map(expand_pm).collect(),
        other => expand_pm(other),
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
    unordered_by(&g, &p, eq)
}

/// Each of `g` matches its own one of `p`.
fn unordered_by(g: &[Expr], p: &[Expr], same: impl Fn(&Expr, &Expr) -> bool) -> bool {
    if g.len() != p.len() {
        return false;
    }
    let mut used = vec![false; p.len()];
    g.iter().all(|x| {
        if out_of_time() {
            return false;
        }
        if let Some(j) = (0..p.len()).find(|&j| !used[j] && same(x, &p[j])) {
            used[j] = true;
            true
        } else {
            false
        }
    })
}

fn eq(g: &Expr, p: &Expr) -> bool {
    decide(g, p).0
}

/// Whether two canonical answers are equal, and the rule that said so.
fn decide(g: &Expr, p: &Expr) -> (bool, Rule) {
    // Two intervals alone compare as shapes: `(2, 5)` may be a point as well.
    let relation_or_set = |e: &Expr| matches!(e, Expr::Rel(..) | Expr::Union(_));
    match (g, p) {
        (Expr::Percent(a), Expr::Percent(b)) => (eq(a, b), Rule::Percent),
        // A key of 28% accepts 28 and 0.28.
        (Expr::Percent(a), b) => (eq(a, b) || scalar_eq(g, b), Rule::PercentAsNumber),
        (a, Expr::Percent(b)) => (eq(a, b) || scalar_eq(a, p), Rule::PercentAsNumber),
        (Expr::PlusMinus(..), _) | (_, Expr::PlusMinus(..)) => (unordered_eq(&values(g), &values(p)), Rule::PlusMinus),
        // `x ≤ -1 or x ≥ 3` against `(-∞, -1] ∪ [3, ∞)`, `x > 3` against `(3, ∞)`.
        _ if (relation_or_set(g) || relation_or_set(p)) && !matches!((g, p), (Expr::Rel(..), Expr::Rel(..))) => {
            match (as_intervals(g), as_intervals(p)) {
                (Some(a), Some(b)) => (unordered_by(&a, &b, |x, y| decide_shapes(x, y).0), Rule::Intervals),
                _ => decide_shapes(g, p),
            }
        }
        _ => decide_shapes(g, p),
    }
}

fn decide_shapes(g: &Expr, p: &Expr) -> (bool, Rule) {
    match (g, p) {
        (Expr::Set(_), _) | (_, Expr::Set(_)) if items(g).is_some() && items(p).is_some() => {
            (unordered_eq(items(g).unwrap(), items(p).unwrap()), Rule::Sets)
        }
        (Expr::Seq { open: o1, close: c1, items: a }, Expr::Seq { open: o2, close: c2, items: b }) => {
            if bare(g) && bare(p) {
                (unordered_eq(a, b), Rule::Several)
            } else if bare(g) || bare(p) || (o1 == o2 && c1 == c2) {
                (a.len() == b.len() && a.iter().zip(b).all(|(x, y)| eq(x, y)), Rule::Tuples)
            } else {
                (false, Rule::Brackets)
            }
        }
        (Expr::Union(a), Expr::Union(b)) => (unordered_eq(a, b), Rule::Unions),
        (Expr::Matrix(a), Expr::Matrix(b)) => {
            let same =
                a.len() == b.len() && a.iter().zip(b).all(|(r, s)| r.len() == s.len() && r.iter().zip(s).all(|(x, y)| eq(x, y)));
            (same, Rule::Matrices)
        }
        // A one-element matrix or tuple wrapped in parentheses is its content.
        (Expr::Seq { items, .. }, Expr::Matrix(_)) if items.len() == 1 => (eq(&items[0], p), Rule::OneElement),
        (Expr::Matrix(_), Expr::Seq { items, .. }) if items.len() == 1 => (eq(g, &items[0]), Rule::OneElement),
        (Expr::Rel(a, oa), Expr::Rel(b, ob)) => (rel_eq(a, oa, b, ob), Rule::Relations),
        // `y = 2x + 1` against `2x + 1`: the named side is the answer.
        (Expr::Rel(a, o), other) | (other, Expr::Rel(a, o))
            if o.as_slice() == [RelOp::Eq] && matches!(a[0], Expr::Sym(_)) && !matches!(other, Expr::Rel(..)) =>
        {
            (eq(&a[1], other), Rule::Formula)
        }
        (Expr::Text(a), Expr::Text(b)) => (!a.is_empty() && a.to_lowercase() == b.to_lowercase(), Rule::Words),
        // `\text{odd}` against `odd` (read as the letters o·d·d).
        (Expr::Text(a), other) | (other, Expr::Text(a)) if spelled(other).is_some() => {
            (spelled(other).is_some_and(|w| w == a.trim().to_lowercase()), Rule::Words)
        }
        (Expr::Text(_), _) | (_, Expr::Text(_)) => (false, Rule::WordAgainstMaths),
        (Expr::Seq { .. } | Expr::Set(_) | Expr::Union(_) | Expr::Matrix(_) | Expr::Rel(..), _) => (false, Rule::Kinds),
        (_, Expr::Seq { .. } | Expr::Set(_) | Expr::Union(_) | Expr::Matrix(_) | Expr::Rel(..)) => (false, Rule::Kinds),
        _ => (scalar_eq(g, p), Rule::Values),
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
    if out_of_time() {
        return false;
    }
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
    fn a_comparison_past_its_time_limit_gives_up_and_says_so() {
        // Inputs are bounded so that no real comparison comes near the limit: a limit that has
        // already passed shows what happens when one does.
        let c = with_deadline(Duration::ZERO, || check_within_deadline("x^2 + 1", "1 + x^2"));
        assert_eq!((c.equal, c.rule), (false, Rule::TimedOut));
        // The deadline ends with its comparison.
        assert_eq!(check("x^2 + 1", "1 + x^2").rule, Rule::Values);
        assert_eq!(decided("x^2 + 1", "1 + x^2"), Some(true));
    }

    #[test]
    fn basic_differences() {
        for (g, p) in [("0.5", "0.6"), ("[0,1)", "[0,1]"), ("(1,2)", "(2,1)"), ("x+1", "x+2"), ("B", "C"), ("x > 5", "x < 5")] {
            assert!(!equivalent(g, p), "{g} vs {p}");
        }
    }
}
