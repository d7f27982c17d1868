//! What reading a question file yields, whatever its format: problems, warnings that say
//! where, the columns used, and the errors that stop a read. A leaf: the format readers and
//! the store build on it.

use super::format::extensions_list;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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

/// Something in a file that was read anyway, and where.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Warning {
    pub line: usize,
    /// What kind of thing, stable across versions, for a translation.
    pub code: WarningCode,
    /// The values the message names.
    pub params: BTreeMap<String, String>,
    /// In English.
    pub message: String,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum WarningCode {
    /// A JSON entry with no field that holds a question.
    NoQuestionField,
    /// An empty JSON entry.
    EmptyEntry,
    /// A table row whose question cell is empty.
    EmptyQuestion,
    /// `id` was used before (at `first_line`), so this problem became `renamed`.
    DuplicateId,
    /// A question of `chars` characters, kept.
    LongQuestion,
    /// The file is not UTF-8 and reads as GB18030 only with this `confidence` (line 0: the
    /// whole file).
    UncertainEncoding,
}

impl Warning {
    pub(crate) fn new(line: usize, code: WarningCode, params: &[(&str, String)]) -> Self {
        let params: BTreeMap<String, String> = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        let p = |k: &str| params.get(k).map_or("", String::as_str);
        let message = match code {
            WarningCode::NoQuestionField => "no question field (question, problem, prompt, 题目…); skipped".to_string(),
            WarningCode::EmptyEntry => "empty entry skipped".to_string(),
            WarningCode::EmptyQuestion => "empty question; row skipped".to_string(),
            WarningCode::DuplicateId => {
                format!("duplicate id \"{}\" (first at line {}); renamed to \"{}\"", p("id"), p("first_line"), p("renamed"))
            }
            WarningCode::LongQuestion => format!("question is very long ({} characters)", p("chars")),
            WarningCode::UncertainEncoding => format!(
                "the file is not UTF-8, and reads as Chinese (GB18030) with only {} confidence: its characters may be wrong; save it as UTF-8",
                p("confidence")
            ),
        };
        Self { line, code, params, message }
    }
}

/// Which columns were used, for the preview.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Columns {
    pub question: Option<String>,
    pub key: Option<String>,
    pub id: Option<String>,
    pub extra: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: unsupported file type (use {exts})", exts = extensions_list())]
    UnknownFormat { path: PathBuf },
    #[error("{path}: the file is {size} bytes, over the limit of {limit}")]
    TooLarge { path: PathBuf, size: u64, limit: u64 },
    #[error("{path}: more than {limit} problems, the limit for one file")]
    TooMany { path: PathBuf, limit: usize },
    /// `line` is 0 where a problem has no one line (a workbook as a whole).
    #[error("{}{}: {message}", path.display(), at_line(*line))]
    Parse { path: PathBuf, line: usize, message: String },
    #[error("{path}: no questions found")]
    Empty { path: PathBuf },
    #[error("{path}: no question column (headers: {headers})")]
    NoQuestionColumn { path: PathBuf, headers: String },
}

/// Header names, in English and Chinese.
pub(crate) fn role_of_header(h: &str) -> Option<Role> {
    let h = h.trim().trim_start_matches('\u{feff}').to_lowercase();
    const Q: &[&str] = &["question", "questions", "problem", "problems", "prompt", "q", "query", "题目", "问题", "题干", "试题"];
    const K: &[&str] =
        &["answer", "answers", "key", "expected", "expected answer", "gold", "a", "答案", "参考答案", "标准答案", "正确答案"];
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

/// `:line` for a message, or nothing for line 0.
fn at_line(line: usize) -> String {
    if line == 0 {
        String::new()
    } else {
        format!(":{line}")
    }
}
