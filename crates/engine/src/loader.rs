//! Opening a model: a GGUF file or a Hugging Face safetensors folder, checked before anything
//! heavy happens so that a bad file gives a clear error instead of a panic deep in a kernel.
//! Both kinds of file name the same configuration in their own words; one builder
//! ([`build_config`]) turns either into a [`DecoderConfig`] for one of the [`Family`]s.

use crate::chat_template::{ChatTemplate, Thinking, CHATML_TEMPLATE};
use crate::decoder::{Decoder, DecoderConfig};
use crate::error::{EngineError, Result};
use crate::family::Family;
use crate::kquants::{self, KQuantKernels, Kernel};
use crate::legacy_quants;
use crate::rope::{RopeScaling, RopeStyle};
use crate::tokenizer::Tokenizer;
use candle_core::quantized::gguf_file;
use candle_core::Device;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// What the UI shows about a loaded model.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ModelInfo {
    pub name: String,
    pub path: PathBuf,
    pub architecture: String,
    /// The most common weight type, e.g. `Q4K`.
    pub quantization: String,
    pub file_size: u64,
    pub context_length: usize,
    pub parameters: u64,
    pub reasoning: bool,
    /// How the model thinks: never, always (R1), or by request (Qwen3).
    pub thinking: Thinking,
    /// Which of Ponder's kernels multiply the weights on this computer (the CPU's fastest, or
    /// the one `PONDER_CPU_KERNEL` names); `None` where candle's do: weights in none of Q4_K,
    /// Q6_K, Q8_0, Q5_0 and Q4_0, or a load that asked for candle's.
    pub kernel: Option<Kernel>,
}

/// Everything the engine needs to run a model.
pub struct LoadedModel {
    pub model: Decoder,
    pub tokenizer: Tokenizer,
    pub template: ChatTemplate,
    pub info: ModelInfo,
}

/// Options for loading.
#[derive(Clone, Default)]
pub struct LoadOptions {
    /// Cap on the context length (memory); `None` keeps the model's own.
    pub max_context: Option<usize>,
    /// Which code multiplies K-quant weights.
    pub kernels: KQuantKernels,
    /// Told how far loading has got, once per tensor, on the loading thread.
    pub on_progress: Option<ProgressFn>,
}

impl std::fmt::Debug for LoadOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadOptions")
            .field("max_context", &self.max_context)
            .field("kernels", &self.kernels)
            .field("on_progress", &self.on_progress.is_some())
            .finish()
    }
}

/// How far a load has got: the bytes of weights read *and packed* so far, of all of them. Reading
/// a tensor and packing it for the kernels take about as long as each other, and both scale with
/// its size, so bytes are a fair measure of time.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct LoadProgress {
    pub done_bytes: u64,
    pub total_bytes: u64,
}

/// Where [`LoadProgress`] goes (a status bar, a log line).
pub type ProgressFn = std::sync::Arc<dyn Fn(LoadProgress) + Send + Sync>;

/// A model file read through this counts what it has read. A tensor is read in one piece and
/// packed before the next one is read, so at the start of each read, every byte read before it
/// is a packed weight: that is what it reports.
struct Counted<R> {
    inner: R,
    read: u64,
    total: u64,
    report: ProgressFn,
}

impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        (self.report)(LoadProgress { done_bytes: self.read.min(self.total), total_bytes: self.total });
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

impl<R: std::io::Seek> std::io::Seek for Counted<R> {
    fn seek(&mut self, pos: std::io::SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(pos)
    }
}

/// A configuration value a model file must or may give.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Vocab,
    Hidden,
    Layers,
    Heads,
    KvHeads,
    Context,
    Intermediate,
    RmsEps,
    RopeTheta,
    /// The size of each attention head, where it is not the hidden size over the heads (Qwen3).
    HeadDim,
    /// The values of a head RoPE rotates (GGUF only): all of them is all Ponder runs.
    RopeDim,
}

/// Where a model's configuration is read from: a GGUF header or a `config.json`. Each says
/// what its keys are called (for errors that name them) and what they hold.
trait ConfigSource {
    /// The file the configuration is in, for errors.
    fn path(&self) -> &Path;
    fn architecture(&self) -> Option<String>;
    /// The key's name in this kind of file.
    fn name(&self, key: Key) -> String;
    fn number(&self, key: Key) -> Option<f64>;
    /// How the file says RoPE's frequencies are scaled, if it says so.
    fn rope_scaling(&self) -> Result<Option<RopeScaling>>;
    /// How the file's q and k weights pair values for RoPE.
    fn rope_style(&self, family: Family) -> RopeStyle;
}

/// The one set of rules for a configuration, whichever file it comes from: which architecture
/// runs, which keys are required, the defaults of the optional ones, and the context cap.
fn build_config(src: &dyn ConfigSource, opts: &LoadOptions) -> Result<DecoderConfig> {
    let arch = src.architecture().unwrap_or_default();
    let Some(family) = Family::of_architecture(&arch) else {
        return Err(EngineError::UnsupportedArchitecture { path: src.path().to_path_buf(), found: arch });
    };
    // Each size within what a real model of this family has, checked before anything is
    // allocated from it: a file that says 0 heads or 10^12 layers gets an error naming the key.
    let invalid =
        |key: Key, detail: String| EngineError::InvalidMetadata { path: src.path().to_path_buf(), key: src.name(key), detail };
    let sized = |key: Key, range: std::ops::RangeInclusive<usize>| -> Result<usize> {
        let raw =
            src.number(key).ok_or_else(|| EngineError::MissingMetadata { path: src.path().to_path_buf(), key: src.name(key) })?;
        if raw.fract() != 0.0 || raw < *range.start() as f64 || raw > *range.end() as f64 {
            return Err(invalid(key, format!("is {raw}; it must be a whole number from {} to {}", range.start(), range.end())));
        }
        Ok(raw as usize)
    };
    let hidden = sized(Key::Hidden, 1..=65_536)?;
    let heads = sized(Key::Heads, 1..=1_024)?;
    let kv_heads = sized(Key::KvHeads, 1..=1_024)?;
    if heads % kv_heads != 0 {
        return Err(invalid(Key::KvHeads, format!("is {kv_heads}, which does not divide the {heads} attention heads")));
    }
    let head_dim = match src.number(Key::HeadDim) {
        None => {
            if hidden % heads != 0 || !(8..=512).contains(&(hidden / heads)) || (hidden / heads) % 2 != 0 {
                return Err(invalid(
                    Key::Heads,
                    format!("is {heads}: the hidden size {hidden} must split into heads of an even size from 8 to 512"),
                ));
            }
            hidden / heads
        }
        Some(_) => {
            let hd = sized(Key::HeadDim, 8..=512)?;
            if hd % 2 != 0 {
                return Err(invalid(Key::HeadDim, format!("is {hd}; a head's size must be even for RoPE")));
            }
            hd
        }
    };
    if let Some(rope_dim) = src.number(Key::RopeDim) {
        if rope_dim != head_dim as f64 {
            return Err(invalid(
                Key::RopeDim,
                format!("is {rope_dim}; Ponder rotates whole heads, of {head_dim} values (partial RoPE is not supported)"),
            ));
        }
    }
    let model_ctx = sized(Key::Context, 1..=1 << 24)?;
    let positive = |key: Key, default: f64| -> Result<f64> {
        match src.number(key) {
            None => Ok(default),
            Some(v) if v.is_finite() && v > 0.0 => Ok(v),
            Some(v) => Err(invalid(key, format!("is {v}; it must be a positive number"))),
        }
    };
    Ok(DecoderConfig {
        family,
        vocab_size: sized(Key::Vocab, 1..=1_048_576)?,
        hidden_size: hidden,
        num_layers: sized(Key::Layers, 1..=512)?,
        num_heads: heads,
        num_kv_heads: kv_heads,
        head_dim,
        context_length: opts.max_context.map_or(model_ctx, |c| c.min(model_ctx)),
        rms_norm_eps: positive(Key::RmsEps, 1e-6)?,
        rope_theta: positive(Key::RopeTheta, 10_000.0)? as f32,
        rope_style: src.rope_style(family),
        rope_scaling: src.rope_scaling()?,
        intermediate_size: sized(Key::Intermediate, 1..=1_048_576)?,
    })
}

/// Every tensor the configuration needs is in the file with the shape it implies, checked on
/// the header before any weight is read: a mismatch gets an error naming the tensor instead of
/// a failure (or a panic) deep in the first forward pass.
fn check_tensor_shapes(path: &Path, ct: &gguf_file::Content, cfg: &DecoderConfig) -> Result<()> {
    let (h, q, kv, ff, vocab) =
        (cfg.hidden_size, cfg.num_heads * cfg.head_dim, cfg.num_kv_heads * cfg.head_dim, cfg.intermediate_size, cfg.vocab_size);
    let mut wanted: Vec<(String, Vec<usize>, bool)> = vec![
        ("token_embd.weight".into(), vec![vocab, h], true),
        ("output.weight".into(), vec![vocab, h], false),
        ("output_norm.weight".into(), vec![h], true),
        // Llama 3's RoPE divisors, one per frequency, where the file has them.
        ("rope_freqs.weight".into(), vec![cfg.head_dim / 2], false),
    ];
    for i in 0..cfg.num_layers {
        let t = |name: &str, shape: Vec<usize>| (format!("blk.{i}.{name}"), shape, true);
        wanted.extend([
            t("attn_norm.weight", vec![h]),
            t("ffn_norm.weight", vec![h]),
            t("attn_q.weight", vec![q, h]),
            t("attn_k.weight", vec![kv, h]),
            t("attn_v.weight", vec![kv, h]),
            t("attn_output.weight", vec![h, q]),
            t("ffn_gate.weight", vec![ff, h]),
            t("ffn_up.weight", vec![ff, h]),
            t("ffn_down.weight", vec![h, ff]),
        ]);
        if cfg.family.qkv_bias() {
            wanted.extend([t("attn_q.bias", vec![q]), t("attn_k.bias", vec![kv]), t("attn_v.bias", vec![kv])]);
        }
        if cfg.family.qk_norm() {
            wanted.extend([t("attn_q_norm.weight", vec![cfg.head_dim]), t("attn_k_norm.weight", vec![cfg.head_dim])]);
        }
    }
    for (name, shape, required) in wanted {
        match ct.tensor_infos.get(&name) {
            None if required => {
                return Err(EngineError::BadModel { path: path.into(), detail: format!("the tensor `{name}` is missing") })
            }
            None => {}
            Some(info) if info.shape.dims() != shape.as_slice() => {
                return Err(EngineError::BadModel {
                    path: path.into(),
                    detail: format!("the tensor `{name}` has shape {:?}, but the metadata needs {shape:?}", info.shape.dims()),
                })
            }
            Some(_) => {}
        }
    }
    Ok(())
}

struct GgufConfig<'a> {
    path: &'a Path,
    ct: &'a gguf_file::Content,
}

impl GgufConfig<'_> {
    fn string(&self, key: &str) -> Option<&String> {
        self.ct.metadata.get(key).and_then(|v| v.to_string().ok())
    }

    fn value(&self, key: &str) -> Option<f64> {
        use gguf_file::Value as V;
        // Whatever numeric type the file stored it as: range checks come after.
        Some(match self.ct.metadata.get(key)? {
            V::U8(x) => f64::from(*x),
            V::I8(x) => f64::from(*x),
            V::U16(x) => f64::from(*x),
            V::I16(x) => f64::from(*x),
            V::U32(x) => f64::from(*x),
            V::I32(x) => f64::from(*x),
            V::U64(x) => *x as f64,
            V::I64(x) => *x as f64,
            V::F32(x) => f64::from(*x),
            V::F64(x) => *x,
            _ => return None,
        })
    }

    /// The key prefix: the architecture's name, as llama.cpp writes it.
    fn prefix(&self) -> String {
        self.architecture().unwrap_or_default()
    }
}

impl ConfigSource for GgufConfig<'_> {
    fn path(&self) -> &Path {
        self.path
    }
    fn architecture(&self) -> Option<String> {
        self.string("general.architecture").cloned()
    }
    fn name(&self, key: Key) -> String {
        let suffix = match key {
            // The vocabulary is the embedding table's height, not a metadata key.
            Key::Vocab => return "token_embd.weight".into(),
            Key::Hidden => "embedding_length",
            Key::Layers => "block_count",
            Key::Heads => "attention.head_count",
            Key::KvHeads => "attention.head_count_kv",
            Key::Context => "context_length",
            Key::Intermediate => "feed_forward_length",
            Key::RmsEps => "attention.layer_norm_rms_epsilon",
            Key::RopeTheta => "rope.freq_base",
            Key::HeadDim => "attention.key_length",
            Key::RopeDim => "rope.dimension_count",
        };
        format!("{}.{suffix}", self.prefix())
    }
    fn number(&self, key: Key) -> Option<f64> {
        if key == Key::Vocab {
            return self.ct.tensor_infos.get("token_embd.weight").and_then(|t| t.shape.dims().first()).map(|&n| n as f64);
        }
        self.value(&self.name(key))
    }
    /// `{arch}.rope.scaling.type` and `.factor`, as llama.cpp writes them. Llama 3's own scaling
    /// is not here: its converter writes the divisors as the `rope_freqs.weight` tensor, which
    /// the loader reads with the weights.
    fn rope_scaling(&self) -> Result<Option<RopeScaling>> {
        let key = format!("{}.rope.scaling.type", self.prefix());
        let factor_key = format!("{}.rope.scaling.factor", self.prefix());
        match self.string(&key).map(String::as_str) {
            None | Some("none") => Ok(None),
            Some("linear") => match self.value(&factor_key) {
                Some(factor) if factor.is_finite() && factor > 0.0 => Ok(Some(RopeScaling::Linear { factor: factor as f32 })),
                other => Err(EngineError::InvalidMetadata {
                    path: self.path.into(),
                    key: factor_key,
                    detail: format!("is {other:?}; linear RoPE scaling needs a positive factor"),
                }),
            },
            Some(other) => Err(EngineError::InvalidMetadata {
                path: self.path.into(),
                key,
                detail: format!("is `{other}`; Ponder runs RoPE unscaled, linear or with Llama 3's frequencies"),
            }),
        }
    }
    fn rope_style(&self, family: Family) -> RopeStyle {
        match family {
            Family::Llama => RopeStyle::Pairs,
            Family::Qwen2 | Family::Qwen3 => RopeStyle::Halves,
        }
    }
}

struct JsonConfig<'a> {
    path: &'a Path,
    cfg: &'a serde_json::Value,
}

impl ConfigSource for JsonConfig<'_> {
    fn path(&self) -> &Path {
        self.path
    }
    fn architecture(&self) -> Option<String> {
        self.cfg["model_type"].as_str().map(String::from)
    }
    fn name(&self, key: Key) -> String {
        match key {
            Key::Vocab => "vocab_size",
            Key::Hidden => "hidden_size",
            Key::Layers => "num_hidden_layers",
            Key::Heads => "num_attention_heads",
            Key::KvHeads => "num_key_value_heads",
            Key::Context => "max_position_embeddings",
            Key::Intermediate => "intermediate_size",
            Key::RmsEps => "rms_norm_eps",
            Key::RopeTheta => "rope_theta",
            Key::HeadDim => "head_dim",
            Key::RopeDim => "rotary_dim",
        }
        .into()
    }
    fn number(&self, key: Key) -> Option<f64> {
        let v = &self.cfg[self.name(key).as_str()];
        match key {
            Key::RmsEps | Key::RopeTheta => v.as_f64(),
            _ => v.as_u64().map(|n| n as f64),
        }
    }
    /// `rope_scaling`: `{"rope_type": "llama3", "factor": …}` or `"linear"`, as Transformers
    /// reads it (older files say `type`).
    fn rope_scaling(&self) -> Result<Option<RopeScaling>> {
        let r = &self.cfg["rope_scaling"];
        if r.is_null() {
            return Ok(None);
        }
        let kind = r["rope_type"].as_str().or(r["type"].as_str()).unwrap_or_default();
        let bad = |detail: String| EngineError::InvalidMetadata { path: self.path.into(), key: "rope_scaling".into(), detail };
        let num = |name: &str| -> Result<f32> {
            match r[name].as_f64() {
                Some(v) if v.is_finite() && v > 0.0 => Ok(v as f32),
                _ => Err(bad(format!("`{name}` must be a positive number, not {}", r[name]))),
            }
        };
        match kind {
            "default" => Ok(None),
            "linear" => Ok(Some(RopeScaling::Linear { factor: num("factor")? })),
            "llama3" => {
                let (low, high) = (num("low_freq_factor")?, num("high_freq_factor")?);
                if high <= low {
                    return Err(bad(format!("`high_freq_factor` ({high}) must be above `low_freq_factor` ({low})")));
                }
                Ok(Some(RopeScaling::Llama3 {
                    factor: num("factor")?,
                    low_freq_factor: low,
                    high_freq_factor: high,
                    original_context: num("original_max_position_embeddings")?,
                }))
            }
            other => Err(bad(format!("is of type `{other}`; Ponder runs RoPE unscaled, linear or with Llama 3's frequencies"))),
        }
    }
    fn rope_style(&self, _: Family) -> RopeStyle {
        // Hugging Face weights are in their original order for every family.
        RopeStyle::Halves
    }
}

pub fn load(path: &Path, opts: &LoadOptions) -> Result<LoadedModel> {
    if !path.exists() {
        return Err(EngineError::ModelNotFound(path.to_path_buf()));
    }
    if path.is_dir() {
        load_safetensors_dir(path, opts)
    } else {
        load_gguf(path, opts)
    }
}

/// Reads and validates a GGUF header without loading weights.
pub fn read_gguf_header(path: &Path) -> Result<(gguf_file::Content, u64)> {
    let io = |source| EngineError::Io { path: path.to_path_buf(), source };
    let mut file = std::fs::File::open(path).map_err(io)?;
    let size = file.metadata().map_err(io)?.len();
    let mut magic = [0u8; 4];
    use std::io::Read;
    if size < 4 || file.read_exact(&mut magic).is_err() || &magic != b"GGUF" {
        return Err(EngineError::NotGguf { path: path.to_path_buf() });
    }
    use std::io::Seek;
    file.seek(std::io::SeekFrom::Start(0)).map_err(io)?;
    let mut reader = std::io::BufReader::new(file);
    // candle divides by the file's alignment and multiplies its dimensions: a file that says 0
    // (or sizes that overflow) would panic in there, so a panic reading the header is an error.
    let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| gguf_file::Content::read(&mut reader)));
    let read = read.map_err(|panic| EngineError::BadModel {
        path: path.to_path_buf(),
        detail: format!(
            "the header is malformed (check `general.alignment` and the tensor sizes): {}",
            crate::error::panic_message(&*panic)
        ),
    })?;
    let ct = read.map_err(|e| {
        let msg = e.to_string();
        // candle reports a short header in several wordings; all mean the file ends too early.
        let short = ["failed to fill whole buffer", "UnexpectedEof", "end of file", "remaining"];
        if short.iter().any(|s| msg.contains(s)) {
            EngineError::Truncated { path: path.to_path_buf(), detail: format!("the header ends early: {msg}") }
        } else {
            EngineError::BadModel { path: path.to_path_buf(), detail: msg }
        }
    })?;
    // Every tensor must lie inside the file: a cut-off download is caught here, not mid-load.
    let mut end = 0u64;
    for (name, info) in &ct.tensor_infos {
        let too_big =
            || EngineError::BadModel { path: path.to_path_buf(), detail: format!("the tensor `{name}` is impossibly large") };
        let elems = info.shape.dims().iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64)).ok_or_else(too_big)?;
        let bytes =
            (elems / info.ggml_dtype.block_size() as u64).checked_mul(info.ggml_dtype.type_size() as u64).ok_or_else(too_big)?;
        let tensor_end = ct.tensor_data_offset.checked_add(info.offset).and_then(|o| o.checked_add(bytes)).ok_or_else(too_big)?;
        end = end.max(tensor_end);
    }
    if end > size {
        return Err(EngineError::Truncated {
            path: path.to_path_buf(),
            detail: format!("{size} bytes, but its tensors need {end}"),
        });
    }
    Ok((ct, size))
}

/// What a GGUF file holds, from its header alone (no weights are read): for showing a model
/// before loading it.
pub fn inspect(path: &Path) -> Result<ModelInfo> {
    if !path.exists() {
        return Err(EngineError::ModelNotFound(path.to_path_buf()));
    }
    if path.is_dir() {
        let cfg_path = path.join("config.json");
        let text = std::fs::read_to_string(&cfg_path).map_err(|source| EngineError::Io { path: cfg_path.clone(), source })?;
        let cfg: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| EngineError::BadModel { path: cfg_path, detail: e.to_string() })?;
        let size = std::fs::read_dir(path).map(|d| d.filter_map(|e| e.ok()?.metadata().ok()).map(|m| m.len()).sum()).unwrap_or(0);
        let tok_cfg = std::fs::read_to_string(path.join("tokenizer_config.json")).unwrap_or_default();
        let template = serde_json::from_str::<serde_json::Value>(&tok_cfg)
            .ok()
            .and_then(|c| c["chat_template"].as_str().map(String::from))
            .unwrap_or_default();
        let thinking = Thinking::of_template(&template);
        return Ok(ModelInfo {
            name: path.file_name().unwrap_or_default().to_string_lossy().into_owned(),
            path: path.to_path_buf(),
            architecture: cfg["model_type"].as_str().unwrap_or_default().to_string(),
            quantization: cfg["torch_dtype"].as_str().unwrap_or("f32").to_string(),
            file_size: size,
            context_length: cfg["max_position_embeddings"].as_u64().unwrap_or(0) as usize,
            parameters: 0,
            reasoning: thinking != Thinking::Never,
            thinking,
            kernel: None,
        });
    }
    let (ct, size) = read_gguf_header(path)?;
    Ok(gguf_info(path, &ct, size))
}

/// [`inspect`], and an error where Ponder cannot run the model: an architecture outside its
/// families, or one part of a split GGUF. Reads the header only, for lists of many files.
pub fn inspect_runnable(path: &Path) -> Result<ModelInfo> {
    let info = if path.is_file() {
        let (ct, size) = read_gguf_header(path)?;
        let count = ct.metadata.get("split.count").and_then(|v| v.to_u16().ok()).unwrap_or(1);
        if count > 1 {
            let part = ct.metadata.get("split.no").and_then(|v| v.to_u16().ok()).unwrap_or(0);
            return Err(EngineError::SplitGguf { path: path.into(), part: u32::from(part) + 1, parts: u32::from(count) });
        }
        gguf_info(path, &ct, size)
    } else {
        inspect(path)?
    };
    if Family::of_architecture(&info.architecture).is_none() {
        return Err(EngineError::UnsupportedArchitecture { path: path.into(), found: info.architecture });
    }
    Ok(info)
}

fn gguf_info(path: &Path, ct: &gguf_file::Content, size: u64) -> ModelInfo {
    let md = |key: &str| ct.metadata.get(key).and_then(|v| v.to_string().ok()).cloned();
    let mut counts = std::collections::HashMap::<String, u64>::new();
    let mut params = 0u64;
    for info in ct.tensor_infos.values() {
        let n = info.shape.elem_count() as u64;
        params += n;
        *counts.entry(format!("{:?}", info.ggml_dtype)).or_default() += n;
    }
    let architecture = md("general.architecture").unwrap_or_default();
    let context_length =
        ct.metadata.get(&format!("{architecture}.context_length")).and_then(|v| v.to_u32().ok()).unwrap_or(0) as usize;
    let thinking = Thinking::of_template(&md("tokenizer.chat_template").unwrap_or_default());
    let ours = ct
        .tensor_infos
        .values()
        .any(|t| kquants::Format::from_ggml(t.ggml_dtype).is_some() || legacy_quants::Format::from_ggml(t.ggml_dtype).is_some());
    ModelInfo {
        name: md("general.name").unwrap_or_else(|| path.file_stem().unwrap_or_default().to_string_lossy().into_owned()),
        path: path.to_path_buf(),
        architecture,
        quantization: counts.into_iter().max_by_key(|(_, n)| *n).map(|(k, _)| k).unwrap_or_default(),
        file_size: size,
        context_length,
        parameters: params,
        reasoning: thinking != Thinking::Never,
        thinking,
        kernel: ours.then(Kernel::chosen),
    }
}

/// The text an 8-bit cache's divisors are measured on, in the model's tokens (none if the
/// vocabulary cannot spell it, and the cache then stores values unscaled).
fn calibration_tokens(tokenizer: &Tokenizer) -> Vec<u32> {
    tokenizer.encode_plain(crate::channel_scales::CALIBRATION_TEXT).unwrap_or_default()
}

fn load_gguf(path: &Path, opts: &LoadOptions) -> Result<LoadedModel> {
    let (ct, size) = read_gguf_header(path)?;
    let md = |key: &str| ct.metadata.get(key);
    if md("general.architecture").is_none() {
        return Err(EngineError::MissingMetadata { path: path.to_path_buf(), key: "general.architecture".into() });
    }
    let mut config = build_config(&GgufConfig { path, ct: &ct }, opts)?;
    check_tensor_shapes(path, &ct, &config)?;
    let tokenizer = Tokenizer::from_gguf(&ct).map_err(|e| EngineError::Tokenizer(format!("{}: {e}", path.display())))?;
    let template_src =
        md("tokenizer.chat_template").and_then(|v| v.to_string().ok()).map(String::as_str).unwrap_or(CHATML_TEMPLATE);
    let template = ChatTemplate::new(template_src, &tokenizer.bos_token, &tokenizer.eos_token)?;

    // Each tensor is read straight into its own buffer, which packing then replaces. (Through
    // a memory map, every page read stays in the process's resident memory until the map
    // goes: the whole file on top of the packed weights, which made loading the 1.5B model
    // peak at 2.3 GB.)
    let file = std::fs::File::open(path).map_err(|source| EngineError::Io { path: path.into(), source })?;
    let report = opts.on_progress.clone().unwrap_or_else(|| std::sync::Arc::new(|_| {}));
    let total = size.saturating_sub(ct.tensor_data_offset);
    let mut cursor = Counted { inner: file, read: 0, total, report: report.clone() };
    let bad = |e: candle_core::Error| EngineError::BadModel { path: path.into(), detail: e.to_string() };
    if ct.tensor_infos.contains_key("rope_freqs.weight") {
        let divisors = ct.tensor(&mut cursor, "rope_freqs.weight", &Device::Cpu).and_then(|t| t.dequantize(&Device::Cpu));
        let divisors = divisors.and_then(|t| t.to_vec1::<f32>()).map_err(bad)?;
        config.rope_scaling = Some(RopeScaling::Divisors(divisors));
    }
    let mut model = Decoder::from_gguf(&ct, &mut cursor, config.clone(), opts.kernels, &Device::Cpu)
        .map_err(|e| EngineError::BadModel { path: path.into(), detail: e.to_string() })?;
    model.set_calibration(calibration_tokens(&tokenizer));
    report(LoadProgress { done_bytes: total, total_bytes: total });

    let mut info = ModelInfo { context_length: config.context_length, ..gguf_info(path, &ct, size) };
    if opts.kernels == KQuantKernels::Candle {
        info.kernel = None;
    }
    Ok(LoadedModel { model, tokenizer, template, info })
}

fn load_safetensors_dir(dir: &Path, opts: &LoadOptions) -> Result<LoadedModel> {
    let read_json = |name: &str| -> Result<serde_json::Value> {
        let p = dir.join(name);
        let text = std::fs::read_to_string(&p).map_err(|source| EngineError::Io { path: p.clone(), source })?;
        serde_json::from_str(&text).map_err(|e| EngineError::BadModel { path: p, detail: e.to_string() })
    };
    let cfg = read_json("config.json")?;
    let tok_cfg = read_json("tokenizer_config.json")?;
    let cfg_path = dir.join("config.json");
    let config = build_config(&JsonConfig { path: &cfg_path, cfg: &cfg }, opts)?;
    let tie = cfg["tie_word_embeddings"].as_bool().unwrap_or(false);
    let tokenizer = Tokenizer::from_files(&dir.join("tokenizer.json"), &tok_cfg)?;
    let template_src = tok_cfg["chat_template"].as_str().unwrap_or(CHATML_TEMPLATE);
    let template = ChatTemplate::new(template_src, &tokenizer.bos_token, &tokenizer.eos_token)?;
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|source| EngineError::Io { path: dir.into(), source })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(EngineError::BadModel { path: dir.into(), detail: "no *.safetensors files".into() });
    }
    let size = files.iter().filter_map(|f| f.metadata().ok()).map(|m| m.len()).sum();
    // SAFETY: read-only maps of files the user pointed us at; see `load_gguf`.
    let vb = unsafe { candle_nn::VarBuilder::from_mmaped_safetensors(&files, candle_core::DType::F32, &Device::Cpu) }
        .map_err(|e| EngineError::BadModel { path: dir.into(), detail: e.to_string() })?;
    let mut model = Decoder::from_var_builder(vb, config.clone(), tie)
        .map_err(|e| EngineError::BadModel { path: dir.into(), detail: e.to_string() })?;
    model.set_calibration(calibration_tokens(&tokenizer));
    let info = ModelInfo {
        name: dir.file_name().unwrap_or_default().to_string_lossy().into_owned(),
        path: dir.to_path_buf(),
        architecture: config.family.architecture().into(),
        quantization: cfg["torch_dtype"].as_str().unwrap_or("f32").to_string(),
        file_size: size,
        context_length: config.context_length,
        parameters: 0,
        reasoning: template.is_reasoning(),
        thinking: template.thinking(),
        kernel: None,
    };
    Ok(LoadedModel { model, tokenizer, template, info })
}
