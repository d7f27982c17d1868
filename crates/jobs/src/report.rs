//! Reports of a job: one row per problem with its samples and verdict, as JSONL, CSV and a
//! Markdown summary (counts by verdict; disputed and unsure problems first).

use crate::reader::Problem;
use crate::store::{JobId, SampleRow, Store, StoreError};
use crate::verdict::{judge, Verdict};
use serde::Serialize;

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
    pub answers: Vec<Option<String>>,
    pub samples: Vec<SampleOut>,
    #[serde(skip)]
    pub extra: Vec<(String, String)>,
}

pub fn rows_of(problems: &[Problem], samples: &[SampleRow]) -> Vec<Row> {
    problems
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mine: Vec<&SampleRow> = samples.iter().filter(|s| s.problem_idx == i).collect();
            let answers: Vec<Option<String>> = mine.iter().map(|s| s.extracted.clone()).collect();
            let j = judge(p.key.as_deref(), &answers);
            Row {
                id: p.id.clone(),
                question: p.question.clone(),
                key: p.key.clone(),
                majority: j.majority,
                agreement: j.agreement,
                verdict: if mine.is_empty() { Verdict::Unsure } else { j.verdict },
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
            }
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
    let extra: Vec<String> = rows.first().map(|r| r.extra.iter().map(|(k, _)| k.clone()).collect()).unwrap_or_default();
    let mut w = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["id", "question", "key", "majority", "agreement", "verdict", "answers"];
    header.extend(extra.iter().map(String::as_str));
    w.write_record(&header).expect("in-memory write");
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
        w.write_record(&rec).expect("in-memory write");
    }
    String::from_utf8(w.into_inner().expect("in-memory flush")).expect("csv is UTF-8")
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
    let mut md = format!("# {title}\n\n{} problems\n\n| verdict | problems |\n|---|---|\n", rows.len());
    for v in [Verdict::Confirmed, Verdict::Disputed, Verdict::Unsure, Verdict::Answered] {
        let n = count(v);
        if n > 0 {
            md.push_str(&format!("| {} | {n} |\n", v.as_str()));
        }
    }
    let order = |v: Verdict| match v {
        Verdict::Disputed => 0,
        Verdict::Unsure => 1,
        Verdict::Confirmed => 2,
        Verdict::Answered => 3,
    };
    let mut sorted: Vec<&Row> = rows.iter().collect();
    sorted.sort_by_key(|r| order(r.verdict));
    md.push_str("\n| id | verdict | key | majority | agreement | question |\n|---|---|---|---|---|---|\n");
    for r in sorted {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {:.0}% | {} |\n",
            r.id,
            r.verdict.as_str(),
            r.key.as_deref().map(|k| one_line(k, 40)).unwrap_or_default().replace('|', "\\|"),
            r.majority.as_deref().map(|k| one_line(k, 40)).unwrap_or_default().replace('|', "\\|"),
            r.agreement * 100.0,
            one_line(&r.question, 80).replace('|', "\\|"),
        ));
    }
    md
}

/// Where one problem of a job stands, for a live table: its answers so far and, once all its
/// samples are in, the verdict.
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
}

/// Problems by verdict, for the report's summary and chart.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct VerdictCounts {
    pub confirmed: usize,
    pub disputed: usize,
    pub unsure: usize,
    pub answered: usize,
    /// Problems with samples still to run.
    pub pending: usize,
}

pub fn statuses(problems: &[Problem], samples: &[SampleRow], samples_per_problem: usize) -> Vec<ProblemStatus> {
    let mut by_problem: Vec<Vec<&SampleRow>> = vec![Vec::new(); problems.len()];
    for s in samples {
        if let Some(v) = by_problem.get_mut(s.problem_idx) {
            v.push(s);
        }
    }
    problems
        .iter()
        .zip(by_problem)
        .enumerate()
        .map(|(idx, (p, mut mine))| {
            mine.sort_by_key(|s| s.sample_idx);
            let answers: Vec<Option<String>> = mine.iter().map(|s| s.extracted.clone()).collect();
            let j = judge(p.key.as_deref(), &answers);
            let complete = mine.len() >= samples_per_problem;
            ProblemStatus {
                idx,
                id: p.id.clone(),
                question: p.question.clone(),
                key: p.key.clone(),
                line: p.line,
                samples_done: mine.len(),
                samples_total: samples_per_problem,
                majority: j.majority,
                agreement: if mine.is_empty() { 0.0 } else { j.agreement },
                verdict: complete.then_some(j.verdict),
                answers,
            }
        })
        .collect()
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
    }
    c
}

#[cfg(test)]
mod status_tests {
    use super::*;

    fn problem(id: &str, key: Option<&str>) -> Problem {
        Problem { id: id.into(), question: format!("q{id}"), key: key.map(Into::into), extra: vec![], line: 2 }
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
        let st = statuses(&problems, &samples, 2);
        assert_eq!(st[0].answers, vec![Some("4.0".to_string()), Some("4".to_string())]);
        assert_eq!((st[0].verdict, st[0].agreement), (Some(Verdict::Confirmed), 1.0));
        assert_eq!((st[1].verdict, st[1].majority.as_deref()), (Some(Verdict::Disputed), Some("12")));
        assert_eq!((st[2].verdict, st[2].samples_done), (None, 1));
        assert_eq!(counts(&st), VerdictCounts { confirmed: 1, disputed: 1, unsure: 0, answered: 0, pending: 1 });
    }
}
