//! Where samples are generated. The job runner only knows this interface; the in-process
//! engine is one implementation (a remote OpenAI-compatible server can be another).

use ponder_engine::{Engine, EngineError, Event, GenerateRequest, RequestHandle};
use std::time::Duration;

pub trait Backend: Send + Sync {
    fn start(&self, req: GenerateRequest) -> Result<Box<dyn Generation>, String>;
    /// Concurrent samples that make sense for this backend.
    fn parallelism(&self) -> usize;
}

/// One request in flight: its events, and a way to stop it.
pub trait Generation: Send {
    /// The next event, waiting at most `timeout`; `Err(())` once the stream has ended.
    fn next(&mut self, timeout: Duration) -> Result<Option<Event>, ()>;
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
    fn next(&mut self, timeout: Duration) -> Result<Option<Event>, ()> {
        match self.0.recv_timeout(timeout) {
            Ok(ev) => Ok(Some(ev)),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => Ok(None),
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => Err(()),
        }
    }
    fn cancel(&self) {
        self.0.cancel();
    }
}
