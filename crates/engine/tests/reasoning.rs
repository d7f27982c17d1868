//! The thinking path with real weights: a copy of the 0.5B model carrying the DeepSeek-R1 chat
//! template, run with a small thinking budget.

use ponder_engine::{
    Channel, Engine, EngineConfig, Event, FinishReason, GenerateRequest, LoadOptions, Message, Priority, SamplingParams,
};

fn r1_engine() -> Engine {
    ponder_testkit::threads();
    let loaded =
        ponder_engine::load(&ponder_testkit::r1_model(), &LoadOptions { max_context: Some(4096), ..Default::default() }).unwrap();
    assert!(loaded.info.reasoning, "the R1 template marks the model as a reasoning model");
    Engine::start(loaded, EngineConfig::default()).unwrap()
}

#[test]
fn thinking_budget_closes_the_thought_and_the_model_answers() {
    let e = r1_engine();
    let prompt = e.render_prompt(&ponder_engine::Prompt::Chat(vec![Message::user("What is 2 + 3?")])).unwrap();
    assert!(prompt.ends_with("<｜Assistant｜><think>\n"), "{prompt:?}");
    let req = GenerateRequest {
        sampling: SamplingParams::greedy(),
        max_tokens: 120,
        thinking_budget: Some(24),
        detect_loops: false,
        priority: Priority::Interactive,
        ..GenerateRequest::chat(vec![Message::user("What is 2 + 3?")])
    };
    let mut h = e.submit(req).unwrap();
    let (mut thinking, mut answer, mut order) = (String::new(), String::new(), Vec::new());
    let mut usage = None;
    for ev in h.collect() {
        match ev {
            Event::Delta { channel, text, .. } => {
                if order.last() != Some(&channel) {
                    order.push(channel);
                }
                match channel {
                    Channel::Thinking => thinking.push_str(&text),
                    Channel::Answer => answer.push_str(&text),
                }
            }
            Event::Finished { usage: u, reason, .. } => usage = Some((u, reason)),
            Event::Started { .. } => {}
        }
    }
    let (usage, reason) = usage.unwrap();
    assert_eq!(order, vec![Channel::Thinking, Channel::Answer], "thinking streams first, then the answer");
    assert!(!thinking.is_empty() && !answer.is_empty());
    assert!(!thinking.contains("</think>") && !answer.contains("</think>"), "the tag itself is not shown");
    // 24 sampled thinking tokens plus the forced closing tokens.
    assert!((24..=30).contains(&usage.thinking_tokens), "{usage:?}");
    assert!(usage.answer_tokens > 0);
    assert!(matches!(reason, FinishReason::Stop | FinishReason::Length));
    assert!(usage.time_to_first_token.is_some() && usage.tokens_per_second > 0.0);
}

#[test]
fn follow_up_turns_drop_earlier_thinking() {
    let e = r1_engine();
    let msgs = vec![
        Message::user("What is 2 + 3?"),
        Message::assistant("Two plus three... that is five.</think>\n\nThe answer is 5."),
        Message::user("And times 2?"),
    ];
    let p = e.render_prompt(&ponder_engine::Prompt::Chat(msgs)).unwrap();
    assert!(!p.contains("Two plus three"), "{p}");
    assert!(p.contains("<｜Assistant｜>\n\nThe answer is 5.<｜end▁of▁sentence｜><｜User｜>And times 2?"), "{p}");
}

#[test]
fn degenerate_loops_are_cut_with_their_own_reason() {
    let e = r1_engine();
    // Greedy decoding of a repetitive request loops quickly on this small model.
    let req = GenerateRequest {
        sampling: SamplingParams::greedy(),
        max_tokens: 1500,
        detect_loops: true,
        ..GenerateRequest::text("a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a")
    };
    let mut h = e.submit(req).unwrap();
    let reason = h.collect().into_iter().find_map(|ev| match ev {
        Event::Finished { reason, usage, .. } => Some((reason, usage.completion_tokens())),
        _ => None,
    });
    let (reason, n) = reason.unwrap();
    assert_eq!(reason, FinishReason::Repetition, "after {n} tokens");
    assert!(n < 1500);
}
