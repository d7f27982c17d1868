//! The caller's end of one request: its events, received blocking or awaited, and a way to stop
//! it. One channel per request (as in TGI's router): the worker sends, the handle receives, and
//! a handle that is dropped cancels its request.

use crate::request::Event;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::sync::mpsc::error::TryRecvError;
use tokio::sync::mpsc::UnboundedReceiver;

pub struct RequestHandle {
    pub id: u64,
    /// Samples of this request; each ends with its own [`Event::Finished`].
    pub n: usize,
    events: UnboundedReceiver<Event>,
    cancel: Arc<AtomicBool>,
}

/// Stops a request from anywhere, without holding its handle.
#[derive(Clone, Debug)]
pub struct Canceller(Arc<AtomicBool>);

impl Canceller {
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

impl RequestHandle {
    pub(crate) fn new(id: u64, n: usize, events: UnboundedReceiver<Event>, cancel: Arc<AtomicBool>) -> Self {
        Self { id, n, events, cancel }
    }

    /// The next event, blocking the thread; `None` once every event has been delivered. Not for
    /// use inside an async runtime: await [`RequestHandle::next_event`] there.
    pub fn recv(&mut self) -> Option<Event> {
        self.events.blocking_recv()
    }

    /// The next event; `None` once every event has been delivered.
    pub async fn next_event(&mut self) -> Option<Event> {
        self.events.recv().await
    }

    /// An event that has already arrived, if any.
    pub fn try_recv(&mut self) -> Result<Event, TryRecvError> {
        self.events.try_recv()
    }

    /// Asks the engine to stop; each unfinished sample still ends with a `Cancelled` event.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Relaxed);
    }

    pub fn canceller(&self) -> Canceller {
        Canceller(self.cancel.clone())
    }

    /// Blocks until every sample has finished; returns all events in order.
    pub fn collect(&mut self) -> Vec<Event> {
        let (mut out, mut done) = (Vec::new(), 0);
        while done < self.n {
            let Some(ev) = self.recv() else { break };
            done += usize::from(matches!(ev, Event::Finished { .. }));
            out.push(ev);
        }
        out
    }

    /// Like [`RequestHandle::collect`], awaiting instead of blocking.
    pub async fn collect_async(&mut self) -> Vec<Event> {
        let (mut out, mut done) = (Vec::new(), 0);
        while done < self.n {
            let Some(ev) = self.next_event().await else { break };
            done += usize::from(matches!(ev, Event::Finished { .. }));
            out.push(ev);
        }
        out
    }
}

impl futures_core::Stream for RequestHandle {
    type Item = Event;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Event>> {
        self.events.poll_recv(cx)
    }
}

impl Drop for RequestHandle {
    fn drop(&mut self) {
        self.cancel();
    }
}
