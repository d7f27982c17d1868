use super::{ModelState, ModelStatus};

#[tauri::command]
pub fn model_status(state: tauri::State<'_, ModelState>) -> ModelStatus {
    state.status()
}
