use super::{CatalogEntry, DownloadEvent, DownloadState, LocalModel, ModelStatus};
use crate::core::engine::EngineState;
use crate::core::error::CommandError;
use crate::core::files::{Access, FileGrants};
use crate::core::server::ServerState;
use crate::core::settings::SettingsState;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tauri::ipc::Channel;
use tauri::State;

#[tauri::command]
pub fn model_status(settings: State<'_, SettingsState>) -> ModelStatus {
    super::status(&settings.get())
}

/// Uses a GGUF file or model folder the user picked: checked, remembered, and loaded.
#[tauri::command(async)]
pub fn open_model(
    app: tauri::AppHandle,
    settings: State<'_, SettingsState>,
    engine: State<'_, Arc<EngineState>>,
    server: State<'_, ServerState>,
    grants: State<'_, FileGrants>,
    path: String,
) -> Result<ModelStatus, CommandError> {
    let path = grants.check(&path, Access::Read)?;
    let info = ponder_engine::loader::inspect(&path)?;
    load_and_remember(app, &settings, &engine, &server, path);
    Ok(ModelStatus::Ready { info })
}

/// Loads `path` in place of the current model (the status bar shows the load's progress), and
/// remembers it once it has loaded: a model that fails (or takes the app down) is not the one
/// the next launch opens.
fn load_and_remember(
    app: tauri::AppHandle,
    settings: &SettingsState,
    engine: &Arc<EngineState>,
    server: &ServerState,
    path: PathBuf,
) {
    let chosen = path.clone();
    engine.load_then(path, &settings.get(), move || {
        use tauri::Manager;
        if let Err(e) = app.state::<SettingsState>().update(|s| s.model_path = Some(chosen)) {
            tracing::error!("the loaded model could not be remembered: {}", e.message);
        }
    });
    server.follow_model(engine.clone());
}

/// The GGUF files on this computer (see [`super::local_models`]).
#[tauri::command(async)]
pub fn local_models(settings: State<'_, SettingsState>, engine: State<'_, Arc<EngineState>>) -> Vec<LocalModel> {
    super::local_models(&settings.get(), engine.model_path())
}

/// Uses a model from the Models list. Only a path the search finds is accepted, as only a
/// picked file is by `open_model`.
#[tauri::command(async)]
pub fn use_local_model(
    app: tauri::AppHandle,
    settings: State<'_, SettingsState>,
    engine: State<'_, Arc<EngineState>>,
    server: State<'_, ServerState>,
    path: String,
) -> Result<ModelStatus, CommandError> {
    // Only names are compared: the chosen file's header is the one worth reading.
    let places = ponder_engine::local_models::Places::standard(settings.get().model_folders);
    let Some(found) = ponder_engine::local_models::scan(&places).into_iter().find(|f| f.path.display().to_string() == path)
    else {
        let message = format!("{path}: not among the models found on this computer");
        return Err(CommandError::coded("files.not_granted", message, &[("path", path)]));
    };
    let info = ponder_engine::loader::inspect_runnable(&found.path)?;
    let path = found.path;
    load_and_remember(app, &settings, &engine, &server, path);
    Ok(ModelStatus::Ready { info })
}

/// Adds a folder the user picks to the Models list's search; returns the folders.
#[tauri::command(async)]
pub fn add_model_folder(
    app: tauri::AppHandle,
    settings: State<'_, SettingsState>,
    title: String,
) -> Result<Vec<String>, CommandError> {
    use tauri_plugin_dialog::DialogExt;
    if let Some(dir) = app.dialog().file().set_title(title).blocking_pick_folder().and_then(|p| p.into_path().ok()) {
        settings.update(|s| {
            if !s.model_folders.contains(&dir) {
                s.model_folders.push(dir);
            }
        })?;
    }
    Ok(folders(&settings))
}

/// Takes a folder off the Models list's search. Nothing in it is touched.
#[tauri::command]
pub fn remove_model_folder(settings: State<'_, SettingsState>, path: String) -> Result<Vec<String>, CommandError> {
    settings.update(|s| s.model_folders.retain(|f| f != &PathBuf::from(&path)))?;
    Ok(folders(&settings))
}

fn folders(settings: &SettingsState) -> Vec<String> {
    settings.get().model_folders.iter().map(|p| p.display().to_string()).collect()
}

/// The models Ponder offers, which of them are downloaded, and which is in use.
#[tauri::command]
pub fn model_catalog(settings: State<'_, SettingsState>, engine: State<'_, Arc<EngineState>>) -> Vec<CatalogEntry> {
    super::catalog(&settings.get(), engine.model_path())
}

/// Fetches a catalogue model (the default without an id) into the Hugging Face cache (resuming a
/// partial download), then loads it in place of the current one. Progress arrives on `on_event`.
#[tauri::command(async)]
pub fn download_model(
    app: tauri::AppHandle,
    settings: State<'_, SettingsState>,
    engine: State<'_, Arc<EngineState>>,
    server: State<'_, ServerState>,
    download: State<'_, DownloadState>,
    id: Option<String>,
    on_event: Channel<DownloadEvent>,
) -> Result<ModelStatus, CommandError> {
    let model = match id {
        None => ponder_engine::catalog::default_model(),
        Some(id) => ponder_engine::catalog::find(&id)
            .ok_or_else(|| CommandError::coded("download.unknown_model", format!("no model named {id:?}"), &[("id", id)]))?,
    };
    struct Report {
        channel: Channel<DownloadEvent>,
        cancel: Arc<AtomicBool>,
        total: u64,
        done: u64,
        since: Instant,
        last_sent: Option<Instant>,
    }
    impl ponder_engine::download::Progress for Report {
        fn start(&mut self, total_bytes: u64) {
            self.total = total_bytes;
            self.done = 0;
            let _ = self.channel.send(DownloadEvent::Started { total_bytes });
        }
        fn cancelled(&self) -> bool {
            self.cancel.load(Ordering::Relaxed)
        }
        fn advance(&mut self, bytes: u64) {
            self.done += bytes;
            // A few updates a second are plenty for a progress bar.
            if self.last_sent.is_some_and(|t| t.elapsed().as_millis() < 200) {
                return;
            }
            self.last_sent = Some(Instant::now());
            let speed = self.done as f64 / self.since.elapsed().as_secs_f64().max(1e-3);
            let _ = self.channel.send(DownloadEvent::Progress {
                downloaded_bytes: self.done,
                total_bytes: self.total,
                bytes_per_second: speed,
            });
        }
        fn finish(&mut self) {}
    }
    let cancel = download.begin()?;
    let report = Report { channel: on_event.clone(), cancel, total: 0, done: 0, since: Instant::now(), last_sent: None };
    let outcome = ponder_engine::download::download(model, report);
    download.end();
    match outcome {
        Ok(path) => {
            let _ = on_event.send(DownloadEvent::Finished { path: path.display().to_string() });
            let info = ponder_engine::loader::inspect(&path)?;
            // Remembered once it has loaded, as a picked file is. The default model is found in
            // the cache without a setting.
            let remembered = (model.id != ponder_engine::catalog::default_model().id).then(|| path.clone());
            engine.load_then(path, &settings.get(), move || {
                use tauri::Manager;
                if let Err(e) = app.state::<SettingsState>().update(|s| s.model_path = remembered) {
                    tracing::error!("the downloaded model could not be remembered: {}", e.message);
                }
            });
            server.follow_model(engine.inner().clone());
            Ok(ModelStatus::Ready { info })
        }
        Err(e) => {
            let error = CommandError::from(e);
            let _ = on_event.send(DownloadEvent::Failed { error: error.clone() });
            Err(error)
        }
    }
}

/// Stops a running download; what has arrived is kept and the next download resumes from it.
#[tauri::command]
pub fn cancel_download(download: State<'_, DownloadState>) {
    download.cancel();
}
