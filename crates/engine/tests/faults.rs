//! A panic inside the engine ends only the requests it hit, with an error that says so, and the
//! engine serves the next request as if nothing happened. The panics are planted through the
//! `fault-inject` feature (src/engine/fault.rs), which this crate's tests turn on.

use ponder_engine::{Engine, EngineConfig, Event, FinishReason, GenerateRequest, LoadOptions, Message, SamplingParams};

fn engine(faults: &str) -> Engine {
    ponder_testkit::threads();
    // Read once, when the engine starts; this file holds a single test, so nothing races on it.
    std::env::set_var("PONDER_FAULT", faults);
    let loaded =
        ponder_engine::load(&ponder_testkit::small_model(), &LoadOptions { max_context: Some(2048), ..Default::default() })
            .unwrap();
    let e = Engine::start(loaded, EngineConfig::default()).unwrap();
    std::env::remove_var("PONDER_FAULT");
    e
}

fn greedy(question: &str) -> GenerateRequest {
    GenerateRequest {
        sampling: SamplingParams::greedy(),
        max_tokens: 16,
        detect_loops: false,
        ..GenerateRequest::chat(vec![Message::user(question)])
    }
}

/// Text, finish reason and error of a one-sample request.
fn run(e: &Engine, question: &str) -> (String, FinishReason, Option<String>) {
    let mut text = String::new();
    for ev in e.submit(greedy(question)).unwrap().collect() {
        match ev {
            Event::Delta { text: t, .. } => text.push_str(&t),
            Event::Finished { reason, error, .. } => return (text, reason, error),
            Event::Started { .. } => {}
        }
    }
    panic!("the request ended without a finish event");
}

#[test]
fn a_panic_ends_its_requests_with_an_error_and_the_engine_goes_on() {
    // In a model step: the request in that step fails, the next one is served whole.
    let e = engine("step@1");
    let (_, reason, error) = run(&e, "What is 2 + 2?");
    assert_eq!(reason, FinishReason::Error);
    let error = error.unwrap();
    assert!(error.contains("internal error") && error.contains("fault injected in step 1"), "{error}");
    let after_step = run(&e, "Name a prime number.");
    assert_eq!((after_step.1, after_step.2.as_deref()), (FinishReason::Length, None));
    assert!(!after_step.0.is_empty());
    drop(e);

    // Between steps, where the scheduler's state is in doubt: every request in the engine ends
    // with an error, the worker starts over, and its output is the same as before.
    let e = engine("loop@1");
    let (_, reason, error) = run(&e, "What is 2 + 2?");
    assert_eq!(reason, FinishReason::Error);
    assert!(error.as_deref().unwrap_or_default().contains("restarted"), "{error:?}");
    let after_loop = run(&e, "Name a prime number.");
    assert_eq!(after_loop, after_step, "the engine's output changed after it restarted");
}
