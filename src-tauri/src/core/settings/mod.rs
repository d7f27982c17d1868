//! The user's settings, kept as JSON in the app data folder. Every field has a default, so an
//! older or hand-edited file still loads; a file that does not parse is kept aside, not lost.
pub mod commands;

use crate::core::error::CommandError;
use crate::core::paths::AppPaths;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Mutex;

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// A GGUF file or model folder; `None` means the downloaded default model.
    pub model_path: Option<PathBuf>,
    /// Folders of GGUF files the user added to the Models list (besides the Hugging Face cache,
    /// LM Studio's and Ollama's, which are always searched).
    pub model_folders: Vec<PathBuf>,
    /// CPU threads for the engine (applies at the next start).
    pub threads: usize,
    /// Sequences the engine decodes at once.
    pub max_sequences: usize,
    /// Longest context a conversation may use, in tokens.
    pub context_size: usize,
    /// How the engine's KV cache stores keys and values (applies at the next start).
    pub kv_cache: ponder_engine::KvCacheType,
    /// Let a chat that runs alone guess its next tokens from text it has already seen, and check
    /// the guesses in one step: replies come faster, word for word the same when greedy.
    pub speculative_decoding: bool,
    /// A small model with the same vocabulary that makes those guesses instead (applies at the
    /// next start). It pays when it is several times cheaper than the model, e.g. a 1.5B for a
    /// 7B; `None` guesses from the text alone.
    pub draft_model_path: Option<PathBuf>,
    pub temperature: f32,
    pub top_p: f32,
    pub max_tokens: usize,
    /// Close the thought after this many tokens; `None` lets the model think as long as it likes.
    pub thinking_budget: Option<usize>,
    pub server_enabled: bool,
    pub server_port: u16,
    /// A key the local API server asks for (`Authorization: Bearer …`); `None` asks none.
    pub server_api_key: Option<String>,
    /// A remote OpenAI-compatible server for big jobs (its API root, e.g.
    /// `http://gpu-box:8000/v1`); its key lives in the OS keyring, never here.
    pub remote_url: Option<String>,
    /// The remote model's name; `None` takes the server's first.
    pub remote_model: Option<String>,
    pub language: Language,
    pub theme: Theme,
}

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Language {
    #[serde(rename = "en")]
    English,
    #[serde(rename = "zh-CN")]
    SimplifiedChinese,
}

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Theme {
    Light,
    Dark,
    System,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            model_path: None,
            model_folders: Vec::new(),
            threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
            max_sequences: 8,
            context_size: 16384,
            kv_cache: ponder_engine::KvCacheType::F16,
            speculative_decoding: true,
            draft_model_path: None,
            temperature: ponder_engine::SamplingParams::default().temperature,
            top_p: ponder_engine::SamplingParams::default().top_p,
            // Twice the engine's default: a chat has no deadline, and a hard question's
            // thought runs long.
            max_tokens: 2 * ponder_engine::DEFAULT_MAX_TOKENS,
            thinking_budget: None,
            server_enabled: false,
            server_port: 8080,
            server_api_key: None,
            remote_url: None,
            remote_model: None,
            language: Language::English,
            theme: Theme::System,
        }
    }
}

impl Settings {
    /// What is wrong with these settings, field by field, if anything.
    /// What is wrong with these settings, if anything: the first field at fault (its code is
    /// `settings.<field>`).
    pub fn validate(&self) -> Result<(), CommandError> {
        let checks = [
            (self.threads >= 1 && self.threads <= 256, "threads", "threads must be between 1 and 256"),
            (self.max_sequences >= 1 && self.max_sequences <= 64, "max_sequences", "max_sequences must be between 1 and 64"),
            (self.context_size >= 512, "context_size", "context_size must be at least 512 tokens"),
            ((0.0..=2.0).contains(&self.temperature), "temperature", "temperature must be between 0 and 2"),
            (self.top_p > 0.0 && self.top_p <= 1.0, "top_p", "top_p must be in (0, 1]"),
            (self.max_tokens >= 1, "max_tokens", "max_tokens must be at least 1"),
            (self.thinking_budget != Some(0), "thinking_budget", "thinking_budget must be at least 1 when set"),
            (self.server_port >= 1024, "server_port", "server_port must be 1024 or above"),
            (
                self.server_api_key.as_deref().is_none_or(|k| !k.trim().is_empty() && k.len() <= 256),
                "server_api_key",
                "the API key must be 1 to 256 characters, or none",
            ),
            (
                self.remote_url.as_deref().is_none_or(|u| u.starts_with("http://") || u.starts_with("https://")),
                "remote_url",
                "remote_url must start with http:// or https://",
            ),
        ];
        match checks.iter().find(|(ok, _, _)| !ok) {
            Some((_, field, why)) => Err(CommandError::coded(&format!("settings.{field}"), *why, &[])),
            None => Ok(()),
        }
    }
}

pub struct SettingsState {
    paths: AppPaths,
    current: Mutex<Settings>,
}

impl SettingsState {
    pub fn load(paths: AppPaths) -> Self {
        let file = paths.settings_file();
        let current = match std::fs::read_to_string(&file) {
            Err(_) => Settings::default(),
            Ok(text) => serde_json::from_str(&text).unwrap_or_else(|e| {
                let aside = file.with_extension("json.unreadable");
                tracing::warn!("{}: {e}; keeping it as {} and starting from defaults", file.display(), aside.display());
                let _ = std::fs::rename(&file, &aside);
                Settings::default()
            }),
        };
        Self { paths, current: Mutex::new(current) }
    }

    pub fn get(&self) -> Settings {
        self.current.lock().unwrap().clone()
    }

    /// Validates and saves (atomically: a crash leaves the old file or the new one).
    pub fn set(&self, settings: Settings) -> Result<Settings, CommandError> {
        settings.validate()?;
        let file = self.paths.settings_file();
        let tmp = file.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(&settings).map_err(|e| e.to_string())?;
        std::fs::write(&tmp, text).and_then(|_| std::fs::rename(&tmp, &file)).map_err(|e| format!("{}: {e}", file.display()))?;
        *self.current.lock().unwrap() = settings.clone();
        Ok(settings)
    }

    /// Saves the settings the window sends. The model and the model folders are not among
    /// them: the model changes only through `open_model` (which loads it first and records it
    /// once it loaded), so the window can never point the next launch at a file that was never
    /// opened; a folder is added only as the user picks it in a dialog.
    pub fn save_from_window(&self, settings: Settings) -> Result<Settings, CommandError> {
        let Settings { model_path, model_folders, .. } = self.get();
        self.set(Settings { model_path, model_folders, ..settings })
    }

    pub fn update(&self, f: impl FnOnce(&mut Settings)) -> Result<Settings, CommandError> {
        let mut s = self.get();
        f(&mut s);
        self.set(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(dir: &std::path::Path) -> SettingsState {
        SettingsState::load(AppPaths { data_dir: dir.to_path_buf() })
    }

    #[test]
    fn saves_and_reloads() {
        let dir = tempfile::tempdir().unwrap();
        let s = state(dir.path());
        s.update(|s| {
            s.temperature = 0.3;
            s.language = Language::SimplifiedChinese;
            s.kv_cache = ponder_engine::KvCacheType::Q8_0;
            s.speculative_decoding = false;
        })
        .unwrap();
        let again = state(dir.path()).get();
        assert_eq!(again.temperature, 0.3);
        assert_eq!(again.language, Language::SimplifiedChinese);
        assert_eq!(again.kv_cache, ponder_engine::KvCacheType::Q8_0);
        assert!(!again.speculative_decoding);
        let file = std::fs::read_to_string(dir.path().join("settings.json")).unwrap();
        assert!(file.contains(r#""kv_cache": "q8_0""#) || file.contains(r#""kv_cache":"q8_0""#), "{file}");
    }

    #[test]
    fn missing_fields_take_defaults_and_a_broken_file_is_kept_aside() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("settings.json"), r#"{"top_p": 0.5}"#).unwrap();
        assert_eq!(state(dir.path()).get().top_p, 0.5);
        assert_eq!(state(dir.path()).get().max_sequences, 8);
        assert_eq!(state(dir.path()).get().kv_cache, ponder_engine::KvCacheType::F16);
        assert!(state(dir.path()).get().speculative_decoding, "on unless turned off");
        std::fs::write(dir.path().join("settings.json"), "{ not json").unwrap();
        assert_eq!(state(dir.path()).get(), Settings::default());
        assert!(dir.path().join("settings.json.unreadable").exists());
    }

    #[test]
    fn the_window_cannot_change_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let s = state(dir.path());
        s.update(|s| s.model_path = Some("/models/opened.gguf".into())).unwrap();
        let sent = Settings { model_path: Some("/tmp/never-opened.gguf".into()), temperature: 0.2, ..Settings::default() };
        let saved = s.save_from_window(sent).unwrap();
        assert_eq!((saved.model_path.as_deref(), saved.temperature), (Some(std::path::Path::new("/models/opened.gguf")), 0.2));
        assert_eq!(state(dir.path()).get().model_path, saved.model_path);
    }

    #[test]
    fn bad_values_are_refused_with_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let err = state(dir.path()).update(|s| s.top_p = 0.0).unwrap_err();
        assert!(err.code == "settings.top_p" && err.message.contains("top_p"), "{err:?}");
        assert!(!dir.path().join("settings.json").exists());
    }
}
