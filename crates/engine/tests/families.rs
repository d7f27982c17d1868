//! Qwen3 and Llama, on small random-weight models of each family (ponder_testkit::tiny): the
//! one decoder against candle-transformers' stock `quantized_qwen3` and `quantized_llama` on
//! the same GGUF, GGUF against safetensors of the same weights (Llama's permuted q and k rows,
//! Llama 3's RoPE divisors read from either file), batch invariance, and a clear error for a
//! malformed file of each family.
//!
//! The bounds are the Qwen2 parity test's (`ponder_testkit::parity` explains them): close to
//! the stock model, and as close to an exact forward (weights dequantized, activations never
//! rounded) as the stock model is.

use candle_core::quantized::gguf_file;
use ponder_engine::{
    Engine, EngineConfig, Event, Family, GenerateRequest, KQuantKernels, LoadOptions, LoadedModel, Message, SamplingParams,
};
use ponder_testkit::parity::{self, logits, rel_err};
use ponder_testkit::tiny::{llama3_rope_scaling, Quant, Tiny};
use std::path::{Path, PathBuf};

fn load(path: &Path, kernels: KQuantKernels) -> LoadedModel {
    ponder_engine::load(path, &LoadOptions { kernels, ..Default::default() }).unwrap()
}

fn tiny_gguf(dir: &Path, tiny: &Tiny, quant: Quant) -> PathBuf {
    let path = dir.join(format!("tiny-{}.gguf", tiny.family));
    tiny.write_gguf(&path, quant, |_| {});
    path
}

fn parity(family: Family) {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny_gguf(dir.path(), &Tiny::of(family), Quant::Q4K_M);
    parity::check(&path);
}

#[test]
fn qwen3_matches_stock_quantized_qwen3() {
    parity(Family::Qwen3);
}

#[test]
fn llama_matches_stock_quantized_llama() {
    parity(Family::Llama);
}

/// The same weights from a Hugging Face folder and from a GGUF file compute the same logits:
/// for Llama this checks the permuted q and k rows against RoPE on pairs, and Llama 3's
/// scaling read from `rope_scaling` against the divisors in `rope_freqs.weight`.
#[test]
fn safetensors_and_gguf_of_each_family_agree() {
    ponder_testkit::threads();
    let llama3 = Tiny { rope_scaling: Some(llama3_rope_scaling()), ..Tiny::of(Family::Llama) };
    for tiny in [Tiny::of(Family::Qwen3), Tiny::of(Family::Llama), llama3] {
        let dir = tempfile::tempdir().unwrap();
        let gguf = load(&tiny_gguf(dir.path(), &tiny, Quant::F32), KQuantKernels::Ponder);
        let folder = dir.path().join("hf");
        tiny.write_safetensors(&folder);
        let hf = load(&folder, KQuantKernels::Ponder);
        assert_eq!(hf.info.architecture, tiny.family.architecture());
        let prompt = hf.template.render(&[Message::user("What is 2 + 2?")]).unwrap();
        let ids = hf.tokenizer.encode_prompt(&prompt).unwrap();
        assert_eq!(ids, gguf.tokenizer.encode_prompt(&prompt).unwrap());
        let (mut a, mut b) = (hf.model.new_cache(Default::default()), gguf.model.new_cache(Default::default()));
        let (mut input, label) = (ids, format!("{} scaled: {}", tiny.family, tiny.rope_scaling.is_some()));
        for step in 0..4 {
            let (x, y) = (logits(&hf, &mut a, &input), logits(&gguf, &mut b, &input));
            let e = rel_err(&x, &y);
            assert!(e < 1e-4, "{label} step {step}: relative error {e}");
            input = vec![ponder_engine::sampler::argmax(&y)];
        }
    }
    // And the scaling matters: the scaled model computes something else.
    let dir = tempfile::tempdir().unwrap();
    let plain = load(&tiny_gguf(dir.path(), &Tiny::of(Family::Llama), Quant::F32), KQuantKernels::Ponder);
    let scaled_path = dir.path().join("scaled.gguf");
    Tiny { rope_scaling: Some(llama3_rope_scaling()), ..Tiny::of(Family::Llama) }.write_gguf(&scaled_path, Quant::F32, |_| {});
    let scaled = load(&scaled_path, KQuantKernels::Ponder);
    // Llama 3 stretches the slow frequencies only: they turn far enough to differ a few hundred
    // positions in.
    let text: String = (0..120).map(|i| format!("step {i}, ")).collect();
    let ids: Vec<u32> = plain.tokenizer.encode_prompt(&text).unwrap();
    assert!(ids.len() > 500, "{}", ids.len());
    let (x, y) = (
        logits(&plain, &mut plain.model.new_cache(Default::default()), &ids),
        logits(&scaled, &mut scaled.model.new_cache(Default::default()), &ids),
    );
    assert!(rel_err(&x, &y) > 1e-3, "Llama 3's RoPE scaling changed nothing");
}

/// A sequence's greedy tokens are the same alone and among others joining and leaving, in
/// each family, with Q4_K_M's and Q8_0's weights.
#[test]
fn batching_does_not_change_greedy_output_in_any_family() {
    ponder_testkit::threads();
    for (family, quant) in [(Family::Qwen3, Quant::Q4K_M), (Family::Llama, Quant::Q4K_M), (Family::Qwen3, Quant::Q8_0)] {
        let dir = tempfile::tempdir().unwrap();
        let path = tiny_gguf(dir.path(), &Tiny::of(family), quant);
        let e = Engine::start(load(&path, KQuantKernels::Ponder), EngineConfig::default()).unwrap();
        let req = |q: &str, n: usize| GenerateRequest {
            sampling: SamplingParams::greedy(),
            max_tokens: n,
            detect_loops: false,
            ignore_eos: true,
            ..GenerateRequest::chat(vec![Message::user(q)])
        };
        let text = |h: &mut ponder_engine::RequestHandle| -> String {
            h.collect().into_iter().filter_map(|ev| if let Event::Delta { text, .. } = ev { Some(text) } else { None }).collect()
        };
        let target = "Explain why the sum of two odd numbers is even.";
        let alone = text(&mut e.submit(req(target, 64)).unwrap());
        assert!(alone.chars().filter(|c| !c.is_whitespace()).count() >= 20, "{family}: too little text to compare: {alone:?}");
        // The same request again, with others joining every few tokens of it (and leaving).
        let mut h = e.submit(req(target, 64)).unwrap();
        let mut joining = ["What is 17 * 23?", "List three primes.", "Say hello.", "Name a colour."].into_iter();
        let (mut seen, mut others, mut deltas) = (String::new(), Vec::new(), 0);
        while let Some(ev) = h.recv() {
            match ev {
                Event::Delta { text, .. } => {
                    seen.push_str(&text);
                    deltas += 1;
                    if deltas % 3 == 0 {
                        if let Some(q) = joining.next() {
                            others.push(e.submit(req(q, 8 + 5 * others.len())).unwrap());
                        }
                    }
                }
                Event::Finished { .. } => break,
                Event::Started { .. } => {}
            }
        }
        assert!(others.len() >= 2, "{family}: only {} others joined", others.len());
        for o in &mut others {
            text(o);
        }
        assert_eq!(seen, alone, "{family} {quant:?}: batched output differs from the output alone");
    }
}

/// A malformed file of each family gets one error that names what is wrong.
#[test]
fn a_malformed_file_of_each_family_says_what_is_wrong() {
    let dir = tempfile::tempdir().unwrap();
    let err = |tiny: Tiny, edit: &dyn Fn(&mut std::collections::BTreeMap<String, gguf_file::Value>)| -> String {
        let path = dir.path().join("bad.gguf");
        tiny.write_gguf(&path, Quant::F32, edit);
        match ponder_engine::load(&path, &LoadOptions::default()) {
            Ok(_) => panic!("{} loaded", tiny.family),
            Err(e) => e.to_string(),
        }
    };
    use gguf_file::Value as V;
    // Qwen3's head size, when it is not hidden / heads, must be given and must match q's rows.
    let e = err(Tiny::of(Family::Qwen3), &|md| {
        md.insert("qwen3.attention.key_length".into(), V::U32(96));
    });
    assert!(e.contains("attn_q.weight") && e.contains("[384, 256]"), "{e}");
    let e = err(Tiny::of(Family::Qwen3), &|md| {
        md.insert("qwen3.attention.key_length".into(), V::U32(0));
    });
    assert!(e.contains("qwen3.attention.key_length"), "{e}");
    // Llama's RoPE over part of a head is not something Ponder runs.
    let e = err(Tiny::of(Family::Llama), &|md| {
        md.insert("llama.rope.dimension_count".into(), V::U32(32));
    });
    assert!(e.contains("llama.rope.dimension_count") && e.contains("partial RoPE"), "{e}");
    let e = err(Tiny::of(Family::Llama), &|md| {
        md.insert("llama.rope.scaling.type".into(), V::String("yarn".into()));
    });
    assert!(e.contains("llama.rope.scaling.type") && e.contains("yarn"), "{e}");
    let e = err(Tiny::of(Family::Llama), &|md| {
        md.insert("llama.attention.head_count_kv".into(), V::U32(3));
    });
    assert!(e.contains("llama.attention.head_count_kv"), "{e}");
}
