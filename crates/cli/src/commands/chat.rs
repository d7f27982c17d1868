use anyhow::{Context, Result};
use ponder_engine::{Channel, Engine, EngineConfig, Event, GenerateRequest, Message, Priority, SamplingParams};
use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The question (read from standard input when absent).
    question: Option<String>,
    /// Do not show the thinking.
    #[arg(long)]
    no_think: bool,
    /// Turn the model's thinking on or off, where its template allows (Qwen3).
    #[arg(long, value_enum)]
    think: Option<super::Think>,
    /// Print events as JSON lines.
    #[arg(long)]
    json: bool,
    #[arg(long, default_value_t = ponder_engine::DEFAULT_MAX_TOKENS)]
    max_tokens: usize,
    /// Close the thought after this many thinking tokens.
    #[arg(long)]
    think_budget: Option<usize>,
    #[arg(long, default_value_t = ponder_engine::SamplingParams::default().temperature)]
    temperature: f32,
    #[arg(long, default_value_t = ponder_engine::SamplingParams::default().top_p)]
    top_p: f32,
    #[arg(long)]
    seed: Option<u64>,
}

pub fn run(args: Args, model: Option<PathBuf>, local: &crate::model_arg::EngineArgs) -> Result<()> {
    let question = match args.question {
        Some(q) => q,
        None => {
            let mut s = String::new();
            std::io::stdin().read_to_string(&mut s).context("reading the question from standard input")?;
            s
        }
    };
    let question = question.trim();
    anyhow::ensure!(!question.is_empty(), "no question given");
    let path = crate::model_arg::resolve(model)?;
    let loaded = crate::model_arg::load(&path, 32768)?;
    let engine = Engine::start(loaded, local.config(EngineConfig::default().max_seqs, 32768)?)?;
    let info = engine.info();
    let kernels = info.kernel.map_or("candle's", |k| k.label());
    eprintln!("{} ({}, {kernels} kernels)", info.name, info.quantization);
    let req = GenerateRequest {
        max_tokens: args.max_tokens,
        thinking_budget: args.think_budget,
        thinking: super::Think::wanted(args.think),
        sampling: SamplingParams { temperature: args.temperature, top_p: args.top_p, seed: args.seed, ..Default::default() },
        priority: Priority::Interactive,
        ..GenerateRequest::chat(vec![Message::user(question)])
    };
    let mut handle = engine.submit(req)?;
    let mut out = std::io::stdout().lock();
    let tty = std::io::stdout().is_terminal();
    let (dim, reset) = if tty { ("\x1b[2m", "\x1b[0m") } else { ("", "") };
    let mut last = None;
    while let Some(ev) = handle.recv() {
        if args.json {
            writeln!(out, "{}", serde_json::to_string(&ev)?)?;
            if matches!(ev, Event::Finished { .. }) {
                break;
            }
            continue;
        }
        match ev {
            Event::Started { .. } => {}
            Event::Delta { channel: Channel::Thinking, text, .. } => {
                if !args.no_think {
                    if last != Some(Channel::Thinking) {
                        writeln!(out, "{dim}Thinking:")?;
                    }
                    write!(out, "{dim}{text}{reset}")?;
                }
                last = Some(Channel::Thinking);
            }
            Event::Delta { channel: Channel::Answer, text, .. } => {
                if last == Some(Channel::Thinking) && !args.no_think {
                    write!(out, "{reset}\n\n")?;
                }
                write!(out, "{text}")?;
                last = Some(Channel::Answer);
            }
            Event::Finished { reason, usage, error, .. } => {
                writeln!(out, "{reset}")?;
                if let Some(e) = error {
                    anyhow::bail!("generation failed: {e}");
                }
                let ttft = usage.time_to_first_token.map_or(0.0, |d| d.as_secs_f64());
                eprintln!(
                    "[{reason:?}] time to first token {ttft:.2} s, {} thinking + {} answer tokens, {:.1} tok/s",
                    usage.thinking_tokens, usage.answer_tokens, usage.tokens_per_second
                );
                break;
            }
        }
        out.flush()?;
    }
    Ok(())
}
