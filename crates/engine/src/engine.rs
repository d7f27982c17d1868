//! The engine: one thread that owns the model and runs continuous-batching steps, and the
//! handle through which the rest of Ponder submits requests and reads their events.

use crate::chat_template::ChatTemplate;
use crate::error::{EngineError, Result};
use crate::model::{LoadedModel, ModelInfo};
use crate::qwen2::{Qwen2, StepInput};
use crate::request::{Event, FinishReason, GenerateRequest, Prompt};
use crate::sampler::Sampler;
use crate::scheduler::{Limits, Scheduler, Waiting};
use crate::sequence::RequestCtx;
use crate::tokenizer::Tokenizer;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError};
use serde::Serialize;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Sequences decoding at once.
    pub max_seqs: usize,
    /// Memory for KV caches; `None` gives `max_seqs` contexts of 4096 tokens.
    pub kv_budget_bytes: Option<u64>,
    /// Tokens one step may process (decodes plus prompt chunks).
    pub max_step_tokens: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self { max_seqs: 8, kv_budget_bytes: None, max_step_tokens: 512 }
    }
}

/// A snapshot for status bars and the server's metrics.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct EngineStats {
    pub running: usize,
    pub paused: usize,
    pub waiting: usize,
    pub kv_tokens_used: usize,
    pub kv_tokens_budget: usize,
    /// Generated tokens per second over the last few seconds, all sequences together.
    pub tokens_per_second: f64,
    pub total_generated: u64,
}

enum Command {
    Submit(Waiting),
    Shutdown,
}

/// The caller's end of one request: its events, and a way to stop it. Dropping the handle
/// cancels the request.
pub struct RequestHandle {
    pub id: u64,
    events: Receiver<Event>,
    cancel: Arc<AtomicBool>,
    pub n: usize,
}

impl RequestHandle {
    pub fn recv(&self) -> Option<Event> {
        self.events.recv().ok()
    }

    pub fn recv_timeout(&self, d: Duration) -> std::result::Result<Event, RecvTimeoutError> {
        self.events.recv_timeout(d)
    }

    pub fn try_recv(&self) -> std::result::Result<Event, TryRecvError> {
        self.events.try_recv()
    }

    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    /// The shared cancellation flag, for callers that must cancel from elsewhere.
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        self.cancel.clone()
    }

    /// Blocks until every sample has finished; returns all events in order.
    pub fn collect(&self) -> Vec<Event> {
        let mut out = Vec::new();
        let mut done = 0;
        while done < self.n {
            match self.events.recv() {
                Ok(ev) => {
                    if matches!(ev, Event::Finished { .. }) {
                        done += 1;
                    }
                    out.push(ev);
                }
                Err(_) => break,
            }
        }
        out
    }
}

impl Drop for RequestHandle {
    fn drop(&mut self) {
        self.cancel();
    }
}

struct Shared {
    tokenizer: Tokenizer,
    template: ChatTemplate,
    info: ModelInfo,
    context_length: usize,
    kv_budget_tokens: usize,
    max_seqs: usize,
    /// The latest stats and when the worker published them.
    stats: Mutex<(EngineStats, Instant)>,
}

pub struct Engine {
    tx: Sender<Command>,
    shared: Arc<Shared>,
    next_id: AtomicU64,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// A step allocates activations of up to a few tens of MB (a 512-token prompt chunk times the
/// 8960-wide feed-forward layer is 18 MB) and frees them within milliseconds. glibc's defaults
/// hand such blocks back to the kernel, by `munmap` or by trimming the heap, so every step
/// page-faulted them in again, zeroed: about a tenth of prompt time went to the kernel. Kept
/// in the heap, they are reused. The setting is process-wide, and harmless for the rest of a
/// program (freed memory is still reused, just not returned early).
fn keep_freed_step_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only changes allocator thresholds; 32 MiB is glibc's largest mmap
    // threshold on 64-bit systems.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
    }
}

impl Engine {
    pub fn start(loaded: LoadedModel, config: EngineConfig) -> Result<Self> {
        keep_freed_step_buffers();
        let LoadedModel { model, tokenizer, template, info } = loaded;
        if config.max_seqs == 0 || config.max_step_tokens == 0 {
            return Err(EngineError::InvalidRequest("max_seqs and max_step_tokens must be > 0".into()));
        }
        let per_token = model.config().kv_bytes_per_token() as u64;
        let context_length = model.config().context_length;
        let budget_bytes = config
            .kv_budget_bytes
            .unwrap_or(config.max_seqs as u64 * 4096.min(context_length as u64) * per_token);
        let kv_budget_tokens = (budget_bytes / per_token).max(1) as usize;
        let shared = Arc::new(Shared {
            tokenizer,
            template,
            info,
            context_length,
            kv_budget_tokens,
            max_seqs: config.max_seqs,
            stats: Mutex::new((EngineStats { kv_tokens_budget: kv_budget_tokens, ..Default::default() }, Instant::now())),
        });
        let close = shared.tokenizer.encode_plain("\n</think>\n\n")?;
        let (tx, rx) = crossbeam_channel::unbounded();
        let limits = Limits { max_seqs: config.max_seqs, kv_budget_tokens, max_step_tokens: config.max_step_tokens };
        let worker = Worker { model, shared: shared.clone(), rx, sched: Scheduler::new(limits), close, recent: VecDeque::new(), total: 0 };
        let thread = std::thread::Builder::new()
            .name("ponder-engine".into())
            .spawn(move || worker.run())
            .map_err(|e| EngineError::InvalidRequest(format!("cannot start the engine thread: {e}")))?;
        Ok(Self { tx, shared, next_id: AtomicU64::new(1), thread: Some(thread) })
    }

    pub fn info(&self) -> &ModelInfo {
        &self.shared.info
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.shared.tokenizer
    }

    pub fn context_length(&self) -> usize {
        self.shared.context_length
    }

    pub fn stats(&self) -> EngineStats {
        let (mut s, at) = self.shared.stats.lock().map(|s| s.clone()).unwrap_or_else(|_| (EngineStats::default(), Instant::now()));
        // The worker publishes after every step; an idle engine publishes nothing, so an old
        // figure means nothing is being generated now.
        if at.elapsed() > Duration::from_secs(2) {
            s.tokens_per_second = 0.0;
        }
        // Requests still in the channel wait too (the engine takes them between steps).
        s.waiting += self.tx.len();
        s
    }

    /// Renders a prompt exactly as a request would see it.
    pub fn render_prompt(&self, prompt: &Prompt) -> Result<String> {
        match prompt {
            Prompt::Chat(messages) => self.shared.template.render(messages),
            Prompt::Text(t) => Ok(t.clone()),
        }
    }

    /// How many tokens a prompt takes, so callers can fit `max_tokens` into the context.
    pub fn prompt_tokens(&self, prompt: &Prompt) -> Result<usize> {
        Ok(self.shared.tokenizer.encode_prompt(&self.render_prompt(prompt)?)?.len())
    }

    /// Queues a request. Errors that can be known now (bad parameters, a prompt that cannot
    /// fit) are returned here rather than as events.
    pub fn submit(&self, req: GenerateRequest) -> Result<RequestHandle> {
        req.sampling.validate().map_err(EngineError::InvalidRequest)?;
        if req.n == 0 || req.n > self.shared.max_seqs {
            return Err(EngineError::InvalidRequest(format!(
                "n must be between 1 and {} (the engine's concurrent sequences), got {}",
                self.shared.max_seqs, req.n
            )));
        }
        if req.max_tokens == 0 {
            return Err(EngineError::InvalidRequest("max_tokens must be at least 1".into()));
        }
        let text = self.render_prompt(&req.prompt)?;
        let tokens = self.shared.tokenizer.encode_prompt(&text)?;
        if tokens.is_empty() {
            return Err(EngineError::InvalidRequest("the prompt is empty".into()));
        }
        let ctx_len = self.shared.context_length;
        if tokens.len() + req.max_tokens > ctx_len {
            return Err(EngineError::ContextOverflow {
                prompt_tokens: tokens.len(),
                max_tokens: req.max_tokens,
                context_length: ctx_len,
            });
        }
        if tokens.len() * req.n > self.shared.kv_budget_tokens {
            return Err(EngineError::InvalidRequest(format!(
                "{} samples of a {}-token prompt need more KV memory than the budget of {} tokens",
                req.n,
                tokens.len(),
                self.shared.kv_budget_tokens
            )));
        }
        // A prompt that opens the thought (R1 templates end with `<think>\n`) streams thinking first.
        let starts_thinking = text.trim_end().ends_with("<think>");
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = crossbeam_channel::unbounded();
        let cancel = Arc::new(AtomicBool::new(false));
        let ctx = RequestCtx {
            id,
            tx,
            cancel: cancel.clone(),
            priority: req.priority,
            submitted: Instant::now(),
            max_tokens: req.max_tokens,
            thinking_budget: req.thinking_budget,
            detect_loops: req.detect_loops,
            ignore_eos: req.ignore_eos,
            stop: req.stop,
            prompt_len: tokens.len(),
            starts_thinking,
            admitted_seq: 0,
            sampling: req.sampling,
        };
        let waiting = Waiting { ctx: Arc::new(ctx), tokens, n: req.n };
        self.tx.send(Command::Submit(waiting)).map_err(|_| EngineError::EngineStopped)?;
        Ok(RequestHandle { id, events: rx, cancel, n: req.n })
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.tx.send(Command::Shutdown);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Worker {
    model: Qwen2,
    shared: Arc<Shared>,
    rx: Receiver<Command>,
    sched: Scheduler,
    close: Vec<u32>,
    /// (when, tokens) of recent steps, for the tokens-per-second figure.
    recent: VecDeque<(Instant, usize)>,
    total: u64,
}

impl Worker {
    fn run(mut self) {
        self.warm_up();
        loop {
            // Idle: sleep until work arrives. Busy: take what has arrived and keep stepping.
            if self.sched.is_idle() {
                match self.rx.recv() {
                    Ok(Command::Submit(w)) => self.sched.enqueue(w),
                    Ok(Command::Shutdown) | Err(_) => return,
                }
            }
            loop {
                match self.rx.try_recv() {
                    Ok(Command::Submit(w)) => self.sched.enqueue(w),
                    Ok(Command::Shutdown) | Err(TryRecvError::Disconnected) => {
                        self.shutdown();
                        return;
                    }
                    Err(TryRecvError::Empty) => break,
                }
            }
            self.sched.reap_cancelled();
            self.sched.admit();
            self.sched.enforce_memory();
            self.step();
            self.publish_stats();
        }
    }

    /// One token through the model before serving: the first matmul of each weight repacks it
    /// for the CPU's kernels, which would otherwise land on the first user's request.
    fn warm_up(&mut self) {
        let t = Instant::now();
        let mut cache = self.model.new_cache();
        let token = self.close.first().copied().unwrap_or(0);
        let _ = self.model.forward(&mut [StepInput { tokens: &[token, token], cache: &mut cache, want_logits: true }]);
        tracing::debug!("warm-up took {:?}", t.elapsed());
    }

    fn shutdown(&mut self) {
        for s in &mut self.sched.seqs {
            s.finish(FinishReason::Cancelled, Some("the engine shut down".into()));
        }
    }

    fn step(&mut self) {
        let plan = self.sched.plan();
        if plan.is_empty() {
            return;
        }
        let seqs = &mut self.sched.seqs;
        for (i, _) in &plan {
            if seqs[*i].cache.is_none() {
                seqs[*i].cache = Some(self.model.new_cache());
            }
        }
        // Which planned sequences finish reading their tokens this step (and so get logits).
        let wants: Vec<bool> = plan.iter().map(|(i, r)| r.end == seqs[*i].tokens.len()).collect();
        let result = {
            let mut by_index: Vec<Option<&mut crate::sequence::Seq>> = seqs.iter_mut().map(Some).collect();
            let mut inputs: Vec<StepInput<'_>> = Vec::with_capacity(plan.len());
            for ((i, r), &want) in plan.iter().zip(&wants) {
                let s = by_index[*i].take().expect("each sequence is planned once");
                inputs.push(StepInput { tokens: &s.tokens[r.clone()], cache: s.cache.as_mut().expect("cache set above"), want_logits: want });
            }
            let t = Instant::now();
            let result = self.model.forward(&mut inputs);
            tracing::trace!(tokens = ?inputs.iter().map(|s| s.tokens.len()).collect::<Vec<_>>(), elapsed = ?t.elapsed(), "step");
            result
        };
        let logits = match result.and_then(|l| l.map(|l| l.to_vec2::<f32>()).transpose()) {
            Ok(l) => l.unwrap_or_default(),
            Err(e) => {
                tracing::error!("step failed: {e}");
                for (i, _) in &plan {
                    seqs[*i].finish(FinishReason::Error, Some(e.to_string()));
                }
                seqs.retain(|s| !s.finished);
                return;
            }
        };
        let mut rows = logits.into_iter();
        let mut forked = Vec::new();
        let mut generated = 0;
        let ctx_len = self.shared.context_length;
        for ((i, _), want) in plan.iter().zip(wants) {
            if !want {
                continue;
            }
            let Some(mut row) = rows.next() else { break };
            let s = &mut seqs[*i];
            // The prompt is read: fork the other samples from it before the first draw.
            if s.forks_pending > 0 {
                for k in 1..=s.forks_pending {
                    let sampler = Sampler::new(s.ctx.sampling.clone(), k as u64);
                    match s.fork(k, sampler) {
                        Ok(mut f) => {
                            let mut r = row.clone();
                            f.on_logits(&mut r, &self.shared.tokenizer, &self.close, ctx_len);
                            generated += 1;
                            forked.push(f);
                        }
                        Err(e) => {
                            s.ctx.send(Event::Finished { index: k, reason: FinishReason::Error, usage: Default::default(), error: Some(e.to_string()) });
                        }
                    }
                }
                s.forks_pending = 0;
            }
            s.on_logits(&mut row, &self.shared.tokenizer, &self.close, ctx_len);
            generated += 1;
        }
        seqs.extend(forked);
        seqs.retain(|s| !s.finished);
        self.total += generated as u64;
        self.recent.push_back((Instant::now(), generated));
    }

    fn publish_stats(&mut self) {
        let now = Instant::now();
        while self.recent.front().is_some_and(|(t, _)| now.duration_since(*t) > Duration::from_secs(5)) {
            self.recent.pop_front();
        }
        let tps = match (self.recent.front(), self.recent.back()) {
            (Some((t0, _)), Some((t1, _))) if t1 > t0 => {
                let n: usize = self.recent.iter().skip(1).map(|(_, n)| n).sum();
                n as f64 / t1.duration_since(*t0).as_secs_f64()
            }
            _ => 0.0,
        };
        let s = &self.sched;
        let stats = EngineStats {
            running: s.seqs.iter().filter(|q| !q.paused).count(),
            paused: s.seqs.iter().filter(|q| q.paused).count(),
            waiting: s.waiting.len(),
            kv_tokens_used: s.kv_used(),
            kv_tokens_budget: s.limits.kv_budget_tokens,
            tokens_per_second: tps,
            total_generated: self.total,
        };
        if let Ok(mut g) = self.shared.stats.lock() {
            *g = (stats, now);
        }
    }
}
