use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use ponder_engine::Engine;
use ponder_jobs::backend::{Backend, LocalBackend};
use ponder_jobs::remote::{RemoteBackend, RemoteConfig};
use ponder_jobs::report::{self, ExportFormat};
use ponder_jobs::runner::{run_job, JobControl, JobEvent};
use ponder_jobs::{JobOptions, JobState, Store};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// A file of questions: .txt, .md, .csv, .tsv, .jsonl, .json or .xlsx.
    file: PathBuf,
    /// Results file: .jsonl, .csv or .md (default: FILE's name with .results.jsonl). With an
    /// answer key, the report goes beside it as FILE's name with .report.md.
    #[arg(short, long)]
    output: Option<PathBuf>,
    /// Samples per problem. Alone, a fixed count; with --max-samples, the first round
    /// (default: 2 with an answer key, within a budget of 8; 1 without a key).
    #[arg(long)]
    samples: Option<usize>,
    /// A sample budget: each problem starts with --samples and draws two more at a time, up to
    /// this many, while its verdict is unsure; samples that agree stop early (default: 8 with
    /// an answer key, unless --samples is given alone).
    #[arg(long, value_name = "N")]
    max_samples: Option<usize>,
    #[arg(long, default_value_t = ponder_engine::DEFAULT_MAX_TOKENS)]
    max_tokens: usize,
    /// Close each thought after this many thinking tokens.
    #[arg(long)]
    think_budget: Option<usize>,
    /// Turn the model's thinking on or off, where its template allows (Qwen3).
    #[arg(long, value_enum)]
    think: Option<super::Think>,
    /// Sequences generated at once (on a remote server: requests in flight).
    #[arg(long, default_value_t = 8)]
    concurrency: usize,
    #[arg(long, default_value_t = ponder_engine::SamplingParams::default().temperature)]
    temperature: f32,
    #[arg(long)]
    seed: Option<u64>,
    /// The job database (default: jobs.sqlite in Ponder's data folder).
    #[arg(long, env = "PONDER_JOBS_DB")]
    store: Option<PathBuf>,
    /// Run on a remote OpenAI-compatible server instead of this computer: its API root, e.g.
    /// http://gpu-box:8000/v1 (vLLM, llama.cpp, Ollama, another `ponder serve`).
    #[arg(long, value_name = "URL")]
    remote: Option<String>,
    /// The remote model's name (default: the server's first model).
    #[arg(long, value_name = "NAME", requires = "remote")]
    remote_model: Option<String>,
    /// The remote server's API key.
    #[arg(long, env = "PONDER_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
}

fn data_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("PONDER_DATA_DIR") {
        return PathBuf::from(d);
    }
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".local/share"));
    base.join("ponder")
}

/// FNV-1a: a stable fingerprint of the file, so a rerun finds its unfinished job.
fn fingerprint(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

pub fn run(args: Args, model: Option<PathBuf>, local: &crate::model_arg::EngineArgs, interrupted: JobControl) -> Result<i32> {
    let preview = ponder_jobs::read_file(&args.file, &Default::default())?;
    for w in &preview.warnings {
        eprintln!("{}:{}: warning: {}", args.file.display(), w.line, w.message);
    }
    let (first_round, budget) = JobOptions::suggested_budget(preview.has_key);
    let (samples, max_samples) = match (args.samples, args.max_samples) {
        (None, None) => (first_round, budget),
        (Some(n), None) => (n, None), // a fixed count, as asked
        (n, Some(max)) => (n.unwrap_or(2.min(max)), Some(max)),
    };
    if let Some(max) = max_samples {
        anyhow::ensure!(max >= samples, "--max-samples {max} is below --samples {samples}");
    }
    let opts = JobOptions {
        samples,
        max_samples,
        max_tokens: args.max_tokens,
        thinking_budget: args.think_budget,
        thinking: super::Think::wanted(args.think),
        temperature: args.temperature,
        seed: args.seed,
        ..Default::default()
    };
    let db = match args.store {
        Some(p) => p,
        None => {
            let d = data_dir();
            std::fs::create_dir_all(&d).with_context(|| format!("{}", d.display()))?;
            d.join("jobs.sqlite")
        }
    };
    let mut store = Store::open(&db)?;
    let abs = std::fs::canonicalize(&args.file)?;
    let source = format!("{}#{}", abs.display(), fingerprint(&std::fs::read(&args.file)?));
    let existing =
        store.jobs()?.into_iter().find(|j| j.source == source && store.options(j.id).map(|o| o == opts).unwrap_or(false));
    let job = match existing {
        Some(j) if j.state != JobState::Done => {
            eprintln!("resuming job {} ({}/{} samples done)", j.id, j.samples_done, j.samples_total);
            j.id
        }
        Some(j) => j.id,
        None => {
            let name = args.file.file_name().unwrap_or_default().to_string_lossy().into_owned();
            store.create_job(&name, &source, &opts, &preview.problems)?
        }
    };

    let mut state = store.job(job)?.state;
    if state != JobState::Done {
        let max_seqs = args.concurrency.max(samples);
        // The engine must outlive the backend that borrows it.
        let engine;
        let backend: Box<dyn Backend + '_> = match &args.remote {
            Some(url) => {
                let config = RemoteConfig {
                    model: args.remote_model.clone(),
                    api_key: args.api_key.clone(),
                    max_in_flight: max_seqs,
                    ..RemoteConfig::new(url.clone())
                };
                let remote = RemoteBackend::connect(config)?;
                eprintln!("running on {url} (model {})", remote.model());
                Box::new(remote)
            }
            None => {
                let path = crate::model_arg::resolve(model)?;
                let loaded = crate::model_arg::load(&path, 32768)?;
                engine = Engine::start(loaded, local.config(max_seqs, 32768)?)?;
                Box::new(LocalBackend { engine: &engine, max_seqs })
            }
        };
        let summary = store.job(job)?;
        let bar = ProgressBar::new(summary.samples_total as u64)
            .with_style(ProgressStyle::with_template("{bar:40} {pos}/{len} samples  {msg}").expect("valid template"));
        bar.set_position(summary.samples_done as u64);
        state = run_job(&store, job, backend.as_ref(), &interrupted, |ev| match ev {
            JobEvent::Progress(p) => {
                bar.set_position(p.done as u64);
                let eta = p.eta_seconds.map(|s| format!("ETA {}s", s.round())).unwrap_or_default();
                bar.set_message(format!("{:.1} tok/s  {eta}", p.tokens_per_second));
            }
            JobEvent::Waiting { reason: Some(why) } => bar.suspend(|| eprintln!("waiting for the server: {why}")),
            JobEvent::Waiting { reason: None } => bar.suspend(|| eprintln!("the server is back; carrying on")),
            _ => {}
        })?;
        bar.finish_and_clear();
    }
    if state != JobState::Done {
        let j = store.job(job)?;
        eprintln!("stopped: {}/{} samples done and saved; run the same command again to resume", j.samples_done, j.samples_total);
        return Ok(130);
    }
    let rows = report::rows(&store, job)?;
    if let Some(note) = report::cut_off_note(&rows) {
        eprintln!("note: {note} (now --max-tokens {})", store.options(job)?.max_tokens);
    }
    let source = args.file.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let out = args.output.unwrap_or_else(|| args.file.with_file_name(ExportFormat::Jsonl.file_name(&source)));
    std::fs::write(&out, ExportFormat::of_path(&out).render(&source, &rows)).with_context(|| format!("{}", out.display()))?;
    eprintln!("results: {}", out.display());
    if preview.has_key {
        let md = out.with_file_name(ExportFormat::Markdown.file_name(&source));
        std::fs::write(&md, ExportFormat::Markdown.render(&source, &rows)).with_context(|| format!("{}", md.display()))?;
        eprintln!("report:  {}", md.display());
    }
    Ok(0)
}
