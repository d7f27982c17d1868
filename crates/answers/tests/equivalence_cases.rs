//! The 192 (gold, pred, equal) cases from Math-Verify 0.9.0's own test suite, shared in
//! `tests/data/`. At least 90% must agree; the misses are listed when the test runs.

use std::path::PathBuf;

fn cases_file() -> PathBuf {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let f = root.join("tests/data/answer-equivalence-cases.jsonl");
    assert!(f.exists(), "{} is missing", f.display());
    f
}

#[test]
fn math_verify_cases_agree_at_least_90_percent() {
    let text = std::fs::read_to_string(cases_file()).unwrap();
    let mut agree = 0;
    let mut total = 0;
    let mut misses = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let (gold, pred, want) = (v["gold"].as_str().unwrap(), v["pred"].as_str().unwrap(), v["equal"].as_bool().unwrap());
        let start = std::time::Instant::now();
        let got = ponder_answers::equivalence::check(gold, pred);
        assert!(start.elapsed().as_secs() < 2, "case {} took {:?}", i + 1, start.elapsed());
        total += 1;
        if got.equal == want {
            agree += 1;
        } else {
            misses.push(format!("line {}: want {want}, read gold {:?} pred {:?}", i + 1, got.gold, got.pred));
        }
    }
    println!("{agree}/{total} agree ({:.1}%)", 100.0 * agree as f64 / total as f64);
    for m in &misses {
        println!("  miss {m}");
    }
    assert_eq!(total, 192);
    assert!(agree * 10 >= total * 9, "{agree}/{total} agree, below 90%");
}
