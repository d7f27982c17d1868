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
