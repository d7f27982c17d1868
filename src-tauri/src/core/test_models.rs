//! The real test models for the app's tests (fetched by `scripts/fetch-test-models.sh`).
use std::path::{Path, PathBuf};

/// The 0.5B test model. A missing model fails the test with the command that fetches it.
pub fn small_model() -> PathBuf {
    let models = std::env::var_os("PONDER_TEST_MODELS")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(std::env::var("HOME").unwrap()).join(".cache/ponder/test-models"));
    let p = models.join("qwen2.5-coder-0.5b-instruct-q4_k_m.gguf");
    assert!(p.exists(), "test model {} is missing: run scripts/fetch-test-models.sh", p.display());
    p
}

/// The 0.5B model with DeepSeek-R1's chat template, written into `dir`: replies take the
/// thinking path with real weights.
pub fn r1_model(dir: &Path) -> PathBuf {
    let dst = dir.join("r1-0.5b.gguf");
    ponder_engine::gguf_edit::with_chat_template(&small_model(), &dst, ponder_engine::gguf_edit::R1_TEMPLATE).unwrap();
    dst
}
