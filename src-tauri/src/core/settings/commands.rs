use super::{Settings, SettingsState};

#[tauri::command]
pub fn get_settings(state: tauri::State<'_, SettingsState>) -> Settings {
    state.get()
}

#[tauri::command]
pub fn save_settings(state: tauri::State<'_, SettingsState>, settings: Settings) -> Result<Settings, String> {
    state.set(settings)
}
