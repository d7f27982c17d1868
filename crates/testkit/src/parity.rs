//! Ponder's one decoder against candle-transformers' stock model of the same family on the same
//! GGUF, for a single sequence, prompt and then decode steps: the check tests/parity.rs runs on
//! the real Qwen2 test models and tests/families.rs on random-weight Qwen3 and Llama models.
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

use candle_core::quantized::gguf_file;
use candle_core::{Device, Tensor};
use candle_transformers::models::{quantized_llama, quantized_qwen2, quantized_qwen3};
use ponder_engine::decoder::StepInput;
use ponder_engine::{Family, KQuantKernels, LoadOptions, LoadedModel, Message};
use std::path::Path;

/// Relative error of a logit vector: ||a - b|| / ||b||.
pub fn rel_err(a: &[f32], b: &[f32]) -> f32 {
    let diff: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum();
    let norm: f64 = b.iter().map(|y| (*y as f64).powi(2)).sum();
    (diff / norm).sqrt() as f32
}

/// candle's stock model of a family, one forward at a time.
pub enum Stock {
    Qwen2(quantized_qwen2::ModelWeights),
    Qwen3(quantized_qwen3::ModelWeights),
    Llama(quantized_llama::ModelWeights),
}

impl Stock {
    /// The stock model of `family` from a GGUF file; `exact` dequantizes every weight to f32.
    pub fn load(family: Family, path: &Path, exact: bool) -> Stock {
        let path = path.to_owned();
        // candle reads CANDLE_DEQUANTIZE_ALL once per thread, when the thread first builds a
        // quantized matmul: a fresh thread with the variable set builds the exact model.
        std::thread::spawn(move || {
            if exact {
                std::env::set_var("CANDLE_DEQUANTIZE_ALL", "1");
            }
            let mut file = std::fs::File::open(&path).unwrap();
            let ct = gguf_file::Content::read(&mut file).unwrap();
            let dev = &Device::Cpu;
            let m = match family {
                Family::Qwen2 => Stock::Qwen2(quantized_qwen2::ModelWeights::from_gguf(ct, &mut file, dev).unwrap()),
                Family::Qwen3 => Stock::Qwen3(quantized_qwen3::ModelWeights::from_gguf(ct, &mut file, dev).unwrap()),
                Family::Llama => Stock::Llama(quantized_llama::ModelWeights::from_gguf(ct, &mut file, dev).unwrap()),
            };
            std::env::remove_var("CANDLE_DEQUANTIZE_ALL");
            m
        })
        .join()
        .unwrap()
    }

    /// The last position's logits.
    pub fn forward(&mut self, tokens: &[u32], pos: usize) -> Vec<f32> {
        let x = Tensor::new(tokens, &Device::Cpu).unwrap().unsqueeze(0).unwrap();
        let y = match self {
            Stock::Qwen2(m) => m.forward(&x, pos),
            Stock::Qwen3(m) => m.forward(&x, pos),
            Stock::Llama(m) => m.forward(&x, pos),
        };
        y.unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap()
    }
}

/// Ponder's logits for `tokens` fed after what `cache` holds.
pub fn logits(m: &LoadedModel, cache: &mut ponder_engine::kv_cache::SeqCache, tokens: &[u32]) -> Vec<f32> {
    let y = m.model.forward(&mut [StepInput { tokens, cache, logit_rows: 1 }]).unwrap().unwrap();
    y.flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

/// Eight steps (the prompt, then greedy decode on the exact model's choice) with candle's and
/// Ponder's K-quant kernels, each held to both bounds at every step and on average.
pub fn check(path: &Path) {
    // One model at a time: the exact 1.5B forward alone holds ~7 GB, and candle's switch is an
    // environment variable, which another test's threads would see.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    crate::threads();
    let load = |kernels| ponder_engine::load(path, &LoadOptions { kernels, ..Default::default() }).unwrap();
    let (with_candle, ponders) = (load(KQuantKernels::Candle), load(KQuantKernels::Ponder));
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let family = Family::ALL.into_iter().find(|f| f.architecture() == ponders.info.architecture).expect("a family Ponder runs");
    let prompt =
        ponders.template.render(&[Message::user("What is the sum of the first 10 odd numbers? Explain briefly.")]).unwrap();
    let tokens = ponders.tokenizer.encode_prompt(&prompt).unwrap();
    let (mut stock, mut exact) = (Stock::load(family, path, false), Stock::load(family, path, true));
    let mut caches = [with_candle.model.new_cache(Default::default()), ponders.model.new_cache(Default::default())];
    let (mut input, mut pos) = (tokens, 0);
    let (mut sum_ours, mut sum_stock) = ([0f32; 2], 0f32);
    for step in 0..8 {
        let theirs = stock.forward(&input, pos);
        let truth = exact.forward(&input, pos);
        let stock_exact = rel_err(&theirs, &truth);
        for (i, (model, cache)) in [&with_candle, &ponders].into_iter().zip(caches.iter_mut()).enumerate() {
            let ours = logits(model, cache, &input);
            let (vs_stock, ours_exact) = (rel_err(&ours, &theirs), rel_err(&ours, &truth));
            let kind = ["candle kernels", "Ponder's kernels"][i];
            println!("{name} {kind} step {step}: vs stock {vs_stock:.2e}; vs exact {ours_exact:.2e}, stock {stock_exact:.2e}");
            assert!(vs_stock < 4e-2, "{name} {kind} step {step}: {vs_stock} from the stock model");
            assert!(ours_exact < 1.5 * stock_exact, "{name} {kind} step {step}: {ours_exact} from exact, stock {stock_exact}");
            sum_ours[i] += ours_exact;
        }
        sum_stock += stock_exact;
        pos += input.len();
        input = vec![ponder_engine::sampler::argmax(&truth)];
    }
    for sum in sum_ours {
        assert!(sum < 1.2 * sum_stock, "{name}: mean error {} against the stock model's {}", sum / 8.0, sum_stock / 8.0);
    }
}
