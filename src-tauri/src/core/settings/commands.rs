use super::{Settings, SettingsState};
use crate::core::engine::EngineState;
use crate::core::server::ServerState;
use std::sync::Arc;

#[tauri::command]
pub fn get_settings(state: tauri::State<'_, SettingsState>) -> Settings {
    state.get()
}

/// Saves the settings; the local API server follows its switch at once.
#[tauri::command]
pub fn save_settings(
    state: tauri::State<'_, SettingsState>,
    server: tauri::State<'_, ServerState>,
    engine: tauri::State<'_, Arc<EngineState>>,
    settings: Settings,
) -> Result<Settings, crate::core::error::CommandError> {
    let saved = state.set(settings)?;
    server.apply(saved.server_enabled, saved.server_port, engine.inner().clone());
    Ok(saved)
}
