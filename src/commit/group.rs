//! Group commit: appenders queue encoded frames under a short lock and either return (buffered)
//! or wait until a sync covers their sequence number (durable). Whoever finds no flush in
//! progress leads one: it takes everything queued, writes it in one call and syncs once, so
//! concurrent appends share one write and one `fdatasync`. A failed write or sync poisons the
//! log: nothing more is acknowledged until it is reopened and recovered from disk.

use crate::error::{Error, Result};
use std::path::PathBuf;
use std::sync::{Condvar, Mutex, MutexGuard};

/// Where queued chunks go; only the flush leader touches it.
pub(crate) trait Sink: Send {
    /// What appenders queue.
    type Chunk: Send;
    /// Writes the chunks in order, then syncs if `sync`. Every record through `durable_seq` is
    /// durable as they are written (frames that record it are stamped with it).
    fn write_out(&mut self, chunks: Vec<Self::Chunk>, sync: bool, durable_seq: u64) -> Result<()>;
    /// The file a failure is blamed on.
    fn current_path(&self) -> PathBuf;
}

/// The state appenders share under the lock: the owner's logical state `log`, what is queued,
/// and what is durable.
pub(crate) struct Pending<T, C> {
    /// The owner's state, changed only under this lock.
    pub log: T,
    /// Chunks queued for the next flush.
    pub chunks: Vec<C>,
    bytes: usize,
    assigned: u64,
    synced: u64,
    flushing: bool,
    poisoned: Option<PathBuf>,
}

impl<T, C> Pending<T, C> {
    /// The sequence number the next record gets.
    pub fn next_seq(&self) -> u64 {
        self.assigned.saturating_add(1)
    }

    /// Records that one more record of `len` bytes was queued.
    pub fn queued(&mut self, len: usize) {
        self.assigned += 1;
        self.bytes += len;
    }
}

/// Group commit over one sink.
pub(crate) struct GroupCommit<T, S: Sink> {
    state: Mutex<Pending<T, S::Chunk>>,
    flushed: Condvar,
    sink: Mutex<S>,
}

type Guard<'a, T, C> = MutexGuard<'a, Pending<T, C>>;

fn lock<X>(m: &Mutex<X>) -> MutexGuard<'_, X> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<T, S: Sink> GroupCommit<T, S> {
    /// A log whose records up to `durable_seq` are already durable.
    pub fn new(log: T, sink: S, durable_seq: u64) -> Self {
        GroupCommit {
            state: Mutex::new(Pending {
                log,
                chunks: Vec::new(),
                bytes: 0,
                assigned: durable_seq,
                synced: durable_seq,
                flushing: false,
                poisoned: None,
            }),
            flushed: Condvar::new(),
            sink: Mutex::new(sink),
        }
    }

    /// Locks the shared state; fails once the log is poisoned.
    pub fn lock(&self) -> Result<Guard<'_, T, S::Chunk>> {
        let st = lock(&self.state);
        match &st.poisoned {
            Some(file) => Err(Error::Poisoned { file: file.clone() }),
            None => Ok(st),
        }
    }

    /// Waits until `seq` is durable, leading a flush whenever none is in progress. A `seq`
    /// never queued (one a damaged file named) is refused: no flush would ever reach it.
    pub fn wait_durable<'a>(
        &'a self,
        mut st: Guard<'a, T, S::Chunk>,
        seq: u64,
    ) -> Result<Guard<'a, T, S::Chunk>> {
        if seq > st.assigned {
            let file = lock(&self.sink).current_path();
            return Err(Error::corrupt(
                file,
                0,
                format!(
                    "record {seq} was asked for, past the last one the log holds ({})",
                    st.assigned
                ),
            ));
        }
        loop {
            if let Some(file) = &st.poisoned {
                return Err(Error::Poisoned { file: file.clone() });
            }
            if st.synced >= seq {
                return Ok(st);
            }
            if st.flushing {
                st = self.flushed.wait(st).unwrap_or_else(|e| e.into_inner());
            } else {
                st = self.lead(st, true)?;
            }
        }
    }

    /// Writes the queue out (without a sync) once it holds `limit` bytes and no flush is running.
    pub fn spill<'a>(
        &'a self,
        st: Guard<'a, T, S::Chunk>,
        limit: usize,
    ) -> Result<Guard<'a, T, S::Chunk>> {
        if st.bytes >= limit && !st.flushing {
            self.lead(st, false)
        } else {
            Ok(st)
        }
    }

    /// Makes every record queued so far durable.
    pub fn sync_all(&self) -> Result<()> {
        let st = self.lock()?;
        let target = st.assigned;
        self.wait_durable(st, target).map(|_| ())
    }

    /// Makes every record queued so far durable, then runs `f` on the sink (closing work such
    /// as cutting preallocated space). A failure of `f` poisons the log like a failed sync.
    /// Called by the sole owner of the log, so nothing is queued meanwhile.
    pub fn finish(&self, f: impl FnOnce(&mut S) -> Result<()>) -> Result<()> {
        self.sync_all()?;
        let mut st = self.lock()?;
        debug_assert!(!st.flushing && st.chunks.is_empty() && st.synced == st.assigned);
        let mut sink = lock(&self.sink);
        let result = f(&mut sink);
        if result.is_err() {
            st.poisoned = Some(sink.current_path());
        }
        result
    }

    /// The highest sequence number known durable.
    pub fn durable_seq(&self) -> u64 {
        lock(&self.state).synced
    }

    /// The sequence number the next record will get.
    pub fn next_seq(&self) -> u64 {
        lock(&self.state).next_seq()
    }

    /// True unless the log is poisoned.
    pub fn is_healthy(&self) -> bool {
        lock(&self.state).poisoned.is_none()
    }

    /// Takes the queue, writes it (and syncs when `sync`), and publishes the outcome.
    fn lead<'a>(
        &'a self,
        mut st: Guard<'a, T, S::Chunk>,
        sync: bool,
    ) -> Result<Guard<'a, T, S::Chunk>> {
        debug_assert!(
            st.synced <= st.assigned,
            "nothing is durable before it is queued"
        );
        st.flushing = true;
        let chunks = std::mem::take(&mut st.chunks);
        st.bytes = 0;
        let target = st.assigned;
        // Flushes run one at a time, so nothing becomes durable between here and the write.
        let durable = st.synced;
        drop(st);
        let unwinding = PanicGuard(self);
        let result = {
            let mut sink = lock(&self.sink);
            sink.write_out(chunks, sync, durable)
                .map_err(|e| (sink.current_path(), e))
        };
        std::mem::forget(unwinding);
        let mut st = lock(&self.state);
        st.flushing = false;
        self.flushed.notify_all();
        match result {
            Ok(()) => {
                if sync {
                    st.synced = st.synced.max(target);
                }
                Ok(st)
            }
            Err((path, e)) => {
                st.poisoned = Some(path);
                Err(e)
            }
        }
    }
}

/// Armed while a leader writes: if the sink panics, the log is poisoned and the waiters woken,
/// instead of being left waiting for a flush that will never finish.
struct PanicGuard<'a, T, S: Sink>(&'a GroupCommit<T, S>);

impl<T, S: Sink> Drop for PanicGuard<'_, T, S> {
    fn drop(&mut self) {
        let path = lock(&self.0.sink).current_path();
        let mut st = lock(&self.0.state);
        st.flushing = false;
        st.poisoned.get_or_insert(path);
        self.0.flushed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::sync::Arc;
    use std::time::Duration;

    /// A sink whose every write panics, as a storage implementation with a bug might.
    struct PanickingSink;

    impl Sink for PanickingSink {
        type Chunk = ();
        fn write_out(&mut self, _: Vec<()>, _: bool, _: u64) -> Result<()> {
            panic!("the sink failed in a way no error reports");
        }
        fn current_path(&self) -> PathBuf {
            PathBuf::from("sessions/s/00000000000000000001.seg")
        }
    }

    #[test]
    fn a_leader_that_panics_poisons_the_log_instead_of_leaving_waiters_blocked() {
        let commit = Arc::new(GroupCommit::new((), PanickingSink, 0));
        let leader = {
            let commit = commit.clone();
            std::thread::spawn(move || {
                let mut st = commit.lock().map_err(|_| ()).ok()?;
                st.queued(1);
                commit.wait_durable(st, 1).ok().map(|_| ())
            })
        };
        assert!(leader.join().is_err(), "the leader's flush panicked");
        // A caller after it, waiting for the same record, gets the poisoned log at once.
        let (tx, rx) = mpsc::channel();
        let waiter = commit.clone();
        std::thread::spawn(move || {
            let st = lock(&waiter.state);
            let outcome = waiter.wait_durable(st, 1).map(|_| ());
            let _ = tx.send(outcome);
        });
        // Generous: this guards against a hang, it measures nothing.
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Err(Error::Poisoned { file })) => {
                assert_eq!(file, PathBuf::from("sessions/s/00000000000000000001.seg"))
            }
            Ok(other) => panic!("expected Poisoned, got {other:?}"),
            Err(_) => panic!("a waiter is still blocked behind the panicked flush"),
        }
        assert!(!commit.is_healthy());
    }

    /// A sink that writes nothing and never fails.
    struct NullSink;

    impl Sink for NullSink {
        type Chunk = ();
        fn write_out(&mut self, _: Vec<()>, _: bool, _: u64) -> Result<()> {
            Ok(())
        }
        fn current_path(&self) -> PathBuf {
            PathBuf::from("sessions/s/00000000000000000001.seg")
        }
    }

    /// Waiting for a record never queued (a damaged sidecar named it) is refused, naming the
    /// log; it used to flush and sync forever, holding whatever lock its caller held.
    #[test]
    fn a_wait_for_a_record_never_queued_is_refused_not_spun() {
        let commit = GroupCommit::new((), NullSink, 3);
        let st = commit.lock().expect("healthy");
        match commit.wait_durable(st, 4) {
            Err(Error::Corrupt { file, what, .. }) => {
                assert_eq!(file, PathBuf::from("sessions/s/00000000000000000001.seg"));
                assert!(what.contains("record 4"), "{what}");
            }
            other => panic!("expected a refusal, got {:?}", other.map(|_| ())),
        }
        let st = commit.lock().expect("still healthy");
        assert!(commit.wait_durable(st, 3).is_ok(), "a durable record");
    }
}
