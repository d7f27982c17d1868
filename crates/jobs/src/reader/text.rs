//! Questions in plain text or Markdown: numbered items (`1.`, `1)`, `(1)`, `（1）`, `1、`),
//! else blocks separated by blank lines, else one question per line. A line starting with
//! `Answer:` / `答案：` inside an item is that item's key.

use super::gather::Gather;
use super::problem::{Problem, ReadError};

fn item_number(line: &str) -> Option<(String, &str)> {
    let t = line.trim_start();
    let (open, rest) = match t.chars().next()? {
        '(' => (true, &t[1..]),
        '（' => (true, &t['（'.len_utf8()..]),
        _ => (false, t),
    };
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    if digits.is_empty() || digits.len() > 6 {
        return None;
    }
    let after = &rest[digits.len()..];
    let mut chars = after.chars();
    let close = chars.next()?;
    let ok = if open { close == ')' || close == '）' } else { matches!(close, '.' | ')' | '）' | '、') };
    if !ok {
        return None;
    }
    let body = &after[close.len_utf8()..];
    // "1.5 is a number" is not an item; "1. What" is.
    if close == '.' && body.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        return None;
    }
    Some((digits, body.trim()))
}

fn answer_line(line: &str) -> Option<&str> {
    let t = line.trim();
    for p in ["Answer:", "answer:", "ANSWER:", "Key:", "答案：", "答案:", "Answer：", "**Answer:**"] {
        if let Some(rest) = t.strip_prefix(p) {
            return Some(rest.trim());
        }
    }
    None
}

struct Item {
    id: Option<String>,
    line: usize,
    text: Vec<String>,
    key: Option<String>,
}

impl Item {
    fn into_problem(self, index: usize) -> Option<Problem> {
        let question = self.text.join("\n").trim().to_string();
        if question.is_empty() {
            return None;
        }
        Some(Problem {
            id: self.id.unwrap_or_else(|| index.to_string()),
            question,
            key: self.key.filter(|k| !k.is_empty()),
            extra: vec![],
            line: self.line,
        })
    }
}

pub(crate) fn problems(text: &str, markdown: bool, gather: &mut Gather) -> Result<(), ReadError> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        // Markdown headings and rules are titles, not questions.
        .filter(|(_, l)| !(markdown && (l.trim_start().starts_with('#') || l.trim() == "---")))
        .collect();
    let numbered = lines.iter().filter(|(_, l)| item_number(l).is_some()).count();
    let mut items: Vec<Item> = Vec::new();
    if numbered >= 2 {
        for (n, l) in &lines {
            if let Some((num, body)) = item_number(l) {
                items.push(Item { id: Some(num), line: *n, text: vec![body.to_string()], key: None });
            } else if let Some(item) = items.last_mut() {
                match answer_line(l) {
                    Some(k) => item.key = Some(k.to_string()),
                    None => item.text.push(l.to_string()),
                }
            }
        }
    } else {
        // Blocks when blank lines separate groups and at least half the groups span several
        // lines; otherwise a stray blank line in a one-per-line file changes nothing.
        let groups: Vec<usize> = lines.split(|(_, l)| l.trim().is_empty()).map(|g| g.len()).filter(|n| *n > 0).collect();
        // A group whose every line ends like a question ("?", "？") is several questions.
        let all_questions = lines.iter().filter(|(_, l)| !l.trim().is_empty()).all(|(_, l)| l.trim_end().ends_with(['?', '？']));
        let blocks = !all_questions && groups.len() >= 2 && groups.iter().filter(|n| **n > 1).count() * 2 >= groups.len();
        let mut current: Option<Item> = None;
        for (n, l) in &lines {
            if l.trim().is_empty() {
                if blocks {
                    items.extend(current.take());
                }
                continue;
            }
            if let Some(k) = answer_line(l) {
                if let Some(item) = current.as_mut().or(items.last_mut()) {
                    item.key = Some(k.to_string());
                }
                continue;
            }
            if blocks {
                current.get_or_insert_with(|| Item { id: None, line: *n, text: vec![], key: None }).text.push(l.to_string());
            } else {
                items.extend(current.take());
                current = Some(Item { id: None, line: *n, text: vec![l.to_string()], key: None });
            }
        }
        items.extend(current);
    }
    for (i, item) in items.into_iter().enumerate() {
        if let Some(p) = item.into_problem(i + 1) {
            gather.problem(p)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reader::Limits;
    use std::path::Path;

    fn problems(text: &str, markdown: bool) -> Vec<Problem> {
        let limits = Limits::default();
        let mut gather = Gather::new(Path::new("q.txt"), &limits);
        super::problems(text, markdown, &mut gather).unwrap();
        gather.problems
    }

    #[test]
    fn numbered_items_with_keys_and_continuations() {
        let p = problems("Quiz\n1. What is 2+2?\nAnswer: 4\n2) Solve x+1=3\nfor x.\n（3）三加五等于几？\n答案：8\n", false);
        assert_eq!(p.len(), 3);
        assert_eq!((p[0].id.as_str(), p[0].key.as_deref()), ("1", Some("4")));
        assert_eq!(p[1].question, "Solve x+1=3\nfor x.");
        assert_eq!((p[2].question.as_str(), p[2].key.as_deref(), p[2].line), ("三加五等于几？", Some("8"), 6));
    }

    #[test]
    fn blocks_and_lines() {
        let p = problems("A long question\nover two lines\n\nSecond one\n", false);
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].question, "A long question\nover two lines");
        let p = problems("one?\ntwo?\nthree?\n\nfour?\n", false);
        assert_eq!(p.iter().map(|p| p.question.as_str()).collect::<Vec<_>>(), ["one?", "two?", "three?", "four?"]);
        assert_eq!(p[3].line, 5);
    }

    #[test]
    fn markdown_headings_are_not_questions() {
        let p = problems("# Homework\n\n1. First\n2. Second\n", true);
        assert_eq!(p.len(), 2);
    }
}
