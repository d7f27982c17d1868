//! A remote OpenAI-compatible server as a backend: vLLM (with or without its `deepseek_r1`
//! reasoning parser), llama.cpp's server, Ollama, DeepSeek's API, or another machine's
//! `ponder serve`. Big jobs go to a cluster built for them; files, checking, verdicts and the
//! store stay here.
//!
//! Each request streams on a thread of its own. Failures that may pass (429, 5xx, a dropped or
//! refused connection, a stalled stream) are retried with jittered exponential backoff; after a
//! few in a row the *circuit* opens: requests wait, a probe asks the server's `/models` until it
//! answers, and the job carries on. A request that keeps failing while the server answers others
//! pauses the job (its samples stay pending). Only samples that finished are recorded, so nothing
//! is lost or repeated. Errors that will not pass (a refused key, an unknown model) stop the job.
//!
//! What a server sends is bounded (a line of the stream, a reply's text), a `Retry-After` is
//! honoured up to a minute, and URLs in errors never show the credentials they may carry.

pub(crate) mod error;

pub use error::RemoteError;

use crate::backend::{Backend, BackendError, Generation, Next};
use ponder_engine::stream::{ThinkSplitter, THINK_CLOSE, THINK_OPEN};
use ponder_engine::{Channel, Event, FinishReason, GenerateRequest, Prompt, Role, Usage};
use ponder_openai::{is_loopback_authority, ChatChunk, ChatMessage, ChatRequest, ModelList, SamplingExtras, Stop};
use std::io::{BufRead, BufReader};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender as Sender};

#[derive(Debug, Clone)]
pub struct RemoteConfig {
    /// The API root, e.g. `http://gpu-box:8000/v1`.
    pub base_url: String,
    /// The model to ask for; `None` takes the server's first.
    pub model: Option<String>,
    pub api_key: Option<String>,
    /// Samples in flight at once.
    pub max_in_flight: usize,
    pub connect_timeout: Duration,
    /// A stream silent for this long is dropped and retried.
    pub idle_timeout: Duration,
    /// Failures in a row (across requests) that open the circuit.
    pub failures_to_open: u32,
    /// Attempts of one request while the server is otherwise up before the sample is recorded
    /// as failed.
    pub max_attempts: u32,
    /// Longest wait between retries.
    pub max_backoff: Duration,
    /// Longest `Retry-After` honoured: a server asking for more is retried after this.
    pub max_retry_after: Duration,
}

impl RemoteConfig {
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into(),
            model: None,
            api_key: None,
            max_in_flight: 16,
            connect_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(180),
            failures_to_open: 3,
            max_attempts: 8,
            max_backoff: Duration::from_secs(10),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

pub struct RemoteBackend {
    inner: Arc<Shared>,
}

struct Shared {
    config: RemoteConfig,
    /// The base URL as errors show it ([`redacted`]).
    shown: String,
    model: String,
    agent: ureq::Agent,
    circuit: Circuit,
}

impl RemoteBackend {
    /// Checks the server, the key and the model (`GET /models`) before any work is sent.
    pub fn connect(mut config: RemoteConfig) -> Result<Self, RemoteError> {
        config.base_url = config.base_url.trim_end_matches('/').to_string();
        let agent = ureq::AgentBuilder::new().timeout_connect(config.connect_timeout).timeout_read(config.idle_timeout).build();
        if let Some(warning) = key_in_clear(&config) {
            tracing::warn!("{warning}");
        }
        let shown = redacted(&config.base_url);
        let shared = Shared { model: String::new(), shown, agent, circuit: Circuit::default(), config };
        let ids = shared.models()?;
        let model = match &shared.config.model {
            Some(m) if ids.contains(m) => m.clone(),
            Some(m) => {
                return Err(RemoteError::NoSuchModel {
                    url: shared.shown("/models"),
                    wanted: m.clone(),
                    available: ids.join(", "),
                })
            }
            None => ids.first().cloned().ok_or_else(|| RemoteError::NoModels { url: shared.shown("/models") })?,
        };
        Ok(Self { inner: Arc::new(Shared { model, ..shared }) })
    }

    pub fn model(&self) -> &str {
        &self.inner.model
    }
}

/// A URL's scheme (empty if none), whether it names a user (`user:password@`), its host with
/// the port, and the rest (path, query).
fn url_parts(url: &str) -> (&str, bool, &str, &str) {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let (authority, tail) = rest.find(['/', '?', '#']).map_or((rest, ""), |i| rest.split_at(i));
    let (user, host) = authority.rsplit_once('@').map_or((false, authority), |(_, host)| (true, host));
    (scheme, user, host, tail)
}

/// A URL as errors and logs may show it: without a `user:password@` and with the values of
/// query parameters hidden (some servers take `?key=`).
pub fn redacted(url: &str) -> String {
    let (scheme, user, host, tail) = url_parts(url);
    let (path, query) = tail.split_once('?').map_or((tail, None), |(p, q)| (p, Some(q)));
    let mut out = if scheme.is_empty() { String::new() } else { format!("{scheme}://") };
    if user {
        out.push_str("***@");
    }
    out.push_str(host);
    out.push_str(path);
    if let Some(q) = query {
        let hidden: Vec<String> =
            q.split('&').map(|kv| kv.split_once('=').map_or(kv.to_string(), |(k, _)| format!("{k}=***"))).collect();
        out.push('?');
        out.push_str(&hidden.join("&"));
    }
    out
}

/// A warning when an API key would cross the network in clear: plain `http://` to a host that
/// is not this machine.
pub fn key_in_clear(config: &RemoteConfig) -> Option<String> {
    config.api_key.as_ref()?;
    let ("http", _, host, _) = url_parts(&config.base_url) else { return None };
    (!is_loopback_authority(host)).then(|| {
        format!(
            "the API key goes to {} over plain http, readable on the network; use https if you can",
            redacted(&config.base_url)
        )
    })
}

/// Longest line of a stream accepted from a server (a chunk is a few hundred bytes).
const MAX_LINE_BYTES: usize = 1 << 20;
/// A reply's text may not run past this many bytes per token asked for (a token is a few bytes,
/// a dozen at most).
const MAX_BYTES_PER_TOKEN: usize = 64;

/// Reads one line into `buf` (without its end), or `None` at the end of the stream; a line
/// longer than `max` bytes is an error rather than memory without end.
fn read_line_bounded<R: BufRead>(r: &mut R, buf: &mut Vec<u8>, max: usize) -> std::io::Result<Option<()>> {
    buf.clear();
    let n = std::io::Read::take(&mut *r, max as u64 + 1).read_until(b'\n', buf)?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
        if buf.last() == Some(&b'\r') {
            buf.pop();
        }
    } else if buf.len() > max {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("a line of the stream is longer than {max} bytes"),
        ));
    }
    Ok(Some(()))
}

impl Shared {
    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.config.base_url)
    }

    /// [`Shared::url`] as errors show it.
    fn shown(&self, path: &str) -> String {
        format!("{}{path}", self.shown)
    }

    fn get(&self, path: &str) -> ureq::Request {
        let req = self.agent.get(&self.url(path));
        match &self.config.api_key {
            Some(k) => req.set("Authorization", &format!("Bearer {k}")),
            None => req,
        }
    }

    fn models(&self) -> Result<Vec<String>, RemoteError> {
        let url = self.shown("/models");
        let body: ModelList = match self.get("/models").call() {
            Ok(r) => r.into_json().map_err(|e| RemoteError::Protocol { url: url.clone(), detail: e.to_string() })?,
            Err(ureq::Error::Status(s @ (401 | 403), _)) => return Err(RemoteError::BadKey { url, status: s }),
            Err(ureq::Error::Status(s, r)) => {
                let body: String = r.into_string().unwrap_or_default().chars().take(300).collect();
                return Err(RemoteError::Protocol { url, detail: format!("HTTP {s}: {body}") });
            }
            Err(e) => return Err(RemoteError::Unreachable { url, detail: transport_detail(&e) }),
        };
        Ok(body.data.into_iter().map(|m| m.id).filter(|id| !id.is_empty()).collect())
    }
}

impl Backend for RemoteBackend {
    fn start(&self, req: GenerateRequest) -> Result<Generation, BackendError> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let shared = self.inner.clone();
        let flag = cancel.clone();
        std::thread::Builder::new()
            .name("ponder-remote".into())
            .spawn(move || Request::new(shared, req, tx, flag).run())
            .map_err(BackendError::Thread)?;
        Ok(Box::pin(RemoteGeneration { rx, cancel }))
    }

    fn parallelism(&self) -> usize {
        self.inner.config.max_in_flight
    }

    fn waiting_for(&self) -> Option<String> {
        self.inner.circuit.open_reason()
    }
}

/// The runner's end of a request's thread; dropping it tells the thread to stop.
struct RemoteGeneration {
    rx: UnboundedReceiver<Next>,
    cancel: Arc<AtomicBool>,
}

impl futures_util::Stream for RemoteGeneration {
    type Item = Next;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Next>> {
        self.rx.poll_recv(cx)
    }
}

impl Drop for RemoteGeneration {
    fn drop(&mut self) {
        self.cancel.store(true, Ordering::Relaxed);
    }
}

/// The server is down for everyone: requests wait until a probe finds it back.
#[derive(Default)]
struct Circuit {
    state: Mutex<CircuitState>,
    changed: Condvar,
}

#[derive(Default)]
struct CircuitState {
    failures_in_row: u32,
    /// Why it is open, while it is.
    open: Option<String>,
    /// Bumped each time it opens: a request's failures before an outage are not held
    /// against it afterwards.
    outages: u64,
    probing: bool,
}

impl Circuit {
    fn open_reason(&self) -> Option<String> {
        self.state.lock().unwrap().open.clone()
    }

    fn outages(&self) -> u64 {
        self.state.lock().unwrap().outages
    }

    fn success(&self) {
        self.state.lock().unwrap().failures_in_row = 0;
    }

    /// Counts a failure; returns `true` when this one opens the circuit (the caller then
    /// probes the server until it is back).
    fn failure(&self, why: &str, to_open: u32) -> bool {
        let mut s = self.state.lock().unwrap();
        s.failures_in_row += 1;
        if s.open.is_none() && s.failures_in_row >= to_open {
            s.open = Some(why.to_string());
            tracing::info!("remote server unavailable ({why}); jobs wait until it is back");
        }
        if s.open.is_some() && !s.probing {
            s.probing = true;
            return true;
        }
        false
    }

    /// `outage`: the probe found the server down at least once (rather than a request failing
    /// on its own while the server was fine).
    fn close(&self, outage: bool) {
        let mut s = self.state.lock().unwrap();
        if s.open.take().is_some() {
            tracing::info!("remote server is back");
        }
        if outage {
            s.outages += 1;
        }
        s.failures_in_row = 0;
        s.probing = false;
        self.changed.notify_all();
    }

    /// Waits while the circuit is open; `false` if cancelled meanwhile.
    fn wait_closed(&self, cancel: &AtomicBool) -> bool {
        let mut s = self.state.lock().unwrap();
        while s.open.is_some() {
            if cancel.load(Ordering::Relaxed) {
                return false;
            }
            s = self.changed.wait_timeout(s, Duration::from_millis(200)).unwrap().0;
        }
        true
    }
}

/// What went wrong on the wire, without the URL (ureq's own message repeats it).
fn transport_detail(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Transport(t) => match t.message() {
            Some(m) => format!("{}: {m}", t.kind()),
            None => t.kind().to_string(),
        },
        other => other.to_string(),
    }
}

/// Full jitter: a random wait up to the exponential backoff for this attempt.
fn backoff(attempt: u32, max: Duration) -> Duration {
    let cap = Duration::from_millis(250).saturating_mul(1 << attempt.min(8)).min(max);
    cap.mul_f64(rand::random::<f64>())
}

enum Failure {
    /// May pass: retry (after `retry_after` if the server said so).
    Transient { why: String, retry_after: Option<Duration> },
    /// Will not pass.
    Fatal(RemoteError),
}

/// One request's life on its thread: attempts until every sample has finished.
struct Request {
    shared: Arc<Shared>,
    req: GenerateRequest,
    tx: Sender<Next>,
    cancel: Arc<AtomicBool>,
    /// Samples (indices into the request's `n`) that have not finished.
    pending: Vec<usize>,
    started: Instant,
}

impl Request {
    fn new(shared: Arc<Shared>, req: GenerateRequest, tx: Sender<Next>, cancel: Arc<AtomicBool>) -> Self {
        let pending = (0..req.n).collect();
        Self { shared, req, tx, cancel, pending, started: Instant::now() }
    }

    fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed)
    }

    fn run(mut self) {
        let mut attempts = 0;
        let mut outages_seen = self.shared.circuit.outages();
        while !self.pending.is_empty() && !self.cancelled() {
            if !self.shared.circuit.wait_closed(&self.cancel) {
                return;
            }
            let outages = self.shared.circuit.outages();
            if outages != outages_seen {
                outages_seen = outages;
                attempts = 0;
            }
            match self.attempt() {
                Ok(()) => self.shared.circuit.success(),
                Err(Failure::Fatal(e)) => {
                    let _ = self.tx.send(Next::Failed(e.into()));
                    return;
                }
                Err(Failure::Transient { why, retry_after }) => {
                    if self.cancelled() {
                        return;
                    }
                    attempts += 1;
                    tracing::debug!("remote request failed (attempt {attempts}): {why}");
                    if self.shared.circuit.failure(&why, self.shared.config.failures_to_open) {
                        self.probe_until_back();
                        continue;
                    }
                    if attempts >= self.shared.config.max_attempts {
                        self.give_up(&why);
                        return;
                    }
                    let wait = match retry_after {
                        Some(asked) => asked.min(self.shared.config.max_retry_after),
                        None => backoff(attempts, self.shared.config.max_backoff),
                    };
                    if !self.sleep(wait) {
                        return;
                    }
                }
            }
        }
    }

    /// Waits, unless the request is cancelled meanwhile (then `false`, at once).
    fn sleep(&self, wait: Duration) -> bool {
        let until = Instant::now() + wait;
        while !self.cancelled() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return true;
            }
            std::thread::sleep(left.min(Duration::from_millis(100)));
        }
        false
    }

    /// The server keeps failing this request while it answers others: its samples end with an
    /// error, which pauses the job (nothing is recorded; resuming tries them again).
    fn give_up(&mut self, why: &str) {
        for &index in &self.pending {
            let _ = self.tx.send(Next::Event(Event::Finished {
                index,
                reason: FinishReason::Error,
                usage: Usage::default(),
                error: Some(format!("gave up after {} attempts: {why}", self.shared.config.max_attempts)),
            }));
        }
    }

    /// Asks `/models` with growing, jittered pauses until the server answers, then closes the
    /// circuit for everyone.
    fn probe_until_back(&self) {
        let mut n = 0;
        loop {
            // The probe must go on even if this request was cancelled: others wait on it.
            if self.shared.models().is_ok() {
                self.shared.circuit.close(n > 0);
                return;
            }
            n += 1;
            std::thread::sleep(backoff(n.min(4), self.shared.config.max_backoff).max(Duration::from_millis(200)));
        }
    }

    fn body(&self) -> ChatRequest {
        let messages = match &self.req.prompt {
            Prompt::Chat(m) => m
                .iter()
                .map(|m| {
                    let role = match m.role {
                        Role::System => "system",
                        Role::User => "user",
                        Role::Assistant => "assistant",
                    };
                    ChatMessage::text(role, &m.content)
                })
                .collect(),
            Prompt::Text(t) => vec![ChatMessage::text("user", t)],
        };
        let s = &self.req.sampling;
        ChatRequest {
            model: Some(self.shared.model.clone()),
            messages,
            stream: true,
            n: Some(self.pending.len()),
            temperature: Some(s.temperature),
            top_p: Some(s.top_p),
            max_tokens: Some(self.req.max_tokens),
            seed: s.seed,
            stop: (!self.req.stop.is_empty()).then(|| Stop::Many(self.req.stop.clone())),
            thinking_budget: self.req.thinking_budget,
            // vLLM's names for the rest, sent only where they differ from no effect.
            chat_template_kwargs: self
                .req
                .thinking
                .map(|on| serde_json::Map::from_iter([("enable_thinking".to_string(), serde_json::Value::Bool(on))])),
            extras: SamplingExtras {
                ignore_eos: self.req.ignore_eos,
                min_tokens: (self.req.min_tokens > 0).then_some(self.req.min_tokens),
                top_k: (s.top_k > 0).then_some(s.top_k as i64),
                min_p: (s.min_p > 0.0).then_some(s.min_p),
                repetition_penalty: (s.repetition_penalty != 1.0).then_some(s.repetition_penalty),
            },
            ..Default::default()
        }
    }

    /// One streamed request for the pending samples.
    fn attempt(&mut self) -> Result<(), Failure> {
        let url = self.shared.shown("/chat/completions");
        let mut req = self.shared.agent.post(&self.shared.url("/chat/completions")).set("Content-Type", "application/json");
        if let Some(k) = &self.shared.config.api_key {
            req = req.set("Authorization", &format!("Bearer {k}"));
        }
        let body = serde_json::to_string(&self.body()).expect("a request serialises");
        let response = match req.send_string(&body) {
            Ok(r) => r,
            Err(ureq::Error::Status(status, r)) => {
                let retry_after = r.header("Retry-After").and_then(|v| v.trim().parse::<u64>().ok()).map(Duration::from_secs);
                let body: String = r.into_string().unwrap_or_default().chars().take(300).collect();
                return Err(match status {
                    408 | 409 | 425 | 429 | 500..=599 => {
                        Failure::Transient { why: format!("HTTP {status} from {url}: {body}"), retry_after }
                    }
                    401 | 403 => Failure::Fatal(RemoteError::BadKey { url, status }),
                    _ => Failure::Fatal(RemoteError::Refused { url, status, body }),
                });
            }
            Err(e) => return Err(Failure::Transient { why: format!("{url}: {}", transport_detail(&e)), retry_after: None }),
        };
        let _ = self.tx.send(Next::Event(Event::Started { prompt_tokens: 0, queue_wait: self.started.elapsed() }));
        let mut samples: Vec<SampleStream> = self.pending.iter().map(|&i| SampleStream::new(i)).collect();
        let mut reader = BufReader::new(response.into_reader());
        let mut done = false;
        let (mut line, mut text_bytes) = (Vec::new(), 0usize);
        let max_text = self.req.max_tokens.saturating_mul(MAX_BYTES_PER_TOKEN).saturating_mul(self.pending.len()).max(1 << 16);
        loop {
            if self.cancelled() {
                return Ok(());
            }
            match read_line_bounded(&mut reader, &mut line, MAX_LINE_BYTES) {
                Ok(Some(())) => {}
                Ok(None) => break,
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                    return Err(Failure::Fatal(RemoteError::Protocol { url, detail: e.to_string() }))
                }
                Err(e) => return Err(Failure::Transient { why: format!("{url}: stream broke: {e}"), retry_after: None }),
            }
            let line = String::from_utf8_lossy(&line);
            let Some(data) = line.strip_prefix("data:").map(str::trim) else { continue };
            if data == "[DONE]" {
                done = true;
                break;
            }
            let chunk: ChatChunk = serde_json::from_str(data)
                .map_err(|e| Failure::Transient { why: format!("{url}: bad stream chunk: {e}"), retry_after: None })?;
            if let Some(err) = chunk.error {
                return Err(Failure::Transient { why: format!("{url}: {err}"), retry_after: None });
            }
            text_bytes += chunk
                .choices
                .iter()
                .map(|c| c.delta.content.as_ref().map_or(0, String::len) + c.delta.thinking().map_or(0, str::len))
                .sum::<usize>();
            if text_bytes > max_text {
                let detail = format!("the reply runs past {max_text} bytes, more than {} tokens can hold", self.req.max_tokens);
                return Err(Failure::Fatal(RemoteError::Protocol { url, detail }));
            }
            let usage_tokens = chunk.usage.map(|u| u.completion_tokens);
            for choice in chunk.choices {
                let Some(sample) = samples.get_mut(choice.index) else { continue };
                // vLLM's reasoning parsers, DeepSeek's API and `ponder serve` separate the
                // thought (older vLLM calls the field `reasoning`).
                if let Some(t) = choice.delta.thinking() {
                    sample.server_splits = true;
                    sample.emit(&self.tx, Channel::Thinking, t);
                }
                if let Some(t) = choice.delta.content.as_deref().filter(|t| !t.is_empty()) {
                    sample.content(&self.tx, t);
                }
                if let Some(reason) = &choice.finish_reason {
                    let tokens = usage_tokens.or(choice.usage.map(|u| u.completion_tokens));
                    sample.finish(&self.tx, reason, tokens.map(|n| n as u64), self.started);
                }
            }
        }
        let finished: Vec<usize> = samples.iter().filter(|s| s.finished).map(|s| s.index).collect();
        self.pending.retain(|i| !finished.contains(i));
        if !self.pending.is_empty() {
            let why = if done { "the stream ended before every sample finished" } else { "the connection dropped mid-stream" };
            return Err(Failure::Transient { why: format!("{url}: {why}"), retry_after: None });
        }
        Ok(())
    }
}

/// One sample's stream: its thinking/answer split and token counts.
struct SampleStream {
    index: usize,
    split: Split,
    server_splits: bool,
    thinking_tokens: usize,
    answer_tokens: usize,
    first: Option<Instant>,
    finished: bool,
}

/// For servers that leave the thought in the content. A reply that opens with `<think>` is
/// followed as it streams; one that does not may still be a thought (R1's template opens it in
/// the prompt), which only a `</think>` tells, so the text is held until one comes or the
/// reply ends (then it is all answer).
enum Split {
    Undecided(String),
    Streaming(ThinkSplitter),
}

impl SampleStream {
    fn new(index: usize) -> Self {
        Self {
            index,
            split: Split::Undecided(String::new()),
            server_splits: false,
            thinking_tokens: 0,
            answer_tokens: 0,
            first: None,
            finished: false,
        }
    }

    fn emit(&mut self, tx: &Sender<Next>, channel: Channel, text: &str) {
        self.first.get_or_insert_with(Instant::now);
        match channel {
            Channel::Thinking => self.thinking_tokens += 1,
            Channel::Answer => self.answer_tokens += 1,
        }
        let _ = tx.send(Next::Event(Event::Delta { index: self.index, channel, text: text.to_string() }));
    }

    fn content(&mut self, tx: &Sender<Next>, text: &str) {
        if self.server_splits {
            return self.emit(tx, Channel::Answer, text);
        }
        let out = match &mut self.split {
            Split::Streaming(s) => s.push(text),
            Split::Undecided(held) => {
                held.push_str(text);
                let start = held.trim_start();
                let decided = if start.starts_with(THINK_OPEN) {
                    Some(false)
                } else if held.contains(THINK_CLOSE) {
                    Some(true)
                } else {
                    None
                };
                match decided {
                    None => Vec::new(),
                    Some(starts_thinking) => {
                        let held = std::mem::take(held);
                        let mut s = ThinkSplitter::new(starts_thinking);
                        let out = s.push(&held);
                        self.split = Split::Streaming(s);
                        out
                    }
                }
            }
        };
        for (channel, t) in out {
            self.emit(tx, channel, &t);
        }
    }

    fn finish(&mut self, tx: &Sender<Next>, reason: &str, completion_tokens: Option<u64>, started: Instant) {
        let rest = match &mut self.split {
            Split::Streaming(s) => s.finish(),
            Split::Undecided(held) => {
                let t = std::mem::take(held).trim().to_string();
                if t.is_empty() {
                    Vec::new()
                } else {
                    vec![(Channel::Answer, t)]
                }
            }
        };
        for (channel, t) in rest {
            self.emit(tx, channel, &t);
        }
        // Deltas stand in for tokens unless the server counts them.
        if let Some(n) = completion_tokens {
            self.answer_tokens = (n as usize).saturating_sub(self.thinking_tokens);
        }
        let elapsed = self.first.map_or(0.0, |f| f.elapsed().as_secs_f64());
        let usage = Usage {
            prompt_tokens: 0,
            thinking_tokens: self.thinking_tokens,
            answer_tokens: self.answer_tokens,
            time_to_first_token: self.first.map(|f| f.duration_since(started)),
            tokens_per_second: if elapsed > 0.0 { (self.thinking_tokens + self.answer_tokens) as f64 / elapsed } else { 0.0 },
        };
        let reason = match reason {
            "length" => FinishReason::Length,
            _ => FinishReason::Stop,
        };
        self.finished = true;
        let _ = tx.send(Next::Event(Event::Finished { index: self.index, reason, usage, error: None }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(stream: &mut SampleStream, parts: &[&str]) -> Vec<(Channel, String)> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        for p in parts {
            stream.content(&tx, p);
        }
        stream.finish(&tx, "stop", None, Instant::now());
        let mut out: Vec<(Channel, String)> = Vec::new();
        while let Ok(n) = rx.try_recv() {
            if let Next::Event(Event::Delta { channel, text, .. }) = n {
                match out.last_mut() {
                    Some((c, t)) if *c == channel => t.push_str(&text),
                    _ => out.push((channel, text)),
                }
            }
        }
        out
    }

    #[test]
    fn thinking_in_the_content_is_split_out() {
        let think = |t: &str| (Channel::Thinking, t.to_string());
        let answer = |t: &str| (Channel::Answer, t.to_string());
        // An explicit opening tag, split across deltas.
        assert_eq!(
            collect(&mut SampleStream::new(0), &["<thi", "nk>hmm", " ok</th", "ink>\n\n**4**"]),
            vec![think("hmm ok"), answer("**4**")]
        );
        // R1 behind a template that opened the thought: only the closing tag shows.
        assert_eq!(
            collect(&mut SampleStream::new(0), &["Two and ", "two.\n</think>\n\n", "4"]),
            vec![think("Two and two.\n"), answer("4")]
        );
        // A model that does not think at all.
        assert_eq!(collect(&mut SampleStream::new(0), &["The answer ", "is 4."]), vec![answer("The answer is 4.")]);
    }

    #[test]
    fn backoff_grows_with_jitter_and_stays_under_the_cap() {
        let max = Duration::from_secs(10);
        for attempt in 0..20 {
            let cap = Duration::from_millis(250).saturating_mul(1 << attempt.min(8)).min(max);
            let waits: Vec<Duration> = (0..50).map(|_| backoff(attempt, max)).collect();
            assert!(waits.iter().all(|w| *w <= cap));
            assert!(waits.windows(2).any(|w| w[0] != w[1]), "jittered");
        }
    }

    #[test]
    fn urls_in_errors_hide_credentials() {
        assert_eq!(redacted("https://alice:s3cret@gpu.example:8000/v1"), "https://***@gpu.example:8000/v1");
        assert_eq!(redacted("http://gpu.example/v1?key=abc&x=1"), "http://gpu.example/v1?key=***&x=***");
        assert_eq!(redacted("http://127.0.0.1:8000/v1"), "http://127.0.0.1:8000/v1");
        assert_eq!(redacted("gpu.example/v1"), "gpu.example/v1");
        // An @ in the path is not a user.
        assert_eq!(redacted("http://h/v1/a@b"), "http://h/v1/a@b");
    }

    #[test]
    fn a_key_over_plain_http_to_another_machine_is_warned_of() {
        let with = |url: &str, key: Option<&str>| RemoteConfig { api_key: key.map(Into::into), ..RemoteConfig::new(url) };
        let warned = key_in_clear(&with("http://user:pw@gpu.example:8000/v1", Some("k"))).unwrap();
        assert!(warned.contains("http://***@gpu.example:8000/v1") && warned.contains("plain http"), "{warned}");
        assert!(key_in_clear(&with("http://10.0.0.5/v1", Some("k"))).is_some());
        for quiet in [
            with("https://gpu.example/v1", Some("k")),
            with("http://gpu.example/v1", None),
            with("http://localhost:8000/v1", Some("k")),
            with("http://127.0.0.1:8000/v1", Some("k")),
            with("http://[::1]:8000/v1", Some("k")),
        ] {
            assert_eq!(key_in_clear(&quiet), None, "{}", quiet.base_url);
        }
    }

    #[test]
    fn stream_lines_are_bounded() {
        let mut buf = Vec::new();
        let mut r = std::io::Cursor::new(b"data: a\r\ndata: b\n\nlast".to_vec());
        let mut lines = Vec::new();
        while read_line_bounded(&mut r, &mut buf, 16).unwrap().is_some() {
            lines.push(String::from_utf8(buf.clone()).unwrap());
        }
        assert_eq!(lines, ["data: a", "data: b", "", "last"]);
        let mut long = std::io::Cursor::new(vec![b'x'; 100]);
        let e = read_line_bounded(&mut long, &mut buf, 16).unwrap_err();
        assert!(e.to_string().contains("longer than 16 bytes"), "{e}");
        assert!(buf.len() <= 17, "read no further than the bound");
    }
}
