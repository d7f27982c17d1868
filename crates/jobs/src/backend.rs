//! Where samples are generated. The job runner only knows this interface; the in-process
//! engine is one implementation, a remote OpenAI-compatible server ([`crate::remote`]) another.

use ponder_engine::{Engine, EngineError, Event, GenerateRequest, RequestHandle};
use std::time::Duration;

pub trait Backend: Send + Sync {
    fn start(&self, req: GenerateRequest) -> Result<Box<dyn Generation>, String>;
    /// Concurrent samples that make sense for this backend.
    fn parallelism(&self) -> usize;
    /// Why the backend cannot make progress right now (say, the remote server is down and
    /// requests wait for it), if it cannot.
    fn waiting_for(&self) -> Option<String> {
        None
    }
}

/// What a generation has to say next.
#[derive(Debug)]
pub enum Next {
    /// An event of the request. A second `Started` means the request started over (after a
    /// dropped connection): text received for its unfinished samples is void.
    Event(Event),
    /// Nothing within the timeout.
    Idle,
    /// Every event has been delivered.
    Ended,
    /// The backend cannot run this request at all (a revoked key, say): the job stops, and
    /// nothing of this request is recorded.
    Failed(String),
}

/// One request in flight: its events, and a way to stop it.
pub trait Generation: Send {
    /// The next event, waiting at most `timeout`.
    fn next(&mut self, timeout: Duration) -> Next;
    fn cancel(&self);
}

pub struct LocalBackend<'a> {
    pub engine: &'a Engine,
    pub max_seqs: usize,
}

impl Backend for LocalBackend<'_> {
    fn start(&self, req: GenerateRequest) -> Result<Box<dyn Generation>, String> {
        self.engine.submit(req).map(|h| Box::new(Local(h)) as Box<dyn Generation>).map_err(|e: EngineError| e.to_string())
    }
    fn parallelism(&self) -> usize {
        self.max_seqs
    }
}

struct Local(RequestHandle);

impl Generation for Local {
    fn next(&mut self, timeout: Duration) -> Next {
        match self.0.recv_timeout(timeout) {
            Ok(ev) => Next::Event(ev),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => Next::Idle,
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => Next::Ended,
        }
    }
    fn cancel(&self) {
        self.0.cancel();
    }
}
