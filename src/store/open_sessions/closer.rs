//! Closing evicted sessions: on a closer thread when the store may, else in place; what a
//! reopen of a session, and the store's close, wait for.

use super::{lock, Shared, Slot, MAX_CLOSING};
use crate::error::{Error, Result};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

impl<T: Send + Sync + 'static> Shared<T> {
    /// Hands `session`, just evicted from `slot`, to a closer thread once fewer than
    /// [`MAX_CLOSING`] are at work; gives it back if no thread can be started.
    pub(super) fn close_behind(
        this: &Arc<Self>,
        id: &str,
        slot: &Arc<Slot<T>>,
        session: T,
    ) -> Option<T> {
        {
            let mut c = lock(&this.closing);
            while c.in_flight >= MAX_CLOSING {
                c = this.closed.wait(c).unwrap_or_else(|e| e.into_inner());
            }
            c.in_flight += 1;
        }
        slot.closing.store(true, Ordering::SeqCst);
        let handed = Arc::new(Mutex::new(Some(session)));
        let (sh, slot_, id_, taken) = (this.clone(), slot.clone(), id.to_owned(), handed.clone());
        let started = std::thread::Builder::new()
            .name("makalog-close".into())
            .spawn(move || {
                if let Some(session) = lock(&taken).take() {
                    // A close that panicked must still release its waiters.
                    let result = catch_unwind(AssertUnwindSafe(|| (sh.close)(session)))
                        .unwrap_or_else(|_| {
                            Err(Error::io(
                                crate::segment::layout::session_dir(&id_),
                                "close",
                                std::io::Error::other("the close of the evicted session panicked"),
                            ))
                        });
                    sh.closed_behind(&id_, &slot_, result);
                }
            });
        if let Ok(thread) = started {
            let mut c = lock(&this.closing);
            // Finished closers are joined as they are met, so the list stays short.
            c.threads.retain(|t| !t.is_finished());
            c.threads.push(thread);
            return None;
        }
        slot.closing.store(false, Ordering::SeqCst);
        let mut c = lock(&this.closing);
        c.in_flight -= 1;
        this.closed.notify_all();
        drop(c);
        let session = lock(&handed).take();
        session
    }

    /// A closer thread is done with `slot`: its waiters go on, and the slot leaves the map
    /// unless it was opened again meanwhile.
    fn closed_behind(&self, id: &str, slot: &Arc<Slot<T>>, result: Result<()>) {
        {
            let mut c = lock(&self.closing);
            if let Err(e) = result {
                c.deferred.get_or_insert(e);
            }
            c.in_flight -= 1;
            // Cleared under the lock its waiters check it under, so none misses the signal.
            slot.closing.store(false, Ordering::SeqCst);
            self.closed.notify_all();
        }
        let guard = lock(&slot.session);
        if guard.is_none() {
            self.forget_if_unused(id, slot, &guard);
        }
    }

    pub(super) fn close_here(&self, session: T) {
        if let Err(e) = (self.close)(session) {
            lock(&self.closing).deferred.get_or_insert(e);
        }
    }
}

impl<T> Shared<T> {
    /// Waits until every closer thread has finished and joins them; the first error met while
    /// closing an evicted session, taken.
    pub(super) fn join_closers(&self) -> Option<Error> {
        let (threads, deferred) = {
            let mut c = lock(&self.closing);
            while c.in_flight > 0 {
                c = self.closed.wait(c).unwrap_or_else(|e| e.into_inner());
            }
            (std::mem::take(&mut c.threads), c.deferred.take())
        };
        for t in threads {
            // A closer's panic was caught and reported on its thread.
            let _ = t.join();
        }
        deferred
    }

    /// Waits until no closer thread is closing `slot`'s session.
    pub(super) fn wait_closed(&self, slot: &Slot<T>) {
        if !slot.closing.load(Ordering::SeqCst) {
            return;
        }
        let mut c = lock(&self.closing);
        while slot.closing.load(Ordering::SeqCst) {
            c = self.closed.wait(c).unwrap_or_else(|e| e.into_inner());
        }
    }
}
