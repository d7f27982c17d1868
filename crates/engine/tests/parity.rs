//! The batched Qwen2 forward against candle-transformers' stock `quantized_qwen2` on the same
//! GGUF, for a single sequence, prompt and decode, on both test models. The check and why its
//! bounds are what they are: `ponder_testkit::parity`.

#[test]
fn parity_with_stock_qwen2_small_q5_q8() {
    ponder_testkit::parity::check(&ponder_testkit::small_model());
}

#[test]
fn parity_with_stock_qwen2_large_q4k_q6k() {
    ponder_testkit::parity::check(&ponder_testkit::large_model());
}
