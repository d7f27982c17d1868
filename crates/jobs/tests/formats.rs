//! Every supported format and encoding, with real files made here.

use ponder_jobs::reader::{read_file, Format, Limits, ReadError};
use std::path::{Path, PathBuf};

fn dir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn write(d: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let p = d.join(name);
    std::fs::write(&p, bytes).unwrap();
    p
}

/// The first problems of the shared GSM8K sample, as (id, question, answer).
fn gsm8k(n: usize) -> Vec<(String, String, String)> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/gsm8k-sample-200.jsonl");
    let text = std::fs::read_to_string(&root).unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    text.lines()
        .take(n)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["id"].as_str().unwrap().into(), v["question"].as_str().unwrap().into(), v["answer"].as_str().unwrap().into())
        })
        .collect()
}

#[test]
fn csv_with_english_headers_and_extra_columns() {
    let d = dir();
    let rows = gsm8k(5);
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(["id", "Question", "Answer", "topic"]).unwrap();
    for (id, q, a) in &rows {
        w.write_record([id.as_str(), q, a, "arithmetic"]).unwrap();
    }
    let p = write(d.path(), "gsm.csv", &w.into_inner().unwrap());
    let prev = read_file(&p, &Limits::default()).unwrap();
    assert_eq!(prev.format, Format::Csv);
    assert_eq!(prev.problems.len(), 5);
    assert!(prev.has_key);
    assert_eq!(prev.problems[0].id, "gsm8k-test-0000");
    assert_eq!(prev.problems[0].key.as_deref(), Some("18"));
    assert_eq!(prev.problems[0].question, rows[0].1);
    assert_eq!(prev.problems[0].extra, vec![("topic".to_string(), "arithmetic".to_string())]);
    assert_eq!(prev.columns.question.as_deref(), Some("Question"));
    assert_eq!(prev.columns.extra, vec!["topic".to_string()]);
}

#[test]
fn gbk_csv_with_chinese_headers() {
    let d = dir();
    let text = "编号,题目,答案\n1,三加五等于几？,8\n2,一打鸡蛋有几个？,12\n";
    let (bytes, _, bad) = encoding_rs::GBK.encode(text);
    assert!(!bad);
    assert!(std::str::from_utf8(&bytes).is_err(), "really GBK, not UTF-8");
    let p = write(d.path(), "题目.csv", &bytes);
    let prev = read_file(&p, &Limits::default()).unwrap();
    assert_eq!(prev.encoding, "GB18030");
    assert_eq!(prev.problems.len(), 2);
    assert_eq!(prev.problems[1].question, "一打鸡蛋有几个？");
    assert_eq!(prev.problems[1].key.as_deref(), Some("12"));
    assert_eq!(prev.columns.key.as_deref(), Some("答案"));
    assert!(prev.warnings.is_empty(), "real Chinese text reads with confidence: {:?}", prev.warnings);
}

#[test]
fn utf16_tsv_as_excel_saves_unicode_text() {
    let d = dir();
    let text = "question\tanswer\nWhat is 6*7?\t42\n平方根 of 81?\t9\n";
    let mut le = vec![0xFF, 0xFE];
    le.extend(text.encode_utf16().flat_map(|u| u.to_le_bytes()));
    let prev = read_file(&write(d.path(), "le.tsv", &le), &Limits::default()).unwrap();
    assert_eq!((prev.encoding.as_str(), prev.problems.len()), ("UTF-16LE", 2));
    assert_eq!(prev.problems[1].question, "平方根 of 81?");
    let mut be = vec![0xFE, 0xFF];
    be.extend(text.encode_utf16().flat_map(|u| u.to_be_bytes()));
    let prev = read_file(&write(d.path(), "be.tsv", &be), &Limits::default()).unwrap();
    assert_eq!((prev.encoding.as_str(), prev.problems[0].key.as_deref()), ("UTF-16BE", Some("42")));
    // No BOM: detected from the zero bytes.
    let nobom: Vec<u8> = text.encode_utf16().flat_map(|u| u.to_le_bytes()).collect();
    let prev = read_file(&write(d.path(), "nobom.tsv", &nobom), &Limits::default()).unwrap();
    assert_eq!(prev.encoding, "UTF-16LE");
}

#[test]
fn utf8_bom_and_headerless_two_columns() {
    let d = dir();
    let p = write(d.path(), "plain.csv", "\u{feff}What is 1+1?,2\nWhat is 2+2?,4\n".as_bytes());
    let prev = read_file(&p, &Limits::default()).unwrap();
    assert_eq!(prev.encoding, "UTF-8 (BOM)");
    assert_eq!(prev.problems[0].question, "What is 1+1?");
    assert_eq!(prev.problems[1].key.as_deref(), Some("4"));
    assert_eq!(prev.problems[1].id, "2", "ids are row numbers when the file has none");
}

#[test]
fn xlsx_first_sheet() {
    let d = dir();
    let p = d.path().join("set.xlsx");
    let mut wb = rust_xlsxwriter::Workbook::new();
    let ws = wb.add_worksheet();
    ws.write(0, 0, "Problem").unwrap();
    ws.write(0, 1, "Key").unwrap();
    ws.write(1, 0, "How many legs do 3 spiders have?").unwrap();
    ws.write(1, 1, 24).unwrap();
    ws.write(2, 0, "").unwrap();
    ws.write(3, 0, "What is half of 7?").unwrap();
    ws.write(3, 1, 3.5).unwrap();
    wb.save(&p).unwrap();
    let prev = read_file(&p, &Limits::default()).unwrap();
    assert_eq!(prev.format, Format::Xlsx);
    assert_eq!(prev.problems.len(), 2);
    assert_eq!(prev.problems[0].key.as_deref(), Some("24"), "whole numbers read as integers");
    assert_eq!(prev.problems[1].key.as_deref(), Some("3.5"));
    assert_eq!(prev.problems[1].line, 4);
}

#[test]
fn jsonl_json_and_their_errors() {
    let d = dir();
    let p = write(d.path(), "a.jsonl", b"{\"problem\": \"2+2?\", \"expected\": 4}\n\n\"Just a question\"\n");
    let prev = read_file(&p, &Limits::default()).unwrap();
    assert_eq!(prev.problems.len(), 2);
    assert_eq!(prev.problems[0].key.as_deref(), Some("4"));
    assert_eq!(prev.problems[1].line, 3);
    let p = write(d.path(), "b.json", br#"{"questions": [{"prompt": "x?", "answer": "1", "id": "q7"}, "y?"]}"#);
    let prev = read_file(&p, &Limits::default()).unwrap();
    assert_eq!(prev.problems[0].id, "q7");
    assert_eq!(prev.problems[1].question, "y?");
    let p = write(d.path(), "bad.jsonl", b"{\"question\": \"ok\"}\n{not json\n");
    let e = read_file(&p, &Limits::default()).unwrap_err();
    assert!(matches!(e, ReadError::Parse { line: 2, .. }), "{e}");
    assert!(e.to_string().starts_with(&format!("{}:2: invalid JSON", p.display())), "{e}");
}

#[test]
fn text_and_markdown() {
    let d = dir();
    let p = write(d.path(), "hw.md", "# Homework\n\n1. What is 3*3?\n   Answer: 9\n2. What is 10/4?\n".as_bytes());
    let prev = read_file(&p, &Limits::default()).unwrap();
    assert_eq!(prev.format, Format::Markdown);
    assert_eq!(prev.problems.len(), 2);
    assert_eq!(prev.problems[0].key.as_deref(), Some("9"));
    assert!(prev.problems[1].key.is_none());
    let p = write(d.path(), "q.txt", "First question?\nSecond question?\n".as_bytes());
    assert_eq!(read_file(&p, &Limits::default()).unwrap().problems.len(), 2);
}

#[test]
fn warnings_say_where() {
    let d = dir();
    let long = "x".repeat(50);
    let text = format!("id,question,answer\n1,a?,1\n1,b?,2\n2,,3\n3,{long},4\n");
    let p = write(d.path(), "w.csv", text.as_bytes());
    let prev = read_file(&p, &Limits { long_question_chars: 40, ..Default::default() }).unwrap();
    let w: Vec<(usize, &str)> = prev.warnings.iter().map(|w| (w.line, w.message.as_str())).collect();
    assert_eq!(w[0].0, 3);
    assert!(w[0].1.contains("duplicate id \"1\" (first at line 2)"), "{w:?}");
    assert_eq!(w[1], (4, "empty question; row skipped"));
    assert_eq!(w[2].0, 5);
    assert!(w[2].1.contains("very long"));
    assert_eq!(prev.problems[1].id, "1-2");
}

#[test]
fn limits_and_unsupported_files() {
    let d = dir();
    let p = write(d.path(), "big.txt", "q?\n".repeat(100).as_bytes());
    let e = read_file(&p, &Limits { max_bytes: 10, ..Default::default() }).unwrap_err();
    assert!(matches!(e, ReadError::TooLarge { .. }), "{e}");
    let e = read_file(&p, &Limits { max_problems: 5, ..Default::default() }).unwrap_err();
    assert!(e.to_string().contains("more than 5 problems, the limit for one file"), "{e}");
    let e = read_file(&write(d.path(), "x.pdf", b"%PDF"), &Limits::default()).unwrap_err();
    assert!(matches!(e, ReadError::UnknownFormat { .. }));
    let e = read_file(&write(d.path(), "e.csv", b"\n\n"), &Limits::default()).unwrap_err();
    assert!(matches!(e, ReadError::Empty { .. }), "{e}");
    let e = read_file(&write(d.path(), "h.csv", b"name,score\nann,3\n"), &Limits::default());
    assert!(e.is_ok(), "no known header: read by position");
    let e = read_file(&write(d.path(), "k.xlsx", b"not a zip"), &Limits::default()).unwrap_err();
    assert!(e.to_string().contains("not a readable .xlsx"), "{e}");
}
