//! Fetching a catalogue model ([`crate::catalog`]) from the Hugging Face hub into the standard HF
//! cache, which other tools share. Downloads resume from a partial file; once cached, a model is
//! found without any network.

use crate::catalog::{self, CatalogModel};
use crate::error::{EngineError, Result};
use std::path::PathBuf;

/// Download progress, reported as bytes arrive.
pub trait Progress: Send {
    /// A transfer (re)starts; `advance` then counts every byte of the file from zero, those
    /// already on disk from an earlier attempt first.
    fn start(&mut self, total_bytes: u64);
    fn advance(&mut self, bytes: u64);
    fn finish(&mut self);
    /// Polled as bytes arrive: `true` stops the download, keeping the partial file to resume.
    fn cancelled(&self) -> bool {
        false
    }
}

/// Unwinds out of hf-hub when the user cancels (see [`download`]).
struct Cancelled;

struct Adapter<P: Progress>(P);

impl<P: Progress> hf_hub::api::Progress for Adapter<P> {
    fn init(&mut self, size: usize, _filename: &str) {
        self.0.start(size as u64);
    }
    fn update(&mut self, size: usize) {
        if self.0.cancelled() {
            std::panic::resume_unwind(Box::new(Cancelled));
        }
        self.0.advance(size as u64);
    }
    fn finish(&mut self) {
        self.0.finish();
    }
}

/// A model's path in the HF cache, if it has been downloaded. No network.
pub fn cached(model: &CatalogModel) -> Option<PathBuf> {
    let cache = hf_hub::Cache::from_env();
    cache.model(model.repo.to_string()).get(model.file)
}

/// The default model's path in the HF cache, if it has been downloaded. No network.
pub fn cached_default_model() -> Option<PathBuf> {
    cached(catalog::default_model())
}

/// Downloads (or resumes downloading) the default model; returns its path in the cache.
pub fn download_default_model(progress: impl Progress + 'static) -> Result<PathBuf> {
    download(catalog::default_model(), progress)
}

/// Downloads (or resumes downloading) a model; returns its path in the cache.
pub fn download(model: &CatalogModel, progress: impl Progress + 'static) -> Result<PathBuf> {
    if let Some(p) = cached(model) {
        return Ok(p);
    }
    let api = hf_hub::api::sync::ApiBuilder::from_env()
        .with_progress(false)
        .build()
        .map_err(|e| EngineError::Download(e.to_string()))?;
    // hf-hub's blocking API has no way to stop a transfer, and its progress callback is the
    // only code of ours that runs during one: cancelling unwinds out of that callback (with
    // `resume_unwind`, so no panic message is printed). The bytes written so far stay in the
    // cache's `.part` file, from which the next download resumes.
    let download = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        api.model(model.repo.to_string()).download_with_progress(model.file, Adapter(progress))
    }));
    match download {
        Ok(result) => result.map_err(|e| EngineError::Download(e.to_string())),
        Err(payload) if payload.is::<Cancelled>() => Err(EngineError::DownloadCancelled),
        Err(payload) => std::panic::resume_unwind(payload),
    }
}
