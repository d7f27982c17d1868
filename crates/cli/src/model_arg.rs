//! Which model a command uses, and loading it.
use anyhow::{bail, Result};
use ponder_engine::{catalog, download, DraftModel, EngineConfig, KvCacheType, LoadOptions, LoadedModel};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// `--model` if given (a path, or the name of a downloaded catalogue model such as
/// `qwen3-1.7b`), else the default model from the Hugging Face cache.
pub fn resolve(model: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(m) = model {
        let named = m.to_str().filter(|_| !m.exists()).and_then(catalog::find);
        return match named {
            None => Ok(m),
            Some(entry) => match download::cached(entry) {
                Some(p) => Ok(p),
                None => bail!("{} is not downloaded yet: `ponder models pull {}`", entry.display_name, entry.id),
            },
        };
    }
    match download::cached_default_model() {
        Some(p) => Ok(p),
        None => bail!("no model: pass --model FILE.gguf, or download the default model with `ponder models pull`"),
    }
}

/// Loads `path` with the context capped at `max_context`. On a terminal, a line on standard error
/// follows the load (a big model takes a while) and is cleared once it is done; piped output
/// gets nothing.
pub fn load(path: &Path, max_context: usize) -> Result<LoadedModel> {
    let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let on_progress = std::io::stderr().is_terminal().then(|| {
        let last = std::sync::Mutex::new(u64::MAX);
        let show: ponder_engine::ProgressFn = Arc::new(move |p: ponder_engine::LoadProgress| {
            let percent = (p.done_bytes * 100).checked_div(p.total_bytes).unwrap_or(0);
            let mut last = last.lock().unwrap();
            if *last != percent {
                *last = percent;
                let _ = write!(std::io::stderr(), "\rloading {name}: {percent} %");
            }
        });
        show
    });
    let shown = on_progress.is_some();
    let loaded = ponder_engine::load(path, &LoadOptions { max_context: Some(max_context), on_progress, ..Default::default() });
    if shown {
        // Back to the start of the line, and clear it.
        let _ = write!(std::io::stderr(), "\r\x1b[2K");
    }
    Ok(loaded?)
}

/// The engine settings every command that runs a local engine shares.
pub struct EngineArgs {
    pub kv_cache: KvCacheType,
    /// `--draft-model`: a path or a downloaded catalogue model's name.
    pub draft_model: Option<PathBuf>,
}

impl EngineArgs {
    /// An engine configuration for `max_seqs` sequences, with the draft model loaded (for a
    /// context of `context` tokens) where one was asked for.
    pub fn config(&self, max_seqs: usize, context: usize) -> Result<EngineConfig> {
        let draft = match &self.draft_model {
            Some(m) => {
                let path = resolve(Some(m.clone()))?;
                Some(DraftModel::new(load(&path, context).map_err(|e| e.context("loading the draft model"))?))
            }
            None => None,
        };
        Ok(EngineConfig { max_seqs, kv_cache: self.kv_cache, draft, ..Default::default() })
    }
}
