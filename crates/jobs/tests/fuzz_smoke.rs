//! A quick, deterministic pass of mutated inputs through the readers and the answer checker, so
//! `make test` catches panics without a fuzzing toolchain. The coverage-guided fuzzers live in
//! `fuzz/` (`make fuzz`); their seed corpus is replayed here too.

use rand::{rngs::StdRng, Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const NAMES: &[&str] = &["q.txt", "q.md", "q.csv", "q.tsv", "q.jsonl", "q.json", "q.xlsx"];

fn seeds() -> Vec<Vec<u8>> {
    let corpus = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/read_file");
    let mut out: Vec<Vec<u8>> = std::fs::read_dir(&corpus)
        .unwrap_or_else(|e| panic!("{}: {e}", corpus.display()))
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    // A real workbook, so the zip and XML paths are mutated too.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("s.xlsx");
    let mut wb = rust_xlsxwriter::Workbook::new();
    let ws = wb.add_worksheet();
    ws.write(0, 0, "question").unwrap();
    ws.write(1, 0, "What is 2+2?").unwrap();
    ws.write(1, 1, 4).unwrap();
    wb.save(&p).unwrap();
    let mut x = vec![6u8];
    x.extend(std::fs::read(&p).unwrap());
    out.push(x);
    out
}

fn mutate(rng: &mut StdRng, seed: &[u8]) -> Vec<u8> {
    let mut v = seed.to_vec();
    for _ in 0..rng.random_range(1..8) {
        if v.is_empty() {
            v.push(rng.random());
            continue;
        }
        let i = rng.random_range(0..v.len());
        match rng.random_range(0..5) {
            0 => v[i] ^= 1 << rng.random_range(0..8),
            1 => v.truncate(i),
            2 => v.insert(i, rng.random()),
            3 => {
                let j = rng.random_range(i..v.len());
                let chunk = v[i..j].to_vec();
                v.splice(i..i, chunk);
            }
            _ => {
                const SPECIAL: &[u8] = b",\"\n\t{}[]:\\$0\xe4\xff";
                v[i] = SPECIAL[rng.random_range(0..SPECIAL.len())];
            }
        }
    }
    v
}

#[test]
fn mutated_files_never_panic_or_hang() {
    let seeds = seeds();
    let mut rng = StdRng::seed_from_u64(1);
    for round in 0..20_000 {
        let seed = &seeds[round % seeds.len()];
        let data = mutate(&mut rng, seed);
        if data.is_empty() {
            continue;
        }
        let name = NAMES[data[0] as usize % NAMES.len()];
        let t = Instant::now();
        let _ = ponder_jobs::reader::read_bytes(Path::new(name), &data[1..], &Default::default());
        assert!(t.elapsed() < Duration::from_secs(2), "{name} input of {} bytes took {:?}", data.len(), t.elapsed());
    }
}

#[test]
fn random_answers_never_panic_or_hang() {
    let alphabet: Vec<char> =
        "0123456789+-*/^_{}()[]\\,.=<>|!% xyzabcπ∞√frac sqrt left right boxed text pm cup begin end pmatrix &$".chars().collect();
    let mut rng = StdRng::seed_from_u64(2);
    for _ in 0..20_000 {
        let mut s = || (0..rng.random_range(0..60)).map(|_| alphabet[rng.random_range(0..alphabet.len())]).collect::<String>();
        let (g, p) = (s(), s());
        let t = Instant::now();
        let _ = ponder_answers::equivalence::check(&g, &p);
        assert!(t.elapsed() < Duration::from_secs(1), "{g:?} vs {p:?} took {:?}", t.elapsed());
    }
}
