//! Closing evicted sessions: on a closer thread when the store may, else in place; what a
//! reopen of a session, and the store's close, wait for.

use super::{lock, Shared, Slot, MAX_CLOSING};
use crate::error::{Error, Result};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

impl<T: Send + Sync + 'static> Shared<T> {
    /// Waits until fewer than [`MAX_CLOSING`] closes are at work, takes a place among them
    /// for `slot`'s session and marks the slot closing (under the slot's lock, held by the
    /// caller).
    pub(super) fn reserve_closer(&self, slot: &Slot<T>) {
        let mut c = lock(&self.closing);
        while c.in_flight >= MAX_CLOSING {
            c = self.closed.wait(c).unwrap_or_else(|e| e.into_inner());
        }
        c.in_flight += 1;
        slot.closing.store(true, Ordering::SeqCst);
    }

    /// Closes `session`, evicted from `slot` (marked closing by [`Self::reserve_closer`]), on a
    /// closer thread, or here if no thread can be started; either way its waiters go on once
    /// it is closed.
    pub(super) fn close_behind(this: &Arc<Self>, id: String, slot: Arc<Slot<T>>, session: T) {
        let handed = Arc::new(Mutex::new(Some((id, slot, session))));
        let (sh, taken) = (this.clone(), handed.clone());
        let started = std::thread::Builder::new()
            .name("makalog-close".into())
            .spawn(move || {
                if let Some((id, slot, session)) = lock(&taken).take() {
                    sh.close_marked(id, slot, session);
                }
            });
        match started {
            Ok(thread) => {
                let mut c = lock(&this.closing);
                // Finished closers are joined as they are met, so the list stays short.
                c.threads.retain(|t| !t.is_finished());
                c.threads.push(thread);
            }
            Err(_) => {
                if let Some((id, slot, session)) = lock(&handed).take() {
                    this.close_marked(id, slot, session);
                }
            }
        }
    }

    /// Closes `session` of the closing `slot` and releases its waiters; a close that panicked
    /// still releases them, and is reported as a failure.
    fn close_marked(&self, id: String, slot: Arc<Slot<T>>, session: T) {
        let result =
            catch_unwind(AssertUnwindSafe(|| (self.close)(session))).unwrap_or_else(|_| {
                Err(Error::io(
                    crate::segment::layout::session_dir(&id),
                    "close",
                    std::io::Error::other("the close of the evicted session panicked"),
                ))
            });
        self.closed_behind(&id, &slot, result);
    }

    /// The close of `slot`'s session is done (on a closer thread, or in place when none could
    /// start): its waiters go on, and the slot leaves the map unless it was opened again
    /// meanwhile or someone holds it.
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
