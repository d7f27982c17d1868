//! Two kinds of (gold, pred, equal) cases:
//! - the 192 from Math-Verify 0.9.0's own test suite, shared in `tests/data/`: every case that
//!   agreed when this test was written must still agree, and the known misses are named by line;
//! - Ponder's own, one file per shape of answer in `tests/cases/`, with positives and the
//!   negatives that must stay different (`adversarial.jsonl` guards against false "equal",
//!   which would mark a wrong key as confirmed): every one must agree.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Lines of the shared file the checker gets wrong today. A fix that makes one agree removes
/// it from here; a new miss fails the test.
const KNOWN_SHARED_MISSES: &[usize] = &[29, 30, 124, 125, 144, 165, 189];

/// Far above what any case takes; a comparison past it would be a hang in a report.
const SLOW: Duration = Duration::from_secs(2);

struct Case {
    line: usize,
    gold: String,
    pred: String,
    equal: bool,
}

fn read_cases(path: &Path) -> Vec<Case> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, line)| {
            let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1));
            let field = |k: &str| v[k].as_str().unwrap_or_else(|| panic!("{}:{}: no {k}", path.display(), i + 1)).to_string();
            Case { line: i + 1, gold: field("gold"), pred: field("pred"), equal: v["equal"].as_bool().expect("equal") }
        })
        .collect()
}

/// The lines whose verdict disagrees with the case, each described.
fn misses(path: &Path, cases: &[Case]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for c in cases {
        let start = Instant::now();
        let got = ponder_answers::equivalence::check(&c.gold, &c.pred);
        assert!(start.elapsed() < SLOW, "{}:{} took {:?}", path.display(), c.line, start.elapsed());
        if got.equal != c.equal {
            let want = if c.equal { "equal" } else { "different" };
            let short = |s: &str| {
                if s.chars().count() > 80 {
                    format!("{}…", s.chars().take(80).collect::<String>())
                } else {
                    s.to_string()
                }
            };
            let name = path.file_name().unwrap().to_string_lossy();
            out.push((
                c.line,
                format!(
                    "{name}:{}: want {want}: {:?} vs {:?}, read as {:?} vs {:?} ({:?} vs {:?}), by {}",
                    c.line,
                    short(&c.gold),
                    short(&c.pred),
                    short(&got.gold),
                    short(&got.pred),
                    got.gold_read,
                    got.pred_read,
                    got.rule.describe()
                ),
            ));
        }
    }
    out
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn shared_cases_keep_every_agreement() {
    let path = root().join("tests/data/answer-equivalence-cases.jsonl");
    let cases = read_cases(&path);
    assert_eq!(cases.len(), 192);
    let start = Instant::now();
    let missed = misses(&path, &cases);
    let agree = cases.len() - missed.len();
    println!("{agree}/{} agree ({:.1}%) in {:?}", cases.len(), 100.0 * agree as f64 / cases.len() as f64, start.elapsed());
    let new: Vec<&String> = missed.iter().filter(|(l, _)| !KNOWN_SHARED_MISSES.contains(l)).map(|(_, m)| m).collect();
    let fixed: Vec<&usize> = KNOWN_SHARED_MISSES.iter().filter(|l| !missed.iter().any(|(m, _)| m == *l)).collect();
    for (_, m) in &missed {
        println!("  miss {m}");
    }
    assert!(
        new.is_empty(),
        "cases that agreed before now miss:\n{}",
        new.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
    );
    assert!(fixed.is_empty(), "lines {fixed:?} agree now: remove them from KNOWN_SHARED_MISSES");
}

#[test]
fn own_cases_all_agree() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/cases");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    assert!(files.len() >= 7, "{files:?}");
    let (mut total, mut all) = (0, Vec::new());
    let start = Instant::now();
    for f in &files {
        let cases = read_cases(f);
        assert!(cases.iter().any(|c| c.equal) || f.ends_with("adversarial.jsonl"), "{}: no positive case", f.display());
        assert!(cases.iter().any(|c| !c.equal), "{}: no negative case", f.display());
        total += cases.len();
        all.extend(misses(f, &cases).into_iter().map(|(_, m)| m));
    }
    println!("{}/{total} own cases agree in {:?}", total - all.len(), start.elapsed());
    assert!(all.is_empty(), "{} of {total} miss:\n{}", all.len(), all.join("\n"));
}
