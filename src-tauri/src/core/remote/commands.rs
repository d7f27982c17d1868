use super::RemoteState;
use crate::core::error::CommandError;
use crate::core::settings::SettingsState;
use ponder_jobs::remote::RemoteBackend;
use tauri::State;

/// Whether a key is stored for the saved address (the key itself never goes back to the
/// window).
#[tauri::command]
pub fn remote_key_stored(remote: State<'_, RemoteState>, settings: State<'_, SettingsState>) -> Result<bool, String> {
    let url = settings.get().remote_url.unwrap_or_default();
    Ok(remote.key_for(&url)?.is_some())
}

/// Stores the key for the saved address: it is sent only there.
#[tauri::command]
pub fn set_remote_key(
    remote: State<'_, RemoteState>,
    settings: State<'_, SettingsState>,
    key: Option<String>,
) -> Result<(), String> {
    remote.set_key(key.as_deref(), &settings.get())
}

/// Asks the remote engine for its models with the saved address and key; returns the model
/// jobs will use.
#[tauri::command(async)]
pub fn check_remote(remote: State<'_, RemoteState>, settings: State<'_, SettingsState>) -> Result<String, CommandError> {
    let config = remote.config(&settings.get())?.ok_or(CommandError::coded("remote.none", "no remote engine is set up", &[]))?;
    Ok(RemoteBackend::connect(config)?.model().to_string())
}
