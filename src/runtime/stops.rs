//! Stopping turns (MAKA-MODEL §12): each turn's stop — the source asked for and the signal its
//! stream waits on — a stop by session or by turn, and the runtime's dispose, after which no
//! turn starts and no backend is made.

use super::backend::Backend;
use super::live_turns::LiveTurn;
use super::manager::{lock, Inner, SessionManager};
use crate::error::{Error, Result};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use tokio::sync::Notify;

/// The abort source of a turn stopped because its runtime disposed of its backend.
pub const DISPOSED: &str = "runtime_disposed";

/// A turn's stop: the source of the stop asked for, and the signal its stream waits on (a
/// backend that does not end its stream after a stop is given up on after a grace).
#[derive(Default)]
pub(crate) struct TurnStop {
    /// The turn's id (empty for a stop asked with no turn in flight).
    turn: String,
    source: Option<String>,
    asked: Arc<Notify>,
}

/// The error of a call the disposed runtime refuses.
pub(crate) fn disposed(session_id: &str) -> Error {
    Error::InvalidInput(format!(
        "the runtime was disposed of: no turn of session {session_id} starts"
    ))
}

/// Stops `backend`'s turn; a panic in the backend's code is its own, and is not carried into
/// the runtime's locks (the stream's grace ends a turn the stop did not).
pub(crate) fn stop_backend(backend: &dyn Backend) {
    let _ = catch_unwind(AssertUnwindSafe(|| backend.stop()));
}

impl Inner {
    /// Records turn `turn_id` as the session's turn in flight, with no stop asked yet: the
    /// signal its stream waits on, and its place among the running turns, held from here until
    /// its task ends (or its opening fails). Refused once the runtime is disposed of: under the
    /// lock `dispose` sets its mark under, so a turn either starts before it, and is stopped
    /// and waited for by a shutdown, or is refused.
    pub(crate) fn turn_started(
        &self,
        session_id: &str,
        turn_id: &str,
    ) -> Result<(Arc<Notify>, LiveTurn)> {
        let mut stops = lock(&self.stops)?;
        if self.disposed.load(Ordering::Relaxed) {
            return Err(disposed(session_id));
        }
        let live = self.live.enter();
        let asked = Arc::new(Notify::new());
        let stop = TurnStop {
            turn: turn_id.to_owned(),
            source: None,
            asked: asked.clone(),
        };
        stops.insert(session_id.to_owned(), stop);
        Ok((asked, live))
    }

    /// Turn `turn_id` of the session is over (ended, or never begun): its stop is forgotten,
    /// unless the session's next turn has already taken its place.
    pub(crate) fn turn_over(&self, session_id: &str, turn_id: &str) {
        if let Ok(mut stops) = lock(&self.stops) {
            if stops.get(session_id).is_some_and(|s| s.turn == turn_id) {
                stops.remove(session_id);
            }
        }
    }

    /// The source of the stop asked for the session's turn in flight, if one was.
    pub(crate) fn stop_source(&self, session_id: &str) -> Option<String> {
        lock(&self.stops).ok()?.get(session_id)?.source.clone()
    }

    /// Starts the session's turn on `backend` with `send` (under the lock `stop` takes, so no
    /// stop lands between the two), then passes on a stop asked while its opening was written.
    pub(crate) fn send_to<T>(
        &self,
        session_id: &str,
        backend: &dyn Backend,
        send: impl FnOnce() -> T,
    ) -> Result<T> {
        let stops = lock(&self.stops)?;
        let sent = send();
        if stops.get(session_id).is_some_and(|s| s.source.is_some()) {
            stop_backend(backend);
        }
        Ok(sent)
    }

    /// Whether the runtime was disposed of (read under the lock of backends by a backend's
    /// making: `dispose` marks before it takes the backends).
    pub(crate) fn is_disposed(&self) -> bool {
        self.disposed.load(Ordering::Relaxed)
    }
}

impl SessionManager {
    /// Stops the session's turn in flight, naming `source` as its abort source; false when
    /// the session has neither a backend nor a turn starting.
    pub fn stop(&self, session_id: &str, source: &str) -> Result<bool> {
        self.stop_where(session_id, None, source)
    }

    /// Stops turn `turn_id` of the session if it is the one in flight; false (and nothing
    /// stopped) when it is not, so a caller whose turn has just ended never stops the next.
    pub fn stop_turn(&self, session_id: &str, turn_id: &str, source: &str) -> Result<bool> {
        self.stop_where(session_id, Some(turn_id), source)
    }

    /// The stop is recorded under the lock a turn's start takes, so it reaches the turn in
    /// flight, or (if none holds the session) none, never the next one; a turn whose backend
    /// is not made yet gets it when its backend starts the turn.
    fn stop_where(&self, session_id: &str, turn: Option<&str>, source: &str) -> Result<bool> {
        let inner = &self.inner;
        let mut stops = lock(&inner.stops)?;
        let backend = lock(&inner.backends)?.get(session_id).cloned();
        let stop = match (turn, stops.get_mut(session_id)) {
            (Some(turn), Some(stop)) if stop.turn == turn => stop,
            (Some(_), _) => return Ok(false),
            (None, Some(stop)) => stop,
            (None, None) if backend.is_some() => stops.entry(session_id.to_owned()).or_default(),
            (None, None) => return Ok(false),
        };
        stop.source = Some(source.to_owned());
        stop.asked.notify_one();
        if let Some(backend) = backend {
            stop_backend(&*backend);
        }
        Ok(true)
    }

    /// Disposes of every backend, once each session's turn in flight (if any) is stopped with
    /// abort source `runtime_disposed`. Those turns end as their streams do (a backend deaf to
    /// the stop within the stream's grace), after this returns; no turn starts, and no backend
    /// is made, after it.
    pub fn dispose(&self) -> Result<()> {
        let sessions: Vec<String> = {
            let stops = lock(&self.inner.stops)?;
            self.inner.disposed.store(true, Ordering::Relaxed);
            stops.keys().cloned().collect()
        };
        for session in &sessions {
            self.stop(session, DISPOSED)?;
        }
        for (_, backend) in lock(&self.inner.backends)?.drain() {
            let _ = catch_unwind(AssertUnwindSafe(|| backend.dispose()));
        }
        Ok(())
    }

    /// [`SessionManager::dispose`], then waits until every turn it stopped has ended and its
    /// task has let go of the runtime and its stores (a backend deaf to the stop is given up
    /// on after the stream's grace, and so is a caller that makes no room for its events).
    pub async fn shutdown(&self) -> Result<()> {
        let disposed = self.dispose();
        self.inner.live.none_running().await;
        disposed
    }
}
