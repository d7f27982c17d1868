//! Reading a file of questions (and maybe an answer key) into problems, with a preview of what
//! was found and warnings that say where. Formats: .txt/.md, .csv/.tsv, .jsonl/.json, .xlsx.
//! Encodings are detected: UTF-8 (with or without BOM), UTF-16 LE/BE, GB18030/GBK.

mod format;
mod json;
mod problem;
mod table;
mod text;
mod xlsx;

pub use format::{extensions_list, Format, EXTENSIONS};
pub use problem::{Columns, Problem, ReadError, Warning, WarningCode};
pub use xlsx::XlsxLimits;

use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Preview {
    pub path: PathBuf,
    pub format: Format,
    pub encoding: String,
    pub problems: Vec<Problem>,
    pub has_key: bool,
    pub columns: Columns,
    pub warnings: Vec<Warning>,
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_bytes: u64,
    pub max_problems: usize,
    /// Longer questions are kept, with a warning.
    pub long_question_chars: usize,
    pub xlsx: XlsxLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_bytes: 64 << 20, max_problems: 100_000, long_question_chars: 8_000, xlsx: XlsxLimits::default() }
    }
}

pub fn read_file(path: &Path, limits: &Limits) -> Result<Preview, ReadError> {
    let io = |source| ReadError::Io { path: path.to_path_buf(), source };
    let size = std::fs::metadata(path).map_err(io)?.len();
    if size > limits.max_bytes {
        return Err(ReadError::TooLarge { path: path.into(), size, limit: limits.max_bytes });
    }
    let bytes = std::fs::read(path).map_err(io)?;
    read_bytes(path, &bytes, limits)
}

/// Reads from memory; `path` names the file in messages and gives the format.
pub fn read_bytes(path: &Path, bytes: &[u8], limits: &Limits) -> Result<Preview, ReadError> {
    let format = Format::of(path).ok_or_else(|| ReadError::UnknownFormat { path: path.into() })?;
    if bytes.len() as u64 > limits.max_bytes {
        return Err(ReadError::TooLarge { path: path.into(), size: bytes.len() as u64, limit: limits.max_bytes });
    }
    let mut warnings = Vec::new();
    let (rows, encoding) = match format {
        Format::Xlsx => (xlsx::rows(path, bytes, &limits.xlsx)?, "xlsx".to_string()),
        _ => {
            let (text, enc) = decode(bytes);
            let rows = match format {
                Format::Text | Format::Markdown => {
                    return finish(
                        path,
                        format,
                        enc,
                        text::problems(&text, format == Format::Markdown),
                        Columns::default(),
                        warnings,
                        limits,
                    )
                }
                Format::Csv => table::delimited_rows(path, &text, b',')?,
                Format::Tsv => table::delimited_rows(path, &text, b'\t')?,
                Format::Jsonl | Format::Json => {
                    let (problems, columns) = json::problems(path, &text, format == Format::Jsonl, &mut warnings)?;
                    return finish(path, format, enc, problems, columns, warnings, limits);
                }
                Format::Xlsx => unreachable!(),
            };
            (rows, enc.to_string())
        }
    };
    let (problems, columns) = table::problems_from_rows(path, rows, &mut warnings)?;
    finish(path, format, &encoding, problems, columns, warnings, limits)
}

fn finish(
    path: &Path,
    format: Format,
    encoding: &str,
    mut problems: Vec<Problem>,
    columns: Columns,
    mut warnings: Vec<Warning>,
    limits: &Limits,
) -> Result<Preview, ReadError> {
    if problems.is_empty() {
        return Err(ReadError::Empty { path: path.into() });
    }
    if problems.len() > limits.max_problems {
        return Err(ReadError::TooMany { path: path.into(), count: problems.len(), limit: limits.max_problems });
    }
    // Ids must be unique: later duplicates get a suffix, and a warning says where.
    let mut seen: HashMap<String, usize> = HashMap::new();
    for p in &mut problems {
        if let Some(first) = seen.get(&p.id) {
            let new_id = (2..).map(|k| format!("{}-{k}", p.id)).find(|c| !seen.contains_key(c)).unwrap();
            let params = [("id", p.id.clone()), ("first_line", first.to_string()), ("renamed", new_id.clone())];
            warnings.push(Warning::new(p.line, WarningCode::DuplicateId, &params));
            p.id = new_id;
        }
        seen.insert(p.id.clone(), p.line);
        let chars = p.question.chars().count();
        if chars > limits.long_question_chars {
            warnings.push(Warning::new(p.line, WarningCode::LongQuestion, &[("chars", chars.to_string())]));
        }
    }
    warnings.sort_by_key(|w| w.line);
    let has_key = problems.iter().any(|p| p.key.is_some());
    Ok(Preview { path: path.into(), format, encoding: encoding.to_string(), problems, has_key, columns, warnings })
}

/// Text from bytes in whatever encoding they are: BOMs first, then UTF-8, then UTF-16 without
/// BOM (NUL bytes in every other position), then GB18030 (a superset of GBK and GB2312).
pub fn decode(bytes: &[u8]) -> (String, &'static str) {
    if let Some(rest) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        return (String::from_utf8_lossy(rest).into_owned(), "UTF-8 (BOM)");
    }
    if bytes.starts_with(&[0xFF, 0xFE]) {
        return (encoding_rs::UTF_16LE.decode_without_bom_handling(&bytes[2..]).0.into_owned(), "UTF-16LE");
    }
    if bytes.starts_with(&[0xFE, 0xFF]) {
        return (encoding_rs::UTF_16BE.decode_without_bom_handling(&bytes[2..]).0.into_owned(), "UTF-16BE");
    }
    if let Ok(s) = std::str::from_utf8(bytes) {
        return (s.to_string(), "UTF-8");
    }
    let sample = &bytes[..bytes.len().min(4096)];
    let zeros_at = |parity: usize| sample.iter().skip(parity).step_by(2).filter(|b| **b == 0).count();
    if sample.len() >= 4 {
        let half = sample.len() / 2;
        if zeros_at(1) * 3 > half {
            return (encoding_rs::UTF_16LE.decode_without_bom_handling(bytes).0.into_owned(), "UTF-16LE");
        }
        if zeros_at(0) * 3 > half {
            return (encoding_rs::UTF_16BE.decode_without_bom_handling(bytes).0.into_owned(), "UTF-16BE");
        }
    }
    (encoding_rs::GB18030.decode_without_bom_handling(bytes).0.into_owned(), "GB18030")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shown_extension_is_read_and_the_list_reads_as_a_sentence() {
        for e in EXTENSIONS {
            assert!(Format::of(Path::new(&format!("q.{e}"))).is_some(), "{e}");
            assert!(Format::all_extensions().any(|a| a == *e), "{e}");
        }
        assert_eq!(Format::of(Path::new("Q.MARKDOWN")), Some(Format::Markdown));
        assert_eq!(extensions_list(), ".txt, .md, .csv, .tsv, .jsonl, .json or .xlsx");
    }
}
