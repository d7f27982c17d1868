use anyhow::Result;
use ponder_engine::Engine;
use ponder_server::ServerConfig;
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

#[derive(clap::Args)]
pub struct Args {
    /// Address to listen on (default 127.0.0.1); anything but loopback needs --api-key.
    #[arg(long)]
    host: Option<IpAddr>,
    /// Port (default 8080).
    #[arg(long)]
    port: Option<u16>,
    /// Require `Authorization: Bearer KEY`.
    #[arg(long, env = "PONDER_API_KEY")]
    api_key: Option<String>,
    /// Sequences generated at once.
    #[arg(long, default_value_t = 8)]
    max_seqs: usize,
    /// Requests that may wait for a slot; more are refused with 503.
    #[arg(long, default_value_t = 64)]
    max_waiting: usize,
    /// Context length to allocate for (tokens).
    #[arg(long, default_value_t = 8192)]
    context: usize,
}

pub fn run(
    args: Args,
    defaults: &crate::config::ServeConfig,
    model: Option<PathBuf>,
    local: &crate::model_arg::EngineArgs,
) -> Result<()> {
    let host = args.host.or(defaults.host).unwrap_or(IpAddr::from([127, 0, 0, 1]));
    let port = args.port.or(defaults.port).unwrap_or(8080);
    let mut config = ServerConfig::new(SocketAddr::new(host, port), "");
    config.api_key = args.api_key.or_else(|| defaults.api_key.clone());
    config.max_waiting = args.max_waiting;
    config.validate()?;
    let path = crate::model_arg::resolve(model)?;
    let loaded = crate::model_arg::load(&path, args.context)?;
    config.model_name = path.file_stem().unwrap_or_default().to_string_lossy().into_owned();
    let engine = Arc::new(Engine::start(loaded, local.config(args.max_seqs, args.context)?)?);
    eprintln!("ponder: serving {} on http://{}/v1", config.model_name, config.addr);
    ponder_server::serve_blocking(engine, config)?;
    Ok(())
}
