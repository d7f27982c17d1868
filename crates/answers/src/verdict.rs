//! What the samples of one problem say about its key: their answers grouped into equivalence
//! classes, the majority, the agreement, and a verdict.

use crate::equivalence::{decided, equivalent};
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

/// Why a problem is unsure, so a teacher knows what would settle it.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnsureReason {
    /// No sample gave a final answer.
    NoAnswer,
    /// Fewer than half the samples gave a final answer (most were cut off at the length limit).
    MostCutOff,
    /// No answer has a clear majority.
    Split,
    /// Most samples disagree with the key, but some reproduced it: not clear evidence against it.
    KeyReproduced,
    /// The answers that agree against the key are too few to dispute it (samples were cut off).
    TooFewAgree,
    /// Comparing the key with the answer took too long to decide.
    TooSlowToCompare,
}

impl UnsureReason {
    pub fn describe(self) -> &'static str {
        match self {
            UnsureReason::NoAnswer => "no sample gave a final answer",
            UnsureReason::MostCutOff => "most samples were cut off before a final answer",
            UnsureReason::Split => "the samples' answers are split",
            UnsureReason::KeyReproduced => "most samples disagree with the key, but some reproduced it",
            UnsureReason::TooFewAgree => "too few samples agree on another answer to dispute the key",
            UnsureReason::TooSlowToCompare => "comparing the key with the answer took too long",
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
    /// Set when the verdict is unsure.
    pub reason: Option<UnsureReason>,
}

/// Samples that must agree on another answer before a key is disputed (or all of them, in a job
/// that asked for fewer). Disputing a teacher's key costs more than confirming it (a wrong
/// dispute sends them to re-check a correct answer), and two samples agreeing on the same wrong
/// answer is common for a small model.
pub const VOTES_TO_DISPUTE: usize = 3;

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
    let (verdict, reason) = decide(key, &classes, answers.len());
    let top = classes.first().map_or(0, |c| c.samples.len());
    let agreement = top as f64 / answers.len().max(1) as f64;
    let majority = majority_of(&classes).map(|c| c.answer.clone());
    Judgement { classes, majority, agreement, verdict, reason }
}

/// Samples after which a spread vote (no answer holding half the votes) stops drawing: more
/// samples rarely settle a problem the model answers a different way each time. (On 40 GSM8K
/// problems with the 1.5B test model, every problem that drew past four samples ended unsure
/// anyway, and those draws were a quarter of the job's tokens.)
pub const SPREAD_AFTER: usize = 4;

/// How many samples a problem should have, given the answers of those finished so far, when it
/// may use between `min` and `max`: `min` first; then two more at a time, up to the budget, while
/// the verdict is unsure (a split vote, a key some samples reproduced) or is a dispute resting on
/// fewer than [`VOTES_TO_DISPUTE`] samples. Samples that agree with the key stop it early. So do
/// samples cut off before they answered: they need more tokens, not more samples, and drawing
/// again would spend the same tokens to be cut off again. And so does a vote still spread after
/// [`SPREAD_AFTER`] samples.
pub fn samples_wanted(key: Option<&str>, answers: &[Option<String>], min: usize, max: usize) -> usize {
    let max = max.max(min);
    if answers.len() < min {
        return min;
    }
    if answers.len() >= max {
        return answers.len();
    }
    let judgement = judge(key, answers);
    let votes: usize = judgement.classes.iter().map(|c| c.samples.len()).sum();
    let top = judgement.classes.first().map_or(0, |c| c.samples.len());
    if answers.len() >= SPREAD_AFTER && top * 2 < votes {
        return answers.len();
    }
    let settled = match (judgement.verdict, judgement.reason) {
        (Verdict::Unsure, Some(UnsureReason::NoAnswer | UnsureReason::MostCutOff)) => true,
        (Verdict::Unsure, _) => false,
        (Verdict::Disputed, _) => judgement.classes[0].samples.len() >= VOTES_TO_DISPUTE,
        (Verdict::Confirmed | Verdict::Answered, _) => true,
    };
    if settled {
        answers.len()
    } else {
        (answers.len() + 2).min(max)
    }
}

/// The answer held by at least half the votes and by more than any other answer.
fn majority_of(classes: &[Class]) -> Option<&Class> {
    let votes: usize = classes.iter().map(|c| c.samples.len()).sum();
    let top = classes.first()?.samples.len();
    let runner_up = classes.get(1).map_or(0, |c| c.samples.len());
    (top * 2 >= votes && top > runner_up).then(|| &classes[0])
}

/// The rule, over the samples that gave an answer (a sample cut off without one is no vote):
/// - **Confirmed**: the key's answer has a clear majority (at least half the votes, more than any
///   other answer).
/// - **Disputed**, only on clear evidence: one other answer holds at least two thirds of the
///   votes and more than twice as many as reproduced the key, and at least [`VOTES_TO_DISPUTE`]
///   samples (or all of them) hold it. Two of four agreeing, three against two that match the
///   key, or two answers agreeing where the other two were cut off, is not enough.
/// - **Unsure** otherwise, with the reason; also when fewer than half the samples answered.
/// - **Answered**: no key, and an answer has a clear majority.
fn decide(key: Option<&str>, classes: &[Class], samples: usize) -> (Verdict, Option<UnsureReason>) {
    let votes: usize = classes.iter().map(|c| c.samples.len()).sum();
    if votes == 0 {
        return (Verdict::Unsure, Some(UnsureReason::NoAnswer));
    }
    if votes * 2 < samples {
        return (Verdict::Unsure, Some(UnsureReason::MostCutOff));
    }
    let top = classes[0].samples.len();
    let clear = majority_of(classes).is_some();
    let Some(key) = key else {
        return if clear { (Verdict::Answered, None) } else { (Verdict::Unsure, Some(UnsureReason::Split)) };
    };
    let mut undecided = false;
    let key_votes = classes
        .iter()
        .find(|c| match decided(key, &c.answer) {
            Some(equal) => equal,
            None => {
                undecided = true;
                false
            }
        })
        .map_or(0, |c| c.samples.len());
    if clear && key_votes == top {
        return (Verdict::Confirmed, None);
    }
    // An answer whose comparison with the key ran out of time may be the key's: no dispute.
    if undecided {
        return (Verdict::Unsure, Some(UnsureReason::TooSlowToCompare));
    }
    if clear && top * 3 >= votes * 2 && top > 2 * key_votes {
        if top >= VOTES_TO_DISPUTE.min(samples) {
            return (Verdict::Disputed, None);
        }
        return (Verdict::Unsure, Some(UnsureReason::TooFewAgree));
    }
    let reason = if key_votes > 0 { UnsureReason::KeyReproduced } else { UnsureReason::Split };
    (Verdict::Unsure, Some(reason))
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
        let why = |key, v: &[&str]| {
            let j = judge(Some(key), &s(v));
            assert_eq!(j.verdict == Verdict::Unsure, j.reason.is_some(), "{j:?}");
            j.reason
        };
        assert_eq!(why("1", &["1", "1", "2", "2"]), Some(UnsureReason::KeyReproduced));
        assert_eq!(why("1", &["", "", "", "1"]), Some(UnsureReason::MostCutOff));
        assert_eq!(why("1", &["", "", "", ""]), Some(UnsureReason::NoAnswer));
        assert_eq!(why("9", &["1", "1", "2", "3"]), Some(UnsureReason::Split));
    }

    #[test]
    fn disputed_only_on_clear_evidence() {
        let verdict = |key, v: &[&str]| judge(Some(key), &s(v)).verdict;
        // Two of four agreeing is a split, whether or not a sample reproduced the key.
        assert_eq!(verdict("5", &["7", "7", "5", "6"]), Verdict::Unsure);
        assert_eq!(verdict("5", &["7", "7", "6", "8"]), Verdict::Unsure);
        // Three against two that match the key is not clear either.
        assert_eq!(verdict("5", &["7", "7", "7", "5", "5"]), Verdict::Unsure);
        // Three of four against, or all of them, is.
        assert_eq!(verdict("5", &["7", "7", "7", "6"]), Verdict::Disputed);
        assert_eq!(verdict("5", &["7", "7", "7", "7"]), Verdict::Disputed);
        // A cut-off sample is no vote: three answers that all disagree are clear.
        assert_eq!(verdict("5", &["7", "7", "7", ""]), Verdict::Disputed);
        // But two that agree, where the other two were cut off, are too few.
        assert_eq!(judge(Some("5"), &s(&["7", "", "", "7"])).reason, Some(UnsureReason::TooFewAgree));
        assert_eq!(judge(Some("5"), &s(&["", "7"])).reason, Some(UnsureReason::TooFewAgree));
        // A job that asked for two samples disputes when both agree.
        assert_eq!(verdict("5", &["7", "7"]), Verdict::Disputed);
        // Half for the key and more than any other answer confirms it.
        assert_eq!(verdict("5", &["5", "5", "7", "6"]), Verdict::Confirmed);
        // One sample is all the evidence a one-sample job asked for.
        assert_eq!(verdict("5", &["7"]), Verdict::Disputed);
        assert_eq!(verdict("5", &["5"]), Verdict::Confirmed);
    }

    #[test]
    fn adaptive_samples_stop_when_the_vote_is_clear_and_draw_more_while_it_is_split() {
        let wanted = |key, v: &[&str]| samples_wanted(Some(key), &s(v), 2, 8);
        assert_eq!(wanted("5", &[]), 2);
        assert_eq!(wanted("5", &["5"]), 2);
        // Two that agree with the key settle it.
        assert_eq!(wanted("5", &["5", "5"]), 2);
        // Two that agree against it are not yet enough to dispute it: a third must agree.
        assert_eq!(wanted("5", &["7", "7"]), 4);
        assert_eq!(wanted("5", &["7", "7", "7", "7"]), 4);
        assert_eq!(wanted("5", &["7", "7", "7", "6"]), 4);
        // A close split draws two more, and more again while it stays close, up to the budget.
        assert_eq!(wanted("5", &["5", "7"]), 4);
        assert_eq!(wanted("5", &["5", "7", "7", "5"]), 6);
        assert_eq!(wanted("5", &["5", "7", "7", "5", "6", "7"]), 8);
        // Five of six against the key, once reproduced, is clear.
        assert_eq!(wanted("5", &["5", "7", "7", "7", "7", "7"]), 6);
        // A spread vote (no answer with half the votes) stops after four samples.
        assert_eq!(wanted("5", &["5", "7", "6", "8"]), 4);
        assert_eq!(wanted("5", &["5", "7", "7", "5", "6", "8"]), 6);
        assert_eq!(wanted("5", &["5", "7", "6"]), 5);
        // Samples cut off before they answered need more tokens, not more samples.
        assert_eq!(wanted("5", &["", ""]), 2);
        assert_eq!(wanted("5", &["", "", "", "7"]), 4);
        // One cut off of two leaves one vote: enough to confirm, not to dispute.
        assert_eq!(wanted("5", &["", "5"]), 2);
        assert_eq!(wanted("5", &["", "7"]), 4);
        // A budget of two is a fixed two-sample job.
        assert_eq!(samples_wanted(Some("5"), &s(&["7", "7"]), 2, 2), 2);
        assert_eq!(samples_wanted(None, &s(&["1", "2"]), 2, 3), 3);
    }

    #[test]
    fn answered_without_a_key() {
        let j = judge(None, &s(&["7"]));
        assert_eq!((j.verdict, j.majority.as_deref(), j.agreement), (Verdict::Answered, Some("7"), 1.0));
    }
}
