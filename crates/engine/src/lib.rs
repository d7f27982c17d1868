//! Ponder's inference engine: a Qwen2-family model on the CPU (candle), continuously batched
//! across requests, streaming each sample's thinking and answer.
//!
//! Start at [`Engine`]: load a model with [`model::load`], start the engine, [`Engine::submit`]
//! requests and read their [`Event`]s.

pub mod attention;
pub mod bench;
pub mod chat_template;
pub mod download;
pub mod engine;
pub mod error;
pub mod gguf_edit;
pub mod kquants;
pub mod kv_cache;
pub mod model;
mod parallel;
pub mod qwen2;
pub mod request;
mod rowwise;
pub mod sampler;
mod scheduler;
mod sequence;
pub mod stream;
pub mod tokenizer;

pub use chat_template::{Message, Role};
pub use engine::{Engine, EngineConfig, EngineStats, RequestHandle};
pub use error::{EngineError, Result};
pub use model::{load, KQuantKernels, LoadOptions, LoadedModel, ModelInfo};
pub use request::{Event, FinishReason, GenerateRequest, Priority, Prompt, Usage};
pub use sampler::SamplingParams;
pub use stream::Channel;

/// Sets the number of CPU threads the engine computes with. Call once, before loading a model.
pub fn set_threads(n: usize) {
    let n = n.max(1);
    // candle sizes its work split from RAYON_NUM_THREADS; rayon's pool must match it.
    std::env::set_var("RAYON_NUM_THREADS", n.to_string());
    let _ = rayon::ThreadPoolBuilder::new().num_threads(n).build_global();
}
