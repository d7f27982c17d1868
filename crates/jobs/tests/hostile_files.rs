//! Question files made to hurt: each must give a clear error (or a correct reading) without
//! aborting, hanging or filling memory.

use ponder_jobs::reader::{read_file, Limits, WarningCode, XlsxLimits, WARNINGS_KEPT};
use std::io::Write;
use std::path::{Path, PathBuf};

/// A workbook written by hand, part by part, so its XML can be anything.
fn workbook(dir: &Path, name: &str, parts: &[(&str, &str)]) -> PathBuf {
    let path = dir.join(name);
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let deflate = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    for (part, xml) in parts {
        zip.start_file(*part, deflate).unwrap();
        zip.write_all(xml.as_bytes()).unwrap();
    }
    zip.finish().unwrap();
    path
}

const WORKBOOK: &str = r#"<workbook xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Q" sheetId="1" r:id="rId1"/></sheets></workbook>"#;
const RELS: &str = r#"<Relationships><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>"#;

fn sheet(rows: &str) -> String {
    format!("<worksheet><sheetData>{rows}</sheetData></worksheet>")
}

fn with_sheet(dir: &Path, name: &str, rows: &str, strings: &str) -> PathBuf {
    let sheet = sheet(rows);
    workbook(
        dir,
        name,
        &[
            ("xl/workbook.xml", WORKBOOK),
            ("xl/_rels/workbook.xml.rels", RELS),
            ("xl/sharedStrings.xml", strings),
            ("xl/worksheets/sheet1.xml", &sheet),
        ],
    )
}

const STRINGS: &str =
    "<sst><si><t>question</t></si><si><t>answer</t></si><si><r><t>What is </t></r><r><t>2 &amp; 2?</t></r></si></sst>";

#[test]
fn a_cell_in_the_last_corner_of_the_sheet_costs_one_cell() {
    // The workbook that took the app down: a header, one question, and one cell at XFD1048576.
    let dir = tempfile::tempdir().unwrap();
    let mut wb = rust_xlsxwriter::Workbook::new();
    let ws = wb.add_worksheet();
    ws.write(0, 0, "question").unwrap();
    ws.write(0, 1, "answer").unwrap();
    ws.write(1, 0, "What is 2 + 2?").unwrap();
    ws.write(1, 1, 4).unwrap();
    ws.write(1_048_575, 16_383, "far away").unwrap();
    let path = dir.path().join("bomb.xlsx");
    wb.save(&path).unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() < 10_000);
    let p = read_file(&path, &Limits::default()).unwrap();
    assert_eq!(p.problems.len(), 1, "{:?}", p.problems);
    assert_eq!((p.problems[0].question.as_str(), p.problems[0].key.as_deref()), ("What is 2 + 2?", Some("4")));
}

#[test]
fn shared_and_inline_strings_rich_text_and_entities_read_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let rows = r#"<row r="1"><c r="A1" t="s"><v>0</v></c><c r="B1" t="s"><v>1</v></c></row>
        <row r="3"><c r="A3" t="s"><v>2</v></c><c r="B3"><v>4</v></c></row>
        <row r="4"><c r="A4" t="inlineStr"><is><t>Half of 7?</t></is></c><c r="C4" t="s"><v>1</v></c><c r="B4"><v>3.5</v></c></row>"#;
    let p = read_file(&with_sheet(dir.path(), "s.xlsx", rows, STRINGS), &Limits::default()).unwrap();
    let read: Vec<(&str, Option<&str>, usize)> =
        p.problems.iter().map(|p| (p.question.as_str(), p.key.as_deref(), p.line)).collect();
    assert_eq!(read, [("What is 2 & 2?", Some("4"), 3), ("Half of 7?", Some("3.5"), 4)]);
}

#[test]
fn cells_beyond_a_sheet_or_broken_references_name_the_cell() {
    let dir = tempfile::tempdir().unwrap();
    let header = r#"<row r="1"><c r="A1" t="s"><v>0</v></c></row>"#;
    let cases = [
        (r#"<row r="2"><c r="XFE2" t="s"><v>2</v></c></row>"#, "bad0.xlsx:2: cell XFE2 is beyond what a sheet holds"),
        (r#"<row r="1048577"><c r="A1048577"><v>1</v></c></row>"#, "row 1048577 is beyond what a sheet holds"),
        (r#"<row r="2"><c r="A2" t="s"><v>99</v></c></row>"#, "bad2.xlsx:2: shared string 99 does not exist (3 in the workbook)"),
        (r#"<row r="2"><c r="2A"><v>1</v></c></row>"#, "cell reference \"2A\" is not a cell reference"),
        (r#"<row r="2"><c r="A2"><v>1</v></row>"#, "bad4.xlsx: not a readable .xlsx workbook: xl/worksheets/sheet1.xml at byte"),
    ];
    for (i, (rows, expected)) in cases.iter().enumerate() {
        let path = with_sheet(dir.path(), &format!("bad{i}.xlsx"), &format!("{header}{rows}"), STRINGS);
        let e = read_file(&path, &Limits::default()).unwrap_err().to_string();
        assert!(e.contains(expected), "{rows}\n  gave: {e}\n  wanted: {expected}");
        assert!(e.contains(&format!("bad{i}.xlsx")), "{e}");
    }
}

#[test]
fn a_workbook_that_unpacks_past_its_budget_stops_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    // 4 MiB of shared strings that pack into a few kilobytes.
    let huge = format!("<sst><si><t>question</t></si><si><t>{}</t></si></sst>", "a".repeat(4 << 20));
    let rows = r#"<row r="1"><c r="A1" t="s"><v>0</v></c></row><row r="2"><c r="A2" t="s"><v>1</v></c></row>"#;
    let path = with_sheet(dir.path(), "zipbomb.xlsx", rows, &huge);
    assert!(std::fs::metadata(&path).unwrap().len() < 64 << 10);
    let limits = Limits { xlsx: XlsxLimits { unpacked_bytes: 1 << 20, ..XlsxLimits::default() }, ..Limits::default() };
    let e = read_file(&path, &limits).unwrap_err().to_string();
    assert!(e.contains("zipbomb.xlsx: the workbook unpacks to more than 1 MiB"), "{e}");
    assert!(read_file(&path, &Limits::default()).is_ok(), "within the default budget it reads");
}

#[test]
fn a_sheet_with_too_many_cells_stops_at_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    // Each row's one filled cell sits far to the right: the empty cells before it count too.
    let rows: String = (1..=50).map(|r| format!(r#"<row r="{r}"><c r="ZZ{r}"><v>{r}</v></c></row>"#)).collect();
    let path = with_sheet(dir.path(), "wide.xlsx", &rows, STRINGS);
    let limits = Limits { xlsx: XlsxLimits { cells: 10_000, ..XlsxLimits::default() }, ..Limits::default() };
    let e = read_file(&path, &limits).unwrap_err().to_string();
    assert!(e.contains("the sheet has more than 10000 cells"), "{e}");
}

#[test]
fn a_markdown_list_that_numbers_every_item_1_gets_unique_ids_in_linear_time() {
    let dir = tempfile::tempdir().unwrap();
    let n = 100_000;
    let text: String = (0..n).map(|i| format!("1. What is {i} + 1?\n")).collect();
    let path = dir.path().join("ones.md");
    std::fs::write(&path, text).unwrap();
    let p = read_file(&path, &Limits::default()).unwrap();
    assert_eq!(p.problems.len(), n);
    assert_eq!((p.problems[0].id.as_str(), p.problems[1].id.as_str()), ("1", "1-2"));
    assert_eq!(p.problems[n - 1].id, format!("1-{n}"));
    let unique: std::collections::HashSet<&str> = p.problems.iter().map(|p| p.id.as_str()).collect();
    assert_eq!(unique.len(), n);
    // The first warnings are listed; the rest are counted.
    assert_eq!((p.warnings.len(), p.more_warnings), (WARNINGS_KEPT, n - 1 - WARNINGS_KEPT));
    assert!(p.warnings.iter().all(|w| w.code == WarningCode::DuplicateId));
}

#[test]
fn json_lines_with_a_new_field_on_every_line_are_read_in_linear_time() {
    let dir = tempfile::tempdir().unwrap();
    let n = 100_000;
    let text: String = (0..n).map(|i| format!("{{\"question\": \"q{i}\", \"note{i}\": {i}}}\n")).collect();
    let path = dir.path().join("fields.jsonl");
    std::fs::write(&path, text).unwrap();
    let p = read_file(&path, &Limits::default()).unwrap();
    assert_eq!((p.problems.len(), p.columns.extra.len()), (n, n));
    assert_eq!(p.problems[7].extra, [("note7".to_string(), "7".to_string())]);
}

#[test]
fn the_problem_cap_stops_a_read_while_parsing() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits { max_problems: 1_000, ..Limits::default() };
    for (name, line) in [("q.csv", "What is 1 + 1?,2\n"), ("q.jsonl", "{\"question\": \"What?\"}\n"), ("q.txt", "What?\n")] {
        let path = dir.path().join(name);
        std::fs::write(&path, line.repeat(1_001)).unwrap();
        let e = read_file(&path, &limits).unwrap_err().to_string();
        assert!(e.ends_with("more than 1000 problems, the limit for one file"), "{name}: {e}");
        std::fs::write(&path, line.repeat(1_000)).unwrap();
        assert_eq!(read_file(&path, &limits).unwrap().problems.len(), 1_000, "{name}");
    }
}

#[test]
fn text_in_neither_utf8_nor_chinese_gets_a_warning_with_a_confidence() {
    let dir = tempfile::tempdir().unwrap();
    let french = "question,answer\nQuel est le prix du café crème?,3 €\nCombien de côtés a un hexagone réel?,6\n";
    let japanese = "question,answer\n三角形の内角の和はいくつですか？,180\n";
    for (name, bytes) in
        [("latin.csv", encoding_rs::WINDOWS_1252.encode(french).0), ("sjis.csv", encoding_rs::SHIFT_JIS.encode(japanese).0)]
    {
        let path = dir.path().join(name);
        std::fs::write(&path, &bytes).unwrap();
        let p = read_file(&path, &Limits::default()).unwrap();
        let w = p.warnings.iter().find(|w| w.code == WarningCode::UncertainEncoding);
        let w = w.unwrap_or_else(|| panic!("{name}: no encoding warning in {:?}", p.warnings));
        assert_eq!(w.line, 0);
        assert!(w.message.contains("% confidence"), "{}", w.message);
    }
}
