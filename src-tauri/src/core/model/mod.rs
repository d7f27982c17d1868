//! Which model the app uses, whether it is there yet, and getting one.
pub mod commands;

use crate::core::error::CommandError;
use crate::core::settings::Settings;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What the UI needs to decide between the first-run screen and the workbench.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ModelStatus {
    /// No usable model yet: the first-run screen offers a download or a local file.
    Missing { default_model: String },
    /// A model file or folder is configured, present and readable.
    Ready { info: ponder_engine::ModelInfo },
    /// A model is configured but cannot be used: the first-run screen says why.
    Invalid { path: String, error: CommandError, default_model: String },
}

/// `PONDER_MODEL` (for tests and scripts) wins over the settings, which win over the
/// downloaded default model.
pub fn configured_model(settings: &Settings) -> Option<PathBuf> {
    std::env::var_os("PONDER_MODEL")
        .map(PathBuf::from)
        .or_else(|| settings.model_path.clone())
        .filter(|p| !p.as_os_str().is_empty())
        .or_else(ponder_engine::download::cached_default_model)
}

pub fn status(settings: &Settings) -> ModelStatus {
    let default_model = ponder_engine::catalog::default_model().label();
    match configured_model(settings) {
        None => ModelStatus::Missing { default_model },
        Some(path) => match ponder_engine::loader::inspect(&path) {
            Ok(info) => ModelStatus::Ready { info },
            Err(e) => ModelStatus::Invalid { path: path.display().to_string(), error: e.into(), default_model },
        },
    }
}

/// A model Ponder offers, as the first-run screen and the settings list it.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize)]
pub struct CatalogEntry {
    pub model: ponder_engine::CatalogModel,
    /// How the window names it: "Qwen3-4B (Q4_K_M, 2.5 GB)".
    pub label: String,
    /// Where it is in the Hugging Face cache, once downloaded.
    pub downloaded: Option<String>,
    /// It is the model the app uses now.
    pub current: bool,
}

/// The catalogue with what this computer has of it; `in_use` is the engine's model (loaded or
/// loading), else the configured one counts. No network.
pub fn catalog(settings: &Settings, in_use: Option<PathBuf>) -> Vec<CatalogEntry> {
    let current = in_use.or_else(|| configured_model(settings));
    ponder_engine::catalog::MODELS
        .iter()
        .map(|m| {
            let path = ponder_engine::download::cached(m);
            CatalogEntry {
                model: *m,
                label: m.label(),
                current: path.is_some() && path == current,
                downloaded: path.map(|p| p.display().to_string()),
            }
        })
        .collect()
}

/// A GGUF file found on this computer, as the Models list shows it.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize)]
pub struct LocalModel {
    pub path: String,
    pub source: ponder_engine::local_models::Source,
    /// The repository, Ollama's `model:tag`, or the folder it was found in.
    pub origin: String,
    pub file_size: u64,
    /// What the file holds, when Ponder can run it.
    pub info: Option<ponder_engine::ModelInfo>,
    /// Why Ponder cannot run it (an architecture it does not know, a split file, a damaged
    /// header).
    pub problem: Option<CommandError>,
    /// It is the model the app uses now.
    pub current: bool,
}

/// Every GGUF file in the Hugging Face cache, LM Studio's and Ollama's folders and the user's
/// folders, read (headers only) to say what each is and whether Ponder runs it. No network,
/// nothing copied.
pub fn local_models(settings: &Settings, in_use: Option<PathBuf>) -> Vec<LocalModel> {
    let places = ponder_engine::local_models::Places::standard(settings.model_folders.clone());
    let current = in_use.or_else(|| configured_model(settings)).and_then(|p| std::fs::canonicalize(p).ok());
    ponder_engine::local_models::scan(&places)
        .into_iter()
        .map(|f| {
            let (info, problem) = match ponder_engine::loader::inspect_runnable(&f.path) {
                Ok(info) => (Some(info), None),
                Err(e) => (None, Some(e.into())),
            };
            LocalModel {
                current: current.is_some() && std::fs::canonicalize(&f.path).ok() == current,
                file_size: std::fs::metadata(&f.path).map_or(0, |m| m.len()),
                path: f.path.display().to_string(),
                source: f.source,
                origin: f.origin,
                info,
                problem,
            }
        })
        .collect()
}

/// Download progress as the first-run screen shows it.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum DownloadEvent {
    Started { total_bytes: u64 },
    Progress { downloaded_bytes: u64, total_bytes: u64, bytes_per_second: f64 },
    Finished { path: String },
    Failed { error: CommandError },
}

/// The download in progress, if any, and its cancel switch.
#[derive(Default)]
pub struct DownloadState(Mutex<Option<Arc<AtomicBool>>>);

impl DownloadState {
    /// Marks a download as started; one at a time.
    pub fn begin(&self) -> Result<Arc<AtomicBool>, CommandError> {
        let mut current = self.0.lock().unwrap();
        if current.is_some() {
            return Err(CommandError::coded("download.busy", "the model is already downloading", &[]));
        }
        let flag = Arc::new(AtomicBool::new(false));
        *current = Some(flag.clone());
        Ok(flag)
    }

    pub fn end(&self) {
        *self.0.lock().unwrap() = None;
    }

    pub fn cancel(&self) {
        if let Some(flag) = &*self.0.lock().unwrap() {
            flag.store(true, Ordering::Relaxed);
        }
    }
}
