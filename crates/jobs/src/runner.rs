//! Runs a job: every pending sample of every problem through a backend, each finished sample
//! written to the store at once. Pausing or cancelling stops what is in flight; those samples
//! are not recorded and run again when the job resumes.
//!
//! Only final outcomes are stored as final. A problem the backend turns down (too long for the
//! context, a remote 400) gets that refusal as its result and the job goes on; a failure that
//! says nothing of the problem (an engine fault, a server that kept failing, a refused key)
//! pauses the job with its reason, and resuming runs those samples again.
//!
//! The runner waits on all of its requests at once (one merged stream of their events) and on
//! its control, so it sleeps until something happens instead of polling.

use crate::backend::{Backend, BackendError, Generation, Next};
use crate::report::REFUSED_PREFIX;
use crate::store::{JobId, JobOptions, JobState, SampleRow, Store, StoreError};
use futures_util::stream::{self, SelectAll, StreamExt};
use ponder_answers::extract;
use ponder_engine::{Channel, Event, FinishReason, GenerateRequest, Message, Priority, SamplingParams};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

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
pub struct JobControl(Arc<ControlState>);

#[derive(Default)]
struct ControlState {
    requested: AtomicU8,
    /// Wakes the runner when something is requested.
    changed: Notify,
}

impl JobControl {
    pub fn pause(&self) {
        self.request(1);
    }
    pub fn cancel(&self) {
        self.request(2);
    }
    fn request(&self, what: u8) {
        self.0.requested.store(what, Ordering::Relaxed);
        // A permit is kept if the runner is not waiting right now.
        self.0.changed.notify_one();
    }
    fn requested(&self) -> Option<JobState> {
        match self.0.requested.load(Ordering::Relaxed) {
            1 => Some(JobState::Paused),
            2 => Some(JobState::Cancelled),
            _ => None,
        }
    }
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "JobRunEvent"))]
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum JobEvent {
    /// A sample finished and was saved.
    Sample {
        problem_idx: usize,
        sample_idx: usize,
        extracted: Option<String>,
        finish_reason: String,
    },
    Progress(Progress),
    /// Text of a running sample, for a live view.
    Delta {
        problem_idx: usize,
        sample_idx: usize,
        channel: Channel,
        text: String,
    },
    /// A sample started over (its request was retried): its text so far is void.
    Restarted {
        problem_idx: usize,
        sample_idx: usize,
    },
    /// The backend cannot make progress (`Some(why)`: the job waits for it) or can again.
    Waiting {
        reason: Option<String>,
    },
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[cfg_attr(feature = "ts", ts(rename = "JobProgress"))]
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
    /// The job is paused: its unfinished samples run when it resumes.
    #[error("the job is paused: {0}")]
    Backend(#[from] BackendError),
    #[error("cannot start the job's event loop: {0}")]
    Runtime(#[source] std::io::Error),
}

/// How often the runner looks again at whether the backend is waiting for something (a
/// remote server that is down), when nothing else wakes it.
const WAITING_CHECK: Duration = Duration::from_millis(250);

/// The events of every request in flight, each tagged with its request; a request's end shows
/// as `None`.
type Events = SelectAll<stream::BoxStream<'static, (u64, Option<Next>)>>;

fn tagged(id: u64, gen: Generation) -> stream::BoxStream<'static, (u64, Option<Next>)> {
    gen.map(move |n| (id, Some(n))).chain(stream::once(async move { (id, None) })).boxed()
}

struct InFlight {
    problem_idx: usize,
    samples: Vec<usize>,
    /// Which of `samples` have finished.
    done: Vec<bool>,
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
    on_event: impl FnMut(JobEvent),
) -> Result<JobState, RunError> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().map_err(RunError::Runtime)?;
    rt.block_on(Run::new(store, job, backend, on_event)?.run(control))
}

/// A job's run: what is queued, what is in flight, and the progress figures.
struct Run<'a, F> {
    store: &'a Store,
    job: JobId,
    backend: &'a dyn Backend,
    on_event: F,
    opts: JobOptions,
    problems: Vec<crate::reader::Problem>,
    /// Pending samples by problem.
    queue: BTreeMap<usize, Vec<usize>>,
    flying: HashMap<u64, InFlight>,
    events: Events,
    next_id: u64,
    total: usize,
    done: usize,
    done_this_run: usize,
    tokens: usize,
    started: Instant,
}

impl<'a, F: FnMut(JobEvent)> Run<'a, F> {
    fn new(store: &'a Store, job: JobId, backend: &'a dyn Backend, on_event: F) -> Result<Self, RunError> {
        let opts = store.options(job)?;
        let problems = store.problems(job)?;
        let pending = store.pending(job)?;
        let total = problems.len() * opts.samples;
        let mut queue: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (p, s) in &pending {
            queue.entry(*p).or_default().push(*s);
        }
        Ok(Self {
            store,
            job,
            backend,
            on_event,
            opts,
            problems,
            queue,
            flying: HashMap::new(),
            events: SelectAll::new(),
            next_id: 0,
            total,
            done: total - pending.len(),
            done_this_run: 0,
            tokens: 0,
            started: Instant::now(),
        })
    }

    async fn run(mut self, control: &JobControl) -> Result<JobState, RunError> {
        self.store.set_state(self.job, JobState::Running)?;
        let mut waiting: Option<String> = None;
        loop {
            let now_waiting = self.backend.waiting_for();
            if now_waiting != waiting {
                waiting = now_waiting;
                (self.on_event)(JobEvent::Waiting { reason: waiting.clone() });
            }
            if let Some(state) = control.requested() {
                // Dropping the requests cancels them; their samples run again on resume.
                self.events = SelectAll::new();
                self.store.set_state(self.job, state)?;
                return Ok(state);
            }
            self.fill()?;
            if self.flying.is_empty() {
                break;
            }
            let woke = tokio::select! {
                _ = control.0.changed.notified() => None,
                _ = tokio::time::sleep(WAITING_CHECK) => None,
                Some(tagged) = self.events.next() => Some(tagged),
            };
            match woke {
                None => {}
                Some((id, Some(Next::Event(ev)))) => {
                    if let Err(e) = self.on_request_event(id, ev)? {
                        return self.pause(e);
                    }
                }
                Some((id, Some(Next::Failed(e)))) if e.refuses_problem() => {
                    if let Some(f) = self.flying.remove(&id) {
                        let open: Vec<usize> =
                            f.samples.iter().zip(&f.done).filter(|(_, done)| !**done).map(|(s, _)| *s).collect();
                        self.refuse(f.problem_idx, &open, &e)?;
                    }
                }
                Some((_, Some(Next::Failed(e)))) => return self.pause(e),
                Some((id, None)) => {
                    self.flying.remove(&id);
                }
            }
        }
        let state = if self.store.pending(self.job)?.is_empty() { JobState::Done } else { JobState::Paused };
        self.store.set_state(self.job, state)?;
        Ok(state)
    }

    /// Stops the job on a failure that says nothing of its problems: the requests in flight
    /// are dropped (cancelled) and their samples run again when it resumes.
    fn pause(&mut self, e: BackendError) -> Result<JobState, RunError> {
        self.events = SelectAll::new();
        self.flying.clear();
        self.store.set_state(self.job, JobState::Paused)?;
        Err(RunError::Backend(e))
    }

    /// The backend turned the problem down: that, with its reason, is the result of each of
    /// these samples (no answer, so no vote), and the job goes on with the other problems.
    fn refuse(&mut self, problem_idx: usize, samples: &[usize], e: &BackendError) -> Result<(), RunError> {
        tracing::info!("problem {problem_idx} refused: {e}");
        for &sample_idx in samples {
            let row = SampleRow { problem_idx, sample_idx, finish_reason: format!("{REFUSED_PREFIX}{e}"), ..Default::default() };
            self.record(row, 0, None)?;
        }
        Ok(())
    }

    /// Stores a finished sample and tells the caller, with the progress it makes.
    fn record(&mut self, row: SampleRow, tokens: usize, extracted: Option<String>) -> Result<(), RunError> {
        let (problem_idx, sample_idx, finish_reason) = (row.problem_idx, row.sample_idx, row.finish_reason.clone());
        if self.store.insert_sample(self.job, &row)? {
            self.done += 1;
            self.done_this_run += 1;
        }
        self.tokens += tokens;
        (self.on_event)(JobEvent::Sample { problem_idx, sample_idx, extracted, finish_reason });
        let secs = self.started.elapsed().as_secs_f64().max(1e-3);
        let rate = self.done_this_run as f64 / secs;
        (self.on_event)(JobEvent::Progress(Progress {
            done: self.done,
            total: self.total,
            tokens_per_second: self.tokens as f64 / secs,
            eta_seconds: (rate > 0.0).then(|| (self.total - self.done) as f64 / rate),
        }));
        if self.opts.max_samples.is_some() {
            self.top_up(problem_idx)?;
        }
        Ok(())
    }

    /// Keeps the backend full: whole problems while they fit (their samples share a prefill).
    fn fill(&mut self) -> Result<(), RunError> {
        let capacity = self.backend.parallelism().max(1);
        let in_use: usize = self.flying.values().map(|f| f.samples.len()).sum();
        let mut room = capacity.saturating_sub(in_use);
        while room > 0 {
            let Some((&p, _)) = self.queue.iter().next() else { break };
            let samples = self.queue.get_mut(&p).expect("the key was just found");
            let take: Vec<usize> = samples.drain(..samples.len().min(room)).collect();
            if samples.is_empty() {
                self.queue.remove(&p);
            }
            room -= take.len();
            let opts = &self.opts;
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
                thinking: opts.thinking,
                n: take.len(),
                priority: Priority::Batch,
                ..GenerateRequest::chat(vec![Message::user(prompt_for(&self.problems[p].question, opts))])
            };
            let gen = match self.backend.start(req) {
                Ok(gen) => gen,
                Err(e) if e.refuses_problem() => {
                    self.refuse(p, &take, &e)?;
                    room += take.len(); // nothing of it is in flight
                    continue;
                }
                Err(e) => return Err(e.into()),
            };
            let id = self.next_id;
            self.next_id += 1;
            self.events.push(tagged(id, gen));
            let k = take.len();
            self.flying.insert(
                id,
                InFlight {
                    problem_idx: p,
                    samples: take,
                    done: vec![false; k],
                    answer: vec![String::new(); k],
                    thinking: vec![String::new(); k],
                    started: Instant::now(),
                    first: vec![None; k],
                },
            );
        }
        Ok(())
    }

    /// With a sample budget: once a problem's samples are all in, queue the ones its verdict
    /// still wants (none when the vote is clear).
    fn top_up(&mut self, p: usize) -> Result<(), RunError> {
        let running = self.flying.values().any(|f| f.problem_idx == p && f.done.contains(&false));
        if running || self.queue.contains_key(&p) {
            return Ok(());
        }
        let more: Vec<usize> = self.store.pending_for(self.job, p)?.into_iter().map(|(_, s)| s).collect();
        if !more.is_empty() {
            self.total += more.len();
            self.queue.insert(p, more);
        }
        Ok(())
    }

    /// Applies one event of a request. `Ok(Err(_))` is a failure that pauses the job.
    fn on_request_event(&mut self, id: u64, ev: Event) -> Result<Result<(), BackendError>, RunError> {
        let Some(f) = self.flying.get_mut(&id) else { return Ok(Ok(())) };
        let on_event = &mut self.on_event;
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
            Event::Finished { reason: FinishReason::Cancelled, .. } => {} // runs again on resume
            // Only final outcomes are stored as final: a sample that failed runs again.
            Event::Finished { error: Some(e), .. } => return Ok(Err(BackendError::Generation(e))),
            Event::Finished { index, reason, usage, error: None } => {
                let extracted = if reason == FinishReason::Length {
                    extract::explicit_answer(&f.answer[index], &f.thinking[index])
                } else {
                    extract::final_answer(&f.answer[index], &f.thinking[index])
                };
                let row = SampleRow {
                    problem_idx: f.problem_idx,
                    sample_idx: f.samples[index],
                    answer: std::mem::take(&mut f.answer[index]),
                    thinking: std::mem::take(&mut f.thinking[index]),
                    extracted: extracted.clone(),
                    finish_reason: reason.as_str().to_string(),
                    prompt_tokens: usage.prompt_tokens,
                    thinking_tokens: usage.thinking_tokens,
                    answer_tokens: usage.answer_tokens,
                    ttft_ms: usage.time_to_first_token.map_or(0, |d| d.as_millis() as u64),
                    duration_ms: f.started.elapsed().as_millis() as u64,
                };
                f.done[index] = true;
                self.record(row, usage.completion_tokens(), extracted)?;
            }
        }
        Ok(Ok(()))
    }
}
