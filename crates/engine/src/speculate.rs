//! Drafts for speculative decoding, by n-gram lookup: a chain of thought restates equations and
//! copies numbers from the question, so the tokens that followed the last few tokens the
//! previous time they appeared are a good guess at what comes next.
//!
//! A lone decoding sequence feeds its last token and a draft together in one step (a short
//! chunk, which on a CPU costs little more than one token: the weights are read once). The
//! sequence then draws from each row in turn and keeps going while its draws match the draft
//! (see [`crate::sequence::Seq::on_verify`]). A chunk's rows are the very bits decoding gives
//! (see [`crate::attention`]), so greedy output is unchanged; sampled output keeps its
//! distribution by the speculative-sampling rule (see [`crate::sampler::Sampler::sample_draft`]).

/// The longest and shortest suffix looked up, longest first: a longer match predicts better.
/// Even one token's match pays: a draft that misses costs a row, and a run of misses shortens
/// drafts to one token (`ponder bench` on three reasoning prompts, 1.5B model: 1.38–1.71× with
/// one-token matches against 1.31–1.55× without, and 1.32× when matches need three tokens).
const MAX_NGRAM: usize = 4;
const MIN_NGRAM: usize = 1;

/// How far back a lookup searches, so a step's search costs microseconds at any depth.
const WINDOW: usize = 4096;

/// Up to `max` tokens that followed the latest earlier occurrence of the longest suffix of
/// `tokens` (of [`MAX_NGRAM`] tokens down to [`MIN_NGRAM`]) that occurred before. Empty when
/// nothing matches.
pub(crate) fn propose(tokens: &[u32], max: usize) -> Vec<u32> {
    let n = tokens.len();
    if max == 0 {
        return Vec::new();
    }
    let from = n.saturating_sub(WINDOW);
    for k in (MIN_NGRAM..=MAX_NGRAM.min(n.saturating_sub(1))).rev() {
        let suffix = &tokens[n - k..];
        // The latest start `i` whose k tokens equal the suffix and which is followed by at
        // least one token (so not the suffix itself).
        let found = (from..n - k).rev().find(|&i| &tokens[i..i + k] == suffix);
        if let Some(i) = found {
            let next = i + k;
            return tokens[next..(next + max).min(n)].to_vec();
        }
    }
    Vec::new()
}

/// How many tokens to draft next, after how the last draft fared: one more after a draft that
/// was taken whole, one fewer after a miss (Hugging Face's assisted-generation heuristic).
#[derive(Debug, Clone)]
pub(crate) struct DraftLength {
    current: usize,
    max: usize,
}

impl DraftLength {
    pub fn new(max: usize) -> Self {
        Self { current: max.min(4), max }
    }

    pub fn get(&self) -> usize {
        self.current
    }

    pub fn record(&mut self, drafted: usize, accepted: usize) {
        if drafted == 0 {
            return;
        }
        self.current = if accepted == drafted { (self.current + 1).min(self.max) } else { self.current.saturating_sub(1).max(1) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_occurrence_of_the_longest_suffix_predicts() {
        // "x = 3 + 4 ; so x = 3 + 4" : after "x =" the earlier "3 + 4 ;" follows.
        let t = [10, 11, 3, 12, 4, 13, 20, 10, 11];
        assert_eq!(propose(&t, 3), vec![3, 12, 4]);
        assert_eq!(propose(&t, 10), vec![3, 12, 4, 13, 20, 10, 11]);
        // Two earlier occurrences of "1 2": the later one's continuation wins.
        let t = [1, 2, 5, 1, 2, 6, 9, 1, 2];
        assert_eq!(propose(&t, 2), vec![6, 9]);
        // A longer suffix beats a later but shorter match: "7 1 2" occurred once, followed by 5.
        let t = [7, 1, 2, 5, 1, 2, 6, 7, 1, 2];
        assert_eq!(propose(&t, 1), vec![5]);
    }

    #[test]
    fn no_repeat_no_draft() {
        assert!(propose(&[1, 2, 3, 4, 5], 4).is_empty());
        assert!(propose(&[], 4).is_empty());
        assert_eq!(propose(&[1, 1], 4), vec![1], "a one-token match will do");
        assert!(propose(&[1], 4).is_empty());
        assert!(propose(&[1, 2, 1, 2], 0).is_empty());
        // "1 2" repeating: the suffix "1 2" occurred at 0, followed by "1 2".
        assert_eq!(propose(&[1, 2, 1, 2], 4), vec![1, 2]);
    }

    #[test]
    fn the_draft_length_follows_how_drafts_fare() {
        let mut d = DraftLength::new(6);
        assert_eq!(d.get(), 4);
        d.record(4, 4);
        d.record(5, 5);
        d.record(6, 6);
        assert_eq!(d.get(), 6, "capped at the maximum");
        for _ in 0..10 {
            d.record(3, 0);
        }
        assert_eq!(d.get(), 1, "never below one");
        d.record(0, 0);
        assert_eq!(d.get(), 1, "no draft, no news");
    }
}
