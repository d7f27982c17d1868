//! The durable job store: SQLite in WAL mode. A job, its problems and every finished sample are
//! written as they happen, so a crash or `kill -9` loses nothing that finished; reopening finds
//! exactly the samples still to run.

use crate::reader::Problem;
use crate::schema::{MovedAside, Schema, SchemaError};
use rusqlite::{params, Connection, OptionalExtension};
use serde::{Deserialize, Serialize};
use std::path::Path;

pub type JobId = i64;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("job store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("job store: {0}")]
    Schema(#[from] SchemaError),
    #[error("job store: {0}")]
    Json(#[from] serde_json::Error),
    #[error("no job {0}")]
    NoJob(JobId),
}

pub type Result<T> = std::result::Result<T, StoreError>;

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JobState {
    Queued,
    Running,
    Paused,
    Cancelled,
    Done,
}

impl JobState {
    fn as_str(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Running => "running",
            JobState::Paused => "paused",
            JobState::Cancelled => "cancelled",
            JobState::Done => "done",
        }
    }
    fn parse(s: &str) -> JobState {
        match s {
            "running" => JobState::Running,
            "paused" => JobState::Paused,
            "cancelled" => JobState::Cancelled,
            "done" => JobState::Done,
            _ => JobState::Queued,
        }
    }
}

/// How a job runs; stored with it so a resumed job runs the same way.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct JobOptions {
    /// Samples per problem (4 for validating keys, 1 for plain answering).
    pub samples: usize,
    pub max_tokens: usize,
    pub thinking_budget: Option<usize>,
    pub temperature: f32,
    pub top_p: f32,
    pub seed: Option<u64>,
    /// Add the "reason step by step, answer in \boxed{}" instruction.
    pub math_instruction: bool,
    /// A sample budget instead of a fixed count: each problem starts with `samples` and draws
    /// more, up to this many, while its verdict is unsure (`samples_wanted`).
    pub max_samples: Option<usize>,
    /// Thinking on or off, for models whose template has the switch (Qwen3); `None` leaves the
    /// model's default. R1 models always think and non-reasoning models never do.
    pub thinking: Option<bool>,
}

impl Default for JobOptions {
    fn default() -> Self {
        let sampling = ponder_engine::SamplingParams::default();
        Self {
            samples: Self::suggested_samples(true),
            max_tokens: ponder_engine::DEFAULT_MAX_TOKENS,
            thinking_budget: None,
            temperature: sampling.temperature,
            top_p: sampling.top_p,
            seed: None,
            math_instruction: true,
            max_samples: None,
            thinking: None,
        }
    }
}

impl JobOptions {
    /// How many samples a problem should have by now, given its key and the answers of its
    /// finished samples (in sample order): the fixed count, or what the budget's rule asks for.
    pub fn wanted(&self, key: Option<&str>, answers: &[Option<String>]) -> usize {
        match self.max_samples {
            Some(max) if max > self.samples => ponder_answers::verdict::samples_wanted(key, answers, self.samples, max),
            _ => self.samples,
        }
    }

    /// Samples per problem to suggest for a file: with an answer key, enough for a majority to
    /// confirm or dispute it; without one, a single answer each.
    pub fn suggested_samples(has_key: bool) -> usize {
        if has_key {
            4
        } else {
            1
        }
    }

    /// The sample budget to suggest for a file: with an answer key, start with two and draw up
    /// to eight while the verdict is unsure (`samples_wanted`); without one, one sample each.
    /// On 40 held-out GSM8K problems with 10 planted wrong keys (1.5B model, 400 tokens), the
    /// budget caught all 10 planted keys, disputed 2 of 30 correct ones, and generated 0.86x
    /// the tokens of 4 fixed samples (which disputed 3): see README, "Validating an answer key".
    pub fn suggested_budget(has_key: bool) -> (usize, Option<usize>) {
        if has_key {
            (2, Some(8))
        } else {
            (1, None)
        }
    }
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SampleRow {
    pub problem_idx: usize,
    pub sample_idx: usize,
    pub answer: String,
    pub thinking: String,
    pub extracted: Option<String>,
    pub finish_reason: String,
    pub prompt_tokens: usize,
    pub thinking_tokens: usize,
    pub answer_tokens: usize,
    pub ttft_ms: u64,
    pub duration_ms: u64,
}

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobSummary {
    pub id: JobId,
    pub name: String,
    pub source: String,
    pub state: JobState,
    pub created_at: i64,
    pub problems: usize,
    pub samples_total: usize,
    pub samples_done: usize,
    pub has_key: bool,
}

pub struct Store {
    conn: Connection,
}

/// The job store's schema, version by version (see [`crate::schema`]).
const SCHEMA: Schema = Schema {
    name: "job store",
    application_id: 0x504f_4e4a, // "PONJ"
    marker_table: "jobs",
    migrations: &[
        // 1: the schema as it was before versions (a no-op on such files).
        "CREATE TABLE IF NOT EXISTS jobs (
           id INTEGER PRIMARY KEY,
           name TEXT NOT NULL,
           source TEXT NOT NULL,
           created_at INTEGER NOT NULL,
           state TEXT NOT NULL,
           options TEXT NOT NULL
         );
         CREATE TABLE IF NOT EXISTS problems (
           job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
           idx INTEGER NOT NULL,
           pid TEXT NOT NULL,
           question TEXT NOT NULL,
           key TEXT,
           extra TEXT NOT NULL,
           line INTEGER NOT NULL,
           PRIMARY KEY (job_id, idx)
         );
         CREATE TABLE IF NOT EXISTS samples (
           job_id INTEGER NOT NULL,
           problem_idx INTEGER NOT NULL,
           sample_idx INTEGER NOT NULL,
           answer TEXT NOT NULL,
           thinking TEXT NOT NULL,
           extracted TEXT,
           finish_reason TEXT NOT NULL,
           prompt_tokens INTEGER NOT NULL,
           thinking_tokens INTEGER NOT NULL,
           answer_tokens INTEGER NOT NULL,
           ttft_ms INTEGER NOT NULL,
           duration_ms INTEGER NOT NULL,
           created_at INTEGER NOT NULL,
           PRIMARY KEY (job_id, problem_idx, sample_idx),
           FOREIGN KEY (job_id, problem_idx) REFERENCES problems(job_id, idx) ON DELETE CASCADE
         );",
    ],
};

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}

impl Store {
    /// Opens (or creates) the store and brings its schema up to date; a file that is not a job
    /// store this version can use is an error, left untouched.
    pub fn open(path: &Path) -> Result<Self> {
        Self::configure(SCHEMA.open(path)?)
    }

    /// [`Store::open`] for an app's launch: a file it cannot use is moved aside (and said so)
    /// and a fresh store started.
    pub fn open_or_move_aside(path: &Path) -> Result<(Self, Option<MovedAside>)> {
        let (conn, moved) = SCHEMA.open_or_move_aside(path)?;
        Ok((Self::configure(conn)?, moved))
    }

    fn configure(conn: Connection) -> Result<Self> {
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.execute_batch("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")?;
        Ok(Self { conn })
    }

    pub fn create_job(&mut self, name: &str, source: &str, options: &JobOptions, problems: &[Problem]) -> Result<JobId> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT INTO jobs (name, source, created_at, state, options) VALUES (?1, ?2, ?3, 'queued', ?4)",
            params![name, source, now(), serde_json::to_string(options)?],
        )?;
        let id = tx.last_insert_rowid();
        {
            let mut st = tx.prepare(
                "INSERT INTO problems (job_id, idx, pid, question, key, extra, line) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for (i, p) in problems.iter().enumerate() {
                st.execute(params![id, i as i64, p.id, p.question, p.key, serde_json::to_string(&p.extra)?, p.line as i64])?;
            }
        }
        tx.commit()?;
        Ok(id)
    }

    pub fn options(&self, job: JobId) -> Result<JobOptions> {
        let s: Option<String> = self.conn.query_row("SELECT options FROM jobs WHERE id = ?1", [job], |r| r.get(0)).optional()?;
        Ok(serde_json::from_str(&s.ok_or(StoreError::NoJob(job))?)?)
    }

    pub fn problems(&self, job: JobId) -> Result<Vec<Problem>> {
        let mut st = self.conn.prepare("SELECT pid, question, key, extra, line FROM problems WHERE job_id = ?1 ORDER BY idx")?;
        let rows = st.query_map([job], |r| {
            let extra: String = r.get(3)?;
            Ok(Problem {
                id: r.get(0)?,
                question: r.get(1)?,
                key: r.get(2)?,
                extra: serde_json::from_str(&extra).unwrap_or_default(),
                line: r.get::<_, i64>(4)? as usize,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn samples(&self, job: JobId) -> Result<Vec<SampleRow>> {
        self.sample_rows(job, "answer, thinking", "")
    }

    /// One problem's samples, in full.
    pub fn problem_samples(&self, job: JobId, problem_idx: usize) -> Result<Vec<SampleRow>> {
        self.sample_rows(job, "answer, thinking", &format!("AND problem_idx = {problem_idx}"))
    }

    /// Every sample without its text (answer and thinking left empty): what a live table needs,
    /// without reading megabytes of reasoning.
    pub fn sample_outcomes(&self, job: JobId) -> Result<Vec<SampleRow>> {
        self.sample_rows(job, "'', ''", "")
    }

    fn sample_rows(&self, job: JobId, text_columns: &str, filter: &str) -> Result<Vec<SampleRow>> {
        let mut st = self.conn.prepare(&format!(
            "SELECT problem_idx, sample_idx, {text_columns}, extracted, finish_reason, prompt_tokens, thinking_tokens,
                    answer_tokens, ttft_ms, duration_ms
             FROM samples WHERE job_id = ?1 {filter} ORDER BY problem_idx, sample_idx",
        ))?;
        let rows = st.query_map([job], |r| {
            Ok(SampleRow {
                problem_idx: r.get::<_, i64>(0)? as usize,
                sample_idx: r.get::<_, i64>(1)? as usize,
                answer: r.get(2)?,
                thinking: r.get(3)?,
                extracted: r.get(4)?,
                finish_reason: r.get(5)?,
                prompt_tokens: r.get::<_, i64>(6)? as usize,
                thinking_tokens: r.get::<_, i64>(7)? as usize,
                answer_tokens: r.get::<_, i64>(8)? as usize,
                ttft_ms: r.get::<_, i64>(9)? as u64,
                duration_ms: r.get::<_, i64>(10)? as u64,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Samples still to run, as (problem index, sample index), in problem order.
    /// The samples still to run, as (problem, sample) pairs: those below each problem's wanted
    /// count ([`JobOptions::wanted`]) that are not recorded yet.
    pub fn pending(&self, job: JobId) -> Result<Vec<(usize, usize)>> {
        self.pending_of(job, &self.options(job)?, None)
    }

    /// [`Store::pending`] for one problem: what a problem with a sample budget wants next.
    pub fn pending_for(&self, job: JobId, problem: usize) -> Result<Vec<(usize, usize)>> {
        self.pending_of(job, &self.options(job)?, Some(problem))
    }

    fn pending_of(&self, job: JobId, opts: &JobOptions, only: Option<usize>) -> Result<Vec<(usize, usize)>> {
        // `-1` selects every problem.
        let only = only.map_or(-1, |p| p as i64);
        let mut st =
            self.conn.prepare("SELECT idx, key FROM problems WHERE job_id = ?1 AND (?2 < 0 OR idx = ?2) ORDER BY idx")?;
        let keys: Vec<(usize, Option<String>)> = st
            .query_map(params![job, only], |r| Ok((r.get::<_, i64>(0)? as usize, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let mut done: std::collections::HashMap<usize, Vec<(usize, Option<String>)>> = std::collections::HashMap::new();
        let mut st = self.conn.prepare(
            "SELECT problem_idx, sample_idx, extracted FROM samples WHERE job_id = ?1 AND (?2 < 0 OR problem_idx = ?2)
             ORDER BY problem_idx, sample_idx",
        )?;
        let rows =
            st.query_map(params![job, only], |r| Ok((r.get::<_, i64>(0)? as usize, r.get::<_, i64>(1)? as usize, r.get(2)?)))?;
        for row in rows {
            let (p, s, extracted) = row?;
            done.entry(p).or_default().push((s, extracted));
        }
        let mut pending = Vec::new();
        let none = Vec::new();
        for (p, key) in &keys {
            let (p, mine) = (*p, done.get(p).unwrap_or(&none));
            let answers: Vec<Option<String>> = mine.iter().map(|(_, a)| a.clone()).collect();
            let wanted = opts.wanted(key.as_deref(), &answers);
            pending.extend((0..wanted).filter(|s| !mine.iter().any(|(d, _)| d == s)).map(|s| (p, s)));
        }
        Ok(pending)
    }

    /// Records a finished sample. A sample already recorded is left as it was (`false`): a
    /// finished sample is never repeated or overwritten.
    pub fn insert_sample(&self, job: JobId, s: &SampleRow) -> Result<bool> {
        let n = self.conn.execute(
            "INSERT OR IGNORE INTO samples (job_id, problem_idx, sample_idx, answer, thinking, extracted, finish_reason,
               prompt_tokens, thinking_tokens, answer_tokens, ttft_ms, duration_ms, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            params![
                job,
                s.problem_idx as i64,
                s.sample_idx as i64,
                s.answer,
                s.thinking,
                s.extracted,
                s.finish_reason,
                s.prompt_tokens as i64,
                s.thinking_tokens as i64,
                s.answer_tokens as i64,
                s.ttft_ms as i64,
                s.duration_ms as i64,
                now()
            ],
        )?;
        Ok(n == 1)
    }

    pub fn set_state(&self, job: JobId, state: JobState) -> Result<()> {
        self.conn.execute("UPDATE jobs SET state = ?2 WHERE id = ?1", params![job, state.as_str()])?;
        Ok(())
    }

    pub fn jobs(&self) -> Result<Vec<JobSummary>> {
        self.summaries(None)
    }

    pub fn job(&self, id: JobId) -> Result<JobSummary> {
        self.summaries(Some(id))?.pop().ok_or(StoreError::NoJob(id))
    }

    /// Every job's summary, newest first, or only the one asked for.
    fn summaries(&self, only: Option<JobId>) -> Result<Vec<JobSummary>> {
        let mut st = self.conn.prepare(
            "SELECT j.id, j.name, j.source, j.state, j.created_at, j.options,
                    (SELECT COUNT(*) FROM problems p WHERE p.job_id = j.id),
                    (SELECT COUNT(*) FROM samples s WHERE s.job_id = j.id),
                    (SELECT COUNT(*) FROM problems p WHERE p.job_id = j.id AND p.key IS NOT NULL)
             FROM jobs j WHERE (?1 < 0 OR j.id = ?1) ORDER BY j.id DESC",
        )?;
        // `-1` selects every job.
        let rows = st.query_map([only.unwrap_or(-1)], |r| {
            let opts: JobOptions = serde_json::from_str(&r.get::<_, String>(5)?).unwrap_or_default();
            let problems = r.get::<_, i64>(6)? as usize;
            let summary = JobSummary {
                id: r.get(0)?,
                name: r.get(1)?,
                source: r.get(2)?,
                state: JobState::parse(&r.get::<_, String>(3)?),
                created_at: r.get(4)?,
                problems,
                samples_total: problems * opts.samples,
                samples_done: r.get::<_, i64>(7)? as usize,
                has_key: r.get::<_, i64>(8)? > 0,
            };
            Ok((summary, opts))
        })?;
        let rows: Vec<(JobSummary, JobOptions)> = rows.collect::<rusqlite::Result<_>>()?;
        let mut jobs = Vec::with_capacity(rows.len());
        for (mut j, opts) in rows {
            // A job with a sample budget has as many samples as its problems want so far.
            if opts.max_samples.is_some() {
                j.samples_total = j.samples_done + self.pending_of(j.id, &opts, None)?.len();
            }
            jobs.push(j);
        }
        Ok(jobs)
    }

    pub fn delete_job(&self, id: JobId) -> Result<()> {
        self.conn.execute("DELETE FROM samples WHERE job_id = ?1", [id])?;
        self.conn.execute("DELETE FROM jobs WHERE id = ?1", [id])?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job store as Ponder wrote it before schema versions (user_version 0), with a job in it,
    /// opens at the current version with its job and samples intact.
    #[test]
    fn a_store_from_before_versions_is_migrated_with_its_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jobs.sqlite");
        let old = Connection::open(&path).unwrap();
        old.execute_batch(SCHEMA.migrations[0]).unwrap();
        old.execute_batch(
            "INSERT INTO jobs VALUES (1, 'set', 'set.csv', 0, 'paused', '{\"samples\":2}');
             INSERT INTO problems VALUES (1, 0, 'p1', 'What is 2 + 2?', '4', '[]', 2);
             INSERT INTO samples VALUES (1, 0, 0, 'It is 4.', '', '4', 'stop', 5, 0, 3, 10, 20, 0);",
        )
        .unwrap();
        assert_eq!(old.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0)).unwrap(), 0);
        drop(old);

        let store = Store::open(&path).unwrap();
        let version: i64 = store.conn.pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
        assert_eq!(version, SCHEMA.migrations.len() as i64);
        let jobs = store.jobs().unwrap();
        assert_eq!((jobs.len(), jobs[0].samples_done, jobs[0].state), (1, 1, JobState::Paused));
        assert_eq!(store.samples(1).unwrap()[0].extracted.as_deref(), Some("4"));
        assert_eq!(store.pending(1).unwrap(), vec![(0, 1)]);
    }
}
