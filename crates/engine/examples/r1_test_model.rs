//! Writes a copy of a GGUF model with DeepSeek-R1's chat template in its metadata, so a small
//! non-reasoning test model takes the whole thinking path with real weights (the app's
//! end-to-end tests use it).
//!
//! `cargo run --release -p ponder-engine --example r1_test_model -- SRC.gguf DST.gguf`

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [src, dst] = args.as_slice() else {
        eprintln!("usage: r1_test_model SRC.gguf DST.gguf");
        std::process::exit(2);
    };
    if let Err(e) =
        ponder_engine::gguf_edit::with_chat_template(src.as_ref(), dst.as_ref(), ponder_engine::gguf_edit::R1_TEMPLATE)
    {
        eprintln!("{e}");
        std::process::exit(1);
    }
}
