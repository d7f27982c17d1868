use anyhow::{Context, Result};
use std::io::{BufRead, Write};
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
    /// The key (gold answer).
    gold: Option<String>,
    /// The answer to compare with it.
    pred: Option<String>,
    /// Read `{"gold", "pred"}` lines from a file and write them back with an `"equal"` field.
    #[arg(long, conflicts_with_all = ["gold", "pred"])]
    jsonl: Option<PathBuf>,
    /// Where to write the JSONL result (default: standard output).
    #[arg(short, long, requires = "jsonl")]
    output: Option<PathBuf>,
    /// Say how each side was read (where the answer was found, the form it was read as) and
    /// which rule decided; with --jsonl, as an "explain" field.
    #[arg(long)]
    explain: bool,
}

/// Exit code 0 for equal, 1 for different (2 is left for errors).
pub fn run(args: Args) -> Result<i32> {
    if let Some(path) = args.jsonl {
        let file = std::fs::File::open(&path).with_context(|| format!("{}", path.display()))?;
        let mut out: Box<dyn Write> = match &args.output {
            Some(o) => Box::new(std::io::BufWriter::new(std::fs::File::create(o).with_context(|| format!("{}", o.display()))?)),
            None => Box::new(std::io::stdout().lock()),
        };
        for (i, line) in std::io::BufReader::new(file).lines().enumerate() {
            let line = line.with_context(|| format!("{}:{}", path.display(), i + 1))?;
            if line.trim().is_empty() {
                continue;
            }
            let mut v: serde_json::Value =
                serde_json::from_str(&line).with_context(|| format!("{}:{}: invalid JSON", path.display(), i + 1))?;
            let field = |k: &str| -> Result<String> {
                match &v[k] {
                    serde_json::Value::String(s) => Ok(s.clone()),
                    serde_json::Value::Null => anyhow::bail!("{}:{}: missing field \"{k}\"", path.display(), i + 1),
                    other => Ok(other.to_string()),
                }
            };
            let c = ponder_answers::equivalence::check(&field("gold")?, &field("pred")?);
            v["equal"] = serde_json::Value::Bool(c.equal);
            if args.explain {
                v["explain"] = serde_json::json!({
                    "gold": {"answer": c.gold, "found": c.gold_found.describe(), "read": c.gold_read},
                    "pred": {"answer": c.pred, "found": c.pred_found.describe(), "read": c.pred_read},
                    "rule": c.rule.describe(),
                });
            }
            writeln!(out, "{v}")?;
        }
        out.flush()?;
        return Ok(0);
    }
    let (Some(gold), Some(pred)) = (args.gold, args.pred) else {
        anyhow::bail!("give GOLD and PRED, or --jsonl FILE");
    };
    let c = ponder_answers::equivalence::check(&gold, &pred);
    println!("{}", if c.equal { "equal" } else { "different" });
    if args.explain {
        let not_maths = || "not maths: compared as text".to_string();
        println!("  gold: {} ({})", c.gold, c.gold_found.describe());
        println!("        read as {}", c.gold_read.clone().unwrap_or_else(not_maths));
        println!("  pred: {} ({})", c.pred, c.pred_found.describe());
        println!("        read as {}", c.pred_read.clone().unwrap_or_else(not_maths));
        println!("  rule: {}", c.rule.describe());
    } else {
        println!("  gold: {}", c.gold);
        println!("  pred: {}", c.pred);
    }
    Ok(if c.equal { 0 } else { 1 })
}
