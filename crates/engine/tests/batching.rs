//! Continuous batching on the real 0.5B model: batching never changes what a sequence says,
//! and the scheduler's join/leave, priorities, cancellation, forking and limits.

use ponder_engine::{
    Channel, DraftModel, Engine, EngineConfig, EngineError, Event, FinishReason, GenerateRequest, KQuantKernels, KvCacheType,
    LoadOptions, Message, Priority, RequestHandle, SamplingParams,
};

fn engine(config: EngineConfig) -> Engine {
    engine_with(ponder_testkit::SMALL, KQuantKernels::default(), config)
}

fn engine_with(model: &str, kernels: KQuantKernels, config: EngineConfig) -> Engine {
    ponder_testkit::threads();
    let loaded = ponder_engine::load(
        &ponder_testkit::model(model),
        &LoadOptions { max_context: Some(4096), kernels, ..Default::default() },
    )
    .unwrap();
    Engine::start(loaded, config).unwrap()
}

fn greedy(question: &str, max_tokens: usize, priority: Priority) -> GenerateRequest {
    GenerateRequest {
        sampling: SamplingParams::greedy(),
        max_tokens,
        priority,
        detect_loops: false,
        ..GenerateRequest::chat(vec![Message::user(question)])
    }
}

/// Answer text and finish event of sample 0.
fn answer(h: &mut RequestHandle) -> (String, FinishReason, usize) {
    let mut text = String::new();
    for ev in h.collect() {
        match ev {
            Event::Delta { text: t, .. } => text.push_str(&t),
            Event::Finished { reason, usage, .. } => return (text, reason, usage.completion_tokens()),
            Event::Started { .. } => {}
        }
    }
    panic!("no finish event");
}

const QUESTIONS: [&str; 8] = [
    "Write a Python function that returns the n-th Fibonacci number, with a docstring and comments.",
    "What is 17 * 23? Show the steps.",
    "List five prime numbers greater than 100.",
    "Explain recursion to a child in a short paragraph.",
    "Write a haiku about autumn leaves.",
    "Translate 'good morning, how are you' into French and Spanish.",
    "Give me three tips for writing clean code, each with a sentence of explanation and an example.",
    "Why is the sky blue?",
];

#[test]
fn batching_does_not_change_greedy_output() {
    check_batch_invariance(&engine(EngineConfig::default()));
}

/// Within each cache type, too: 8-bit blocks are made from each token's own keys and values.
#[test]
fn batching_does_not_change_greedy_output_with_an_8_bit_cache() {
    check_batch_invariance(&engine(EngineConfig { kv_cache: KvCacheType::Q8_0, ..Default::default() }));
}

/// candle's kernels, still selectable (`ponder bench --kernels candle`), keep the guarantee too:
/// a lone row times Q6_K weights is paired with itself (see `decoder::Linear`).
#[test]
fn batching_does_not_change_greedy_output_with_candles_kernels() {
    check_batch_invariance(&engine_with(ponder_testkit::SMALL, KQuantKernels::Candle, EngineConfig::default()));
}

/// The 1.5B model is Q4_K/Q6_K throughout; with candle's kernels a single row takes a different
/// Q6_K path than a batch, with Ponder's kernels every row takes the same arithmetic.
#[test]
fn batching_does_not_change_greedy_output_of_k_quants_with_ponders_kernels() {
    check_batch_invariance(&engine_with(ponder_testkit::LARGE, KQuantKernels::Ponder, EngineConfig::default()));
}

fn check_batch_invariance(e: &Engine) {
    let target = QUESTIONS[0];
    let alone = answer(&mut e.submit(greedy(target, 80, Priority::Batch)).unwrap());
    assert!(alone.2 >= 64, "reference ran {} tokens: {:?}", alone.2, alone);

    // Now the same request among 7 others of different lengths that join while it runs and
    // leave before it ends.
    let mut h = e.submit(greedy(target, 80, Priority::Batch)).unwrap();
    let mut others = Vec::new();
    let mut seen = 0;
    let mut text = String::new();
    let mut finished = None;
    for (i, q) in QUESTIONS[1..].iter().enumerate() {
        // Wait for a few more tokens of the target before the next one joins.
        while seen < 3 * i {
            match h.recv().unwrap() {
                Event::Delta { text: t, .. } => {
                    text.push_str(&t);
                    seen += 1;
                }
                Event::Finished { reason, usage, .. } => finished = Some((reason, usage.completion_tokens())),
                Event::Started { .. } => {}
            }
        }
        others.push(e.submit(greedy(q, 24 + 9 * i, Priority::Batch)).unwrap());
    }
    let (rest, reason, tokens) = answer(&mut h);
    text.push_str(&rest);
    let _ = finished;
    let max_running = others.iter_mut().map(|o| answer(o).2).max().unwrap();
    assert!(max_running > 0);
    assert_eq!(text, alone.0, "batched output differs from the output alone");
    assert_eq!((reason, tokens), (alone.1, alone.2));
}

/// Speculative decoding (a lone sequence feeds n-gram drafts and keeps the rows that match)
/// gives the very text plain decoding gives, on prompts whose answers repeat themselves, so
/// that drafts are taken, and across stop strings, token limits and `min_tokens`.
#[test]
fn speculation_does_not_change_greedy_output() {
    for kind in KvCacheType::ALL {
        let e = engine(EngineConfig { kv_cache: kind, ..Default::default() });
        let requests = [
            greedy("Write the sentence 'The cat sat on the mat.' five times, one per line.", 80, Priority::Interactive),
            greedy("Count from 1 to 40, separated by commas.", 120, Priority::Batch),
            GenerateRequest {
                stop: vec!["17".into()],
                ..greedy("Count from 1 to 40, separated by commas.", 120, Priority::Batch)
            },
            GenerateRequest { min_tokens: 40, ..greedy("Say yes, then repeat it.", 64, Priority::Batch) },
            greedy(QUESTIONS[0], 100, Priority::Batch),
        ];
        let before = e.stats();
        for req in requests {
            let plain = answer(&mut e.submit(GenerateRequest { speculate: false, ..req.clone() }).unwrap());
            let drafted = e.stats().total_drafted;
            let spec = answer(&mut e.submit(req.clone()).unwrap());
            assert_eq!(spec, plain, "{kind}: {:?}", req.prompt);
            assert!(e.stats().total_drafted > drafted || plain.2 < 10, "{kind}: no drafts for {:?}", req.prompt);
        }
        let s = e.stats();
        let (drafted, accepted) = (s.total_drafted - before.total_drafted, s.total_accepted - before.total_accepted);
        eprintln!("{kind}: {accepted} of {drafted} drafted tokens taken");
        assert!(accepted >= 50 && accepted < drafted, "{kind}: {accepted} of {drafted}");
    }
}

/// A draft model's drafts are checked like n-gram ones: greedy output is the plain text. The
/// model drafting for itself makes the same greedy choices, so nearly every draft is taken: a
/// draft cache one position off, or stale after a rejection, would show as misses. The R1 copy
/// of the model renames its special tokens, which does not stop it drafting for the original.
#[test]
fn a_draft_model_does_not_change_greedy_output() {
    let draft = |path: std::path::PathBuf| {
        DraftModel::new(ponder_engine::load(&path, &LoadOptions { max_context: Some(4096), ..Default::default() }).unwrap())
    };
    for (name, drafter) in [("itself", ponder_testkit::small_model()), ("its R1 copy", ponder_testkit::r1_model())] {
        let e = engine(EngineConfig { draft: Some(draft(drafter)), ..Default::default() });
        let requests = [
            greedy("Count from 1 to 40, separated by commas.", 120, Priority::Interactive),
            GenerateRequest { min_tokens: 40, ..greedy("Say yes, then repeat it.", 64, Priority::Batch) },
            greedy(QUESTIONS[0], 100, Priority::Batch),
            greedy(QUESTIONS[1], 100, Priority::Batch),
        ];
        let before = e.stats();
        for req in requests {
            let plain = answer(&mut e.submit(GenerateRequest { speculate: false, ..req.clone() }).unwrap());
            let spec = answer(&mut e.submit(req.clone()).unwrap());
            assert_eq!(spec, plain, "drafting with {name}: {:?}", req.prompt);
        }
        let s = e.stats();
        let (drafted, accepted) = (s.total_drafted - before.total_drafted, s.total_accepted - before.total_accepted);
        eprintln!("drafting with {name}: {accepted} of {drafted} drafted tokens taken");
        assert!(drafted >= 150 && accepted as f64 >= 0.9 * drafted as f64, "drafting with {name}: {accepted} of {drafted}");
    }
}

/// A draft model must number text tokens as the model does; one that does not (here a tiny
/// model with the test model's tokenizer but two ordinary tokens swapped) is refused, saying
/// how many differ, before any request.
#[test]
fn a_draft_model_with_another_vocabulary_is_refused() {
    use candle_core::quantized::gguf_file::Value;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny-qwen2.gguf");
    let swap_two = |md: &mut std::collections::BTreeMap<String, Value>| match md.get_mut("tokenizer.ggml.tokens") {
        Some(Value::Array(tokens)) => tokens.swap(1000, 1001),
        other => panic!("no token list: {other:?}"),
    };
    ponder_testkit::tiny::Tiny::of(ponder_engine::Family::Qwen2).write_gguf(&path, ponder_testkit::tiny::Quant::Q4K_M, swap_two);
    let draft = DraftModel::new(ponder_engine::load(&path, &LoadOptions::default()).unwrap());
    let loaded =
        ponder_engine::load(&ponder_testkit::small_model(), &LoadOptions { max_context: Some(4096), ..Default::default() })
            .unwrap();
    let err = Engine::start(loaded, EngineConfig { draft: Some(draft), ..Default::default() }).err().expect("refused");
    let msg = err.to_string();
    assert!(matches!(err, EngineError::DraftModel(_)) && msg.contains("cannot draft for this model: 2 tokens"), "{msg}");
}

/// With sampling, drafts are taken by the speculative-sampling rule: a seed still gives the
/// same text run after run, and the samples differ from each other as they should.
#[test]
fn speculation_with_sampling_is_reproducible_and_takes_drafts() {
    let e = engine(EngineConfig::default());
    let req = GenerateRequest {
        sampling: SamplingParams { temperature: 0.6, seed: Some(3), ..Default::default() },
        ..greedy("Write the sentence 'The cat sat on the mat.' five times, one per line.", 80, Priority::Interactive)
    };
    let before = e.stats().total_accepted;
    let a = answer(&mut e.submit(req.clone()).unwrap());
    let b = answer(&mut e.submit(req.clone()).unwrap());
    assert_eq!(a, b, "same seed, same text");
    eprintln!("{:?}\n{}", e.stats(), a.0);
    assert!(e.stats().total_accepted > before + 20, "{:?}", e.stats());
    assert!(a.0.matches("The cat sat on the mat").count() >= 4, "{}", a.0);
}

#[test]
fn interactive_pauses_batch_work_and_paused_work_resumes_whole() {
    let e = engine(EngineConfig { max_seqs: 2, ..Default::default() });
    // Reference outputs, one at a time.
    let refs: Vec<_> = QUESTIONS[1..3].iter().map(|q| answer(&mut e.submit(greedy(q, 40, Priority::Batch)).unwrap())).collect();

    let mut batch: Vec<_> = QUESTIONS[1..3].iter().map(|q| e.submit(greedy(q, 40, Priority::Batch)).unwrap()).collect();
    // Both batch sequences are decoding when a chat request arrives with every slot taken.
    let mut texts = [String::new(), String::new()];
    for (i, b) in batch.iter_mut().enumerate() {
        loop {
            if let Event::Delta { text, .. } = b.recv().unwrap() {
                texts[i].push_str(&text);
                break;
            }
        }
    }
    let mut chat = e.submit(greedy("Say hello.", 8, Priority::Interactive)).unwrap();
    let (_, reason, n) = answer(&mut chat);
    assert!(matches!(reason, FinishReason::Stop | FinishReason::Length) && n > 0);
    // The chat ran while a batch sample was paused: the batch work is not finished yet.
    let mut finished = [None, None];
    for (i, b) in batch.iter_mut().enumerate() {
        while let Ok(ev) = b.try_recv() {
            match ev {
                Event::Delta { text, .. } => texts[i].push_str(&text),
                Event::Finished { reason, usage, .. } => {
                    finished[i] = Some((reason, usage.completion_tokens()));
                    break;
                }
                Event::Started { .. } => {}
            }
        }
    }
    assert!(finished.iter().any(|f| f.is_none()), "both batch samples finished before the chat did");
    // Paused work lost nothing: each batch output is whole and equal to its reference.
    for (i, b) in batch.iter_mut().enumerate() {
        let (rest, r, n) = match finished[i] {
            Some((r, n)) => (String::new(), r, n),
            None => answer(b),
        };
        texts[i].push_str(&rest);
        assert_eq!((&texts[i], r, n), (&refs[i].0, refs[i].1, refs[i].2), "sample {i}");
    }
}

#[test]
fn cancel_and_dropped_receiver_free_the_slot() {
    let e = engine(EngineConfig { max_seqs: 1, ..Default::default() });
    let mut long = e.submit(greedy(QUESTIONS[0], 2000, Priority::Batch)).unwrap();
    while !matches!(long.recv().unwrap(), Event::Delta { .. }) {}
    long.cancel();
    let mut reason = None;
    while let Some(ev) = long.recv() {
        if let Event::Finished { reason: r, .. } = ev {
            reason = Some(r);
            break;
        }
    }
    assert_eq!(reason, Some(FinishReason::Cancelled));
    // The single slot is free again: a new request runs to completion.
    let (_, r, _) = answer(&mut e.submit(greedy("Say yes.", 4, Priority::Batch)).unwrap());
    assert!(matches!(r, FinishReason::Stop | FinishReason::Length));

    // A dropped handle cancels too.
    let mut dropped = e.submit(greedy(QUESTIONS[0], 2000, Priority::Batch)).unwrap();
    while !matches!(dropped.recv().unwrap(), Event::Delta { .. }) {}
    drop(dropped);
    let (_, r, _) = answer(&mut e.submit(greedy("Say no.", 4, Priority::Batch)).unwrap());
    assert!(matches!(r, FinishReason::Stop | FinishReason::Length));
    // Stats are published after each step: give the engine a moment to publish the last one.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while e.stats().running != 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(e.stats().running, 0);
}

/// A request dropped while its prompt is being read stops there: the rest of the prompt is
/// never computed (a client that leaves during a long prefill frees the engine at once). The
/// engine's count of tokens fed, published after every step, shows how far the prompt got.
#[test]
fn a_request_dropped_while_its_prompt_is_read_stops_there() {
    // A prompt of about 2,900 tokens: a dozen chunks of 256.
    let e = engine(EngineConfig { max_seqs: 1, ..Default::default() });
    let words: String = (0..1000).map(|i| format!(" w{}", i % 97)).collect();
    let prompt_tokens = e.tokenizer().encode_prompt(&words).unwrap().len();
    let req = GenerateRequest { max_tokens: 1, ..GenerateRequest::text(words) };
    let mut handle = e.submit(req).unwrap();
    assert!(matches!(handle.recv(), Some(Event::Started { .. })));
    let wait_for = |what: &str, done: &mut dyn FnMut(&ponder_engine::EngineStats) -> bool| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            let s = e.stats();
            if done(&s) {
                return s;
            }
            assert!(std::time::Instant::now() < deadline, "{what}: {s:?}");
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    };
    let before = e.stats().total_fed;
    let started = wait_for("the prompt is being read", &mut |s| s.total_fed > before);
    let read = (started.total_fed - before) as usize;
    assert!(read < prompt_tokens / 2, "{read} of {prompt_tokens} read before the drop");
    drop(handle);
    wait_for("the dropped request is gone", &mut |s| s.running == 0 && s.kv_tokens_used == 0);
    // A chunk or two may already be on its way when the drop is seen, no more.
    let total = (e.stats().total_fed - before) as usize;
    assert!(total < read + 2 * 256, "{total} of {prompt_tokens} prompt tokens read, {read} of them before the drop");
}

/// `min_tokens` keeps a sample from ending before it has that many tokens (vLLM's meaning:
/// the end-of-sequence tokens cannot be drawn until then).
#[test]
fn min_tokens_holds_off_the_end_of_sequence() {
    let e = engine(EngineConfig::default());
    let (_, reason, free) = answer(&mut e.submit(greedy("Say yes.", 64, Priority::Batch)).unwrap());
    assert!(reason == FinishReason::Stop && free < 20, "the model ends by itself: {reason:?} after {free}");
    let held = GenerateRequest { min_tokens: 30, ..greedy("Say yes.", 64, Priority::Batch) };
    let (_, _, tokens) = answer(&mut e.submit(held).unwrap());
    assert!(tokens >= 30, "{tokens} tokens");
}

#[test]
fn n_samples_share_one_prefill_and_draw_independently() {
    let e = engine(EngineConfig::default());
    let req = GenerateRequest {
        n: 4,
        max_tokens: 24,
        sampling: SamplingParams { temperature: 1.0, seed: Some(42), ..Default::default() },
        ..GenerateRequest::chat(vec![Message::user("Name a random animal and describe it.")])
    };
    let run = |req: GenerateRequest| {
        let mut h = e.submit(req).unwrap();
        let mut texts = vec![String::new(); 4];
        let mut started = 0;
        for ev in h.collect() {
            match ev {
                Event::Started { .. } => started += 1,
                Event::Delta { index, text, .. } => texts[index].push_str(&text),
                Event::Finished { .. } => {}
            }
        }
        assert_eq!(started, 1, "one prompt read for all samples");
        texts
    };
    let a = run(req.clone());
    let b = run(req.clone());
    assert_eq!(a, b, "same seed, same samples");
    let distinct: std::collections::HashSet<_> = a.iter().collect();
    assert!(distinct.len() >= 2, "samples differ from each other: {a:?}");

    // Greedy forks are identical to each other.
    let g = run(GenerateRequest { sampling: SamplingParams::greedy(), ..req });
    assert!(g.iter().all(|t| t == &g[0]));
}

#[test]
fn limits_give_clear_errors() {
    let e = engine(EngineConfig { max_seqs: 2, ..Default::default() });
    let err = e.submit(greedy("hi", 5000, Priority::Batch)).err().unwrap();
    assert!(matches!(err, EngineError::ContextOverflow { context_length: 4096, .. }), "{err}");
    assert!(err.to_string().contains("exceed the context length of 4096"));
    let err = e.submit(GenerateRequest { n: 3, ..greedy("hi", 4, Priority::Batch) }).err().unwrap();
    assert!(err.to_string().contains("n must be between 1 and 2"), "{err}");
    let bad =
        GenerateRequest { sampling: SamplingParams { top_p: 0.0, ..Default::default() }, ..greedy("hi", 4, Priority::Batch) };
    assert!(e.submit(bad).err().unwrap().to_string().contains("top_p"));
    // A prompt no context could hold is refused before it is tokenised: megabytes come back at
    // once, and the error says why.
    let huge = "apple ".repeat(4096 * e.tokenizer().max_token_bytes);
    let t = std::time::Instant::now();
    let err = e.submit(greedy(&huge, 4, Priority::Batch)).err().unwrap();
    assert!(matches!(err, EngineError::InvalidRequest(ponder_engine::InvalidRequest::PromptTooLong { .. })), "{err}");
    assert!(err.to_string().contains("far more than a context of 4096 tokens can hold"), "{err}");
    eprintln!("a {} MB prompt refused in {:?}", huge.len() >> 20, t.elapsed());
}

#[test]
fn admission_waits_for_kv_memory() {
    // Room for about one 200-token sequence: the second waits until the first is done.
    // (24 layers, K and V, 2 KV heads of 64, f16.)
    let per_token = 24 * 2 * 2 * 64 * 2;
    let e = engine(EngineConfig { kv_budget_bytes: Some(200 * per_token), ..Default::default() });
    let mut a = e.submit(greedy(QUESTIONS[3], 60, Priority::Batch)).unwrap();
    let mut b = e.submit(greedy(QUESTIONS[7], 60, Priority::Batch)).unwrap();
    let (ta, _, _) = answer(&mut a);
    let (tb, _, _) = answer(&mut b);
    assert!(!ta.is_empty() && !tb.is_empty());
    let s = e.stats();
    assert!(s.kv_tokens_budget == 200, "{s:?}");
}

#[test]
fn stop_strings_and_max_tokens() {
    let e = engine(EngineConfig::default());
    let full = answer(&mut e.submit(greedy("Count from 1 to 20, separated by commas.", 60, Priority::Batch)).unwrap()).0;
    assert!(full.contains("7"), "{full}");
    let mut stopped = e
        .submit(GenerateRequest {
            stop: vec!["7".into()],
            ..greedy("Count from 1 to 20, separated by commas.", 60, Priority::Batch)
        })
        .unwrap();
    let (t, reason, _) = answer(&mut stopped);
    assert_eq!(reason, FinishReason::Stop);
    assert_eq!(t, full[..full.find('7').unwrap()], "text ends right before the stop string");
    let (_, reason, n) = answer(&mut e.submit(greedy("Count from 1 to 20.", 5, Priority::Batch)).unwrap());
    assert_eq!((reason, n), (FinishReason::Length, 5));
}

#[test]
fn chinese_text_streams_as_whole_characters() {
    let e = engine(EngineConfig::default());
    let mut h = e.submit(greedy("用中文简单介绍一下勾股定理。", 60, Priority::Interactive)).unwrap();
    let mut text = String::new();
    let mut deltas = 0;
    for ev in h.collect() {
        if let Event::Delta { text: t, channel, .. } = ev {
            assert_eq!(channel, Channel::Answer);
            assert!(!t.contains('\u{FFFD}'), "a delta split a character: {t:?}");
            text.push_str(&t);
            deltas += 1;
        }
    }
    assert!(deltas > 10);
    assert!(text.chars().filter(|c| ('\u{4e00}'..='\u{9fff}').contains(c)).count() > 10, "{text}");
}
