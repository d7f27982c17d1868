//! Writes a small random-weight model of a family as GGUF (Q8_0), with the real Qwen tokenizer
//! and the family's published template, for the app's end-to-end tests of families whose real
//! weights cannot be fetched here.
//!
//! `cargo run --release -p ponder-testkit --example tiny_model -- qwen3 OUT.gguf [--1.5b]`
//!
//! `--1.5b` writes the family at the 1.5B stand-in's size in Q4_K_M instead, for `ponder bench`.

use candle_core::quantized::GgmlDType;
use ponder_engine::Family;
use ponder_testkit::tiny::{Quant, Tiny, Value, QWEN3_TEMPLATE};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let family = match args.first().map(String::as_str) {
        Some("qwen2") => Family::Qwen2,
        Some("qwen3") => Family::Qwen3,
        Some("llama") => Family::Llama,
        _ => usage(),
    };
    let Some(out) = args.get(1) else { usage() };
    let (tiny, quant) = match args.get(2).map(String::as_str) {
        None => (Tiny::of(family), Quant::Q8_0),
        // As llama.cpp's Q4_K_M writes a tied model: the embedding, which is also the output, in Q6_K.
        Some("--1.5b") => (Tiny::at_1_5b(family), Quant { embedding: GgmlDType::Q6K, ..Quant::Q4K_M }),
        Some(_) => usage(),
    };
    tiny.write_gguf(out.as_ref(), quant, |md| {
        if family == Family::Qwen3 {
            md.insert("tokenizer.chat_template".into(), Value::String(QWEN3_TEMPLATE.into()));
        }
    });
}

fn usage() -> ! {
    eprintln!("usage: tiny_model qwen2|qwen3|llama OUT.gguf [--1.5b]");
    std::process::exit(2);
}
