//! What can be known about a request before it is queued: its parameters, its rendered prompt
//! and whether that prompt fits the context and the KV memory. These errors are returned by
//! [`super::Engine::submit`] rather than sent as events.

use super::Shared;
use crate::error::{EngineError, InvalidRequest, Result};
use crate::request::{GenerateRequest, Prompt};

/// A request that passed every check, with its prompt rendered and tokenised.
pub(super) struct Validated {
    pub tokens: Vec<u32>,
    /// The prompt opens the thought (R1 templates end with `<think>\n`): text streams as
    /// thinking first.
    pub starts_thinking: bool,
    /// New tokens per sample: the request's, or less when it asked to fit the context.
    pub max_tokens: usize,
}

/// What to do with a request whose prompt and `max_tokens` together exceed the context.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Overflow {
    Refuse,
    /// Give the sample what the context leaves after the prompt (none left is still refused).
    Shorten,
}

pub(super) fn render(shared: &Shared, prompt: &Prompt, thinking: Option<bool>) -> Result<String> {
    match prompt {
        Prompt::Chat(messages) => shared.template.render_with(messages, thinking),
        Prompt::Text(t) => Ok(t.clone()),
    }
}

pub(super) fn validate(shared: &Shared, req: &GenerateRequest, overflow: Overflow) -> Result<Validated> {
    req.sampling.validate()?;
    if req.n == 0 || req.n > shared.max_seqs {
        return Err(InvalidRequest::Samples { n: req.n, max: shared.max_seqs }.into());
    }
    if req.max_tokens == 0 {
        return Err(InvalidRequest::NoTokens.into());
    }
    let text = render(shared, &req.prompt, req.thinking)?;
    let context_length = shared.context_length;
    // No token covers more than `max_token_bytes` of text (4x for a normaliser that composes
    // characters): past that, the prompt cannot fit, and tokenising megabytes would only make
    // the caller wait to hear it.
    if text.len() > context_length.saturating_mul(shared.tokenizer.max_token_bytes).saturating_mul(4) {
        return Err(InvalidRequest::PromptTooLong { bytes: text.len(), context_length }.into());
    }
    let tokens = shared.tokenizer.encode_prompt(&text)?;
    if tokens.is_empty() {
        return Err(InvalidRequest::EmptyPrompt.into());
    }
    let room = context_length.saturating_sub(tokens.len());
    let max_tokens = match overflow {
        Overflow::Shorten if room > 0 => req.max_tokens.min(room),
        _ => req.max_tokens,
    };
    // Saturating: a max_tokens near usize::MAX must not wrap past the check.
    if tokens.len().saturating_add(max_tokens) > context_length {
        return Err(EngineError::ContextOverflow { prompt_tokens: tokens.len(), max_tokens: req.max_tokens, context_length });
    }
    if tokens.len().saturating_mul(req.n) > shared.kv_budget_tokens {
        return Err(InvalidRequest::KvBudget { n: req.n, prompt_tokens: tokens.len(), budget: shared.kv_budget_tokens }.into());
    }
    Ok(Validated { tokens, starts_thinking: text.trim_end().ends_with("<think>"), max_tokens })
}
