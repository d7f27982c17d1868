//! A Hugging Face safetensors folder loads and computes what the same weights compute from a
//! GGUF file. The model is a small random Qwen2 made here, with the real Qwen tokenizer.

use candle_core::quantized::tokenizer::TokenizerFromGguf;
use candle_core::quantized::{gguf_file, GgmlDType, QTensor};
use candle_core::{DType, Device, Tensor};
use ponder_engine::decoder::StepInput;
use ponder_engine::{LoadOptions, Message};
use std::collections::HashMap;

const H: usize = 64;
const HEADS: usize = 4;
const KV: usize = 2;
const FFN: usize = 128;
const LAYERS: usize = 2;

#[test]
fn safetensors_folder_matches_the_same_weights_in_gguf() {
    let dir = tempfile::tempdir().unwrap();
    let src = ponder_testkit::model(ponder_testkit::SMALL);
    let mut f = std::fs::File::open(&src).unwrap();
    let ct = gguf_file::Content::read(&mut f).unwrap();
    let vocab = ct.tensor_infos["token_embd.weight"].shape.dims()[0];

    // Random weights, HF names.
    let dev = Device::Cpu;
    let rnd = |shape: &[usize], scale: f64| Tensor::randn(0f32, 1f32, shape, &dev).unwrap().affine(scale, 0.0).unwrap();
    let ones = |n: usize| Tensor::ones(n, DType::F32, &dev).unwrap();
    let hd = H / HEADS;
    let mut hf: HashMap<String, Tensor> = HashMap::new();
    hf.insert("model.embed_tokens.weight".into(), rnd(&[vocab, H], 0.5));
    hf.insert("model.norm.weight".into(), ones(H));
    for l in 0..LAYERS {
        let p = format!("model.layers.{l}");
        hf.insert(format!("{p}.input_layernorm.weight"), ones(H));
        hf.insert(format!("{p}.post_attention_layernorm.weight"), ones(H));
        for (name, out, inp, bias) in [
            ("q_proj", HEADS * hd, H, true),
            ("k_proj", KV * hd, H, true),
            ("v_proj", KV * hd, H, true),
            ("o_proj", H, HEADS * hd, false),
        ] {
            hf.insert(format!("{p}.self_attn.{name}.weight"), rnd(&[out, inp], 0.2));
            if bias {
                hf.insert(format!("{p}.self_attn.{name}.bias"), rnd(&[out], 0.1));
            }
        }
        hf.insert(format!("{p}.mlp.gate_proj.weight"), rnd(&[FFN, H], 0.2));
        hf.insert(format!("{p}.mlp.up_proj.weight"), rnd(&[FFN, H], 0.2));
        hf.insert(format!("{p}.mlp.down_proj.weight"), rnd(&[H, FFN], 0.2));
    }
    let folder = dir.path().join("tiny-qwen2");
    std::fs::create_dir(&folder).unwrap();
    candle_core::safetensors::save(&hf, folder.join("model.safetensors")).unwrap();
    let config = serde_json::json!({
        "model_type": "qwen2", "hidden_size": H, "num_attention_heads": HEADS, "num_key_value_heads": KV,
        "num_hidden_layers": LAYERS, "intermediate_size": FFN, "vocab_size": vocab,
        "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "tie_word_embeddings": true,
        "torch_dtype": "float32"
    });
    std::fs::write(folder.join("config.json"), config.to_string()).unwrap();
    let tok_cfg = serde_json::json!({
        "chat_template": ct.metadata["tokenizer.chat_template"].to_string().unwrap(),
        "eos_token": "<|im_end|>", "bos_token": null, "add_bos_token": false
    });
    std::fs::write(folder.join("tokenizer_config.json"), tok_cfg.to_string()).unwrap();
    tokenizers::Tokenizer::from_gguf(&ct).unwrap().save(folder.join("tokenizer.json"), false).unwrap();

    // The same weights as an F32 GGUF with llama.cpp's names and the 0.5B's tokenizer metadata.
    let gg = |name: &str| -> String {
        let n = name.strip_prefix("model.").unwrap();
        if n == "embed_tokens.weight" {
            return "token_embd.weight".into();
        }
        if n == "norm.weight" {
            return "output_norm.weight".into();
        }
        let n = n.replace("layers.", "blk.");
        n.replace("self_attn.q_proj", "attn_q")
            .replace("self_attn.k_proj", "attn_k")
            .replace("self_attn.v_proj", "attn_v")
            .replace("self_attn.o_proj", "attn_output")
            .replace("mlp.gate_proj", "ffn_gate")
            .replace("mlp.up_proj", "ffn_up")
            .replace("mlp.down_proj", "ffn_down")
            .replace("input_layernorm", "attn_norm")
            .replace("post_attention_layernorm", "ffn_norm")
    };
    let qt: Vec<(String, QTensor)> = hf.iter().map(|(k, t)| (gg(k), QTensor::quantize(t, GgmlDType::F32).unwrap())).collect();
    let mut md: Vec<(String, gguf_file::Value)> = ct
        .metadata
        .iter()
        .filter(|(k, _)| k.starts_with("tokenizer.") || k.starts_with("general.architecture"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    use gguf_file::Value as V;
    for (k, v) in [
        ("qwen2.embedding_length", V::U32(H as u32)),
        ("qwen2.attention.head_count", V::U32(HEADS as u32)),
        ("qwen2.attention.head_count_kv", V::U32(KV as u32)),
        ("qwen2.block_count", V::U32(LAYERS as u32)),
        ("qwen2.feed_forward_length", V::U32(FFN as u32)),
        ("qwen2.context_length", V::U32(512)),
        ("qwen2.attention.layer_norm_rms_epsilon", V::F32(1e-6)),
        ("qwen2.rope.freq_base", V::F32(1e6)),
    ] {
        md.push((k.into(), v));
    }
    let gguf_path = dir.path().join("tiny.gguf");
    let mut out = std::fs::File::create(&gguf_path).unwrap();
    let md_refs: Vec<(&str, &V)> = md.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let t_refs: Vec<(&str, &QTensor)> = qt.iter().map(|(k, t)| (k.as_str(), t)).collect();
    gguf_file::write(&mut out, &md_refs, &t_refs).unwrap();
    drop(out);

    let from_dir = ponder_engine::load(&folder, &LoadOptions::default()).unwrap();
    let from_gguf = ponder_engine::load(&gguf_path, &LoadOptions::default()).unwrap();
    assert_eq!(from_dir.info.architecture, "qwen2");
    assert_eq!(from_dir.info.context_length, 512);
    let prompt = from_dir.template.render(&[Message::user("What is 2 + 2?")]).unwrap();
    assert_eq!(prompt, from_gguf.template.render(&[Message::user("What is 2 + 2?")]).unwrap());
    let a_ids = from_dir.tokenizer.encode_prompt(&prompt).unwrap();
    let b_ids = from_gguf.tokenizer.encode_prompt(&prompt).unwrap();
    assert_eq!(a_ids, b_ids, "tokenizer.json and GGUF metadata tokenize alike");
    let logits = |m: &ponder_engine::LoadedModel| {
        let mut cache = m.model.new_cache(Default::default());
        m.model
            .forward(&mut [StepInput { tokens: &a_ids, cache: &mut cache, logit_rows: 1 }])
            .unwrap()
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
    };
    let (a, b) = (logits(&from_dir), logits(&from_gguf));
    let diff: f32 = a.iter().zip(&b).map(|(x, y)| (x - y).powi(2)).sum::<f32>().sqrt();
    let norm: f32 = b.iter().map(|y| y * y).sum::<f32>().sqrt();
    assert!(diff / norm < 1e-5, "relative error {}", diff / norm);
}
