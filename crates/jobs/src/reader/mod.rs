//! Reading a file of questions (and maybe an answer key) into problems, with a preview of what
//! was found and warnings that say where. Formats: .txt/.md, .csv/.tsv, .jsonl/.json, .xlsx.
//! Encodings are detected: UTF-8 (with or without BOM), UTF-16 LE/BE, GB18030/GBK.

mod format;
mod gather;
mod json;
mod problem;
mod table;
mod text;
mod xlsx;

pub use format::{extensions_list, Format, EXTENSIONS};
pub use gather::WARNINGS_KEPT;
pub use problem::{Columns, Problem, ReadError, Warning, WarningCode};
pub use xlsx::XlsxLimits;

use gather::Gather;
use serde::Serialize;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Preview {
    pub path: PathBuf,
    pub format: Format,
    pub encoding: String,
    pub problems: Vec<Problem>,
    pub has_key: bool,
    pub columns: Columns,
    /// The first [`WARNINGS_KEPT`] warnings, by line.
    pub warnings: Vec<Warning>,
    /// Warnings past those, counted only.
    pub more_warnings: usize,
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
    let mut gather = Gather::new(path, limits);
    let (columns, encoding) = match format {
        Format::Xlsx => {
            let rows = xlsx::rows(path, bytes, &limits.xlsx)?;
            (table::problems_from_rows(path, rows.into_iter().map(Ok), &mut gather)?, "xlsx".to_string())
        }
        _ => {
            let (text, enc) = decode(bytes);
            if enc == "GB18030" {
                let sure = gb18030_confidence(bytes);
                if sure < 0.9 {
                    let percent = format!("{:.0}%", sure * 100.0);
                    gather.warn(Warning::new(0, WarningCode::UncertainEncoding, &[("confidence", percent)]));
                }
            }
            let columns = match format {
                Format::Text | Format::Markdown => {
                    text::problems(&text, format == Format::Markdown, &mut gather)?;
                    Columns::default()
                }
                Format::Csv => table::problems_from_rows(path, table::delimited_rows(path, &text, b','), &mut gather)?,
                Format::Tsv => table::problems_from_rows(path, table::delimited_rows(path, &text, b'\t'), &mut gather)?,
                Format::Jsonl | Format::Json => json::problems(path, &text, format == Format::Jsonl, &mut gather)?,
                Format::Xlsx => unreachable!("read above"),
            };
            (columns, enc.to_string())
        }
    };
    let Gather { problems, mut warnings, more_warnings, .. } = gather;
    if problems.is_empty() {
        return Err(ReadError::Empty { path: path.into() });
    }
    warnings.sort_by_key(|w| w.line);
    let has_key = problems.iter().any(|p| p.key.is_some());
    Ok(Preview { path: path.into(), format, encoding, problems, has_key, columns, warnings, more_warnings })
}

/// Text from bytes in whatever encoding they are: BOMs first, then UTF-8, then UTF-16 without
/// BOM (NUL bytes in every other position), then GB18030 (a superset of GBK and GB2312).
pub fn decode(bytes: &[u8]) -> (Cow<'_, str>, &'static str) {
    if let Some(rest) = bytes.strip_prefix(&[0xEF, 0xBB, 0xBF]) {
        return (String::from_utf8_lossy(rest), "UTF-8 (BOM)");
    }
    if bytes.starts_with(&[0xFF, 0xFE]) {
        return (encoding_rs::UTF_16LE.decode_without_bom_handling(&bytes[2..]).0, "UTF-16LE");
    }
    if bytes.starts_with(&[0xFE, 0xFF]) {
        return (encoding_rs::UTF_16BE.decode_without_bom_handling(&bytes[2..]).0, "UTF-16BE");
    }
    if let Ok(s) = std::str::from_utf8(bytes) {
        // Borrowed: a big file is not copied.
        return (Cow::Borrowed(s), "UTF-8");
    }
    let sample = &bytes[..bytes.len().min(4096)];
    let zeros_at = |parity: usize| sample.iter().skip(parity).step_by(2).filter(|b| **b == 0).count();
    if sample.len() >= 4 {
        let half = sample.len() / 2;
        if zeros_at(1) * 3 > half {
            return (encoding_rs::UTF_16LE.decode_without_bom_handling(bytes).0, "UTF-16LE");
        }
        if zeros_at(0) * 3 > half {
            return (encoding_rs::UTF_16BE.decode_without_bom_handling(bytes).0, "UTF-16BE");
        }
    }
    (encoding_rs::GB18030.decode_without_bom_handling(bytes).0, "GB18030")
}

/// How sure a reading as GB18030 is, from 0 to 1: the share of its multi-byte characters that
/// are common ones (GB2312's hanzi and punctuation, which everyday Chinese text is almost all
/// made of). Text in another encoding (Latin-1, Shift JIS, …) decodes as GB18030 too, but into
/// rare characters and broken pairs.
pub fn gb18030_confidence(bytes: &[u8]) -> f64 {
    let (mut common, mut total, mut i) = (0usize, 0usize, 0usize);
    while i < bytes.len() {
        let lead = bytes[i];
        if lead < 0x80 {
            i += 1;
            continue;
        }
        total += 1;
        match bytes.get(i + 1) {
            Some(&trail) if (0x81..=0xFE).contains(&lead) && (0x30..=0x39).contains(&trail) => i += 4,
            Some(&trail) if (0x81..=0xFE).contains(&lead) && (0x40..=0xFE).contains(&trail) && trail != 0x7F => {
                let hanzi = (0xB0..=0xF7).contains(&lead) && (0xA1..=0xFE).contains(&trail);
                let punctuation = (0xA1..=0xA9).contains(&lead) && (0xA1..=0xFE).contains(&trail);
                common += usize::from(hanzi || punctuation);
                i += 2;
            }
            _ => i += 1,
        }
    }
    if total == 0 {
        1.0
    } else {
        common as f64 / total as f64
    }
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
