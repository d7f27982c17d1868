//! A model's perplexity on a text, computed as llama.cpp's `llama-perplexity` computes it, so
//! that the two can be compared on the same file: the text's tokens are cut into chunks of
//! `context` tokens, each chunk is read from an empty cache, and only the second half of each
//! chunk is scored, since its tokens have at least half a context before them. Where the model
//! adds a BOS token, it takes the place of each chunk's first token.

use crate::decoder::StepInput;
use crate::error::EngineError;
use crate::kv_cache::KvCacheType;
use crate::loader::LoadedModel;
use crate::Result;

#[derive(Debug, Clone)]
pub struct PerplexityOptions {
    /// Tokens per chunk (llama.cpp's `-c`, 512 by default there and here).
    pub context: usize,
    /// Score at most this many chunks (llama.cpp's `--chunks`).
    pub max_chunks: Option<usize>,
    /// How the cache stores keys and values (llama.cpp's `-ctk` and `-ctv`).
    pub kv_cache: KvCacheType,
}

impl Default for PerplexityOptions {
    fn default() -> Self {
        Self { context: 512, max_chunks: None, kv_cache: KvCacheType::F16 }
    }
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct PerplexityReport {
    pub context: usize,
    pub kv_cache: KvCacheType,
    pub chunks: usize,
    /// Tokens whose probability counted: `context / 2 - 1` per chunk.
    pub scored_tokens: usize,
    pub perplexity: f64,
    /// The standard error of the perplexity, as llama.cpp gives it after "±".
    pub std_error: f64,
}

/// Running sums of the negative log-likelihoods.
#[derive(Default)]
struct Nll {
    sum: f64,
    sum_sq: f64,
    count: usize,
}

impl Nll {
    fn add(&mut self, nll: f64) {
        self.sum += nll;
        self.sum_sq += nll * nll;
        self.count += 1;
    }

    /// Perplexity and its standard error, by llama.cpp's formula.
    fn estimate(&self) -> (f64, f64) {
        let n = self.count as f64;
        let mean = self.sum / n;
        let ppl = mean.exp();
        let var = self.sum_sq / n - mean * mean;
        let err = if var > 0.0 && self.count > 1 { (var / (n - 1.0)).sqrt() * ppl } else { 0.0 };
        (ppl, err)
    }
}

/// `-log p(target)` under the softmax of `logits`, in f64.
fn nll(logits: &[f32], target: u32) -> f64 {
    let max = logits.iter().fold(f32::NEG_INFINITY, |m, &l| m.max(l)) as f64;
    let sum: f64 = logits.iter().map(|&l| (l as f64 - max).exp()).sum();
    sum.ln() + max - logits[target as usize] as f64
}

/// Scores `text`; `progress` hears each chunk's number, the number of chunks and the running
/// perplexity.
pub fn perplexity(
    loaded: &LoadedModel,
    text: &str,
    opts: &PerplexityOptions,
    mut progress: impl FnMut(usize, usize, f64),
) -> Result<PerplexityReport> {
    let context = opts.context;
    if context < 4 || context > loaded.model.config().context_length {
        return Err(EngineError::InvalidConfig("the perplexity context must be from 4 tokens to the model's context length"));
    }
    let tokenizer = &loaded.tokenizer;
    let mut tokens = tokenizer.encode_plain(text)?;
    if let (true, Some(bos)) = (tokenizer.add_bos, tokenizer.bos_id) {
        tokens.insert(0, bos);
    }
    if tokens.len() < 2 * context {
        return Err(EngineError::TextTooShort { tokens: tokens.len(), needed: 2 * context, context });
    }
    let chunks = (tokens.len() / context).min(opts.max_chunks.unwrap_or(usize::MAX));
    let first = context / 2;
    let mut nlls = Nll::default();
    for c in 0..chunks {
        let mut chunk = tokens[c * context..(c + 1) * context].to_vec();
        if let (true, Some(bos)) = (tokenizer.add_bos, tokenizer.bos_id) {
            chunk[0] = bos;
        }
        let mut cache = loaded.model.new_cache(opts.kv_cache);
        // Logits at positions first..context-1; the last one predicts past the chunk.
        let logits = loaded
            .model
            .forward(&mut [StepInput { tokens: &chunk, cache: &mut cache, logit_rows: context - first }])?
            .expect("logits were asked for");
        let logits = logits.to_dtype(candle_core::DType::F32)?.to_vec2::<f32>()?;
        for (row, &target) in logits.iter().zip(&chunk[first + 1..]) {
            nlls.add(nll(row, target));
        }
        progress(c + 1, chunks, nlls.estimate().0);
    }
    let (perplexity, std_error) = nlls.estimate();
    Ok(PerplexityReport {
        context,
        kv_cache: loaded.model.kv_cache_type(opts.kv_cache),
        chunks,
        scored_tokens: nlls.count,
        perplexity,
        std_error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nll_is_the_negative_log_softmax() {
        let logits = [1.0f32, 2.0, 3.0];
        let z: f64 = [1.0f64, 2.0, 3.0].iter().map(|l| l.exp()).sum();
        for t in 0..3 {
            let want = -((t as f64 + 1.0).exp() / z).ln();
            assert!((nll(&logits, t) - want).abs() < 1e-12);
        }
        // Large logits do not overflow.
        assert!((nll(&[1000.0, 1000.0], 0) - 2f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn the_estimate_matches_llama_cpps_formula() {
        let mut n = Nll::default();
        for x in [1.0, 2.0, 3.0] {
            n.add(x);
        }
        let (ppl, err) = n.estimate();
        assert!((ppl - 2f64.exp()).abs() < 1e-12);
        // Variance 2/3 of the three, over n - 1, times the perplexity.
        assert!((err - ((2.0 / 3.0) / 2.0f64).sqrt() * 2f64.exp()).abs() < 1e-12);
    }
}
