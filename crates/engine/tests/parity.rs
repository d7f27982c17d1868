//! The batched Qwen2 forward against candle-transformers' stock `quantized_qwen2` on the same
//! GGUF, for a single sequence, prompt and decode, on both test models.
//!
//! Both quantize each activation row to 8 bits before a K-quant product, and that rounding is
//! discontinuous: a difference in the last bit of a float sum can flip one rounded activation,
//! and the flip travels through the remaining layers. candle's own kernels differ that way from
//! each other (its Q6_K product for one row is not its product for several), and so do
//! Ponder's kernels, which read the blocks in place, and Ponder's decode attention, which sums
//! in another order than candle's matmuls. So the logits are held to two bounds:
//! close to the stock model's, and as close to an exact forward (weights dequantized to f32,
//! activations never rounded) as the stock model is. A wrong scale, offset or block order in a
//! kernel misses both by orders of magnitude.

use candle_core::{Device, Tensor};
use candle_transformers::models::quantized_qwen2::ModelWeights;
use ponder_engine::decoder::StepInput;
use ponder_engine::{KQuantKernels, LoadOptions, Message};

/// Relative error of the logit vector: ||a - b|| / ||b||.
fn rel_err(a: &[f32], b: &[f32]) -> f32 {
    let diff: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
    let norm: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    (diff / norm).sqrt() as f32
}

fn stock_model(path: &std::path::Path, exact: bool) -> ModelWeights {
    let path = path.to_owned();
    // candle reads CANDLE_DEQUANTIZE_ALL once per thread, when the thread first builds a
    // quantized matmul: a fresh thread with the variable set builds the exact model.
    std::thread::spawn(move || {
        if exact {
            std::env::set_var("CANDLE_DEQUANTIZE_ALL", "1");
        }
        let mut file = std::fs::File::open(&path).unwrap();
        let ct = candle_core::quantized::gguf_file::Content::read(&mut file).unwrap();
        let model = ModelWeights::from_gguf(ct, &mut file, &Device::Cpu).unwrap();
        std::env::remove_var("CANDLE_DEQUANTIZE_ALL");
        model
    })
    .join()
    .unwrap()
}

fn check(name: &str) {
    // One model at a time: the exact 1.5B forward alone holds ~7 GB, and candle's switch is an
    // environment variable, which the other test's threads would see.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    ponder_testkit::threads();
    let path = ponder_testkit::model(name);
    let load = |kernels| ponder_engine::load(&path, &LoadOptions { kernels, ..Default::default() }).unwrap();
    let (with_candle, ponders) = (load(KQuantKernels::Candle), load(KQuantKernels::Ponder));
    let prompt =
        with_candle.template.render(&[Message::user("What is the sum of the first 10 odd numbers? Explain briefly.")]).unwrap();
    let tokens = with_candle.tokenizer.encode_prompt(&prompt).unwrap();
    let mut stock = stock_model(&path, false);
    let mut exact = stock_model(&path, true);

    let mut caches = [with_candle.model.new_cache(), ponders.model.new_cache()];
    let mut input = tokens.clone();
    let mut pos = 0;
    let (mut sum_ours, mut sum_stock) = ([0f32; 2], 0f32);
    for step in 0..8 {
        let x = Tensor::new(input.as_slice(), &Device::Cpu).unwrap().unsqueeze(0).unwrap();
        let theirs = stock.forward(&x, pos).unwrap().squeeze(0).unwrap().to_vec1::<f32>().unwrap();
        let truth = exact.forward(&x, pos).unwrap().squeeze(0).unwrap().to_vec1::<f32>().unwrap();
        let stock_exact = rel_err(&theirs, &truth);
        for (model, cache) in [&with_candle.model, &ponders.model].into_iter().zip(caches.iter_mut()) {
            let ours = model
                .forward(&mut [StepInput { tokens: &input, cache, want_logits: true }])
                .unwrap()
                .unwrap()
                .squeeze(0)
                .unwrap()
                .to_vec1::<f32>()
                .unwrap();
            let (vs_stock, ours_exact) = (rel_err(&ours, &theirs), rel_err(&ours, &truth));
            let kind = if std::ptr::eq(model, &with_candle.model) { "candle kernels" } else { "Ponder's kernels" };
            println!("{name} {kind} step {step}: vs stock {vs_stock:.2e}; vs exact {ours_exact:.2e}, stock {stock_exact:.2e}");
            assert!(vs_stock < 4e-2, "{name} {kind} step {step}: {vs_stock} from the stock model");
            assert!(
                ours_exact < 1.5 * stock_exact,
                "{name} {kind} step {step}: {ours_exact} from the exact forward, the stock model {stock_exact}"
            );
            sum_ours[usize::from(kind == "Ponder's kernels")] += ours_exact;
        }
        sum_stock += stock_exact;
        pos += input.len();
        input = vec![ponder_engine::sampler::argmax(&truth)];
    }
    for sum in sum_ours {
        assert!(sum < 1.2 * sum_stock, "{name}: mean error {} against the stock model's {}", sum / 8.0, sum_stock / 8.0);
    }
}

#[test]
fn parity_with_stock_qwen2_small_q5_q8() {
    check(ponder_testkit::SMALL);
}

#[test]
fn parity_with_stock_qwen2_large_q4k_q6k() {
    check(ponder_testkit::LARGE);
}
