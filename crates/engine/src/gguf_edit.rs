//! Rewrites a GGUF file with changed metadata and the same tensors, byte for byte. Used to give
//! a model another chat template (tests turn the 0.5B test model into an R1-style one) and to
//! make broken files for error tests.

use crate::error::{EngineError, Result};
use candle_core::quantized::gguf_file::{self, Value};
use std::path::Path;

pub fn rewrite_metadata(src: &Path, dst: &Path, edit: impl FnOnce(&mut std::collections::HashMap<String, Value>)) -> Result<()> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| EngineError::Io { path, source }
    };
    let mut reader = std::io::BufReader::new(std::fs::File::open(src).map_err(io(src))?);
    let ct =
        gguf_file::Content::read(&mut reader).map_err(|e| EngineError::BadModel { path: src.into(), detail: e.to_string() })?;
    let mut metadata = ct.metadata.clone();
    edit(&mut metadata);
    let mut names: Vec<&String> = ct.tensor_infos.keys().collect();
    names.sort_by_key(|n| ct.tensor_infos[*n].offset);
    let mut tensors = Vec::with_capacity(names.len());
    for name in &names {
        let t = ct
            .tensor(&mut reader, name, &candle_core::Device::Cpu)
            .map_err(|e| EngineError::BadModel { path: src.into(), detail: e.to_string() })?;
        tensors.push((name.as_str(), t));
    }
    let mut keys: Vec<&String> = metadata.keys().collect();
    keys.sort();
    let md: Vec<(&str, &Value)> = keys.iter().map(|k| (k.as_str(), &metadata[*k])).collect();
    let refs: Vec<(&str, &candle_core::quantized::QTensor)> = tensors.iter().map(|(n, t)| (*n, t)).collect();
    let mut out = std::io::BufWriter::new(std::fs::File::create(dst).map_err(io(dst))?);
    gguf_file::write(&mut out, &md, &refs).map_err(|e| EngineError::BadModel { path: dst.into(), detail: e.to_string() })?;
    use std::io::Write;
    out.flush().map_err(io(dst))?;
    Ok(())
}

/// DeepSeek-R1-Distill-Qwen's own chat template (the newer form, whose generation prompt ends
/// with `<think>\n`).
pub const R1_TEMPLATE: &str = include_str!("../templates/deepseek-r1-distill-qwen.jinja");

/// A copy of `src` that carries `template` as its chat template.
pub fn with_chat_template(src: &Path, dst: &Path, template: &str) -> Result<()> {
    rewrite_metadata(src, dst, |md| {
        md.insert("tokenizer.chat_template".into(), Value::String(template.into()));
    })
}
