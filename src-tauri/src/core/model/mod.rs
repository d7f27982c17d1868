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
    /// A model file or folder is configured, present and readable.
    Ready { info: ponder_engine::ModelInfo },
    /// A model is configured but cannot be used: the first-run screen says why.
    Invalid { path: String, error: String, default_model: String },
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
        let configured = configured.filter(|p| !p.as_os_str().is_empty()).or_else(ponder_engine::download::cached_default_model);
        let default_model = ponder_engine::download::DEFAULT_DISPLAY_NAME.to_string();
        match configured {
            None => ModelStatus::Missing { default_model },
            Some(path) => match ponder_engine::model::inspect(&path) {
                Ok(info) => ModelStatus::Ready { info },
                Err(e) => ModelStatus::Invalid { path: path.display().to_string(), error: e.to_string(), default_model },
            },
        }
    }
}
