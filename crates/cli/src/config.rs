//! `config.toml` in the platform config directory (`~/.config/ponder/` on Linux): defaults for
//! the flags people would otherwise repeat. Flags and environment variables win over it.
//!
//! ```toml
//! model = "/models/DeepSeek-R1-Distill-Qwen-1.5B-Q4_K_M.gguf"
//! threads = 4
//! kv_cache = "q8_0"
//! draft_model = "/models/DeepSeek-R1-Distill-Qwen-1.5B-Q4_K_M.gguf"
//!
//! [serve]
//! host = "127.0.0.1"
//! port = 8080
//! api_key = "…"
//! ```

use anyhow::{Context, Result};
use serde::Deserialize;
use std::path::{Path, PathBuf};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    pub model: Option<PathBuf>,
    pub threads: Option<usize>,
    pub kv_cache: Option<ponder_engine::KvCacheType>,
    pub draft_model: Option<PathBuf>,
    #[serde(default)]
    pub serve: ServeConfig,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServeConfig {
    pub host: Option<std::net::IpAddr>,
    pub port: Option<u16>,
    pub api_key: Option<String>,
}

pub fn default_path() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("ponder").join("config.toml"))
}

/// The config at `path` (or the default place); a missing file is an empty config.
pub fn load(path: Option<&Path>) -> Result<Config> {
    let Some(path) = path.map(Path::to_path_buf).or_else(default_path) else { return Ok(Config::default()) };
    match std::fs::read_to_string(&path) {
        Ok(text) => toml::from_str(&text).with_context(|| format!("{}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Config::default()),
        Err(e) => Err(e).with_context(|| format!("{}", path.display())),
    }
}
