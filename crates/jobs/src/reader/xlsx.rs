//! The first sheet of an .xlsx workbook, read as a stream of cells.
//!
//! A workbook is a zip of XML parts. Every part is read through one budget of unpacked bytes,
//! so a zip bomb or a huge shared-strings table stops with an error instead of filling memory;
//! cells are kept per row and only up to the row's last filled cell, so one far-away cell costs
//! one row, not rows × columns (a general-purpose reader allocates the sheet's whole rectangle).

use super::problem::ReadError;
use super::table::Row;
use quick_xml::events::{BytesStart, Event};
use std::cell::Cell;
use std::io::{BufRead, BufReader, Cursor, Read};
use std::path::Path;

/// What one workbook may cost.
#[derive(Debug, Clone, Copy)]
pub struct XlsxLimits {
    /// Unpacked bytes of all the parts read (workbook, relationships, shared strings, sheet).
    pub unpacked_bytes: u64,
    /// Cells kept, counting the empty ones before a row's last filled cell.
    pub cells: usize,
}

impl Default for XlsxLimits {
    fn default() -> Self {
        Self { unpacked_bytes: 256 << 20, cells: 4_000_000 }
    }
}

/// The last cell a real sheet holds: XFD1048576.
const MAX_ROW: usize = 1_048_576;
const MAX_COLUMN: usize = 16_384;

pub(crate) fn rows(path: &Path, bytes: &[u8], limits: &XlsxLimits) -> Result<Vec<Row>, ReadError> {
    let bad = |line: usize, message: String| ReadError::Parse { path: path.into(), line, message };
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| bad(0, format!("not a readable .xlsx workbook: {e}")))?;
    let budget = Budget { left: Cell::new(limits.unpacked_bytes), limit: limits.unpacked_bytes };
    let mut book = Parts { zip: &mut zip, budget: &budget, bad: &bad };
    let (sheet, shared_strings) = book.first_sheet()?;
    let strings = match shared_strings {
        Some(part) => book.read(&part, shared_string_table)?,
        None => Vec::new(),
    };
    book.read(&sheet, |xml| sheet_rows(xml, &strings, limits))
}

/// Unpacked bytes left to read; shared by every part of one workbook.
struct Budget {
    left: Cell<u64>,
    limit: u64,
}

/// A part's bytes as they unpack, counted against the budget.
struct Metered<'b, R> {
    inner: R,
    budget: &'b Budget,
}

impl<R: Read> Read for Metered<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        match self.budget.left.get().checked_sub(n as u64) {
            Some(left) => {
                self.budget.left.set(left);
                Ok(n)
            }
            None => {
                self.budget.left.set(0);
                Err(std::io::Error::other("the workbook unpacks to more than its budget"))
            }
        }
    }
}

/// A part's XML, whichever part it is.
type Xml<'r> = quick_xml::Reader<&'r mut dyn BufRead>;

/// Why reading a part's XML stopped: the part's own problem, or the XML (or the budget) failing.
enum Stop {
    Bad(usize, String),
    Xml(quick_xml::Error),
}

impl From<quick_xml::Error> for Stop {
    fn from(e: quick_xml::Error) -> Self {
        Stop::Xml(e)
    }
}

impl From<quick_xml::encoding::EncodingError> for Stop {
    fn from(e: quick_xml::encoding::EncodingError) -> Self {
        Stop::Xml(e.into())
    }
}

struct Parts<'z, 'a, F> {
    zip: &'z mut zip::ZipArchive<Cursor<&'a [u8]>>,
    budget: &'z Budget,
    bad: &'z F,
}

impl<'a, F: Fn(usize, String) -> ReadError> Parts<'_, 'a, F> {
    fn read<T>(&mut self, name: &str, parse: impl FnOnce(&mut Xml<'_>) -> Result<T, Stop>) -> Result<T, ReadError> {
        let bad = self.bad;
        let file = self.zip.by_name(name).map_err(|e| bad(0, format!("not a readable .xlsx workbook: {name}: {e}")))?;
        let mut unpacked = BufReader::new(Metered { inner: file, budget: self.budget });
        let mut xml = quick_xml::Reader::from_reader(&mut unpacked as &mut dyn BufRead);
        match parse(&mut xml) {
            Ok(t) => Ok(t),
            Err(_) if self.budget.left.get() == 0 => Err(bad(
                0,
                format!("the workbook unpacks to more than {} MiB; a sheet of questions is far smaller", self.budget.limit >> 20),
            )),
            Err(Stop::Bad(line, message)) => Err(bad(line, message)),
            Err(Stop::Xml(e)) => {
                Err(bad(0, format!("not a readable .xlsx workbook: {name} at byte {}: {e}", xml.buffer_position())))
            }
        }
    }

    /// The first sheet's part and the shared strings' part, from the workbook and its
    /// relationships; the usual names where a workbook leaves them out.
    fn first_sheet(&mut self) -> Result<(String, Option<String>), ReadError> {
        let first_id = self.read("xl/workbook.xml", |xml| {
            let mut buf = Vec::new();
            loop {
                match xml.read_event_into(&mut buf)? {
                    Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == b"sheet" => {
                        // `r:id`, whatever the prefix: the only `id` with a namespace.
                        return Ok(e
                            .attributes()
                            .flatten()
                            .find(|a| a.key.prefix().is_some() && a.key.local_name().as_ref() == b"id")
                            .and_then(|a| a.unescape_value().ok().map(|v| v.into_owned())));
                    }
                    Event::Eof => return Err(Stop::Bad(0, "the workbook has no sheets".into())),
                    _ => {}
                }
                buf.clear();
            }
        })?;
        let has_rels = self.zip.index_for_name("xl/_rels/workbook.xml.rels").is_some();
        let (mut sheet, mut strings) = (None, None);
        if has_rels {
            (sheet, strings) = self.read("xl/_rels/workbook.xml.rels", |xml| {
                let (mut sheet, mut strings) = (None, None);
                let mut buf = Vec::new();
                loop {
                    match xml.read_event_into(&mut buf)? {
                        Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == b"Relationship" => {
                            let target = attr(&e, b"Target")?.map(|t| part_name(&t));
                            if first_id.is_some() && attr(&e, b"Id")? == first_id {
                                sheet = target;
                            } else if attr(&e, b"Type")?.is_some_and(|t| t.ends_with("/sharedStrings")) {
                                strings = target;
                            }
                        }
                        Event::Eof => return Ok((sheet, strings)),
                        _ => {}
                    }
                    buf.clear();
                }
            })?;
        }
        let sheet = sheet.unwrap_or_else(|| "xl/worksheets/sheet1.xml".into());
        let strings = strings.or_else(|| {
            let usual = "xl/sharedStrings.xml";
            self.zip.index_for_name(usual).map(|_| usual.to_string())
        });
        Ok((sheet, strings))
    }
}

/// A relationship's target as a part name: relative to `xl/`, or absolute from the root.
fn part_name(target: &str) -> String {
    match target.strip_prefix('/') {
        Some(absolute) => absolute.to_string(),
        None => format!("xl/{}", target.trim_start_matches("./")),
    }
}

fn attr(e: &BytesStart, name: &[u8]) -> Result<Option<String>, Stop> {
    match e.try_get_attribute(name) {
        Ok(Some(a)) => Ok(Some(a.unescape_value()?.into_owned())),
        Ok(None) => Ok(None),
        Err(e) => Err(Stop::Xml(e.into())),
    }
}

/// Text and entity references (`&amp;`, `&#10;`) add to `out`.
fn push_text(event: &Event, out: &mut String) -> Result<(), Stop> {
    match event {
        Event::Text(t) => out.push_str(&t.xml_content()?),
        Event::CData(t) => out.push_str(&t.decode()?),
        Event::GeneralRef(r) => match r.resolve_char_ref()? {
            Some(c) => out.push(c),
            None => {
                let name = r.decode()?;
                match quick_xml::escape::resolve_predefined_entity(&name) {
                    Some(s) => out.push_str(s),
                    None => {
                        out.push('&');
                        out.push_str(&name);
                        out.push(';');
                    }
                }
            }
        },
        _ => {}
    }
    Ok(())
}

/// The shared strings, in order: each `<si>`'s text runs joined (phonetic guides left out).
fn shared_string_table(xml: &mut Xml<'_>) -> Result<Vec<String>, Stop> {
    let mut strings = Vec::new();
    let mut buf = Vec::new();
    let (mut current, mut in_text, mut in_phonetic) = (String::new(), false, false);
    loop {
        let event = xml.read_event_into(&mut buf)?;
        match &event {
            Event::Start(e) => match e.local_name().as_ref() {
                b"si" => current.clear(),
                b"t" => in_text = !in_phonetic,
                b"rPh" => in_phonetic = true,
                _ => {}
            },
            Event::Empty(e) if e.local_name().as_ref() == b"si" => strings.push(String::new()),
            Event::End(e) => match e.local_name().as_ref() {
                b"si" => strings.push(std::mem::take(&mut current)),
                b"t" => in_text = false,
                b"rPh" => in_phonetic = false,
                _ => {}
            },
            Event::Eof => return Ok(strings),
            other if in_text => push_text(other, &mut current)?,
            _ => {}
        }
        buf.clear();
    }
}

/// A cell being read: where it is, its type, and its value's text so far.
struct OpenCell {
    column: usize,
    kind: Option<String>,
    value: String,
}

fn sheet_rows(xml: &mut Xml<'_>, strings: &[String], limits: &XlsxLimits) -> Result<Vec<Row>, Stop> {
    let mut rows: Vec<Row> = Vec::new();
    let mut buf = Vec::new();
    let mut row = 0usize;
    let mut cells: Vec<(usize, String)> = Vec::new();
    let mut cell: Option<OpenCell> = None;
    let mut in_value = false;
    let mut kept = 0usize;
    loop {
        let event = xml.read_event_into(&mut buf)?;
        match &event {
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == b"row" => {
                row = match attr(e, b"r")? {
                    Some(r) => r.trim().parse().map_err(|_| Stop::Bad(row + 1, format!("row number {r:?} is not a number")))?,
                    None => row + 1,
                };
                if row == 0 || row > MAX_ROW {
                    return Err(Stop::Bad(row, format!("row {row} is beyond what a sheet holds ({MAX_ROW} rows)")));
                }
                cells.clear();
            }
            Event::Start(e) | Event::Empty(e) if e.local_name().as_ref() == b"c" => {
                let column = match attr(e, b"r")? {
                    Some(r) => column_of(&r, row).map_err(|m| Stop::Bad(row, m))?,
                    None => cells.last().map_or(0, |(c, _)| c + 1),
                };
                let open = OpenCell { column, kind: attr(e, b"t")?, value: String::new() };
                if matches!(event, Event::Empty(_)) {
                    cells.push((column, String::new()));
                } else {
                    cell = Some(open);
                }
            }
            Event::Start(e) if cell.is_some() && matches!(e.local_name().as_ref(), b"v" | b"t") => in_value = true,
            Event::End(e) => match e.local_name().as_ref() {
                b"v" | b"t" => in_value = false,
                b"c" => {
                    if let Some(c) = cell.take() {
                        let text = cell_text(&c, strings).map_err(|m| Stop::Bad(row, m))?;
                        cells.push((c.column, text));
                    }
                }
                b"row" => {
                    if let Some(dense) = dense_row(&mut cells) {
                        kept += dense.len();
                        if kept > limits.cells {
                            return Err(Stop::Bad(
                                row,
                                format!("the sheet has more than {} cells; a sheet of questions is far smaller", limits.cells),
                            ));
                        }
                        rows.push((row, dense));
                    }
                }
                _ => {}
            },
            Event::Eof => return Ok(rows),
            other if in_value => {
                if let Some(c) = &mut cell {
                    push_text(other, &mut c.value)?;
                }
            }
            _ => {}
        }
        buf.clear();
    }
}

/// A row's cells by column, up to its last filled one; `None` for a row with nothing in it.
fn dense_row(cells: &mut Vec<(usize, String)>) -> Option<Vec<String>> {
    cells.retain(|(_, text)| !text.trim().is_empty());
    let width = cells.iter().map(|(c, _)| c + 1).max()?;
    let mut dense = vec![String::new(); width];
    for (c, text) in cells.drain(..) {
        dense[c] = text;
    }
    Some(dense)
}

/// The 0-based column of a cell reference such as `B3`, checked against its row and against
/// what a sheet holds.
fn column_of(reference: &str, row: usize) -> Result<usize, String> {
    let letters: String = reference.chars().take_while(|c| c.is_ascii_alphabetic()).collect();
    let digits = &reference[letters.len()..];
    let not_a_cell = || format!("cell reference {reference:?} is not a cell reference");
    if letters.is_empty() || letters.len() > 3 || digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(not_a_cell());
    }
    let column = letters.bytes().fold(0usize, |n, b| n * 26 + (b.to_ascii_uppercase() - b'A' + 1) as usize);
    let in_row: usize = digits.parse().map_err(|_| not_a_cell())?;
    if column > MAX_COLUMN || in_row > MAX_ROW || in_row == 0 {
        return Err(format!("cell {reference} is beyond what a sheet holds (XFD{MAX_ROW} is the last cell)"));
    }
    if in_row != row {
        return Err(format!("cell {reference} is written in row {row}"));
    }
    Ok(column - 1)
}

/// A cell's text as the sheet shows it: shared and inline strings as written, whole numbers
/// without a decimal point (a key of 18 must not read "18.0"), booleans as true or false.
fn cell_text(cell: &OpenCell, strings: &[String]) -> Result<String, String> {
    let v = cell.value.as_str();
    Ok(match cell.kind.as_deref() {
        Some("s") => {
            let i: usize = v.trim().parse().map_err(|_| format!("shared string index {v:?} is not a number"))?;
            strings
                .get(i)
                .cloned()
                .ok_or_else(|| format!("shared string {i} does not exist ({} in the workbook)", strings.len()))?
        }
        Some("b") => (if v.trim() == "1" { "true" } else { "false" }).to_string(),
        Some("inlineStr" | "str" | "e" | "d") => v.to_string(),
        _ => match v.trim().parse::<f64>() {
            Ok(f) if f.fract() == 0.0 && f.abs() < 1e15 => format!("{}", f as i64),
            Ok(f) => f.to_string(),
            Err(_) => v.to_string(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cell_references_are_checked() {
        assert_eq!(column_of("A1", 1), Ok(0));
        assert_eq!(column_of("AA7", 7), Ok(26));
        assert_eq!(column_of("XFD1048576", 1_048_576), Ok(16_383));
        assert!(column_of("XFE1", 1).unwrap_err().contains("beyond what a sheet holds"));
        assert!(column_of("A1048577", 1_048_577).unwrap_err().contains("beyond"));
        assert!(column_of("A0", 0).unwrap_err().contains("beyond"));
        assert!(column_of("1A", 1).unwrap_err().contains("not a cell reference"));
        assert!(column_of("B2", 3).unwrap_err().contains("written in row 3"));
    }

    #[test]
    fn rows_keep_cells_only_up_to_the_last_filled_one() {
        let mut cells = vec![(3, "x".to_string()), (9, " ".to_string())];
        assert_eq!(dense_row(&mut cells), Some(vec![String::new(), String::new(), String::new(), "x".into()]));
        assert_eq!(dense_row(&mut vec![(5, String::new())]), None);
    }
}
