use super::Notices;
use crate::core::error::CommandError;
use tauri::State;

/// What the app has to say about its launch, once.
#[tauri::command]
pub fn take_notices(notices: State<'_, Notices>) -> Vec<CommandError> {
    notices.take()
}
