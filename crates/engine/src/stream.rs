//! Text-level processing of a sequence's output: stop strings, and the split of the stream into
//! *thinking* (before `</think>`) and *answer*.

use serde::{Deserialize, Serialize};

pub const THINK_OPEN: &str = "<think>";
pub const THINK_CLOSE: &str = "</think>";

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Channel {
    Thinking,
    Answer,
}

/// Length of the longest suffix of `text` that is a proper prefix of `pattern`: text that must
/// be held back because the next delta may complete the pattern.
fn partial_suffix(text: &str, pattern: &str) -> usize {
    let max = pattern.len().saturating_sub(1).min(text.len());
    (1..=max).rev().find(|&n| text.is_char_boundary(text.len() - n) && pattern.starts_with(&text[text.len() - n..])).unwrap_or(0)
}

/// Splits deltas into thinking and answer. Everything before `</think>` is thinking when the
/// prompt opened the thought (R1 templates end with `<think>\n`), even if the model never
/// writes the opening tag; a model that opens `<think>` itself is followed too.
#[derive(Debug, Clone)]
pub struct ThinkSplitter {
    channel: Channel,
    pending: String,
    /// Nothing emitted yet on the current channel: leading whitespace is dropped and an
    /// opening `<think>` recognised.
    at_start: bool,
}

impl ThinkSplitter {
    pub fn new(starts_thinking: bool) -> Self {
        let channel = if starts_thinking { Channel::Thinking } else { Channel::Answer };
        Self { channel, pending: String::new(), at_start: true }
    }

    pub fn channel(&self) -> Channel {
        self.channel
    }

    pub fn push(&mut self, delta: &str) -> Vec<(Channel, String)> {
        self.pending.push_str(delta);
        let mut out = Vec::new();
        loop {
            if self.at_start {
                let trimmed = self.pending.trim_start();
                if trimmed.is_empty() {
                    return out;
                }
                if self.channel == Channel::Answer {
                    if THINK_OPEN.starts_with(trimmed) && trimmed.len() < THINK_OPEN.len() {
                        return out; // maybe an opening tag: wait
                    }
                    if let Some(rest) = trimmed.strip_prefix(THINK_OPEN) {
                        self.pending = rest.to_string();
                        self.channel = Channel::Thinking;
                        continue;
                    }
                }
                self.pending = trimmed.to_string();
                self.at_start = false;
            }
            match self.channel {
                Channel::Thinking => {
                    if let Some(i) = self.pending.find(THINK_CLOSE) {
                        let thought = self.pending[..i].to_string();
                        let rest = self.pending[i + THINK_CLOSE.len()..].to_string();
                        if !thought.is_empty() {
                            out.push((Channel::Thinking, thought));
                        }
                        self.pending = rest;
                        self.channel = Channel::Answer;
                        self.at_start = true;
                        continue;
                    }
                    let hold = partial_suffix(&self.pending, THINK_CLOSE);
                    let emit = self.pending.len() - hold;
                    if emit > 0 {
                        out.push((Channel::Thinking, self.pending[..emit].to_string()));
                        self.pending.drain(..emit);
                    }
                    return out;
                }
                Channel::Answer => {
                    if !self.pending.is_empty() {
                        out.push((Channel::Answer, std::mem::take(&mut self.pending)));
                    }
                    return out;
                }
            }
        }
    }

    /// Whatever is held back, at the end of the stream.
    pub fn finish(&mut self) -> Vec<(Channel, String)> {
        let rest = std::mem::take(&mut self.pending);
        if rest.is_empty() || (self.at_start && rest.trim().is_empty()) {
            return vec![];
        }
        vec![(self.channel, rest)]
    }
}

/// Watches the raw output for stop strings. Text that could be the start of a stop string is
/// held back until it is known not to be one.
#[derive(Debug, Clone, Default)]
pub struct StopMatcher {
    stops: Vec<String>,
    pending: String,
}

pub enum StopResult {
    /// Text safe to emit.
    Continue(String),
    /// A stop string matched: emit this text (before the match) and finish.
    Stopped(String),
}

impl StopMatcher {
    pub fn new(stops: Vec<String>) -> Self {
        Self { stops: stops.into_iter().filter(|s| !s.is_empty()).collect(), pending: String::new() }
    }

    pub fn push(&mut self, delta: &str) -> StopResult {
        if self.stops.is_empty() {
            return StopResult::Continue(delta.to_string());
        }
        self.pending.push_str(delta);
        if let Some(i) = self.stops.iter().filter_map(|s| self.pending.find(s.as_str())).min() {
            let text = self.pending[..i].to_string();
            self.pending.clear();
            return StopResult::Stopped(text);
        }
        let hold = self.stops.iter().map(|s| partial_suffix(&self.pending, s)).max().unwrap_or(0);
        let emit = self.pending.len() - hold;
        StopResult::Continue(self.pending.drain(..emit).collect())
    }

    pub fn finish(&mut self) -> String {
        std::mem::take(&mut self.pending)
    }
}

/// Detects a degenerate loop: the output's tail repeating with a short period. Reasoning
/// distills are known to loop forever at low temperature; such a sample is stopped with its own
/// finish reason rather than burning the whole token budget.
#[derive(Debug, Clone)]
pub struct LoopDetector {
    pub max_period: usize,
    pub min_span: usize,
    pub min_repeats: usize,
}

impl Default for LoopDetector {
    fn default() -> Self {
        Self { max_period: 256, min_span: 256, min_repeats: 3 }
    }
}

impl LoopDetector {
    /// Whether the tail of `tokens` is periodic over at least `max(min_span, min_repeats * p)`
    /// tokens for some period `p`.
    pub fn is_looping(&self, tokens: &[u32]) -> bool {
        let n = tokens.len();
        for p in 1..=self.max_period.min(n / 2) {
            let span = self.min_span.max(self.min_repeats * p);
            if span > n {
                continue;
            }
            let tail = &tokens[n - span..];
            if tail.iter().skip(p).zip(tail.iter()).all(|(a, b)| a == b) {
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(split: &mut ThinkSplitter, deltas: &[&str]) -> (String, String) {
        let (mut t, mut a) = (String::new(), String::new());
        let mut parts = Vec::new();
        for d in deltas {
            parts.extend(split.push(d));
        }
        parts.extend(split.finish());
        for (c, s) in parts {
            match c {
                Channel::Thinking => t.push_str(&s),
                Channel::Answer => a.push_str(&s),
            }
        }
        (t, a)
    }

    #[test]
    fn thinking_until_close_tag_split_across_deltas() {
        let mut s = ThinkSplitter::new(true);
        let (t, a) = run(&mut s, &["Let me ", "think.</th", "ink>\n\nThe answer", " is 4."]);
        assert_eq!(t, "Let me think.");
        assert_eq!(a, "The answer is 4.");
    }

    #[test]
    fn model_that_opens_its_own_thought() {
        let mut s = ThinkSplitter::new(false);
        let (t, a) = run(&mut s, &["\n<th", "ink>\nhmm</think>", "ok"]);
        assert_eq!((t.as_str(), a.as_str()), ("hmm", "ok"));
    }

    #[test]
    fn plain_answer_without_tags() {
        let mut s = ThinkSplitter::new(false);
        let (t, a) = run(&mut s, &["<b>", "4</b>"]);
        assert_eq!((t.as_str(), a.as_str()), ("", "<b>4</b>"));
    }

    #[test]
    fn unfinished_thought_stays_thinking() {
        let mut s = ThinkSplitter::new(true);
        let (t, a) = run(&mut s, &["still going </thi"]);
        assert_eq!((t.as_str(), a.as_str()), ("still going </thi", ""));
    }

    #[test]
    fn stop_string_across_deltas() {
        let mut m = StopMatcher::new(vec!["END".into()]);
        let mut out = String::new();
        for d in ["abc E", "N", "D tail"] {
            match m.push(d) {
                StopResult::Continue(t) => out.push_str(&t),
                StopResult::Stopped(t) => {
                    out.push_str(&t);
                    assert_eq!(out, "abc ");
                    return;
                }
            }
        }
        panic!("stop string not seen");
    }

    #[test]
    fn held_back_text_is_released_when_no_match() {
        let mut m = StopMatcher::new(vec!["STOP".into()]);
        let mut out = String::new();
        for d in ["x ST", "AY"] {
            if let StopResult::Continue(t) = m.push(d) {
                out.push_str(&t);
            }
        }
        out.push_str(&m.finish());
        assert_eq!(out, "x STAY");
    }

    #[test]
    fn loops_are_detected_and_normal_text_is_not() {
        let d = LoopDetector::default();
        let looping: Vec<u32> = (0..400).map(|i| [5, 6, 7][i % 3]).collect();
        assert!(d.is_looping(&looping));
        let varied: Vec<u32> = (0..400u32).map(|i| i.wrapping_mul(2654435761) % 1000).collect();
        assert!(!d.is_looping(&varied));
        let short: Vec<u32> = vec![1; 100];
        assert!(!d.is_looping(&short), "too short to call a loop");
    }
}
