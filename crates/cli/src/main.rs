//! `ponder`: Ponder from a terminal. Each subcommand is a thin front over the engine and jobs
//! crates; errors are one clear line and an exit code, never a backtrace.

mod commands;
mod config;
mod model_arg;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "ponder", version, about = "Offline logic and maths reasoning on your CPU")]
struct Cli {
    /// Model to use: a GGUF file or a Hugging Face model folder (default: the downloaded
    /// default model).
    #[arg(long, global = true, env = "PONDER_MODEL")]
    model: Option<std::path::PathBuf>,
    /// CPU threads for inference (default: all cores).
    #[arg(long, global = true)]
    threads: Option<usize>,
    /// How the KV cache stores keys and values: f16, or q8_0 (8-bit blocks, 47 % less memory).
    #[arg(long, global = true, env = "PONDER_KV_CACHE")]
    kv_cache: Option<ponder_engine::KvCacheType>,
    /// A small model with the same vocabulary that drafts tokens for a lone chat (a GGUF file
    /// or a downloaded model's name). It pays when it is several times cheaper than --model,
    /// e.g. a 1.5B drafting for a 7B.
    #[arg(long, global = true, env = "PONDER_DRAFT_MODEL")]
    draft_model: Option<std::path::PathBuf>,
    /// Settings file (default: config.toml in the platform config directory, e.g.
    /// ~/.config/ponder/config.toml).
    #[arg(long, global = true, env = "PONDER_CONFIG")]
    config: Option<std::path::PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Ask one question and stream the thinking and the answer.
    Chat(commands::chat::Args),
    /// Measure the engine's speed on a model.
    Bench(commands::bench::Args),
    /// A model's perplexity on a text file, comparable with llama.cpp's llama-perplexity.
    Perplexity(commands::perplexity::Args),
    /// Answer a file of questions (and validate its answer key, if it has one).
    Run(commands::run::Args),
    /// Show what a question file holds, as the app's preview does (no model needed).
    Preview(commands::preview::Args),
    /// Serve an OpenAI-compatible API on this computer.
    Serve(commands::serve::Args),
    /// Compare a key and an answer the way job verdicts do.
    Check(commands::check::Args),
    /// The model cache: list, download the default model, show paths.
    #[command(subcommand)]
    Models(commands::models::Cmd),
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("PONDER_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    let mut cli = Cli::parse();
    let config = match config::load(cli.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ponder: {e:#}");
            std::process::exit(2);
        }
    };
    cli.model = cli.model.or(config.model.clone());
    let threads = cli.threads.or(config.threads).unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let kv = cli.kv_cache.or(config.kv_cache).unwrap_or_default();
    let local = model_arg::EngineArgs { kv_cache: kv, draft_model: cli.draft_model.or(config.draft_model.clone()) };
    ponder_engine::process::set_threads(threads);
    ponder_engine::process::keep_freed_step_buffers();
    let result = match cli.command {
        Command::Chat(args) => commands::chat::run(args, cli.model, &local).map(|_| 0),
        Command::Bench(args) => commands::bench::run(args, cli.model, threads, &local).map(|_| 0),
        Command::Perplexity(args) => commands::perplexity::run(args, cli.model, kv).map(|_| 0),
        Command::Models(cmd) => commands::models::run(cmd, cli.model).map(|_| 0),
        Command::Check(args) => commands::check::run(args),
        Command::Preview(args) => commands::preview::run(args).map(|_| 0),
        Command::Serve(args) => commands::serve::run(args, &config.serve, cli.model, &local).map(|_| 0),
        Command::Run(args) => {
            // Ctrl-C pauses the job: what finished is saved, and a rerun resumes.
            let control = ponder_jobs::runner::JobControl::default();
            let c = control.clone();
            let _ = ctrlc::set_handler(move || c.pause());
            commands::run::run(args, cli.model, &local, control)
        }
    };
    match result {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("ponder: {e:#}");
            std::process::exit(2);
        }
    }
}
