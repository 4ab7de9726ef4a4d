//! The sessions a store keeps open for writing: at most a configured number, the least recently
//! used idle one closed cleanly once another opens, so a host can touch any number of
//! sessions with a bounded number of descriptors and bounded memory.
//!
//! Each session has a slot; its open happens under the slot's lock, and a session being
//! evicted is closed before it can be opened (or read) again. A session is in use while a
//! caller holds its `Arc`: it is cloned only under the slot's lock, so a strong count of one,
//! seen under that lock, means nobody can be using it, and only then is it evicted.
//!
//! An evicted session's close (a sync of anything unsynced, its sidecar written to a new file
//! and renamed, its zeros cut) costs about what creating a session does: paid by whichever
//! caller happened to open another session, it would nearly double that caller's time. Over
//! real files it runs on a closer thread instead, at most [`MAX_CLOSING`] at once (an evictor
//! waits for a free one, its victim still counted open), so descriptors stay bounded by the cap
//! plus those, beyond sessions in use at once. Closer threads wait [`CLOSER_LINGER`] for the
//! next eviction before they end: a host that touches session after session evicts one for
//! each, and starting a thread for each cost about a tenth of a subagent's creation. Over the
//! simulated disk it runs in place, so a seed replays exactly.

mod closer;
#[cfg(test)]
mod tests;

use crate::error::{Error, Result};
use closer::Closing;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, TryLockError};
use std::time::Duration;

/// How many sessions a store keeps open for writing unless told otherwise: each costs one
/// descriptor (its last segment), so 64 leave room under the smallest common open-file limit
/// (256 on macOS) for everything else a host process opens.
pub const DEFAULT_MAX_OPEN_SESSIONS: usize = 64;

/// Evicted sessions being closed on closer threads at most at once.
pub const MAX_CLOSING: usize = 2;

/// How long a closer thread with nothing to close waits for more before it ends.
pub const CLOSER_LINGER: Duration = Duration::from_secs(2);

/// How an evicted session is closed.
type CloseFn<T> = dyn Fn(T) -> Result<()> + Send + Sync;

/// A bounded set of open sessions of type `T`, by session id.
pub(crate) struct OpenSessions<T> {
    shared: Arc<Shared<T>>,
}

struct Shared<T> {
    cap: usize,
    slots: Mutex<HashMap<String, Arc<Slot<T>>>>,
    open: AtomicUsize,
    clock: AtomicU64,
    close: Box<CloseFn<T>>,
    /// Whether evicted sessions are closed on closer threads.
    background: bool,
    closing: Mutex<Closing<T>>,
    /// Signalled when a close behind finishes.
    closed: Condvar,
    /// Signalled when an evicted session waits for a closer thread, or closer threads must end.
    work: Condvar,
    /// How long an idle closer thread waits for work.
    linger: Duration,
}

struct Slot<T> {
    session: Mutex<Option<Arc<T>>>,
    last_used: AtomicU64,
    /// Set (under the slot's lock) from when an evictor takes a closer's place for the slot's
    /// session until that session is closed, on a closer thread or in place; cleared under
    /// `Shared::closing`.
    closing: AtomicBool,
}

type Guard<'a, T> = MutexGuard<'a, Option<Arc<T>>>;

fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn try_lock<X>(m: &Mutex<X>) -> Option<MutexGuard<'_, X>> {
    match m.try_lock() {
        Ok(g) => Some(g),
        Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

impl<T: Send + Sync + 'static> OpenSessions<T> {
    /// At most `cap` (at least 1) sessions open, unless more are in use at once; an evicted
    /// one is closed with `close`, on a closer thread when `background`.
    pub fn new(
        cap: usize,
        close: impl Fn(T) -> Result<()> + Send + Sync + 'static,
        background: bool,
    ) -> Self {
        OpenSessions {
            shared: Arc::new(Shared {
                cap: cap.max(1),
                slots: Mutex::new(HashMap::new()),
                open: AtomicUsize::new(0),
                clock: AtomicU64::new(0),
                close: Box::new(close),
                background,
                closing: Mutex::new(Closing::new()),
                closed: Condvar::new(),
                work: Condvar::new(),
                linger: CLOSER_LINGER,
            }),
        }
    }

    /// The same, its closer threads waiting `linger` for work before they end.
    #[cfg(test)]
    fn lingering(mut self, linger: Duration) -> Self {
        if let Some(sh) = Arc::get_mut(&mut self.shared) {
            sh.linger = linger;
        }
        self
    }

    /// How many sessions are open now (not counting evicted ones still being closed).
    pub fn open_count(&self) -> usize {
        self.shared.open.load(Ordering::SeqCst)
    }

    /// The session if it is open now (waiting for an open or close in progress); opens nothing.
    pub fn get_open(&self, id: &str) -> Option<Arc<T>> {
        let sh = &self.shared;
        let slot = lock(&sh.slots).get(id).cloned()?;
        let guard = lock(&slot.session);
        sh.wait_closed(&slot);
        let session = guard.clone();
        match session {
            Some(_) => sh.touch(&slot),
            None => sh.forget_if_idle(id, &slot, &guard),
        }
        session
    }

    /// The open session, opened with `open` if it is not. An open session that is not
    /// `usable` (its writer failed) and that nobody is using is dropped and opened again: the
    /// open recovers it from its files.
    pub fn get_or_open(
        &self,
        id: &str,
        open: impl FnOnce() -> Result<T>,
        usable: &dyn Fn(&T) -> bool,
    ) -> Result<Arc<T>> {
        let sh = &self.shared;
        let slot = lock(&sh.slots)
            .entry(id.to_owned())
            .or_insert_with(|| {
                Arc::new(Slot {
                    session: Mutex::new(None),
                    last_used: AtomicU64::new(0),
                    closing: AtomicBool::new(false),
                })
            })
            .clone();
        let mut guard = lock(&slot.session);
        // An evicted session is opened again only once its close is done.
        sh.wait_closed(&slot);
        sh.touch(&slot);
        if let Some(s) = guard.as_ref() {
            if usable(s) || Arc::strong_count(s) > 1 {
                return Ok(s.clone());
            }
            *guard = None;
            sh.open.fetch_sub(1, Ordering::SeqCst);
        }
        match open() {
            Ok(s) => {
                let s = Arc::new(s);
                *guard = Some(s.clone());
                sh.open.fetch_add(1, Ordering::SeqCst);
                // Evict once the session is open: it is in use by this caller until then, so
                // the cap is exceeded only by sessions in use. The victim's close (a new
                // sidecar file, so an inode to pick) then runs while this caller waits on its
                // next sync, not beside the creation of a new session's files, whose inode
                // picking is CPU the two would share (create_subagent 0.86-0.89 of its raw
                // floor evicting before the open, 0.90-0.95 after, runs interleaved).
                //
                // Every other slot is only try-locked while this one is held, and a slot is
                // evicted only while nobody holds its lock, so a chain of evictors waiting on
                // slots' locks (a close in place after a closer failed to start locks its
                // victim's) follows the order the evictions were made in and cannot close into
                // a loop.
                for _ in 0..=sh.cap {
                    if self.open_count() <= sh.cap || !Shared::evict_one(sh) {
                        break;
                    }
                }
                Ok(s)
            }
            Err(e) => {
                // A failed open leaves nothing: the next call tries again.
                sh.forget_if_unused(id, &slot, &guard);
                Err(e)
            }
        }
    }

    /// Takes every open session out, for the store's close, once every evicted one is closed,
    /// with the first error met while closing those.
    pub fn drain(&self) -> (Vec<Arc<T>>, Option<Error>) {
        let sh = &self.shared;
        let deferred = sh.join_closers();
        let slots = std::mem::take(&mut *lock(&sh.slots));
        let mut out = Vec::new();
        for (_, slot) in slots {
            if let Some(s) = lock(&slot.session).take() {
                sh.open.fetch_sub(1, Ordering::SeqCst);
                out.push(s);
            }
        }
        (out, deferred)
    }
}

/// A store dropped without its close still ends with no closer thread running: the sessions
/// they close hold the root's lease until they are done.
impl<T> Drop for OpenSessions<T> {
    fn drop(&mut self) {
        self.shared.join_closers();
    }
}

impl<T: Send + Sync + 'static> Shared<T> {
    /// Closes the least recently used session nobody is using; false when there is none.
    fn evict_one(this: &Arc<Self>) -> bool {
        let victim = {
            let slots = lock(&this.slots);
            let mut best: Option<(u64, &String, &Arc<Slot<T>>)> = None;
            for (id, slot) in slots.iter() {
                // A closing slot holds no session, and its lock is its closer's to take.
                if slot.closing.load(Ordering::SeqCst) {
                    continue;
                }
                let Some(g) = try_lock(&slot.session) else {
                    continue;
                };
                if g.as_ref().is_none_or(|s| Arc::strong_count(s) != 1) {
                    continue;
                }
                let t = slot.last_used.load(Ordering::SeqCst);
                if best.is_none_or(|(bt, _, _)| t < bt) {
                    best = Some((t, id, slot));
                }
            }
            best.map(|(_, id, slot)| (id.clone(), slot.clone()))
        };
        let Some((id, slot)) = victim else {
            return false;
        };
        let session = {
            let Some(mut guard) = try_lock(&slot.session) else {
                return true;
            };
            let Some(session) = guard.take() else {
                // Evicted by another since it was chosen.
                this.forget_if_idle(&id, &slot, &guard);
                return true;
            };
            let session = match Arc::try_unwrap(session) {
                Ok(session) => session,
                // Taken into use since it was chosen: put it back.
                Err(session) => {
                    *guard = Some(session);
                    return true;
                }
            };
            if !this.background {
                // Closed in place, and the slot is done with.
                this.close_here(session);
                this.forget_if_unused(&id, &slot, &guard);
                this.open.fetch_sub(1, Ordering::SeqCst);
                return true;
            }
            // Marked while its lock is held, so whoever takes the lock next sees it closing.
            this.reserve_closer(&slot);
            session
        };
        // The slot goes to the closer with no other reference of the evictor's left, so the
        // closer alone decides whether it leaves the map.
        Shared::close_behind(this, id, slot, session);
        // Counted open until it is queued for a closer (or, when none could start, until it is
        // closed), so evictors waiting for a free closer hold no descriptor beyond the cap.
        this.open.fetch_sub(1, Ordering::SeqCst);
        true
    }
}

impl<T> Shared<T> {
    /// [`Self::forget_if_unused`] for an empty slot no close is running for: a slot a closer
    /// could not drop (someone held it then) is dropped by the next caller that finds it idle.
    fn forget_if_idle(&self, id: &str, slot: &Arc<Slot<T>>, guard: &Guard<'_, T>) {
        if guard.is_none() && !slot.closing.load(Ordering::SeqCst) {
            self.forget_if_unused(id, slot, guard);
        }
    }

    /// Drops an empty slot from the map unless another caller holds it (it was cloned from the
    /// map under the map's lock, so the count seen under that lock is exact), so the map holds
    /// only open sessions, those being opened and those being closed.
    fn forget_if_unused(&self, id: &str, slot: &Arc<Slot<T>>, guard: &Guard<'_, T>) {
        debug_assert!(guard.is_none());
        let mut slots = lock(&self.slots);
        // The map's reference and the caller's.
        if Arc::strong_count(slot) == 2 && slots.get(id).is_some_and(|s| Arc::ptr_eq(s, slot)) {
            slots.remove(id);
        }
    }

    fn touch(&self, slot: &Slot<T>) {
        let now = self.clock.fetch_add(1, Ordering::SeqCst);
        slot.last_used.store(now, Ordering::SeqCst);
    }
}
