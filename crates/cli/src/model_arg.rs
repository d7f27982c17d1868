//! Which model a command uses.
use anyhow::{bail, Result};
use std::path::PathBuf;

/// `--model` if given, else the default model from the Hugging Face cache.
pub fn resolve(model: Option<PathBuf>) -> Result<PathBuf> {
    if let Some(m) = model {
        return Ok(m);
    }
    match ponder_engine::download::cached_default_model() {
        Some(p) => Ok(p),
        None => bail!("no model: pass --model FILE.gguf, or download the default model with `ponder models pull`"),
    }
}
