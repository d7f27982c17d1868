//! Reads an answer written in LaTeX or plain text (`\frac{1}{2}`, `1/2`, `x \geq 5`, `[0, 1)`,
//! `\begin{pmatrix}…`) into an [`Expr`]. Forgiving about notation, strict about limits: long or
//! deeply nested input is refused rather than parsed slowly.

use crate::expr::{Constant, Expr, Func, RelOp};

const MAX_INPUT: usize = 2000;
const MAX_DEPTH: usize = 60;

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(String),
    Ident(String),
    Cmd(String),
    Op(char),
    Text(String),
}

/// Words that join the values of a list.
const CONNECTIVES: &[&str] = &["and", "or", "和", "或", "及"];

/// Words that are units or filler next to a number, never products of variables.
const UNIT_WORDS: &[&str] = &[
    "miles",
    "mile",
    "cm",
    "mm",
    "km",
    "m",
    "meters",
    "meter",
    "metres",
    "inches",
    "inch",
    "feet",
    "foot",
    "ft",
    "hours",
    "hour",
    "minutes",
    "minute",
    "seconds",
    "second",
    "days",
    "day",
    "years",
    "year",
    "units",
    "unit",
    "dollars",
    "dollar",
    "cents",
    "cent",
    "degrees",
    "degree",
    "kg",
    "g",
    "grams",
    "pounds",
    "lbs",
    "sq",
    "square",
    "cubic",
    "liters",
    "litres",
    "ml",
    "mph",
    "km/h",
    "percent",
    "pct",
    "percentage",
];

fn tokenize(s: &str) -> Result<Vec<Tok>, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() || c == '~' || c == '$' {
            i += 1;
        } else if c.is_ascii_digit() || (c == '.' && chars.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.') {
                i += 1;
            }
            out.push(Tok::Num(chars[start..i].iter().collect()));
        } else if c.is_alphabetic() && c != 'π' {
            let start = i;
            while i < chars.len() && chars[i].is_alphabetic() && chars[i] != 'π' {
                i += 1;
            }
            out.push(Tok::Ident(chars[start..i].iter().collect()));
        } else if c == '\\' {
            i += 1;
            let start = i;
            while i < chars.len() && chars[i].is_ascii_alphabetic() {
                i += 1;
            }
            if i == start {
                // \{ \} \% \$ \, \! \\ and friends
                let e = chars.get(i).copied().unwrap_or(' ');
                i += 1;
                match e {
                    '{' => out.push(Tok::Cmd("{".into())),
                    '}' => out.push(Tok::Cmd("}".into())),
                    '%' => out.push(Tok::Op('%')),
                    '\\' => out.push(Tok::Cmd("\\".into())),
                    _ => {} // spacing: \, \! \; \: \  and an escaped $
                }
                continue;
            }
            let name: String = chars[start..i].iter().collect();
            match name.as_str() {
                "left" | "right" | "big" | "Big" | "bigl" | "bigr" | "Bigl" | "Bigr" | "displaystyle" | "quad" | "qquad"
                | "limits" | "middle" => {
                    // \left. and \right. are invisible delimiters
                    if chars.get(i) == Some(&'.') {
                        i += 1;
                    }
                }
                "circ" | "degree" => {}
                "text" | "textbf" | "textit" | "mathrm" | "mbox" | "textnormal" | "mathbf" | "mathit" | "textrm"
                | "operatorname" | "mathsf" | "emph" => {
                    let (content, next) = braced(&chars, i)?;
                    i = next;
                    out.push(Tok::Text(content));
                }
                _ => out.push(Tok::Cmd(name)),
            }
        } else if (c == '!' || c == '<' || c == '>') && chars.get(i + 1) == Some(&'=') {
            i += 2;
            out.push(Tok::Cmd(
                match c {
                    '!' => "ne",
                    '<' => "le",
                    _ => "ge",
                }
                .into(),
            ));
        } else {
            i += 1;
            match c {
                '≤' => out.push(Tok::Cmd("le".into())),
                '≥' => out.push(Tok::Cmd("ge".into())),
                '≠' => out.push(Tok::Cmd("ne".into())),
                '±' => out.push(Tok::Cmd("pm".into())),
                '×' | '·' => out.push(Tok::Op('*')),
                '÷' => out.push(Tok::Op('/')),
                'π' => out.push(Tok::Cmd("pi".into())),
                '∞' => out.push(Tok::Cmd("infty".into())),
                '∪' => out.push(Tok::Cmd("cup".into())),
                '√' => out.push(Tok::Cmd("sqrt".into())),
                '°' => {}
                '−' | '–' => out.push(Tok::Op('-')),
                _ => out.push(Tok::Op(c)),
            }
        }
    }
    Ok(out)
}

/// The content of `{...}` starting at `i` (which may point at whitespace before the brace).
fn braced(chars: &[char], mut i: usize) -> Result<(String, usize), String> {
    while i < chars.len() && chars[i].is_whitespace() {
        i += 1;
    }
    if chars.get(i) != Some(&'{') {
        return Ok((String::new(), i));
    }
    let mut depth = 0;
    let start = i + 1;
    while i < chars.len() {
        match chars[i] {
            '{' => depth += 1,
            '}' => {
                depth -= 1;
                if depth == 0 {
                    return Ok((chars[start..i].iter().collect(), i + 1));
                }
            }
            _ => {}
        }
        i += 1;
    }
    Err("unbalanced braces".into())
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    depth: usize,
}

type R = Result<Expr, String>;

fn relop(t: &Tok) -> Option<RelOp> {
    Some(match t {
        Tok::Op('=') => RelOp::Eq,
        Tok::Op('<') => RelOp::Lt,
        Tok::Op('>') => RelOp::Gt,
        Tok::Cmd(c) => match c.as_str() {
            "le" | "leq" | "leqslant" => RelOp::Le,
            "ge" | "geq" | "geqslant" => RelOp::Ge,
            "lt" => RelOp::Lt,
            "gt" => RelOp::Gt,
            "ne" | "neq" => RelOp::Ne,
            "approx" | "sim" | "simeq" => RelOp::Approx,
            "in" => RelOp::In,
            _ => return None,
        },
        _ => return None,
    })
}

fn func(name: &str) -> Option<Func> {
    Some(match name {
        "sin" => Func::Sin,
        "cos" => Func::Cos,
        "tan" => Func::Tan,
        "sec" => Func::Sec,
        "csc" => Func::Csc,
        "cot" => Func::Cot,
        "arcsin" => Func::Asin,
        "arccos" => Func::Acos,
        "arctan" => Func::Atan,
        "ln" => Func::Ln,
        "log" => Func::Log,
        "exp" => Func::Exp,
        "sinh" => Func::Sinh,
        "cosh" => Func::Cosh,
        "tanh" => Func::Tanh,
        "sqrt" => Func::Sqrt,
        _ => return None,
    })
}

fn parse_number(s: &str) -> Result<Expr, String> {
    let value: f64 = s.parse().map_err(|_| format!("bad number `{s}`"))?;
    let decimals = s.find('.').map(|p| (s.len() - p - 1) as u32).filter(|d| *d > 0);
    Ok(Expr::Num { value, decimals })
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn eat(&mut self, t: &Tok) -> bool {
        if self.peek() == Some(t) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            Err("nested too deeply".into())
        } else {
            Ok(())
        }
    }

    fn is_cmd(&self, names: &[&str]) -> bool {
        matches!(self.peek(), Some(Tok::Cmd(c)) if names.contains(&c.as_str()))
    }

    /// A list at the top level or inside braces: items joined by commas or words ("3 and 7",
    /// "2, 5, or 9", "x = 1 \text{ or } x = -4", "3 或 7"). Semicolons group: `a = 2, b = 3;
    /// a = 5, b = 1` is two solutions, each a tuple.
    fn list(&mut self) -> R {
        let mut groups = vec![self.group_items()?];
        while self.eat(&Tok::Op(';')) || self.eat(&Tok::Op('；')) {
            if self.peek().is_none() {
                break;
            }
            groups.push(self.group_items()?);
        }
        let bare = |items: Vec<Expr>| Expr::Seq { open: ' ', close: ' ', items };
        if groups.len() > 1 && groups.iter().all(|g| g.len() > 1) {
            let tuples = groups.into_iter().map(|items| Expr::Seq { open: '(', close: ')', items }).collect();
            return Ok(bare(tuples));
        }
        let mut items: Vec<Expr> = groups.into_iter().flatten().collect();
        Ok(if items.len() == 1 { items.pop().unwrap() } else { bare(items) })
    }

    fn group_items(&mut self) -> Result<Vec<Expr>, String> {
        let mut items = vec![self.relation()?];
        loop {
            let comma = self.eat(&Tok::Op(',')) || self.eat(&Tok::Op('，')) || self.eat(&Tok::Op('、'));
            // "2, 5, and 9": a word after the comma joins too.
            let word = self.eat_connective();
            if !(comma || word) || self.peek().is_none() {
                break;
            }
            items.push(self.relation()?);
        }
        Ok(items)
    }

    /// "and", "or" (also as `\text{ or }`), "和", "或", "及".
    fn eat_connective(&mut self) -> bool {
        let joins = match self.peek() {
            Some(Tok::Ident(w)) | Some(Tok::Text(w)) => CONNECTIVES.contains(&w.trim().to_lowercase().as_str()),
            _ => false,
        };
        if joins {
            self.pos += 1;
        }
        joins
    }

    fn relation(&mut self) -> R {
        let mut operands = vec![self.ratio()?];
        let mut ops = Vec::new();
        while let Some(op) = self.peek().and_then(relop) {
            self.pos += 1;
            // `<=`, `>=`, `!=` written as two characters
            let op = match (op, self.peek()) {
                (RelOp::Lt, Some(Tok::Op('='))) => {
                    self.pos += 1;
                    RelOp::Le
                }
                (RelOp::Gt, Some(Tok::Op('='))) => {
                    self.pos += 1;
                    RelOp::Ge
                }
                _ => op,
            };
            ops.push(op);
            operands.push(self.ratio()?);
        }
        Ok(if ops.is_empty() { operands.pop().unwrap() } else { Expr::Rel(operands, ops) })
    }

    /// `3 : 4` (a ratio), kept as the sequence of its terms.
    fn ratio(&mut self) -> R {
        let mut terms = vec![self.union()?];
        while self.eat(&Tok::Op(':')) || self.eat(&Tok::Op('∶')) {
            terms.push(self.union()?);
        }
        Ok(if terms.len() == 1 { terms.pop().unwrap() } else { Expr::Seq { open: ':', close: ':', items: terms } })
    }

    fn union(&mut self) -> R {
        let mut parts = vec![self.sum()?];
        while self.is_cmd(&["cup"]) {
            self.pos += 1;
            parts.push(self.sum()?);
        }
        Ok(if parts.len() == 1 { parts.pop().unwrap() } else { Expr::Union(parts) })
    }

    fn sum(&mut self) -> R {
        self.enter()?;
        let mut terms = vec![self.term()?];
        loop {
            if self.eat(&Tok::Op('+')) {
                terms.push(self.term()?);
            } else if self.eat(&Tok::Op('-')) {
                terms.push(Expr::Neg(Box::new(self.term()?)));
            } else if self.is_cmd(&["pm", "mp"]) {
                self.pos += 1;
                let rhs = self.term()?;
                let lhs = if terms.len() == 1 { terms.pop().unwrap() } else { Expr::Add(std::mem::take(&mut terms)) };
                terms = vec![Expr::PlusMinus(Box::new(lhs), Box::new(rhs))];
            } else {
                break;
            }
        }
        self.depth -= 1;
        Ok(if terms.len() == 1 { terms.pop().unwrap() } else { Expr::Add(terms) })
    }

    fn starts_factor(&self) -> bool {
        match self.peek() {
            Some(Tok::Num(_)) => true,
            Some(Tok::Text(w)) | Some(Tok::Ident(w)) => !CONNECTIVES.contains(&w.trim().to_lowercase().as_str()),
            Some(Tok::Op(c)) => matches!(c, '(' | '{'),
            Some(Tok::Cmd(c)) => {
                relop(&Tok::Cmd(c.clone())).is_none()
                    && !matches!(c.as_str(), "cup" | "pm" | "mp" | "cdot" | "times" | "div" | "}" | "\\" | "end")
            }
            None => false,
        }
    }

    fn term(&mut self) -> R {
        let mut factors = vec![self.unary()?];
        loop {
            if self.eat(&Tok::Op('*'))
                || self.is_cmd(&["cdot", "times"]) && {
                    self.pos += 1;
                    true
                }
            {
                factors.push(self.unary()?);
            } else if self.eat(&Tok::Op('/'))
                || self.is_cmd(&["div"]) && {
                    self.pos += 1;
                    true
                }
            {
                let den = self.unary()?;
                let num = if factors.len() == 1 { factors.pop().unwrap() } else { Expr::Mul(std::mem::take(&mut factors)) };
                factors = vec![Expr::Div(Box::new(num), Box::new(den))];
            } else if let Some(unit) = self.unit_after(factors.last()) {
                // `12 \text{ m}`: a word after a number is its unit, even a one-letter one.
                self.pos += 1;
                factors.push(unit);
            } else if self.starts_factor() {
                let is_frac = self.is_cmd(&["frac"]);
                let next = self.power()?;
                // 3\frac{1}{2} is the mixed number 3½.
                let mixed = match (factors.last(), &next) {
                    (Some(Expr::Num { value, decimals: None }), Expr::Div(a, b)) if is_frac && factors.len() == 1 => {
                        value.fract() == 0.0
                            && matches!(**a, Expr::Num { decimals: None, .. })
                            && matches!(**b, Expr::Num { decimals: None, .. })
                    }
                    _ => false,
                };
                if mixed {
                    let whole = factors.pop().unwrap();
                    factors.push(Expr::Add(vec![whole, next]));
                } else {
                    factors.push(next);
                }
            } else {
                break;
            }
        }
        Ok(if factors.len() == 1 { factors.pop().unwrap() } else { Expr::Mul(factors) })
    }

    /// The `\text{…}` word that follows a number, unless it joins a list ("3 \text{ or } 4").
    fn unit_after(&self, last: Option<&Expr>) -> Option<Expr> {
        match (last, self.peek()) {
            (Some(Expr::Num { .. }), Some(Tok::Text(t))) if !CONNECTIVES.contains(&t.trim().to_lowercase().as_str()) => {
                Some(Expr::Text(t.trim().to_string()))
            }
            _ => None,
        }
    }

    fn unary(&mut self) -> R {
        self.enter()?;
        let r = if self.eat(&Tok::Op('-')) {
            Ok(Expr::Neg(Box::new(self.unary()?)))
        } else if self.eat(&Tok::Op('+')) {
            self.unary()
        } else if self.is_cmd(&["pm", "mp"]) {
            self.pos += 1;
            Ok(Expr::PlusMinus(Box::new(Expr::num(0.0)), Box::new(self.unary()?)))
        } else {
            self.power()
        };
        self.depth -= 1;
        r
    }

    fn power(&mut self) -> R {
        let base = self.postfix()?;
        if self.eat(&Tok::Op('^')) {
            let exp = self.script()?;
            return Ok(Expr::Pow(Box::new(base), Box::new(exp)));
        }
        Ok(base)
    }

    /// A superscript or subscript: `{...}`, one digit, one letter, or a signed atom.
    fn script(&mut self) -> R {
        match self.peek().cloned() {
            Some(Tok::Op('{')) => {
                self.pos += 1;
                let e = if self.eat(&Tok::Op('}')) { Expr::Text(String::new()) } else { self.list()? };
                self.eat(&Tok::Op('}'));
                Ok(e)
            }
            Some(Tok::Num(n)) if n.len() > 1 => {
                // x^23 in LaTeX is x^2 3
                self.toks[self.pos] = Tok::Num(n[1..].to_string());
                parse_number(&n[..1])
            }
            Some(Tok::Op('-')) => {
                self.pos += 1;
                Ok(Expr::Neg(Box::new(self.script()?)))
            }
            _ => self.atom(),
        }
    }

    fn postfix(&mut self) -> R {
        let mut e = self.atom()?;
        loop {
            if self.eat(&Tok::Op('!')) {
                e = Expr::Factorial(Box::new(e));
            } else if self.eat(&Tok::Op('%')) {
                e = Expr::Percent(Box::new(e));
            } else if matches!(self.peek(), Some(Tok::Ident(w)) if ["percent", "pct", "percentage"].contains(&w.as_str())) {
                self.pos += 1;
                e = Expr::Percent(Box::new(e));
            } else if self.eat(&Tok::Op('_')) {
                let sub = self.script()?;
                e = match (e, sub) {
                    // 204_5: a number written in base 5
                    (Expr::Num { value, decimals: None }, Expr::Num { value: b, .. }) if (2.0..=36.0).contains(&b) => {
                        let digits = format!("{}", value as u64);
                        match u64::from_str_radix(&digits, b as u32) {
                            Ok(v) => Expr::num(v as f64),
                            Err(_) => return Err(format!("{digits} is not a base-{b} number")),
                        }
                    }
                    (Expr::Sym(s), sub) => Expr::Sym(format!("{s}_{}", render_sub(&sub))),
                    (e, _) => e,
                };
            } else if self.eat(&Tok::Op('\'')) {
                e = match e {
                    Expr::Sym(s) => Expr::Sym(format!("{s}'")),
                    e => e,
                };
            } else {
                return Ok(e);
            }
        }
    }

    /// A one-token argument (`\frac12`, `\sqrt3`) or a braced group.
    fn arg(&mut self) -> R {
        match self.peek().cloned() {
            Some(Tok::Op('{')) => {
                self.pos += 1;
                let e = self.list()?;
                if !self.eat(&Tok::Op('}')) {
                    return Err("missing }".into());
                }
                Ok(e)
            }
            Some(Tok::Num(n)) if n.len() > 1 => {
                self.toks[self.pos] = Tok::Num(n[1..].to_string());
                parse_number(&n[..1])
            }
            Some(Tok::Ident(w)) if w.chars().count() > 1 => {
                let mut cs = w.chars();
                let first = cs.next().unwrap().to_string();
                self.toks[self.pos] = Tok::Ident(cs.collect());
                Ok(Expr::Sym(first))
            }
            _ => self.atom(),
        }
    }

    fn atom(&mut self) -> R {
        self.enter()?;
        let r = self.atom_inner();
        self.depth -= 1;
        r
    }

    fn atom_inner(&mut self) -> R {
        let Some(t) = self.next() else { return Err("unexpected end".into()) };
        match t {
            Tok::Num(n) => parse_number(&n),
            Tok::Text(t) => Ok(text_expr(&t)),
            Tok::Ident(w) => self.word(w),
            Tok::Op('(') | Tok::Op('[') => self.group(match t {
                Tok::Op(c) => c,
                _ => unreachable!(),
            }),
            Tok::Op('{') => {
                if self.eat(&Tok::Op('}')) {
                    return Ok(Expr::Text(String::new()));
                }
                let e = self.list()?;
                self.eat(&Tok::Op('}'));
                Ok(e)
            }
            Tok::Op('|') => {
                let e = self.sum()?;
                self.eat(&Tok::Op('|'));
                Ok(Expr::Func(Func::Abs, Box::new(e)))
            }
            Tok::Cmd(c) => self.command(&c),
            Tok::Op(c) => Err(format!("unexpected `{c}`")),
        }
    }

    fn word(&mut self, w: String) -> R {
        if let Some(f) = func(&w) {
            return self.apply_func(f);
        }
        if w == "pi" {
            return Ok(Expr::Const(Constant::Pi));
        }
        let lower = w.to_lowercase();
        // A word in a script without letter case (元, 厘米, 个) is a unit or a word, never a variable.
        let caseless = w.chars().all(|c| !c.is_ascii() && c.is_lowercase() == c.is_uppercase());
        if caseless || (w.chars().count() > 1 && (UNIT_WORDS.contains(&lower.as_str()) || w.chars().count() > 3)) {
            return Ok(Expr::Text(w));
        }
        // Letters written together multiply: `ab` is a*b.
        let syms: Vec<Expr> = w.chars().map(|c| Expr::Sym(c.to_string())).collect();
        Ok(if syms.len() == 1 { syms.into_iter().next().unwrap() } else { Expr::Mul(syms) })
    }

    fn apply_func(&mut self, f: Func) -> R {
        // \sin^2 x is (sin x)^2
        let power = if self.eat(&Tok::Op('^')) { Some(self.script()?) } else { None };
        let arg = if self.peek() == Some(&Tok::Op('(')) { self.atom()? } else { self.power()? };
        let e = Expr::Func(f, Box::new(arg));
        Ok(match power {
            Some(p) => Expr::Pow(Box::new(e), Box::new(p)),
            None => e,
        })
    }

    fn group(&mut self, open: char) -> R {
        if matches!(self.peek(), Some(Tok::Op(')' | ']'))) {
            let close = match self.next() {
                Some(Tok::Op(c)) => c,
                _ => unreachable!(),
            };
            return Ok(Expr::Seq { open, close, items: vec![] });
        }
        let mut items = vec![self.relation()?];
        while self.eat(&Tok::Op(',')) {
            items.push(self.relation()?);
        }
        let close = match self.next() {
            Some(Tok::Op(c @ (')' | ']'))) => c,
            _ => return Err(format!("unclosed `{open}`")),
        };
        if items.len() == 1 && ((open == '(' && close == ')') || (open == '[' && close == ']')) {
            return Ok(items.pop().unwrap());
        }
        Ok(Expr::Seq { open, close, items })
    }

    fn command(&mut self, c: &str) -> R {
        if let Some(f) = func(c) {
            if f == Func::Sqrt {
                // \sqrt[n]{x}
                if self.eat(&Tok::Op('[')) {
                    let n = self.sum()?;
                    self.eat(&Tok::Op(']'));
                    let x = self.arg()?;
                    return Ok(Expr::Pow(Box::new(x), Box::new(Expr::Div(Box::new(Expr::num(1.0)), Box::new(n)))));
                }
                return Ok(Expr::Func(Func::Sqrt, Box::new(self.arg()?)));
            }
            return self.apply_func(f);
        }
        match c {
            "frac" | "dfrac" | "tfrac" | "cfrac" => {
                let a = self.arg()?;
                let b = self.arg()?;
                Ok(Expr::Div(Box::new(a), Box::new(b)))
            }
            "pi" => Ok(Expr::Const(Constant::Pi)),
            "infty" | "infinity" => Ok(Expr::Const(Constant::Infinity)),
            "boxed" | "fbox" => self.arg(),
            "{" => {
                let mut items = Vec::new();
                if !self.is_cmd(&["}"]) {
                    items.push(self.relation()?);
                    while self.eat(&Tok::Op(',')) {
                        items.push(self.relation()?);
                    }
                }
                if !self.is_cmd(&["}"]) {
                    return Err("unclosed \\{".into());
                }
                self.pos += 1;
                Ok(Expr::Set(items))
            }
            "begin" => self.matrix(),
            "emptyset" | "varnothing" => Ok(Expr::Set(vec![])),
            "mathbb" | "mathcal" | "overline" | "vec" | "hat" | "bar" | "mathbf" => {
                let inner = self.arg()?;
                Ok(match inner {
                    Expr::Sym(s) => Expr::Sym(format!("{c}{{{s}}}")),
                    e => e,
                })
            }
            "%" => Err("stray %".into()),
            greek if greek.chars().all(|ch| ch.is_ascii_alphabetic()) && GREEK.contains(&greek) => {
                Ok(Expr::Sym(greek.to_string()))
            }
            other => Ok(Expr::Text(format!("\\{other}"))),
        }
    }

    fn matrix(&mut self) -> R {
        let (env, _) = match self.arg()? {
            Expr::Sym(s) => (s, ()),
            Expr::Mul(v) => (v.iter().map(|e| if let Expr::Sym(s) = e { s.clone() } else { String::new() }).collect(), ()),
            Expr::Text(t) => (t, ()),
            _ => return Err("bad \\begin".into()),
        };
        if env == "array" {
            // column spec {cc}
            let _ = self.arg();
        }
        let mut rows = vec![vec![]];
        loop {
            if self.is_cmd(&["end"]) {
                self.pos += 1;
                let _ = self.arg();
                break;
            }
            if self.peek().is_none() {
                return Err("unclosed matrix".into());
            }
            if self.is_cmd(&["\\"]) {
                self.pos += 1;
                rows.push(vec![]);
                continue;
            }
            if self.eat(&Tok::Op('&')) {
                continue;
            }
            let cell = self.relation()?;
            rows.last_mut().unwrap().push(cell);
        }
        rows.retain(|r| !r.is_empty());
        Ok(Expr::Matrix(rows))
    }
}

const GREEK: &[&str] = &[
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "varepsilon",
    "zeta",
    "eta",
    "theta",
    "vartheta",
    "iota",
    "kappa",
    "lambda",
    "mu",
    "nu",
    "xi",
    "rho",
    "sigma",
    "tau",
    "upsilon",
    "phi",
    "varphi",
    "chi",
    "psi",
    "omega",
    "Gamma",
    "Delta",
    "Theta",
    "Lambda",
    "Xi",
    "Sigma",
    "Phi",
    "Psi",
    "Omega",
];

fn render_sub(e: &Expr) -> String {
    match e {
        Expr::Num { value, .. } => format!("{value}"),
        Expr::Sym(s) | Expr::Text(s) => s.clone(),
        other => format!("{other:?}"),
    }
}

/// `\text{...}` content: a choice letter stays a symbol, a number stays a number.
fn text_expr(t: &str) -> Expr {
    let t = t.trim();
    let inner = t.trim_start_matches('(').trim_end_matches(')').trim_end_matches('.');
    if inner.chars().count() == 1 && inner.chars().all(|c| c.is_ascii_alphabetic()) {
        return Expr::Sym(inner.to_string());
    }
    Expr::Text(t.to_string())
}

/// Parses an answer. `Err` says why it is not maths (then it is compared as text).
pub fn parse(s: &str) -> Result<Expr, String> {
    if s.len() > MAX_INPUT {
        return Err(format!("answer longer than {MAX_INPUT} bytes"));
    }
    let s = preprocess(s);
    let toks = tokenize(&s)?;
    if toks.is_empty() {
        return Err("empty".into());
    }
    let mut p = Parser { toks, pos: 0, depth: 0 };
    let e = p.list()?;
    if p.pos < p.toks.len() {
        return Err(format!("unexpected {:?}", p.toks[p.pos]));
    }
    Ok(e)
}

/// Text-level clean-ups that are easier before tokenizing: thousands separators written in
/// LaTeX (`1{,}000`, `1,\!000`), degree signs, and plain-number formats (`7,425,000`,
/// `1 000`, `1000,99`).
pub fn preprocess(s: &str) -> String {
    let mut s = collapse_escaped_commands(s.trim());
    for (from, to) in [
        ("{,}", ""),
        ("{, }", ""),
        (",\\!", ""),
        ("^\\circ", ""),
        ("^{\\circ}", ""),
        ("\\%", "%"),
        ("\\$", ""),
        ("\\dfrac", "\\frac"),
        ("\\tfrac", "\\frac"),
        ("\\cfrac", "\\frac"),
    ] {
        s = s.replace(from, to);
    }
    if let Some(n) = plain_number(&s) {
        return n;
    }
    mixed_numbers(&s)
}

/// `3 1/4` is the mixed number 13/4, written `(3+1/4)`. Only on one line (`7` and `1/2` on two
/// lines are two values), and only with a proper fraction: `9 0/5` and `9 5/5` are not mixed
/// numbers, so they are left as they are (and read as products).
fn mixed_numbers(s: &str) -> String {
    let c: Vec<char> = s.chars().collect();
    let digits = |mut i: usize| {
        let start = i;
        while i < c.len() && c[i].is_ascii_digit() {
            i += 1;
        }
        (start, i)
    };
    let value = |a: usize, b: usize| c[a..b].iter().collect::<String>().parse::<u64>().ok();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < c.len() {
        let starts_number = c[i].is_ascii_digit()
            && (i == 0 || !(c[i - 1].is_alphanumeric() || matches!(c[i - 1], '.' | '^' | '_' | '/' | '\\' | '}' | ',')));
        if starts_number {
            let (w0, w1) = digits(i);
            let mut j = w1;
            while j < c.len() && matches!(c[j], ' ' | '\t') {
                j += 1;
            }
            let (n0, n1) = digits(j);
            let (d0, d1) = if j > w1 && n1 > n0 && c.get(n1) == Some(&'/') { digits(n1 + 1) } else { (0, 0) };
            let ends = d1 > d0 && !c.get(d1).is_some_and(|x| x.is_ascii_digit() || matches!(x, '.' | '^'));
            if ends {
                if let (Some(w), Some(n), Some(d)) = (value(w0, w1), value(n0, n1), value(d0, d1)) {
                    if n > 0 && n < d {
                        out.push_str(&format!("({w}+{n}/{d})"));
                        i = d1;
                        continue;
                    }
                }
            }
            out.extend(&c[i..w1]);
            i = w1;
            continue;
        }
        out.push(c[i]);
        i += 1;
    }
    out
}

/// `\\frac` (a backslash escaped once too often, as answers copied through JSON often are) is
/// `\frac`: a LaTeX line break directly followed by letters does not occur in an answer.
fn collapse_escaped_commands(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        // Exactly two backslashes: `\\\end` is a row break and then `\end`.
        let run_start = i == 0 || chars[i - 1] != '\\';
        if run_start
            && chars[i] == '\\'
            && chars.get(i + 1) == Some(&'\\')
            && chars.get(i + 2).is_some_and(|c| c.is_ascii_alphabetic())
        {
            i += 1;
            continue;
        }
        out.push(chars[i]);
        i += 1;
    }
    out
}

/// A plain number with separators, normalised (`7,425,000` → `7425000`, `1000,99` →
/// `1000.99`, `1 000` → `1000`); `None` if `s` is not one.
pub fn plain_number(s: &str) -> Option<String> {
    let t = s.trim().trim_start_matches('$').trim_end_matches('$').trim();
    let (sign, body) = match t.strip_prefix('-') {
        Some(b) => ("-", b),
        None => ("", t.strip_prefix('+').unwrap_or(t)),
    };
    if body.is_empty() || !body.chars().all(|c| c.is_ascii_digit() || c == ',' || c == '.' || c == ' ') {
        return None;
    }
    if !body.chars().next()?.is_ascii_digit() && !body.starts_with('.') {
        return None;
    }
    let groups_ok = |sep: char, int: &str| {
        let parts: Vec<&str> = int.split(sep).collect();
        parts.len() > 1
            && (1..=3).contains(&parts[0].len())
            && parts[0] != "0"
            && parts[1..].iter().all(|p| p.len() == 3 && p.chars().all(|c| c.is_ascii_digit()))
    };
    let (int, frac) = match body.rsplit_once('.') {
        Some((i, f)) if f.chars().all(|c| c.is_ascii_digit()) => (i, Some(f)),
        Some(_) => return None,
        None => (body, None),
    };
    if int.chars().all(|c| c.is_ascii_digit()) {
        return Some(format!("{sign}{body}"));
    }
    if int.contains(',') && !int.contains(' ') && groups_ok(',', int) {
        let i = int.replace(',', "");
        return Some(match frac {
            Some(f) => format!("{sign}{i}.{f}"),
            None => format!("{sign}{i}"),
        });
    }
    if int.contains(' ') && !int.contains(',') && groups_ok(' ', int) {
        return Some(format!("{sign}{}{}", int.replace(' ', ""), frac.map(|f| format!(".{f}")).unwrap_or_default()));
    }
    // A single decimal comma: 1000,99
    if frac.is_none() && int.matches(',').count() == 1 && !int.contains(' ') {
        let (a, b) = int.split_once(',').unwrap();
        // `1,2` is more likely a list than 1.2; `2,74` and `0,5` are decimals.
        if !a.is_empty() && (b.len() >= 2 || a == "0") {
            return Some(format!("{sign}{a}.{b}"));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(v: f64) -> Expr {
        Expr::num(v)
    }

    #[test]
    fn numbers_with_separators() {
        assert_eq!(plain_number("7,425,000").as_deref(), Some("7425000"));
        assert_eq!(plain_number("1 000").as_deref(), Some("1000"));
        assert_eq!(plain_number("1000,99").as_deref(), Some("1000.99"));
        assert_eq!(plain_number("0,111").as_deref(), Some("0.111"));
        assert_eq!(plain_number("1,000.99").as_deref(), Some("1000.99"));
        assert_eq!(plain_number("abc"), None);
    }

    #[test]
    fn fractions_and_roots() {
        let e = parse("\\frac{1}{3}").unwrap();
        assert_eq!(e, Expr::Div(Box::new(n(1.0)), Box::new(n(3.0))));
        let e = parse("\\frac13").unwrap();
        assert_eq!(e, Expr::Div(Box::new(n(1.0)), Box::new(n(3.0))));
        let v = parse("3\\sqrt{13}").unwrap().eval(&|_| None).unwrap();
        assert!((v - 3.0 * 13f64.sqrt()).abs() < 1e-12);
        let v = parse("\\frac94\\pi").unwrap().eval(&|_| None).unwrap();
        assert!((v - 9.0 / 4.0 * std::f64::consts::PI).abs() < 1e-12);
    }

    #[test]
    fn relations_and_intervals() {
        assert!(matches!(parse("x \\geq 5").unwrap(), Expr::Rel(_, ref ops) if ops == &[RelOp::Ge]));
        assert!(matches!(parse("x <= 2").unwrap(), Expr::Rel(_, ref ops) if ops == &[RelOp::Le]));
        assert!(matches!(parse("[0,1)").unwrap(), Expr::Seq { open: '[', close: ')', .. }));
        assert!(matches!(parse("[-1, 0) \\cup (0, 1)").unwrap(), Expr::Union(ref v) if v.len() == 2));
    }

    #[test]
    fn mixed_numbers_need_a_proper_fraction_on_one_line() {
        assert_eq!(preprocess("3 1/4"), "(3+1/4)");
        assert_eq!(preprocess("-2 2/5 %"), "-(2+2/5) %");
        for kept in ["9 0/5", "9 5/5", "7\n1/2", "x 1/2", "2.5 1/2"] {
            assert_eq!(preprocess(kept), kept);
        }
    }

    #[test]
    fn lists_joined_by_words_and_grouped_by_semicolons() {
        let list = |items: Vec<Expr>| Expr::Seq { open: ' ', close: ' ', items };
        assert_eq!(parse("3 and 7").unwrap(), list(vec![n(3.0), n(7.0)]));
        assert_eq!(parse("2, 5, or 9").unwrap(), list(vec![n(2.0), n(5.0), n(9.0)]));
        assert_eq!(parse("3 \\text{ or } 7").unwrap(), list(vec![n(3.0), n(7.0)]));
        let tuple = |a, b| Expr::Seq { open: '(', close: ')', items: vec![n(a), n(b)] };
        assert_eq!(parse("2, 3; 5, 1").unwrap(), list(vec![tuple(2.0, 3.0), tuple(5.0, 1.0)]));
        assert_eq!(parse("3 : 4").unwrap(), Expr::Seq { open: ':', close: ':', items: vec![n(3.0), n(4.0)] });
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let s = "(".repeat(500) + "1" + &")".repeat(500);
        assert!(parse(&s).is_err());
        assert!(parse(&"x".repeat(5000)).is_err());
    }
}
