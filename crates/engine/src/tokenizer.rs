//! The model's tokenizer: from GGUF metadata (`tokenizer.ggml.*`) or a `tokenizer.json`, plus
//! what the engine needs around it: special tokens, BOS/EOS, and streaming detokenization.

use crate::error::{EngineError, Result};
use candle_core::quantized::gguf_file;
use candle_core::quantized::tokenizer::TokenizerFromGguf;
use std::collections::HashMap;

/// Pre-tokenizer names llama.cpp writes, and the name candle knows the same regex by. candle
/// treats a name it does not know with a GPT-2 default that splits differently (Llama 3's
/// splits numbers in threes, Qwen's digit by digit), so they are renamed before building.
const PRE_ALIASES: &[(&str, &str)] = &[("deepseek-r1-qwen", "qwen2"), ("qwen35", "qwen2"), ("llama-bpe", "llama3")];

pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    pub bos_id: Option<u32>,
    pub eos_ids: Vec<u32>,
    pub add_bos: bool,
    pub bos_token: String,
    pub eos_token: String,
    /// Bytes of the vocabulary's longest token, as the tokenizer stores it (for byte-level BPE
    /// at least the bytes of text it covers): a prompt of more than this many bytes per token
    /// of context cannot fit, which can be known without tokenising it.
    pub max_token_bytes: usize,
}

impl Tokenizer {
    pub fn from_gguf(ct: &gguf_file::Content) -> Result<Self> {
        let missing = |key: &str| EngineError::Tokenizer(format!("missing metadata `{key}`"));
        for key in ["tokenizer.ggml.model", "tokenizer.ggml.tokens", "tokenizer.ggml.merges"] {
            if !ct.metadata.contains_key(key) {
                return Err(missing(key));
            }
        }
        let mut metadata = ct.metadata.clone();
        if let Some(gguf_file::Value::String(pre)) = metadata.get("tokenizer.ggml.pre") {
            if let Some((_, known)) = PRE_ALIASES.iter().find(|(name, _)| name == pre) {
                metadata.insert("tokenizer.ggml.pre".into(), gguf_file::Value::String(known.to_string()));
            }
        }
        let patched = gguf_file::Content { magic: ct.magic, metadata, tensor_infos: HashMap::new(), tensor_data_offset: 0 };
        let inner = tokenizers::Tokenizer::from_gguf(&patched).map_err(|e| EngineError::Tokenizer(e.to_string()))?;
        let get_u32 = |key: &str| ct.metadata.get(key).and_then(|v| v.to_u32().ok());
        let bos_id = get_u32("tokenizer.ggml.bos_token_id");
        let eos_id = get_u32("tokenizer.ggml.eos_token_id");
        let add_bos = ct.metadata.get("tokenizer.ggml.add_bos_token").and_then(|v| v.to_bool().ok()).unwrap_or(false);
        Self::finish(inner, bos_id, eos_id, add_bos)
    }

    /// From a Hugging Face folder's `tokenizer.json` and `tokenizer_config.json`.
    pub fn from_files(tokenizer_json: &std::path::Path, config: &serde_json::Value) -> Result<Self> {
        let inner = tokenizers::Tokenizer::from_file(tokenizer_json)
            .map_err(|e| EngineError::Tokenizer(format!("{}: {e}", tokenizer_json.display())))?;
        let token_of = |key: &str| -> Option<String> {
            match config.get(key)? {
                serde_json::Value::String(s) => Some(s.clone()),
                serde_json::Value::Object(o) => o.get("content")?.as_str().map(String::from),
                _ => None,
            }
        };
        let bos_id = token_of("bos_token").and_then(|t| inner.token_to_id(&t));
        let eos_id = token_of("eos_token").and_then(|t| inner.token_to_id(&t));
        let add_bos = config.get("add_bos_token").and_then(|v| v.as_bool()).unwrap_or(false);
        Self::finish(inner, bos_id, eos_id, add_bos)
    }

    fn finish(inner: tokenizers::Tokenizer, bos_id: Option<u32>, eos_id: Option<u32>, add_bos: bool) -> Result<Self> {
        let name = |id: Option<u32>| id.and_then(|id| inner.id_to_token(id)).unwrap_or_default();
        let bos_token = name(bos_id);
        let eos_token = name(eos_id);
        // Chat models end a turn with their turn-end token even when the GGUF names another EOS:
        // stop on every end-of-turn marker the vocabulary has.
        let mut eos_ids: Vec<u32> = eos_id.into_iter().collect();
        for t in ["<|im_end|>", "<|endoftext|>", "<｜end▁of▁sentence｜>", "<|eot_id|>"] {
            if let Some(id) = inner.token_to_id(t) {
                if !eos_ids.contains(&id) {
                    eos_ids.push(id);
                }
            }
        }
        if eos_ids.is_empty() {
            return Err(EngineError::Tokenizer("no end-of-sequence token".into()));
        }
        let max_token_bytes = inner.get_vocab(true).keys().map(String::len).max().unwrap_or(1).max(1);
        Ok(Self { inner, bos_id, eos_ids, add_bos, bos_token, eos_token, max_token_bytes })
    }

    /// Tokens of an already templated prompt. Special tokens written in the text (`<|im_start|>`)
    /// become their ids; a BOS is added when the model asks for one and the text lacks it.
    pub fn encode_prompt(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self.inner.encode_fast(text, false).map_err(|e| EngineError::Tokenizer(e.to_string()))?;
        let mut ids = enc.get_ids().to_vec();
        if let (true, Some(bos)) = (self.add_bos, self.bos_id) {
            if ids.first() != Some(&bos) {
                ids.insert(0, bos);
            }
        }
        Ok(ids)
    }

    /// Tokens of plain text, with no BOS (for forced continuations such as `</think>`).
    pub fn encode_plain(&self, text: &str) -> Result<Vec<u32>> {
        let enc = self.inner.encode_fast(text, false).map_err(|e| EngineError::Tokenizer(e.to_string()))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Text of tokens, special tokens included (so `</think>` as one token is seen).
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.inner.decode(ids, false).map_err(|e| EngineError::Tokenizer(e.to_string()))
    }

    pub fn is_eos(&self, id: u32) -> bool {
        self.eos_ids.contains(&id)
    }

    pub fn token_to_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }

    /// How many ordinary tokens (special tokens aside) of this vocabulary `other` lacks or
    /// numbers differently: 0 when every text token id means the same text to both.
    pub fn vocabulary_differences(&self, other: &Tokenizer) -> usize {
        let theirs = other.inner.get_vocab(false);
        self.inner.get_vocab(false).iter().filter(|(text, id)| theirs.get(*text) != Some(id)).count()
    }
}

/// Turns a growing list of token ids into text deltas that are always valid UTF-8: a token that
/// ends inside a multi-byte character is held back until the character is complete.
#[derive(Debug, Default, Clone)]
pub struct StreamDecoder {
    ids: Vec<u32>,
    prefix_offset: usize,
    read_offset: usize,
}

impl StreamDecoder {
    pub fn push(&mut self, tok: &Tokenizer, id: u32) -> Result<Option<String>> {
        self.ids.push(id);
        let prefix = tok.decode(&self.ids[self.prefix_offset..self.read_offset])?;
        let full = tok.decode(&self.ids[self.prefix_offset..])?;
        if full.len() > prefix.len() && !full.ends_with('\u{FFFD}') && full.is_char_boundary(prefix.len()) {
            let delta = full[prefix.len()..].to_string();
            self.prefix_offset = self.read_offset;
            self.read_offset = self.ids.len();
            Ok(Some(delta))
        } else {
            Ok(None)
        }
    }
}
