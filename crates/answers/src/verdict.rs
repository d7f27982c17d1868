//! What the samples of one problem say about its key: their answers grouped into equivalence
//! classes, the majority, the agreement, and a verdict.

use crate::equivalence::equivalent;
use serde::{Deserialize, Serialize};

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The majority answer equals the key.
    Confirmed,
    /// A clear majority disagrees with the key: the key or the question may be wrong.
    Disputed,
    /// No clear majority, or no answer found.
    Unsure,
    /// No key was given: the majority answer is the result.
    Answered,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Confirmed => "confirmed",
            Verdict::Disputed => "disputed",
            Verdict::Unsure => "unsure",
            Verdict::Answered => "answered",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Class {
    /// The first answer of the class, as written.
    pub answer: String,
    /// Indices of the samples in this class.
    pub samples: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judgement {
    pub classes: Vec<Class>,
    pub majority: Option<String>,
    /// Share of all samples in the majority class (0 to 1).
    pub agreement: f64,
    pub verdict: Verdict,
}

/// Groups the extracted answers (one per sample; `None` where none was found) and judges them
/// against the key.
pub fn judge(key: Option<&str>, answers: &[Option<String>]) -> Judgement {
    let mut classes: Vec<Class> = Vec::new();
    for (i, a) in answers.iter().enumerate() {
        let Some(a) = a else { continue };
        match classes.iter_mut().find(|c| equivalent(&c.answer, a)) {
            Some(c) => c.samples.push(i),
            None => classes.push(Class { answer: a.clone(), samples: vec![i] }),
        }
    }
    // Largest first; ties keep the order answers first appeared.
    classes.sort_by_key(|c| std::cmp::Reverse(c.samples.len()));
    let n = answers.len().max(1);
    let top = classes.first().map_or(0, |c| c.samples.len());
    let runner_up = classes.get(1).map_or(0, |c| c.samples.len());
    // A clear majority: at least half of all samples, and more than any other answer.
    let clear = top > 0 && top * 2 >= n && top > runner_up;
    let majority = if clear { classes.first().map(|c| c.answer.clone()) } else { None };
    let agreement = top as f64 / n as f64;
    let verdict = match (key, &majority) {
        (None, Some(_)) => Verdict::Answered,
        (None, None) => Verdict::Unsure,
        (Some(_), None) => Verdict::Unsure,
        (Some(k), Some(m)) => {
            if equivalent(k, m) {
                Verdict::Confirmed
            } else {
                Verdict::Disputed
            }
        }
    };
    Judgement { classes, majority, agreement, verdict }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<Option<String>> {
        v.iter().map(|x| if x.is_empty() { None } else { Some(x.to_string()) }).collect()
    }

    #[test]
    fn confirmed_when_the_majority_matches_the_key() {
        let j = judge(Some("0.5"), &s(&["1/2", "\\frac{1}{2}", "0.5", "3"]));
        assert_eq!(j.verdict, Verdict::Confirmed);
        assert_eq!(j.agreement, 0.75);
        assert_eq!(j.classes.len(), 2);
    }

    #[test]
    fn disputed_when_a_clear_majority_disagrees() {
        let j = judge(Some("18"), &s(&["20", "20", "20", "18"]));
        assert_eq!(j.verdict, Verdict::Disputed);
        assert_eq!(j.majority.as_deref(), Some("20"));
    }

    #[test]
    fn unsure_on_a_split_or_no_answers() {
        assert_eq!(judge(Some("1"), &s(&["1", "1", "2", "2"])).verdict, Verdict::Unsure);
        assert_eq!(judge(Some("1"), &s(&["", "", "", "1"])).verdict, Verdict::Unsure);
        assert_eq!(judge(Some("1"), &s(&["", "", "", ""])).verdict, Verdict::Unsure);
    }

    #[test]
    fn answered_without_a_key() {
        let j = judge(None, &s(&["7"]));
        assert_eq!((j.verdict, j.majority.as_deref(), j.agreement), (Verdict::Answered, Some("7"), 1.0));
    }
}
