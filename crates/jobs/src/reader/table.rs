//! Tables of questions: CSV, TSV and the first sheet of an .xlsx workbook (`xlsx.rs` reads its cells). Columns are found by
//! header (English or Chinese), or by position in header-less files.

use super::gather::Gather;
use super::problem::{role_of_header, Columns, Problem, ReadError, Role, Warning, WarningCode};
use std::path::Path;

/// A row of cells and the line (or spreadsheet row) it came from.
pub(crate) type Row = (usize, Vec<String>);

/// The records of a CSV or TSV text, one at a time.
pub(crate) fn delimited_rows<'t>(path: &'t Path, text: &'t str, delim: u8) -> impl Iterator<Item = Result<Row, ReadError>> + 't {
    let rdr = csv::ReaderBuilder::new().delimiter(delim).has_headers(false).flexible(true).from_reader(text.as_bytes());
    rdr.into_records().map(move |rec| {
        let rec = rec.map_err(|e| ReadError::Parse {
            path: path.into(),
            line: e.position().map_or(0, |p| p.line() as usize),
            message: e.to_string(),
        })?;
        let line = rec.position().map_or(0, |p| p.line() as usize);
        Ok((line, rec.iter().map(|c| c.to_string()).collect()))
    })
}

pub(crate) fn problems_from_rows(
    path: &Path,
    rows: impl Iterator<Item = Result<Row, ReadError>>,
    gather: &mut Gather,
) -> Result<Columns, ReadError> {
    let mut rows = rows.filter(|r| r.as_ref().map_or(true, |(_, cells)| cells.iter().any(|c| !c.trim().is_empty())));
    let Some((first_line, first)) = rows.next().transpose()? else {
        return Err(ReadError::Empty { path: path.into() });
    };
    let roles: Vec<Option<Role>> = first.iter().map(|h| role_of_header(h)).collect();
    let has_header = roles.iter().any(|r| r.is_some());
    let (q, k, id, names) = if has_header {
        let find = |role| roles.iter().position(|r| *r == Some(role));
        let Some(q) = find(Role::Question) else {
            return Err(ReadError::NoQuestionColumn { path: path.into(), headers: first.join(", ") });
        };
        (q, find(Role::Key), find(Role::Id), first.iter().map(|h| h.trim().to_string()).collect::<Vec<_>>())
    } else {
        // Header-less: question[, answer] — or id, question, answer when the first column
        // holds small integers.
        let width = first.len();
        let numeric_first = width >= 3 && first[0].trim().parse::<u64>().is_ok();
        let (q, k, id) = if numeric_first { (1, Some(2), Some(0)) } else { (0, (width >= 2).then_some(1), None) };
        let names = (1..=width).map(|i| format!("column {i}")).collect();
        (q, k, id, names)
    };
    let columns = Columns {
        question: names.get(q).cloned(),
        key: k.and_then(|k| names.get(k).cloned()),
        id: id.and_then(|i| names.get(i).cloned()),
        extra: (0..names.len()).filter(|i| Some(*i) != k && Some(*i) != id && *i != q).map(|i| names[i].clone()).collect(),
    };
    let id_col = id;
    // A header-less file's first row is a problem too.
    let first_row = (!has_header).then_some(Ok((first_line, first)));
    for row in first_row.into_iter().chain(rows) {
        let (line, row) = row?;
        let cell = |i: usize| row.get(i).map(|s| s.trim().to_string()).unwrap_or_default();
        let question = cell(q);
        if question.is_empty() {
            gather.warn(Warning::new(line, WarningCode::EmptyQuestion, &[]));
            continue;
        }
        let id = id_col.map(cell).filter(|s| !s.is_empty()).unwrap_or_else(|| gather.next_index().to_string());
        let key = k.map(cell).filter(|s| !s.is_empty());
        // Only filled cells are carried: a wide header costs nothing in rows that leave it empty.
        let extra = (0..row.len())
            .filter(|i| *i != q && Some(*i) != k && Some(*i) != id_col)
            .filter(|i| !row[*i].trim().is_empty())
            .map(|i| (names.get(i).cloned().unwrap_or_else(|| format!("column {}", i + 1)), cell(i)))
            .collect();
        gather.problem(Problem { id, question, key, extra, line })?;
    }
    Ok(columns)
}
