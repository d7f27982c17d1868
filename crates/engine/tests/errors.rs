//! Every way a model file can be wrong gives a clear error, never a panic; a good file tells how
//! far its load has got.

use candle_core::quantized::gguf_file::Value;
use ponder_engine::{EngineError, LoadOptions};
use std::path::Path;

fn load(p: &Path) -> EngineError {
    match ponder_engine::load(p, &LoadOptions::default()) {
        Ok(_) => panic!("{} loaded", p.display()),
        Err(e) => e,
    }
}

/// A path in a fresh temporary directory, which is removed when the returned guard drops.
fn tmp(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    (dir, path)
}

#[test]
fn missing_file() {
    let e = load(Path::new("/nonexistent/model.gguf"));
    assert!(matches!(e, EngineError::ModelNotFound(_)));
    assert_eq!(e.to_string(), "model file not found: /nonexistent/model.gguf");
}

#[test]
fn not_a_gguf() {
    let (_dir, p) = tmp("notes.gguf");
    std::fs::write(&p, "these are my notes, not a model").unwrap();
    let e = load(&p);
    assert!(matches!(e, EngineError::NotGguf { .. }), "{e}");
    assert!(e.to_string().contains("notes.gguf: not a GGUF file"));
    std::fs::write(&p, "").unwrap();
    assert!(matches!(load(&p), EngineError::NotGguf { .. }));
}

#[test]
fn truncated_files() {
    let src = std::fs::read(ponder_testkit::model(ponder_testkit::SMALL)).unwrap();
    // Cut in the tensor data (an interrupted download) and in the header.
    for (name, len) in [("cut-data.gguf", src.len() / 2), ("cut-header.gguf", 2000)] {
        let (_dir, p) = tmp(name);
        std::fs::write(&p, &src[..len]).unwrap();
        let e = load(&p);
        assert!(matches!(e, EngineError::Truncated { .. }), "{name}: {e}");
        assert!(e.to_string().contains("truncated"), "{e}");
    }
}

#[test]
fn unsupported_architecture_is_named() {
    let (_dir, p) = tmp("mamba.gguf");
    ponder_engine::gguf_edit::rewrite_metadata(&ponder_testkit::model(ponder_testkit::SMALL), &p, |md| {
        md.insert("general.architecture".into(), Value::String("mamba".into()));
    })
    .unwrap();
    let e = load(&p);
    assert!(matches!(&e, EngineError::UnsupportedArchitecture { found, .. } if found == "mamba"), "{e}");
    assert!(e.to_string().contains("unsupported model architecture `mamba`"));
    // A family Ponder runs, whose keys the file does not have, gets the missing key by name.
    let (_dir, p) = tmp("llama.gguf");
    ponder_engine::gguf_edit::rewrite_metadata(&ponder_testkit::model(ponder_testkit::SMALL), &p, |md| {
        md.insert("general.architecture".into(), Value::String("llama".into()));
    })
    .unwrap();
    let e = load(&p);
    assert!(e.to_string().contains("missing metadata `llama.embedding_length`"), "{e}");
}

#[test]
fn missing_tokenizer_metadata() {
    let (_dir, p) = tmp("notok.gguf");
    ponder_engine::gguf_edit::rewrite_metadata(&ponder_testkit::model(ponder_testkit::SMALL), &p, |md| {
        md.remove("tokenizer.ggml.merges");
    })
    .unwrap();
    let e = load(&p);
    assert!(matches!(e, EngineError::Tokenizer(_)), "{e}");
    assert!(e.to_string().contains("tokenizer.ggml.merges"), "{e}");
}

#[test]
fn broken_chat_template() {
    let (_dir, p) = tmp("badtemplate.gguf");
    ponder_engine::gguf_edit::rewrite_metadata(&ponder_testkit::model(ponder_testkit::SMALL), &p, |md| {
        md.insert("tokenizer.chat_template".into(), Value::String("{% for m in messages %}{{ m.content ".into()));
    })
    .unwrap();
    let e = load(&p);
    assert!(matches!(e, EngineError::Template(_)), "{e}");

    // A template that parses but fails when rendered fails the request, not the engine.
    let (_dir, p) = tmp("raising.gguf");
    ponder_engine::gguf_edit::rewrite_metadata(&ponder_testkit::model(ponder_testkit::SMALL), &p, |md| {
        md.insert(
            "tokenizer.chat_template".into(),
            Value::String(
                "{% if messages[0]['role'] != 'system' %}{{ raise_exception('first message must be system') }}{% endif %}".into(),
            ),
        );
    })
    .unwrap();
    let loaded = ponder_engine::load(&p, &LoadOptions { max_context: Some(512), ..Default::default() }).unwrap();
    let engine = ponder_engine::Engine::start(loaded, Default::default()).unwrap();
    let err = engine.submit(ponder_engine::GenerateRequest::chat(vec![ponder_engine::Message::user("hi")])).err().unwrap();
    assert!(err.to_string().contains("first message must be system"), "{err}");
}

#[test]
fn a_load_reports_its_progress_tensor_by_tensor_up_to_every_byte() {
    let path = ponder_testkit::model(ponder_testkit::SMALL);
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let opts = LoadOptions {
        max_context: Some(512),
        on_progress: Some(std::sync::Arc::new(move |p| record.lock().unwrap().push(p))),
        ..Default::default()
    };
    ponder_engine::load(&path, &opts).unwrap();
    let seen = seen.lock().unwrap();
    let (ct, size) = ponder_engine::loader::read_gguf_header(&path).unwrap();
    let total = size - ct.tensor_data_offset;
    assert!(seen.iter().all(|p| p.total_bytes == total && p.done_bytes <= total), "{:?}", &seen[..3]);
    assert!(seen.windows(2).all(|w| w[0].done_bytes <= w[1].done_bytes), "progress went backwards");
    assert_eq!(seen.first().unwrap().done_bytes, 0);
    assert_eq!(seen.last().unwrap().done_bytes, total);
    // One step per tensor read, at least: a bar that moves, not one that jumps from 0 to 100.
    let steps = seen.windows(2).filter(|w| w[0].done_bytes < w[1].done_bytes).count();
    assert!(steps >= ct.tensor_infos.len() - 1, "{steps} steps for {} tensors", ct.tensor_infos.len());
    // No step is more than the largest tensor (the embedding table, about a quarter of the file).
    let largest = seen.windows(2).map(|w| w[1].done_bytes - w[0].done_bytes).max().unwrap();
    assert!(largest < total / 3, "a step of {largest} of {total} bytes");
}

#[test]
fn inspect_reads_the_header_only() {
    let info = ponder_engine::loader::inspect(&ponder_testkit::model(ponder_testkit::SMALL)).unwrap();
    assert_eq!(info.architecture, "qwen2");
    assert_eq!(info.context_length, 32768);
    assert!(info.parameters > 400_000_000 && info.parameters < 700_000_000, "{info:?}");
    assert!(!info.reasoning);
    assert!(matches!(ponder_engine::loader::inspect(Path::new("/nonexistent.gguf")), Err(EngineError::ModelNotFound(_))));
}

/// The small test model with some metadata changed.
fn edited(
    name: &str,
    edit: impl FnOnce(&mut std::collections::HashMap<String, Value>),
) -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, p) = tmp(name);
    ponder_engine::gguf_edit::rewrite_metadata(&ponder_testkit::model(ponder_testkit::SMALL), &p, edit).unwrap();
    (dir, p)
}

#[test]
fn impossible_sizes_in_the_metadata_are_named_before_anything_is_allocated() {
    let cases: [(&str, Value, &str); 5] = [
        (
            "qwen2.attention.head_count",
            Value::U32(0),
            "metadata `qwen2.attention.head_count` is 0; it must be a whole number from 1",
        ),
        (
            "qwen2.attention.head_count_kv",
            Value::U32(3),
            "metadata `qwen2.attention.head_count_kv` is 3, which does not divide the 14",
        ),
        (
            "qwen2.block_count",
            Value::U64(1 << 40),
            "metadata `qwen2.block_count` is 1099511627776; it must be a whole number from 1 to 512",
        ),
        ("qwen2.attention.head_count", Value::U32(6), "the hidden size 896 must split into heads of an even size"),
        ("qwen2.rope.freq_base", Value::F32(f32::NAN), "metadata `qwen2.rope.freq_base` is NaN; it must be a positive number"),
    ];
    for (key, value, expected) in cases {
        let (_dir, p) = edited("bad.gguf", |md| {
            md.insert(key.into(), value);
        });
        let e = load(&p).to_string();
        assert!(e.contains(expected), "{key}: {e}");
    }
}

#[test]
fn tensors_that_do_not_match_the_metadata_are_named() {
    // 1024 wide with 16 heads of 64 is a sane configuration, but not this file's tensors.
    let (_dir, p) = edited("wide.gguf", |md| {
        md.insert("qwen2.embedding_length".into(), Value::U32(1024));
        md.insert("qwen2.attention.head_count".into(), Value::U32(16));
    });
    let e = load(&p).to_string();
    assert!(e.contains("the tensor `token_embd.weight` has shape [151936, 896], but the metadata needs [151936, 1024]"), "{e}");
    // One layer more than the file has.
    let (_dir, p) = edited("deep.gguf", |md| {
        md.insert("qwen2.block_count".into(), Value::U32(25));
    });
    assert!(load(&p).to_string().contains("the tensor `blk.24.attn_norm.weight` is missing"));
}

#[test]
fn a_zero_alignment_is_an_error_not_a_panic() {
    let (_dir, p) = edited("align.gguf", |md| {
        md.insert("general.alignment".into(), Value::U32(0));
    });
    let e = load(&p);
    assert!(matches!(e, EngineError::BadModel { .. }), "{e}");
    assert!(e.to_string().contains("general.alignment"), "{e}");
}
