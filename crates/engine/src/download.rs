//! Fetching the default model from the Hugging Face hub into the standard HF cache. Downloads
//! resume from a partial file; once cached, the model is found without any network.

use crate::error::{EngineError, Result};
use std::path::PathBuf;

/// The model Ponder is made for.
pub const DEFAULT_REPO: &str = "unsloth/DeepSeek-R1-Distill-Qwen-1.5B-GGUF";
pub const DEFAULT_FILE: &str = "DeepSeek-R1-Distill-Qwen-1.5B-Q4_K_M.gguf";
pub const DEFAULT_DISPLAY_NAME: &str = "DeepSeek-R1-Distill-Qwen-1.5B (Q4_K_M, 1.1 GB)";

/// Download progress, reported as bytes arrive.
pub trait Progress: Send {
    fn start(&mut self, total_bytes: u64);
    fn advance(&mut self, bytes: u64);
    fn finish(&mut self);
}

struct Adapter<P: Progress>(P);

impl<P: Progress> hf_hub::api::Progress for Adapter<P> {
    fn init(&mut self, size: usize, _filename: &str) {
        self.0.start(size as u64);
    }
    fn update(&mut self, size: usize) {
        self.0.advance(size as u64);
    }
    fn finish(&mut self) {
        self.0.finish();
    }
}

/// The default model's path in the HF cache, if it has been downloaded. No network.
pub fn cached_default_model() -> Option<PathBuf> {
    let cache = hf_hub::Cache::from_env();
    cache.model(DEFAULT_REPO.to_string()).get(DEFAULT_FILE)
}

/// Downloads (or resumes downloading) the default model; returns its path in the cache.
pub fn download_default_model(progress: impl Progress + 'static) -> Result<PathBuf> {
    if let Some(p) = cached_default_model() {
        return Ok(p);
    }
    let api = hf_hub::api::sync::ApiBuilder::from_env()
        .with_progress(false)
        .build()
        .map_err(|e| EngineError::Download(e.to_string()))?;
    api.model(DEFAULT_REPO.to_string())
        .download_with_progress(DEFAULT_FILE, Adapter(progress))
        .map_err(|e| EngineError::Download(e.to_string()))
}
