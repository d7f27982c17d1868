//! The real test models, for every crate's tests: fetched, checked and cached by
//! `scripts/fetch-test-models.sh` into `$PONDER_TEST_MODELS` (default
//! `~/.cache/ponder/test-models`). A missing model fails the test with the command that fetches
//! it; no test skips for want of one.

use std::path::PathBuf;
use std::sync::OnceLock;

pub mod hub;
pub mod parity;
pub mod tiny;

/// Qwen2.5-Coder-0.5B-Instruct, Q4_K_M: fast, for tests.
pub const SMALL: &str = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf";
/// Qwen2.5-Coder-1.5B-Instruct, Q4_K_M: the R1 distill 1.5B's exact tensor shapes, for benchmarks.
pub const LARGE: &str = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf";

/// The R1 distill's chat template (newer form, ending its generation prompt with `<think>\n`).
pub const R1_TEMPLATE: &str = ponder_engine::gguf_edit::R1_TEMPLATE;

pub fn models_dir() -> PathBuf {
    match std::env::var_os("PONDER_TEST_MODELS") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".cache/ponder/test-models"),
    }
}

/// A test model by file name.
pub fn model(name: &str) -> PathBuf {
    let path = models_dir().join(name);
    assert!(path.exists(), "test model {} is missing: run `scripts/fetch-test-models.sh` (or `make setup`)", path.display());
    path
}

pub fn small_model() -> PathBuf {
    model(SMALL)
}

pub fn large_model() -> PathBuf {
    model(LARGE)
}

/// A copy of the small model with the DeepSeek-R1 chat template and special tokens in its
/// metadata: real weights that take the whole reasoning path. Made once, kept next to the test
/// models and named by what it is made from, so runs reuse it and nothing is left in the
/// temporary directory. Read-only to its users.
pub fn r1_model() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        use std::hash::{Hash, Hasher};
        let src = small_model();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let size = std::fs::metadata(&src).map(|m| m.len()).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        (R1_TEMPLATE, size).hash(&mut h);
        let dst = src.with_file_name(format!("r1-0.5b-{:016x}.gguf", h.finish()));
        if !dst.exists() {
            // Written under a private name, then renamed: test binaries run side by side.
            let part = dst.with_extension(format!("part-{}", std::process::id()));
            ponder_engine::gguf_edit::with_chat_template(&src, &part, R1_TEMPLATE)
                .unwrap_or_else(|e| panic!("cannot write {}: {e}", part.display()));
            std::fs::rename(&part, &dst).unwrap_or_else(|e| panic!("cannot rename {}: {e}", part.display()));
        }
        dst
    })
    .clone()
}

/// Two compute threads, as on the 2-core machines the tests are sized for; once per process.
pub fn threads() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| ponder_engine::process::set_threads(2));
}
