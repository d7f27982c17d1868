//! The opt-in local API server (the same one as `ponder serve`), started and stopped from the
//! settings. It listens on loopback only, so it needs no key.
pub mod commands;

use crate::core::engine::EngineState;
use crate::core::error::CommandError;
use serde::Serialize;
use std::net::{Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ServerStatus {
    #[default]
    Off,
    Starting {
        port: u16,
    },
    On {
        port: u16,
        url: String,
    },
    Failed {
        port: u16,
        error: CommandError,
    },
}

/// The server stopped for a reason of its own (not a taken port, which has its own code).
fn server_failed(e: impl std::fmt::Display) -> CommandError {
    CommandError::coded("server.failed", format!("the local API server stopped: {e}"), &[("detail", e.to_string())])
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
                Err(e) => return set(ServerStatus::Failed { port, error: server_failed(e) }),
            };
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            let listener = match tokio::net::TcpListener::bind(addr).await {
                Ok(l) => l,
                Err(e) => {
                    let params = [("address", addr.to_string()), ("detail", e.to_string())];
                    let error = CommandError::coded("server.cannot_listen", format!("cannot listen on {addr}: {e}"), &params);
                    return set(ServerStatus::Failed { port, error });
                }
            };
            set(ServerStatus::On { port, url: format!("http://{addr}/v1") });
            // The same model id as `ponder serve` gives: the file's name.
            let info = engine.info();
            let id = info.path.file_stem().map_or_else(|| info.name.clone(), |s| s.to_string_lossy().into_owned());
            let config = ponder_server::ServerConfig::new(addr, id);
            let stopped = async {
                let _ = rx.await;
            };
            if let Err(e) = ponder_server::serve_listener(listener, engine, config, stopped).await {
                set(ServerStatus::Failed { port, error: server_failed(e) });
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::settings::Settings;
    use crate::core::test_models::small_model;
    use std::io::{Read, Write};
    use std::time::{Duration, Instant};

    fn wait_for(state: &ServerState, what: &str, ok: impl Fn(&ServerStatus) -> bool) -> ServerStatus {
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let s = state.status();
            if ok(&s) {
                return s;
            }
            assert!(Instant::now() < deadline, "waiting for {what}: {s:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn get_models(port: u16) -> std::io::Result<String> {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
        write!(s, "GET /v1/models HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")?;
        let mut out = String::new();
        s.read_to_string(&mut out)?;
        Ok(out)
    }

    #[test]
    fn the_settings_switch_starts_and_stops_the_api_server() {
        ponder_testkit::threads();
        let engine = Arc::new(EngineState::default());
        engine.load(small_model(), &Settings { max_sequences: 2, context_size: 2048, ..Settings::default() });
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let server = ServerState::default();
        assert_eq!(server.status(), ServerStatus::Off);

        server.apply(true, port, engine.clone());
        let on = wait_for(&server, "the server", |s| matches!(s, ServerStatus::On { .. }));
        assert_eq!(on, ServerStatus::On { port, url: format!("http://127.0.0.1:{port}/v1") });
        let reply = get_models(port).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200") && reply.contains("qwen2.5-coder-0.5b"), "{reply}");

        // A port that is taken is reported, not a crash; switching off stops it.
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let taken_port = taken.local_addr().unwrap().port();
        server.apply(true, taken_port, engine.clone());
        let failed = wait_for(&server, "the bind error", |s| matches!(s, ServerStatus::Failed { .. }));
        assert!(matches!(&failed, ServerStatus::Failed { error, .. } if error.code == "server.cannot_listen"), "{failed:?}");
        wait_for(&server, "the old server to stop", |_| get_models(port).is_err());
        server.apply(false, taken_port, engine);
        assert_eq!(server.status(), ServerStatus::Off);
    }
}
