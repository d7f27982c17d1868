//! The engine thread: it owns the model, takes requests between steps, and runs one
//! continuous-batching step after another. The scheduler decides what a step holds; the worker
//! applies that plan to the model and hands each sequence its logits.
//!
//! A panic is contained at two levels. In a step, it ends the sequences that step held, with an
//! error, and the others go on. Anywhere else in the loop, the scheduler's state can't be trusted:
//! every request is ended with an error and the worker starts over with an empty scheduler. The
//! weights are never written after loading, so the same model serves the next request either way.

use super::stats::{EngineStats, RateMeter};
use super::Shared;
use crate::decoder::{Decoder, StepInput};
use crate::draft_model::Drafter;
use crate::error::panic_message;
use crate::kv_cache::KvCacheType;
use crate::request::FinishReason;
use crate::scheduler::{Limits, Planned, Scheduler, Waiting};
use crate::sequence::Seq;
use crossbeam_channel::{Receiver, TryRecvError};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Instant;

pub(super) enum Command {
    Submit(Waiting),
    Shutdown,
}

pub(super) struct Worker {
    pub model: Decoder,
    pub shared: Arc<Shared>,
    pub rx: Receiver<Command>,
    pub sched: Scheduler,
    /// The scheduler's limits, to start over with after a panic outside a step.
    pub limits: Limits,
    /// How new sequences' caches store keys and values.
    pub kv_cache: KvCacheType,
    /// The draft model, where one was given and has not failed.
    pub drafter: Option<Drafter>,
    /// The tokens that close a thought, forced when a thinking budget runs out.
    pub close: Vec<u32>,
    pub rate: RateMeter,
    /// Tokens fed through the model so far: prompt chunks, generated tokens and drafts.
    pub fed: u64,
    /// Draft tokens verified so far, and how many of them were taken.
    pub drafted: u64,
    pub accepted: u64,
    #[cfg(feature = "fault-inject")]
    pub faults: super::fault::Faults,
}

impl Worker {
    pub fn run(mut self) {
        if let Err(p) = catch_unwind(AssertUnwindSafe(|| self.warm_up())) {
            tracing::error!("the warm-up step panicked: {}", panic_message(&*p));
        }
        while let Err(p) = catch_unwind(AssertUnwindSafe(|| self.serve())) {
            let why = format!("the engine hit an internal error and restarted: {}", panic_message(&*p));
            tracing::error!("{why}");
            let old = std::mem::replace(&mut self.sched, Scheduler::new(self.limits));
            // Ending the old requests may panic too; dropping them still closes their channels,
            // which their handles report as an engine failure.
            let _ = catch_unwind(AssertUnwindSafe(move || {
                let mut old = old;
                old.finish_all(FinishReason::Error, &why);
            }));
        }
        self.sched.finish_all(FinishReason::Cancelled, "the engine shut down");
    }

    /// The loop proper; returns when the engine shuts down.
    fn serve(&mut self) {
        while self.take_commands() {
            #[cfg(feature = "fault-inject")]
            self.faults.on_turn();
            let mut plan = self.sched.schedule();
            self.draft_with_model(&mut plan);
            if !plan.is_empty() {
                self.step(&plan);
            }
            self.publish_stats();
        }
    }

    /// Waits for work while idle, then takes every request that has arrived. False when the
    /// engine is shutting down.
    fn take_commands(&mut self) -> bool {
        if self.sched.is_idle() {
            match self.rx.recv() {
                Ok(Command::Submit(w)) => self.sched.enqueue(w),
                Ok(Command::Shutdown) | Err(_) => return false,
            }
        }
        loop {
            match self.rx.try_recv() {
                Ok(Command::Submit(w)) => self.sched.enqueue(w),
                Ok(Command::Shutdown) | Err(TryRecvError::Disconnected) => return false,
                Err(TryRecvError::Empty) => return true,
            }
        }
    }

    /// One token through the model before serving: the first matmul of each weight repacks it
    /// for the CPU's kernels, which would otherwise land on the first user's request.
    fn warm_up(&mut self) {
        let t = Instant::now();
        let mut cache = self.model.new_cache(self.kv_cache);
        let token = self.close.first().copied().unwrap_or(0);
        let _ = self.model.forward(&mut [StepInput { tokens: &[token, token], cache: &mut cache, logit_rows: 1 }]);
        tracing::debug!("warm-up took {:?}", t.elapsed());
    }

    /// Gives a sequence that may draft the draft model's guess instead of the n-gram one. A draft
    /// model is worth loading only at a fraction of the big model's cost, and then what counts is
    /// how often its guesses are taken: 83 % against the n-gram drafts' 42 % on `ponder bench`'s
    /// word problem. (The test models' 0.5B costs as much as the 1.5B, so there any use of it
    /// measured slower than n-gram drafts alone: 0.7x with its drafts, 1.08x with n-gram drafts
    /// first, against 1.6x.) A failing draft model is dropped with a warning: drafts only ever
    /// save time.
    fn draft_with_model(&mut self, plan: &mut [Planned]) {
        let (Some(drafter), [p]) = (self.drafter.as_mut(), plan) else { return };
        if p.draft_room == 0 {
            return;
        }
        let seq = &self.sched.planned_mut(std::slice::from_ref(p))[0];
        let why = match catch_unwind(AssertUnwindSafe(|| drafter.propose(&seq.tokens, p.draft_room))) {
            Ok(Ok(draft)) => {
                p.draft = draft;
                return;
            }
            Ok(Err(e)) => e.to_string(),
            Err(panic) => panic_message(&*panic),
        };
        tracing::warn!("the draft model failed and is turned off: {why}");
        self.drafter = None;
    }

    /// Runs the planned sequences through the model and samples the next token of each that
    /// finished reading its input.
    fn step(&mut self, plan: &[Planned]) {
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            #[cfg(feature = "fault-inject")]
            self.faults.on_step();
            let rows = self.forward(plan)?;
            Ok::<_, candle_core::Error>(self.sample(plan, rows))
        }));
        let failure = match outcome {
            Ok(Ok(generated)) => {
                self.rate.record(Instant::now(), generated);
                self.fed += plan.iter().map(|p| (p.range.len() + p.draft.len()) as u64).sum::<u64>();
                None
            }
            Ok(Err(e)) => Some(format!("the model step failed: {e}")),
            // The sequences of this step may hold half-written caches: they end here.
            Err(p) => Some(format!("the engine hit an internal error: {}", panic_message(&*p))),
        };
        if let Some(why) = failure {
            tracing::error!("{why}");
            for s in self.sched.planned_mut(plan) {
                s.finish(FinishReason::Error, Some(why.clone()));
            }
        }
        self.sched.retire_finished();
    }

    /// The model's forward pass over the plan: the rows of logits each sequence wants (one, or
    /// one more than its draft), in plan order.
    fn forward(&mut self, plan: &[Planned]) -> candle_core::Result<Vec<Vec<f32>>> {
        let mut seqs = self.sched.planned_mut(plan);
        // A draft is fed after the sequence's own tokens, in one slice.
        let drafted: Vec<Option<Vec<u32>>> = plan
            .iter()
            .zip(seqs.iter())
            .map(|(p, s)| (!p.draft.is_empty()).then(|| [&s.tokens[p.range.clone()], &p.draft[..]].concat()))
            .collect();
        let mut inputs: Vec<StepInput<'_>> = Vec::with_capacity(plan.len());
        for ((p, s), drafted) in plan.iter().zip(seqs.iter_mut()).zip(&drafted) {
            let (model, kind) = (&self.model, self.kv_cache);
            let Seq { tokens, cache, .. } = &mut **s;
            let cache = cache.get_or_insert_with(|| model.new_cache(kind));
            let tokens = drafted.as_deref().unwrap_or(&tokens[p.range.clone()]);
            inputs.push(StepInput { tokens, cache, logit_rows: usize::from(p.wants_logits) + p.draft.len() });
        }
        let t = Instant::now();
        let logits = self.model.forward(&mut inputs)?;
        tracing::trace!(tokens = ?inputs.iter().map(|i| i.tokens.len()).collect::<Vec<_>>(), elapsed = ?t.elapsed(), "step");
        Ok(logits.map(|l| l.to_vec2::<f32>()).transpose()?.unwrap_or_default())
    }

    /// Hands each sequence its rows of logits (and the samples it forks now that its prompt is
    /// read, the same row); returns the tokens drawn.
    fn sample(&mut self, plan: &[Planned], rows: Vec<Vec<f32>>) -> usize {
        let (tokenizer, close, context) = (&self.shared.tokenizer, &self.close[..], self.shared.context_length);
        let mut rows = rows.into_iter();
        let (mut forked, mut generated) = (Vec::new(), 0);
        for (p, s) in plan.iter().zip(self.sched.planned_mut(plan)) {
            if !p.wants_logits {
                continue;
            }
            if !p.draft.is_empty() {
                let mine: Vec<Vec<f32>> = rows.by_ref().take(p.draft.len() + 1).collect();
                let v = s.on_verify(mine, &p.draft, tokenizer, close, context);
                self.drafted += p.draft.len() as u64;
                self.accepted += v.accepted as u64;
                generated += v.drawn;
                continue;
            }
            let Some(mut row) = rows.next() else { break };
            for mut f in s.take_forks() {
                f.on_logits(&mut row.clone(), tokenizer, close, context);
                forked.push(f);
            }
            s.on_logits(&mut row, tokenizer, close, context);
            generated += 1;
        }
        generated += forked.len();
        self.sched.add(forked);
        generated
    }

    fn publish_stats(&mut self) {
        let now = Instant::now();
        let o = self.sched.occupancy();
        let stats = EngineStats {
            running: o.running,
            paused: o.paused,
            waiting: o.waiting,
            kv_tokens_used: o.kv_tokens_used,
            kv_tokens_budget: o.kv_tokens_budget,
            tokens_per_second: self.rate.rate(now),
            total_generated: self.rate.total,
            total_fed: self.fed,
            total_drafted: self.drafted,
            total_accepted: self.accepted,
        };
        if let Ok(mut g) = self.shared.stats.lock() {
            *g = (stats, now);
        }
    }
}
