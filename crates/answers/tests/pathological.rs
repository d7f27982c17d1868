//! Keys and answers made to hurt the checker, each about 400 KB: deep nesting, thousands of
//! boxes, answer phrases and list items. Each must come back with a verdict (no stack overflow,
//! no panic). Their speed is measured, not timed here: `ponder check --jsonl` on each of these
//! shapes returns in about 20 ms (before the one-pass box search, 30,000 boxes took 5 s).

use ponder_answers::equivalence::check;
use ponder_answers::extract::final_answer;

fn shapes() -> Vec<(&'static str, String)> {
    let n = 400_000;
    let times = |unit: &str| unit.repeat(n / unit.len());
    vec![
        ("nested parentheses", format!("{}{}", "(".repeat(n / 2), ")".repeat(n / 2))),
        ("nested boxes", format!("{}1{}", "\\boxed{".repeat(n / 8), "}".repeat(n / 8))),
        ("boxes joined by and", times("\\boxed{1} and ")),
        ("boxes of both kinds", times("\\fbox{1} \\boxed{2} ")),
        ("a long sum", times("1+")),
        ("nested fractions", format!("{}{}", "\\frac{".repeat(n / 12), "1}{2}".repeat(n / 12))),
        ("dollar signs", times("$")),
        ("a power tower", times("x^")),
        ("maths segments joined by and", times("$1$ and ")),
        ("answer phrases", times("The answer is 1. ")),
        ("digits", times("1")),
        ("a long list", times("1,")),
        ("nested left-right", format!("{}1{}", "\\left(".repeat(n / 13), "\\right)".repeat(n / 13))),
        ("open braces", times("{")),
        ("nested roots", format!("{}2{}", "\\sqrt{".repeat(n / 7), "}".repeat(n / 7))),
        ("solutions joined by or", times("x = 1 or ")),
        ("nested text", format!("{}a{}", "\\text{".repeat(n / 7), "}".repeat(n / 7))),
        ("nested subscripts", format!("{}1{}", "a_{".repeat(n / 4), "}".repeat(n / 4))),
        ("an unclosed box", format!("\\boxed{{{}", "{1".repeat(n / 2))),
    ]
}

#[test]
fn pathological_keys_and_answers_get_a_verdict() {
    for (name, text) in shapes() {
        assert!(text.len() > 300_000, "{name}: {} bytes", text.len());
        // What they are read as is beside the point (a long sum's key falls back to its last
        // number, as a worked solution's does); that each is read, is the test.
        let as_key = check(&text, "1");
        let as_answer = check("1", &text);
        assert_eq!(as_key.gold, check(&text, "1").gold, "{name}: the same reading twice");
        let _ = (as_answer, final_answer(&text, ""));
    }
}
