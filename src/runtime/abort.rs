//! A cancellation signal a caller hands to a run: aborting it stops the run's backend, once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio::sync::Notify;

/// The side that aborts.
#[derive(Clone, Default)]
pub struct AbortController {
    inner: Arc<Inner>,
}

/// The side a run watches.
#[derive(Clone)]
pub struct AbortSignal {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    aborted: AtomicBool,
    notify: Notify,
}

impl AbortController {
    /// A controller not yet aborted.
    pub fn new() -> AbortController {
        AbortController::default()
    }

    /// The signal to hand to a run.
    pub fn signal(&self) -> AbortSignal {
        AbortSignal {
            inner: self.inner.clone(),
        }
    }

    /// Aborts: every run watching the signal is stopped.
    pub fn abort(&self) {
        self.inner.aborted.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }
}

impl AbortSignal {
    /// True once aborted.
    pub fn aborted(&self) -> bool {
        self.inner.aborted.load(Ordering::SeqCst)
    }

    /// Returns once aborted (at once if it already was).
    pub async fn wait(&self) {
        loop {
            let notified = self.inner.notify.notified();
            if self.aborted() {
                return;
            }
            notified.await;
        }
    }
}
