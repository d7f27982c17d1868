//! Finding the final answer in text: a model's output, or a key written as a worked solution.

/// Where the next `\boxed` or `\fbox` starts, and its length. One pass over the text: looking
/// for each keyword separately would scan to the end for the one that is absent, once per box.
fn next_box(s: &str, from: usize) -> Option<(usize, usize)> {
    let mut at = from;
    while let Some(i) = s[at..].find('\\') {
        let start = at + i;
        if let Some(k) = ["\\boxed", "\\fbox"].iter().find(|k| s[start..].starts_with(**k)) {
            return Some((start, k.len()));
        }
        at = start + 1;
    }
    None
}

/// Contents of every `\boxed{…}` / `\fbox{…}` (nested braces allowed), with their byte spans.
pub fn boxed_all(s: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some((start, keyword)) = next_box(s, from) {
        let mut i = start + keyword;
        let bytes = s.as_bytes();
        while i < s.len() && bytes[i] == b' ' {
            i += 1;
        }
        if i < s.len() && bytes[i] == b'{' {
            let mut depth = 0;
            let open = i;
            let mut end = None;
            for (j, c) in s[open..].char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            end = Some(open + j);
                            break;
                        }
                    }
                    _ => {}
                }
            }
            match end {
                Some(e) => {
                    out.push((start, e + 1, s[open + 1..e].to_string()));
                    from = e + 1;
                }
                None => break,
            }
        } else {
            // `\boxed 5`: up to the next space or `$`
            let rest = &s[i..];
            let len = rest.find(|c: char| c.is_whitespace() || c == '$').unwrap_or(rest.len());
            if len > 0 {
                out.push((start, i + len, rest[..len].to_string()));
            }
            from = i + len.max(1);
        }
        if from >= s.len() {
            break;
        }
    }
    out
}

/// The last boxed answer. Boxes written side by side (`\boxed{1}\boxed{2}`) form one answer.
pub fn last_boxed(s: &str) -> Option<String> {
    last_joined(s, &boxed_all(s))
}

/// The contents of the last span, joined with those before it that only connectors separate
/// (`\boxed{3} and \boxed{7}`, `$12$, $13$`): one answer with several values, as `3, 7`.
fn last_joined(text: &str, spans: &[(usize, usize, String)]) -> Option<String> {
    let (last_start, _, last) = spans.last()?;
    let mut start = *last_start;
    let mut parts = vec![last.trim()];
    for (s0, e0, c) in spans.iter().rev().skip(1) {
        if !only_connectors(&text[*e0..start]) {
            break;
        }
        parts.push(c.trim());
        start = *s0;
    }
    parts.reverse();
    Some(parts.join(", "))
}

/// Whether the text between two boxes only joins them (`\boxed{3} and \boxed{7}`,
/// `\boxed{1}, \quad \boxed{2}`), so that together they are one answer with several values.
fn only_connectors(between: &str) -> bool {
    let mut rest = between.to_lowercase();
    for filler in ["\\quad", "\\qquad", "\\text", "\\mbox", "\\(", "\\)", "\\,", "\\;"] {
        rest = rest.replace(filler, " ");
    }
    rest.split(|c: char| c.is_whitespace() || matches!(c, ',' | '$' | '&' | ';' | '{' | '}' | '、' | '，' | '；'))
        .all(|w| matches!(w, "" | "and" | "or" | "和" | "或" | "及"))
}

/// LaTeX maths segments in order: `$$…$$`, `\[…\]`, `\(…\)`, and `$…$` on one line.
pub fn math_segments(s: &str) -> Vec<String> {
    math_spans(s).into_iter().map(|(_, _, m)| m).collect()
}

/// The maths segments with where each starts and ends (delimiters included).
fn math_spans(s: &str) -> Vec<(usize, usize, String)> {
    let mut out = Vec::new();
    let mut i = 0;
    let b = s.as_bytes();
    while i < s.len() {
        let rest = &s[i..];
        let (open, close, multiline) = if rest.starts_with("$$") {
            ("$$", "$$", true)
        } else if rest.starts_with("\\[") {
            ("\\[", "\\]", true)
        } else if rest.starts_with("\\(") {
            ("\\(", "\\)", false)
        } else if b[i] == b'$' && (i == 0 || b[i - 1] != b'\\') {
            ("$", "$", false)
        } else {
            i += rest.chars().next().map_or(1, |c| c.len_utf8());
            continue;
        };
        let body_start = i + open.len();
        let mut j = body_start;
        let mut found = None;
        while j < s.len() {
            if s[j..].starts_with(close) && !(close == "$" && j > 0 && b[j - 1] == b'\\') {
                found = Some(j);
                break;
            }
            j += s[j..].chars().next().map_or(1, |c| c.len_utf8());
        }
        match found {
            Some(j) => {
                let body = &s[body_start..j];
                if multiline || !body.contains('\n') {
                    out.push((i, j + close.len(), body.to_string()));
                }
                i = j + close.len();
            }
            None => i = body_start,
        }
    }
    out
}

const ANSWER_PHRASES: &[&str] = &[
    "final answer is",
    "final answer:",
    "the answer is",
    "answer is",
    "answer:",
    "答案是",
    "答案为",
    "答案：",
    "答案:",
    "所以答案",
    "最终答案",
];

/// The text after the last "final answer is" (or the Chinese 答案是/答案为), up to the end of
/// its sentence.
pub fn after_answer_phrase(s: &str) -> Option<String> {
    answer_phrase(s).map(|(_, a)| a)
}

/// Where the last answer phrase starts, and what it states. "The largest $n$ is 34" states 34:
/// after a phrase, what follows the sentence's last "is" is the value.
fn answer_phrase(s: &str) -> Option<(usize, String)> {
    let lower = s.to_lowercase();
    let (pos, len) = ANSWER_PHRASES.iter().filter_map(|p| lower.rfind(p).map(|i| (i, p.len()))).max_by_key(|(i, _)| *i)?;
    // `lower` and `s` have the same byte offsets for ASCII phrases; the Chinese ones have no case.
    let tail = s.get(pos + len..)?.trim_start_matches([' ', ':', '：', '*']);
    let line = tail.lines().next().unwrap_or("").trim();
    // The sentence ends at ". " (a decimal point has no space after it) or a full stop.
    let line = line.split(". ").next().unwrap_or(line).split('。').next().unwrap_or(line);
    let line = line.trim_end_matches(['.', '。', '!']);
    let line = [" is ", " are ", " equals ", " was "]
        .iter()
        .filter_map(|c| line.rfind(c).map(|i| &line[i + c.len()..]))
        .min_by_key(|rest| rest.len())
        .filter(|rest| !rest.trim().is_empty())
        .unwrap_or(line)
        .trim();
    if line.is_empty() {
        None
    } else {
        Some((pos, line.to_string()))
    }
}

/// How an answer was found in a text, for explanations.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Found {
    /// In `\boxed{…}` (several boxes joined only by "and" or commas are one answer).
    Boxed,
    /// After "the answer is", "答案是", ….
    Phrase,
    /// The last maths segment (`$…$`, `\(…\)`).
    LastMath,
    /// The whole text, which reads as maths.
    Whole,
    /// The last number in the text.
    LastNumber,
}

impl Found {
    pub fn describe(self) -> &'static str {
        match self {
            Found::Boxed => "the boxed answer",
            Found::Phrase => "the text after an answer phrase",
            Found::LastMath => "the last maths segment",
            Found::Whole => "the whole text",
            Found::LastNumber => "the last number",
        }
    }
}

/// The answer a text states as its answer: boxed, or after an answer phrase. An answer phrase
/// after the last box wins ("… \boxed{200} … Final answer: 10,455"): it is the writer's last word.
pub fn stated_answer(s: &str) -> Option<(String, Found)> {
    let boxes = boxed_all(s);
    match (boxes.last(), answer_phrase(s)) {
        (Some(&(_, end, _)), Some((at, a))) if at >= end => Some((a, Found::Phrase)),
        (Some(_), _) => last_boxed(s).map(|b| (b.trim().to_string(), Found::Boxed)),
        (None, Some((_, a))) => Some((a, Found::Phrase)),
        (None, None) => None,
    }
}

/// The maths of an answer phrase: its last maths segment, or several joined only by "and" or
/// commas (`$12$ and $13$`); `None` when the phrase has no maths segment.
pub fn phrase_maths(phrase: &str) -> Option<String> {
    let spans = math_spans(phrase);
    spans.last().filter(|(_, _, m)| !m.trim().is_empty())?;
    last_joined(phrase, &spans)
}

/// The last number in the text (with sign, separators, decimals and simple fractions).
pub fn last_number(s: &str) -> Option<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut best: Option<String> = None;
    let mut i = 0;
    while i < chars.len() {
        if chars[i].is_ascii_digit() || (chars[i] == '.' && chars.get(i + 1).is_some_and(|c| c.is_ascii_digit())) {
            let start = i;
            let mut j = i;
            while j < chars.len() {
                let c = chars[j];
                let next_digit = chars.get(j + 1).is_some_and(|d| d.is_ascii_digit());
                if c.is_ascii_digit() || ((c == '.' || c == ',' || c == '/') && next_digit) {
                    j += 1;
                } else {
                    break;
                }
            }
            let neg = start > 0 && chars[start - 1] == '-';
            let mut num: String = chars[start..j].iter().collect();
            if neg {
                num.insert(0, '-');
            }
            best = Some(num);
            i = j;
        } else {
            i += 1;
        }
    }
    best
}

/// An answer the model stated as its answer (boxed, or after an answer phrase), if any. A
/// reply cut off at the length limit counts only with one of these: its last number is
/// wherever the text happened to stop.
pub fn explicit_answer(answer: &str, thinking: &str) -> Option<String> {
    let (a, how) = [answer, thinking].into_iter().find_map(stated_answer)?;
    Some(match how {
        Found::Phrase => phrase_maths(&a).unwrap_or(a),
        _ => a,
    })
}

/// The final answer of a model's output: boxed, then an answer phrase, then the last number;
/// the answer part is searched before the thinking.
pub fn final_answer(answer: &str, thinking: &str) -> Option<String> {
    if let Some(a) = explicit_answer(answer, thinking) {
        return Some(a);
    }
    for text in [answer, thinking] {
        if let Some(n) = last_number(text) {
            return Some(n);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_off_reply_has_only_an_explicit_answer() {
        assert_eq!(explicit_answer("First, 2 + 2 = 4, then we multiply by 3", ""), None);
        assert_eq!(final_answer("First, 2 + 2 = 4, then we multiply by 3", "").as_deref(), Some("3"));
        assert_eq!(explicit_answer("so \\boxed{12} and then", "").as_deref(), Some("12"));
        assert_eq!(explicit_answer("", "The answer is 7. Let me check").as_deref(), Some("7"));
    }

    #[test]
    fn an_answer_phrase_after_the_last_box_is_the_last_word() {
        let s = "first \\boxed{200}, then \\boxed{255}. Final answer: the total is $10,455$.";
        assert_eq!(stated_answer(s), Some(("$10,455$".to_string(), Found::Phrase)));
        assert_eq!(explicit_answer(s, ""), Some("10,455".to_string()));
        // Boxes joined by words are one answer; boxes with other text between are not.
        assert_eq!(last_boxed("$\\boxed{3}$ and $\\boxed{7}$"), Some("3, 7".to_string()));
        assert_eq!(last_boxed("(a) \\boxed{3} (b) \\boxed{7}"), Some("7".to_string()));
        assert_eq!(explicit_answer("The answer is: the largest $n$ is 34.", ""), Some("34".to_string()));
    }

    #[test]
    fn nested_boxes_and_the_last_one() {
        assert_eq!(last_boxed("a \\boxed{1} then \\boxed{\\frac{1}{\\sqrt{2}}}.").as_deref(), Some("\\frac{1}{\\sqrt{2}}"));
        assert_eq!(last_boxed("$\\boxed{1}\\boxed{2}$").as_deref(), Some("1, 2"));
        assert_eq!(last_boxed("\\fbox{7}").as_deref(), Some("7"));
        assert_eq!(last_boxed("\\boxed 5 apples").as_deref(), Some("5"));
        assert_eq!(last_boxed("\\boxed{unclosed"), None);
    }

    #[test]
    fn answer_phrases_in_english_and_chinese() {
        assert_eq!(final_answer("So the final answer is 42.", "").as_deref(), Some("42"));
        assert_eq!(final_answer("因此，答案是 12。", "").as_deref(), Some("12"));
        assert_eq!(final_answer("所以答案为$\\frac{1}{2}$", "").as_deref(), Some("\\frac{1}{2}"));
    }

    #[test]
    fn answer_part_before_thinking_and_number_fallback() {
        assert_eq!(final_answer("It is 7", "maybe \\boxed{3}").as_deref(), Some("3"));
        assert_eq!(final_answer("She makes $18 every day.", "16 - 3 - 4 = 9").as_deref(), Some("18"));
        assert_eq!(final_answer("", "so -5 it is").as_deref(), Some("-5"));
        assert_eq!(final_answer("no numbers", ""), None);
    }

    #[test]
    fn math_segments_respect_inline_newlines() {
        assert_eq!(math_segments("a $x$ b \\[y\\] c"), vec!["x", "y"]);
        assert!(math_segments("Answer $ \n 9 \n $").is_empty());
        assert_eq!(math_segments("Answer $$ \n 9 \n $$"), vec![" \n 9 \n "]);
    }
}
