//! Drafts from a small model with the same vocabulary (see [`crate::speculate`] for the n-gram
//! drafts and how any draft is verified). A draft model guesses where n-gram lookup has nothing
//! to go on, at the cost of running it: it pays when it is much cheaper than the model it drafts
//! for (a 1.5B drafting for a 7B), and costs time when it is not.
//!
//! The draft model proposes greedily, so its draft is a fixed guess like an n-gram draft, and
//! the same acceptance rule keeps sampled output's distribution (see
//! [`crate::sampler::Sampler::sample_draft`]). It stops drafting where it is unsure of its own
//! next token ([`MIN_CONFIDENCE`]): a guess that will likely be rejected costs a row of the
//! big model's step and a step of its own.

use crate::decoder::{Decoder, StepInput};
use crate::error::{EngineError, Result};
use crate::kv_cache::{KvCacheType, SeqCache};
use crate::loader::{LoadedModel, ModelInfo};
use crate::sampler::argmax;
use crate::tokenizer::Tokenizer;
use std::sync::Arc;

/// The draft model's probability for its own top token below which it stops drafting, as
/// llama.cpp's speculative decoding does (its default is 0.75). With the 0.5B test model drafting
/// for the 1.5B, 0.6 and 0.8 ran at the same speed (83 % and 90 % of drafts taken).
const MIN_CONFIDENCE: f32 = 0.6;

/// The longest run of tokens the draft model reads in one step while it catches up (a new
/// prompt), so its step buffers stay as small as the big model's.
const CATCH_UP_CHUNK: usize = 512;

/// A loaded draft model, for [`crate::EngineConfig::draft`].
#[derive(Clone)]
pub struct DraftModel {
    model: Arc<Decoder>,
    tokenizer: Arc<Tokenizer>,
    info: ModelInfo,
}

impl DraftModel {
    pub fn new(loaded: LoadedModel) -> Self {
        Self { model: Arc::new(loaded.model), tokenizer: Arc::new(loaded.tokenizer), info: loaded.info }
    }

    pub fn info(&self) -> &ModelInfo {
        &self.info
    }

    /// Whether this model can draft for a model with `tokenizer`: a token id must mean the same
    /// text to both. Special tokens may differ (the R1 distills renamed Qwen's), as only
    /// ordinary text is drafted.
    pub fn check_vocabulary(&self, tokenizer: &Tokenizer) -> Result<()> {
        match self.tokenizer.vocabulary_differences(tokenizer) {
            0 => Ok(()),
            differ => Err(EngineError::DraftModel(format!(
                "{} cannot draft for this model: {differ} tokens of their vocabularies differ",
                self.info.name
            ))),
        }
    }

    pub(crate) fn into_drafter(self) -> Drafter {
        let cache = self.model.new_cache(KvCacheType::F16);
        Drafter { model: self.model, cache, cached: Vec::new() }
    }
}

impl std::fmt::Debug for DraftModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DraftModel").field("name", &self.info.name).finish()
    }
}

/// The engine thread's draft model and the one cache it keeps: drafts are made for one lone
/// sequence at a time, and a cache holding the longest common prefix of what it read before and
/// what it is asked about now serves any sequence (the same chat's next step, mostly).
pub(crate) struct Drafter {
    model: Arc<Decoder>,
    cache: SeqCache,
    /// The tokens `cache` holds. It only grows after a step succeeded, so it is never longer
    /// than the cache, even after a panic.
    cached: Vec<u32>,
}

impl Drafter {
    /// Up to `max` tokens the draft model expects after `tokens`, greedily, stopping early
    /// where it is unsure.
    pub fn propose(&mut self, tokens: &[u32], max: usize) -> candle_core::Result<Vec<u32>> {
        let context = self.model.config().context_length;
        let max = max.min(context.saturating_sub(tokens.len() + 1));
        if max == 0 || tokens.is_empty() {
            return Ok(Vec::new());
        }
        // Keep what the cache shares with `tokens`, but read the last token again: its row of
        // logits gives the first guess.
        let common = self.cached.iter().zip(tokens).take_while(|(a, b)| a == b).count().min(tokens.len() - 1);
        self.cached.truncate(common);
        self.cache.truncate(common);
        let mut pending = tokens[common..].to_vec();
        let mut draft = Vec::with_capacity(max);
        while draft.len() < max {
            let mut logits = Vec::new();
            let chunks = pending.chunks(CATCH_UP_CHUNK).count();
            for (i, chunk) in pending.chunks(CATCH_UP_CHUNK).enumerate() {
                // Only the last token's row is a guess; the chunks before it only fill the cache.
                let mut input = [StepInput { tokens: chunk, cache: &mut self.cache, logit_rows: usize::from(i + 1 == chunks) }];
                let out = self.model.forward(&mut input)?;
                self.cached.extend_from_slice(chunk);
                logits = out.map(|t| t.flatten_all()?.to_vec1::<f32>()).transpose()?.unwrap_or_default();
            }
            let Some((token, confidence)) = top(&logits) else { break };
            if confidence < MIN_CONFIDENCE {
                break;
            }
            draft.push(token);
            pending = vec![token];
        }
        Ok(draft)
    }
}

/// The most likely token of a row of logits, chosen as greedy decoding chooses it (ties to the
/// lowest id), and its probability.
fn top(logits: &[f32]) -> Option<(u32, f32)> {
    let best = argmax(logits);
    let max = *logits.get(best as usize)?;
    let sum: f32 = logits.iter().map(|&l| (l - max).exp()).sum();
    Some((best, 1.0 / sum))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_top_token_and_its_probability() {
        let (t, p) = top(&[0.0, 2.0_f32.ln(), 0.0]).unwrap();
        assert_eq!(t, 1);
        assert!((p - 0.5).abs() < 1e-6, "{p}");
        assert_eq!(top(&[]), None);
        assert_eq!(top(&[1.0, 3.0, 3.0]).unwrap().0, 1, "a tie goes to the lowest id, as in greedy decoding");
    }
}
