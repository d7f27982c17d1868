//! Which question-file formats there are, and the extensions that name them.

use serde::Serialize;
use std::path::Path;

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
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

/// The question-file extensions, as shown to people (in messages, hints and the open dialog).
pub const EXTENSIONS: &[&str] = &["txt", "md", "csv", "tsv", "jsonl", "json", "xlsx"];

/// Every extension read, the other spellings of a format included.
const FORMATS: &[(&str, Format)] = &[
    ("txt", Format::Text),
    ("md", Format::Markdown),
    ("markdown", Format::Markdown),
    ("csv", Format::Csv),
    ("tsv", Format::Tsv),
    ("tab", Format::Tsv),
    ("jsonl", Format::Jsonl),
    ("ndjson", Format::Jsonl),
    ("json", Format::Json),
    ("xlsx", Format::Xlsx),
    ("xlsm", Format::Xlsx),
];

impl Format {
    pub fn of(path: &Path) -> Option<Format> {
        let ext = path.extension()?.to_str()?.to_ascii_lowercase();
        FORMATS.iter().find(|(e, _)| *e == ext).map(|(_, f)| *f)
    }

    /// Every extension a question file may have, for an open dialog's filter.
    pub fn all_extensions() -> impl Iterator<Item = &'static str> {
        FORMATS.iter().map(|(e, _)| *e)
    }
}

/// The extensions as a person reads them: ".txt, .md, … or .xlsx".
pub fn extensions_list() -> String {
    let dotted: Vec<String> = EXTENSIONS.iter().map(|e| format!(".{e}")).collect();
    match dotted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => dotted.concat(),
    }
}
