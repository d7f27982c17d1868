//! The app's one engine. Loading a model takes seconds, so it happens on a thread of its own
//! while the window is already up; commands that need the engine wait for it.
pub mod commands;

use crate::core::error::CommandError;
use crate::core::settings::Settings;
use ponder_engine::{DraftModel, Engine, EngineConfig, EngineStats, LoadOptions, LoadProgress, LoadedModel, ModelInfo};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};

enum Slot {
    Empty,
    /// With how far the weights have got, once the loader has said.
    Loading(PathBuf, Option<LoadProgress>),
    Ready(Arc<Engine>),
    Failed {
        path: PathBuf,
        error: CommandError,
    },
}

/// What the status bar shows.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum EngineStatus {
    Empty,
    Loading { path: String, progress: Option<LoadProgress> },
    Ready { model: ModelInfo, stats: EngineStats },
    Failed { path: String, error: CommandError },
}

pub struct EngineState {
    slot: Mutex<Slot>,
    changed: Condvar,
    /// A file that names the model while it loads, so that a load that takes the process down
    /// (an abort, the out-of-memory killer) is known at the next launch.
    marker: Option<PathBuf>,
}

impl Default for EngineState {
    fn default() -> Self {
        Self { slot: Mutex::new(Slot::Empty), changed: Condvar::new(), marker: None }
    }
}

impl EngineState {
    /// An engine whose loads leave `marker` behind while they run.
    pub fn with_load_marker(marker: PathBuf) -> Self {
        Self { marker: Some(marker), ..Self::default() }
    }

    /// The model the previous run was loading when it ended, if its load never finished; the
    /// marker is cleared, so this is told once.
    pub fn take_crashed_load(&self) -> Option<PathBuf> {
        let marker = self.marker.as_ref()?;
        let path = std::fs::read_to_string(marker).ok()?;
        let _ = std::fs::remove_file(marker);
        Some(PathBuf::from(path))
    }

    /// Shows the model as not loaded because loading it ended the previous run.
    pub fn skip_crashed(&self, path: PathBuf) {
        let shown = path.display().to_string();
        let error = CommandError::coded(
            "engine.crashed_loading",
            format!("Ponder closed while loading {shown} last time, so it was not loaded again; open it to try again, or choose another model"),
            &[("path", shown)],
        );
        *self.slot.lock().unwrap() = Slot::Failed { path, error };
        self.changed.notify_all();
    }

    /// Starts loading `path` in the background unless that model is loaded or loading already.
    /// The running engine (if any) is replaced once the new one is ready.
    pub fn load(self: &Arc<Self>, path: PathBuf, settings: &Settings) {
        self.load_then(path, settings, || {});
    }

    /// [`EngineState::load`], then `on_ready` once the model has loaded (to remember it only
    /// then: a model that fails or crashes is never the one the next launch opens).
    pub fn load_then(self: &Arc<Self>, path: PathBuf, settings: &Settings, on_ready: impl FnOnce() + Send + 'static) {
        {
            let mut slot = self.slot.lock().unwrap();
            match &*slot {
                Slot::Loading(p, _) if *p == path => return,
                Slot::Ready(e) if e.info().path == path => return,
                _ => {}
            }
            *slot = Slot::Loading(path.clone(), None);
        }
        let this = self.clone();
        let config = EngineConfig { max_seqs: settings.max_sequences, kv_cache: settings.kv_cache, ..EngineConfig::default() };
        let draft = settings.draft_model_path.clone();
        // The status bar's progress line; a newer load's slot is left alone.
        let (weak, loading) = (Arc::downgrade(self), path.clone());
        let on_progress: ponder_engine::ProgressFn = Arc::new(move |progress| {
            let Some(this) = weak.upgrade() else { return };
            let mut slot = this.slot.lock().unwrap();
            if let Slot::Loading(p, shown) = &mut *slot {
                if *p == loading {
                    *shown = Some(progress);
                }
            }
        });
        let options =
            LoadOptions { max_context: Some(settings.context_size), on_progress: Some(on_progress), ..Default::default() };
        std::thread::Builder::new()
            .name("ponder-load".into())
            .spawn(move || {
                tracing::info!("loading {}", path.display());
                if let Some(marker) = &this.marker {
                    let _ = std::fs::write(marker, path.display().to_string());
                }
                // A panic while loading is this model's error, not the app's end.
                // (Asserted: a panic drops the half-loaded model, and the progress callback
                // only ever sets a value under the slot's lock.)
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    ponder_engine::load(&path, &options).and_then(|m| {
                        let config = with_draft(config, &m, draft.as_deref(), &options);
                        Engine::start(m, config)
                    })
                }));
                if let Some(marker) = &this.marker {
                    let _ = std::fs::remove_file(marker);
                }
                let result: Result<Engine, CommandError> = match result {
                    Ok(loaded) => loaded.map_err(CommandError::from),
                    Err(panic) => {
                        let detail = ponder_engine::panic_message(&*panic);
                        let message = format!("loading {} failed inside the engine: {detail}", path.display());
                        Err(CommandError::coded(
                            "engine.load_panicked",
                            message,
                            &[("path", path.display().to_string()), ("detail", detail)],
                        ))
                    }
                };
                let mut slot = this.slot.lock().unwrap();
                // A newer load request wins over this one.
                if matches!(&*slot, Slot::Loading(p, _) if *p == path) {
                    let ready = result.is_ok();
                    *slot = match result {
                        Ok(engine) => Slot::Ready(Arc::new(engine)),
                        Err(error) => {
                            tracing::error!("{}: {}", path.display(), error.message);
                            Slot::Failed { path, error }
                        }
                    };
                    this.changed.notify_all();
                    drop(slot);
                    if ready {
                        on_ready();
                    }
                }
            })
            .expect("spawning the model loader thread");
    }

    /// The engine, waiting for a load in progress to end.
    pub fn wait(&self) -> Result<Arc<Engine>, CommandError> {
        let mut slot = self.slot.lock().unwrap();
        loop {
            match &*slot {
                Slot::Loading(..) => slot = self.changed.wait(slot).unwrap(),
                Slot::Ready(engine) => return Ok(engine.clone()),
                Slot::Empty => return Err(CommandError::coded("engine.no_model", "no model is loaded", &[])),
                Slot::Failed { error, .. } => return Err(error.clone()),
            }
        }
    }

    /// The model loaded or being loaded, if any.
    pub fn model_path(&self) -> Option<PathBuf> {
        match &*self.slot.lock().unwrap() {
            Slot::Empty | Slot::Failed { .. } => None,
            Slot::Loading(p, _) => Some(p.clone()),
            Slot::Ready(e) => Some(e.info().path.clone()),
        }
    }

    pub fn status(&self) -> EngineStatus {
        match &*self.slot.lock().unwrap() {
            Slot::Empty => EngineStatus::Empty,
            Slot::Loading(p, progress) => EngineStatus::Loading { path: p.display().to_string(), progress: *progress },
            Slot::Ready(e) => EngineStatus::Ready { model: e.info().clone(), stats: e.stats() },
            Slot::Failed { path, error } => EngineStatus::Failed { path: path.display().to_string(), error: error.clone() },
        }
    }
}

/// `config` with the draft model the settings name, where it loads and can draft for `model`.
/// A draft model only ever saves time, so one that cannot draft is left out with a warning
/// rather than failing the load.
fn with_draft(config: EngineConfig, model: &LoadedModel, draft: Option<&Path>, options: &LoadOptions) -> EngineConfig {
    let Some(path) = draft else { return config };
    let options = LoadOptions { on_progress: None, ..options.clone() };
    let draft = ponder_engine::load(path, &options).and_then(|d| {
        let d = DraftModel::new(d);
        d.check_vocabulary(&model.tokenizer)?;
        Ok(d)
    });
    match draft {
        Ok(d) => EngineConfig { draft: Some(d), ..config },
        Err(e) => {
            tracing::warn!("draft model {}: {e}; chats guess from the text alone", path.display());
            config
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::test_models::small_model;
    use std::sync::atomic::{AtomicBool, Ordering};

    fn wait_settled(engine: &EngineState) -> EngineStatus {
        let _ = engine.wait();
        engine.status()
    }

    #[test]
    fn a_load_that_ended_the_last_run_is_told_once_and_not_repeated() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("loading-model");
        // What a run that died while loading leaves behind.
        std::fs::write(&marker, "/models/crashes.gguf").unwrap();
        let engine = EngineState::with_load_marker(marker.clone());
        assert_eq!(engine.take_crashed_load(), Some(PathBuf::from("/models/crashes.gguf")));
        assert!(!marker.exists());
        assert_eq!(engine.take_crashed_load(), None);
        engine.skip_crashed(PathBuf::from("/models/crashes.gguf"));
        match engine.status() {
            EngineStatus::Failed { error, .. } => assert_eq!(error.code, "engine.crashed_loading"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_model_is_remembered_only_once_it_has_loaded_and_the_marker_goes_either_way() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("loading-model");
        let settings = Settings { max_sequences: 1, context_size: 512, ..Settings::default() };
        let engine = Arc::new(EngineState::with_load_marker(marker.clone()));
        let remembered = Arc::new(AtomicBool::new(false));
        let r = remembered.clone();
        engine.load_then(dir.path().join("missing.gguf"), &settings, move || r.store(true, Ordering::SeqCst));
        assert!(matches!(wait_settled(&engine), EngineStatus::Failed { .. }));
        assert!(!remembered.load(Ordering::SeqCst), "a model that failed is not remembered");
        assert!(!marker.exists());
        let r = remembered.clone();
        engine.load_then(small_model(), &settings, move || r.store(true, Ordering::SeqCst));
        assert!(matches!(wait_settled(&engine), EngineStatus::Ready { .. }));
        // on_ready runs just after the slot is set.
        for _ in 0..100 {
            if remembered.load(Ordering::SeqCst) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(remembered.load(Ordering::SeqCst));
        assert!(!marker.exists());
    }

    #[test]
    fn while_a_model_loads_the_status_says_how_far_its_weights_have_got() {
        let settings = Settings { max_sequences: 1, context_size: 512, ..Settings::default() };
        let engine = Arc::new(EngineState::default());
        engine.load(small_model(), &settings);
        let mut seen = Vec::new();
        while let EngineStatus::Loading { progress, .. } = engine.status() {
            seen.extend(progress.map(|p| (p.done_bytes, p.total_bytes)));
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
        assert!(matches!(engine.status(), EngineStatus::Ready { .. }));
        // The load takes about a second; tensors arrive every few milliseconds.
        let partway = seen.iter().filter(|(done, total)| 0 < *done && done < total).count();
        assert!(partway >= 3, "{seen:?}");
        assert!(seen.windows(2).all(|w| w[0].0 <= w[1].0), "{seen:?}");
    }

    #[test]
    fn the_settings_draft_model_drafts_and_one_that_cannot_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let base = Settings { max_sequences: 1, context_size: 512, ..Settings::default() };
        for (draft, drafts) in [(small_model(), true), (dir.path().join("missing.gguf"), false)] {
            let engine = Arc::new(EngineState::default());
            engine.load(small_model(), &Settings { draft_model_path: Some(draft.clone()), ..base.clone() });
            let e = engine.wait().unwrap_or_else(|e| panic!("{}: {}", draft.display(), e.message));
            assert_eq!(e.draft_model().is_some(), drafts, "{}", draft.display());
        }
    }
}
