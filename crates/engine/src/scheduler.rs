//! Who runs in the next step: admission under the slot and KV-memory limits, chat before batch
//! work (pausing batch samples when slots are full, evicting their caches when memory is), and
//! the step's token budget split between decodes and prompt chunks.

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
    pub limits: Limits,
    pub waiting: VecDeque<Waiting>,
    pub seqs: Vec<Seq>,
    admitted: u64,
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

    fn running_slots(&self) -> usize {
        self.seqs.iter().filter(|s| !s.paused).map(|s| s.slots()).sum()
    }

    pub fn kv_used(&self) -> usize {
        self.seqs.iter().map(|s| s.kv_tokens()).sum()
    }

    /// Finishes everything whose caller cancelled or went away.
    pub fn reap_cancelled(&mut self) {
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
                for index in s.index + 1..s.index + s.slots() {
                    s.ctx.send(Event::Finished { index, reason: FinishReason::Cancelled, usage: Default::default(), error: None });
                }
                s.forks_pending = 0;
                s.finish(FinishReason::Cancelled, None);
            }
        }
        self.seqs.retain(|s| !s.finished);
    }

    /// Newest (last admitted) sequence matching `pred`.
    fn newest(&self, pred: impl Fn(&Seq) -> bool) -> Option<usize> {
        (0..self.seqs.len())
            .filter(|&i| pred(&self.seqs[i]))
            .max_by_key(|&i| self.seqs[i].ctx.admitted_seq)
    }

    pub fn admit(&mut self) {
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
        loop {
            let Some(i) = (0..self.seqs.len())
                .filter(|&i| self.seqs[i].paused)
                .min_by_key(|&i| self.seqs[i].ctx.admitted_seq)
            else {
                break;
            };
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
    pub fn enforce_memory(&mut self) {
        let budget = self.limits.kv_budget_tokens;
        loop {
            let used: usize = self.seqs.iter().filter(|s| !s.paused).map(|s| s.kv_tokens() + s.slots()).sum();
            if used <= budget || self.seqs.iter().filter(|s| !s.paused).count() <= 1 {
                return;
            }
            let victim = self
                .newest(|s| !s.paused && s.ctx.priority == Priority::Batch)
                .or_else(|| self.newest(|s| !s.paused));
            let Some(i) = victim else { return };
            self.seqs[i].paused = true;
            self.seqs[i].cache = None;
        }
    }

    /// The step: indices into `seqs` and the token range each feeds. Decodes go first (they are
    /// one token each and someone is waiting on them), then prompt chunks, interactive first.
    pub fn plan(&self) -> Vec<(usize, Range<usize>)> {
        let mut plan = Vec::new();
        let mut used = 0;
        let runnable: Vec<usize> = (0..self.seqs.len()).filter(|&i| !self.seqs[i].paused).collect();
        for &i in &runnable {
            let r = self.seqs[i].next_input();
            if r.len() == 1 && !self.seqs[i].is_prefill() {
                used += 1;
                plan.push((i, r));
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
            plan.push((i, r));
        }
        plan
    }
}
