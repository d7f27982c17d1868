//! Reading big question files: 100,000 questions as Markdown (every item numbered `1.`, so
//! every id after the first is a duplicate to rename), CSV and JSON Lines (a new field on every
//! line), and a workbook of 20,000 rows.
//!
//! `cargo bench -p ponder-jobs --bench read_file`

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ponder_jobs::reader::{read_bytes, Limits};
use std::path::Path;

const N: usize = 100_000;

fn files() -> Vec<(&'static str, Vec<u8>)> {
    let question = |i: usize| format!("A train leaves at {i} o'clock at 60 km/h; how far has it gone by noon?");
    let md: String = (0..N).map(|i| format!("1. {}\n", question(i))).collect();
    let csv: String =
        std::iter::once("question,answer\n".to_string()).chain((0..N).map(|i| format!("\"{}\",{i}\n", question(i)))).collect();
    let jsonl: String = (0..N).map(|i| format!("{{\"question\": \"{}\", \"note{i}\": {i}}}\n", question(i))).collect();
    let xlsx = {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.xlsx");
        let mut wb = rust_xlsxwriter::Workbook::new();
        let ws = wb.add_worksheet();
        ws.write(0, 0, "question").unwrap();
        ws.write(0, 1, "answer").unwrap();
        for i in 1..=20_000u32 {
            ws.write(i, 0, question(i as usize)).unwrap();
            ws.write(i, 1, i).unwrap();
        }
        wb.save(&path).unwrap();
        std::fs::read(&path).unwrap()
    };
    vec![("q.md", md.into_bytes()), ("q.csv", csv.into_bytes()), ("q.jsonl", jsonl.into_bytes()), ("q.xlsx", xlsx)]
}

fn read(c: &mut Criterion) {
    let mut g = c.benchmark_group("read_file");
    g.sample_size(10);
    for (name, bytes) in files() {
        g.throughput(Throughput::Bytes(bytes.len() as u64));
        g.bench_function(name, |b| b.iter(|| read_bytes(Path::new(name), &bytes, &Limits::default()).unwrap()));
    }
    g.finish();
}

criterion_group!(benches, read);
criterion_main!(benches);
