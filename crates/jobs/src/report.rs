//! Reports of a job: one row per problem with its samples and verdict, as JSONL, CSV and a
//! Markdown summary (counts by verdict; disputed and unsure problems first).

use crate::reader::Problem;
use crate::store::{JobId, JobOptions, SampleRow, Store, StoreError};
use ponder_answers::equivalence::{check, Check};
use ponder_answers::verdict::{judge, Judgement, UnsureReason, Verdict};
use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct SampleOut {
    pub answer: String,
    pub extracted: Option<String>,
    pub thinking: String,
    pub finish_reason: String,
    pub tokens: usize,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Row {
    pub id: String,
    pub question: String,
    pub key: Option<String>,
    pub majority: Option<String>,
    pub agreement: f64,
    pub verdict: Verdict,
    /// Why the verdict is unsure.
    pub reason: Option<UnsureReason>,
    pub answers: Vec<Option<String>>,
    pub samples: Vec<SampleOut>,
    #[serde(skip)]
    pub extra: Vec<(String, String)>,
}

/// The one projection from samples to what they say about each problem: its finished samples
/// in sample order, their extracted answers, and the judgement of those against the key. A
/// problem with no samples yet has no majority, an agreement of 0 and the verdict `Unsure`.
struct Projected<'s> {
    samples: Vec<&'s SampleRow>,
    answers: Vec<Option<String>>,
    judgement: Judgement,
}

fn project<'s>(problems: &[Problem], samples: &'s [SampleRow]) -> Vec<Projected<'s>> {
    let mut by_problem: Vec<Vec<&SampleRow>> = vec![Vec::new(); problems.len()];
    for s in samples {
        if let Some(v) = by_problem.get_mut(s.problem_idx) {
            v.push(s);
        }
    }
    problems
        .iter()
        .zip(by_problem)
        .map(|(p, mut mine)| {
            mine.sort_by_key(|s| s.sample_idx);
            let answers: Vec<Option<String>> = mine.iter().map(|s| s.extracted.clone()).collect();
            let judgement = judge(p.key.as_deref(), &answers);
            Projected { samples: mine, answers, judgement }
        })
        .collect()
}

/// A sample that reached the token limit before it gave an answer: it is no vote, and it says
/// the job's token limit is too small for this problem rather than that more samples are needed.
pub fn is_cut_off(finish_reason: &str, extracted: Option<&str>) -> bool {
    finish_reason == "length" && extracted.is_none()
}

/// How a sample's finish reason begins when the backend turned its problem down; the reason
/// follows.
pub const REFUSED_PREFIX: &str = "refused: ";

/// Why the backend turned the problem down, when it did (a sample's finish reason).
pub fn refusal(finish_reason: &str) -> Option<&str> {
    finish_reason.strip_prefix(REFUSED_PREFIX)
}

/// When a job should tell its user to raise the token limit: at least one finished sample in
/// ten was cut off before it answered.
pub fn many_cut_off(cut_off: usize, samples: usize) -> bool {
    cut_off > 0 && cut_off * 10 >= samples
}

/// The report's note on samples cut off at the token limit, when there are many.
pub fn cut_off_note(rows: &[Row]) -> Option<String> {
    let samples = rows.iter().map(|r| r.samples.len()).sum();
    let cut_off = rows.iter().flat_map(|r| &r.samples).filter(|s| is_cut_off(&s.finish_reason, s.extracted.as_deref())).count();
    many_cut_off(cut_off, samples).then(|| {
        format!(
            "{cut_off} of {samples} samples reached the token limit before they answered. \
             A larger token limit would settle more of the unsure problems than more samples."
        )
    })
}

/// Where a verdict goes in a report: what needs a teacher's eye first (disputed keys, then
/// unsure problems), then problems still running, then what is settled.
pub fn report_rank(verdict: Option<Verdict>) -> u8 {
    match verdict {
        Some(Verdict::Disputed) => 0,
        Some(Verdict::Unsure) => 1,
        None => 2,
        Some(Verdict::Confirmed) => 3,
        Some(Verdict::Answered) => 4,
    }
}

pub fn rows_of(problems: &[Problem], samples: &[SampleRow]) -> Vec<Row> {
    problems
        .iter()
        .zip(project(problems, samples))
        .map(|(p, Projected { samples: mine, answers, judgement: j })| Row {
            id: p.id.clone(),
            question: p.question.clone(),
            key: p.key.clone(),
            majority: j.majority,
            agreement: j.agreement,
            verdict: j.verdict,
            reason: j.reason,
            answers,
            samples: mine
                .iter()
                .map(|s| SampleOut {
                    answer: s.answer.clone(),
                    extracted: s.extracted.clone(),
                    thinking: s.thinking.clone(),
                    finish_reason: s.finish_reason.clone(),
                    tokens: s.thinking_tokens + s.answer_tokens,
                })
                .collect(),
            extra: p.extra.clone(),
        })
        .collect()
}

pub fn rows(store: &Store, job: JobId) -> Result<Vec<Row>, StoreError> {
    Ok(rows_of(&store.problems(job)?, &store.samples(job)?))
}

pub fn to_jsonl(rows: &[Row]) -> String {
    let mut out = String::new();
    for r in rows {
        let mut v = serde_json::to_value(r).expect("rows serialise");
        if let serde_json::Value::Object(m) = &mut v {
            for (k, val) in &r.extra {
                m.entry(k.clone()).or_insert_with(|| serde_json::Value::String(val.clone()));
            }
        }
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out
}

pub fn to_csv(rows: &[Row]) -> String {
    // Every extra column any row has, in the order they first appear (rows carry only their
    // filled cells).
    let mut seen = std::collections::HashSet::new();
    let extra: Vec<String> =
        rows.iter().flat_map(|r| r.extra.iter().map(|(k, _)| k)).filter(|k| seen.insert(k.as_str())).cloned().collect();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["id", "question", "key", "majority", "agreement", "verdict", "answers"];
    header.extend(extra.iter().map(String::as_str));
    w.write_record(header.iter().map(|c| not_a_formula(c).into_owned())).expect("in-memory write");
    for r in rows {
        let answers = r.answers.iter().map(|a| a.clone().unwrap_or_else(|| "—".into())).collect::<Vec<_>>().join(" | ");
        let mut rec = vec![
            r.id.clone(),
            r.question.clone(),
            r.key.clone().unwrap_or_default(),
            r.majority.clone().unwrap_or_default(),
            format!("{:.2}", r.agreement),
            r.verdict.as_str().to_string(),
            answers,
        ];
        for name in &extra {
            rec.push(r.extra.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_default());
        }
        w.write_record(rec.iter().map(|cell| not_a_formula(cell).into_owned())).expect("in-memory write");
    }
    String::from_utf8(w.into_inner().expect("in-memory flush")).expect("csv is UTF-8")
}

/// A cell a spreadsheet will not run: text that starts like a formula (`=`, `@`, a tab or a
/// carriage return, or `+` / `-` before anything but a plain number) gets a leading `'`, which
/// spreadsheets read as "this is text". `-4` stays `-4`; `-2+3+cmd|' /C calc'!A0` does not.
pub fn not_a_formula(cell: &str) -> std::borrow::Cow<'_, str> {
    let risky = match cell.chars().next() {
        Some('=' | '@' | '\t' | '\r') => true,
        Some('+' | '-') => cell[1..].trim().parse::<f64>().is_err(),
        _ => false,
    };
    if risky {
        format!("'{cell}").into()
    } else {
        cell.into()
    }
}

/// The forms a job's results are written in.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ExportFormat {
    /// One row per problem, for a spreadsheet.
    Csv,
    /// One JSON object per problem, every sample included.
    Jsonl,
    /// The validation report: counts by verdict, what needs a look first.
    Markdown,
}

impl ExportFormat {
    pub fn extension(self) -> &'static str {
        match self {
            ExportFormat::Csv => "csv",
            ExportFormat::Jsonl => "jsonl",
            ExportFormat::Markdown => "md",
        }
    }

    /// The format a file name asks for: .csv, .md, and JSONL for anything else.
    pub fn of_path(path: &Path) -> Self {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("csv") => ExportFormat::Csv,
            Some("md") | Some("markdown") => ExportFormat::Markdown,
            _ => ExportFormat::Jsonl,
        }
    }

    /// The file name to suggest for the results of a question file named `source`:
    /// `algebra.csv` gives `algebra.results.csv`, `algebra.results.jsonl` and `algebra.report.md`.
    pub fn file_name(self, source: &str) -> String {
        let kind = if self == ExportFormat::Markdown { "report" } else { "results" };
        export_name(source, kind, self.extension())
    }

    /// The rows of the job read from the question file `source`, in this format.
    pub fn render(self, source: &str, rows: &[Row]) -> String {
        match self {
            ExportFormat::Csv => to_csv(rows),
            ExportFormat::Jsonl => to_jsonl(rows),
            ExportFormat::Markdown => to_markdown(&title(source), rows),
        }
    }
}

/// `algebra.csv`, `report`, `html` gives `algebra.report.html`.
pub fn export_name(source: &str, kind: &str, extension: &str) -> String {
    let stem = Path::new(source).file_stem().map_or_else(|| source.to_string(), |s| s.to_string_lossy().into_owned());
    format!("{stem}.{kind}.{extension}")
}

/// A validation report's title, for the question file `source`.
pub fn title(source: &str) -> String {
    format!("Validation of {source}")
}

fn one_line(s: &str, max: usize) -> String {
    let flat: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        format!("{}…", flat.chars().take(max).collect::<String>())
    } else {
        flat
    }
}

pub fn to_markdown(title: &str, rows: &[Row]) -> String {
    let count = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
    let mut md = format!("# {title}\n\n{} problems\n\n", rows.len());
    if let Some(note) = cut_off_note(rows) {
        md.push_str(&format!("{note}\n\n"));
    }
    md.push_str("| verdict | problems |\n|---|---|\n");
    for v in [Verdict::Confirmed, Verdict::Disputed, Verdict::Unsure, Verdict::Answered] {
        let n = count(v);
        if n > 0 {
            md.push_str(&format!("| {} | {n} |\n", v.as_str()));
        }
    }
    let mut sorted: Vec<&Row> = rows.iter().collect();
    sorted.sort_by_key(|r| report_rank(Some(r.verdict)));
    md.push_str("\n| id | verdict | key | majority | agreement | samples | question |\n|---|---|---|---|---|---|---|\n");
    for r in sorted {
        let refused = r.samples.iter().find_map(|s| refusal(&s.finish_reason));
        let verdict = match (refused, r.reason) {
            (Some(why), _) => format!("{} (refused: {})", r.verdict.as_str(), one_line(why, 120).replace('|', "\\|")),
            (None, Some(why)) => format!("{} ({})", r.verdict.as_str(), why.describe()),
            (None, None) => r.verdict.as_str().to_string(),
        };
        md.push_str(&format!(
            "| {} | {} | {} | {} | {:.0}% | {} | {} |\n",
            r.id,
            verdict,
            r.key.as_deref().map(|k| one_line(k, 40)).unwrap_or_default().replace('|', "\\|"),
            r.majority.as_deref().map(|k| one_line(k, 40)).unwrap_or_default().replace('|', "\\|"),
            r.agreement * 100.0,
            r.samples.len(),
            one_line(&r.question, 80).replace('|', "\\|"),
        ));
    }
    md
}

/// Where one problem of a job stands, for a live table: its answers so far and, once all its
/// samples are in, the verdict.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ProblemStatus {
    pub idx: usize,
    pub id: String,
    pub question: String,
    pub key: Option<String>,
    pub line: usize,
    pub samples_done: usize,
    pub samples_total: usize,
    /// Extracted answers of the finished samples, in sample order.
    pub answers: Vec<Option<String>>,
    pub majority: Option<String>,
    pub agreement: f64,
    /// `None` until every sample of the problem is done.
    pub verdict: Option<Verdict>,
    /// Why a finished problem is unsure.
    pub reason: Option<UnsureReason>,
    /// Finished samples that reached the token limit before they gave an answer.
    pub cut_off: usize,
    /// For a disputed or unsure key: how the key and the most common answer were read, and the
    /// rule that found them different, so a teacher sees why.
    pub check: Option<Check>,
}

/// Problems by verdict, for the report's summary and chart.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct VerdictCounts {
    pub confirmed: usize,
    pub disputed: usize,
    pub unsure: usize,
    pub answered: usize,
    /// Problems with samples still to run.
    pub pending: usize,
    /// Finished samples, and those of them cut off at the token limit before they answered.
    pub samples_done: usize,
    pub cut_off: usize,
    /// Enough were cut off that the user should raise the token limit (`many_cut_off`).
    pub many_cut_off: bool,
}

pub fn statuses(problems: &[Problem], samples: &[SampleRow], opts: &JobOptions) -> Vec<ProblemStatus> {
    problems
        .iter()
        .zip(project(problems, samples))
        .enumerate()
        .map(|(idx, (p, Projected { samples: mine, answers, judgement: j }))| {
            let wanted = opts.wanted(p.key.as_deref(), &answers);
            let complete = mine.len() >= wanted;
            let settled = complete.then_some(j.verdict);
            let check = match (settled, &p.key, j.classes.first()) {
                (Some(Verdict::Disputed | Verdict::Unsure), Some(key), Some(top)) => Some(check(key, &top.answer)),
                _ => None,
            };
            ProblemStatus {
                idx,
                id: p.id.clone(),
                question: p.question.clone(),
                key: p.key.clone(),
                line: p.line,
                samples_done: mine.len(),
                samples_total: wanted,
                majority: j.majority,
                agreement: j.agreement,
                verdict: settled,
                reason: if complete { j.reason } else { None },
                check,
                cut_off: mine.iter().filter(|s| is_cut_off(&s.finish_reason, s.extracted.as_deref())).count(),
                answers,
            }
        })
        .collect()
}

/// The sample a report shows for a problem: the first that gave the majority answer (the answer
/// the verdict is about), else the first finished one.
pub fn shown_sample<'a>(samples: &'a [SampleRow], majority: Option<&str>) -> Option<&'a SampleRow> {
    samples.iter().find(|s| majority.is_some() && s.extracted.as_deref() == majority).or(samples.first())
}

/// Whether a report puts a problem among those that need a teacher's look (with a sample shown).
pub fn needs_look(verdict: Option<Verdict>) -> bool {
    matches!(verdict, Some(Verdict::Disputed | Verdict::Unsure))
}

/// The problems' indices in report order (ties keep the file's order).
pub fn report_order(statuses: &[ProblemStatus]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..statuses.len()).collect();
    order.sort_by_key(|&i| report_rank(statuses[i].verdict));
    order
}

pub fn counts(statuses: &[ProblemStatus]) -> VerdictCounts {
    let mut c = VerdictCounts::default();
    for s in statuses {
        match s.verdict {
            Some(Verdict::Confirmed) => c.confirmed += 1,
            Some(Verdict::Disputed) => c.disputed += 1,
            Some(Verdict::Unsure) => c.unsure += 1,
            Some(Verdict::Answered) => c.answered += 1,
            None => c.pending += 1,
        }
        c.samples_done += s.samples_done;
        c.cut_off += s.cut_off;
    }
    c.many_cut_off = many_cut_off(c.cut_off, c.samples_done);
    c
}

#[cfg(test)]
mod status_tests {
    use super::*;

    #[test]
    fn csv_cells_that_start_like_formulas_are_text() {
        for (cell, shown) in [
            ("=1+1", "'=1+1"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("-2+3+cmd|' /C calc'!A0", "'-2+3+cmd|' /C calc'!A0"),
            ("+A1", "'+A1"),
            ("\tx", "'\tx"),
            ("-4", "-4"),
            ("+3.5", "+3.5"),
            ("x = -4", "x = -4"),
            ("", ""),
        ] {
            assert_eq!(not_a_formula(cell), shown, "{cell:?}");
        }
    }

    #[test]
    fn export_names_follow_the_question_file() {
        let names: Vec<String> =
            [ExportFormat::Csv, ExportFormat::Jsonl, ExportFormat::Markdown].map(|f| f.file_name("algebra.csv")).into();
        assert_eq!(names, ["algebra.results.csv", "algebra.results.jsonl", "algebra.report.md"]);
        for f in [ExportFormat::Csv, ExportFormat::Jsonl, ExportFormat::Markdown] {
            assert_eq!(ExportFormat::of_path(Path::new(&f.file_name("x.txt"))), f);
        }
    }

    #[test]
    fn reports_put_what_needs_a_look_first_and_keep_the_file_order_within_a_verdict() {
        let problems: Vec<Problem> = (0..5).map(|i| problem(&i.to_string(), Some("4"))).collect();
        let samples = [sample(0, 0, "4"), sample(1, 0, "5"), sample(3, 0, "4"), sample(4, 0, "6")];
        let st = statuses(&problems, &samples, &fixed(1));
        // 0 confirmed, 1 disputed, 2 still running, 3 confirmed, 4 disputed.
        assert_eq!(report_order(&st), vec![1, 4, 2, 0, 3]);
        let md = to_markdown("t", &rows_of(&problems, &samples));
        let ids: Vec<&str> = md.lines().skip_while(|l| !l.starts_with("| id ")).skip(2).map(|l| &l[2..3]).collect();
        // In the finished report a problem without samples is unsure.
        assert_eq!(ids, ["1", "4", "2", "0", "3"]);
    }

    #[test]
    fn an_unsure_or_disputed_key_says_why() {
        let problems = [problem("split", Some("5")), problem("units", Some("35 cm"))];
        let samples = [
            sample(0, 0, "7"),
            sample(0, 1, "7"),
            sample(0, 2, "5"),
            sample(0, 3, "6"),
            sample(1, 0, "35 mm"),
            sample(1, 1, "35 mm"),
            sample(1, 2, "35 mm"),
            sample(1, 3, "35 mm"),
        ];
        let st = statuses(&problems, &samples, &fixed(4));
        assert_eq!((st[0].verdict, st[0].reason), (Some(Verdict::Unsure), Some(UnsureReason::KeyReproduced)));
        let why = st[1].check.as_ref().expect("a disputed key is explained");
        assert_eq!((st[1].verdict, why.rule), (Some(Verdict::Disputed), ponder_answers::equivalence::Rule::Units));
        let md = to_markdown("t", &rows_of(&problems, &samples));
        assert!(md.contains("| split | unsure (most samples disagree with the key, but some reproduced it) |"), "{md}");
    }

    fn fixed(samples: usize) -> JobOptions {
        JobOptions { samples, ..JobOptions::default() }
    }

    #[test]
    fn with_a_budget_each_problem_shows_the_samples_it_used() {
        let problems = [problem("agree", Some("4")), problem("split", Some("4"))];
        let samples = [sample(0, 0, "4"), sample(0, 1, "4"), sample(1, 0, "4"), sample(1, 1, "5")];
        let st = statuses(&problems, &samples, &JobOptions { samples: 2, max_samples: Some(8), ..JobOptions::default() });
        assert_eq!((st[0].samples_done, st[0].samples_total, st[0].verdict), (2, 2, Some(Verdict::Confirmed)));
        assert_eq!((st[1].samples_done, st[1].samples_total, st[1].verdict), (2, 4, None));
    }

    fn problem(id: &str, key: Option<&str>) -> Problem {
        Problem { id: id.into(), question: format!("q{id}"), key: key.map(Into::into), extra: vec![], line: 2 }
    }

    #[test]
    fn the_report_shows_a_sample_that_gave_the_majority_answer() {
        let samples = [sample(0, 0, "7"), sample(0, 1, "8"), sample(0, 2, "8")];
        assert_eq!(shown_sample(&samples, Some("8")).unwrap().sample_idx, 1);
        assert_eq!(shown_sample(&samples, None).unwrap().sample_idx, 0);
        assert_eq!(shown_sample(&samples, Some("9")).unwrap().sample_idx, 0);
        assert!(shown_sample(&[], Some("8")).is_none());
        assert!(needs_look(Some(Verdict::Disputed)) && needs_look(Some(Verdict::Unsure)));
        assert!(!needs_look(Some(Verdict::Confirmed)) && !needs_look(None));
    }

    fn sample(p: usize, s: usize, extracted: &str) -> SampleRow {
        SampleRow {
            problem_idx: p,
            sample_idx: s,
            answer: String::new(),
            thinking: String::new(),
            extracted: Some(extracted.into()),
            finish_reason: "stop".into(),
            prompt_tokens: 0,
            thinking_tokens: 0,
            answer_tokens: 0,
            ttft_ms: 0,
            duration_ms: 0,
        }
    }

    #[test]
    fn a_problem_gets_its_verdict_only_when_all_samples_are_in() {
        let problems = [problem("1", Some("4")), problem("2", Some("10")), problem("3", None)];
        let samples = [sample(0, 1, "4"), sample(0, 0, "4.0"), sample(1, 0, "12"), sample(1, 1, "12"), sample(2, 0, "7")];
        let st = statuses(&problems, &samples, &fixed(2));
        assert_eq!(st[0].answers, vec![Some("4.0".to_string()), Some("4".to_string())]);
        assert_eq!((st[0].verdict, st[0].agreement), (Some(Verdict::Confirmed), 1.0));
        assert_eq!((st[1].verdict, st[1].majority.as_deref()), (Some(Verdict::Disputed), Some("12")));
        assert_eq!((st[2].verdict, st[2].samples_done), (None, 1));
        let c = counts(&st);
        assert_eq!((c.confirmed, c.disputed, c.unsure, c.answered, c.pending), (1, 1, 0, 0, 1));
        assert_eq!((c.samples_done, c.cut_off, c.many_cut_off), (5, 0, false));
    }

    #[test]
    fn samples_cut_off_before_they_answered_are_counted_and_noted() {
        let problems = [problem("long", Some("4")), problem("short", Some("4"))];
        let cut = |p, s| SampleRow { extracted: None, finish_reason: "length".into(), ..sample(p, s, "") };
        // A sample that reached the limit but had already answered is not cut off.
        let late = SampleRow { finish_reason: "length".into(), ..sample(1, 1, "4") };
        let samples = [cut(0, 0), cut(0, 1), sample(1, 0, "4"), late];
        let st = statuses(&problems, &samples, &fixed(2));
        assert_eq!((st[0].cut_off, st[1].cut_off), (2, 0));
        let c = counts(&st);
        assert_eq!((c.samples_done, c.cut_off, c.many_cut_off), (4, 2, true));
        let md = to_markdown("t", &rows_of(&problems, &samples));
        assert!(md.contains("2 of 4 samples reached the token limit before they answered."), "{md}");
        assert!(!to_markdown("t", &rows_of(&problems[1..], &[sample(0, 0, "4")])).contains("token limit"));
        assert!(!many_cut_off(1, 11) && many_cut_off(1, 10) && !many_cut_off(0, 0));
    }
}
