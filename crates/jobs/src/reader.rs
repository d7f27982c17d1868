//! Reading a file of questions (and maybe an answer key) into problems, with a preview of what
//! was found and warnings that say where. Formats: .txt/.md, .csv/.tsv, .jsonl/.json, .xlsx.
//! Encodings are detected: UTF-8 (with or without BOM), UTF-16 LE/BE, GB18030/GBK.

use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Problem {
    /// From the file's id column, or the problem's position (1-based).
    pub id: String,
    pub question: String,
    pub key: Option<String>,
    /// Other columns, carried to the export.
    pub extra: Vec<(String, String)>,
    /// Where it starts in the file (line, or row for spreadsheets).
    pub line: usize,
}

#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Text,
    Markdown,
    Csv,
    Tsv,
    Jsonl,
    Json,
    Xlsx,
}

impl Format {
    pub fn of(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        Some(match ext.as_str() {
            "txt" => Format::Text,
            "md" | "markdown" => Format::Markdown,
            "csv" => Format::Csv,
            "tsv" | "tab" => Format::Tsv,
            "jsonl" | "ndjson" => Format::Jsonl,
            "json" => Format::Json,
            "xlsx" | "xlsm" => Format::Xlsx,
            _ => return None,
        })
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Warning {
    pub line: usize,
    pub message: String,
}

/// Which columns were used, for the preview.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Columns {
    pub question: Option<String>,
    pub key: Option<String>,
    pub id: Option<String>,
    pub extra: Vec<String>,
}

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
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_bytes: 64 << 20, max_problems: 100_000, long_question_chars: 8_000 }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: unsupported file type (use .txt, .md, .csv, .tsv, .jsonl, .json or .xlsx)")]
    UnknownFormat { path: PathBuf },
    #[error("{path}: the file is {size} bytes, over the limit of {limit}")]
    TooLarge { path: PathBuf, size: u64, limit: u64 },
    #[error("{path}: {count} problems, over the limit of {limit}")]
    TooMany { path: PathBuf, count: usize, limit: usize },
    #[error("{path}:{line}: {message}")]
    Parse { path: PathBuf, line: usize, message: String },
    #[error("{path}: no questions found")]
    Empty { path: PathBuf },
    #[error("{path}: no question column (headers: {headers})")]
    NoQuestionColumn { path: PathBuf, headers: String },
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
        Format::Xlsx => (crate::table::xlsx_rows(path, bytes)?, "xlsx".to_string()),
        _ => {
            let (text, enc) = decode(bytes);
            let rows = match format {
                Format::Text | Format::Markdown => {
                    return finish(path, format, enc, crate::text::problems(&text, format == Format::Markdown), Columns::default(), warnings, limits)
                }
                Format::Csv => crate::table::delimited_rows(path, &text, b',')?,
                Format::Tsv => crate::table::delimited_rows(path, &text, b'\t')?,
                Format::Jsonl | Format::Json => {
                    let (problems, columns) = crate::json::problems(path, &text, format == Format::Jsonl, &mut warnings)?;
                    return finish(path, format, enc, problems, columns, warnings, limits);
                }
                Format::Xlsx => unreachable!(),
            };
            (rows, enc.to_string())
        }
    };
    let (problems, columns) = crate::table::problems_from_rows(path, rows, &mut warnings)?;
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
            warnings.push(Warning {
                line: p.line,
                message: format!("duplicate id \"{}\" (first at line {first}); renamed to \"{new_id}\"", p.id),
            });
            p.id = new_id;
        }
        seen.insert(p.id.clone(), p.line);
        let chars = p.question.chars().count();
        if chars > limits.long_question_chars {
            warnings.push(Warning { line: p.line, message: format!("question is very long ({chars} characters)") });
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

/// Header names, in English and Chinese.
pub(crate) fn role_of_header(h: &str) -> Option<Role> {
    let h = h.trim().trim_start_matches('\u{feff}').to_lowercase();
    const Q: &[&str] = &["question", "questions", "problem", "problems", "prompt", "q", "query", "题目", "问题", "题干", "试题"];
    const K: &[&str] = &["answer", "answers", "key", "expected", "expected answer", "gold", "a", "答案", "参考答案", "标准答案", "正确答案"];
    const I: &[&str] = &["id", "no", "no.", "number", "#", "编号", "序号", "题号"];
    if Q.contains(&h.as_str()) {
        Some(Role::Question)
    } else if K.contains(&h.as_str()) {
        Some(Role::Key)
    } else if I.contains(&h.as_str()) {
        Some(Role::Id)
    } else {
        None
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    Question,
    Key,
    Id,
}
