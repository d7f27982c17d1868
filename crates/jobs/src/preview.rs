//! A question file as a preview shows it, in the app and from `ponder preview`: what was found,
//! how it was read, the first problems, and the warnings. No model is needed.

use crate::reader::{self, Columns, Format, Problem, ReadError, Warning};
use crate::store::JobOptions;
use serde::Serialize;
use std::path::Path;

/// Problems a preview lists.
pub const PREVIEW_PROBLEMS: usize = 5;

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize)]
pub struct FilePreview {
    pub path: String,
    pub name: String,
    pub format: Format,
    pub encoding: String,
    pub problem_count: usize,
    /// The first few problems.
    pub problems: Vec<Problem>,
    pub has_key: bool,
    pub columns: Columns,
    /// The first warnings (`reader::WARNINGS_KEPT`), and how many more there are.
    pub warnings: Vec<Warning>,
    pub more_warnings: usize,
    /// Samples per problem to start with: two to validate a key (with a budget, below), one to
    /// just answer.
    pub suggested_samples: usize,
    /// The sample budget to suggest (`JobOptions::suggested_budget`), if any.
    pub suggested_max_samples: Option<usize>,
}

pub fn preview(path: &Path) -> Result<FilePreview, ReadError> {
    let p = reader::read_file(path, &Default::default())?;
    Ok(FilePreview {
        path: path.display().to_string(),
        name: path.file_name().unwrap_or_default().to_string_lossy().into_owned(),
        format: p.format,
        encoding: p.encoding,
        problem_count: p.problems.len(),
        suggested_samples: JobOptions::suggested_budget(p.has_key).0,
        suggested_max_samples: JobOptions::suggested_budget(p.has_key).1,
        problems: p.problems.into_iter().take(PREVIEW_PROBLEMS).collect(),
        has_key: p.has_key,
        columns: p.columns,
        warnings: p.warnings,
        more_warnings: p.more_warnings,
    })
}
