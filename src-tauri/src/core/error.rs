//! What a command reports when it fails: a stable code and the values its message names, which
//! the window translates (`error.<code>` in its messages), with the English message beside them
//! for logs and for a code the window has no translation of.

use ponder_engine::EngineError;
use ponder_jobs::backend::BackendError;
use ponder_jobs::reader::ReadError;
use ponder_jobs::remote::RemoteError;
use ponder_jobs::runner::RunError;
use ponder_jobs::store::StoreError;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CommandError {
    /// Stable across versions: `read.too_large`, `model.not_gguf`, … (`app` for the app's own
    /// messages, which have no translation yet).
    pub code: String,
    /// The values the message names: a path, a line, a limit.
    pub params: BTreeMap<String, String>,
    /// The English message.
    pub message: String,
}

impl CommandError {
    /// An error of the app's own, with its code, its English message and its values.
    pub fn coded(code: &str, message: impl Into<String>, params: &[(&str, String)]) -> Self {
        Self::new(code, message.into(), params)
    }

    fn new(code: &str, message: String, params: &[(&str, String)]) -> Self {
        let params = params.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        Self { code: code.into(), params, message }
    }
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}

impl From<ReadError> for CommandError {
    fn from(e: ReadError) -> Self {
        let message = e.to_string();
        let (code, params): (&str, Vec<(&str, String)>) = match e {
            ReadError::Io { path, source } => ("read.io", vec![("path", shown(&path)), ("detail", source.to_string())]),
            ReadError::UnknownFormat { path } => {
                ("read.unknown_format", vec![("path", shown(&path)), ("extensions", ponder_jobs::reader::extensions_list())])
            }
            ReadError::TooLarge { path, size, limit } => {
                ("read.too_large", vec![("path", shown(&path)), ("size", size.to_string()), ("limit", limit.to_string())])
            }
            ReadError::TooMany { path, limit } => ("read.too_many", vec![("path", shown(&path)), ("limit", limit.to_string())]),
            // A workbook's error may belong to no one row.
            ReadError::Parse { path, line: 0, message } => ("read.parse_file", vec![("path", shown(&path)), ("detail", message)]),
            ReadError::Parse { path, line, message } => {
                ("read.parse", vec![("path", shown(&path)), ("line", line.to_string()), ("detail", message)])
            }
            ReadError::Empty { path } => ("read.empty", vec![("path", shown(&path))]),
            ReadError::NoQuestionColumn { path, headers } => {
                ("read.no_question_column", vec![("path", shown(&path)), ("headers", headers)])
            }
        };
        Self::new(code, message, &params)
    }
}

impl From<EngineError> for CommandError {
    fn from(e: EngineError) -> Self {
        use EngineError as E;
        let message = e.to_string();
        let (code, params): (&str, Vec<(&str, String)>) = match e {
            E::ModelNotFound(path) => ("model.not_found", vec![("path", shown(&path))]),
            E::NotGguf { path } => ("model.not_gguf", vec![("path", shown(&path))]),
            E::Truncated { path, detail } => ("model.truncated", vec![("path", shown(&path)), ("detail", detail)]),
            E::UnsupportedArchitecture { path, found } => {
                ("model.unsupported_architecture", vec![("path", shown(&path)), ("found", found)])
            }
            E::SplitGguf { path, part, parts } => {
                ("model.split_gguf", vec![("path", shown(&path)), ("part", part.to_string()), ("parts", parts.to_string())])
            }
            E::MissingMetadata { path, key } => ("model.missing_metadata", vec![("path", shown(&path)), ("key", key)]),
            E::BadModel { path, detail } => ("model.bad", vec![("path", shown(&path)), ("detail", detail)]),
            E::Io { path, source } => ("model.io", vec![("path", shown(&path)), ("detail", source.to_string())]),
            E::ContextOverflow { prompt_tokens, max_tokens, context_length } => (
                "engine.context_overflow",
                vec![
                    ("prompt_tokens", prompt_tokens.to_string()),
                    ("max_tokens", max_tokens.to_string()),
                    ("context_length", context_length.to_string()),
                ],
            ),
            E::EngineStopped => ("engine.stopped", vec![]),
            E::DownloadCancelled => ("download.cancelled", vec![]),
            E::Download(detail) => ("download.failed", vec![("detail", detail)]),
            // The rest are faults of a request or the runtime, not of what the user chose:
            // their English detail is the useful part.
            other => ("engine.failed", vec![("detail", other.to_string())]),
        };
        Self::new(code, message, &params)
    }
}

impl From<StoreError> for CommandError {
    fn from(e: StoreError) -> Self {
        let message = e.to_string();
        match e {
            StoreError::NoJob(id) => Self::new("store.no_job", message, &[("id", id.to_string())]),
            other => Self::new("store.failed", message, &[("detail", other.to_string())]),
        }
    }
}

impl From<RemoteError> for CommandError {
    fn from(e: RemoteError) -> Self {
        let message = e.to_string();
        let (code, params): (&str, Vec<(&str, String)>) = match e {
            RemoteError::BadKey { url, status } => ("remote.bad_key", vec![("url", url), ("status", status.to_string())]),
            RemoteError::NoSuchModel { url, wanted, available } => {
                ("remote.no_such_model", vec![("url", url), ("model", wanted), ("available", available)])
            }
            RemoteError::NoModels { url } => ("remote.no_models", vec![("url", url)]),
            RemoteError::Unreachable { url, detail } => ("remote.unreachable", vec![("url", url), ("detail", detail)]),
            RemoteError::Protocol { url, detail } => ("remote.protocol", vec![("url", url), ("detail", detail)]),
            RemoteError::Refused { url, status, body } => {
                ("remote.refused", vec![("url", url), ("status", status.to_string()), ("detail", body)])
            }
        };
        Self::new(code, message, &params)
    }
}

impl From<RunError> for CommandError {
    fn from(e: RunError) -> Self {
        match e {
            RunError::Store(e) => e.into(),
            RunError::Backend(BackendError::Engine(e)) => e.into(),
            RunError::Backend(BackendError::Remote(e)) => e.into(),
            RunError::Backend(BackendError::Generation(why)) => {
                Self::new("job.interrupted", format!("the job is paused: generation failed: {why}"), &[("detail", why)])
            }
            other => {
                let message = other.to_string();
                Self::new("job.failed", message.clone(), &[("detail", message)])
            }
        }
    }
}

impl From<crate::core::chat::store::ChatStoreError> for CommandError {
    fn from(e: crate::core::chat::store::ChatStoreError) -> Self {
        let message = e.to_string();
        Self::new("chat.store", message.clone(), &[("detail", message)])
    }
}

/// The app's own messages that have no code of their own (the keyring's, a file that cannot be
/// written): shown as they are.
impl From<String> for CommandError {
    fn from(message: String) -> Self {
        Self::new("app", message, &[])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_error_keeps_its_english_message_and_names_its_values() {
        let e = CommandError::from(ReadError::TooMany { path: "/s/set.csv".into(), limit: 5 });
        assert_eq!(e.code, "read.too_many");
        assert_eq!(e.message, "/s/set.csv: more than 5 problems, the limit for one file");
        assert_eq!((e.params["path"].as_str(), e.params["limit"].as_str()), ("/s/set.csv", "5"));
        let wire = serde_json::to_value(&e).unwrap();
        assert_eq!(wire["code"], "read.too_many");
    }
}
