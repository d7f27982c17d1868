//! Small random-weight models of each family, for tests of the families whose real weights
//! cannot be fetched here: a few layers with the real shapes' ratios (GQA, Qwen3's head size
//! apart from the hidden size), the real Qwen tokenizer and template from the small test model,
//! written as a GGUF file (quantized as asked) or a Hugging Face safetensors folder from the
//! same weights. The weights come from a seeded generator, so every run builds the same model.

use candle_core::quantized::{gguf_file, GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use ponder_engine::Family;
use std::collections::BTreeMap;
use std::path::Path;

/// A GGUF metadata value, for `write_gguf`'s edits.
pub use candle_core::quantized::gguf_file::Value;

/// Qwen3's published chat template (tests/data/templates/qwen3.jinja), with its
/// `enable_thinking` switch.
pub const QWEN3_TEMPLATE: &str = include_str!("../../../tests/data/templates/qwen3.jinja");

/// Llama 3.1's RoPE scaling, as its `config.json` gives it.
pub fn llama3_rope_scaling() -> serde_json::Value {
    serde_json::json!({ "rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192 })
}

#[derive(Debug, Clone)]
pub struct Tiny {
    pub family: Family,
    pub hidden: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub head_dim: usize,
    pub ffn: usize,
    pub layers: usize,
    pub tied: bool,
    pub rope_theta: f32,
    /// Hugging Face's `rope_scaling` (Llama 3's, say); written as `rope_freqs.weight` in GGUF.
    pub rope_scaling: Option<serde_json::Value>,
    pub context_length: usize,
    pub seed: u64,
}

/// Which weights get which type in a quantized file: llama.cpp's Q4_K_M mixes Q4_K with Q6_K,
/// and Q8_0 files are common for these families.
#[derive(Debug, Clone, Copy)]
pub struct Quant {
    pub most: GgmlDType,
    /// `attn_v`, `ffn_down` and the output projection (as Q4_K_M gives them Q6_K).
    pub sensitive: GgmlDType,
    pub embedding: GgmlDType,
}

impl Quant {
    pub const F32: Quant = Quant { most: GgmlDType::F32, sensitive: GgmlDType::F32, embedding: GgmlDType::F32 };
    pub const Q4K_M: Quant = Quant { most: GgmlDType::Q4K, sensitive: GgmlDType::Q6K, embedding: GgmlDType::Q8_0 };
    pub const Q8_0: Quant = Quant { most: GgmlDType::Q8_0, sensitive: GgmlDType::Q8_0, embedding: GgmlDType::Q8_0 };
}

impl Tiny {
    /// `family` at the size of the 1.5B stand-in (Qwen2.5-1.5B: 28 layers of 1,536 values, 12
    /// heads of 128 sharing 2 key/value heads, 8,960 in the MLP), for speed measurements of a
    /// family whose real weights cannot be fetched here.
    pub fn at_1_5b(family: Family) -> Self {
        Tiny {
            hidden: 1536,
            heads: 12,
            kv_heads: 2,
            head_dim: 128,
            ffn: 8960,
            layers: 28,
            context_length: 32768,
            ..Tiny::of(family)
        }
    }

    /// Two layers of 256 values, 4 heads sharing 2 key/value heads: the ratios of the real
    /// models, small enough to build in a moment. Qwen3's heads are twice the hidden size over
    /// the heads, as in Qwen3-0.6B (16 heads of 128 over 1,024); Llama's output is untied.
    pub fn of(family: Family) -> Self {
        let hidden = 256;
        Tiny {
            family,
            hidden,
            heads: 4,
            kv_heads: 2,
            head_dim: if family == Family::Qwen3 { 128 } else { 64 },
            ffn: 512,
            layers: 2,
            tied: family != Family::Llama,
            rope_theta: if family == Family::Llama { 500_000.0 } else { 1_000_000.0 },
            rope_scaling: None,
            context_length: 1024,
            seed: 7,
        }
    }

    /// The weights with Hugging Face's names and layout, for an embedding table of `vocab`
    /// rows of which the first `tokens` are the tokenizer's: the rest (padding, as in the real
    /// files) are zero, so that greedy decoding picks tokens that have text.
    pub fn weights(&self, vocab: usize, tokens: usize) -> BTreeMap<String, Tensor> {
        let mut rng = Rng(self.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
        let mut w = BTreeMap::new();
        let mut put = |name: String, shape: &[usize], scale: f32, offset: f32| {
            let n: usize = shape.iter().product();
            let mut v: Vec<f32> = (0..n).map(|_| offset + scale * rng.normal()).collect();
            if shape[0] == vocab && shape.len() == 2 {
                v[tokens * shape[1]..].fill(0.0);
            }
            w.insert(name, Tensor::from_vec(v, shape, &Device::Cpu).unwrap());
        };
        let (h, hd) = (self.hidden, self.head_dim);
        let (q, kv) = (self.heads * hd, self.kv_heads * hd);
        // Small next to what the layers add: a tied model whose residual stream were mostly its
        // input's embedding would only ever repeat its last token.
        put("model.embed_tokens.weight".into(), &[vocab, h], 0.05, 0.0);
        put("model.norm.weight".into(), &[h], 0.1, 1.0);
        if !self.tied {
            put("lm_head.weight".into(), &[vocab, h], 1.0 / (h as f32).sqrt(), 0.0);
        }
        for l in 0..self.layers {
            let p = format!("model.layers.{l}");
            put(format!("{p}.input_layernorm.weight"), &[h], 0.1, 1.0);
            put(format!("{p}.post_attention_layernorm.weight"), &[h], 0.1, 1.0);
            for (name, out, inp) in [("q_proj", q, h), ("k_proj", kv, h), ("v_proj", kv, h), ("o_proj", h, q)] {
                put(format!("{p}.self_attn.{name}.weight"), &[out, inp], 1.0 / (inp as f32).sqrt(), 0.0);
                if self.family.qkv_bias() && name != "o_proj" {
                    put(format!("{p}.self_attn.{name}.bias"), &[out], 0.1, 0.0);
                }
            }
            if self.family.qk_norm() {
                put(format!("{p}.self_attn.q_norm.weight"), &[hd], 0.1, 1.0);
                put(format!("{p}.self_attn.k_norm.weight"), &[hd], 0.1, 1.0);
            }
            put(format!("{p}.mlp.gate_proj.weight"), &[self.ffn, h], 1.0 / (h as f32).sqrt(), 0.0);
            put(format!("{p}.mlp.up_proj.weight"), &[self.ffn, h], 1.0 / (h as f32).sqrt(), 0.0);
            put(format!("{p}.mlp.down_proj.weight"), &[h, self.ffn], 1.0 / (self.ffn as f32).sqrt(), 0.0);
        }
        w
    }

    /// A GGUF file as llama.cpp's converter writes one: its names, Llama's q and k rows
    /// permuted for RoPE on interleaved pairs, Llama 3's RoPE divisors as `rope_freqs.weight`,
    /// norms in f32 and the rest quantized as `quant` says; the small test model's tokenizer
    /// and chat template. `edit` may change the metadata before it is written (for malformed
    /// files).
    pub fn write_gguf(&self, path: &Path, quant: Quant, edit: impl FnOnce(&mut BTreeMap<String, gguf_file::Value>)) {
        let (tokenizer, vocab) = small_tokenizer();
        let tokens = token_count(&tokenizer);
        let arch = self.family.architecture();
        let mut md: BTreeMap<String, gguf_file::Value> = tokenizer;
        use gguf_file::Value as V;
        let u = |n: usize| V::U32(n as u32);
        md.insert("general.architecture".into(), V::String(arch.into()));
        md.insert("general.name".into(), V::String(format!("tiny-{arch}")));
        for (k, v) in [
            ("embedding_length", u(self.hidden)),
            ("attention.head_count", u(self.heads)),
            ("attention.head_count_kv", u(self.kv_heads)),
            ("block_count", u(self.layers)),
            ("feed_forward_length", u(self.ffn)),
            ("context_length", u(self.context_length)),
            ("attention.layer_norm_rms_epsilon", V::F32(1e-6)),
            ("rope.freq_base", V::F32(self.rope_theta)),
        ] {
            md.insert(format!("{arch}.{k}"), v);
        }
        match self.family {
            Family::Qwen2 => {}
            Family::Qwen3 => {
                md.insert(format!("{arch}.attention.key_length"), u(self.head_dim));
                md.insert(format!("{arch}.attention.value_length"), u(self.head_dim));
            }
            Family::Llama => {
                md.insert(format!("{arch}.rope.dimension_count"), u(self.head_dim));
                md.insert(format!("{arch}.vocab_size"), u(vocab));
            }
        }
        // candle's stock Qwen3 builds its RoPE tables in the file's dtype: f32, as Ponder does.
        md.insert("general.dtype".into(), V::U32(0));
        edit(&mut md);

        let mut tensors: Vec<(String, QTensor)> = Vec::new();
        for (name, t) in self.weights(vocab, tokens) {
            let (gg, dtype) = self.gguf_name(&name, quant);
            let t = match (self.family, gg.rsplit('.').nth(1)) {
                (Family::Llama, Some("attn_q")) => permute_for_pairs(&t, self.heads),
                (Family::Llama, Some("attn_k")) => permute_for_pairs(&t, self.kv_heads),
                _ => t,
            };
            tensors.push((gg, QTensor::quantize(&t, dtype).unwrap()));
        }
        if let Some(scaling) = &self.rope_scaling {
            let divisors = llama3_divisors(scaling, self.head_dim, self.rope_theta);
            let t = Tensor::from_vec(divisors, self.head_dim / 2, &Device::Cpu).unwrap();
            tensors.push(("rope_freqs.weight".into(), QTensor::quantize(&t, GgmlDType::F32).unwrap()));
        }
        let md_refs: Vec<(&str, &V)> = md.iter().map(|(k, v)| (k.as_str(), v)).collect();
        let t_refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, t)| (k.as_str(), t)).collect();
        let mut out = std::fs::File::create(path).unwrap();
        gguf_file::write(&mut out, &md_refs, &t_refs).unwrap();
    }

    /// The same weights as a Hugging Face folder: `config.json`, `model.safetensors`,
    /// `tokenizer.json` and `tokenizer_config.json`.
    pub fn write_safetensors(&self, dir: &Path) {
        let (tokenizer_md, vocab) = small_tokenizer();
        std::fs::create_dir_all(dir).unwrap();
        let tokens = token_count(&tokenizer_md);
        let weights: std::collections::HashMap<String, Tensor> = self.weights(vocab, tokens).into_iter().collect();
        candle_core::safetensors::save(&weights, dir.join("model.safetensors")).unwrap();
        let mut config = serde_json::json!({
            "model_type": self.family.architecture(), "hidden_size": self.hidden, "num_attention_heads": self.heads,
            "num_key_value_heads": self.kv_heads, "num_hidden_layers": self.layers, "intermediate_size": self.ffn,
            "vocab_size": vocab, "max_position_embeddings": 1024, "rms_norm_eps": 1e-6, "rope_theta": self.rope_theta,
            "tie_word_embeddings": self.tied, "torch_dtype": "float32",
        });
        if self.family == Family::Qwen3 {
            config["head_dim"] = self.head_dim.into();
        }
        if let Some(s) = &self.rope_scaling {
            config["rope_scaling"] = s.clone();
        }
        std::fs::write(dir.join("config.json"), config.to_string()).unwrap();
        let template = tokenizer_md["tokenizer.chat_template"].to_string().unwrap().clone();
        let tok_cfg = serde_json::json!({ "chat_template": template, "eos_token": "<|im_end|>", "bos_token": null, "add_bos_token": false });
        std::fs::write(dir.join("tokenizer_config.json"), tok_cfg.to_string()).unwrap();
        let ct = gguf_file::Content {
            magic: gguf_file::VersionedMagic::GgufV3,
            metadata: tokenizer_md.into_iter().collect(),
            tensor_infos: Default::default(),
            tensor_data_offset: 0,
        };
        use candle_core::quantized::tokenizer::TokenizerFromGguf;
        tokenizers::Tokenizer::from_gguf(&ct).unwrap().save(dir.join("tokenizer.json"), false).unwrap();
    }

    fn gguf_name(&self, hf: &str, quant: Quant) -> (String, GgmlDType) {
        let n = hf.strip_prefix("model.").unwrap_or(hf);
        let f32 = GgmlDType::F32;
        match n {
            "embed_tokens.weight" => return ("token_embd.weight".into(), quant.embedding),
            "norm.weight" => return ("output_norm.weight".into(), f32),
            "lm_head.weight" => return ("output.weight".into(), quant.sensitive),
            _ => {}
        }
        let n = n.replace("layers.", "blk.");
        let name = [
            ("self_attn.q_proj", "attn_q"),
            ("self_attn.k_proj", "attn_k"),
            ("self_attn.v_proj", "attn_v"),
            ("self_attn.o_proj", "attn_output"),
            ("self_attn.q_norm", "attn_q_norm"),
            ("self_attn.k_norm", "attn_k_norm"),
            ("mlp.gate_proj", "ffn_gate"),
            ("mlp.up_proj", "ffn_up"),
            ("mlp.down_proj", "ffn_down"),
            ("input_layernorm", "attn_norm"),
            ("post_attention_layernorm", "ffn_norm"),
        ]
        .iter()
        .fold(n, |n, (a, b)| n.replace(a, b));
        let dtype = if name.contains("norm") || name.ends_with(".bias") {
            f32
        } else if name.contains("attn_v") || name.contains("ffn_down") {
            quant.sensitive
        } else {
            quant.most
        };
        (name, dtype)
    }
}

/// llama.cpp's `permute` for Llama's q and k: within each head, row `s · hd/2 + j` moves to
/// `2j + s`, so that RoPE on interleaved pairs rotates what "rotate half" did.
fn permute_for_pairs(t: &Tensor, heads: usize) -> Tensor {
    let (rows, cols) = t.dims2().unwrap();
    let hd = rows / heads;
    let v = t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
    let mut out = vec![0f32; v.len()];
    for h in 0..heads {
        for s in 0..2 {
            for j in 0..hd / 2 {
                let (from, to) = (h * hd + s * hd / 2 + j, h * hd + 2 * j + s);
                out[to * cols..(to + 1) * cols].copy_from_slice(&v[from * cols..(from + 1) * cols]);
            }
        }
    }
    Tensor::from_vec(out, (rows, cols), &Device::Cpu).unwrap()
}

/// The divisors llama.cpp's converter writes for Llama 3's scaling (`generate_extra_tensors`).
fn llama3_divisors(s: &serde_json::Value, hd: usize, theta: f32) -> Vec<f32> {
    let f = |k: &str| s[k].as_f64().unwrap();
    let (factor, low, high, old) =
        (f("factor"), f("low_freq_factor"), f("high_freq_factor"), f("original_max_position_embeddings"));
    (0..hd)
        .step_by(2)
        .map(|i| {
            let freq = 1.0 / (theta as f64).powf(i as f64 / hd as f64);
            let wavelen = 2.0 * std::f64::consts::PI / freq;
            if wavelen < old / high {
                1.0
            } else if wavelen > old / low {
                factor as f32
            } else {
                let smooth = (old / wavelen - low) / (high - low);
                (1.0 / ((1.0 - smooth) / factor + smooth)) as f32
            }
        })
        .collect()
}

/// The small test model's tokenizer and chat template metadata, and its vocabulary's size (the
/// height of its embedding table).
fn small_tokenizer() -> (BTreeMap<String, gguf_file::Value>, usize) {
    let path = crate::small_model();
    let mut f = std::fs::File::open(&path).unwrap();
    let ct = gguf_file::Content::read(&mut f).unwrap();
    let vocab = ct.tensor_infos["token_embd.weight"].shape.dims()[0];
    let md = ct.metadata.into_iter().filter(|(k, _)| k.starts_with("tokenizer.")).collect();
    (md, vocab)
}

fn token_count(md: &BTreeMap<String, gguf_file::Value>) -> usize {
    md["tokenizer.ggml.tokens"].to_vec().map_or(0, |t| t.len())
}

/// xorshift64*, with Box-Muller normals: the same weights on every machine.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn uniform(&mut self) -> f32 {
        ((self.next() >> 40) as f32 + 0.5) / (1u64 << 24) as f32
    }
    fn normal(&mut self) -> f32 {
        let (a, b) = (self.uniform(), self.uniform());
        (-2.0 * a.ln()).sqrt() * (2.0 * std::f32::consts::PI * b).cos()
    }
}
