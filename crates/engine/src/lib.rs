//! Ponder's inference engine: a Qwen2, Qwen3 or Llama model on the CPU (candle), continuously batched
//! across requests, streaming each sample's thinking and answer.
//!
//! Start at [`Engine`]: load a model with [`loader::load`], start the engine, [`Engine::submit`]
//! requests and read their [`Event`]s.

pub mod attention;
pub mod bench;
pub mod catalog;
pub mod channel_scales;
pub mod chat_template;
pub mod decoder;
pub mod download;
pub mod draft_model;
pub mod engine;
pub mod error;
pub mod family;
pub mod gguf_edit;
mod huge_pages;
pub mod kquants;
pub mod kv_cache;
pub mod legacy_quants;
pub mod loader;
pub mod local_models;
mod parallel;
pub mod perplexity;
pub mod process;
pub mod request;
pub mod rope;
mod round;
mod rowwise;
pub mod sampler;
mod scheduler;
mod sequence;
mod speculate;
pub mod stream;
mod tensor_values;
pub mod tokenizer;

pub use catalog::CatalogModel;
pub use chat_template::{Message, Role, Thinking};
pub use draft_model::DraftModel;
pub use engine::{Canceller, Engine, EngineConfig, EngineStats, RequestHandle};
pub use error::{panic_message, EngineError, InvalidRequest, Result};
pub use family::Family;
pub use kquants::{KQuantKernels, Kernel};
pub use kv_cache::KvCacheType;
pub use loader::{load, LoadOptions, LoadProgress, LoadedModel, ModelInfo, ProgressFn};
pub use request::{Event, FinishReason, GenerateRequest, Priority, Prompt, Usage, DEFAULT_MAX_TOKENS};
pub use sampler::SamplingParams;
pub use stream::Channel;
