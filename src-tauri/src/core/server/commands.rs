use super::{ServerState, ServerStatus};

#[tauri::command]
pub fn server_status(state: tauri::State<'_, ServerState>) -> ServerStatus {
    state.status()
}
