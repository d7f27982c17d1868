//! Shared helpers for the engine's tests on real model files.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;

pub const SMALL: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
pub const LARGE: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";

/// A test model from `$PONDER_TEST_MODELS` (default `~/.cache/ponder/test-models`). A missing
/// model fails the test with the command that fetches it, never skips it.
pub fn model(name: &str) -> PathBuf {
    let dir = std::env::var_os("PONDER_TEST_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/ponder/test-models"));
    let path = dir.join(name);
    assert!(
        path.exists(),
        "test model {} is missing: run `scripts/fetch-test-models.sh` (or `make setup`)",
        path.display()
    );
    path
}

/// The R1 distill's chat template (newer form, ending its generation prompt with `<think>\n`).
pub const R1_TEMPLATE: &str = ponder_engine::gguf_edit::R1_TEMPLATE;

/// A copy of the 0.5B model with the DeepSeek-R1 chat template and special tokens in its
/// metadata: real weights that take the whole reasoning path. Made once per test run.
pub fn r1_model() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        // Kept next to the test models and named by what it is made from, so runs reuse it and
        // nothing is left behind in the temporary directory.
        use std::hash::{Hash, Hasher};
        let src = model(SMALL);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (R1_TEMPLATE, std::fs::metadata(&src).unwrap().len()).hash(&mut h);
        let dst = src.with_file_name(format!("r1-0.5b-{:016x}.gguf", h.finish()));
        if !dst.exists() {
            // Written under a private name, then renamed: test binaries run side by side.
            let part = dst.with_extension(format!("part-{}", std::process::id()));
            ponder_engine::gguf_edit::with_chat_template(&src, &part, R1_TEMPLATE).unwrap();
            std::fs::rename(&part, &dst).unwrap();
        }
        dst
    })
    .clone()
}

pub fn threads() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| ponder_engine::set_threads(2));
}
