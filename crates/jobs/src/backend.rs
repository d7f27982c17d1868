//! Where samples are generated. The job runner only knows this interface; the in-process
//! engine is one implementation, a remote OpenAI-compatible server ([`crate::remote`]) another.

use crate::remote::error::RemoteError;
use futures_util::{Stream, StreamExt};
use ponder_engine::{Engine, EngineError, Event, GenerateRequest, InvalidRequest};
use std::pin::Pin;

pub trait Backend: Send + Sync {
    /// Sends a request; what it has to say arrives on the returned stream.
    fn start(&self, req: GenerateRequest) -> Result<Generation, BackendError>;
    /// Concurrent samples that make sense for this backend.
    fn parallelism(&self) -> usize;
    /// Why the backend cannot make progress right now (say, the remote server is down and
    /// requests wait for it), if it cannot.
    fn waiting_for(&self) -> Option<String> {
        None
    }
}

/// One request in flight: everything it has to say, ending once it has said it all. Dropping
/// it cancels the request. It can be awaited among many (the runner selects over all of its
/// requests at once) without a thread or a poll per request.
pub type Generation = Pin<Box<dyn Stream<Item = Next> + Send>>;

/// What a generation has to say next.
#[derive(Debug)]
pub enum Next {
    /// An event of the request. A second `Started` means the request started over (after a
    /// dropped connection): text received for its unfinished samples is void.
    Event(Event),
    /// The backend cannot run this request. When it turns down the problem itself
    /// ([`BackendError::refuses_problem`]) that is the problem's result, and the job goes on;
    /// otherwise (a revoked key, say) the job pauses, and nothing of this request is recorded.
    Failed(BackendError),
}

/// Why a backend would not run a request.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Remote(#[from] RemoteError),
    #[error("cannot start a thread for the request: {0}")]
    Thread(#[source] std::io::Error),
    /// A sample ended with an error that says nothing of the problem (an engine fault, a
    /// server that kept failing): it is not recorded, and runs again when the job resumes.
    #[error("generation failed: {0}")]
    Generation(String),
}

impl BackendError {
    /// The backend turns down this problem's request itself, and would do so again: too long
    /// for the context, more KV memory than the budget, a remote 400. Anything else (a key, a
    /// server that is down, an engine that stopped) says nothing about the problem.
    pub fn refuses_problem(&self) -> bool {
        match self {
            BackendError::Engine(e) => matches!(
                e,
                EngineError::ContextOverflow { .. }
                    | EngineError::Template(_)
                    | EngineError::InvalidRequest(
                        InvalidRequest::KvBudget { .. } | InvalidRequest::EmptyPrompt | InvalidRequest::PromptTooLong { .. }
                    )
            ),
            BackendError::Remote(RemoteError::Refused { status, .. }) => matches!(status, 400 | 413 | 422),
            _ => false,
        }
    }
}

pub struct LocalBackend<'a> {
    pub engine: &'a Engine,
    pub max_seqs: usize,
}

impl Backend for LocalBackend<'_> {
    fn start(&self, req: GenerateRequest) -> Result<Generation, BackendError> {
        // A long question leaves less room to answer: the sample gets what the context leaves
        // (and stops at the length limit) rather than being refused. No room at all is refused.
        Ok(Box::pin(self.engine.submit_fitted(req)?.map(Next::Event)))
    }
    fn parallelism(&self) -> usize {
        self.max_seqs
    }
}
