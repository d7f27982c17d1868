//! The engine: one thread that owns the model and runs continuous-batching steps
//! ([`worker`]), and the [`Engine`] through which the rest of Ponder submits requests and gets a
//! [`RequestHandle`] for each ([`handle`]).

#[cfg(feature = "fault-inject")]
mod fault;
mod handle;
mod stats;
mod validate;
mod worker;

pub use handle::{Canceller, RequestHandle};
pub use stats::EngineStats;

use crate::chat_template::ChatTemplate;
use crate::draft_model::DraftModel;
use crate::error::{EngineError, Result};
use crate::kv_cache::KvCacheType;
use crate::loader::{LoadedModel, ModelInfo};
use crate::request::{GenerateRequest, Prompt};
use crate::scheduler::{Limits, Scheduler, Waiting};
use crate::sequence::RequestCtx;
use crate::tokenizer::Tokenizer;
use crossbeam_channel::Sender;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;
use worker::{Command, Worker};

#[derive(Debug, Clone)]
pub struct EngineConfig {
    /// Sequences decoding at once.
    pub max_seqs: usize,
    /// Memory for KV caches; `None` gives `max_seqs` contexts of 4096 tokens.
    pub kv_budget_bytes: Option<u64>,
    /// Tokens one step may process (decodes plus prompt chunks).
    pub max_step_tokens: usize,
    /// How the KV cache stores keys and values.
    pub kv_cache: KvCacheType,
    /// A small model with the same vocabulary that drafts tokens for a chat decoding alone
    /// (see [`crate::draft_model`]); without one, drafts come from n-gram lookup only.
    pub draft: Option<DraftModel>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        Self { max_seqs: 8, kv_budget_bytes: None, max_step_tokens: 512, kv_cache: KvCacheType::F16, draft: None }
    }
}

/// What the caller's side and the worker share.
struct Shared {
    tokenizer: Tokenizer,
    template: ChatTemplate,
    info: ModelInfo,
    context_length: usize,
    kv_budget_tokens: usize,
    max_seqs: usize,
    draft: Option<ModelInfo>,
    /// The latest stats and when the worker published them.
    stats: Mutex<(EngineStats, Instant)>,
}

pub struct Engine {
    tx: Sender<Command>,
    shared: Arc<Shared>,
    next_id: AtomicU64,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Engine {
    pub fn start(loaded: LoadedModel, config: EngineConfig) -> Result<Self> {
        let LoadedModel { model, tokenizer, template, info } = loaded;
        if config.max_seqs == 0 || config.max_step_tokens == 0 {
            return Err(EngineError::InvalidConfig("max_seqs and max_step_tokens must be > 0"));
        }
        if let Some(draft) = &config.draft {
            draft.check_vocabulary(&tokenizer)?;
        }
        let per_token = model.config().kv_bytes_per_token(config.kv_cache) as u64;
        let context_length = model.config().context_length;
        let budget_bytes = config.kv_budget_bytes.unwrap_or(config.max_seqs as u64 * 4096.min(context_length as u64) * per_token);
        let kv_budget_tokens = (budget_bytes / per_token).max(1) as usize;
        let shared = Arc::new(Shared {
            tokenizer,
            template,
            info,
            context_length,
            kv_budget_tokens,
            max_seqs: config.max_seqs,
            draft: config.draft.as_ref().map(|d| d.info().clone()),
            stats: Mutex::new((EngineStats { kv_tokens_budget: kv_budget_tokens, ..Default::default() }, Instant::now())),
        });
        let close = shared.tokenizer.encode_plain("\n</think>\n\n")?;
        let (tx, rx) = crossbeam_channel::unbounded();
        let limits =
            Limits { max_seqs: config.max_seqs, kv_budget_tokens, max_step_tokens: config.max_step_tokens, context_length };
        let worker = Worker {
            model,
            shared: shared.clone(),
            rx,
            sched: Scheduler::new(limits),
            limits,
            kv_cache: config.kv_cache,
            drafter: config.draft.map(DraftModel::into_drafter),
            close,
            rate: Default::default(),
            fed: 0,
            drafted: 0,
            accepted: 0,
            #[cfg(feature = "fault-inject")]
            faults: fault::Faults::from_env(),
        };
        let thread =
            std::thread::Builder::new().name("ponder-engine".into()).spawn(move || worker.run()).map_err(EngineError::Thread)?;
        Ok(Self { tx, shared, next_id: AtomicU64::new(1), thread: Some(thread) })
    }

    pub fn info(&self) -> &ModelInfo {
        &self.shared.info
    }

    /// The draft model the engine was started with, if any.
    pub fn draft_model(&self) -> Option<&ModelInfo> {
        self.shared.draft.as_ref()
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.shared.tokenizer
    }

    pub fn context_length(&self) -> usize {
        self.shared.context_length
    }

    pub fn stats(&self) -> EngineStats {
        let (mut s, at) =
            self.shared.stats.lock().map(|s| s.clone()).unwrap_or_else(|_| (EngineStats::default(), Instant::now()));
        if at.elapsed() > stats::STALE_AFTER {
            s.tokens_per_second = 0.0;
        }
        // Requests still in the channel wait too (the engine takes them between steps).
        s.waiting += self.tx.len();
        s
    }

    /// Renders a prompt exactly as a request would see it.
    pub fn render_prompt(&self, prompt: &Prompt) -> Result<String> {
        validate::render(&self.shared, prompt, None)
    }

    /// How many tokens a prompt takes, so callers can fit `max_tokens` into the context.
    pub fn prompt_tokens(&self, prompt: &Prompt) -> Result<usize> {
        Ok(self.shared.tokenizer.encode_prompt(&self.render_prompt(prompt)?)?.len())
    }

    /// Queues a request. Errors that can be known now (bad parameters, a prompt that cannot
    /// fit) are returned here rather than as events.
    pub fn submit(&self, req: GenerateRequest) -> Result<RequestHandle> {
        self.submit_checked(req, validate::Overflow::Refuse)
    }

    /// [`Engine::submit`] for a request that would rather be shorter than refused: a prompt
    /// that leaves less room than `max_tokens` gets what the context leaves (a job's long
    /// question). A prompt that fills the context is still refused.
    pub fn submit_fitted(&self, req: GenerateRequest) -> Result<RequestHandle> {
        self.submit_checked(req, validate::Overflow::Shorten)
    }

    fn submit_checked(&self, req: GenerateRequest, overflow: validate::Overflow) -> Result<RequestHandle> {
        let valid = validate::validate(&self.shared, &req, overflow)?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let ctx = RequestCtx {
            id,
            tx,
            cancel: cancel.clone(),
            priority: req.priority,
            submitted: Instant::now(),
            max_tokens: valid.max_tokens,
            thinking_budget: req.thinking_budget,
            detect_loops: req.detect_loops,
            ignore_eos: req.ignore_eos,
            min_tokens: req.min_tokens,
            stop: req.stop,
            prompt_len: valid.tokens.len(),
            starts_thinking: valid.starts_thinking,
            admitted_seq: 0,
            sampling: req.sampling,
            speculate: req.speculate,
        };
        let waiting = Waiting { ctx: Arc::new(ctx), tokens: valid.tokens, n: req.n };
        self.tx.send(Command::Submit(waiting)).map_err(|_| EngineError::EngineStopped)?;
        Ok(RequestHandle::new(id, req.n, rx, cancel))
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
