//! Where the app keeps its files. `PONDER_DATA_DIR` overrides the platform data folder, so tests
//! and portable installs can run against a folder of their own.
use std::path::PathBuf;
use tauri::Manager;

#[derive(Debug, Clone)]
pub struct AppPaths {
    pub data_dir: PathBuf,
}

impl AppPaths {
    pub fn resolve(app: &tauri::AppHandle) -> anyhow::Result<Self> {
        let data_dir = match std::env::var_os("PONDER_DATA_DIR") {
            Some(dir) => PathBuf::from(dir),
            None => app.path().app_data_dir()?,
        };
        std::fs::create_dir_all(&data_dir)?;
        Ok(Self { data_dir })
    }

    pub fn settings_file(&self) -> PathBuf {
        self.data_dir.join("settings.json")
    }

    pub fn jobs_db(&self) -> PathBuf {
        self.data_dir.join("jobs.sqlite")
    }

    pub fn chat_db(&self) -> PathBuf {
        self.data_dir.join("chat.sqlite")
    }

    /// Names the model while it loads (`EngineState::with_load_marker`).
    pub fn load_marker(&self) -> PathBuf {
        self.data_dir.join("loading-model")
    }
}
