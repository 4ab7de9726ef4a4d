//! The sessions a store keeps open for writing: at most a configured number, the least recently
//! used idle one closed cleanly when another must open, so a host can touch any number of
//! sessions with a bounded number of descriptors and bounded memory.
//!
//! Each session has a slot; its open and its close happen under the slot's lock, so a session
//! being evicted is closed before it can be opened again. A session is in use while a caller
//! holds its `Arc`: it is cloned only under the slot's lock, so a strong count of one, seen
//! under that lock, means nobody can be using it, and only then is it evicted.

use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};

/// How many sessions a store keeps open for writing unless told otherwise: each costs one
/// descriptor (its last segment), so 64 leave room under the smallest common open-file limit
/// (256 on macOS) for everything else a host process opens.
pub const DEFAULT_MAX_OPEN_SESSIONS: usize = 64;

/// A bounded set of open sessions of type `T`, by session id.
pub(crate) struct OpenSessions<T> {
    cap: usize,
    slots: Mutex<HashMap<String, Arc<Slot<T>>>>,
    open: AtomicUsize,
    clock: AtomicU64,
    /// The first error met while closing an evicted session, reported by the store's close.
    deferred: Mutex<Option<Error>>,
}

struct Slot<T> {
    session: Mutex<Option<Arc<T>>>,
    last_used: AtomicU64,
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

impl<T> OpenSessions<T> {
    /// At most `cap` (at least 1) sessions open, unless more are in use at once.
    pub fn new(cap: usize) -> Self {
        OpenSessions {
            cap: cap.max(1),
            slots: Mutex::new(HashMap::new()),
            open: AtomicUsize::new(0),
            clock: AtomicU64::new(0),
            deferred: Mutex::new(None),
        }
    }

    /// How many sessions are open now.
    pub fn open_count(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }

    /// The session if it is open now (waiting for an open or close in progress); opens nothing.
    pub fn get_open(&self, id: &str) -> Option<Arc<T>> {
        let slot = lock(&self.slots).get(id).cloned()?;
        let session = lock(&slot.session).clone();
        if session.is_some() {
            self.touch(&slot);
        }
        session
    }

    /// The open session, opened with `open` if it is not; `close` closes an evicted one. An
    /// open session that is not `usable` (its writer failed) and that nobody is using is
    /// dropped and opened again: the open recovers it from its files.
    pub fn get_or_open(
        &self,
        id: &str,
        open: impl FnOnce() -> Result<T>,
        close: &dyn Fn(T) -> Result<()>,
        usable: &dyn Fn(&T) -> bool,
    ) -> Result<Arc<T>> {
        let slot = lock(&self.slots)
            .entry(id.to_owned())
            .or_insert_with(|| {
                Arc::new(Slot {
                    session: Mutex::new(None),
                    last_used: AtomicU64::new(0),
                })
            })
            .clone();
        let mut guard = lock(&slot.session);
        self.touch(&slot);
        if let Some(s) = guard.as_ref() {
            if usable(s) || Arc::strong_count(s) > 1 {
                return Ok(s.clone());
            }
            *guard = None;
            self.open.fetch_sub(1, Ordering::SeqCst);
        }
        // Evict before opening, so descriptors stay within the cap. Every other slot is only
        // try-locked while this one is held, so evictors cannot deadlock.
        for _ in 0..=self.cap {
            if self.open_count() < self.cap || !self.evict_one(close) {
                break;
            }
        }
        match open() {
            Ok(s) => {
                let s = Arc::new(s);
                *guard = Some(s.clone());
                self.open.fetch_add(1, Ordering::SeqCst);
                Ok(s)
            }
            Err(e) => {
                // A failed open leaves nothing: the next call tries again.
                self.forget_if_unused(id, &slot, &guard);
                Err(e)
            }
        }
    }

    /// Closes the least recently used session nobody is using; false when there is none.
    fn evict_one(&self, close: &dyn Fn(T) -> Result<()>) -> bool {
        let victim = {
            let slots = lock(&self.slots);
            let mut best: Option<(u64, &String, &Arc<Slot<T>>)> = None;
            for (id, slot) in slots.iter() {
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
        let Some(mut guard) = try_lock(&slot.session) else {
            return true;
        };
        let Some(session) = guard.take() else {
            return true;
        };
        match Arc::try_unwrap(session) {
            Ok(session) => {
                self.open.fetch_sub(1, Ordering::SeqCst);
                if let Err(e) = close(session) {
                    lock(&self.deferred).get_or_insert(e);
                }
                self.forget_if_unused(&id, &slot, &guard);
            }
            // Taken into use since it was chosen: put it back.
            Err(session) => *guard = Some(session),
        }
        true
    }

    /// Drops an empty slot from the map unless another caller holds it (it was cloned from the
    /// map under the map's lock, so the count seen under that lock is exact), so the map holds
    /// only open sessions and those being opened.
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

    /// Takes every open session out, for the store's close, with the first error met while
    /// closing evicted ones.
    pub fn drain(&self) -> (Vec<Arc<T>>, Option<Error>) {
        let slots = std::mem::take(&mut *lock(&self.slots));
        let mut out = Vec::new();
        for (_, slot) in slots {
            if let Some(s) = lock(&slot.session).take() {
                self.open.fetch_sub(1, Ordering::SeqCst);
                out.push(s);
            }
        }
        (out, lock(&self.deferred).take())
    }
}
