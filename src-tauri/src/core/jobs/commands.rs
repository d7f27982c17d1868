//! The batch jobs' Tauri commands: thin calls into [`JobsState`].
use super::{ExportFormat, FilePreview, JobSink, JobTable, JobUiEvent, JobsState, Stopped, Target};
use crate::core::engine::EngineState;
use crate::core::error::CommandError;
use crate::core::files::{Access, FileGrants};
use crate::core::remote::RemoteState;
use crate::core::settings::SettingsState;
use ponder_jobs::store::{JobSummary, SampleRow};
use ponder_jobs::{JobId, JobOptions, JobState};
use std::sync::Arc;
use tauri::ipc::Channel;
use tauri::State;

type Jobs<'a> = State<'a, Arc<JobsState>>;

#[tauri::command(async)]
pub fn preview_file(grants: State<'_, FileGrants>, path: String) -> Result<FilePreview, CommandError> {
    super::preview(&grants.check(&path, Access::Read)?)
}

#[tauri::command(async)]
pub fn create_job(
    jobs: Jobs<'_>,
    grants: State<'_, FileGrants>,
    path: String,
    options: JobOptions,
) -> Result<JobSummary, CommandError> {
    jobs.create(&grants.check(&path, Access::Read)?, &options)
}

#[tauri::command]
pub fn list_jobs(jobs: Jobs<'_>) -> Result<Vec<JobSummary>, CommandError> {
    Ok(jobs.store.lock().unwrap().jobs()?)
}

#[tauri::command(async)]
pub fn job_table(jobs: Jobs<'_>, id: JobId) -> Result<JobTable, CommandError> {
    jobs.table(id)
}

#[tauri::command(async)]
pub fn problem_samples(jobs: Jobs<'_>, id: JobId, problem_idx: usize) -> Result<Vec<SampleRow>, CommandError> {
    jobs.samples(id, problem_idx)
}

#[cfg_attr(test, derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunOn {
    Local,
    Remote,
}

/// Starts or resumes a job on this computer or the remote engine, or attaches to it if it runs
/// already; events arrive on `on_event`.
#[tauri::command]
#[allow(clippy::too_many_arguments)] // a Tauri command takes each state it reads as an argument
pub fn run_job(
    app: tauri::AppHandle,
    jobs: Jobs<'_>,
    engine: State<'_, Arc<EngineState>>,
    settings: State<'_, SettingsState>,
    remote: State<'_, RemoteState>,
    id: JobId,
    on: RunOn,
    on_event: Channel<JobUiEvent>,
) -> Result<(), CommandError> {
    let settings = settings.get();
    let target = match on {
        RunOn::Local => Target::Local { engine: engine.inner().clone(), max_seqs: settings.max_sequences },
        RunOn::Remote => Target::Remote(remote.config(&settings)?.ok_or(CommandError::coded(
            "remote.none",
            "no remote engine is set up (see Settings)",
            &[],
        ))?),
    };
    jobs.run(id, target, NoticeWhenAway { channel: on_event, app, id })
}

/// Forwards a job's events to the window; when the job finishes while the window is in the
/// background (not focused, or minimised), a desktop notification says so, with the counts.
struct NoticeWhenAway {
    channel: Channel<JobUiEvent>,
    app: tauri::AppHandle,
    id: JobId,
}

impl JobSink for NoticeWhenAway {
    fn send(&self, event: &JobUiEvent) -> bool {
        if let JobUiEvent::State(Stopped::State { state: JobState::Done, .. }) = event {
            use tauri::Manager;
            let away = self.app.get_webview_window("main").is_none_or(|w| !w.is_focused().unwrap_or(false));
            if let (true, Ok(table)) = (away, self.app.state::<Arc<JobsState>>().table(self.id)) {
                let language = self.app.state::<SettingsState>().get().language;
                let (title, body) = super::finished_notice(&table.summary.name, &table.counts, language);
                crate::core::desktop_notice::notify_in_background(title, body);
            }
        }
        JobSink::send(&self.channel, event)
    }
}

#[tauri::command]
pub fn pause_job(jobs: Jobs<'_>, id: JobId) {
    jobs.pause(id)
}

#[tauri::command]
pub fn cancel_job(jobs: Jobs<'_>, id: JobId) -> Result<(), CommandError> {
    jobs.cancel(id)
}

#[tauri::command]
pub fn delete_job(jobs: Jobs<'_>, id: JobId) -> Result<(), CommandError> {
    jobs.delete(id)
}

/// The shareable report of a job (see `JobsState::report`); the window renders it.
#[tauri::command(async)]
pub fn job_report(jobs: Jobs<'_>, id: JobId) -> Result<super::JobReport, CommandError> {
    jobs.report(id)
}

#[tauri::command(async)]
pub fn export_job(
    jobs: Jobs<'_>,
    grants: State<'_, FileGrants>,
    id: JobId,
    format: ExportFormat,
    path: String,
) -> Result<(), CommandError> {
    jobs.export(id, format, &grants.check(&path, Access::Write)?)
}
