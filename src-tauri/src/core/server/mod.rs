//! The opt-in local API server (the same one as `ponder serve`), started and stopped from the
//! settings. It listens on loopback only; an API key is optional (the settings show it, for the
//! tools that will send it). It serves the model the app has loaded: a switch of model
//! restarts it on the new one, and the old model is let go.
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

/// How the user wants the server, when on.
#[derive(Debug, Clone, PartialEq)]
pub struct Wanted {
    pub port: u16,
    pub api_key: Option<String>,
}

impl Wanted {
    pub fn of(settings: &crate::core::settings::Settings) -> Option<Self> {
        settings.server_enabled.then(|| Self { port: settings.server_port, api_key: settings.server_api_key.clone() })
    }
}

struct Inner {
    status: ServerStatus,
    wanted: Option<Wanted>,
    /// Which start the status belongs to: a stopped or replaced server's task must not
    /// overwrite its successor's status.
    generation: u64,
    /// Dropping this stops the running server.
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

pub struct ServerState(Arc<Mutex<Inner>>);

impl Default for ServerState {
    fn default() -> Self {
        Self(Arc::new(Mutex::new(Inner { status: ServerStatus::Off, wanted: None, generation: 0, stop: None })))
    }
}

impl ServerState {
    pub fn status(&self) -> ServerStatus {
        self.0.lock().unwrap().status.clone()
    }

    /// Brings the server in line with the settings: off, or on at a port with an optional key.
    /// A server that failed (say, the port was taken) is tried again.
    pub fn apply(&self, wanted: Option<Wanted>, engine: Arc<EngineState>) {
        let inner = self.0.lock().unwrap();
        if wanted == inner.wanted && !matches!(inner.status, ServerStatus::Failed { .. }) {
            return;
        }
        self.start(inner, wanted, engine);
    }

    /// The app switched models: a running server starts again on the new one (once it has
    /// loaded), so that it never serves, or keeps in memory, the model the app let go.
    pub fn follow_model(&self, engine: Arc<EngineState>) {
        let inner = self.0.lock().unwrap();
        if let Some(wanted) = inner.wanted.clone() {
            self.start(inner, Some(wanted), engine);
        }
    }

    fn start(&self, mut inner: std::sync::MutexGuard<'_, Inner>, wanted: Option<Wanted>, engine: Arc<EngineState>) {
        inner.stop = None;
        inner.generation += 1;
        inner.status = ServerStatus::Off;
        inner.wanted = wanted.clone();
        let Some(Wanted { port, api_key }) = wanted else { return };
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
            let listener = match bind(addr).await {
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
            let config = ponder_server::ServerConfig { api_key, ..ponder_server::ServerConfig::new(addr, id) };
            let stopped = async {
                let _ = rx.await;
            };
            if let Err(e) = ponder_server::serve_listener(listener, engine, config, stopped).await {
                set(ServerStatus::Failed { port, error: server_failed(e) });
            }
        });
    }
}

/// Binds the port, waiting a moment while a server this one replaces lets go of it.
async fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let mut tries = 0;
    loop {
        match tokio::net::TcpListener::bind(addr).await {
            Err(e) if e.kind() == std::io::ErrorKind::AddrInUse && tries < 20 => {
                tries += 1;
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::settings::Settings;
    use crate::core::test_models::{r1_model, small_model};
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
        get_models_with(port, None)
    }

    #[test]
    fn the_settings_switch_starts_and_stops_the_api_server() {
        ponder_testkit::threads();
        let engine = Arc::new(EngineState::default());
        engine.load(small_model(), &Settings { max_sequences: 2, context_size: 2048, ..Settings::default() });
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let server = ServerState::default();
        assert_eq!(server.status(), ServerStatus::Off);

        server.apply(Some(Wanted { port, api_key: None }), engine.clone());
        let on = wait_for(&server, "the server", |s| matches!(s, ServerStatus::On { .. }));
        assert_eq!(on, ServerStatus::On { port, url: format!("http://127.0.0.1:{port}/v1") });
        let reply = get_models(port).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200") && reply.contains("qwen2.5-coder-0.5b"), "{reply}");

        // A port that is taken is reported, not a crash; switching off stops it.
        let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let taken_port = taken.local_addr().unwrap().port();
        server.apply(Some(Wanted { port: taken_port, api_key: None }), engine.clone());
        let failed = wait_for(&server, "the bind error", |s| matches!(s, ServerStatus::Failed { .. }));
        assert!(matches!(&failed, ServerStatus::Failed { error, .. } if error.code == "server.cannot_listen"), "{failed:?}");
        wait_for(&server, "the old server to stop", |_| get_models(port).is_err());
        server.apply(None, engine);
        assert_eq!(server.status(), ServerStatus::Off);
    }

    fn get_models_with(port: u16, key: Option<&str>) -> std::io::Result<String> {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port))?;
        let auth = key.map(|k| format!("Authorization: Bearer {k}\r\n")).unwrap_or_default();
        write!(s, "GET /v1/models HTTP/1.1\r\nHost: localhost\r\n{auth}Connection: close\r\n\r\n")?;
        let mut out = String::new();
        s.read_to_string(&mut out)?;
        Ok(out)
    }

    #[test]
    fn the_server_asks_for_its_key_and_follows_a_model_switch() {
        ponder_testkit::threads();
        let settings = Settings { max_sequences: 2, context_size: 2048, ..Settings::default() };
        let engine = Arc::new(EngineState::default());
        engine.load(small_model(), &settings);
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let server = ServerState::default();
        server.apply(Some(Wanted { port, api_key: Some("sesame".into()) }), engine.clone());
        wait_for(&server, "the server", |s| matches!(s, ServerStatus::On { .. }));
        assert!(get_models_with(port, None).unwrap().starts_with("HTTP/1.1 401"));
        let reply = get_models_with(port, Some("sesame")).unwrap();
        assert!(reply.starts_with("HTTP/1.1 200") && reply.contains("qwen2.5-coder-0.5b"), "{reply}");

        // Another model: the server serves it (under its name) once it has loaded.
        engine.load(r1_model(), &settings);
        server.follow_model(engine.clone());
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            // While the old server stops, a connection may be refused or reset: try again.
            let reply = get_models_with(port, Some("sesame")).ok();
            if reply.as_deref().is_some_and(|r| r.contains("r1-0.5b")) {
                break;
            }
            assert!(Instant::now() < deadline, "the server still serves the old model: {reply:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
        server.apply(None, engine);
    }
}
