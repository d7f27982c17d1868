//! Picks the next token from a row of logits. Each request owns its sampler and its random
//! generator, seeded per request, so its output depends only on its seed, never on what it was
//! batched with.

use crate::error::InvalidRequest;
use rand::{rngs::StdRng, Rng, SeedableRng};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SamplingParams {
    /// 0 means greedy.
    pub temperature: f32,
    pub top_p: f32,
    /// 0 means off.
    pub top_k: usize,
    /// 0 means off.
    pub min_p: f32,
    /// 1 means off; applied to tokens already in the prompt or the output.
    pub repetition_penalty: f32,
    pub seed: Option<u64>,
}

impl Default for SamplingParams {
    /// The DeepSeek-R1 model card's recommendation.
    fn default() -> Self {
        Self { temperature: 0.6, top_p: 0.95, top_k: 0, min_p: 0.0, repetition_penalty: 1.0, seed: None }
    }
}

impl SamplingParams {
    pub fn greedy() -> Self {
        Self { temperature: 0.0, ..Self::default() }
    }

    pub fn validate(&self) -> Result<(), InvalidRequest> {
        if !(self.temperature >= 0.0 && self.temperature.is_finite()) {
            return Err(InvalidRequest::Temperature(self.temperature));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(InvalidRequest::TopP(self.top_p));
        }
        if !(0.0..=1.0).contains(&self.min_p) {
            return Err(InvalidRequest::MinP(self.min_p));
        }
        if !(self.repetition_penalty > 0.0 && self.repetition_penalty.is_finite()) {
            return Err(InvalidRequest::RepetitionPenalty(self.repetition_penalty));
        }
        Ok(())
    }
}

pub struct Sampler {
    params: SamplingParams,
    rng: StdRng,
}

impl Sampler {
    /// `stream` separates the `n` samples of one request that share a seed.
    pub fn new(params: SamplingParams, stream: u64) -> Self {
        let seed = params.seed.unwrap_or_else(|| rand::rng().random());
        let rng = StdRng::seed_from_u64(seed.wrapping_add(stream.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
        Self { params, rng }
    }

    /// `history` is every token so far (prompt and output), for the repetition penalty.
    pub fn sample(&mut self, logits: &mut [f32], history: &[u32]) -> u32 {
        match self.distribution(logits, history) {
            Distribution::Greedy(id) => id,
            Distribution::Weighted(cands) => self.draw(&cands, None),
        }
    }

    /// Samples as [`Sampler::sample`] does, given a token a draft proposed for this position:
    /// the draft is taken with its probability `p(draft)`, and otherwise a token is drawn from
    /// the rest of the distribution, renormalised. That is the speculative-sampling rule
    /// (Leviathan et al., 2023) for a draft proposed with certainty, and every token still
    /// comes out with probability `p`: `p(draft)` directly, any other `y` as
    /// `(1 - p(draft)) · p(y) / (1 - p(draft))`. Greedy decoding takes the maximum either way.
    pub fn sample_draft(&mut self, logits: &mut [f32], history: &[u32], draft: u32) -> u32 {
        match self.distribution(logits, history) {
            Distribution::Greedy(id) => id,
            Distribution::Weighted(cands) => {
                let total: f32 = cands.iter().map(|c| c.1).sum();
                let weight = cands.iter().find(|c| c.0 == draft).map_or(0.0, |c| c.1);
                if weight > 0.0 && self.rng.random::<f32>() * total < weight {
                    draft
                } else {
                    self.draw(&cands, Some(draft))
                }
            }
        }
    }

    /// The tokens that can be drawn and their weights (not normalised), after the repetition
    /// penalty, temperature, top-k, min-p and top-p.
    fn distribution(&self, logits: &mut [f32], history: &[u32]) -> Distribution {
        let p = &self.params;
        if p.repetition_penalty != 1.0 {
            let mut seen = std::collections::HashSet::new();
            for &t in history {
                if seen.insert(t) {
                    if let Some(l) = logits.get_mut(t as usize) {
                        *l = if *l > 0.0 { *l / p.repetition_penalty } else { *l * p.repetition_penalty };
                    }
                }
            }
        }
        if p.temperature == 0.0 {
            return Distribution::Greedy(argmax(logits));
        }
        // Candidates sorted by logit, cut by top-k; the rest are negligible for any sane top-p.
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let inv_t = 1.0 / p.temperature;
        // exp((l - max)/T) < 1e-9 contributes nothing a sampler could ever draw.
        let floor = max - p.temperature * 20.7;
        let mut cands: Vec<(u32, f32)> = logits
            .iter()
            .enumerate()
            .filter(|(_, &l)| l >= floor && l.is_finite())
            .map(|(i, &l)| (i as u32, ((l - max) * inv_t).exp()))
            .collect();
        if cands.is_empty() {
            return Distribution::Greedy(argmax(logits));
        }
        cands.sort_unstable_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        if p.top_k > 0 && cands.len() > p.top_k {
            cands.truncate(p.top_k);
        }
        if p.min_p > 0.0 {
            let cut = cands[0].1 * p.min_p;
            cands.retain(|c| c.1 >= cut);
        }
        let total: f32 = cands.iter().map(|c| c.1).sum();
        if p.top_p < 1.0 {
            let mut acc = 0.0;
            let mut keep = cands.len();
            for (i, c) in cands.iter().enumerate() {
                acc += c.1 / total;
                if acc >= p.top_p {
                    keep = i + 1;
                    break;
                }
            }
            cands.truncate(keep);
        }
        Distribution::Weighted(cands)
    }

    /// One token drawn in proportion to its weight, `except` left out.
    fn draw(&mut self, cands: &[(u32, f32)], except: Option<u32>) -> u32 {
        let kept = || cands.iter().filter(|c| Some(c.0) != except);
        let total: f32 = kept().map(|c| c.1).sum();
        if total <= 0.0 {
            // Only the excepted token had any weight (it was rejected with probability 0).
            return cands[0].0;
        }
        let mut r = self.rng.random::<f32>() * total;
        for c in kept() {
            r -= c.1;
            if r <= 0.0 {
                return c.0;
            }
        }
        kept().next_back().map_or(cands[0].0, |c| c.0)
    }
}

/// What a row of logits allows.
enum Distribution {
    Greedy(u32),
    /// `(token, weight)`, heaviest first.
    Weighted(Vec<(u32, f32)>),
}

/// Index of the largest value; the lowest index wins a tie, so greedy decoding is deterministic.
pub fn argmax(xs: &[f32]) -> u32 {
    // The first index of the largest value; a NaN never wins, except at index 0, where
    // nothing compares greater than it. In two passes the compiler can vectorise: the maximum
    // over sixteen lanes (the loop with one running index reads a value per step through a
    // chain of loads and compares: 1.7 % of a 16-sequence greedy step over a 152k vocabulary;
    // this pass takes a third of its time), then the first place that holds it.
    const LANES: usize = 16;
    if xs.first().is_none_or(|x| x.is_nan()) {
        return 0;
    }
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let mut chunks = xs.chunks_exact(LANES);
    for chunk in &mut chunks {
        for (m, &x) in lanes.iter_mut().zip(chunk) {
            // `max` skips a NaN, as `>` does (the lanes start as numbers and stay numbers).
            *m = m.max(x);
        }
    }
    let max = chunks.remainder().iter().chain(&lanes).fold(f32::NEG_INFINITY, |m, &x| if x > m { x } else { m });
    // `xs[0]` is a number, so the maximum is at least it and some value equals it.
    xs.iter().position(|&x| x == max).unwrap_or(0) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn logits() -> Vec<f32> {
        vec![1.0, 3.0, 2.5, -1.0, 0.0, 2.9]
    }

    #[test]
    fn argmax_is_the_first_largest_whatever_the_nans_and_ties() {
        // The plain loop it replaces.
        let plain = |xs: &[f32]| {
            let mut best = 0;
            for (i, &x) in xs.iter().enumerate() {
                if x > xs[best] {
                    best = i;
                }
            }
            best as u32
        };
        let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, 1.0, -1.0, 3.0];
        let mut rng = StdRng::seed_from_u64(12345);
        for len in [1, 2, 15, 16, 17, 33, 100, 1000] {
            for _ in 0..200 {
                let xs: Vec<f32> = (0..len).map(|_| specials[rng.random_range(0..specials.len())]).collect();
                assert_eq!(argmax(&xs), plain(&xs), "{xs:?}");
            }
        }
        assert_eq!(argmax(&[]), 0);
    }

    #[test]
    fn greedy_takes_the_maximum() {
        let mut s = Sampler::new(SamplingParams::greedy(), 0);
        assert_eq!(s.sample(&mut logits(), &[]), 1);
    }

    #[test]
    fn same_seed_same_draws_other_stream_other_draws() {
        let params = SamplingParams { temperature: 1.0, top_p: 1.0, seed: Some(7), ..Default::default() };
        let draw = |stream| {
            let mut s = Sampler::new(params.clone(), stream);
            (0..64).map(|_| s.sample(&mut logits(), &[])).collect::<Vec<_>>()
        };
        assert_eq!(draw(0), draw(0));
        assert_ne!(draw(0), draw(1));
    }

    #[test]
    fn top_k_one_is_greedy() {
        let params = SamplingParams { temperature: 1.5, top_k: 1, seed: Some(1), ..Default::default() };
        let mut s = Sampler::new(params, 0);
        for _ in 0..50 {
            assert_eq!(s.sample(&mut logits(), &[]), 1);
        }
    }

    #[test]
    fn top_p_keeps_only_the_nucleus() {
        // Token 1 holds almost all the mass: a small top-p keeps it alone.
        let params = SamplingParams { temperature: 1.0, top_p: 0.5, seed: Some(3), ..Default::default() };
        let mut s = Sampler::new(params, 0);
        let mut l = vec![0.0, 10.0, 5.0, 0.0];
        for _ in 0..50 {
            assert_eq!(s.sample(&mut l.clone(), &[]), 1);
        }
        l[2] = 10.0; // now two tokens share the nucleus
        let seen: std::collections::HashSet<u32> = (0..200).map(|_| s.sample(&mut l.clone(), &[])).collect();
        assert!(seen.contains(&1) && seen.contains(&2) && seen.len() == 2, "{seen:?}");
    }

    #[test]
    fn min_p_drops_unlikely_tokens() {
        let params = SamplingParams { temperature: 1.0, top_p: 1.0, min_p: 0.5, seed: Some(9), ..Default::default() };
        let mut s = Sampler::new(params, 0);
        // exp(2.9-3)=0.90 and exp(2.5-3)=0.61 pass 0.5; exp(1-3)=0.14 does not.
        let seen: std::collections::HashSet<u32> = (0..300).map(|_| s.sample(&mut logits(), &[])).collect();
        assert_eq!(seen, [1, 2, 5].into_iter().collect());
    }

    #[test]
    fn repetition_penalty_pushes_seen_tokens_down() {
        let params = SamplingParams { temperature: 0.0, repetition_penalty: 2.0, ..Default::default() };
        let mut s = Sampler::new(params, 0);
        // 3.0 / 2 = 1.5 < 2.9: token 5 wins once token 1 has been seen.
        assert_eq!(s.sample(&mut logits(), &[1]), 5);
    }

    /// Drawing with a draft leaves every token's probability as it was, whichever token the
    /// draft proposes: likely, unlikely, or cut by top-k. A chi-square test over 6 tokens (5
    /// degrees of freedom): 25 is beyond the 0.9999 quantile (about 25.7 is 0.99993), and the
    /// seeds are fixed, so the test is deterministic.
    #[test]
    fn a_draft_does_not_change_what_is_drawn() {
        let params = SamplingParams { temperature: 0.8, top_p: 1.0, top_k: 5, seed: Some(11), ..Default::default() };
        let l = logits();
        let weights: Vec<f64> = l.iter().map(|&x| ((x as f64 - 3.0) / 0.8).exp()).collect();
        // top-k 5 drops token 3 (the lowest logit).
        let kept: f64 = weights.iter().enumerate().filter(|(i, _)| *i != 3).map(|(_, w)| w).sum();
        let p: Vec<f64> = weights.iter().enumerate().map(|(i, w)| if i == 3 { 0.0 } else { w / kept }).collect();
        let n = 200_000;
        for draft in [1u32, 4, 3] {
            let mut s = Sampler::new(params.clone(), u64::from(draft));
            let mut counts = [0usize; 6];
            for _ in 0..n {
                counts[s.sample_draft(&mut l.clone(), &[], draft) as usize] += 1;
            }
            assert_eq!(counts[3], 0, "token 3 is outside top-k, drafted or not");
            let chi2: f64 = (0..6)
                .filter(|&i| p[i] > 0.0)
                .map(|i| {
                    let e = p[i] * n as f64;
                    (counts[i] as f64 - e).powi(2) / e
                })
                .sum();
            assert!(chi2 < 25.0, "draft {draft}: counts {counts:?} against p {p:?}, chi2 {chi2}");
        }
        // Greedy takes the maximum, whatever the draft.
        let mut g = Sampler::new(SamplingParams::greedy(), 0);
        assert_eq!(g.sample_draft(&mut logits(), &[], 5), 1);
    }

    #[test]
    fn invalid_params_are_rejected() {
        assert!(SamplingParams { temperature: -1.0, ..Default::default() }.validate().is_err());
        assert!(SamplingParams { top_p: 0.0, ..Default::default() }.validate().is_err());
        assert!(SamplingParams::default().validate().is_ok());
    }
}
