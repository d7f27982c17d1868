//! Request handlers. Each request runs on the engine; its handler awaits the engine's events and
//! turns them into OpenAI's wire format (`ponder-openai`), and a client that disconnects cancels
//! the request.

use crate::error::ApiError;
use crate::AppState;
use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, FromRequest, Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::sse::{Event as SseEvent, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use ponder_engine::{
    Channel, Event, FinishReason, GenerateRequest, Message, Priority, Prompt, RequestHandle, Role, SamplingParams,
};
use ponder_openai::{
    is_loopback_authority, AssistantMessage, ChatChoice, ChatChunk, ChatCompletion, ChatRequest, ChunkChoice, Completion,
    CompletionChoice, CompletionRequest, Delta, ModelEntry, ModelList, PromptField, SamplingExtras, Usage,
};
use serde_json::Value;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio_stream::wrappers::ReceiverStream;

/// JSON bodies whose errors come back in OpenAI's shape (400, or 413 when too large).
pub struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> FromRequest<S> for ApiJson<T> {
    type Rejection = ApiError;
    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match Json::<T>::from_request(req, state).await {
            Ok(Json(v)) => Ok(ApiJson(v)),
            Err(rej) => {
                let status = rej.status();
                let message = match &rej {
                    JsonRejection::JsonDataError(e) => format!("invalid request: {}", e.body_text()),
                    JsonRejection::JsonSyntaxError(e) => format!("malformed JSON: {}", e.body_text()),
                    other => other.body_text(),
                };
                let mut e = ApiError::bad_request(message, None);
                if status == StatusCode::PAYLOAD_TOO_LARGE {
                    e.status = status;
                    e.kind = "request_too_large";
                } else if status == StatusCode::UNSUPPORTED_MEDIA_TYPE {
                    e.message = "send the body as JSON with Content-Type: application/json".into();
                }
                Err(e)
            }
        }
    }
}

pub fn router(state: Arc<AppState>) -> Router {
    let limit = state.config.max_body_bytes;
    Router::new()
        .route("/v1/models", get(models))
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .fallback(|| async { ApiError::not_found("no such endpoint") })
        .layer(middleware::from_fn_with_state(state.clone(), auth))
        .layer(middleware::from_fn_with_state(state.clone(), same_host))
        .layer(middleware::from_fn_with_state(state.clone(), limit_connections))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

/// Refuses requests past `max_connections` before their bodies are read; the permit is held
/// until the response (a stream's included) is done.
async fn limit_connections(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let Ok(permit) = state.connections.clone().try_acquire_owned() else {
        return ApiError::busy(state.config.max_connections).into_response();
    };
    let response = next.run(req).await;
    let (parts, body) = response.into_parts();
    let body = axum::body::Body::from_stream(futures_util::StreamExt::map(body.into_data_stream(), move |chunk| {
        let _held = &permit;
        chunk
    }));
    Response::from_parts(parts, body)
}

/// DNS rebinding: a page on another site can make a browser send requests to this port under a
/// name it controls. On a loopback address, only requests for a loopback name are served, and
/// a browser's `Origin`, when sent, must be one too.
async fn same_host(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if state.config.addr.ip().is_loopback() {
        let header = |name: &str| req.headers().get(name).map(|v| v.to_str().unwrap_or("\u{fffd}").to_string());
        if let Some(host) = header("host") {
            if !is_loopback_authority(&host) {
                return ApiError::forbidden(format!("this server answers for localhost only, not for host `{host}`"))
                    .into_response();
            }
        }
        if let Some(origin) = header("origin") {
            let authority = origin.split_once("://").map_or("", |(_, rest)| rest);
            if origin != "null" && !is_loopback_authority(authority) {
                return ApiError::forbidden(format!("requests from pages of `{origin}` are refused")).into_response();
            }
        }
    }
    next.run(req).await
}

async fn auth(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(key) = &state.config.api_key {
        let ok = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|given| same_key(given.as_bytes(), key.as_bytes()));
        if !ok {
            return ApiError::unauthorized().into_response();
        }
    }
    next.run(req).await
}

/// Compares in time that depends only on the lengths, so the key cannot be guessed a byte at
/// a time from how fast a wrong one is refused.
fn same_key(given: &[u8], key: &[u8]) -> bool {
    let mut diff = given.len() ^ key.len();
    for (i, k) in key.iter().enumerate() {
        diff |= usize::from(given.get(i).copied().unwrap_or(0) ^ k);
    }
    diff == 0
}

/// OpenAI's limits on `stop`: at most 4 sequences, none empty or longer than 256 bytes.
fn stop_sequences(stop: Option<ponder_openai::Stop>) -> Result<Vec<String>, ApiError> {
    let stop = stop.map(|s| s.into_vec()).unwrap_or_default();
    if stop.len() > 4 {
        return Err(ApiError::bad_request(format!("stop takes at most 4 sequences, got {}", stop.len()), Some("stop")));
    }
    if let Some(s) = stop.iter().find(|s| s.is_empty() || s.len() > 256) {
        return Err(ApiError::bad_request(format!("each stop sequence must be 1 to 256 bytes, got {}", s.len()), Some("stop")));
    }
    Ok(stop)
}

/// OpenAI's sampling parameters with vLLM's extras. The engine checks the ranges and names the
/// field that is out of one.
fn sampling(
    defaults: SamplingParams,
    temperature: Option<f32>,
    top_p: Option<f32>,
    seed: Option<u64>,
    x: &SamplingExtras,
) -> Result<SamplingParams, ApiError> {
    let top_k = match x.top_k {
        None | Some(-1) | Some(0) => 0,
        Some(k) if k > 0 => k as usize,
        Some(k) => return Err(ApiError::bad_request(format!("top_k must be -1, 0 or positive, got {k}"), Some("top_k"))),
    };
    Ok(SamplingParams {
        temperature: temperature.unwrap_or(defaults.temperature),
        top_p: top_p.unwrap_or(defaults.top_p),
        top_k,
        min_p: x.min_p.unwrap_or(defaults.min_p),
        repetition_penalty: x.repetition_penalty.unwrap_or(defaults.repetition_penalty),
        seed,
    })
}

/// `min_tokens` as the engine takes it: no more than `max_tokens`.
fn min_tokens(x: &SamplingExtras, max_tokens: usize) -> Result<usize, ApiError> {
    match x.min_tokens {
        Some(m) if m > max_tokens => {
            Err(ApiError::bad_request(format!("min_tokens ({m}) must not exceed max_tokens ({max_tokens})"), Some("min_tokens")))
        }
        m => Ok(m.unwrap_or(0)),
    }
}

/// Whether a chat request wants its model to think: vLLM's
/// `chat_template_kwargs.enable_thinking`, or else OpenAI's `reasoning_effort`, where `"none"`
/// is off. `None` leaves it to the model.
fn thinking_wanted(kwargs: Option<&serde_json::Map<String, Value>>, effort: Option<&str>) -> Result<Option<bool>, ApiError> {
    if let Some(v) = kwargs.and_then(|k| k.get("enable_thinking")) {
        return match v {
            Value::Bool(b) => Ok(Some(*b)),
            Value::Null => Ok(None),
            _ => Err(ApiError::bad_request(
                format!("chat_template_kwargs.enable_thinking must be true or false, got {v}"),
                Some("chat_template_kwargs"),
            )),
        };
    }
    match effort {
        None => Ok(None),
        Some("none") => Ok(Some(false)),
        Some("minimal" | "low" | "medium" | "high") => Ok(Some(true)),
        Some(other) => Err(ApiError::bad_request(
            format!("reasoning_effort must be none, minimal, low, medium or high, got `{other}`"),
            Some("reasoning_effort"),
        )),
    }
}

async fn models(State(state): State<Arc<AppState>>) -> Json<ModelList> {
    let entry = ModelEntry {
        id: state.config.model_name.clone(),
        object: "model".into(),
        created: state.created,
        owned_by: "ponder".into(),
    };
    Json(ModelList { object: "list".into(), data: vec![entry] })
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn new_id(prefix: &str) -> String {
    format!("{prefix}-{:x}{:04x}", std::process::id(), NEXT_ID.fetch_add(1, Ordering::Relaxed))
}

fn finish_str(r: FinishReason) -> &'static str {
    match r {
        FinishReason::Length => "length",
        _ => "stop",
    }
}

fn content_text(v: &Value) -> Result<String, ApiError> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Null => Ok(String::new()),
        Value::Array(parts) => Ok(parts
            .iter()
            .filter(|&p| p["type"] == "text")
            .map(|p| p["text"].as_str().unwrap_or_default().to_string())
            .collect::<Vec<_>>()
            .join("")),
        _ => Err(ApiError::bad_request("message content must be a string or an array of text parts", Some("messages"))),
    }
}

fn check_common(state: &AppState, model: &Option<String>, n: usize, temperature: Option<f32>) -> Result<(), ApiError> {
    if let Some(m) = model {
        if m != &state.config.model_name && !m.is_empty() {
            return Err(ApiError::not_found(format!(
                "model `{m}` is not served here (this server has `{}`)",
                state.config.model_name
            )));
        }
    }
    if n == 0 {
        return Err(ApiError::bad_request("n must be at least 1", Some("n")));
    }
    if let Some(t) = temperature {
        if !(0.0..=2.0).contains(&t) {
            return Err(ApiError::bad_request(format!("temperature must be between 0 and 2, got {t}"), Some("temperature")));
        }
    }
    let waiting = state.engine.stats().waiting;
    if waiting >= state.config.max_waiting {
        return Err(ApiError::busy(waiting));
    }
    Ok(())
}

async fn chat(State(state): State<Arc<AppState>>, ApiJson(req): ApiJson<ChatRequest>) -> Result<Response, ApiError> {
    let n = req.n.unwrap_or(1);
    check_common(&state, &req.model, n, req.temperature)?;
    if req.messages.is_empty() {
        return Err(ApiError::bad_request("messages must not be empty", Some("messages")));
    }
    let mut messages = Vec::with_capacity(req.messages.len());
    for m in &req.messages {
        let role = match m.role.as_str() {
            "system" | "developer" => Role::System,
            "user" => Role::User,
            "assistant" => Role::Assistant,
            other => return Err(ApiError::bad_request(format!("unsupported message role `{other}`"), Some("messages"))),
        };
        messages.push(Message { role, content: content_text(&m.content)? });
    }
    let max_tokens = req
        .max_completion_tokens
        .or(req.max_tokens)
        .unwrap_or(ponder_engine::DEFAULT_MAX_TOKENS.min(state.engine.context_length() / 2));
    let gen = GenerateRequest {
        sampling: sampling(SamplingParams::default(), req.temperature, req.top_p, req.seed, &req.extras)?,
        max_tokens,
        min_tokens: min_tokens(&req.extras, max_tokens)?,
        ignore_eos: req.extras.ignore_eos,
        thinking: thinking_wanted(req.chat_template_kwargs.as_ref(), req.reasoning_effort.as_deref())?,
        thinking_budget: req.thinking_budget,
        stop: stop_sequences(req.stop)?,
        n,
        priority: Priority::Interactive,
        ..GenerateRequest::chat(messages)
    };
    let handle = submit(&state, gen).await?;
    let ctx = Ctx { id: new_id("chatcmpl"), created: now(), model: state.config.model_name.clone() };
    if req.stream {
        let ctx = Arc::new(ctx);
        let usage_chunk = req.stream_options.is_some_and(|o| o.include_usage).then(|| {
            let ctx = ctx.clone();
            move |u| ctx.usage_chunk(u)
        });
        Ok(stream(handle, move |ev, first| ctx.chat_chunk(ev, first), usage_chunk).into_response())
    } else {
        let (events, usage) = collect(handle).await?;
        let mut texts = vec![(String::new(), String::new(), "stop"); n];
        for ev in events {
            match ev {
                Event::Delta { index, channel: Channel::Answer, text } => texts[index].0.push_str(&text),
                Event::Delta { index, channel: Channel::Thinking, text } => texts[index].1.push_str(&text),
                Event::Finished { index, reason, .. } => texts[index].2 = finish_str(reason),
                Event::Started { .. } => {}
            }
        }
        let choices = texts
            .into_iter()
            .enumerate()
            .map(|(index, (content, reasoning, finish))| ChatChoice {
                index,
                message: AssistantMessage {
                    role: "assistant".into(),
                    content,
                    reasoning_content: (!reasoning.is_empty()).then_some(reasoning),
                },
                finish_reason: Some(finish.into()),
                logprobs: None,
            })
            .collect();
        let reply = ChatCompletion {
            id: ctx.id,
            object: "chat.completion".into(),
            created: ctx.created,
            model: ctx.model,
            choices,
            usage,
        };
        Ok(Json(reply).into_response())
    }
}

async fn completions(State(state): State<Arc<AppState>>, ApiJson(req): ApiJson<CompletionRequest>) -> Result<Response, ApiError> {
    let n = req.n.unwrap_or(1);
    check_common(&state, &req.model, n, req.temperature)?;
    let prompt = match req.prompt {
        PromptField::One(s) => s,
        PromptField::Many(v) if v.len() == 1 => v.into_iter().next().unwrap(),
        PromptField::Many(_) => return Err(ApiError::bad_request("one prompt per request", Some("prompt"))),
    };
    // OpenAI's defaults for raw completions: plain sampling, 16 tokens.
    let defaults = SamplingParams { temperature: 1.0, top_p: 1.0, ..SamplingParams::default() };
    let max_tokens = req.max_tokens.unwrap_or(16);
    let gen = GenerateRequest {
        sampling: sampling(defaults, req.temperature, req.top_p, req.seed, &req.extras)?,
        max_tokens,
        min_tokens: min_tokens(&req.extras, max_tokens)?,
        stop: stop_sequences(req.stop)?,
        n,
        priority: Priority::Interactive,
        detect_loops: false,
        ignore_eos: req.extras.ignore_eos,
        ..GenerateRequest { prompt: Prompt::Text(prompt), ..GenerateRequest::text("") }
    };
    let handle = submit(&state, gen).await?;
    let ctx = Ctx { id: new_id("cmpl"), created: now(), model: state.config.model_name.clone() };
    if req.stream {
        Ok(stream(handle, move |ev, _| ctx.completion_chunk(ev), None::<fn(Usage) -> Value>).into_response())
    } else {
        let (events, usage) = collect(handle).await?;
        let mut texts = vec![(String::new(), "stop"); n];
        for ev in events {
            match ev {
                // A raw prompt has no template: any "thinking" is just text.
                Event::Delta { index, text, .. } => texts[index].0.push_str(&text),
                Event::Finished { index, reason, .. } => texts[index].1 = finish_str(reason),
                Event::Started { .. } => {}
            }
        }
        let choices = texts
            .into_iter()
            .enumerate()
            .map(|(index, (text, finish))| CompletionChoice { index, text, finish_reason: Some(finish.into()), logprobs: None })
            .collect();
        let reply = Completion {
            id: ctx.id,
            object: "text_completion".into(),
            created: ctx.created,
            model: ctx.model,
            choices,
            usage: Some(usage),
        };
        Ok(Json(reply).into_response())
    }
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

struct Ctx {
    id: String,
    created: u64,
    model: String,
}

impl Ctx {
    fn chat(&self, choices: Vec<ChunkChoice>, usage: Option<Usage>) -> ChatChunk {
        let (id, object, created, model) = (self.id.clone(), "chat.completion.chunk".into(), self.created, self.model.clone());
        ChatChunk { id, object, created, model, choices, usage, error: None }
    }

    fn chat_chunk(&self, ev: &Event, first: bool) -> Option<Value> {
        let choice = match ev {
            Event::Delta { index, channel, text } => {
                let role = first.then(|| "assistant".to_string());
                let delta = match channel {
                    Channel::Answer => Delta { role, content: Some(text.clone()), ..Default::default() },
                    Channel::Thinking => Delta { role, reasoning_content: Some(text.clone()), ..Default::default() },
                };
                ChunkChoice { index: *index, delta, ..Default::default() }
            }
            Event::Finished { index, reason, .. } => {
                ChunkChoice { index: *index, finish_reason: Some(finish_str(*reason).into()), ..Default::default() }
            }
            Event::Started { .. } => return None,
        };
        serde_json::to_value(self.chat(vec![choice], None)).ok()
    }

    fn completion_chunk(&self, ev: &Event) -> Option<Value> {
        let (index, text, finish) = match ev {
            Event::Delta { index, text, .. } => (*index, text.clone(), None),
            Event::Finished { index, reason, .. } => (*index, String::new(), Some(finish_str(*reason).into())),
            Event::Started { .. } => return None,
        };
        let choices = vec![CompletionChoice { index, text, finish_reason: finish, logprobs: None }];
        let chunk = Completion {
            id: self.id.clone(),
            object: "text_completion".into(),
            created: self.created,
            model: self.model.clone(),
            choices,
            usage: None,
        };
        serde_json::to_value(chunk).ok()
    }

    /// The closing chunk that carries the whole request's usage (`stream_options.include_usage`).
    fn usage_chunk(&self, usage: Usage) -> Value {
        serde_json::to_value(self.chat(Vec::new(), Some(usage))).unwrap_or_default()
    }
}

/// Queues a request. Rendering and tokenising a long prompt takes a while: it runs on a
/// blocking thread, not on the runtime that serves every other connection.
async fn submit(state: &Arc<AppState>, gen: GenerateRequest) -> Result<RequestHandle, ApiError> {
    let engine = state.engine.clone();
    match tokio::task::spawn_blocking(move || engine.submit(gen)).await {
        Ok(submitted) => Ok(submitted?),
        Err(e) => Err(ApiError::internal(format!("the request could not be queued: {e}"))),
    }
}

/// Waits for every sample. The request is cancelled if this future is dropped first (the
/// client went away): dropping the handle cancels it.
async fn collect(mut handle: RequestHandle) -> Result<(Vec<Event>, Usage), ApiError> {
    let events = handle.collect_async().await;
    let (mut prompt, mut completion, mut reasoning, mut finished) = (0, 0, 0, 0);
    for ev in &events {
        if let Event::Finished { usage, error, .. } = ev {
            if let Some(e) = error {
                return Err(ApiError::internal(format!("generation failed: {e}")));
            }
            finished += 1;
            prompt = usage.prompt_tokens;
            completion += usage.completion_tokens();
            reasoning += usage.thinking_tokens;
        }
    }
    if finished < handle.n {
        return Err(ApiError::internal(ENGINE_GONE));
    }
    Ok((events, Usage::new(prompt, completion, reasoning)))
}

/// A request whose events stopped before each of its samples finished.
const ENGINE_GONE: &str = "generation failed: the engine stopped before the reply was finished";

/// Ends a stream that failed, as OpenAI and vLLM do: a chunk with only `error`, then `[DONE]`.
async fn fail_stream(tx: &tokio::sync::mpsc::Sender<Result<SseEvent, Infallible>>, message: &str) {
    let _ = tx.send(Ok(SseEvent::default().data(ApiError::internal(message).body().to_string()))).await;
    let _ = tx.send(Ok(SseEvent::default().data("[DONE]"))).await;
}

/// Server-sent events from a request, forwarded by a task that ends, dropping the handle and
/// so cancelling the request, as soon as the client stops reading.
fn stream(
    mut handle: RequestHandle,
    chunk: impl Fn(&Event, bool) -> Option<Value> + Send + 'static,
    usage_chunk: Option<impl FnOnce(Usage) -> Value + Send + 'static>,
) -> Sse<ReceiverStream<Result<SseEvent, Infallible>>> {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    tokio::spawn(async move {
        let n = handle.n;
        let mut started = vec![false; n];
        let mut done = 0;
        let (mut prompt, mut completion, mut reasoning) = (0, 0, 0);
        while done < n {
            let ev = tokio::select! {
                ev = handle.next_event() => ev,
                // The client left while nothing was being sent (a long prompt, a queue).
                _ = tx.closed() => return,
            };
            let Some(ev) = ev else {
                // The engine dropped the request without finishing it: never end such a stream
                // as if the reply were complete.
                return fail_stream(&tx, ENGINE_GONE).await;
            };
            let first = match &ev {
                Event::Delta { index, .. } => !std::mem::replace(&mut started[*index], true),
                Event::Finished { error: Some(e), .. } => {
                    return fail_stream(&tx, &format!("generation failed: {e}")).await;
                }
                Event::Finished { usage, .. } => {
                    done += 1;
                    prompt = usage.prompt_tokens;
                    completion += usage.completion_tokens();
                    reasoning += usage.thinking_tokens;
                    false
                }
                Event::Started { .. } => false,
            };
            if let Some(v) = chunk(&ev, first) {
                if tx.send(Ok(SseEvent::default().data(v.to_string()))).await.is_err() {
                    return; // client gone: dropping the handle cancels the request
                }
            }
        }
        if let Some(usage_chunk) = usage_chunk {
            let u = usage_chunk(Usage::new(prompt, completion, reasoning));
            let _ = tx.send(Ok(SseEvent::default().data(u.to_string()))).await;
        }
        let _ = tx.send(Ok(SseEvent::default().data("[DONE]"))).await;
    });
    Sse::new(ReceiverStream::new(rx))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_compare_whole() {
        assert!(same_key(b"secret", b"secret"));
        for wrong in [&b"secreT"[..], b"secret2", b"secre", b""] {
            assert!(!same_key(wrong, b"secret"), "{wrong:?}");
        }
    }

    #[test]
    fn stop_sequences_within_openai_limits() {
        use ponder_openai::Stop;
        assert_eq!(stop_sequences(Some(Stop::One("\n".into()))).unwrap(), ["\n"]);
        assert!(stop_sequences(Some(Stop::Many(vec!["a".into(); 5]))).unwrap_err().message.contains("at most 4"));
        assert!(stop_sequences(Some(Stop::One("x".repeat(257)))).unwrap_err().message.contains("1 to 256 bytes"));
        assert!(stop_sequences(Some(Stop::One(String::new()))).is_err());
    }
}
