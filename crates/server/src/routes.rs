//! Request handlers. Each request runs on the engine; a thread per request turns its engine
//! events into HTTP output, and a client that disconnects cancels the request.

use crate::api::{ChatRequest, CompletionRequest, ModelEntry, PromptField, TokenDetails, Usage};
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
use ponder_engine::{Channel, Event, FinishReason, GenerateRequest, Message, Priority, Prompt, RequestHandle, Role, SamplingParams};
use serde_json::{json, Value};
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
        .layer(DefaultBodyLimit::max(limit))
        .with_state(state)
}

async fn auth(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(key) = &state.config.api_key {
        let ok = req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|given| given == key);
        if !ok {
            return ApiError::unauthorized().into_response();
        }
    }
    next.run(req).await
}

async fn models(State(state): State<Arc<AppState>>) -> Json<Value> {
    let entry = ModelEntry { id: state.config.model_name.clone(), object: "model", created: state.created, owned_by: "ponder" };
    Json(json!({"object": "list", "data": [entry]}))
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
            .filter_map(|p| (p["type"] == "text").then(|| p["text"].as_str().unwrap_or_default().to_string()))
            .collect::<Vec<_>>()
            .join("")),
        _ => Err(ApiError::bad_request("message content must be a string or an array of text parts", Some("messages"))),
    }
}

fn check_common(state: &AppState, model: &Option<String>, n: usize, temperature: Option<f32>) -> Result<(), ApiError> {
    if let Some(m) = model {
        if m != &state.config.model_name && !m.is_empty() {
            return Err(ApiError::not_found(format!("model `{m}` is not served here (this server has `{}`)", state.config.model_name)));
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

/// Cancels the request when the handler is dropped (the client went away) before it finished.
struct CancelOnDrop(Arc<AtomicBool>, bool);

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.1 {
            self.0.store(true, Ordering::Relaxed);
        }
    }
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
    let defaults = SamplingParams::default();
    let gen = GenerateRequest {
        sampling: SamplingParams {
            temperature: req.temperature.unwrap_or(defaults.temperature),
            top_p: req.top_p.unwrap_or(defaults.top_p),
            seed: req.seed,
            ..defaults
        },
        max_tokens: req.max_completion_tokens.or(req.max_tokens).unwrap_or(4096.min(state.engine.context_length() / 2)),
        thinking_budget: req.thinking_budget,
        stop: req.stop.map(|s| s.into_vec()).unwrap_or_default(),
        n,
        priority: Priority::Interactive,
        ..GenerateRequest::chat(messages)
    };
    let handle = state.engine.submit(gen)?;
    let ctx = Ctx { id: new_id("chatcmpl"), created: now(), model: state.config.model_name.clone() };
    if req.stream {
        let include_usage = req.stream_options.is_some_and(|o| o.include_usage);
        Ok(stream(handle, move |ev, first| ctx.chat_chunk(ev, first), include_usage).into_response())
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
        let choices: Vec<Value> = texts
            .into_iter()
            .enumerate()
            .map(|(i, (content, reasoning, finish))| {
                let mut msg = json!({"role": "assistant", "content": content});
                if !reasoning.is_empty() {
                    msg["reasoning_content"] = json!(reasoning);
                }
                json!({"index": i, "message": msg, "finish_reason": finish, "logprobs": null})
            })
            .collect();
        Ok(Json(json!({
            "id": ctx.id, "object": "chat.completion", "created": ctx.created, "model": ctx.model,
            "choices": choices, "usage": usage,
        }))
        .into_response())
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
    let defaults = SamplingParams::default();
    let gen = GenerateRequest {
        sampling: SamplingParams {
            temperature: req.temperature.unwrap_or(1.0),
            top_p: req.top_p.unwrap_or(1.0),
            seed: req.seed,
            ..defaults
        },
        max_tokens: req.max_tokens.unwrap_or(16),
        stop: req.stop.map(|s| s.into_vec()).unwrap_or_default(),
        n,
        priority: Priority::Interactive,
        detect_loops: false,
        ignore_eos: req.ignore_eos,
        ..GenerateRequest { prompt: Prompt::Text(prompt), ..GenerateRequest::text("") }
    };
    let handle = state.engine.submit(gen)?;
    let ctx = Ctx { id: new_id("cmpl"), created: now(), model: state.config.model_name.clone() };
    if req.stream {
        Ok(stream(handle, move |ev, _| ctx.completion_chunk(ev), false).into_response())
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
        let choices: Vec<Value> = texts
            .into_iter()
            .enumerate()
            .map(|(i, (text, finish))| json!({"index": i, "text": text, "finish_reason": finish, "logprobs": null}))
            .collect();
        Ok(Json(json!({
            "id": ctx.id, "object": "text_completion", "created": ctx.created, "model": ctx.model,
            "choices": choices, "usage": usage,
        }))
        .into_response())
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
    fn chunk(&self, object: &str, choices: Value) -> Value {
        json!({"id": self.id, "object": object, "created": self.created, "model": self.model, "choices": choices})
    }

    fn chat_chunk(&self, ev: &Event, first: bool) -> Option<Value> {
        match ev {
            Event::Delta { index, channel, text } => {
                let mut delta = match channel {
                    Channel::Answer => json!({"content": text}),
                    Channel::Thinking => json!({"reasoning_content": text}),
                };
                if first {
                    delta["role"] = json!("assistant");
                }
                Some(self.chunk("chat.completion.chunk", json!([{"index": index, "delta": delta, "finish_reason": null}])))
            }
            Event::Finished { index, reason, .. } => Some(self.chunk(
                "chat.completion.chunk",
                json!([{"index": index, "delta": {}, "finish_reason": finish_str(*reason)}]),
            )),
            Event::Started { .. } => None,
        }
    }

    fn completion_chunk(&self, ev: &Event) -> Option<Value> {
        match ev {
            Event::Delta { index, text, .. } => {
                Some(self.chunk("text_completion", json!([{"index": index, "text": text, "finish_reason": null}])))
            }
            Event::Finished { index, reason, .. } => Some(self.chunk(
                "text_completion",
                json!([{"index": index, "text": "", "finish_reason": finish_str(*reason)}]),
            )),
            Event::Started { .. } => None,
        }
    }
}

fn usage_of(prompt: usize, completion: usize, reasoning: usize) -> Usage {
    Usage {
        prompt_tokens: prompt,
        completion_tokens: completion,
        total_tokens: prompt + completion,
        completion_tokens_details: TokenDetails { reasoning_tokens: reasoning },
    }
}

/// Waits for every sample on a blocking thread; the request is cancelled if this future is
/// dropped first.
async fn collect(handle: RequestHandle) -> Result<(Vec<Event>, Usage), ApiError> {
    let mut guard = CancelOnDrop(handle.cancel_flag(), false);
    let events = tokio::task::spawn_blocking(move || handle.collect())
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?;
    guard.1 = true;
    let (mut prompt, mut completion, mut reasoning) = (0, 0, 0);
    for ev in &events {
        if let Event::Finished { usage, error, .. } = ev {
            if let Some(e) = error {
                return Err(ApiError::internal(format!("generation failed: {e}")));
            }
            prompt = usage.prompt_tokens;
            completion += usage.completion_tokens();
            reasoning += usage.thinking_tokens;
        }
    }
    Ok((events, usage_of(prompt, completion, reasoning)))
}

/// Server-sent events from a request. The reading thread stops, and the request is cancelled,
/// as soon as the client stops reading.
fn stream(
    handle: RequestHandle,
    chunk: impl Fn(&Event, bool) -> Option<Value> + Send + 'static,
    include_usage: bool,
) -> Sse<ReceiverStream<Result<SseEvent, Infallible>>> {
    let (tx, rx) = tokio::sync::mpsc::channel(64);
    std::thread::spawn(move || {
        let n = handle.n;
        let mut started = vec![false; n];
        let mut done = 0;
        let (mut prompt, mut completion, mut reasoning) = (0, 0, 0);
        while done < n {
            let Some(ev) = handle.recv() else { break };
            let first = match &ev {
                Event::Delta { index, .. } => !std::mem::replace(&mut started[*index], true),
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
                if tx.blocking_send(Ok(SseEvent::default().data(v.to_string()))).is_err() {
                    return; // client gone: dropping the handle cancels the request
                }
            }
        }
        if include_usage {
            let u = json!({"choices": [], "usage": usage_of(prompt, completion, reasoning)});
            let _ = tx.blocking_send(Ok(SseEvent::default().data(u.to_string())));
        }
        let _ = tx.blocking_send(Ok(SseEvent::default().data("[DONE]")));
    });
    Sse::new(ReceiverStream::new(rx))
}
