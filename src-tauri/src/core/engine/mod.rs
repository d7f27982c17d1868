//! The app's one engine. Loading a model takes seconds, so it happens on a thread of its own
//! while the window is already up; commands that need the engine wait for it.
pub mod commands;

use crate::core::error::CommandError;
use crate::core::settings::Settings;
use ponder_engine::{Engine, EngineConfig, EngineStats, LoadOptions, ModelInfo};
use serde::Serialize;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};

enum Slot {
    Empty,
    Loading(PathBuf),
    Ready(Arc<Engine>),
    Failed { path: PathBuf, error: CommandError },
}

/// What the status bar shows.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum EngineStatus {
    Empty,
    Loading { path: String },
    Ready { model: ModelInfo, stats: EngineStats },
    Failed { path: String, error: CommandError },
}

pub struct EngineState {
    slot: Mutex<Slot>,
    changed: Condvar,
}

impl Default for EngineState {
    fn default() -> Self {
        Self { slot: Mutex::new(Slot::Empty), changed: Condvar::new() }
    }
}

impl EngineState {
    /// Starts loading `path` in the background unless that model is loaded or loading already.
    /// The running engine (if any) is replaced once the new one is ready.
    pub fn load(self: &Arc<Self>, path: PathBuf, settings: &Settings) {
        {
            let mut slot = self.slot.lock().unwrap();
            match &*slot {
                Slot::Loading(p) if *p == path => return,
                Slot::Ready(e) if e.info().path == path => return,
                _ => {}
            }
            *slot = Slot::Loading(path.clone());
        }
        let this = self.clone();
        let config = EngineConfig { max_seqs: settings.max_sequences, ..EngineConfig::default() };
        let options = LoadOptions { max_context: Some(settings.context_size), ..Default::default() };
        std::thread::Builder::new()
            .name("ponder-load".into())
            .spawn(move || {
                tracing::info!("loading {}", path.display());
                let result = ponder_engine::load(&path, &options).and_then(|m| Engine::start(m, config));
                let mut slot = this.slot.lock().unwrap();
                // A newer load request wins over this one.
                if matches!(&*slot, Slot::Loading(p) if *p == path) {
                    *slot = match result {
                        Ok(engine) => Slot::Ready(Arc::new(engine)),
                        Err(e) => {
                            tracing::error!("{}: {e}", path.display());
                            Slot::Failed { path, error: e.into() }
                        }
                    };
                    this.changed.notify_all();
                }
            })
            .expect("spawning the model loader thread");
    }

    /// The engine, waiting for a load in progress to end.
    pub fn wait(&self) -> Result<Arc<Engine>, CommandError> {
        let mut slot = self.slot.lock().unwrap();
        loop {
            match &*slot {
                Slot::Loading(_) => slot = self.changed.wait(slot).unwrap(),
                Slot::Ready(engine) => return Ok(engine.clone()),
                Slot::Empty => return Err(CommandError::coded("engine.no_model", "no model is loaded", &[])),
                Slot::Failed { error, .. } => return Err(error.clone()),
            }
        }
    }

    pub fn status(&self) -> EngineStatus {
        match &*self.slot.lock().unwrap() {
            Slot::Empty => EngineStatus::Empty,
            Slot::Loading(p) => EngineStatus::Loading { path: p.display().to_string() },
            Slot::Ready(e) => EngineStatus::Ready { model: e.info().clone(), stats: e.stats() },
            Slot::Failed { path, error } => EngineStatus::Failed { path: path.display().to_string(), error: error.clone() },
        }
    }
}
