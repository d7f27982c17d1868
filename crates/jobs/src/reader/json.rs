//! Questions in JSON Lines (one object or string per line) and JSON (an array of objects or
//! strings, or an object holding such an array).

use super::gather::Gather;
use super::problem::{role_of_header, Columns, Problem, ReadError, Role, Warning, WarningCode};
use serde_json::Value;
use std::collections::HashSet;
use std::path::Path;

/// The columns found so far, with a set of the extra ones so that a file with a new key on
/// every line stays linear.
#[derive(Default)]
struct Found {
    columns: Columns,
    extra: HashSet<String>,
}

fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn from_value(v: Value, index: usize, line: usize, found: &mut Found, gather: &mut Gather) -> Option<Problem> {
    let columns = &mut found.columns;
    match v {
        Value::String(s) if !s.trim().is_empty() => {
            Some(Problem { id: index.to_string(), question: s.trim().to_string(), key: None, extra: vec![], line })
        }
        Value::Object(map) => {
            let (mut q, mut k, mut id, mut extra) = (None, None, None, Vec::new());
            for (name, val) in map {
                match role_of_header(&name) {
                    Some(Role::Question) if q.is_none() => {
                        q = as_text(&val);
                        columns.question.get_or_insert(name);
                    }
                    Some(Role::Key) if k.is_none() => {
                        k = as_text(&val);
                        columns.key.get_or_insert(name);
                    }
                    Some(Role::Id) if id.is_none() => {
                        id = as_text(&val);
                        columns.id.get_or_insert(name);
                    }
                    _ => {
                        if found.extra.insert(name.clone()) {
                            columns.extra.push(name.clone());
                        }
                        extra.push((name, as_text(&val).unwrap_or_default()));
                    }
                }
            }
            match q.filter(|q| !q.is_empty()) {
                Some(question) => Some(Problem {
                    id: id.filter(|s| !s.is_empty()).unwrap_or_else(|| index.to_string()),
                    question,
                    key: k.filter(|s| !s.is_empty()),
                    extra,
                    line,
                }),
                None => {
                    gather.warn(Warning::new(line, WarningCode::NoQuestionField, &[]));
                    None
                }
            }
        }
        _ => {
            gather.warn(Warning::new(line, WarningCode::EmptyEntry, &[]));
            None
        }
    }
}

pub(crate) fn problems(path: &Path, text: &str, lines: bool, gather: &mut Gather) -> Result<Columns, ReadError> {
    let mut found = Found::default();
    let parse_err =
        |line: usize, e: serde_json::Error| ReadError::Parse { path: path.into(), line, message: format!("invalid JSON: {e}") };
    let not_an_array = || ReadError::Parse { path: path.into(), line: 1, message: "expected an array of problems".into() };
    if lines {
        for (i, l) in text.lines().enumerate() {
            if l.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(l).map_err(|e| parse_err(i + 1, e))?;
            let index = gather.next_index();
            if let Some(p) = from_value(v, index, i + 1, &mut found, gather) {
                gather.problem(p)?;
            }
        }
    } else {
        let v: Value = serde_json::from_str(text).map_err(|e| parse_err(e.line(), e))?;
        let items = match v {
            Value::Array(a) => a,
            Value::Object(o) => o
                .into_iter()
                .find_map(|(_, x)| match x {
                    Value::Array(a) => Some(a),
                    _ => None,
                })
                .ok_or_else(not_an_array)?,
            _ => return Err(not_an_array()),
        };
        // JSON has no useful line per element once parsed: use the element's position.
        for (i, item) in items.into_iter().enumerate() {
            let index = gather.next_index();
            if let Some(p) = from_value(item, index, i + 1, &mut found, gather) {
                gather.problem(p)?;
            }
        }
    }
    Ok(found.columns)
}
