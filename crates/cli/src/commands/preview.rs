//! `ponder preview FILE`: what the app's preview shows for a question file, with no model
//! loaded, so a file can be checked from a terminal (or a script, with `--json`).

use anyhow::Result;
use ponder_jobs::preview::{preview, FilePreview};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The question file (.txt, .md, .csv, .tsv, .jsonl, .json or .xlsx).
    file: PathBuf,
    /// Print one JSON object (the app's preview) instead of text.
    #[arg(long)]
    json: bool,
}

pub fn run(args: Args) -> Result<()> {
    let p = preview(&args.file)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&p)?);
    } else {
        print!("{}", as_text(&p));
    }
    Ok(())
}

fn as_text(p: &FilePreview) -> String {
    let mut out = format!("{}: {} problems, {:?}, {}\n", p.name, p.problem_count, p.format, p.encoding);
    out.push_str(&match (&p.columns.key, p.has_key) {
        (Some(column), true) => format!("answer key: column {column:?}\n"),
        (None, true) => "answer key: yes\n".to_string(),
        _ => "answer key: none\n".to_string(),
    });
    if let Some(q) = &p.columns.question {
        let or_dash = |c: &Option<String>| c.clone().unwrap_or_else(|| "-".into());
        out.push_str(&format!("columns: question {q:?}, key {}, id {}\n", or_dash(&p.columns.key), or_dash(&p.columns.id)));
    }
    match p.suggested_max_samples {
        Some(max) => out.push_str(&format!("samples per problem suggested: {}, up to {max} while unsure\n", p.suggested_samples)),
        None => out.push_str(&format!("samples per problem suggested: {}\n", p.suggested_samples)),
    }
    for w in &p.warnings {
        out.push_str(&format!("{}:{}: warning: {}\n", p.path, w.line, w.message));
    }
    if p.more_warnings > 0 {
        out.push_str(&format!("... and {} more warnings\n", p.more_warnings));
    }
    for q in &p.problems {
        let question: String = q.question.split_whitespace().collect::<Vec<_>>().join(" ");
        let short: String = question.chars().take(70).collect();
        let more = if short.len() < question.len() { "…" } else { "" };
        let key = q.key.as_deref().map(|k| format!("  [key: {k}]")).unwrap_or_default();
        out.push_str(&format!("  {} (line {}): {short}{more}{key}\n", q.id, q.line));
    }
    if p.problem_count > p.problems.len() {
        out.push_str(&format!("  ... {} more\n", p.problem_count - p.problems.len()));
    }
    out
}
