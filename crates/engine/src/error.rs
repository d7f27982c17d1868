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
    #[error("{path}: unsupported model architecture `{found}` (Ponder runs the qwen2, qwen3 and llama families)")]
    UnsupportedArchitecture { path: PathBuf, found: String },
    #[error("{path}: part {part} of a GGUF split in {parts} files (Ponder opens one-file models; llama.cpp's `llama-gguf-split --merge` joins the parts)")]
    SplitGguf { path: PathBuf, part: u32, parts: u32 },
    #[error("{path}: missing metadata `{key}`")]
    MissingMetadata { path: PathBuf, key: String },
    #[error("{path}: metadata `{key}` {detail}")]
    InvalidMetadata { path: PathBuf, key: String, detail: String },
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
    InvalidRequest(#[from] InvalidRequest),
    #[error("the text has {tokens} tokens; perplexity with a context of {context} needs at least {needed}")]
    TextTooShort { tokens: usize, needed: usize, context: usize },
    #[error("invalid engine configuration: {0}")]
    InvalidConfig(&'static str),
    #[error("draft model: {0}")]
    DraftModel(String),
    #[error("cannot start the engine thread: {0}")]
    Thread(#[source] std::io::Error),
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

/// What is wrong with a request, found before it is queued. Each names the field at fault
/// ([`InvalidRequest::field`]) so that an API can point at it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum InvalidRequest {
    #[error("temperature must be >= 0, got {0}")]
    Temperature(f32),
    #[error("top_p must be in (0, 1], got {0}")]
    TopP(f32),
    #[error("min_p must be in [0, 1], got {0}")]
    MinP(f32),
    #[error("repetition_penalty must be > 0, got {0}")]
    RepetitionPenalty(f32),
    #[error("n must be between 1 and {max} (the engine's concurrent sequences), got {n}")]
    Samples { n: usize, max: usize },
    #[error("max_tokens must be at least 1")]
    NoTokens,
    #[error("the prompt is empty")]
    EmptyPrompt,
    #[error("the prompt is {bytes} bytes, far more than a context of {context_length} tokens can hold")]
    PromptTooLong { bytes: usize, context_length: usize },
    #[error("{n} samples of a {prompt_tokens}-token prompt need more KV memory than the budget of {budget} tokens")]
    KvBudget { n: usize, prompt_tokens: usize, budget: usize },
}

impl InvalidRequest {
    /// The request field at fault, by its usual (OpenAI) name.
    pub fn field(&self) -> &'static str {
        match self {
            InvalidRequest::Temperature(_) => "temperature",
            InvalidRequest::TopP(_) => "top_p",
            InvalidRequest::MinP(_) => "min_p",
            InvalidRequest::RepetitionPenalty(_) => "repetition_penalty",
            InvalidRequest::Samples { .. } | InvalidRequest::KvBudget { .. } => "n",
            InvalidRequest::NoTokens => "max_tokens",
            InvalidRequest::EmptyPrompt | InvalidRequest::PromptTooLong { .. } => "prompt",
        }
    }
}

pub type Result<T, E = EngineError> = std::result::Result<T, E>;

/// What a caught panic said (`panic!` with a literal or a formatted message), for an error.
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}
