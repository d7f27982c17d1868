//! What a reader collects as it goes, with the caps applied there rather than after: problems up
//! to the limit (one more stops the read), ids made unique as they arrive (a later duplicate is
//! renamed, with a warning), and the first warnings kept with a count of the rest.

use super::problem::{Problem, ReadError, Warning, WarningCode};
use super::Limits;
use std::collections::HashMap;
use std::path::Path;

/// Warnings a preview lists; the rest are counted.
pub const WARNINGS_KEPT: usize = 100;

pub(crate) struct Gather<'a> {
    path: &'a Path,
    limits: &'a Limits,
    pub problems: Vec<Problem>,
    pub warnings: Vec<Warning>,
    /// Warnings past the first [`WARNINGS_KEPT`], counted only.
    pub more_warnings: usize,
    /// Each id taken, with the line of the problem that holds it.
    ids: HashMap<String, usize>,
    /// The next suffix to try for each duplicated id: renaming stays linear however many
    /// problems share one (a Markdown list that numbers every item `1.`).
    next_suffix: HashMap<String, usize>,
}

impl<'a> Gather<'a> {
    pub fn new(path: &'a Path, limits: &'a Limits) -> Self {
        Self {
            path,
            limits,
            problems: Vec::new(),
            warnings: Vec::new(),
            more_warnings: 0,
            ids: HashMap::new(),
            next_suffix: HashMap::new(),
        }
    }

    pub fn warn(&mut self, w: Warning) {
        if self.warnings.len() < WARNINGS_KEPT {
            self.warnings.push(w);
        } else {
            self.more_warnings += 1;
        }
    }

    /// Adds a problem, or stops the read once the file holds more than the limit.
    pub fn problem(&mut self, mut p: Problem) -> Result<(), ReadError> {
        if self.problems.len() >= self.limits.max_problems {
            return Err(ReadError::TooMany { path: self.path.into(), limit: self.limits.max_problems });
        }
        if let Some(&first) = self.ids.get(&p.id) {
            let next = self.next_suffix.entry(p.id.clone()).or_insert(2);
            let renamed = loop {
                let candidate = format!("{}-{next}", p.id);
                *next += 1;
                if !self.ids.contains_key(&candidate) {
                    break candidate;
                }
            };
            let params = [("id", p.id.clone()), ("first_line", first.to_string()), ("renamed", renamed.clone())];
            self.warn(Warning::new(p.line, WarningCode::DuplicateId, &params));
            p.id = renamed;
        }
        self.ids.insert(p.id.clone(), p.line);
        let chars = p.question.chars().count();
        if chars > self.limits.long_question_chars {
            self.warn(Warning::new(p.line, WarningCode::LongQuestion, &[("chars", chars.to_string())]));
        }
        self.problems.push(p);
        Ok(())
    }

    /// Problems added so far: the 1-based position of the next one, for a default id.
    pub fn next_index(&self) -> usize {
        self.problems.len() + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn problem(id: &str, line: usize) -> Problem {
        Problem { id: id.into(), question: "q".into(), key: None, extra: vec![], line }
    }

    #[test]
    fn duplicate_ids_are_renamed_past_ids_the_file_already_has() {
        let limits = Limits::default();
        let mut g = Gather::new(Path::new("q.md"), &limits);
        for (id, line) in [("1", 1), ("1-2", 2), ("1", 3), ("1", 4)] {
            g.problem(problem(id, line)).unwrap();
        }
        let ids: Vec<&str> = g.problems.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(ids, ["1", "1-2", "1-3", "1-4"]);
        assert_eq!(g.warnings[0].params["first_line"], "1");
    }

    #[test]
    fn the_problem_cap_stops_the_read_and_warnings_past_the_first_hundred_are_counted() {
        let limits = Limits { max_problems: 3, ..Limits::default() };
        let mut g = Gather::new(Path::new("q.md"), &limits);
        for line in 0..3 {
            g.problem(problem("same", line)).unwrap();
        }
        let e = g.problem(problem("x", 9)).unwrap_err();
        assert_eq!(e.to_string(), "q.md: more than 3 problems, the limit for one file");
        for line in 0..250 {
            g.warn(Warning::new(line, WarningCode::EmptyEntry, &[]));
        }
        assert_eq!((g.warnings.len(), g.more_warnings), (WARNINGS_KEPT, 152));
    }
}
