use std::path::PathBuf;

/// Everything that can go wrong in the engine, phrased for the person who has to fix it.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("model file not found: {0}")]
    ModelNotFound(PathBuf),
    #[error("{path}: not a GGUF file (it does not start with the GGUF magic bytes)")]
    NotGguf { path: PathBuf },
    #[error("{path}: the file is truncated ({detail})")]
    Truncated { path: PathBuf, detail: String },
    #[error("{path}: unsupported model architecture `{found}` (Ponder runs qwen2-family models)")]
    UnsupportedArchitecture { path: PathBuf, found: String },
    #[error("{path}: missing metadata `{key}`")]
    MissingMetadata { path: PathBuf, key: String },
    #[error("{path}: cannot read the model: {detail}")]
    BadModel { path: PathBuf, detail: String },
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    #[error("chat template: {0}")]
    Template(String),
    #[error(
        "request too long: {prompt_tokens} prompt tokens + {max_tokens} max tokens exceed the \
         context length of {context_length}"
    )]
    ContextOverflow { prompt_tokens: usize, max_tokens: usize, context_length: usize },
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    #[error("the engine has stopped")]
    EngineStopped,
    #[error("model download failed: {0}")]
    Download(String),
    #[error("the download was cancelled; starting it again resumes it")]
    DownloadCancelled,
    #[error("inference failed: {0}")]
    Candle(#[from] candle_core::Error),
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;
