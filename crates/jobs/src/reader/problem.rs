//! What reading a question file yields, whatever its format: problems, warnings that say
//! where, the columns used, and the errors that stop a read. A leaf: the format readers and
//! the store build on it.

use super::format::extensions_list;
use serde::Serialize;
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

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Warning {
    pub line: usize,
    pub message: String,
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
    #[error("{path}: {count} problems, over the limit of {limit}")]
    TooMany { path: PathBuf, count: usize, limit: usize },
    #[error("{path}:{line}: {message}")]
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
