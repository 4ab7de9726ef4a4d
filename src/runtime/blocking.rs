//! Store calls wait for syncs. Made from a task, such a wait must not hold every runtime
//! worker: with two workers, two sessions syncing would stop every other session's stream,
//! its aborts and its timers. Handing a worker's tasks to another thread first
//! (`block_in_place`) keeps them running, but wakes a thread each time: about 100 µs a wait
//! on this machine, where the sync took about 130. So a wait runs in place while the
//! other workers are free, and hands its worker on only when it would leave none free: at most
//! `workers - 1` workers wait in place at once, so as many syncs are still in flight as
//! sessions write. On a current-thread runtime (tests), and on a thread that is no worker
//! (`block_on`'s, the blocking pool's), there is no worker to keep free and the call runs in
//! place.
//!
//! What waiting in place leaves behind: the other workers take over only the tasks they can
//! steal, so a task woken on this worker just before the wait (in its next-task slot) runs
//! after it, one sync late; and a closure given here must never wait for a task of the
//! runtime. Store calls made outside `on_disk` (a queued append that reopens an evicted
//! session) hold their worker as they always did.

use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::runtime::{Handle, RuntimeFlavor};

/// Workers waiting in place now, counted across every runtime of the process: a runtime's own
/// waits are among them, so it never has more than `workers - 1` in place; other runtimes'
/// waits only make it hand on sooner.
static IN_PLACE: AtomicUsize = AtomicUsize::new(0);

/// Runs `wait`, which may block on the disk, without holding up the runtime's other tasks.
pub(super) fn on_disk<T>(wait: impl FnOnce() -> T) -> T {
    on_disk_counted(&IN_PLACE, wait)
}

/// [`on_disk`] with the count of workers waiting in place given (tests give their own).
fn on_disk_counted<T>(in_place: &AtomicUsize, wait: impl FnOnce() -> T) -> T {
    let Ok(h) = Handle::try_current() else {
        return wait();
    };
    if h.runtime_flavor() != RuntimeFlavor::MultiThread || tokio::runtime::worker_index().is_none()
    {
        return wait();
    }
    let free = h.metrics().num_workers().saturating_sub(1);
    let took = in_place.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
        (n < free).then_some(n + 1)
    });
    if took.is_err() {
        return tokio::task::block_in_place(wait);
    }
    let _slot = Slot(in_place);
    wait()
}

/// A worker's place among those waiting in place, given back however the wait ends.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    /// Two tasks wait on the disk at once on a runtime of two workers: one waits in place, the
    /// other hands its worker on, so a third task still runs (here, the one that ends both
    /// waits). Were both to wait in place, nothing could run it.
    #[test]
    fn waits_leave_a_worker_free() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let waiting = Arc::new(AtomicUsize::new(0));
        static IN_PLACE: AtomicUsize = AtomicUsize::new(0);
        let (done_tx, done) = mpsc::channel();
        let mut ends = Vec::new();
        for _ in 0..2 {
            let (end, wait) = mpsc::channel::<()>();
            ends.push(end);
            let (waiting, done_tx) = (waiting.clone(), done_tx.clone());
            rt.spawn(async move {
                let ended = on_disk_counted(&IN_PLACE, || {
                    waiting.fetch_add(1, Ordering::AcqRel);
                    wait.recv()
                });
                done_tx.send(ended.is_ok()).unwrap();
            });
        }
        // Spawned from outside once both wait: it goes to the runtime's shared queue, which a
        // worker with its core free takes from.
        let since = std::time::Instant::now();
        while waiting.load(Ordering::Acquire) < 2 {
            assert!(
                since.elapsed() < Duration::from_secs(60),
                "the waits never began"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let releaser = ends.clone();
        rt.spawn(async move {
            for end in &releaser {
                end.send(()).unwrap();
            }
        });
        let ended: Vec<bool> = (0..2)
            .map(|_| done.recv_timeout(Duration::from_secs(60)))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|_| {
                // Free the stuck waits so the runtime can shut down, then fail.
                for end in &ends {
                    let _ = end.send(());
                }
                panic!("both workers waited in place and the releasing task never ran");
            });
        assert_eq!(ended, [true, true]);
        assert_eq!(
            IN_PLACE.load(Ordering::Acquire),
            0,
            "every place given back"
        );
    }

    /// A wait that panics in place gives its place back, and the panic reaches the caller.
    #[test]
    fn a_panicking_wait_gives_its_place_back() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        static IN_PLACE: AtomicUsize = AtomicUsize::new(0);
        static SEEN: AtomicUsize = AtomicUsize::new(usize::MAX);
        let caught = rt.block_on(async {
            tokio::spawn(async {
                on_disk_counted(&IN_PLACE, || {
                    SEEN.store(IN_PLACE.load(Ordering::Acquire), Ordering::Release);
                    panic!("disk wait failed")
                })
            })
            .await
        });
        let payload = caught.unwrap_err().into_panic();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"disk wait failed"));
        assert_eq!(SEEN.load(Ordering::Acquire), 1, "the wait ran in place");
        assert_eq!(IN_PLACE.load(Ordering::Acquire), 0);
    }
}
