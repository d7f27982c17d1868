use super::{Settings, SettingsState};
use crate::core::engine::EngineState;
use crate::core::server::ServerState;
use std::sync::Arc;

#[tauri::command]
pub fn get_settings(state: tauri::State<'_, SettingsState>) -> Settings {
    state.get()
}

/// Saves the settings (all but the model, which only `open_model` changes); the local API
/// server follows its switch at once.
#[tauri::command]
pub fn save_settings(
    state: tauri::State<'_, SettingsState>,
    server: tauri::State<'_, ServerState>,
    engine: tauri::State<'_, Arc<EngineState>>,
    settings: Settings,
) -> Result<Settings, crate::core::error::CommandError> {
    let saved = state.save_from_window(settings)?;
    server.apply(crate::core::server::Wanted::of(&saved), engine.inner().clone());
    Ok(saved)
}
