//! The decoder forward pass over a *ragged* batch, for every family in [`crate::family`]: the
//! families differ in a bias on q, k and v (Qwen2), a norm on each head of q and k (Qwen3), and
//! how RoPE pairs values and scales its frequencies (Llama), each a field of [`DecoderConfig`].
//!
//! One call runs one engine step: any mix of sequences that decode one token and sequences that
//! prefill a chunk of their prompt, each at its own position with its own KV cache. Linear layers
//! (the weights, which dominate the cost) run once over all of the step's tokens; attention runs
//! per sequence over that sequence's cache. Every operation on a token's row is independent of
//! the other rows in the step, so batching does not change what a sequence computes.

use crate::attention;
use crate::channel_scales::{ChannelScales, LayerScales};
use crate::family::Family;
use crate::kquants::{KQuantKernels, KQuantMatrix};
use crate::kv_cache::{KvCacheType, SeqCache};
use crate::legacy_quants::LegacyMatrix;
use crate::rope::{Rope, RopeScaling, RopeStyle};
use crate::rowwise;
use candle_core::quantized::{gguf_file, GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Tensor};
use std::sync::{Arc, OnceLock};

/// Shapes and constants of a model.
#[derive(Debug, Clone, PartialEq)]
pub struct DecoderConfig {
    pub family: Family,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_layers: usize,
    pub num_heads: usize,
    pub num_kv_heads: usize,
    pub head_dim: usize,
    pub context_length: usize,
    pub rms_norm_eps: f64,
    pub rope_theta: f32,
    pub rope_style: RopeStyle,
    pub rope_scaling: Option<RopeScaling>,
    pub intermediate_size: usize,
}

impl DecoderConfig {
    /// Bytes of KV cache one token takes across all layers (K and V) when stored as `kind`.
    pub fn kv_bytes_per_token(&self, kind: KvCacheType) -> usize {
        self.num_layers * 2 * self.num_kv_heads * kind.row_bytes(self.head_dim)
    }
}

/// The weights of a linear layer. K-quant blocks and the 32-value Q8_0, Q5_0 and Q4_0 blocks
/// go through Ponder's own kernels (see [`crate::kquants`], [`crate::legacy_quants`]); other
/// formats and dense weights through candle.
#[derive(Debug, Clone)]
enum Weights {
    KQuant(KQuantMatrix),
    Legacy(LegacyMatrix),
    Candle(QMatMul),
}

impl Weights {
    fn quantized(q: Arc<QTensor>, kernels: KQuantKernels) -> candle_core::Result<Self> {
        if kernels == KQuantKernels::Ponder {
            if let Some(m) = KQuantMatrix::new(q.clone()) {
                return Ok(Self::KQuant(m));
            }
            if let Some(m) = LegacyMatrix::new(q.clone()) {
                return Ok(Self::Legacy(m));
            }
        }
        Ok(Self::Candle(QMatMul::from_arc(q)?))
    }
}

/// A linear layer: quantized (GGUF) or plain (safetensors) weights behind one matmul.
#[derive(Debug, Clone)]
struct Linear {
    weight: Weights,
    bias: Option<Tensor>,
}

impl Linear {
    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        let [y] = Self::forward_all([self], x)?;
        Ok(y)
    }

    /// Several layers over the same input (q, k, v; gate, up): with Ponder's kernels, layers of
    /// one kind share one quantization of `x` and one parallel pass.
    fn forward_all<const N: usize>(layers: [&Linear; N], x: &Tensor) -> candle_core::Result<[Tensor; N]> {
        let kquant = all_of(&layers, |w| match w {
            Weights::KQuant(m) => Some(m),
            _ => None,
        });
        let legacy = all_of(&layers, |w| match w {
            Weights::Legacy(m) => Some(m),
            _ => None,
        });
        let ys = match (kquant, legacy) {
            (Some(mats), _) => KQuantMatrix::forward_all(&mats, x)?,
            (_, Some(mats)) => LegacyMatrix::forward_all(&mats, x)?,
            _ => layers.iter().map(|l| l.matmul(x)).collect::<candle_core::Result<_>>()?,
        };
        let ys = ys
            .into_iter()
            .zip(layers)
            .map(|(y, l)| match &l.bias {
                Some(b) => y.broadcast_add(b),
                None => Ok(y),
            })
            .collect::<candle_core::Result<Vec<_>>>()?;
        Ok(ys.try_into().unwrap_or_else(|_| unreachable!("one output per layer")))
    }

    fn matmul(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        match &self.weight {
            Weights::KQuant(w) => w.forward(x),
            Weights::Legacy(w) => w.forward(x),
            Weights::Candle(w @ QMatMul::QTensor(q)) if q.dtype() == GgmlDType::Q6K && x.dim(0)? == 1 => {
                // candle multiplies one row by Q6_K weights with another kernel than several
                // rows, and the two round differently: a lone row is paired with itself so a
                // sequence's output never depends on whether others share its step.
                w.forward(&Tensor::cat(&[x, x], 0)?)?.narrow(0, 0, 1)
            }
            Weights::Candle(w) => w.forward(x),
        }
    }
}

/// Each layer's weights as one kind of matrix, if every layer has that kind.
fn all_of<'a, T>(layers: &[&'a Linear], kind: impl Fn(&'a Weights) -> Option<&'a T>) -> Option<Vec<&'a T>> {
    layers.iter().map(|l| kind(&l.weight)).collect()
}

#[derive(Debug, Clone)]
struct RmsNorm {
    weight: Vec<f32>,
    eps: f32,
}

impl RmsNorm {
    fn new(weight: Tensor, eps: f32) -> candle_core::Result<Self> {
        Ok(Self { weight: weight.to_dtype(DType::F32)?.to_vec1()?, eps })
    }

    fn forward(&self, x: &Tensor) -> candle_core::Result<Tensor> {
        rowwise::rms_norm(x, &self.weight, self.eps)
    }
}

/// Self-attention: q, k and v from one fused product, (for Qwen3) each head of q and k normed,
/// RoPE, each sequence attending over its own cache, and the output projection.
#[derive(Debug, Clone)]
struct Attention {
    q: Linear,
    k: Linear,
    v: Linear,
    o: Linear,
    qk_norm: Option<(RmsNorm, RmsNorm)>,
}

/// What attention needs of the step besides its input rows.
struct StepCtx<'a> {
    /// Each token's position in its sequence, in step order.
    positions: &'a [u32],
    rope: &'a Rope,
    heads: attention::Heads,
    device: &'a Device,
    /// Each layer's divisors for 8-bit caches, when the step has one.
    scales: Option<&'a [LayerScales]>,
}

impl Attention {
    /// `h` is the normed input, `(T, hidden)` over the whole step; the step's keys and values
    /// are appended to each sequence's cache for layer `layer`.
    fn forward(&self, h: &Tensor, inputs: &mut [StepInput<'_>], layer: usize, step: &StepCtx<'_>) -> Result<Tensor> {
        let attention::Heads { heads: nh, kv_heads: nkv, hd } = step.heads;
        let total = h.dim(0)?;
        let [q, k, v] = Linear::forward_all([&self.q, &self.k, &self.v], h)?; // (T, nh*hd), (T, nkv*hd) × 2
        let (q, k) = match &self.qk_norm {
            Some((qn, kn)) => (per_head(qn, &q, nh, hd)?, per_head(kn, &k, nkv, hd)?),
            None => (q, k),
        };
        // Laid out by head, (heads, T, hd), q and k rotated for their positions.
        let mut qv = step.rope.apply(&q, nh, step.positions)?;
        let kv = step.rope.apply(&k, nkv, step.positions)?;
        let vv = rowwise::by_head(&v, nkv, hd)?;
        let mut offset = 0;
        for s in inputs.iter_mut() {
            let len = s.tokens.len();
            let (mut k_s, mut v_s) = (rows(&kv, nkv, total, hd, offset, len), rows(&vv, nkv, total, hd, offset, len));
            if let Some(scales) = step.scales.filter(|_| s.cache.kind() == KvCacheType::Q8_0).map(|all| &all[layer]) {
                if let Some(keys) = &scales.keys {
                    keys.divide(&mut k_s);
                    keys.scale_queries(&mut qv, nh, total, offset, len);
                }
                if let Some(values) = &scales.values {
                    values.divide(&mut v_s);
                }
            }
            s.cache.layer_mut(layer).append(nkv, hd, &k_s, &v_s);
            offset += len;
        }
        let spans: Vec<attention::Span> = inputs
            .iter()
            .scan(0, |first_row, s| {
                let rows = s.tokens.len();
                let span = attention::Span { cache: s.cache.layer(layer), past: s.cache.len(), first_row: *first_row, rows };
                *first_row += rows;
                Some(span)
            })
            .collect();
        let mut attn = attention::attend(&qv, total, &spans, step.heads);
        if let Some(scales) = step.scales.and_then(|all| all[layer].values.as_ref()) {
            let mut first = 0;
            for s in inputs.iter() {
                if s.cache.kind() == KvCacheType::Q8_0 {
                    scales.scale_outputs(&mut attn, nh, first, s.tokens.len());
                }
                first += s.tokens.len();
            }
        }
        self.o.forward(&Tensor::from_vec(attn, (total, nh * hd), step.device)?)
    }
}

/// The feed-forward block: SwiGLU, `down(silu(gate(h)) · up(h))`.
#[derive(Debug, Clone)]
struct Mlp {
    gate: Linear,
    up: Linear,
    down: Linear,
}

impl Mlp {
    fn forward(&self, h: &Tensor) -> Result<Tensor> {
        let [gate, up] = Linear::forward_all([&self.gate, &self.up], h)?;
        self.down.forward(&rowwise::silu_mul(&gate, &up)?)
    }
}

/// A decoder layer: pre-norm attention and feed-forward, each added to its input.
#[derive(Debug, Clone)]
struct Layer {
    attn_norm: RmsNorm,
    attn: Attention,
    ffn_norm: RmsNorm,
    mlp: Mlp,
}

impl Layer {
    fn forward(&self, x: Tensor, inputs: &mut [StepInput<'_>], index: usize, step: &StepCtx<'_>) -> Result<Tensor> {
        let x = (self.attn.forward(&self.attn_norm.forward(&x)?, inputs, index, step)? + x)?;
        self.mlp.forward(&self.ffn_norm.forward(&x)?)? + x
    }
}

/// Where the embedding rows come from. A quantized table is looked up row by row so that the
/// f32 copy of a 151k-token vocabulary (~0.9 GiB for the 1.5B model) never exists. A table in
/// one of Ponder's formats is the same matrix the tied output projection multiplies by, held once.
#[derive(Debug, Clone)]
enum Embedding {
    KQuant(KQuantMatrix),
    Legacy(LegacyMatrix),
    Quantized(Arc<QTensor>),
    Dense(Tensor),
}

impl Embedding {
    /// The table from the file: packed for Ponder's kernels (the file's copy dropped right
    /// away, before the layers load), kept quantized, or made dense if it is a float format.
    fn new(table: QTensor, kernels: KQuantKernels, device: &Device) -> candle_core::Result<Self> {
        let table = Arc::new(table);
        if kernels == KQuantKernels::Ponder {
            if let Some(m) = KQuantMatrix::new(table.clone()) {
                return Ok(Embedding::KQuant(m));
            }
            if let Some(m) = LegacyMatrix::new(table.clone()) {
                return Ok(Embedding::Legacy(m));
            }
        }
        Ok(if matches!(table.dtype(), GgmlDType::F32 | GgmlDType::F16 | GgmlDType::BF16) {
            Embedding::Dense(table.dequantize(device)?)
        } else {
            Embedding::Quantized(table)
        })
    }

    /// The same table as an output projection (tied embeddings).
    fn as_weights(&self, kernels: KQuantKernels) -> candle_core::Result<Weights> {
        match self {
            Embedding::KQuant(m) => Ok(Weights::KQuant(m.clone())),
            Embedding::Legacy(m) => Ok(Weights::Legacy(m.clone())),
            Embedding::Quantized(q) => Weights::quantized(q.clone(), kernels),
            Embedding::Dense(t) => Ok(Weights::Candle(QMatMul::Tensor(t.clone()))),
        }
    }

    fn forward(&self, ids: &Tensor) -> candle_core::Result<Tensor> {
        match self {
            Embedding::KQuant(m) => m.rows(ids),
            Embedding::Legacy(m) => m.rows(ids),
            Embedding::Quantized(q) => q.embedding(ids),
            Embedding::Dense(t) => t.index_select(ids, 0),
        }
    }
}

/// One sequence's share of a step: the tokens to feed, starting at the cache's current length.
pub struct StepInput<'a> {
    pub tokens: &'a [u32],
    pub cache: &'a mut SeqCache,
    /// For how many of its last tokens the caller needs logits: 0, 1 for the next token, or
    /// more to score a text (perplexity) or check drafted tokens.
    pub logit_rows: usize,
}

pub struct Decoder {
    config: DecoderConfig,
    embed: Embedding,
    layers: Vec<Layer>,
    norm: RmsNorm,
    output: Linear,
    rope: Rope,
    device: Device,
    /// The tokens an 8-bit cache's divisors are measured on ([`Decoder::set_calibration`]).
    calibration: Vec<u32>,
    /// Each layer's divisors, measured when the first 8-bit cache is made.
    cache_scales: OnceLock<Vec<LayerScales>>,
}

/// Errors are candle's own; the loader maps them to what a user can act on.
pub type Result<T> = candle_core::Result<T>;

impl Decoder {
    pub fn config(&self) -> &DecoderConfig {
        &self.config
    }

    /// The cache type this model's caches get when `kind` is asked for: `kind` where the
    /// model's head size allows it (see [`KvCacheType::for_head_dim`]).
    pub fn kv_cache_type(&self, kind: KvCacheType) -> KvCacheType {
        kind.for_head_dim(self.config.head_dim)
    }

    /// A new, empty KV cache for one sequence, of [`Decoder::kv_cache_type`]`(kind)`.
    /// The first 8-bit cache measures the model's divisors for it (see [`Decoder::cache_scales`]).
    pub fn new_cache(&self, kind: KvCacheType) -> SeqCache {
        let kind = self.kv_cache_type(kind);
        if kind == KvCacheType::Q8_0 {
            self.cache_scales();
        }
        SeqCache::new(self.config.num_layers, kind)
    }

    /// Loads the model from an opened GGUF file (metadata already validated by the caller).
    pub fn from_gguf<R: std::io::Read + std::io::Seek>(
        ct: &gguf_file::Content,
        reader: &mut R,
        config: DecoderConfig,
        kernels: KQuantKernels,
        device: &Device,
    ) -> Result<Self> {
        let mut get = |name: &str| ct.tensor(reader, name, device);
        let dense = |q: QTensor| q.dequantize(device);
        let bias = config.family.qkv_bias();
        let linear = |get: &mut dyn FnMut(&str) -> Result<QTensor>, name: &str, bias: bool| -> Result<Linear> {
            let weight = Weights::quantized(Arc::new(get(&format!("{name}.weight"))?), kernels)?;
            let bias = if bias { Some(get(&format!("{name}.bias"))?.dequantize(device)?) } else { None };
            Ok(Linear { weight, bias })
        };
        let eps = config.rms_norm_eps as f32;
        let embed = Embedding::new(get("token_embd.weight")?, kernels, device)?;
        let output = match get("output.weight") {
            Ok(w) => Linear { weight: Weights::quantized(Arc::new(w), kernels)?, bias: None },
            // Tied embeddings (both test models): the output projection reuses the table.
            Err(_) => Linear { weight: embed.as_weights(kernels)?, bias: None },
        };
        let norm = RmsNorm::new(dense(get("output_norm.weight")?)?, eps)?;
        let mut layers = Vec::with_capacity(config.num_layers);
        for i in 0..config.num_layers {
            let p = format!("blk.{i}");
            let mut norm_of = |name: &str| -> Result<RmsNorm> { RmsNorm::new(dense(get(&format!("{p}.{name}.weight"))?)?, eps) };
            let qk_norm = if config.family.qk_norm() { Some((norm_of("attn_q_norm")?, norm_of("attn_k_norm")?)) } else { None };
            let (attn_norm, ffn_norm) = (norm_of("attn_norm")?, norm_of("ffn_norm")?);
            layers.push(Layer {
                attn_norm,
                attn: Attention {
                    q: linear(&mut get, &format!("{p}.attn_q"), bias)?,
                    k: linear(&mut get, &format!("{p}.attn_k"), bias)?,
                    v: linear(&mut get, &format!("{p}.attn_v"), bias)?,
                    o: linear(&mut get, &format!("{p}.attn_output"), false)?,
                    qk_norm,
                },
                ffn_norm,
                mlp: Mlp {
                    gate: linear(&mut get, &format!("{p}.ffn_gate"), false)?,
                    up: linear(&mut get, &format!("{p}.ffn_up"), false)?,
                    down: linear(&mut get, &format!("{p}.ffn_down"), false)?,
                },
            });
        }
        Self::assemble(config, embed, layers, norm, output, device)
    }

    /// Loads the model from Hugging Face safetensors weights (`model.*` names).
    pub fn from_var_builder(vb: candle_nn::VarBuilder, config: DecoderConfig, tie: bool) -> Result<Self> {
        let device = vb.device().clone();
        let (h, hd) = (config.hidden_size, config.head_dim);
        let kv = config.num_kv_heads * hd;
        let q_dim = config.num_heads * hd;
        let eps = config.rms_norm_eps as f32;
        let bias = config.family.qkv_bias();
        let lin = |vb: candle_nn::VarBuilder, i: usize, o: usize, bias: bool| -> Result<Linear> {
            let w = vb.get((o, i), "weight")?.to_dtype(DType::F32)?;
            let b = if bias { Some(vb.get(o, "bias")?.to_dtype(DType::F32)?) } else { None };
            Ok(Linear { weight: Weights::Candle(QMatMul::Tensor(w)), bias: b })
        };
        let norm = |vb: candle_nn::VarBuilder, n: usize| -> Result<RmsNorm> { RmsNorm::new(vb.get(n, "weight")?, eps) };
        let m = vb.pp("model");
        let embed = m.pp("embed_tokens").get((config.vocab_size, h), "weight")?.to_dtype(DType::F32)?;
        let mut layers = Vec::with_capacity(config.num_layers);
        for i in 0..config.num_layers {
            let l = m.pp(format!("layers.{i}"));
            let a = l.pp("self_attn");
            let f = l.pp("mlp");
            let ffn = config.intermediate_size;
            let qk_norm =
                if config.family.qk_norm() { Some((norm(a.pp("q_norm"), hd)?, norm(a.pp("k_norm"), hd)?)) } else { None };
            layers.push(Layer {
                attn_norm: norm(l.pp("input_layernorm"), h)?,
                attn: Attention {
                    q: lin(a.pp("q_proj"), h, q_dim, bias)?,
                    k: lin(a.pp("k_proj"), h, kv, bias)?,
                    v: lin(a.pp("v_proj"), h, kv, bias)?,
                    o: lin(a.pp("o_proj"), q_dim, h, false)?,
                    qk_norm,
                },
                ffn_norm: norm(l.pp("post_attention_layernorm"), h)?,
                mlp: Mlp {
                    gate: lin(f.pp("gate_proj"), h, ffn, false)?,
                    up: lin(f.pp("up_proj"), h, ffn, false)?,
                    down: lin(f.pp("down_proj"), ffn, h, false)?,
                },
            });
        }
        let output = if tie {
            Linear { weight: Weights::Candle(QMatMul::Tensor(embed.clone())), bias: None }
        } else {
            lin(vb.pp("lm_head"), h, config.vocab_size, false)?
        };
        let final_norm = norm(m.pp("norm"), h)?;
        Self::assemble(config, Embedding::Dense(embed), layers, final_norm, output, &device)
    }

    fn assemble(
        config: DecoderConfig,
        embed: Embedding,
        layers: Vec<Layer>,
        norm: RmsNorm,
        output: Linear,
        device: &Device,
    ) -> Result<Self> {
        let rope = Rope::new(
            config.head_dim,
            config.rope_theta,
            config.context_length,
            config.rope_style,
            config.rope_scaling.as_ref(),
        )?;
        Ok(Self {
            config,
            embed,
            layers,
            norm,
            output,
            rope,
            device: device.clone(),
            calibration: Vec::new(),
            cache_scales: OnceLock::new(),
        })
    }

    /// The tokens of [`channel_scales::CALIBRATION_TEXT`](crate::channel_scales::CALIBRATION_TEXT)
    /// in this model's vocabulary, on which an 8-bit cache's divisors are measured. Without them
    /// (a model built without a tokenizer) the 8-bit cache stores the values as they are.
    pub fn set_calibration(&mut self, tokens: Vec<u32>) {
        self.calibration = tokens;
        self.cache_scales = OnceLock::new();
    }

    /// Each layer's divisors for an 8-bit cache: the calibration text read once with an f16 cache,
    /// and each channel's size taken from what that cache holds.
    fn cache_scales(&self) -> &[LayerScales] {
        self.cache_scales.get_or_init(|| {
            let cfg = &self.config;
            let none = || vec![LayerScales::default(); cfg.num_layers];
            let n = self.calibration.len().min(cfg.context_length);
            if n == 0 {
                return none();
            }
            let mut cache = SeqCache::new(cfg.num_layers, KvCacheType::F16);
            let read = self.forward(&mut [StepInput { tokens: &self.calibration[..n], cache: &mut cache, logit_rows: 0 }]);
            if let Err(e) = read {
                tracing::warn!("8-bit cache: the calibration text failed ({e}); values are stored unscaled");
                return none();
            }
            let (kv_heads, hd) = (cfg.num_kv_heads, cfg.head_dim);
            (0..cfg.num_layers)
                .map(|l| {
                    let layer = cache.layer(l);
                    LayerScales {
                        keys: ChannelScales::measure(kv_heads, hd, Some(&self.rope), |h| layer.keys(h, hd, n).f16_rows()),
                        values: ChannelScales::measure(kv_heads, hd, None, |h| layer.values(h, hd, n).f16_rows()),
                    }
                })
                .collect()
        })
    }

    /// Runs one step over a ragged batch. Returns the logits each input asked for, in input
    /// and token order, as a `(n, vocab)` tensor (or `None` when no input asked).
    pub fn forward(&self, inputs: &mut [StepInput<'_>]) -> Result<Option<Tensor>> {
        let total: usize = inputs.iter().map(|s| s.tokens.len()).sum();
        if total == 0 {
            return Ok(None);
        }
        let cfg = &self.config;
        let mut ids = Vec::with_capacity(total);
        let mut positions = Vec::with_capacity(total);
        for s in inputs.iter() {
            let start = s.cache.len();
            if start + s.tokens.len() > cfg.context_length {
                candle_core::bail!(
                    "sequence of {} tokens exceeds the context length {}",
                    start + s.tokens.len(),
                    cfg.context_length
                );
            }
            ids.extend_from_slice(s.tokens);
            positions.extend((start..start + s.tokens.len()).map(|p| p as u32));
        }
        let ids = Tensor::from_vec(ids, total, &self.device)?;

        let step = StepCtx {
            positions: &positions,
            rope: &self.rope,
            heads: attention::Heads { heads: cfg.num_heads, kv_heads: cfg.num_kv_heads, hd: cfg.head_dim },
            device: &self.device,
            scales: inputs.iter().any(|s| s.cache.kind() == KvCacheType::Q8_0).then(|| self.cache_scales()),
        };
        let mut x = self.embed.forward(&ids)?; // (T, H)
        for (i, layer) in self.layers.iter().enumerate() {
            x = layer.forward(x, inputs, i, &step)?;
        }
        for s in inputs.iter_mut() {
            s.cache.commit(s.tokens.len());
        }

        // Logits only for the rows that need them: usually the last token of each sequence.
        let mut rows = Vec::new();
        let mut offset = 0u32;
        for s in inputs.iter() {
            let n = s.tokens.len() as u32;
            rows.extend(offset + n - (s.logit_rows as u32).min(n)..offset + n);
            offset += n;
        }
        if rows.is_empty() {
            return Ok(None);
        }
        let n = rows.len();
        let rows = Tensor::from_vec(rows, n, &self.device)?;
        let last = x.index_select(&rows, 0)?;
        let last = self.norm.forward(&last)?;
        Ok(Some(self.output.forward(&last)?))
    }
}

/// Rows `offset..offset + len` of every head of a `(heads, total, hd)` buffer, as
/// `(heads, len, hd)`.
fn rows(all: &[f32], heads: usize, total: usize, hd: usize, offset: usize, len: usize) -> Vec<f32> {
    (0..heads).flat_map(|h| &all[(h * total + offset) * hd..(h * total + offset + len) * hd]).copied().collect()
}

/// `norm` over each head of `x` (`(T, heads · hd)`), as Qwen3 norms q and k.
fn per_head(norm: &RmsNorm, x: &Tensor, heads: usize, hd: usize) -> Result<Tensor> {
    let t = x.dim(0)?;
    norm.forward(&x.reshape((t * heads, hd))?)?.reshape((t, heads * hd))
}
