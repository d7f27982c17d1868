//! The job runner on the real engine and 0.5B model: pause, resume, cancel, progress, and a
//! keyed set through to its report.

use ponder_engine::{Engine, EngineConfig, LoadOptions};
use ponder_jobs::backend::LocalBackend;
use ponder_jobs::reader::Problem;
use ponder_jobs::runner::{run_job, JobControl, JobEvent};
use ponder_jobs::{report, JobOptions, JobState, Store};

fn engine() -> Engine {
    engine_of(2048)
}

fn engine_of(context: usize) -> Engine {
    ponder_testkit::threads();
    let p = ponder_testkit::small_model();
    Engine::start(
        ponder_engine::load(&p, &LoadOptions { max_context: Some(context), ..Default::default() }).unwrap(),
        EngineConfig::default(),
    )
    .unwrap()
}

fn problems(n: usize) -> Vec<Problem> {
    (0..n)
        .map(|i| Problem {
            id: format!("q{i}"),
            question: format!("What is {i} times 3? Answer with the number only."),
            key: Some((i * 3).to_string()),
            extra: vec![],
            line: i + 2,
        })
        .collect()
}

fn opts() -> JobOptions {
    JobOptions { samples: 2, max_tokens: 24, temperature: 0.0, math_instruction: false, ..Default::default() }
}

#[test]
fn pause_resume_and_cancel() {
    let e = engine();
    let backend = LocalBackend { engine: &e, max_seqs: 4 };
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("jobs.sqlite")).unwrap();
    let job = store.create_job("t", "test", &opts(), &problems(5)).unwrap();
    assert_eq!(store.pending(job).unwrap().len(), 10);

    // Pause as soon as the first sample is saved.
    let control = JobControl::default();
    let mut progress = Vec::new();
    let state = run_job(&store, job, &backend, &control, |ev| {
        if let JobEvent::Progress(p) = ev {
            progress.push(p);
            control.pause();
        }
    })
    .unwrap();
    assert_eq!(state, JobState::Paused);
    assert_eq!(store.job(job).unwrap().state, JobState::Paused);
    let done_at_pause = store.samples(job).unwrap().len();
    assert!((1..10).contains(&done_at_pause), "{done_at_pause}");
    assert_eq!(progress[0].total, 10);
    assert_eq!(progress[0].done, 1);

    // Resume to the end: every sample once.
    let mut last = None;
    let state = run_job(&store, job, &backend, &JobControl::default(), |ev| {
        if let JobEvent::Progress(p) = ev {
            last = Some(p);
        }
    })
    .unwrap();
    assert_eq!(state, JobState::Done);
    let last = last.unwrap();
    assert_eq!((last.done, last.total), (10, 10));
    assert!(last.tokens_per_second > 0.0);
    assert_eq!(store.samples(job).unwrap().len(), 10);
    assert!(store.pending(job).unwrap().is_empty());
    let rows = report::rows(&store, job).unwrap();
    assert_eq!(rows.len(), 5);
    assert!(rows.iter().all(|r| r.samples.len() == 2));

    // Cancel: the job stops and says so.
    let job2 = store.create_job("t2", "test", &opts(), &problems(3)).unwrap();
    let control = JobControl::default();
    control.cancel();
    let state = run_job(&store, job2, &backend, &control, |_| {}).unwrap();
    assert_eq!(state, JobState::Cancelled);
    assert_eq!(store.job(job2).unwrap().state, JobState::Cancelled);
    assert_eq!(store.pending(job2).unwrap().len(), 6);
}

#[test]
fn reports_in_three_formats() {
    let e = engine();
    let backend = LocalBackend { engine: &e, max_seqs: 4 };
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("jobs.sqlite")).unwrap();
    let mut ps = problems(3);
    ps[0].extra = vec![("topic".into(), "times tables".into())];
    ps[1].extra = vec![("topic".into(), "times tables".into())];
    ps[2].extra = vec![("topic".into(), "times tables".into())];
    ps[2].key = Some("999".into()); // a wrong key: greedy samples agree, so it is disputed
    let job = store.create_job("t", "test", &opts(), &ps).unwrap();
    assert_eq!(run_job(&store, job, &backend, &JobControl::default(), |_| {}).unwrap(), JobState::Done);
    let rows = report::rows(&store, job).unwrap();
    assert_eq!(rows[2].verdict, ponder_answers::Verdict::Disputed, "{:?}", rows[2]);

    let jsonl = report::to_jsonl(&rows);
    let first: serde_json::Value = serde_json::from_str(jsonl.lines().next().unwrap()).unwrap();
    for f in ["id", "question", "key", "majority", "agreement", "verdict", "samples", "topic"] {
        assert!(first.get(f).is_some(), "JSONL field {f}");
    }
    let csv = report::to_csv(&rows);
    let mut r = csv::Reader::from_reader(csv.as_bytes());
    assert_eq!(
        r.headers().unwrap().iter().collect::<Vec<_>>(),
        ["id", "question", "key", "majority", "agreement", "verdict", "answers", "topic"]
    );
    assert_eq!(r.records().count(), 3);
    let md = report::to_markdown("Check", &rows);
    let disputed_at = md.find("| q2 | disputed").unwrap();
    let first_row = md.find("| q0 |").unwrap();
    assert!(disputed_at < first_row, "disputed problems come first:\n{md}");
    assert!(md.contains("| disputed | 1 |"));
}

/// A backend that answers from a script: each problem's samples give its listed answers in
/// turn, so the adaptive rule's decisions can be checked exactly.
struct Scripted {
    answers: std::sync::Mutex<std::collections::HashMap<String, std::collections::VecDeque<String>>>,
}

impl ponder_jobs::backend::Backend for Scripted {
    fn start(
        &self,
        req: ponder_engine::GenerateRequest,
    ) -> Result<ponder_jobs::backend::Generation, ponder_jobs::backend::BackendError> {
        use futures_util::StreamExt;
        use ponder_engine::{Channel, Event, FinishReason, Usage};
        use ponder_jobs::backend::Next;
        let prompt = format!("{:?}", req.prompt);
        let mut script = self.answers.lock().unwrap();
        let (_, queue) = script.iter_mut().find(|(id, _)| prompt.contains(id.as_str())).expect("a scripted question");
        let mut events = vec![Next::Event(Event::Started { prompt_tokens: 5, queue_wait: Default::default() })];
        for index in 0..req.n {
            let answer = queue.pop_front().expect("the script has an answer for every sample drawn");
            let text = format!("So it is \\boxed{{{answer}}}.");
            events.push(Next::Event(Event::Delta { index, channel: Channel::Answer, text }));
            let usage = Usage { answer_tokens: 10, ..Default::default() };
            events.push(Next::Event(Event::Finished { index, reason: FinishReason::Stop, usage, error: None }));
        }
        Ok(futures_util::stream::iter(events).boxed())
    }
    fn parallelism(&self) -> usize {
        4
    }
}

#[test]
fn a_sample_budget_stops_agreeing_problems_early_and_draws_more_for_split_ones() {
    // Agreeing with the key settles at two; three agreeing against it dispute at four; a close
    // split draws the whole budget; a spread one stops at four.
    let script: [(&str, &[&str]); 4] = [
        ("agree", &["4", "4"]),
        ("split", &["4", "5", "5", "5"]),
        ("close", &["4", "5", "4", "5", "6", "5", "4", "5"]),
        ("spread", &["1", "2", "3", "5"]),
    ];
    let backend = Scripted {
        answers: std::sync::Mutex::new(
            script.iter().map(|(id, a)| (format!("Q-{id}"), a.iter().map(|s| s.to_string()).collect())).collect(),
        ),
    };
    let problems: Vec<Problem> = script
        .iter()
        .enumerate()
        .map(|(i, (id, _))| Problem {
            id: id.to_string(),
            question: format!("Q-{id}: what is 2 + 2?"),
            key: Some("4".into()),
            extra: vec![],
            line: i + 2,
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("jobs.sqlite")).unwrap();
    let options = JobOptions { samples: 2, max_samples: Some(8), ..opts() };
    let job = store.create_job("t", "test", &options, &problems).unwrap();
    assert_eq!(store.pending(job).unwrap().len(), 8, "two samples each to start");
    let state = run_job(&store, job, &backend, &JobControl::default(), |_| {}).unwrap();
    assert_eq!(state, JobState::Done);
    let st = report::statuses(&store.problems(job).unwrap(), &store.samples(job).unwrap(), &options);
    let used: Vec<(usize, Option<ponder_jobs::Verdict>)> = st.iter().map(|p| (p.samples_done, p.verdict)).collect();
    use ponder_jobs::Verdict::*;
    assert_eq!(used, [(2, Some(Confirmed)), (4, Some(Disputed)), (8, Some(Unsure)), (4, Some(Unsure))]);
    assert!(backend.answers.lock().unwrap().values().all(|q| q.is_empty()), "every scripted answer was used");
    assert_eq!(store.job(job).unwrap().samples_total, 18);
}

/// A backend that turns some problems down and fails others once, by what the question says.
#[derive(Default)]
struct Picky {
    failed_once: std::sync::atomic::AtomicBool,
}

impl ponder_jobs::backend::Backend for Picky {
    fn start(
        &self,
        req: ponder_engine::GenerateRequest,
    ) -> Result<ponder_jobs::backend::Generation, ponder_jobs::backend::BackendError> {
        use futures_util::StreamExt;
        use ponder_engine::{Channel, EngineError, Event, FinishReason, Usage};
        use ponder_jobs::backend::{BackendError, Next};
        use ponder_jobs::remote::RemoteError;
        let prompt = format!("{:?}", req.prompt);
        if prompt.contains("too-long") {
            return Err(EngineError::ContextOverflow { prompt_tokens: 9000, max_tokens: 64, context_length: 4096 }.into());
        }
        let started = Next::Event(Event::Started { prompt_tokens: 5, queue_wait: Default::default() });
        if prompt.contains("bad-request") {
            let refused = RemoteError::Refused { url: "http://gpu/v1/chat/completions".into(), status: 400, body: "no".into() };
            return Ok(futures_util::stream::iter([started, Next::Failed(BackendError::Remote(refused))]).boxed());
        }
        let mut events = vec![started];
        for index in 0..req.n {
            let text = "So it is \\boxed{4}.".to_string();
            events.push(Next::Event(Event::Delta { index, channel: Channel::Answer, text }));
            let fail = prompt.contains("flaky") && !self.failed_once.swap(true, std::sync::atomic::Ordering::SeqCst);
            let (reason, error) = if fail {
                (FinishReason::Error, Some("the server kept failing".to_string()))
            } else {
                (FinishReason::Stop, None)
            };
            events.push(Next::Event(Event::Finished {
                index,
                reason,
                usage: Usage { answer_tokens: 6, ..Default::default() },
                error,
            }));
        }
        Ok(futures_util::stream::iter(events).boxed())
    }
    fn parallelism(&self) -> usize {
        2
    }
}

fn problems_named(names: &[&str]) -> Vec<Problem> {
    names
        .iter()
        .enumerate()
        .map(|(i, id)| Problem {
            id: id.to_string(),
            question: format!("Q-{id}: what is 2 + 2?"),
            key: Some("4".into()),
            extra: vec![],
            line: i + 2,
        })
        .collect()
}

#[test]
fn a_refused_problem_is_its_result_and_the_job_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("jobs.sqlite")).unwrap();
    let options = JobOptions { samples: 2, ..opts() };
    let problems = problems_named(&["too-long", "fine", "bad-request", "also-fine"]);
    let job = store.create_job("t", "test", &options, &problems).unwrap();
    let state = run_job(&store, job, &Picky::default(), &JobControl::default(), |_| {}).unwrap();
    assert_eq!(state, JobState::Done, "refusals are results, not the end of the job");
    let samples = store.samples(job).unwrap();
    assert_eq!(samples.len(), 8);
    for s in &samples {
        let refusal = report::refusal(&s.finish_reason);
        match s.problem_idx {
            0 => assert!(refusal.is_some_and(|r| r.contains("exceed the context length")), "{s:?}"),
            2 => assert!(refusal.is_some_and(|r| r.contains("HTTP 400")), "{s:?}"),
            _ => assert_eq!((s.finish_reason.as_str(), s.extracted.as_deref()), ("stop", Some("4"))),
        }
    }
    let st = report::statuses(&store.problems(job).unwrap(), &samples, &options);
    use ponder_jobs::Verdict::*;
    assert_eq!(st.iter().map(|p| p.verdict).collect::<Vec<_>>(), [Some(Unsure), Some(Confirmed), Some(Unsure), Some(Confirmed)]);
    let md = report::to_markdown("t", &report::rows(&store, job).unwrap());
    assert!(md.contains("| too-long | unsure (refused: request too long:"), "{md}");
}

#[test]
fn a_sample_that_fails_is_not_stored_as_final_the_job_pauses_and_resume_runs_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("jobs.sqlite")).unwrap();
    let options = JobOptions { samples: 2, ..opts() };
    let job = store.create_job("t", "test", &options, &problems_named(&["flaky", "fine"])).unwrap();
    let backend = Picky::default();
    let e = run_job(&store, job, &backend, &JobControl::default(), |_| {}).unwrap_err();
    assert!(e.to_string().contains("paused") && e.to_string().contains("the server kept failing"), "{e}");
    assert_eq!(store.job(job).unwrap().state, JobState::Paused);
    assert!(store.samples(job).unwrap().iter().all(|s| s.finish_reason == "stop"), "no failure stored as a result");
    assert!(!store.pending(job).unwrap().is_empty());
    // Resuming runs what the failure left, and nothing twice.
    assert_eq!(run_job(&store, job, &backend, &JobControl::default(), |_| {}).unwrap(), JobState::Done);
    let samples = store.samples(job).unwrap();
    assert_eq!(samples.len(), 4);
    assert!(samples.iter().all(|s| s.finish_reason == "stop" && s.extracted.as_deref() == Some("4")));
}

/// On the real engine, a question longer than the context leaves is refused (its result says
/// why) and one that leaves a little room is answered within it, instead of stopping the job.
#[test]
fn too_long_questions_on_the_real_engine() {
    let e = engine_of(512);
    let backend = LocalBackend { engine: &e, max_seqs: 4 };
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("jobs.sqlite")).unwrap();
    let word_count = |n: usize| vec!["apple"; n].join(" ");
    let mut problems = problems(1);
    problems.push(Problem { id: "huge".into(), question: word_count(800), key: None, extra: vec![], line: 3 });
    problems.push(Problem { id: "tight".into(), question: word_count(470), key: None, extra: vec![], line: 4 });
    let options = JobOptions { samples: 1, max_tokens: 64, ..opts() };
    let job = store.create_job("t", "test", &options, &problems).unwrap();
    assert_eq!(run_job(&store, job, &backend, &JobControl::default(), |_| {}).unwrap(), JobState::Done);
    let samples = store.samples(job).unwrap();
    let by = |p: usize| samples.iter().find(|s| s.problem_idx == p).unwrap();
    assert_eq!(by(0).finish_reason, "stop");
    assert!(report::refusal(&by(1).finish_reason).is_some_and(|r| r.contains("context length of 512")), "{:?}", by(1));
    let tight = by(2);
    assert!(matches!(tight.finish_reason.as_str(), "stop" | "length"), "{tight:?}");
    assert!(tight.prompt_tokens + 64 > 512, "the question leaves less room than max_tokens: {tight:?}");
    assert!(tight.prompt_tokens + tight.thinking_tokens + tight.answer_tokens <= 512, "{tight:?}");
    assert!(tight.answer_tokens < 64, "clamped to what the context leaves: {tight:?}");
}

/// Each sample is committed when the runner reports it: another process reading the store (the
/// way a user's script or `sqlite3` would, while the job runs) sees it at once, and sees every
/// earlier one. Python's sqlite3 is that other process; a second connection in this process is
/// checked at every step.
#[test]
fn a_reader_outside_the_runner_sees_each_sample_as_it_is_reported() {
    let ids = ["a", "b", "c"];
    let backend = Scripted {
        answers: std::sync::Mutex::new(ids.iter().map(|id| (format!("Q-{id}"), ["4", "4"].map(String::from).into())).collect()),
    };
    let problems: Vec<Problem> = ids
        .iter()
        .enumerate()
        .map(|(i, id)| Problem {
            id: id.to_string(),
            question: format!("Q-{id}: 2 + 2?"),
            key: Some("4".into()),
            extra: vec![],
            line: i + 2,
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("jobs.sqlite");
    let mut store = Store::open(&db).unwrap();
    let job = store.create_job("t", "test", &JobOptions { samples: 2, ..opts() }, &problems).unwrap();
    let reader = rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
    let count = || -> usize { reader.query_row("SELECT COUNT(*) FROM samples", [], |r| r.get::<_, i64>(0)).unwrap() as usize };
    let python = || -> String {
        let script = "import sqlite3, sys\nc = sqlite3.connect(f'file:{sys.argv[1]}?mode=ro', uri=True)\nprint(c.execute('SELECT COUNT(*) FROM samples').fetchone()[0])";
        let out = std::process::Command::new("python3").args(["-c", script]).arg(&db).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let mut seen = Vec::new();
    let state = run_job(&store, job, &backend, &JobControl::default(), |ev| {
        if let JobEvent::Progress(p) = ev {
            assert_eq!(count(), p.done, "a second connection, after {} reported", p.done);
            if p.done == 1 {
                assert_eq!(python(), "1", "another process, after the first sample");
            }
            seen.push(p.done);
        }
    })
    .unwrap();
    assert_eq!(state, JobState::Done);
    assert_eq!(seen, [1, 2, 3, 4, 5, 6]);
    assert_eq!(python(), "6");
}
