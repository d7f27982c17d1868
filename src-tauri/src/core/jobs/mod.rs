//! Batch jobs in the app: previews of dropped files, jobs kept in SQLite (the jobs crate's
//! store), each running on a thread of its own against the shared engine, with progress and
//! live text sent to every window that watches it.
pub mod commands;

use crate::core::engine::EngineState;
use crate::core::error::CommandError;
use crate::core::settings::Language;
use ponder_jobs::backend::LocalBackend;
pub use ponder_jobs::preview::FilePreview;
use ponder_jobs::remote::{RemoteBackend, RemoteConfig};
pub use ponder_jobs::report::ExportFormat;
use ponder_jobs::report::{self, ProblemStatus, VerdictCounts};
use ponder_jobs::runner::{run_job, JobControl, JobEvent};
use ponder_jobs::schema::MovedAside;
use ponder_jobs::store::{JobSummary, SampleRow};
use ponder_jobs::{JobId, JobOptions, JobState, Store};
use serde::Serialize;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// What the window hears about a running job: the runner's own events (`progress`, `sample`,
/// `delta`), then one `state` event when it stops.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum JobUiEvent {
    Run(JobEvent),
    State(Stopped),
}

/// The job stopped running: done, paused, cancelled, or failed (`error`). One variant, so that it
/// carries its `"event": "state"` tag beside the run's events.
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "JobStopped"))]
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Stopped {
    State { state: JobState, error: Option<CommandError> },
}

/// Where a job's events go; Tauri channels in the app, a vector in tests.
pub trait JobSink: Send + 'static {
    /// `false` once nobody listens on it.
    fn send(&self, event: &JobUiEvent) -> bool;
}

impl JobSink for tauri::ipc::Channel<JobUiEvent> {
    fn send(&self, event: &JobUiEvent) -> bool {
        tauri::ipc::Channel::send(self, event.clone()).is_ok()
    }
}

type Listeners = Arc<Mutex<Vec<Box<dyn JobSink>>>>;

/// The desktop notice for a finished job, in the window's language: a title, and the job's name
/// with its verdict counts that are not zero (without a key, only how many were answered).
pub fn finished_notice(name: &str, counts: &VerdictCounts, language: Language) -> (String, String) {
    let zh = language == Language::SimplifiedChinese;
    let title = if zh { "批量任务已完成" } else { "Batch job finished" };
    let words: [(usize, &str, &str); 4] = [
        (counts.confirmed, "confirmed", "确认"),
        (counts.disputed, "disputed", "存疑"),
        (counts.unsure, "unsure", "无法判断"),
        (counts.answered, "answered", "已作答"),
    ];
    let parts: Vec<String> = words
        .iter()
        .filter(|(n, _, _)| *n > 0)
        .map(|(n, en, zh_word)| if zh { format!("{zh_word} {n}") } else { format!("{n} {en}") })
        .collect();
    let body = if zh { format!("{name}：{}", parts.join("，")) } else { format!("{name}: {}", parts.join(", ")) };
    (title.to_string(), body)
}

struct Running {
    control: JobControl,
    listeners: Listeners,
}

fn broadcast(listeners: &Listeners, event: JobUiEvent) {
    listeners.lock().unwrap().retain(|l| l.send(&event));
}

/// A job as its table shows it.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize)]
pub struct JobTable {
    pub summary: JobSummary,
    pub options: JobOptions,
    pub problems: Vec<ProblemStatus>,
    pub counts: VerdictCounts,
    /// The problems' indices in the finished report's order (`ponder_jobs::report`).
    pub report_order: Vec<usize>,
    /// The file name to suggest for each export.
    pub export_names: ExportNames,
}

/// A finished job as its shareable report shows it (the HTML export and *Print*): the table,
/// and for each problem that needs a look, the sample shown with it.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize)]
pub struct JobReport {
    pub title: String,
    pub table: JobTable,
    pub shown: Vec<ShownSample>,
}

/// One sample's answer and thinking, for the report's problem `problem_idx`.
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize)]
pub struct ShownSample {
    pub problem_idx: usize,
    pub sample_idx: usize,
    pub answer: String,
    pub thinking: String,
}

/// The file name to suggest for each export format (`ExportFormat::file_name`).
#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize)]
pub struct ExportNames {
    pub csv: String,
    pub jsonl: String,
    pub markdown: String,
    /// The report as one HTML file, which the window renders (`JobReport`).
    pub html: String,
}

impl ExportNames {
    fn of(source: &str) -> Self {
        Self {
            csv: ExportFormat::Csv.file_name(source),
            jsonl: ExportFormat::Jsonl.file_name(source),
            markdown: ExportFormat::Markdown.file_name(source),
            html: report::export_name(source, "report", "html"),
        }
    }
}

/// Where a job runs: on this computer's engine, or on the remote engine.
pub enum Target {
    Local { engine: Arc<EngineState>, max_seqs: usize },
    Remote(RemoteConfig),
}

pub fn preview(path: &Path) -> Result<FilePreview, CommandError> {
    Ok(ponder_jobs::preview::preview(path)?)
}

pub struct JobsState {
    db_path: PathBuf,
    pub store: Mutex<Store>,
    running: Mutex<HashMap<JobId, Running>>,
}

impl JobsState {
    /// Opens the job store (a file it cannot use is moved aside: see the second value); jobs
    /// that were running when the app last stopped become paused, to be resumed when the user
    /// asks.
    pub fn open(db_path: PathBuf) -> Result<(Self, Option<MovedAside>), String> {
        let (store, moved) = Store::open_or_move_aside(&db_path).map_err(|e| format!("{}: {e}", db_path.display()))?;
        for job in store.jobs().map_err(|e| e.to_string())? {
            if matches!(job.state, JobState::Running | JobState::Queued) && job.samples_done < job.samples_total {
                let _ = store.set_state(job.id, JobState::Paused);
            }
        }
        Ok((Self { db_path, store: Mutex::new(store), running: Mutex::new(HashMap::new()) }, moved))
    }

    /// Reads the file again (what the preview showed may have changed) and stores a new job.
    pub fn create(&self, path: &Path, options: &JobOptions) -> Result<JobSummary, CommandError> {
        if options.samples == 0 || options.samples > 64 {
            return Err(CommandError::coded("jobs.samples", "samples per problem must be between 1 and 64", &[]));
        }
        if options.max_tokens == 0 {
            return Err(CommandError::coded("jobs.max_tokens", "max tokens must be at least 1", &[]));
        }
        let p = ponder_jobs::read_file(path, &Default::default())?;
        if p.problems.is_empty() {
            return Err(format!("{}: no problems found", path.display()).into());
        }
        let name = path.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let mut store = self.store.lock().unwrap();
        let id = store.create_job(&name, &path.display().to_string(), options, &p.problems)?;
        store.job(id).map_err(CommandError::from)
    }

    pub fn table(&self, id: JobId) -> Result<JobTable, CommandError> {
        let store = self.store.lock().unwrap();
        let summary = store.job(id)?;
        let options = store.options(id)?;
        let problems = report::statuses(&store.problems(id)?, &store.sample_outcomes(id)?, &options);
        let counts = report::counts(&problems);
        let report_order = report::report_order(&problems);
        let export_names = ExportNames::of(&summary.name);
        Ok(JobTable { summary, options, problems, counts, report_order, export_names })
    }

    /// The report: disputed and unsure problems each with the sample `report::shown_sample`
    /// picks.
    pub fn report(&self, id: JobId) -> Result<JobReport, CommandError> {
        let table = self.table(id)?;
        let mut shown = Vec::new();
        for p in table.problems.iter().filter(|p| report::needs_look(p.verdict)) {
            let samples = self.samples(id, p.idx)?;
            if let Some(s) = report::shown_sample(&samples, p.majority.as_deref()) {
                shown.push(ShownSample {
                    problem_idx: p.idx,
                    sample_idx: s.sample_idx,
                    answer: s.answer.clone(),
                    thinking: s.thinking.clone(),
                });
            }
        }
        Ok(JobReport { title: report::title(&table.summary.name), table, shown })
    }

    pub fn samples(&self, id: JobId, problem_idx: usize) -> Result<Vec<SampleRow>, CommandError> {
        self.store.lock().unwrap().problem_samples(id, problem_idx).map_err(CommandError::from)
    }

    pub fn is_running(&self, id: JobId) -> bool {
        self.running.lock().unwrap().contains_key(&id)
    }

    /// Runs (or resumes) a job; a job already running just gains a listener.
    pub fn run(self: &Arc<Self>, id: JobId, target: Target, sink: impl JobSink) -> Result<(), CommandError> {
        let (listeners, control) = {
            let mut running = self.running.lock().unwrap();
            if let Some(r) = running.get(&id) {
                r.listeners.lock().unwrap().push(Box::new(sink));
                return Ok(());
            }
            let summary = self.store.lock().unwrap().job(id)?;
            if summary.state == JobState::Done {
                return Err(CommandError::coded(
                    "jobs.complete",
                    format!("job {id} is already complete"),
                    &[("id", id.to_string())],
                ));
            }
            let listeners: Listeners = Arc::new(Mutex::new(vec![Box::new(sink) as Box<dyn JobSink>]));
            let control = JobControl::default();
            running.insert(id, Running { control: control.clone(), listeners: listeners.clone() });
            (listeners, control)
        };
        let this = self.clone();
        std::thread::Builder::new()
            .name(format!("ponder-job-{id}"))
            .spawn(move || {
                let outcome = this.run_blocking(id, target, &control, &listeners);
                this.running.lock().unwrap().remove(&id);
                let (state, error) = match outcome {
                    Ok(state) => (state, None),
                    Err(e) => {
                        tracing::error!("job {id}: {e}");
                        let _ = this.store.lock().unwrap().set_state(id, JobState::Paused);
                        (JobState::Paused, Some(e))
                    }
                };
                broadcast(&listeners, JobUiEvent::State(Stopped::State { state, error }));
            })
            .map_err(|e| format!("cannot start the job's thread: {e}"))?;
        Ok(())
    }

    fn run_blocking(
        &self,
        id: JobId,
        target: Target,
        control: &JobControl,
        listeners: &Listeners,
    ) -> Result<JobState, CommandError> {
        // The runner writes through a connection of its own, so reading the table never waits
        // for a step of the job.
        let store = Store::open(&self.db_path)?;
        let report = |ev| broadcast(listeners, JobUiEvent::Run(ev));
        match target {
            Target::Local { engine, max_seqs } => {
                let engine = engine.wait()?;
                let backend = LocalBackend { engine: &engine, max_seqs };
                Ok(run_job(&store, id, &backend, control, report)?)
            }
            Target::Remote(config) => {
                let backend = RemoteBackend::connect(config)?;
                Ok(run_job(&store, id, &backend, control, report)?)
            }
        }
    }

    pub fn pause(&self, id: JobId) {
        if let Some(r) = self.running.lock().unwrap().get(&id) {
            r.control.pause();
        }
    }

    /// Cancels a running job, or marks a paused one cancelled; what is done is kept.
    pub fn cancel(&self, id: JobId) -> Result<(), CommandError> {
        match self.running.lock().unwrap().get(&id) {
            Some(r) => r.control.cancel(),
            None => self.store.lock().unwrap().set_state(id, JobState::Cancelled)?,
        }
        Ok(())
    }

    pub fn delete(&self, id: JobId) -> Result<(), CommandError> {
        if self.is_running(id) {
            return Err(CommandError::coded("jobs.running", "stop the job before deleting it", &[]));
        }
        self.store.lock().unwrap().delete_job(id).map_err(CommandError::from)
    }

    /// Writes the job's results or report: CSV, JSONL or Markdown.
    pub fn export(&self, id: JobId, format: ExportFormat, path: &Path) -> Result<(), CommandError> {
        let (rows, name) = {
            let store = self.store.lock().unwrap();
            (report::rows(&store, id)?, store.job(id)?.name)
        };
        Ok(std::fs::write(path, format.render(&name, &rows)).map_err(|e| format!("{}: {e}", path.display()))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::settings::Settings;
    use crate::core::test_models::small_model;
    use std::sync::mpsc;
    use std::time::Duration;

    impl JobSink for mpsc::Sender<JobUiEvent> {
        fn send(&self, event: &JobUiEvent) -> bool {
            mpsc::Sender::send(self, event.clone()).is_ok()
        }
    }

    fn local(engine: &Arc<EngineState>) -> Target {
        Target::Local { engine: engine.clone(), max_seqs: 4 }
    }

    fn state_of(rx: &mpsc::Receiver<JobUiEvent>, seen: &mut Vec<JobUiEvent>) -> (JobState, Option<CommandError>) {
        loop {
            match rx.recv_timeout(Duration::from_secs(300)).expect("the job never stopped") {
                JobUiEvent::State(Stopped::State { state, error }) => return (state, error),
                ev => seen.push(ev),
            }
        }
    }

    #[test]
    fn a_keyed_file_runs_to_verdicts_pauses_resumes_and_exports() {
        ponder_testkit::threads();
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("set.csv");
        std::fs::write(&csv, "question,answer\nWhat is 2 + 2?,4\nWhat is 3 * 3?,9\nWhat is 10 - 7?,3\n").unwrap();
        let p = preview(&csv).unwrap();
        assert_eq!((p.problem_count, p.has_key, p.suggested_samples, p.suggested_max_samples), (3, true, 2, Some(8)));
        assert_eq!(p.columns.key.as_deref(), Some("answer"));
        let missing = preview(&dir.path().join("missing.csv")).unwrap_err();
        assert_eq!(missing.code, "read.io");
        assert!(missing.message.contains("missing.csv") && missing.params["path"].ends_with("missing.csv"), "{missing:?}");

        let settings = Settings { max_sequences: 4, context_size: 2048, ..Settings::default() };
        let engine = Arc::new(EngineState::default());
        engine.load(small_model(), &settings);
        let jobs = Arc::new(JobsState::open(dir.path().join("jobs.sqlite")).unwrap().0);
        let options = JobOptions { samples: 2, max_tokens: 40, temperature: 0.0, math_instruction: true, ..Default::default() };
        assert!(jobs.create(&csv, &JobOptions { samples: 0, ..options.clone() }).unwrap_err().message.contains("samples"));
        let job = jobs.create(&csv, &options).unwrap();
        assert_eq!((job.problems, job.samples_total, job.samples_done), (3, 6, 0));

        // Pause as soon as the first sample is in; what is done stays done.
        let (tx, rx) = mpsc::channel();
        jobs.run(job.id, local(&engine), tx).unwrap();
        let mut seen = Vec::new();
        loop {
            match rx.recv_timeout(Duration::from_secs(300)).unwrap() {
                JobUiEvent::Run(JobEvent::Sample { .. }) => break,
                ev => seen.push(ev),
            }
        }
        assert!(seen.iter().any(|e| matches!(e, JobUiEvent::Run(JobEvent::Delta { .. }))), "live text is sent");
        jobs.pause(job.id);
        assert_eq!(state_of(&rx, &mut seen), (JobState::Paused, None));
        let paused = jobs.table(job.id).unwrap();
        assert_eq!(paused.summary.state, JobState::Paused);
        assert!(paused.summary.samples_done >= 1 && paused.summary.samples_done < 6);

        // Reopening the store (an app restart) keeps the job paused; resume runs the rest.
        drop(jobs);
        let jobs = Arc::new(JobsState::open(dir.path().join("jobs.sqlite")).unwrap().0);
        let (tx, rx) = mpsc::channel();
        jobs.run(job.id, local(&engine), tx).unwrap();
        // A second window attaches to the same run.
        let (tx2, rx2) = mpsc::channel();
        jobs.run(job.id, local(&engine), tx2).unwrap();
        let mut seen = Vec::new();
        assert_eq!(state_of(&rx, &mut seen), (JobState::Done, None));
        assert_eq!(state_of(&rx2, &mut Vec::new()).0, JobState::Done);
        let progress: Vec<_> = seen
            .iter()
            .filter_map(|e| match e {
                JobUiEvent::Run(JobEvent::Progress(p)) => Some(p.done),
                _ => None,
            })
            .collect();
        assert_eq!(progress.last(), Some(&6));
        // What the window receives: flat objects tagged by `event`.
        let wire = serde_json::to_value(JobUiEvent::State(Stopped::State { state: JobState::Done, error: None })).unwrap();
        assert_eq!(wire, serde_json::json!({"event": "state", "state": "done", "error": null}));
        let wire =
            serde_json::to_value(seen.iter().find(|e| matches!(e, JobUiEvent::Run(JobEvent::Progress(_)))).unwrap()).unwrap();
        assert_eq!(wire["event"], "progress");
        assert!(wire["done"].is_u64());

        let table = jobs.table(job.id).unwrap();
        assert_eq!(table.summary.samples_done, 6);
        assert!(table.problems.iter().all(|p| p.verdict.is_some() && p.answers.len() == 2));
        let c = &table.counts;
        assert_eq!((c.confirmed + c.disputed + c.unsure, c.pending, c.answered), (3, 0, 0));
        assert_eq!(jobs.samples(job.id, 1).unwrap().len(), 2);
        assert!(jobs.run(job.id, local(&engine), mpsc::channel().0).unwrap_err().message.contains("already complete"));

        for (format, name) in [(ExportFormat::Csv, "r.csv"), (ExportFormat::Jsonl, "r.jsonl"), (ExportFormat::Markdown, "r.md")] {
            let out = dir.path().join(name);
            jobs.export(job.id, format, &out).unwrap();
            let text = std::fs::read_to_string(&out).unwrap();
            assert!(text.contains("What is 3 * 3?"), "{name}: {text}");
        }
        assert!(std::fs::read_to_string(dir.path().join("r.md")).unwrap().starts_with("# Validation of set.csv"));
        jobs.delete(job.id).unwrap();
        assert!(jobs.table(job.id).is_err());
    }

    #[test]
    fn a_job_runs_on_the_remote_engine() {
        use crate::core::remote::{tests::MemoryStore, RemoteState};
        use crate::core::server::{ServerState, ServerStatus};
        ponder_testkit::threads();
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("set.csv");
        std::fs::write(&csv, "question,answer\nWhat is 2 + 2?,4\nWhat is 3 * 3?,9\n").unwrap();
        // Another Ponder's local API server stands in for the cluster.
        let engine = Arc::new(EngineState::default());
        engine.load(small_model(), &Settings { max_sequences: 4, context_size: 2048, ..Settings::default() });
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let server = ServerState::default();
        server.apply(Some(crate::core::server::Wanted { port, api_key: None }), engine);
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while !matches!(server.status(), ServerStatus::On { .. }) {
            assert!(std::time::Instant::now() < deadline, "{:?}", server.status());
            std::thread::sleep(Duration::from_millis(50));
        }

        let remote = RemoteState { secrets: Box::new(MemoryStore::default()) };
        let settings = Settings { remote_url: Some(format!("http://127.0.0.1:{port}/v1")), ..Settings::default() };
        let jobs = Arc::new(JobsState::open(dir.path().join("jobs.sqlite")).unwrap().0);
        let job = jobs.create(&csv, &JobOptions { samples: 2, max_tokens: 40, temperature: 0.0, ..Default::default() }).unwrap();
        let (tx, rx) = mpsc::channel();
        jobs.run(job.id, Target::Remote(remote.config(&settings).unwrap().unwrap()), tx).unwrap();
        let mut seen = Vec::new();
        assert_eq!(state_of(&rx, &mut seen), (JobState::Done, None));
        assert!(seen.iter().any(|e| matches!(e, JobUiEvent::Run(JobEvent::Delta { .. }))), "text streams from the remote");
        let table = jobs.table(job.id).unwrap();
        assert_eq!(table.summary.samples_done, 4);
        assert!(table.problems.iter().all(|p| p.verdict.is_some()));

        // A remote engine that is not there is a clear error, and the job stays resumable.
        let job2 = jobs.create(&csv, &JobOptions { samples: 1, max_tokens: 8, ..Default::default() }).unwrap();
        let gone = Settings { remote_url: Some("http://127.0.0.1:9/v1".into()), ..Settings::default() };
        let (tx, rx) = mpsc::channel();
        jobs.run(job2.id, Target::Remote(remote.config(&gone).unwrap().unwrap()), tx).unwrap();
        let (state, error) = state_of(&rx, &mut Vec::new());
        assert_eq!(state, JobState::Paused);
        let error = error.unwrap();
        assert_eq!((error.code.as_str(), error.params["url"].as_str()), ("remote.unreachable", "http://127.0.0.1:9/v1/models"));
        assert!(error.message.contains("cannot reach http://127.0.0.1:9/v1/models"), "{error:?}");
    }

    #[test]
    fn the_finished_notice_gives_the_counts_in_the_windows_language() {
        let counts = VerdictCounts { confirmed: 12, disputed: 2, unsure: 1, ..Default::default() };
        assert_eq!(
            finished_notice("algebra.csv", &counts, Language::English),
            ("Batch job finished".to_string(), "algebra.csv: 12 confirmed, 2 disputed, 1 unsure".to_string())
        );
        assert_eq!(
            finished_notice("algebra.csv", &counts, Language::SimplifiedChinese).1,
            "algebra.csv：确认 12，存疑 2，无法判断 1"
        );
        let answered = VerdictCounts { answered: 5, ..Default::default() };
        assert_eq!(finished_notice("q.txt", &answered, Language::English).1, "q.txt: 5 answered");
    }
}
