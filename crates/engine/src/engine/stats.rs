//! What the engine publishes about itself after each step, for status bars and metrics.

use serde::Serialize;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A snapshot for status bars and the server's metrics.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct EngineStats {
    pub running: usize,
    pub paused: usize,
    pub waiting: usize,
    pub kv_tokens_used: usize,
    pub kv_tokens_budget: usize,
    /// Generated tokens per second over the last few seconds, all sequences together.
    pub tokens_per_second: f64,
    pub total_generated: u64,
    /// Tokens fed through the model, prompts, generated tokens and drafts alike: how far
    /// prompts have been read.
    pub total_fed: u64,
    /// Tokens drafted for speculative decoding and verified, and how many of them the model
    /// agreed with (see `speculate`).
    pub total_drafted: u64,
    pub total_accepted: u64,
}

/// How long a published figure stays current: the worker publishes after every step, and an
/// idle engine publishes nothing, so an older figure means nothing is being generated now.
pub(super) const STALE_AFTER: Duration = Duration::from_secs(2);

/// Tokens generated per step over a sliding window of a few seconds.
#[derive(Default)]
pub(super) struct RateMeter {
    /// (when, tokens) of recent steps.
    recent: VecDeque<(Instant, usize)>,
    pub total: u64,
}

const WINDOW: Duration = Duration::from_secs(5);

impl RateMeter {
    pub fn record(&mut self, now: Instant, tokens: usize) {
        self.total += tokens as u64;
        self.recent.push_back((now, tokens));
    }

    /// Tokens per second over the window ending at `now`.
    pub fn rate(&mut self, now: Instant) -> f64 {
        while self.recent.front().is_some_and(|(t, _)| now.duration_since(*t) > WINDOW) {
            self.recent.pop_front();
        }
        match (self.recent.front(), self.recent.back()) {
            (Some((t0, _)), Some((t1, _))) if t1 > t0 => {
                // The first step's tokens were made before the window's start.
                let n: usize = self.recent.iter().skip(1).map(|(_, n)| n).sum();
                n as f64 / t1.duration_since(*t0).as_secs_f64()
            }
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_counts_tokens_after_the_first_step_over_the_window() {
        let mut m = RateMeter::default();
        let t0 = Instant::now();
        m.record(t0, 8);
        m.record(t0 + Duration::from_millis(500), 8);
        m.record(t0 + Duration::from_millis(1000), 8);
        assert_eq!(m.rate(t0 + Duration::from_millis(1000)), 16.0);
        assert_eq!(m.total, 24);
        // Past the window the old steps no longer count.
        assert_eq!(m.rate(t0 + Duration::from_secs(7)), 0.0);
    }
}
