//! The opt-in local API server (the same one as `ponder serve`), started and stopped from the
//! settings. It listens on loopback only, so it needs no key.
pub mod commands;

use crate::core::engine::EngineState;
use serde::Serialize;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ServerStatus {
    #[default]
    Off,
    Starting { port: u16 },
    On { port: u16, url: String },
    Failed { port: u16, error: String },
}

impl ServerStatus {
    fn port(&self) -> Option<u16> {
        match self {
            ServerStatus::Off => None,
            ServerStatus::Starting { port } | ServerStatus::On { port, .. } | ServerStatus::Failed { port, .. } => Some(*port),
        }
    }
}

struct Inner {
    status: ServerStatus,
    /// Which start the status belongs to: a stopped or replaced server's task must not
    /// overwrite its successor's status.
    generation: u64,
    /// Dropping this stops the running server.
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

pub struct ServerState(Arc<Mutex<Inner>>);

impl Default for ServerState {
    fn default() -> Self {
        Self(Arc::new(Mutex::new(Inner { status: ServerStatus::Off, generation: 0, stop: None })))
    }
}

impl ServerState {
    pub fn status(&self) -> ServerStatus {
        self.0.lock().unwrap().status.clone()
    }

    /// Brings the server in line with the settings: off, or on at `port`. A server that failed
    /// (say, the port was taken) is tried again.
    pub fn apply(&self, enabled: bool, port: u16, engine: Arc<EngineState>) {
        let wanted = enabled.then_some(port);
        let mut inner = self.0.lock().unwrap();
        if wanted == inner.status.port() && !matches!(inner.status, ServerStatus::Failed { .. }) {
            return;
        }
        inner.stop = None;
        inner.generation += 1;
        inner.status = ServerStatus::Off;
        let Some(port) = wanted else { return };
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        inner.stop = Some(tx);
        inner.status = ServerStatus::Starting { port };
        let generation = inner.generation;
        drop(inner);

        let shared = self.0.clone();
        let set = move |status: ServerStatus| {
            let mut inner = shared.lock().unwrap();
            if inner.generation == generation {
                inner.status = status;
            }
        };
        tauri::async_runtime::spawn(async move {
            let engine = match tauri::async_runtime::spawn_blocking(move || engine.wait()).await {
                Ok(Ok(engine)) => engine,
                Ok(Err(error)) => return set(ServerStatus::Failed { port, error }),
                Err(e) => return set(ServerStatus::Failed { port, error: e.to_string() }),
            };
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            let listener = match tokio::net::TcpListener::bind(addr).await {
                Ok(l) => l,
                Err(e) => return set(ServerStatus::Failed { port, error: format!("cannot listen on {addr}: {e}") }),
            };
            set(ServerStatus::On { port, url: format!("http://{addr}/v1") });
            let config = ponder_server::ServerConfig::new(addr, engine.info().name.clone());
            let stopped = async {
                let _ = rx.await;
            };
            if let Err(e) = ponder_server::serve_listener(listener, engine, config, stopped).await {
                set(ServerStatus::Failed { port, error: e.to_string() });
            }
        });
    }
}
