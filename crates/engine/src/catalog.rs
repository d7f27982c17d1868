//! The models Ponder offers to download: the default and a short list of alternatives, each a
//! GGUF file in a Hugging Face repository. Opening any other GGUF file works too; this list is
//! what the first-run screen, the settings and `ponder models` put one click away.

use crate::chat_template::Thinking;
use crate::family::Family;
use serde::Serialize;

/// One downloadable model.
#[cfg_attr(feature = "ts", derive(ts_rs::TS))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct CatalogModel {
    /// Short name for `ponder models pull NAME` and the app's settings.
    pub id: &'static str,
    pub display_name: &'static str,
    pub repo: &'static str,
    pub file: &'static str,
    /// The file's size, rounded: the hub gives the exact figure when the download starts.
    #[cfg_attr(feature = "ts", ts(type = "number"))]
    pub approx_bytes: u64,
    /// Memory the machine should have to run it with a few thousand tokens of context.
    pub min_ram_gb: u32,
    pub family: Family,
    pub thinking: Thinking,
    /// What it is good at, in a sentence (the app shows its own translation by `id`).
    pub good_for: &'static str,
}

impl CatalogModel {
    /// "DeepSeek-R1-Distill-Qwen-1.5B (Q4_K_M, 1.1 GB)": the name with its weights and size.
    pub fn label(&self) -> String {
        format!("{} (Q4_K_M, {:.1} GB)", self.display_name, self.approx_bytes as f64 / 1e9)
    }
}

/// The default comes first. Each is the Q4_K_M file from unsloth's GGUF repositories, which
/// carry the models' own chat templates.
pub const MODELS: &[CatalogModel] = &[
    CatalogModel {
        id: "deepseek-r1-distill-qwen-1.5b",
        display_name: "DeepSeek-R1-Distill-Qwen-1.5B",
        repo: "unsloth/DeepSeek-R1-Distill-Qwen-1.5B-GGUF",
        file: "DeepSeek-R1-Distill-Qwen-1.5B-Q4_K_M.gguf",
        approx_bytes: 1_120_000_000,
        min_ram_gb: 4,
        family: Family::Qwen2,
        thinking: Thinking::Always,
        good_for: "Step-by-step maths and logic at a readable speed on any laptop; the default.",
    },
    CatalogModel {
        id: "qwen3-1.7b",
        display_name: "Qwen3-1.7B",
        repo: "unsloth/Qwen3-1.7B-GGUF",
        file: "Qwen3-1.7B-Q4_K_M.gguf",
        approx_bytes: 1_110_000_000,
        min_ram_gb: 4,
        family: Family::Qwen3,
        thinking: Thinking::Switchable,
        good_for: "Same speed as the default; thinking can be turned off for quick answers, and it writes better prose.",
    },
    CatalogModel {
        id: "qwen3-4b",
        display_name: "Qwen3-4B",
        repo: "unsloth/Qwen3-4B-GGUF",
        file: "Qwen3-4B-Q4_K_M.gguf",
        approx_bytes: 2_500_000_000,
        min_ram_gb: 8,
        family: Family::Qwen3,
        thinking: Thinking::Switchable,
        good_for: "Noticeably stronger reasoning at about half the default's speed.",
    },
    CatalogModel {
        id: "deepseek-r1-distill-qwen-7b",
        display_name: "DeepSeek-R1-Distill-Qwen-7B",
        repo: "unsloth/DeepSeek-R1-Distill-Qwen-7B-GGUF",
        file: "DeepSeek-R1-Distill-Qwen-7B-Q4_K_M.gguf",
        approx_bytes: 4_680_000_000,
        min_ram_gb: 12,
        family: Family::Qwen2,
        thinking: Thinking::Always,
        good_for: "Competition-level maths; slow on a CPU, best for batch jobs that run unattended.",
    },
    CatalogModel {
        id: "deepseek-r1-distill-llama-8b",
        display_name: "DeepSeek-R1-Distill-Llama-8B",
        repo: "unsloth/DeepSeek-R1-Distill-Llama-8B-GGUF",
        file: "DeepSeek-R1-Distill-Llama-8B-Q4_K_M.gguf",
        approx_bytes: 4_920_000_000,
        min_ram_gb: 12,
        family: Family::Llama,
        thinking: Thinking::Always,
        good_for: "R1's reasoning on Llama 3.1: stronger in English word problems and general knowledge.",
    },
    CatalogModel {
        id: "deepseek-r1-0528-qwen3-8b",
        display_name: "DeepSeek-R1-0528-Qwen3-8B",
        repo: "unsloth/DeepSeek-R1-0528-Qwen3-8B-GGUF",
        file: "DeepSeek-R1-0528-Qwen3-8B-Q4_K_M.gguf",
        approx_bytes: 5_030_000_000,
        min_ram_gb: 12,
        family: Family::Qwen3,
        thinking: Thinking::Always,
        good_for: "The strongest reasoner here; long thoughts, so give it time and a large token limit.",
    },
];

/// The model Ponder is made for.
pub fn default_model() -> &'static CatalogModel {
    &MODELS[0]
}

/// A catalogue entry by its id (case-insensitive), or by its display name.
pub fn find(name: &str) -> Option<&'static CatalogModel> {
    MODELS.iter().find(|m| m.id.eq_ignore_ascii_case(name) || m.display_name.eq_ignore_ascii_case(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_files_are_gguf_in_their_repo() {
        for (i, m) in MODELS.iter().enumerate() {
            assert!(MODELS[..i].iter().all(|o| o.id != m.id && o.file != m.file), "{} twice", m.id);
            assert!(m.file.ends_with(".gguf") && m.repo.contains('/'), "{m:?}");
            assert!(m.file.starts_with(m.display_name), "{} is not {}'s file", m.file, m.display_name);
        }
        assert_eq!(default_model().id, "deepseek-r1-distill-qwen-1.5b");
    }

    #[test]
    fn found_by_id_or_name_in_any_case() {
        assert_eq!(find("QWEN3-4B").map(|m| m.id), Some("qwen3-4b"));
        assert_eq!(find("DeepSeek-R1-Distill-Llama-8B").map(|m| m.id), Some("deepseek-r1-distill-llama-8b"));
        assert_eq!(find("qwen3"), None);
        assert_eq!(default_model().label(), "DeepSeek-R1-Distill-Qwen-1.5B (Q4_K_M, 1.1 GB)");
    }
}
