//! What callers send to the engine and what they get back.

use crate::chat_template::Message;
use crate::sampler::SamplingParams;
use crate::stream::Channel;
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Chat goes first: interactive requests are scheduled before batch work and may pause it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Interactive,
    #[default]
    Batch,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Prompt {
    /// A conversation, rendered with the model's chat template.
    Chat(Vec<Message>),
    /// Raw text, used as is (OpenAI's `/v1/completions`).
    Text(String),
}

/// New tokens per sample when a caller does not say: room for a real chain of thought on a
/// school problem. The app's chat has a setting of its own (see its settings).
pub const DEFAULT_MAX_TOKENS: usize = 4096;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GenerateRequest {
    pub prompt: Prompt,
    pub sampling: SamplingParams,
    /// New tokens per sample, thinking included.
    pub max_tokens: usize,
    /// Past this many thinking tokens the engine closes the thought and lets the model answer.
    pub thinking_budget: Option<usize>,
    pub stop: Vec<String>,
    /// Samples of the same prompt; they share one prefill.
    pub n: usize,
    pub priority: Priority,
    /// Stop samples that fall into a repetition loop.
    pub detect_loops: bool,
    /// Keep generating past end-of-sequence tokens (benchmarks need fixed lengths).
    #[serde(default)]
    pub ignore_eos: bool,
    /// No end-of-sequence token before this many new tokens (vLLM's `min_tokens`).
    #[serde(default)]
    pub min_tokens: usize,
    /// Think first, for a model whose template lets a request choose (Qwen3); `None` is the
    /// model's default. R1 models think whatever this says, instruct models never do.
    #[serde(default)]
    pub thinking: Option<bool>,
    /// When the sample decodes alone, guess a few tokens ahead by n-gram lookup and check the
    /// guesses in one step (speculative decoding). The output is the same either way (greedy:
    /// bit for bit; sampled: in distribution); only the speed differs.
    #[serde(default = "yes")]
    pub speculate: bool,
}

fn yes() -> bool {
    true
}

impl GenerateRequest {
    pub fn chat(messages: Vec<Message>) -> Self {
        Self {
            prompt: Prompt::Chat(messages),
            sampling: SamplingParams::default(),
            max_tokens: DEFAULT_MAX_TOKENS,
            thinking_budget: None,
            stop: Vec::new(),
            n: 1,
            priority: Priority::Interactive,
            detect_loops: true,
            ignore_eos: false,
            min_tokens: 0,
            thinking: None,
            speculate: true,
        }
    }

    pub fn text(prompt: impl Into<String>) -> Self {
        Self { prompt: Prompt::Text(prompt.into()), ..Self::chat(Vec::new()) }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FinishReason {
    /// End of sequence or a stop string.
    Stop,
    /// `max_tokens` or the context length reached.
    Length,
    Cancelled,
    /// A degenerate repetition loop was cut off.
    Repetition,
    Error,
}

impl FinishReason {
    /// The name stored with a sample or a reply and shown (translated) by the window; the same
    /// as its serde form. OpenAI's wire names are the server's business.
    pub fn as_str(self) -> &'static str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::Cancelled => "cancelled",
            FinishReason::Repetition => "repetition",
            FinishReason::Error => "error",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: usize,
    pub thinking_tokens: usize,
    pub answer_tokens: usize,
    /// From submission to the first generated token.
    pub time_to_first_token: Option<Duration>,
    /// Generation speed of this sample after its first token.
    pub tokens_per_second: f64,
}

impl Usage {
    pub fn completion_tokens(&self) -> usize {
        self.thinking_tokens + self.answer_tokens
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The request left the queue and its prompt is being read.
    Started {
        prompt_tokens: usize,
        queue_wait: Duration,
    },
    /// New text of sample `index`, always whole UTF-8 characters.
    Delta {
        index: usize,
        channel: Channel,
        text: String,
    },
    Finished {
        index: usize,
        reason: FinishReason,
        usage: Usage,
        error: Option<String>,
    },
}

#[cfg(test)]
mod tests {
    use super::FinishReason;

    #[test]
    fn a_finish_reason_has_one_name_whether_stored_or_serialised() {
        use FinishReason::*;
        for r in [Stop, Length, Cancelled, Repetition, Error] {
            assert_eq!(serde_json::to_value(r).unwrap(), r.as_str(), "{r:?}");
        }
    }
}
