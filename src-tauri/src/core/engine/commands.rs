use super::{EngineState, EngineStatus};
use std::sync::Arc;

#[tauri::command]
pub fn engine_status(state: tauri::State<'_, Arc<EngineState>>) -> EngineStatus {
    state.status()
}
