//! Which model a command uses.
use anyhow::{bail, Result};
use ponder_engine::{catalog, download};
use std::path::PathBuf;

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
