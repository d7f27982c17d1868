//! The batched Qwen2 forward against candle-transformers' stock `quantized_qwen2` on the same
//! GGUF: same logits for a single sequence, prompt and decode, on both test models.
mod common;

use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_qwen2::ModelWeights;
use ponder_engine::qwen2::StepInput;
use ponder_engine::{LoadOptions, Message};

/// Relative error of the logit vector: ||a - b|| / ||b||.
fn rel_err(a: &[f32], b: &[f32]) -> f32 {
    let diff: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
    let norm: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    (diff / norm).sqrt() as f32
}

fn check(name: &str) {
    common::threads();
    let path = common::model(name);
    let loaded = ponder_engine::load(&path, &LoadOptions::default()).unwrap();
    let prompt = loaded
        .template
        .render(&[Message::user("What is the sum of the first 10 odd numbers? Explain briefly.")])
        .unwrap();
    let tokens = loaded.tokenizer.encode_prompt(&prompt).unwrap();

    let mut file = std::fs::File::open(&path).unwrap();
    let ct = candle_core::quantized::gguf_file::Content::read(&mut file).unwrap();
    let mut stock = ModelWeights::from_gguf(ct, &mut file, &Device::Cpu).unwrap();

    let mut cache = loaded.model.new_cache();
    let mut input = tokens.clone();
    let mut pos = 0;
    for step in 0..8 {
        let ours = loaded
            .model
            .forward(&mut [StepInput { tokens: &input, cache: &mut cache, want_logits: true }])
            .unwrap()
            .unwrap()
            .squeeze(0)
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        let x = Tensor::new(input.as_slice(), &Device::Cpu).unwrap().unsqueeze(0).unwrap();
        let theirs = stock.forward(&x, pos).unwrap().squeeze(0).unwrap().to_vec1::<f32>().unwrap();
        let err = rel_err(&ours, &theirs);
        println!("{name} step {step}: relative error {err:.2e}");
        assert!(err < 1e-3, "{name} step {step}: relative error {err}");
        pos += input.len();
        let next = ponder_engine::sampler::argmax(&theirs);
        input = vec![next];
    }
}

#[test]
fn parity_with_stock_qwen2_small_q5_q8() {
    check(common::SMALL);
}

#[test]
fn parity_with_stock_qwen2_large_q4k_q6k() {
    check(common::LARGE);
}
