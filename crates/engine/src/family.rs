//! The model families Ponder runs, and what sets them apart. They share one decoder
//! ([`crate::decoder`]); each difference is a question answered here, not a copy of the forward.

use serde::Serialize;

#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// Qwen2 and Qwen2.5, and the DeepSeek-R1 distills built on them.
    Qwen2,
    /// Qwen3 dense, and DeepSeek-R1-0528-Qwen3.
    Qwen3,
    /// Llama 3, and DeepSeek-R1-Distill-Llama.
    Llama,
}

impl Family {
    pub const ALL: [Family; 3] = [Family::Qwen2, Family::Qwen3, Family::Llama];

    /// The family of a GGUF `general.architecture` or a `config.json` `model_type`.
    pub fn of_architecture(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.architecture() == name)
    }

    /// The name both kinds of file use, and the prefix of a GGUF file's keys.
    pub fn architecture(self) -> &'static str {
        match self {
            Family::Qwen2 => "qwen2",
            Family::Qwen3 => "qwen3",
            Family::Llama => "llama",
        }
    }

    /// q, k and v projections with a bias (Qwen2's only).
    pub fn qkv_bias(self) -> bool {
        self == Family::Qwen2
    }

    /// An RMS norm over each head of q and k before RoPE (Qwen3's).
    pub fn qk_norm(self) -> bool {
        self == Family::Qwen3
    }
}

impl std::fmt::Display for Family {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.architecture())
    }
}
