//! An OpenAI-compatible HTTP server over the engine: `GET /v1/models`,
//! `POST /v1/chat/completions` (the thinking in `reasoning_content`, as DeepSeek's API does) and
//! `POST /v1/completions`, streamed over SSE or not. Concurrent requests share the engine's
//! batches; a client that goes away cancels its request.

mod error;
mod routes;

use ponder_engine::Engine;
use std::net::SocketAddr;
use std::sync::Arc;

pub use error::ApiError;

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub addr: SocketAddr,
    /// Required as `Authorization: Bearer KEY` when set.
    pub api_key: Option<String>,
    /// The id `/v1/models` reports and requests may name.
    pub model_name: String,
    /// Requests larger than this are refused with 413.
    pub max_body_bytes: usize,
    /// Requests waiting in the engine beyond this are refused with 503.
    pub max_waiting: usize,
    /// Requests being read or served at once; more are refused with 503 before their bodies
    /// are read.
    pub max_connections: usize,
}

impl ServerConfig {
    pub fn new(addr: SocketAddr, model_name: impl Into<String>) -> Self {
        Self {
            addr,
            api_key: None,
            model_name: model_name.into(),
            max_body_bytes: 4 << 20,
            max_waiting: 64,
            max_connections: 256,
        }
    }

    /// Binding beyond loopback exposes the model to the network: only with a key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.api_key.as_deref().is_some_and(|k| k.trim().is_empty()) {
            return Err(ConfigError::EmptyKey);
        }
        if !self.addr.ip().is_loopback() && self.api_key.is_none() {
            return Err(ConfigError::PublicWithoutKey(self.addr.ip()));
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("refusing to listen on {0} without --api-key (only loopback addresses may go without one)")]
    PublicWithoutKey(std::net::IpAddr),
    #[error("the API key is empty: give a key, or none on a loopback address")]
    EmptyKey,
}

pub(crate) struct AppState {
    pub engine: Arc<Engine>,
    pub config: ServerConfig,
    pub created: u64,
    /// One permit per request being read or served (`max_connections`).
    pub connections: Arc<tokio::sync::Semaphore>,
}

pub fn router(engine: Arc<Engine>, config: ServerConfig) -> axum::Router {
    let created = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let connections = Arc::new(tokio::sync::Semaphore::new(config.max_connections));
    routes::router(Arc::new(AppState { engine, config, created, connections }))
}

/// Serves until `shutdown` resolves.
pub async fn serve(
    engine: Arc<Engine>,
    config: ServerConfig,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    config.validate().map_err(|e| std::io::Error::new(std::io::ErrorKind::PermissionDenied, e))?;
    let listener = tokio::net::TcpListener::bind(config.addr).await?;
    serve_listener(listener, engine, config, shutdown).await
}

/// Serves on a socket the caller has bound (so it can report a bind error on its own terms).
pub async fn serve_listener(
    listener: tokio::net::TcpListener,
    engine: Arc<Engine>,
    config: ServerConfig,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    tracing::info!("listening on http://{}", listener.local_addr()?);
    axum::serve(listener, router(engine, config)).with_graceful_shutdown(shutdown).await
}

/// Serves on a runtime of its own until Ctrl-C or SIGTERM (for the CLI).
pub fn serve_blocking(engine: Arc<Engine>, config: ServerConfig) -> std::io::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build()?;
    rt.block_on(async move {
        let shutdown = async {
            #[cfg(unix)]
            {
                let mut term =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).expect("SIGTERM handler");
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            #[cfg(not(unix))]
            let _ = tokio::signal::ctrl_c().await;
        };
        serve(engine, config, shutdown).await
    })
}
