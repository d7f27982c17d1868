//! Which model the app uses, and whether it is there yet.
pub mod commands;

use crate::core::paths::AppPaths;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What the UI needs to decide between the first-run screen and the workbench.
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ModelStatus {
    /// No usable model yet: the first-run screen offers a download or a local file.
    Missing { default_model: String },
    /// A model file or folder is configured and present.
    Ready { path: String },
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct Settings {
    model_path: Option<PathBuf>,
}

pub struct ModelState {
    paths: AppPaths,
}

impl ModelState {
    pub fn new(paths: AppPaths) -> Self {
        Self { paths }
    }

    fn settings(&self) -> Settings {
        std::fs::read_to_string(self.paths.settings_file())
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok())
            .unwrap_or_default()
    }

    /// A model configured in the settings wins; `PONDER_MODEL` lets tests and scripts pick one.
    pub fn status(&self) -> ModelStatus {
        let configured = std::env::var_os("PONDER_MODEL")
            .map(PathBuf::from)
            .or_else(|| self.settings().model_path);
        match configured {
            Some(path) if path.exists() => ModelStatus::Ready { path: path.display().to_string() },
            _ => ModelStatus::Missing { default_model: DEFAULT_MODEL_NAME.to_string() },
        }
    }
}

pub const DEFAULT_MODEL_NAME: &str = "DeepSeek-R1-Distill-Qwen-1.5B (Q4_K_M, 1.1 GB)";
