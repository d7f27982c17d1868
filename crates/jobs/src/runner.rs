//! Runs a job: every pending sample of every problem through a backend, each finished sample
//! written to the store at once. Pausing or cancelling stops what is in flight; those samples
//! are not recorded and run again when the job resumes.

use crate::backend::{Backend, Generation, Next};
use crate::extract;
use crate::store::{JobId, JobOptions, JobState, SampleRow, Store, StoreError};
use ponder_engine::{Channel, Event, FinishReason, GenerateRequest, Message, Priority, SamplingParams};
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const MATH_INSTRUCTION: &str = "Please reason step by step, and put your final answer within \\boxed{}.";
pub const MATH_INSTRUCTION_ZH: &str = "请逐步推理，并把最终答案写在 \\boxed{} 中。";

/// The prompt for a problem: the question and the R1 maths instruction, in Chinese for a
/// Chinese question.
pub fn prompt_for(question: &str, opts: &JobOptions) -> String {
    if !opts.math_instruction {
        return question.to_string();
    }
    let chinese = question.chars().filter(|c| ('\u{4e00}'..='\u{9fff}').contains(c)).count() * 4 > question.chars().count();
    let instruction = if chinese { MATH_INSTRUCTION_ZH } else { MATH_INSTRUCTION };
    format!("{question}\n{instruction}")
}

/// Pause or cancel a running job from another thread.
#[derive(Clone, Default)]
pub struct JobControl(Arc<AtomicU8>);

impl JobControl {
    pub fn pause(&self) {
        self.0.store(1, Ordering::Relaxed);
    }
    pub fn cancel(&self) {
        self.0.store(2, Ordering::Relaxed);
    }
    fn requested(&self) -> Option<JobState> {
        match self.0.load(Ordering::Relaxed) {
            1 => Some(JobState::Paused),
            2 => Some(JobState::Cancelled),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum JobEvent {
    /// A sample finished and was saved.
    Sample { problem_idx: usize, sample_idx: usize, extracted: Option<String>, finish_reason: String },
    Progress(Progress),
    /// Text of a running sample, for a live view.
    Delta { problem_idx: usize, sample_idx: usize, channel: Channel, text: String },
    /// A sample started over (its request was retried): its text so far is void.
    Restarted { problem_idx: usize, sample_idx: usize },
    /// The backend cannot make progress (`Some(why)`: the job waits for it) or can again.
    Waiting { reason: Option<String> },
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Progress {
    pub done: usize,
    pub total: usize,
    pub tokens_per_second: f64,
    pub eta_seconds: Option<f64>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the backend refused a request: {0}")]
    Backend(String),
}

struct InFlight {
    problem_idx: usize,
    samples: Vec<usize>,
    gen: Box<dyn Generation>,
    answer: Vec<String>,
    thinking: Vec<String>,
    started: Instant,
    first: Vec<Option<Instant>>,
}

/// Runs the job until it is complete, paused or cancelled; returns its new state.
pub fn run_job(
    store: &Store,
    job: JobId,
    backend: &dyn Backend,
    control: &JobControl,
    mut on_event: impl FnMut(JobEvent),
) -> Result<JobState, RunError> {
    let opts = store.options(job)?;
    let problems = store.problems(job)?;
    let pending = store.pending(job)?;
    let total = problems.len() * opts.samples;
    let mut done = total - pending.len();
    let mut queue: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (p, s) in pending {
        queue.entry(p).or_default().push(s);
    }
    store.set_state(job, JobState::Running)?;
    let capacity = backend.parallelism().max(1);
    let mut flying: Vec<InFlight> = Vec::new();
    let started = Instant::now();
    let mut tokens = 0usize;
    let mut done_this_run = 0usize;

    let mut waiting: Option<String> = None;
    loop {
        let now_waiting = backend.waiting_for();
        if now_waiting != waiting {
            waiting = now_waiting;
            on_event(JobEvent::Waiting { reason: waiting.clone() });
        }
        if let Some(state) = control.requested() {
            for f in &flying {
                f.gen.cancel();
            }
            store.set_state(job, state)?;
            return Ok(state);
        }
        // Keep the backend full: whole problems while they fit (their samples share a prefill).
        let in_use: usize = flying.iter().map(|f| f.samples.len()).sum();
        let mut room = capacity.saturating_sub(in_use);
        while room > 0 {
            let Some((&p, _)) = queue.iter().next() else { break };
            let samples = queue.get_mut(&p).unwrap();
            let take: Vec<usize> = samples.drain(..samples.len().min(room)).collect();
            if samples.is_empty() {
                queue.remove(&p);
            }
            room -= take.len();
            let req = GenerateRequest {
                sampling: SamplingParams {
                    temperature: opts.temperature,
                    top_p: opts.top_p,
                    // Per problem and first sample: a rerun draws the same way.
                    seed: opts.seed.map(|s| s ^ ((p as u64) << 20) ^ take[0] as u64),
                    ..Default::default()
                },
                max_tokens: opts.max_tokens,
                thinking_budget: opts.thinking_budget,
                n: take.len(),
                priority: Priority::Batch,
                ..GenerateRequest::chat(vec![Message::user(prompt_for(&problems[p].question, &opts))])
            };
            let gen = backend.start(req).map_err(RunError::Backend)?;
            let k = take.len();
            flying.push(InFlight {
                problem_idx: p,
                samples: take,
                gen,
                answer: vec![String::new(); k],
                thinking: vec![String::new(); k],
                started: Instant::now(),
                first: vec![None; k],
            });
        }
        if flying.is_empty() {
            break;
        }
        // Drain events from everything in flight.
        let wait = Duration::from_millis(if flying.len() > 1 { 2 } else { 50 });
        let mut finished_requests = Vec::new();
        for (fi, f) in flying.iter_mut().enumerate() {
            loop {
                let ev = match f.gen.next(wait) {
                    Next::Event(ev) => ev,
                    Next::Idle => break,
                    Next::Ended => {
                        finished_requests.push(fi);
                        break;
                    }
                    Next::Failed(e) => {
                        for f in &flying {
                            f.gen.cancel();
                        }
                        store.set_state(job, JobState::Paused)?;
                        return Err(RunError::Backend(e));
                    }
                };
                match ev {
                    Event::Started { .. } => {
                        // A retried request: unfinished samples start again from nothing.
                        for i in 0..f.samples.len() {
                            if !f.answer[i].is_empty() || !f.thinking[i].is_empty() {
                                f.answer[i].clear();
                                f.thinking[i].clear();
                                f.first[i] = None;
                                on_event(JobEvent::Restarted { problem_idx: f.problem_idx, sample_idx: f.samples[i] });
                            }
                        }
                    }
                    Event::Delta { index, channel, text } => {
                        f.first[index].get_or_insert_with(Instant::now);
                        match channel {
                            Channel::Thinking => f.thinking[index].push_str(&text),
                            Channel::Answer => f.answer[index].push_str(&text),
                        }
                        on_event(JobEvent::Delta { problem_idx: f.problem_idx, sample_idx: f.samples[index], channel, text });
                    }
                    Event::Finished { index, reason, usage, error } => {
                        if reason == FinishReason::Cancelled {
                            continue; // not recorded: it runs again on resume
                        }
                        let extracted = if reason == FinishReason::Length {
                            extract::explicit_answer(&f.answer[index], &f.thinking[index])
                        } else {
                            extract::final_answer(&f.answer[index], &f.thinking[index])
                        };
                        let finish_reason = match (&error, reason) {
                            (Some(e), _) => format!("error: {e}"),
                            (None, r) => format!("{r:?}").to_lowercase(),
                        };
                        let row = SampleRow {
                            problem_idx: f.problem_idx,
                            sample_idx: f.samples[index],
                            answer: std::mem::take(&mut f.answer[index]),
                            thinking: std::mem::take(&mut f.thinking[index]),
                            extracted: extracted.clone(),
                            finish_reason: finish_reason.clone(),
                            prompt_tokens: usage.prompt_tokens,
                            thinking_tokens: usage.thinking_tokens,
                            answer_tokens: usage.answer_tokens,
                            ttft_ms: usage.time_to_first_token.map_or(0, |d| d.as_millis() as u64),
                            duration_ms: f.started.elapsed().as_millis() as u64,
                        };
                        if store.insert_sample(job, &row)? {
                            done += 1;
                            done_this_run += 1;
                        }
                        tokens += usage.completion_tokens();
                        on_event(JobEvent::Sample {
                            problem_idx: f.problem_idx,
                            sample_idx: row.sample_idx,
                            extracted,
                            finish_reason,
                        });
                        let secs = started.elapsed().as_secs_f64().max(1e-3);
                        let rate = done_this_run as f64 / secs;
                        on_event(JobEvent::Progress(Progress {
                            done,
                            total,
                            tokens_per_second: tokens as f64 / secs,
                            eta_seconds: (rate > 0.0).then(|| (total - done) as f64 / rate),
                        }));
                    }
                }
            }
        }
        for fi in finished_requests.into_iter().rev() {
            flying.remove(fi);
        }
    }
    let state = if store.pending(job)?.is_empty() { JobState::Done } else { JobState::Paused };
    store.set_state(job, state)?;
    Ok(state)
}
