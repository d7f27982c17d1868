use anyhow::Result;
use ponder_engine::bench::{self, BenchOptions};
use ponder_engine::KQuantKernels;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
    /// Repetitions of each measurement; figures are medians.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Tokens generated in the single-stream measurement.
    #[arg(long, default_value_t = 128)]
    decode_tokens: usize,
    /// Prompt tokens in the prefill measurement.
    #[arg(long, default_value_t = 512)]
    prefill_tokens: usize,
    /// Concurrent sequences for the aggregate measurement (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16")]
    batch: Vec<usize>,
    /// Which code multiplies K-quant weights: Ponder's, or candle's (the baseline).
    #[arg(long, value_enum, default_value_t = Kernels::Ponder)]
    kernels: Kernels,
    /// Tokens in each of the 8 contexts held at the end, for the memory figure (0 skips it).
    #[arg(long, default_value_t = 4096)]
    memory_context: usize,
    /// Context depths at which single-stream decode is measured again (comma-separated; 0 skips).
    #[arg(long, value_delimiter = ',', default_value = "4096,8192")]
    depths: Vec<usize>,
    /// Tokens a word problem's answer may run to, timed with and without speculative
    /// decoding (0 skips it).
    #[arg(long, default_value_t = 512)]
    speculative_tokens: usize,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Kernels {
    Ponder,
    Candle,
}

pub fn run(args: Args, model: Option<PathBuf>, threads: usize, local: &crate::model_arg::EngineArgs) -> Result<()> {
    let path = crate::model_arg::resolve(model)?;
    let opts = BenchOptions {
        runs: args.runs.max(1),
        decode_tokens: args.decode_tokens,
        prefill_tokens: args.prefill_tokens.max(1),
        batch_sizes: args.batch,
        kernels: match args.kernels {
            Kernels::Candle => KQuantKernels::Candle,
            Kernels::Ponder => KQuantKernels::Ponder,
        },
        memory_context: args.memory_context,
        depths: args.depths.into_iter().filter(|&d| d > 0).collect(),
        kv_cache: local.kv_cache,
        speculative_tokens: args.speculative_tokens,
        draft_model: local.draft_model.clone().map(|m| crate::model_arg::resolve(Some(m))).transpose()?,
    };
    let report = bench::run(&path, threads, &opts, |stage| eprintln!("bench: {stage}"))?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    println!("model           {} ({} threads, medians of {} runs)", report.model, report.threads, report.runs);
    println!("K-quant kernels {}", report.kernels);
    println!("KV cache        {}", report.kv_cache);
    println!("load            {:.2} s", report.load_s);
    println!("single decode   {:.1} tok/s", report.single_decode_tok_s);
    for p in &report.decode_at_depth {
        println!("decode at {:<5} {:.1} tok/s ({:.2}x short)", p.depth, p.tok_s, p.ratio_to_short);
    }
    if let Some(p) = &report.speculative {
        println!(
            "speculative     {:.1} tok/s against {:.1} plain ({:.2}x), {:.0} % of {:.2} drafts per token taken ({} tokens)",
            p.speculative_tok_s,
            p.plain_tok_s,
            p.speedup,
            100.0 * p.acceptance_rate,
            p.drafted_per_token,
            p.tokens
        );
        if let Some(name) = &p.draft_model {
            println!("draft model     {name}");
        }
    }
    println!("prefill         {:.1} tok/s", report.prefill_tok_s);
    for p in &report.aggregate {
        println!(
            "aggregate x{:<3}  {:.1} tok/s while all decode, {:.1} over the whole run",
            p.sequences, p.tok_s, p.whole_run_tok_s
        );
    }
    println!("chat TTFT, load {:.2} s", report.chat_ttft_under_load_s);
    println!(
        "peak RSS        {:.2} GiB (8 contexts of {} tokens)",
        report.peak_rss_bytes as f64 / (1u64 << 30) as f64,
        report.memory_context_tokens
    );
    Ok(())
}
