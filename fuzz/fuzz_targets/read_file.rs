//! Any bytes, under any supported file name, must give problems or a clear error: never a
//! panic or a hang.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::path::Path;

const NAMES: &[&str] = &["q.txt", "q.md", "q.csv", "q.tsv", "q.jsonl", "q.json", "q.xlsx"];

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let name = NAMES[data[0] as usize % NAMES.len()];
    let _ = ponder_jobs::reader::read_bytes(Path::new(name), &data[1..], &Default::default());
});
