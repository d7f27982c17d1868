//! Questions in JSON Lines (one object or string per line) and JSON (an array of objects or
//! strings, or an object holding such an array).

use super::problem::{role_of_header, Columns, Problem, ReadError, Role, Warning, WarningCode};
use serde_json::Value;
use std::path::Path;

fn as_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => None,
        other => Some(other.to_string()),
    }
}

fn from_value(v: &Value, index: usize, line: usize, columns: &mut Columns, warnings: &mut Vec<Warning>) -> Option<Problem> {
    match v {
        Value::String(s) if !s.trim().is_empty() => {
            Some(Problem { id: index.to_string(), question: s.trim().to_string(), key: None, extra: vec![], line })
        }
        Value::Object(map) => {
            let (mut q, mut k, mut id, mut extra) = (None, None, None, Vec::new());
            for (name, val) in map {
                match role_of_header(name) {
                    Some(Role::Question) if q.is_none() => {
                        q = as_text(val);
                        columns.question.get_or_insert_with(|| name.clone());
                    }
                    Some(Role::Key) if k.is_none() => {
                        k = as_text(val);
                        columns.key.get_or_insert_with(|| name.clone());
                    }
                    Some(Role::Id) if id.is_none() => {
                        id = as_text(val);
                        columns.id.get_or_insert_with(|| name.clone());
                    }
                    _ => {
                        if !columns.extra.contains(name) {
                            columns.extra.push(name.clone());
                        }
                        extra.push((name.clone(), as_text(val).unwrap_or_default()));
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
                    warnings.push(Warning::new(line, WarningCode::NoQuestionField, &[]));
                    None
                }
            }
        }
        _ => {
            warnings.push(Warning::new(line, WarningCode::EmptyEntry, &[]));
            None
        }
    }
}

pub(crate) fn problems(
    path: &Path,
    text: &str,
    lines: bool,
    warnings: &mut Vec<Warning>,
) -> Result<(Vec<Problem>, Columns), ReadError> {
    let mut columns = Columns::default();
    let mut out = Vec::new();
    let parse_err =
        |line: usize, e: serde_json::Error| ReadError::Parse { path: path.into(), line, message: format!("invalid JSON: {e}") };
    if lines {
        for (i, l) in text.lines().enumerate() {
            if l.trim().is_empty() {
                continue;
            }
            let v: Value = serde_json::from_str(l).map_err(|e| parse_err(i + 1, e))?;
            let index = out.len() + 1;
            out.extend(from_value(&v, index, i + 1, &mut columns, warnings));
        }
    } else {
        let v: Value = serde_json::from_str(text).map_err(|e| parse_err(e.line(), e))?;
        let items = match &v {
            Value::Array(a) => a.clone(),
            Value::Object(o) => o.values().find_map(|x| x.as_array().cloned()).ok_or_else(|| ReadError::Parse {
                path: path.into(),
                line: 1,
                message: "expected an array of problems".into(),
            })?,
            _ => return Err(ReadError::Parse { path: path.into(), line: 1, message: "expected an array of problems".into() }),
        };
        // JSON has no useful line per element once parsed: use the element's position.
        for (i, item) in items.iter().enumerate() {
            let index = out.len() + 1;
            out.extend(from_value(item, index, i + 1, &mut columns, warnings));
        }
    }
    Ok((out, columns))
}
