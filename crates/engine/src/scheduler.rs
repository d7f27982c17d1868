//! Who runs in the next step: admission under the slot and KV-memory limits, chat before batch
//! work (pausing batch samples when slots are full, evicting their caches when memory is), and
//! the step's token budget split between decodes and prompt chunks.
//!
//! The scheduler owns the waiting requests and the running sequences. Each step it returns a
//! plan ([`Scheduler::schedule`]); the worker runs the model over it and hands the sequences
//! their logits, and nothing else reaches into the scheduler's state. It knows nothing of the
//! model, so its rules are tested without one (below).

use crate::request::{Event, FinishReason, Priority};
use crate::sampler::Sampler;
use crate::sequence::{RequestCtx, Seq};
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    pub max_seqs: usize,
    pub kv_budget_tokens: usize,
    pub max_step_tokens: usize,
    /// The model's context length, which drafts must stay within.
    pub context_length: usize,
}

/// A request waiting for room.
pub(crate) struct Waiting {
    pub ctx: Arc<RequestCtx>,
    pub tokens: Vec<u32>,
    pub n: usize,
}

impl Waiting {
    fn kv_tokens(&self) -> usize {
        self.tokens.len() * self.n
    }
}

pub(crate) struct Scheduler {
    limits: Limits,
    waiting: VecDeque<Waiting>,
    seqs: Vec<Seq>,
    admitted: u64,
}

/// One sequence's share of a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Planned {
    /// Which running sequence (an index valid until the plan is applied).
    seq: usize,
    /// The tokens it feeds: one when decoding, a chunk when reading a prompt.
    pub range: Range<usize>,
    /// It reaches the end of its tokens, so it needs logits to draw the next one.
    pub wants_logits: bool,
    /// Tokens fed after `range` to be verified: a lone decoding sequence's guess at what comes
    /// next (see [`crate::speculate`]). Each gets a row of logits too.
    pub draft: Vec<u32>,
    /// How long a draft may be: the sequence's next draft length where it may draft, else 0.
    pub draft_room: usize,
}

/// How full the engine is, for its published stats.
pub(crate) struct Occupancy {
    pub running: usize,
    pub paused: usize,
    pub waiting: usize,
    pub kv_tokens_used: usize,
    pub kv_tokens_budget: usize,
}

impl Scheduler {
    pub fn new(limits: Limits) -> Self {
        Self { limits, waiting: VecDeque::new(), seqs: Vec::new(), admitted: 0 }
    }

    pub fn is_idle(&self) -> bool {
        self.waiting.is_empty() && self.seqs.is_empty()
    }

    pub fn enqueue(&mut self, w: Waiting) {
        self.waiting.push_back(w);
    }

    /// Decides the next step: drops what was cancelled, admits what fits, keeps the caches in
    /// the memory budget, and plans who feeds which tokens.
    pub fn schedule(&mut self) -> Vec<Planned> {
        self.reap_cancelled();
        self.admit();
        self.enforce_memory();
        self.plan()
    }

    /// The planned sequences, in plan order, for the worker to run.
    pub fn planned_mut(&mut self, plan: &[Planned]) -> Vec<&mut Seq> {
        let mut by_index: Vec<Option<&mut Seq>> = self.seqs.iter_mut().map(Some).collect();
        plan.iter().map(|p| by_index[p.seq].take().expect("each sequence is planned once")).collect()
    }

    /// Samples forked from a sequence whose prompt was read.
    pub fn add(&mut self, forked: Vec<Seq>) {
        self.seqs.extend(forked);
    }

    /// Forgets the sequences that finished (their caller has had their last event).
    pub fn retire_finished(&mut self) {
        self.seqs.retain(|s| !s.finished);
    }

    /// Ends everything, waiting or running (the engine is stopping).
    pub fn finish_all(&mut self, reason: FinishReason, why: &str) {
        for w in self.waiting.drain(..) {
            for index in 0..w.n {
                w.ctx.send(Event::Finished { index, reason, usage: Default::default(), error: Some(why.into()) });
            }
        }
        for s in &mut self.seqs {
            s.finish(reason, Some(why.into()));
        }
        self.seqs.clear();
    }

    pub fn occupancy(&self) -> Occupancy {
        Occupancy {
            running: self.seqs.iter().filter(|q| !q.paused).count(),
            paused: self.seqs.iter().filter(|q| q.paused).count(),
            waiting: self.waiting.len(),
            kv_tokens_used: self.kv_used(),
            kv_tokens_budget: self.limits.kv_budget_tokens,
        }
    }

    fn running_slots(&self) -> usize {
        self.seqs.iter().filter(|s| !s.paused).map(|s| s.slots()).sum()
    }

    fn kv_used(&self) -> usize {
        self.seqs.iter().map(|s| s.kv_tokens()).sum()
    }

    /// Finishes everything whose caller cancelled or went away.
    fn reap_cancelled(&mut self) {
        self.waiting.retain(|w| {
            if w.ctx.cancelled() {
                for index in 0..w.n {
                    w.ctx.send(Event::Finished {
                        index,
                        reason: FinishReason::Cancelled,
                        usage: Default::default(),
                        error: None,
                    });
                }
                false
            } else {
                true
            }
        });
        for s in &mut self.seqs {
            if s.ctx.cancelled() {
                s.cancel();
            }
        }
        self.seqs.retain(|s| !s.finished);
    }

    /// Newest (last admitted) sequence matching `pred`.
    fn newest(&self, pred: impl Fn(&Seq) -> bool) -> Option<usize> {
        (0..self.seqs.len()).filter(|&i| pred(&self.seqs[i])).max_by_key(|&i| self.seqs[i].ctx.admitted_seq)
    }

    fn admit(&mut self) {
        let max = self.limits.max_seqs;
        let budget = self.limits.kv_budget_tokens;
        // 1. Interactive requests, making room by pausing batch samples and evicting caches.
        while let Some(pos) = self.waiting.iter().position(|w| w.ctx.priority == Priority::Interactive) {
            let (need_slots, need_kv) = (self.waiting[pos].n, self.waiting[pos].kv_tokens());
            while self.running_slots() + need_slots > max {
                let Some(i) = self.newest(|s| !s.paused && s.ctx.priority == Priority::Batch) else { break };
                self.seqs[i].paused = true;
            }
            while self.kv_used() + need_kv > budget {
                let Some(i) = self.newest(|s| s.paused && s.cache.is_some()) else { break };
                self.seqs[i].cache = None; // recomputed from its tokens on resume
            }
            if self.running_slots() + need_slots > max || self.kv_used() + need_kv > budget {
                break;
            }
            let w = self.waiting.remove(pos).expect("position is valid");
            self.start(w);
        }
        if self.waiting.iter().any(|w| w.ctx.priority == Priority::Interactive) {
            return;
        }
        // 2. Paused work resumes, oldest first, before new batch work starts.
        while let Some(i) = (0..self.seqs.len()).filter(|&i| self.seqs[i].paused).min_by_key(|&i| self.seqs[i].ctx.admitted_seq) {
            let s = &self.seqs[i];
            let extra_kv = if s.cache.is_none() { s.tokens.len() * s.slots() } else { 0 };
            if self.running_slots() + s.slots() > max || self.kv_used() + extra_kv > budget {
                return;
            }
            self.seqs[i].paused = false;
        }
        // 3. New batch work, first come first served.
        while let Some(w) = self.waiting.front() {
            if self.running_slots() + w.n > max || self.kv_used() + w.kv_tokens() > budget {
                break;
            }
            let w = self.waiting.pop_front().expect("front exists");
            self.start(w);
        }
    }

    fn start(&mut self, w: Waiting) {
        self.admitted += 1;
        let mut ctx = Arc::into_inner(w.ctx).expect("a waiting request's context is not shared");
        ctx.admitted_seq = self.admitted;
        let ctx = Arc::new(ctx);
        tracing::debug!(request = ctx.id, prompt_tokens = w.tokens.len(), n = w.n, "admitted");
        ctx.send(Event::Started { prompt_tokens: w.tokens.len(), queue_wait: ctx.submitted.elapsed() });
        let sampler = Sampler::new(ctx.sampling.clone(), 0);
        self.seqs.push(Seq::new(ctx, w.tokens, sampler, w.n - 1));
    }

    /// Keeps the running caches inside the memory budget as they grow, by evicting the newest
    /// batch sample (then the newest of any) until they fit; one sequence always runs.
    fn enforce_memory(&mut self) {
        let budget = self.limits.kv_budget_tokens;
        loop {
            let used: usize = self.seqs.iter().filter(|s| !s.paused).map(|s| s.kv_tokens() + s.slots()).sum();
            if used <= budget || self.seqs.iter().filter(|s| !s.paused).count() <= 1 {
                return;
            }
            let victim = self.newest(|s| !s.paused && s.ctx.priority == Priority::Batch).or_else(|| self.newest(|s| !s.paused));
            let Some(i) = victim else { return };
            self.seqs[i].paused = true;
            self.seqs[i].cache = None;
        }
    }

    /// The step: who feeds which tokens. Decodes go first (they are one token each and someone
    /// is waiting on them), then prompt chunks, interactive first. A sequence that decodes
    /// alone also feeds a draft: its step is nearly free to widen, while in a batch the
    /// arithmetic is spent already.
    fn plan(&self) -> Vec<Planned> {
        let mut plan = self.plan_tokens();
        if let [only] = &mut plan[..] {
            let seq = &self.seqs[only.seq];
            if only.wants_logits && !seq.is_prefill() {
                only.draft_room = seq.draft_room(self.limits.context_length);
                only.draft = seq.draft(only.draft_room);
            }
        }
        plan
    }

    fn plan_tokens(&self) -> Vec<Planned> {
        let mut plan = Vec::new();
        let mut used = 0;
        let runnable: Vec<usize> = (0..self.seqs.len()).filter(|&i| !self.seqs[i].paused).collect();
        for &i in &runnable {
            let r = self.seqs[i].next_input();
            if r.len() == 1 && !self.seqs[i].is_prefill() {
                used += 1;
                plan.push(self.planned(i, r));
            }
        }
        let mut prefills: Vec<usize> = runnable.into_iter().filter(|&i| self.seqs[i].is_prefill()).collect();
        prefills.sort_by_key(|&i| (self.seqs[i].ctx.priority, self.seqs[i].ctx.admitted_seq));
        for i in prefills {
            let r = self.seqs[i].next_input();
            if r.is_empty() {
                continue;
            }
            if used > 0 && used + r.len() > self.limits.max_step_tokens {
                break;
            }
            used += r.len();
            plan.push(self.planned(i, r));
        }
        plan
    }

    fn planned(&self, seq: usize, range: Range<usize>) -> Planned {
        Planned { seq, wants_logits: range.end == self.seqs[seq].tokens.len(), range, draft: Vec::new(), draft_room: 0 }
    }
}

#[cfg(test)]
mod tests {
    //! The scheduling rules without a model: a step "runs" by committing the planned tokens to
    //! each cache and drawing token 0 where logits were wanted.
    use super::*;
    use crate::kv_cache::SeqCache;
    use crate::sampler::SamplingParams;
    use crate::sequence::RequestCtx;
    use std::sync::atomic::AtomicBool;
    use std::time::Instant;
    use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver};

    fn request(priority: Priority, prompt: usize, n: usize) -> (Waiting, UnboundedReceiver<Event>) {
        let (tx, rx) = unbounded_channel();
        let ctx = RequestCtx {
            id: 0,
            tx,
            cancel: Arc::new(AtomicBool::new(false)),
            priority,
            submitted: Instant::now(),
            max_tokens: 1000,
            thinking_budget: None,
            detect_loops: false,
            ignore_eos: false,
            min_tokens: 0,
            stop: Vec::new(),
            prompt_len: prompt,
            starts_thinking: false,
            admitted_seq: 0,
            sampling: SamplingParams::greedy(),
            speculate: true,
        };
        (Waiting { ctx: Arc::new(ctx), tokens: vec![1; prompt], n }, rx)
    }

    fn scheduler(max_seqs: usize, kv_budget_tokens: usize, max_step_tokens: usize) -> Scheduler {
        Scheduler::new(Limits { max_seqs, kv_budget_tokens, max_step_tokens, context_length: 100_000 })
    }

    /// Schedules and applies one step as the worker would; returns the plan.
    fn step(s: &mut Scheduler) -> Vec<Planned> {
        let plan = s.schedule();
        let mut forked = Vec::new();
        for (p, seq) in plan.iter().zip(s.planned_mut(&plan)) {
            seq.cache.get_or_insert_with(|| SeqCache::new(1, Default::default())).commit(p.range.len());
            if p.wants_logits {
                for mut f in seq.take_forks() {
                    f.push_drawn(0);
                    forked.push(f);
                }
                seq.push_drawn(0);
            }
        }
        s.add(forked);
        s.retire_finished();
        plan
    }

    fn sizes(plan: &[Planned]) -> Vec<usize> {
        plan.iter().map(|p| p.range.len()).collect()
    }

    #[test]
    fn admits_up_to_the_slot_limit_first_come_first_served() {
        let mut s = scheduler(2, 10_000, 512);
        let _rx: Vec<_> = (0..3)
            .map(|_| {
                let (w, rx) = request(Priority::Batch, 10, 1);
                s.enqueue(w);
                rx
            })
            .collect();
        assert_eq!(sizes(&step(&mut s)), vec![10, 10]);
        let o = s.occupancy();
        assert_eq!((o.running, o.waiting), (2, 1));
        // Both decode now, one token each.
        assert_eq!(sizes(&step(&mut s)), vec![1, 1]);
    }

    #[test]
    fn chat_pauses_the_newest_batch_sample_and_goes_first() {
        let mut s = scheduler(2, 10_000, 512);
        let (a, _ra) = request(Priority::Batch, 10, 1);
        let (b, _rb) = request(Priority::Batch, 10, 1);
        s.enqueue(a);
        s.enqueue(b);
        step(&mut s);
        let (chat, _rc) = request(Priority::Interactive, 20, 1);
        s.enqueue(chat);
        let plan = step(&mut s);
        // The older batch sample decodes; the chat's prompt is read; the newer one waits.
        assert_eq!(sizes(&plan), vec![1, 20]);
        let o = s.occupancy();
        assert_eq!((o.running, o.paused), (2, 1));
    }

    #[test]
    fn paused_work_resumes_before_new_batch_work_starts() {
        let mut s = scheduler(1, 10_000, 512);
        let (a, _ra) = request(Priority::Batch, 10, 1);
        s.enqueue(a);
        step(&mut s);
        let (mut chat, rc) = request(Priority::Interactive, 5, 1);
        chat.ctx = Arc::new(RequestCtx { max_tokens: 1, ..Arc::into_inner(chat.ctx).unwrap() });
        s.enqueue(chat);
        let (late, _rl) = request(Priority::Batch, 7, 1);
        s.enqueue(late);
        assert_eq!(sizes(&step(&mut s)), vec![5], "the chat takes the only slot");
        // The chat's caller goes away: the paused sample resumes, not the newer request.
        drop(rc);
        assert_eq!(sizes(&step(&mut s)), vec![1]);
        assert_eq!(s.occupancy().waiting, 1);
    }

    #[test]
    fn chat_evicts_paused_caches_when_memory_is_short() {
        // Room for two 40-token contexts.
        let mut s = scheduler(2, 80, 512);
        let (a, _ra) = request(Priority::Batch, 30, 1);
        let (b, _rb) = request(Priority::Batch, 30, 1);
        s.enqueue(a);
        s.enqueue(b);
        step(&mut s);
        let (chat, _rc) = request(Priority::Interactive, 40, 1);
        s.enqueue(chat);
        let plan = step(&mut s);
        assert_eq!(sizes(&plan), vec![1, 40]);
        let paused = s.seqs.iter().find(|q| q.paused).unwrap();
        assert!(paused.cache.is_none(), "the paused sample's cache was evicted (recomputed on resume)");
        assert_eq!(paused.kv_tokens(), 0);
    }

    #[test]
    fn running_caches_that_outgrow_the_budget_evict_the_newest_batch_sample() {
        let mut s = scheduler(2, 24, 512);
        let (a, _ra) = request(Priority::Batch, 10, 1);
        let (b, _rb) = request(Priority::Batch, 10, 1);
        s.enqueue(a);
        s.enqueue(b);
        step(&mut s);
        // Each holds its tokens plus room for the next: 2 × 12 fits the budget of 24...
        step(&mut s);
        assert_eq!(s.occupancy().paused, 0);
        // ...and 2 × 13 does not.
        step(&mut s);
        assert_eq!(s.occupancy().paused, 1);
        assert!(s.seqs[1].paused && s.seqs[1].cache.is_none(), "the newest sample made room");
    }

    #[test]
    fn a_step_holds_decodes_first_then_prompt_chunks_within_the_token_budget() {
        let mut s = scheduler(4, 10_000, 300);
        let (a, _ra) = request(Priority::Batch, 4, 1);
        s.enqueue(a);
        step(&mut s);
        let (b, _rb) = request(Priority::Batch, 600, 1);
        let (c, _rc) = request(Priority::Interactive, 100, 1);
        s.enqueue(b);
        s.enqueue(c);
        // The decode, then the chat's prompt, then no room for a 256-token chunk.
        assert_eq!(sizes(&step(&mut s)), vec![1, 100]);
        // Chunks start at multiples of 256, whatever else runs.
        assert_eq!(sizes(&step(&mut s)), vec![1, 1, 256]);
        assert_eq!(sizes(&step(&mut s)), vec![1, 1, 256]);
        assert_eq!(sizes(&step(&mut s)), vec![1, 1, 88]);
    }

    #[test]
    fn only_a_sequence_decoding_alone_drafts() {
        let mut s = scheduler(2, 10_000, 512);
        // A prompt that repeats itself: "1 2 3 1 2 3 ...".
        let (mut a, _ra) = request(Priority::Interactive, 0, 1);
        a.tokens = [1, 2, 3].repeat(4);
        s.enqueue(a);
        assert!(step(&mut s)[0].draft.is_empty(), "reading a prompt");
        // After the drawn token 0, "1 2" again, as if decoded.
        s.seqs[0].tokens.extend([1, 2]);
        s.seqs[0].cache.as_mut().unwrap().commit(2);
        let plan = s.schedule();
        assert_eq!(plan[0].range.len(), 1);
        assert_eq!(plan[0].draft, vec![3, 0, 1, 2], "alone, it drafts what followed 1 2 the last time");
        let (b, _rb) = request(Priority::Batch, 3, 1);
        s.enqueue(b);
        assert!(s.schedule().iter().all(|p| p.draft.is_empty()), "in company, nobody drafts");
    }

    #[test]
    fn a_lone_prompt_larger_than_the_budget_still_runs() {
        let mut s = scheduler(1, 10_000, 100);
        let (a, _ra) = request(Priority::Batch, 300, 1);
        s.enqueue(a);
        assert_eq!(sizes(&step(&mut s)), vec![256]);
    }

    #[test]
    fn samples_fork_once_the_prompt_is_read() {
        let mut s = scheduler(4, 10_000, 512);
        let (w, _rx) = request(Priority::Batch, 10, 3);
        s.enqueue(w);
        assert_eq!(sizes(&step(&mut s)), vec![10]);
        assert_eq!(s.seqs.len(), 3);
        assert_eq!(s.seqs.iter().map(|q| q.index).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!(sizes(&step(&mut s)), vec![1, 1, 1]);
    }

    #[test]
    fn samples_hold_their_slots_before_they_fork() {
        let mut s = scheduler(4, 10_000, 512);
        let (a, _ra) = request(Priority::Batch, 10, 3);
        let (b, _rb) = request(Priority::Batch, 10, 2);
        s.enqueue(a);
        s.enqueue(b);
        assert_eq!(sizes(&step(&mut s)), vec![10], "3 + 2 samples exceed 4 slots");
        assert_eq!(s.occupancy().waiting, 1);
    }

    #[test]
    fn a_dropped_handle_cancels_every_sample_waiting_or_running() {
        let mut s = scheduler(4, 10_000, 512);
        let (a, ra) = request(Priority::Batch, 10, 3);
        s.enqueue(a);
        step(&mut s);
        let (b, rb) = request(Priority::Batch, 10, 2);
        s.enqueue(b);
        drop(ra);
        drop(rb);
        assert!(step(&mut s).is_empty());
        assert!(s.is_idle());
    }

    #[test]
    fn cancelling_unforked_samples_finishes_each_of_them() {
        let mut s = scheduler(4, 10_000, 8);
        let (a, mut ra) = request(Priority::Batch, 300, 3);
        s.enqueue(a);
        step(&mut s);
        s.seqs[0].ctx.cancel.store(true, std::sync::atomic::Ordering::Relaxed);
        step(&mut s);
        let mut finished = Vec::new();
        while let Ok(ev) = ra.try_recv() {
            if let Event::Finished { index, reason, .. } = ev {
                finished.push((index, reason));
            }
        }
        finished.sort_by_key(|f| f.0);
        assert_eq!(finished, (0..3).map(|i| (i, FinishReason::Cancelled)).collect::<Vec<_>>());
    }
}
