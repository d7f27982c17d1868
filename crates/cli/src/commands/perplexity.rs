use anyhow::{Context, Result};
use ponder_engine::perplexity::{self, PerplexityOptions};
use ponder_engine::{load, KvCacheType, LoadOptions};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// A UTF-8 text file (e.g. wikitext-2's test set), scored as llama.cpp's llama-perplexity
    /// scores it.
    file: PathBuf,
    /// Tokens per chunk; the second half of each is scored.
    #[arg(long, default_value_t = 512)]
    context: usize,
    /// Score at most this many chunks.
    #[arg(long)]
    chunks: Option<usize>,
    /// Print one JSON object instead of a line.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args, model: Option<PathBuf>, kv_cache: KvCacheType) -> Result<()> {
    let path = crate::model_arg::resolve(model)?;
    let text = std::fs::read_to_string(&args.file).with_context(|| format!("{}", args.file.display()))?;
    let loaded = load(&path, &LoadOptions::default())?;
    let opts = PerplexityOptions { context: args.context, max_chunks: args.chunks, kv_cache };
    let report = perplexity::perplexity(&loaded, &text, &opts, |c, n, ppl| eprintln!("perplexity: chunk {c}/{n}: {ppl:.4}"))
        .with_context(|| format!("{}", args.file.display()))?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "PPL = {:.4} +/- {:.5} ({} chunks of {} tokens, {} tokens scored, {} cache)",
            report.perplexity, report.std_error, report.chunks, report.context, report.scored_tokens, report.kv_cache
        );
    }
    Ok(())
}
