//! The OpenAI wire format, as much of it as Ponder speaks. One set of types serves both ends:
//! `ponder-server` reads requests and writes responses with them, and the remote backend of
//! `ponder-jobs` writes requests and reads responses from other servers (vLLM, llama.cpp's
//! server, another Ponder). Reading is lenient: servers differ in what they leave out, so a
//! missing field takes its default instead of failing a whole stream.

use serde::{Deserialize, Serialize};
use serde_json::Value;

// ---- Requests ----

/// `stop`: one string or several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Stop {
    One(String),
    Many(Vec<String>),
}

impl Stop {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            Stop::One(s) => vec![s],
            Stop::Many(v) => v,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    pub role: String,
    /// A string, or an array of `{"type": "text", "text": ...}` parts.
    #[serde(default)]
    pub content: Value,
}

impl ChatMessage {
    pub fn text(role: &str, content: &str) -> Self {
        Self { role: role.into(), content: Value::String(content.into()) }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub messages: Vec<ChatMessage>,
    #[serde(default)]
    pub stream: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_completion_tokens: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Ponder's own: close the thought after this many thinking tokens. Other servers ignore
    /// a field they do not know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_budget: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_options: Option<StreamOptions>,
    /// Variables for the chat template, as vLLM takes them: `{"enable_thinking": false}`
    /// turns a Qwen3 model's thinking off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_template_kwargs: Option<serde_json::Map<String, Value>>,
    /// OpenAI's reasoning effort: `"none"` turns thinking off where the model allows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_effort: Option<String>,
    #[serde(flatten)]
    pub extras: SamplingExtras,
}

/// vLLM's sampling parameters beyond OpenAI's, taken by both endpoints: tools written for vLLM
/// send them to `/v1/chat/completions` as well as to `/v1/completions`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SamplingExtras {
    /// Keep generating past end-of-sequence (fixed-length benchmarks and tests).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignore_eos: bool,
    /// No end-of-sequence before this many tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_tokens: Option<usize>,
    /// The most likely tokens to draw from; 0 or -1 is no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_k: Option<i64>,
    /// Tokens less likely than this fraction of the likeliest are not drawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_p: Option<f32>,
    /// Above 1, tokens already in the prompt or the output are made less likely.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetition_penalty: Option<f32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StreamOptions {
    #[serde(default)]
    pub include_usage: bool,
}

/// `/v1/completions`' `prompt`: one string or several.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PromptField {
    One(String),
    Many(Vec<String>),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub prompt: PromptField,
    #[serde(default)]
    pub stream: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop: Option<Stop>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    #[serde(flatten)]
    pub extras: SamplingExtras,
}

// ---- Responses ----

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Usage {
    pub prompt_tokens: usize,
    pub completion_tokens: usize,
    pub total_tokens: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<TokenDetails>,
}

impl Usage {
    /// Counts as Ponder reports them: the reasoning tokens are part of the completion's.
    pub fn new(prompt: usize, completion: usize, reasoning: usize) -> Self {
        Self {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
            completion_tokens_details: Some(TokenDetails { reasoning_tokens: reasoning }),
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TokenDetails {
    pub reasoning_tokens: usize,
}

/// A whole chat reply (`stream: false`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatCompletion {
    pub id: String,
    pub object: String,
    pub created: u64,
    pub model: String,
    pub choices: Vec<ChatChoice>,
    pub usage: Usage,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatChoice {
    pub index: usize,
    pub message: AssistantMessage,
    pub finish_reason: Option<String>,
    #[serde(default)]
    pub logprobs: Option<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AssistantMessage {
    pub role: String,
    pub content: String,
    /// The thought, apart from the answer (as DeepSeek's API and vLLM's reasoning parsers do).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
}

/// One server-sent event of a streamed chat reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChatChunk {
    pub id: String,
    pub object: String,
    pub created: u64,
    pub model: String,
    pub choices: Vec<ChunkChoice>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
    /// Some servers report a failure mid-stream as a chunk with only this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<Value>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChunkChoice {
    pub index: usize,
    pub delta: Delta,
    pub finish_reason: Option<String>,
    /// Per-choice counts, which some servers send instead of a usage chunk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Delta {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Older vLLM's name for `reasoning_content`; read, never written.
    #[serde(skip_serializing)]
    pub reasoning: Option<String>,
}

impl Delta {
    /// The thought in this delta, under either name.
    pub fn thinking(&self) -> Option<&str> {
        self.reasoning_content.as_deref().or(self.reasoning.as_deref()).filter(|t| !t.is_empty())
    }
}

/// A whole raw completion (`/v1/completions`, `stream: false`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    pub id: String,
    pub object: String,
    pub created: u64,
    pub model: String,
    pub choices: Vec<CompletionChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<Usage>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompletionChoice {
    pub index: usize,
    pub text: String,
    pub finish_reason: Option<String>,
    #[serde(default)]
    pub logprobs: Option<Value>,
}

/// `GET /models`. A body without `data` is no model list at all, so that field is required.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelList {
    #[serde(default)]
    pub object: String,
    pub data: Vec<ModelEntry>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ModelEntry {
    pub id: String,
    pub object: String,
    pub created: u64,
    pub owned_by: String,
}

// ---- Addresses ----

/// `localhost`, `127.0.0.1` (any 127/8 address) or `[::1]`, with or without a port: a URL's
/// authority (or a `Host` header) that names this machine. The server refuses other names (DNS
/// rebinding); the remote backend warns before sending a key in clear to them.
pub fn is_loopback_authority(authority: &str) -> bool {
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => {
            authority
                .rsplit_once(':')
                .map_or(authority, |(h, port)| if port.bytes().all(|b| b.is_ascii_digit()) { h } else { authority })
        }
    };
    host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_with_and_without_ports() {
        for ok in
            ["localhost", "localhost:8080", "LOCALHOST:1", "127.0.0.1", "127.0.0.1:8080", "127.1.2.3:9", "[::1]", "[::1]:8080"]
        {
            assert!(is_loopback_authority(ok), "{ok}");
        }
        for bad in ["evil.com", "evil.com:8080", "localhost.evil.com", "127.0.0.1.evil.com", "192.168.1.2:8080", "", "[::2]:80"] {
            assert!(!is_loopback_authority(bad), "{bad}");
        }
    }
    use serde_json::json;

    #[test]
    fn a_streamed_chunk_writes_only_what_it_carries() {
        let c = ChatChunk {
            id: "x".into(),
            object: "chat.completion.chunk".into(),
            created: 1,
            model: "m".into(),
            choices: vec![ChunkChoice {
                index: 0,
                delta: Delta { content: Some("4".into()), ..Default::default() },
                ..Default::default()
            }],
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&c).unwrap(),
            json!({"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m",
                   "choices": [{"index": 0, "delta": {"content": "4"}, "finish_reason": null}]})
        );
    }

    #[test]
    fn chunks_from_other_servers_read_with_what_they_leave_out() {
        let c: ChatChunk = serde_json::from_value(json!({"choices": [{"delta": {"reasoning": "hm"}}]})).unwrap();
        assert_eq!((c.choices[0].index, c.choices[0].delta.thinking()), (0, Some("hm")));
        let c: ChatChunk = serde_json::from_value(json!({"choices": [], "usage": {"completion_tokens": 7}})).unwrap();
        assert_eq!(c.usage.map(|u| u.completion_tokens), Some(7));
        let c: ChatChunk = serde_json::from_value(json!({"error": {"message": "overloaded"}})).unwrap();
        assert!(c.error.is_some() && c.choices.is_empty());
    }

    #[test]
    fn a_request_round_trips_and_leaves_out_what_was_not_set() {
        let r = ChatRequest { messages: vec![ChatMessage::text("user", "hi")], stream: true, n: Some(2), ..Default::default() };
        let v = serde_json::to_value(&r).unwrap();
        assert_eq!(v, json!({"messages": [{"role": "user", "content": "hi"}], "stream": true, "n": 2}));
        assert_eq!(serde_json::from_value::<ChatRequest>(v).unwrap(), r);
    }
}
