//! One sample being generated: its tokens, its KV cache, and the text pipeline that turns its
//! tokens into thinking and answer deltas.

use crate::kv_cache::SeqCache;
use crate::request::{Event, FinishReason, Priority, Usage};
use crate::sampler::Sampler;
use crate::speculate::{self, DraftLength};
use crate::stream::{Channel, LoopDetector, StopMatcher, StopResult, ThinkSplitter};
use crate::tokenizer::{StreamDecoder, Tokenizer};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tokio::sync::mpsc::UnboundedSender;

/// What a request's samples share.
pub(crate) struct RequestCtx {
    pub id: u64,
    pub tx: UnboundedSender<Event>,
    pub cancel: Arc<AtomicBool>,
    pub priority: Priority,
    pub submitted: Instant,
    pub max_tokens: usize,
    pub thinking_budget: Option<usize>,
    pub detect_loops: bool,
    pub ignore_eos: bool,
    /// End-of-sequence tokens cannot be drawn before this many new tokens.
    pub min_tokens: usize,
    pub stop: Vec<String>,
    pub prompt_len: usize,
    pub starts_thinking: bool,
    /// Admission order, for choosing whom to pause or evict (the newest first).
    pub admitted_seq: u64,
    pub sampling: crate::sampler::SamplingParams,
    /// Draft tokens by n-gram lookup when this request decodes alone (see [`speculate`]).
    pub speculate: bool,
}

impl RequestCtx {
    /// Sends an event; a receiver that has gone away cancels the request.
    pub fn send(&self, ev: Event) {
        if self.tx.send(ev).is_err() {
            self.cancel.store(true, Ordering::Relaxed);
        }
    }

    /// The caller cancelled, or dropped its handle.
    pub fn cancelled(&self) -> bool {
        self.cancel.load(Ordering::Relaxed) || self.tx.is_closed()
    }
}

/// What a verified step gave a sequence.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Verified {
    /// Tokens drawn: the drafts taken, and one more.
    pub drawn: usize,
    /// Draft tokens taken.
    pub accepted: usize,
}

pub(crate) struct Seq {
    pub ctx: Arc<RequestCtx>,
    pub index: usize,
    /// Prompt, then every generated or forced token.
    pub tokens: Vec<u32>,
    /// `None` once evicted to make room: the tokens are kept and recomputed on resume.
    pub cache: Option<SeqCache>,
    pub paused: bool,
    /// Samples still to be forked from this one once its prompt is read (`n - 1`).
    pub forks_pending: usize,
    sampler: Sampler,
    decoder: StreamDecoder,
    stop: StopMatcher,
    splitter: ThinkSplitter,
    loops: LoopDetector,
    generated: usize,
    thinking_tokens: usize,
    answer_tokens: usize,
    budget_closed: bool,
    first_token: Option<Instant>,
    /// How many tokens the next draft may hold.
    draft_len: DraftLength,
    pub finished: bool,
}

/// Tokens fed per prefill chunk. Chunks start at fixed multiples of this, whatever else runs in
/// the step, so the arithmetic a sequence sees never depends on its neighbours.
pub(crate) const CHUNK: usize = 256;

/// The longest draft a step verifies. A step of 9 rows costs about twice a step of one (from
/// `ponder bench`: 8 sequences decode at about 4× one's rate), and longer drafts are rarely
/// taken whole (a cap of 12 measured no faster).
pub(crate) const MAX_DRAFT: usize = 8;

impl Seq {
    pub fn new(ctx: Arc<RequestCtx>, tokens: Vec<u32>, sampler: Sampler, forks: usize) -> Self {
        let stop = StopMatcher::new(ctx.stop.clone());
        let splitter = ThinkSplitter::new(ctx.starts_thinking);
        Self {
            ctx,
            index: 0,
            tokens,
            cache: None,
            paused: false,
            forks_pending: forks,
            sampler,
            decoder: StreamDecoder::default(),
            stop,
            splitter,
            loops: LoopDetector::default(),
            generated: 0,
            thinking_tokens: 0,
            answer_tokens: 0,
            budget_closed: false,
            first_token: None,
            draft_len: DraftLength::new(MAX_DRAFT),
            finished: false,
        }
    }

    /// The other samples of the request, forked from this one once its prompt is read: copies
    /// sharing everything read so far, each with its own cache and random stream.
    pub fn take_forks(&mut self) -> Vec<Seq> {
        let forks = (1..=self.forks_pending).map(|k| self.fork(k)).collect();
        self.forks_pending = 0;
        forks
    }

    fn fork(&self, index: usize) -> Self {
        Self {
            ctx: self.ctx.clone(),
            index,
            tokens: self.tokens.clone(),
            cache: self.cache.as_ref().map(SeqCache::fork),
            paused: false,
            forks_pending: 0,
            sampler: Sampler::new(self.ctx.sampling.clone(), index as u64),
            decoder: self.decoder.clone(),
            stop: self.stop.clone(),
            splitter: self.splitter.clone(),
            loops: self.loops.clone(),
            generated: self.generated,
            thinking_tokens: self.thinking_tokens,
            answer_tokens: self.answer_tokens,
            budget_closed: self.budget_closed,
            first_token: self.first_token,
            draft_len: self.draft_len.clone(),
            finished: false,
        }
    }

    /// Stands in for a drawn token in tests that run no model.
    #[cfg(test)]
    pub fn push_drawn(&mut self, token: u32) {
        self.tokens.push(token);
        self.generated += 1;
    }

    /// Ends this sequence and the samples it has not forked yet as cancelled.
    pub fn cancel(&mut self) {
        for index in self.index + 1..self.index + self.slots() {
            self.ctx.send(Event::Finished { index, reason: FinishReason::Cancelled, usage: Default::default(), error: None });
        }
        self.forks_pending = 0;
        self.finish(FinishReason::Cancelled, None);
    }

    pub fn fed(&self) -> usize {
        self.cache.as_ref().map_or(0, |c| c.len())
    }

    /// Slots this sequence holds: itself and the samples it will fork into.
    pub fn slots(&self) -> usize {
        1 + self.forks_pending
    }

    /// KV tokens this sequence holds or is about to hold.
    pub fn kv_tokens(&self) -> usize {
        if self.cache.is_none() && self.paused {
            0
        } else {
            self.tokens.len() * self.slots()
        }
    }

    /// The tokens to feed next: one when decoding, a chunk when reading a prompt.
    pub fn next_input(&self) -> std::ops::Range<usize> {
        let fed = self.fed();
        let end = ((fed / CHUNK + 1) * CHUNK).min(self.tokens.len());
        fed..end
    }

    pub fn is_prefill(&self) -> bool {
        self.next_input().len() > 1 || self.generated == 0
    }

    /// Takes the logits of the last fed token: samples, streams text and decides whether the
    /// sequence is done. `context` is the model's context length.
    pub fn on_logits(&mut self, logits: &mut [f32], tok: &Tokenizer, close: &[u32], context: usize) {
        self.on_logits_given(logits, None, tok, close, context)
    }

    /// How many tokens this sequence's next draft may hold: its current draft length, within
    /// the room its output and context have left; 0 when the request does not speculate.
    pub fn draft_room(&self, context: usize) -> usize {
        if !self.ctx.speculate || self.generated == 0 {
            return 0;
        }
        // The last row of a verified step draws one more token than the draft holds.
        let room = self.ctx.max_tokens.saturating_sub(self.generated + 1).min(context.saturating_sub(self.tokens.len() + 1));
        self.draft_len.get().min(room)
    }

    /// The n-gram draft for this sequence's next step, of at most `room` tokens: tokens that
    /// followed its last few tokens before. Empty when nothing matches.
    pub fn draft(&self, room: usize) -> Vec<u32> {
        speculate::propose(&self.tokens, room)
    }

    /// Takes the logits of a step that fed the last token and then `draft`: row `i` follows
    /// the draft's first `i` tokens. Draws from each row in turn while the draws match the
    /// draft, so the sequence gets the tokens plain decoding would have drawn (see
    /// [`speculate`]), and forgets the cached drafts it did not take.
    pub fn on_verify(&mut self, rows: Vec<Vec<f32>>, draft: &[u32], tok: &Tokenizer, close: &[u32], context: usize) -> Verified {
        debug_assert_eq!(rows.len(), draft.len() + 1);
        // Cached so far: every token but the last, then the last and the draft.
        let known = self.tokens.len();
        let (mut drawn, mut accepted) = (0, 0);
        for (i, mut row) in rows.into_iter().enumerate() {
            let before = self.tokens.len();
            self.on_logits_given(&mut row, draft.get(i).copied(), tok, close, context);
            drawn += 1;
            // Taken only as the one token this row added (no thought closed after it).
            let took_draft = i < draft.len() && self.tokens.len() == before + 1 && self.tokens[before] == draft[i];
            accepted += usize::from(took_draft);
            if self.finished || !took_draft {
                break;
            }
        }
        self.draft_len.record(draft.len(), accepted);
        if let Some(cache) = self.cache.as_mut() {
            // The last token and the drafts that were taken are cached as decoding would
            // have cached them; the first draft not taken (and the rest) are not.
            cache.truncate(known + drawn - 1);
        }
        Verified { drawn, accepted }
    }

    /// [`Seq::on_logits`], with the token a draft proposed for this position, if any.
    fn on_logits_given(&mut self, logits: &mut [f32], draft: Option<u32>, tok: &Tokenizer, close: &[u32], context: usize) {
        if self.generated < self.ctx.min_tokens {
            for &eos in &tok.eos_ids {
                if let Some(l) = logits.get_mut(eos as usize) {
                    *l = f32::NEG_INFINITY;
                }
            }
        }
        let id = match draft {
            Some(d) => self.sampler.sample_draft(logits, &self.tokens, d),
            None => self.sampler.sample(logits, &self.tokens),
        };
        let now = Instant::now();
        self.first_token.get_or_insert(now);
        self.generated += 1;
        let channel = self.splitter.channel();
        match channel {
            Channel::Thinking => self.thinking_tokens += 1,
            Channel::Answer => self.answer_tokens += 1,
        }
        if tok.is_eos(id) && !self.ctx.ignore_eos {
            return self.finish(FinishReason::Stop, None);
        }
        self.tokens.push(id);
        if self.emit_token(tok, id) {
            return self.finish(FinishReason::Stop, None);
        }
        if self.generated >= self.ctx.max_tokens || self.tokens.len() >= context {
            return self.finish(FinishReason::Length, None);
        }
        if self.ctx.detect_loops && self.loops.is_looping(&self.tokens[self.ctx.prompt_len..]) {
            return self.finish(FinishReason::Repetition, None);
        }
        if let Some(budget) = self.ctx.thinking_budget {
            if !self.budget_closed && self.splitter.channel() == Channel::Thinking && self.thinking_tokens >= budget {
                // Close the thought for the model: the forced tokens are fed next step.
                self.budget_closed = true;
                for &t in close {
                    self.tokens.push(t);
                    self.thinking_tokens += 1;
                    self.generated += 1;
                    if self.emit_token(tok, t) {
                        return self.finish(FinishReason::Stop, None);
                    }
                }
                if self.tokens.len() >= context {
                    self.finish(FinishReason::Length, None)
                }
            }
        }
    }

    /// Streams the text of one token; true when a stop string matched.
    fn emit_token(&mut self, tok: &Tokenizer, id: u32) -> bool {
        let delta = match self.decoder.push(tok, id) {
            Ok(Some(d)) => d,
            _ => return false,
        };
        match self.stop.push(&delta) {
            StopResult::Continue(text) => {
                self.emit_text(&text);
                false
            }
            StopResult::Stopped(text) => {
                self.emit_text(&text);
                true
            }
        }
    }

    fn emit_text(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        for (channel, text) in self.splitter.push(text) {
            self.ctx.send(Event::Delta { index: self.index, channel, text });
        }
    }

    pub fn finish(&mut self, reason: FinishReason, error: Option<String>) {
        if self.finished {
            return;
        }
        self.finished = true;
        let rest = self.stop.finish();
        self.emit_text(&rest);
        for (channel, text) in self.splitter.finish() {
            self.ctx.send(Event::Delta { index: self.index, channel, text });
        }
        let elapsed = self.first_token.map(|t| t.elapsed().as_secs_f64()).unwrap_or(0.0);
        let usage = Usage {
            prompt_tokens: self.ctx.prompt_len,
            thinking_tokens: self.thinking_tokens,
            answer_tokens: self.answer_tokens,
            time_to_first_token: self.first_token.map(|t| t.duration_since(self.ctx.submitted)),
            tokens_per_second: if elapsed > 0.0 && self.generated > 1 { (self.generated - 1) as f64 / elapsed } else { 0.0 },
        };
        self.ctx.send(Event::Finished { index: self.index, reason, usage, error });
        self.cache = None;
    }
}
