//! The turns running, counted from the start of each opening until its task has let go of the
//! runtime (and so of its stores): what a shutdown waits for before it closes the stores.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// How many turns are running (opening, or streaming in their task), and the signal each
/// one's end sends.
#[derive(Default)]
pub(crate) struct LiveTurns {
    running: AtomicUsize,
    ended: Notify,
}

/// One running turn's place in the count, given back when dropped: by its opening if that
/// fails, else by its task, last, after everything of the runtime it held.
pub(crate) struct LiveTurn(Arc<LiveTurns>);

impl LiveTurns {
    /// Counts a turn from the start of its opening (its task, once spawned, holds the place).
    pub fn enter(self: &Arc<Self>) -> LiveTurn {
        self.running.fetch_add(1, Ordering::SeqCst);
        LiveTurn(self.clone())
    }

    /// Waits until no turn is running.
    pub async fn none_running(&self) {
        loop {
            // Asked for before the count is read, so an end between the two is not missed.
            let ended = self.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.running.load(Ordering::SeqCst) == 0 {
                return;
            }
            ended.await;
        }
    }
}

impl Drop for LiveTurn {
    fn drop(&mut self) {
        let before = self.0.running.fetch_sub(1, Ordering::SeqCst);
        debug_assert!(before > 0, "a turn counted once");
        self.0.ended.notify_waiters();
    }
}
