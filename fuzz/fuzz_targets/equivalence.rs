//! Any pair of answers must compare without a panic or a hang.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let s = String::from_utf8_lossy(data);
    let (gold, pred) = s.split_once('\u{1f}').unwrap_or((&s, "1"));
    let _ = ponder_answers::equivalence::check(gold, pred);
});
