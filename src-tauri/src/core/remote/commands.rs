use super::RemoteState;
use crate::core::error::CommandError;
use crate::core::settings::SettingsState;
use ponder_jobs::remote::RemoteBackend;
use tauri::State;

/// Whether a key is stored (the key itself never goes back to the window).
#[tauri::command]
pub fn remote_key_stored(remote: State<'_, RemoteState>) -> Result<bool, String> {
    Ok(remote.secrets.get()?.is_some())
}

#[tauri::command]
pub fn set_remote_key(remote: State<'_, RemoteState>, key: Option<String>) -> Result<(), String> {
    remote.set_key(key.as_deref())
}

/// Asks the remote engine for its models with the saved address and key; returns the model
/// jobs will use.
#[tauri::command(async)]
pub fn check_remote(remote: State<'_, RemoteState>, settings: State<'_, SettingsState>) -> Result<String, CommandError> {
    let config = remote.config(&settings.get())?.ok_or(CommandError::coded("remote.none", "no remote engine is set up", &[]))?;
    Ok(RemoteBackend::connect(config)?.model().to_string())
}
