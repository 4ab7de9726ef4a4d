//! Closing evicted sessions: on closer threads that wait a while for the next when the store
//! may, else in place; what a reopen of a session, and the store's close, wait for.

use super::{lock, try_lock, Shared, Slot, MAX_CLOSING};
use crate::error::{Error, Result};
use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// An evicted session to close: its id, its slot (marked closing) and the session.
type Job<T> = (String, Arc<Slot<T>>, T);

/// The closes in flight, and the first error met while closing an evicted session, reported
/// by the store's close.
pub(super) struct Closing<T> {
    /// Closes reserved and not yet done: queued or being closed.
    in_flight: usize,
    deferred: Option<Error>,
    /// Evicted sessions waiting for a closer thread.
    queue: VecDeque<Job<T>>,
    /// Closer threads running, and how many of them wait for work.
    pub(super) workers: usize,
    idle: usize,
    /// How many callers are joining the closer threads: while any is, an idle one ends
    /// instead of waiting.
    stopping: usize,
    /// The closer threads started and not yet joined.
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl<T> Closing<T> {
    pub(super) fn new() -> Self {
        Closing {
            in_flight: 0,
            deferred: None,
            queue: VecDeque::new(),
            workers: 0,
            idle: 0,
            stopping: 0,
            threads: Vec::new(),
        }
    }
}

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
    /// closer thread: an idle one, else a new one, else (none could start) here; either way
    /// its waiters go on once it is closed.
    pub(super) fn close_behind(this: &Arc<Self>, id: String, slot: Arc<Slot<T>>, session: T) {
        let mut c = lock(&this.closing);
        c.queue.push_back((id, slot, session));
        // Reserved closes are at most MAX_CLOSING, so neither the queue nor the threads grow
        // past that.
        debug_assert!(c.queue.len() <= MAX_CLOSING);
        // A closer thread that is idle, or busy and about to look at the queue again, takes it.
        if c.queue.len() <= c.idle || c.workers >= MAX_CLOSING {
            // Woken after the lock is let go, so the closer does not wake only to wait for it.
            drop(c);
            this.work.notify_one();
            return;
        }
        let sh = this.clone();
        let started = std::thread::Builder::new()
            .name("makalog-close".into())
            .spawn(move || sh.closer_thread());
        match started {
            Ok(thread) => {
                c.workers += 1;
                debug_assert!(c.workers <= MAX_CLOSING);
                // Finished closers are joined as they are met, so the list stays short.
                c.threads.retain(|t| !t.is_finished());
                c.threads.push(thread);
            }
            Err(_) => {
                // The job just queued is the last: the lock was held since.
                let job = c.queue.pop_back();
                drop(c);
                if let Some((id, slot, session)) = job {
                    this.close_marked(id, slot, session);
                }
            }
        }
    }

    /// A closer thread: closes queued sessions; with none, waits for more until the store
    /// stops it or it has waited [`Shared::linger`] for nothing.
    fn closer_thread(&self) {
        let mut c = lock(&self.closing);
        loop {
            if let Some((id, slot, session)) = c.queue.pop_front() {
                drop(c);
                self.close_marked(id, slot, session);
                c = lock(&self.closing);
                continue;
            }
            if c.stopping > 0 {
                break;
            }
            c.idle += 1;
            let (guard, waited) = self
                .work
                .wait_timeout(c, self.linger)
                .unwrap_or_else(|e| e.into_inner());
            c = guard;
            c.idle -= 1;
            if waited.timed_out() && c.queue.is_empty() {
                break;
            }
        }
        c.workers -= 1;
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
    /// meanwhile or someone holds it. A held slot is left to its holder, never waited for: a
    /// reopen holds its slot while it waits for this close and may then wait for a closer
    /// itself, so a closer waiting for that slot would strand the closes queued behind it.
    fn closed_behind(&self, id: &str, slot: &Arc<Slot<T>>, result: Result<()>) {
        // Taken while the slot is still closing, when only a caller waiting for this close can
        // hold it (an eviction's scan passes closing slots by): that caller finds it empty and
        // refills or forgets it (`forget_if_idle`, `forget_if_unused`).
        let guard = try_lock(&slot.session);
        {
            let mut c = lock(&self.closing);
            if let Err(e) = result {
                c.deferred.get_or_insert(e);
            }
            c.in_flight -= 1;
            // Cleared under the lock its waiters check it under, so none misses the signal
            // (sent once the lock is let go, so they do not wake only to wait for it).
            slot.closing.store(false, Ordering::SeqCst);
        }
        self.closed.notify_all();
        if let Some(guard) = guard.filter(|g| g.is_none()) {
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
    /// Waits until every close behind is done, then ends the closer threads and joins them;
    /// the first error met while closing an evicted session, taken.
    pub(super) fn join_closers(&self) -> Option<Error> {
        let (threads, deferred) = {
            let mut c = lock(&self.closing);
            while c.in_flight > 0 {
                c = self.closed.wait(c).unwrap_or_else(|e| e.into_inner());
            }
            c.stopping += 1;
            self.work.notify_all();
            (std::mem::take(&mut c.threads), c.deferred.take())
        };
        for t in threads {
            // A closer's panic was caught and reported on its thread.
            let _ = t.join();
        }
        // Sessions evicted after this are closed by new closer threads.
        lock(&self.closing).stopping -= 1;
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
