//! The engine benchmark behind `ponder bench`: single-stream decode, short and deep into a long
//! context, prefill, aggregate decode at several batch sizes, chat latency under batch load, and
//! peak memory. Each figure is the median of several runs, since the machines this runs on are
//! shared and noisy.

use crate::draft_model::DraftModel;
use crate::engine::{Engine, EngineConfig};
use crate::kv_cache::KvCacheType;
use crate::loader::{load, LoadOptions};
use crate::request::{Event, GenerateRequest, Priority};
use crate::sampler::SamplingParams;
use crate::Result;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct BenchOptions {
    pub runs: usize,
    pub decode_tokens: usize,
    pub prefill_tokens: usize,
    pub batch_sizes: Vec<usize>,
    pub kernels: crate::KQuantKernels,
    /// Tokens in each of the 8 contexts held at once for the memory figure (0 skips it).
    pub memory_context: usize,
    /// Context depths at which single-stream decode is measured again (empty skips it).
    pub depths: Vec<usize>,
    /// How the KV cache stores keys and values.
    pub kv_cache: KvCacheType,
    /// Tokens a word problem's answer may run to, with and without speculative decoding (0
    /// skips it).
    pub speculative_tokens: usize,
    /// A draft model for the speculative figure (see [`crate::draft_model`]).
    pub draft_model: Option<PathBuf>,
}

impl Default for BenchOptions {
    fn default() -> Self {
        Self {
            runs: 3,
            decode_tokens: 128,
            prefill_tokens: 512,
            batch_sizes: vec![1, 2, 4, 8, 16],
            kernels: Default::default(),
            memory_context: 4096,
            depths: vec![4096, 8192],
            kv_cache: KvCacheType::F16,
            speculative_tokens: 512,
            draft_model: None,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct AggregatePoint {
    pub sequences: usize,
    /// While all the sequences decode (see [`concurrent_decode_rate`]).
    pub tok_s: f64,
    /// Over the whole run, from the first token of any sequence to the end of the last: it
    /// also counts the steps that read later prompts, and the tail where fewer remain.
    pub whole_run_tok_s: f64,
}

/// Single-stream decode after a prompt of `depth` tokens: what a long thought runs at.
#[derive(Debug, Clone, Serialize)]
pub struct DepthPoint {
    pub depth: usize,
    pub tok_s: f64,
    /// Against `single_decode_tok_s` of the same run.
    pub ratio_to_short: f64,
}

/// A lone chat answering a word problem, greedy, with and without speculative decoding (see
/// [`crate::speculate`]); both give the same text, so the same tokens are timed.
#[derive(Debug, Clone, Serialize)]
pub struct SpeculativePoint {
    pub prompt_tokens: usize,
    /// Tokens of the answer (the same with and without drafts).
    pub tokens: usize,
    pub plain_tok_s: f64,
    pub speculative_tok_s: f64,
    /// `speculative_tok_s / plain_tok_s`, of the medians.
    pub speedup: f64,
    /// Drafted tokens the model agreed with, of all drafted.
    pub acceptance_rate: f64,
    /// Tokens drafted per generated token.
    pub drafted_per_token: f64,
    /// The draft model's name, where one drafted (n-gram lookup otherwise).
    pub draft_model: Option<String>,
}

/// The benchmark's reasoning-style prompt: a word problem to be worked step by step.
pub const WORD_PROBLEM: &str = "A train leaves Ashford at 9:00 and travels towards Brampton at 80 km/h. \
    A second train leaves Brampton, 400 km away, at 10:00 and travels towards Ashford at 100 km/h. \
    At what time do the trains meet, and how far from Ashford? Reason step by step, check the \
    answer, and put the final answer in \\boxed{}.";

#[derive(Debug, Clone, Serialize)]
pub struct BenchReport {
    pub model: String,
    pub threads: usize,
    /// Which code multiplied the K-quant weights ("Ponder" or "Candle").
    pub kernels: String,
    /// The KV cache type the run used.
    pub kv_cache: KvCacheType,
    pub runs: usize,
    pub load_s: f64,
    pub single_decode_tok_s: f64,
    pub decode_at_depth: Vec<DepthPoint>,
    /// `None` when skipped.
    pub speculative: Option<SpeculativePoint>,
    pub prefill_tok_s: f64,
    pub aggregate: Vec<AggregatePoint>,
    pub chat_ttft_under_load_s: f64,
    /// Peak resident memory of the whole run, which ends holding 8 contexts of
    /// `memory_context_tokens` tokens each.
    pub peak_rss_bytes: u64,
    pub memory_context_tokens: usize,
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    if xs.is_empty() {
        return 0.0;
    }
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// Peak resident memory of this process (Linux `VmHWM`), 0 where unknown.
pub fn peak_rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with("VmHWM:")).and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok()))
        .map_or(0, |kb| kb * 1024)
}

/// A text prompt of about `n` tokens (ASCII words, one token each for Qwen's tokenizer).
fn filler(engine: &Engine, n: usize, salt: usize) -> String {
    let words = ["apple", "river", "stone", "cloud", "number", "proof", "angle", "seven", "graph", "logic"];
    let mut s = String::new();
    let mut i = salt;
    while engine.tokenizer().encode_plain(&s).map_or(0, |t| t.len()) < n {
        for _ in 0..16 {
            s.push(' ');
            s.push_str(words[i % words.len()]);
            i = i.wrapping_mul(31).wrapping_add(7);
        }
    }
    s
}

fn request(prompt: String, max_tokens: usize, priority: Priority) -> GenerateRequest {
    GenerateRequest {
        sampling: SamplingParams::greedy(),
        max_tokens,
        priority,
        detect_loops: false,
        ignore_eos: true,
        // Plain decoding: filler text repeats itself, which drafts would exploit.
        speculate: false,
        ..GenerateRequest::text(prompt)
    }
}

struct Timing {
    submitted: Instant,
    first: Option<Instant>,
    done: Option<Instant>,
    tokens: usize,
    /// When each text delta arrived (a token each, or fewer deltas than tokens when a
    /// character spans tokens).
    deltas: Vec<Instant>,
}

fn drive(handles: &mut [crate::engine::RequestHandle], submitted: Instant) -> Vec<Timing> {
    let mut out: Vec<Timing> =
        handles.iter().map(|_| Timing { submitted, first: None, done: None, tokens: 0, deltas: Vec::new() }).collect();
    let mut open = handles.len();
    while open > 0 {
        for (h, t) in handles.iter_mut().zip(out.iter_mut()) {
            if t.done.is_some() {
                continue;
            }
            while let Ok(ev) = h.try_recv() {
                match ev {
                    Event::Delta { .. } => {
                        let now = Instant::now();
                        t.first.get_or_insert(now);
                        t.deltas.push(now);
                    }
                    Event::Finished { usage, .. } => {
                        t.done = Some(Instant::now());
                        t.tokens = usage.completion_tokens();
                        if t.first.is_none() {
                            t.first = t.done;
                        }
                        open -= 1;
                        break;
                    }
                    Event::Started { .. } => {}
                }
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    out
}

/// Tokens per second, all sequences together, while every one of them decodes: from the
/// moment the last one to start gives its first token (every prompt is read) until the first
/// one finishes. Outside that window the batch is smaller, or steps also read prompts, which
/// is prefill. Each step of the window gives every sequence one token, so the last one's
/// deltas count the steps (a character that spans tokens can only lower the figure).
fn concurrent_decode_rate(t: &[Timing]) -> f64 {
    let Some(last) = t.iter().filter(|t| t.first.is_some()).max_by_key(|t| t.first) else { return 0.0 };
    let end = t.iter().filter_map(|t| t.done).min().expect("every sequence finishes");
    let window: Vec<&Instant> = last.deltas.iter().take_while(|&&d| d <= end).collect();
    match (window.first(), window.last()) {
        (Some(&&a), Some(&&b)) if b > a => (t.len() * (window.len() - 1)) as f64 / (b - a).as_secs_f64(),
        _ => 0.0,
    }
}

pub fn run(model: &Path, threads: usize, opts: &BenchOptions, mut progress: impl FnMut(&str)) -> Result<BenchReport> {
    let t0 = Instant::now();
    let deepest = opts.depths.iter().max().map_or(0, |d| d + opts.runs * opts.decode_tokens + 64);
    let loaded = load(model, &LoadOptions { max_context: Some(deepest.max(8192)), kernels: opts.kernels, ..Default::default() })?;
    let load_s = t0.elapsed().as_secs_f64();
    let name = loaded.info.name.clone();
    let kv_cache = loaded.model.kv_cache_type(opts.kv_cache);
    let max_batch = opts.batch_sizes.iter().copied().max().unwrap_or(1).max(9);
    let draft_options = LoadOptions { max_context: Some(deepest.max(8192)), ..Default::default() };
    let draft = opts.draft_model.as_ref().map(|path| load(path, &draft_options).map(DraftModel::new)).transpose()?;
    let config = EngineConfig { max_seqs: max_batch, kv_cache: opts.kv_cache, draft, ..Default::default() };
    let engine = Engine::start(loaded, config)?;
    // Warm up: the first matmuls repack weights.
    drive(&mut [engine.submit(request(filler(&engine, 300, 0), 8, Priority::Batch))?], Instant::now());

    let mut single = Vec::new();
    let mut prefill = Vec::new();
    for r in 0..opts.runs {
        progress(&format!("single-stream decode, run {}/{}", r + 1, opts.runs));
        let now = Instant::now();
        let t = drive(&mut [engine.submit(request(filler(&engine, 20, r), opts.decode_tokens, Priority::Interactive))?], now);
        let (first, done) = (t[0].first.unwrap(), t[0].done.unwrap());
        single.push((t[0].tokens.saturating_sub(1)) as f64 / done.duration_since(first).as_secs_f64());

        progress(&format!("prefill of {} tokens, run {}/{}", opts.prefill_tokens, r + 1, opts.runs));
        let prompt = filler(&engine, opts.prefill_tokens, 100 + r);
        let n = engine.tokenizer().encode_plain(&prompt)?.len();
        let now = Instant::now();
        let t = drive(&mut [engine.submit(request(prompt, 1, Priority::Interactive))?], now);
        prefill.push(n as f64 / t[0].first.unwrap().duration_since(now).as_secs_f64());
    }

    // One prompt per depth (reading 8,192 tokens takes a minute), then `runs` stretches of
    // `decode_tokens` each; the figure is their median.
    let short = median(single);
    let mut decode_at_depth = Vec::new();
    for &depth in &opts.depths {
        progress(&format!("single-stream decode after {depth} tokens"));
        let prompt = filler(&engine, depth, 300 + depth);
        let t = drive(
            &mut [engine.submit(request(prompt, opts.runs * opts.decode_tokens + 1, Priority::Interactive))?],
            Instant::now(),
        );
        let rates = t[0]
            .deltas
            .chunks(opts.decode_tokens.max(2))
            .filter(|c| c.len() > 1)
            .map(|c| (c.len() - 1) as f64 / c[c.len() - 1].duration_since(c[0]).as_secs_f64())
            .collect();
        let tok_s = median(rates);
        decode_at_depth.push(DepthPoint { depth, tok_s, ratio_to_short: tok_s / short });
    }

    let speculative = match opts.speculative_tokens {
        0 => None,
        n => Some(speculative(&engine, n, opts.runs, &mut progress)?),
    };

    let mut aggregate = Vec::new();
    for &n in &opts.batch_sizes {
        let (mut xs, mut whole) = (Vec::new(), Vec::new());
        for r in 0..opts.runs {
            progress(&format!("aggregate decode with {n} sequences, run {}/{}", r + 1, opts.runs));
            // Different prompt and output lengths. The prompts are built first so that every
            // request arrives at once.
            let prompts: Vec<String> = (0..n).map(|i| filler(&engine, 16 + 8 * i, i + r)).collect();
            let mut handles = prompts
                .into_iter()
                .enumerate()
                .map(|(i, p)| engine.submit(request(p, opts.decode_tokens / 2 + 8 * i, Priority::Batch)))
                .collect::<Result<Vec<_>>>()?;
            let t = drive(&mut handles, Instant::now());
            xs.push(concurrent_decode_rate(&t));
            let start = t.iter().filter_map(|t| t.first).min().unwrap();
            let end = t.iter().filter_map(|t| t.done).max().unwrap();
            let tokens: usize = t.iter().map(|t| t.tokens.saturating_sub(1)).sum();
            whole.push(tokens as f64 / end.duration_since(start).as_secs_f64());
        }
        aggregate.push(AggregatePoint { sequences: n, tok_s: median(xs), whole_run_tok_s: median(whole) });
    }

    let mut ttft = Vec::new();
    for r in 0..opts.runs {
        progress(&format!("chat time to first token under load, run {}/{}", r + 1, opts.runs));
        let mut load: Vec<_> = (0..8)
            .map(|i| {
                engine.submit(request(filler(&engine, 32 + 16 * i, i), 10_000.min(engine.context_length() / 2), Priority::Batch))
            })
            .collect::<Result<Vec<_>>>()?;
        // Let the batch get going before the chat arrives.
        for h in &mut load {
            while !matches!(h.recv(), Some(Event::Delta { .. }) | None) {}
        }
        let now = Instant::now();
        let chat = engine.submit(request(filler(&engine, 60, 7 + r), 1, Priority::Interactive))?;
        let t = drive(&mut [chat], now);
        ttft.push(t[0].first.unwrap().duration_since(t[0].submitted).as_secs_f64());
        drop(load);
    }

    if opts.memory_context > 0 {
        progress(&format!("memory with 8 contexts of {} tokens", opts.memory_context));
        let generate = 64.min(opts.memory_context / 2);
        let mut handles = (0..8)
            .map(|i| {
                engine.submit(request(filler(&engine, opts.memory_context - generate - 8, 200 + i), generate, Priority::Batch))
            })
            .collect::<Result<Vec<_>>>()?;
        drive(&mut handles, Instant::now());
    }

    Ok(BenchReport {
        model: name,
        threads,
        kernels: format!("{:?}", opts.kernels),
        kv_cache,
        runs: opts.runs,
        load_s,
        single_decode_tok_s: short,
        decode_at_depth,
        speculative,
        prefill_tok_s: median(prefill),
        aggregate,
        chat_ttft_under_load_s: median(ttft),
        peak_rss_bytes: peak_rss_bytes(),
        memory_context_tokens: opts.memory_context,
    })
}

/// The word problem answered `runs` times each way, plain and speculative in turn so that both
/// see the same machine; the medians of each.
fn speculative(engine: &Engine, max_tokens: usize, runs: usize, progress: &mut impl FnMut(&str)) -> Result<SpeculativePoint> {
    let chat = |speculate| GenerateRequest {
        sampling: SamplingParams::greedy(),
        max_tokens,
        detect_loops: false,
        speculate,
        ..GenerateRequest::chat(vec![crate::Message::user(WORD_PROBLEM)])
    };
    let prompt_tokens = engine.prompt_tokens(&chat(false).prompt)?;
    let (mut plain, mut spec, mut tokens) = (Vec::new(), Vec::new(), 0);
    let (mut drafted, mut accepted) = (0, 0);
    for r in 0..runs {
        for speculate in [false, true] {
            let way = if speculate { "speculative" } else { "plain" };
            progress(&format!("a word problem, {way} decoding, run {}/{runs}", r + 1));
            let before = engine.stats();
            let t = drive(&mut [engine.submit(chat(speculate))?], Instant::now());
            let after = engine.stats();
            let (first, done) = (t[0].first.unwrap(), t[0].done.unwrap());
            let rate = t[0].tokens.saturating_sub(1) as f64 / done.duration_since(first).as_secs_f64();
            tokens = t[0].tokens;
            if speculate {
                spec.push(rate);
                drafted += after.total_drafted - before.total_drafted;
                accepted += after.total_accepted - before.total_accepted;
            } else {
                plain.push(rate);
            }
        }
    }
    let (plain_tok_s, speculative_tok_s) = (median(plain), median(spec));
    Ok(SpeculativePoint {
        prompt_tokens,
        tokens,
        plain_tok_s,
        speculative_tok_s,
        speedup: speculative_tok_s / plain_tok_s,
        acceptance_rate: if drafted > 0 { accepted as f64 / drafted as f64 } else { 0.0 },
        drafted_per_token: drafted as f64 / (tokens.max(1) * runs) as f64,
        draft_model: engine.draft_model().map(|m| m.name.clone()),
    })
}
